//! The workload kinds' defaults, as upstream's `SetDefaults_*` of apps/v1 and
//! batch/v1 fill them on every write: Deployment (`replicas`, the
//! `RollingUpdate` strategy at 25 %/25 %, `revisionHistoryLimit`,
//! `progressDeadlineSeconds`), StatefulSet (`podManagementPolicy`, the
//! `RollingUpdate` strategy with partition 0, the PVC retention policy),
//! DaemonSet (`RollingUpdate`, one unavailable, no surge), ReplicaSet
//! (`replicas`), Job (`parallelism`, `completions`, `backoffLimit`,
//! `completionMode`, `suspend`, `podReplacementPolicy`) and CronJob
//! (`concurrencyPolicy`, `suspend`, history limits), and their pod
//! templates' defaults ([`super::pods`]). `kubectl rollout status` and
//! `describe` read them.

use serde_json::{Value, json};

use super::{Context, Strategy, pods, set_default};
use crate::error::ApiError;
use crate::resources::ResourceType;

/// Fills `spec` of an object of `kind` as upstream's defaulting does.
pub fn default_spec(kind: &str, spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    match kind {
        "Deployment" => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "strategy", json!({}));
            set_default(&mut spec["strategy"], "type", json!("RollingUpdate"));
            if spec["strategy"]["type"] == "RollingUpdate" {
                let s = &mut spec["strategy"];
                set_default(s, "rollingUpdate", json!({}));
                set_default(&mut s["rollingUpdate"], "maxUnavailable", json!("25%"));
                set_default(&mut s["rollingUpdate"], "maxSurge", json!("25%"));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
        }
        "StatefulSet" => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            set_default(spec, "updateStrategy", json!({}));
            set_default(&mut spec["updateStrategy"], "type", json!("RollingUpdate"));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                let s = &mut spec["updateStrategy"];
                set_default(s, "rollingUpdate", json!({}));
                set_default(&mut s["rollingUpdate"], "partition", json!(0));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
            let p = &mut spec["persistentVolumeClaimRetentionPolicy"];
            set_default(p, "whenDeleted", json!("Retain"));
            set_default(p, "whenScaled", json!("Retain"));
        }
        "DaemonSet" => {
            set_default(spec, "updateStrategy", json!({}));
            set_default(&mut spec["updateStrategy"], "type", json!("RollingUpdate"));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                let s = &mut spec["updateStrategy"];
                set_default(s, "rollingUpdate", json!({}));
                set_default(&mut s["rollingUpdate"], "maxUnavailable", json!(1));
                set_default(&mut s["rollingUpdate"], "maxSurge", json!(0));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
        }
        "ReplicaSet" => set_default(spec, "replicas", json!(1)),
        "Job" => {
            // Neither set: one Pod to completion; parallelism alone: a work queue.
            if spec["completions"].is_null() && spec["parallelism"].is_null() {
                spec["completions"] = json!(1);
            }
            set_default(spec, "parallelism", json!(1));
            let backoff_limit = if spec["backoffLimitPerIndex"].is_null() {
                json!(6)
            } else {
                json!(i32::MAX)
            };
            set_default(spec, "backoffLimit", backoff_limit);
            let rules = spec.pointer_mut("/podFailurePolicy/rules");
            for rule in rules.and_then(Value::as_array_mut).into_iter().flatten() {
                let patterns = rule
                    .get_mut("onPodConditions")
                    .and_then(Value::as_array_mut);
                for pattern in patterns.into_iter().flatten() {
                    set_default(pattern, "status", json!("True"));
                }
            }
            set_default(spec, "completionMode", json!("NonIndexed"));
            set_default(spec, "suspend", json!(false));
            let replacement = if spec["podFailurePolicy"].is_null() {
                "TerminatingOrFailed"
            } else {
                "Failed"
            };
            set_default(spec, "podReplacementPolicy", json!(replacement));
            set_default(spec, "manualSelector", json!(false));
        }
        "CronJob" => {
            set_default(spec, "concurrencyPolicy", json!("Allow"));
            set_default(spec, "suspend", json!(false));
            set_default(spec, "successfulJobsHistoryLimit", json!(3));
            set_default(spec, "failedJobsHistoryLimit", json!(1));
        }
        _ => {}
    }
    let template = match kind {
        "CronJob" => "/jobTemplate/spec/template/spec",
        _ => "/template/spec",
    };
    if let Some(pod_spec) = spec.pointer_mut(template) {
        pods::default_pod_spec(pod_spec);
    }
}

/// Fills the spec of a workload object of `kind`.
pub fn default_object(kind: &str, object: &mut Value) {
    if let Some(spec) = object.get_mut("spec") {
        default_spec(kind, spec);
    }
}

/// Jobs: their defaults, and unless `manualSelector` says otherwise, the
/// selector upstream's strategy generates from the Job's uid, with the
/// labels its Pods carry on the template.
#[derive(Debug)]
pub struct JobStrategy;

/// A Job's generated selector and template labels (`generateSelector`):
/// needs its final name and uid.
pub fn generate_job_selector(job: &mut Value) {
    if job["spec"]["manualSelector"] == json!(true) || !job["spec"].is_object() {
        return;
    }
    let name = job["metadata"]["name"].clone();
    let uid = job["metadata"]["uid"].clone();
    let labels = &mut job["spec"]["template"]["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    for (k, v) in [
        ("job-name", &name),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("batch.kubernetes.io/controller-uid", &uid),
    ] {
        if labels.get(k).is_none() {
            labels[k] = v.clone();
        }
    }
    let selector = &mut job["spec"]["selector"];
    if !selector.is_object() {
        *selector = json!({});
    }
    if !selector["matchLabels"].is_object() {
        selector["matchLabels"] = json!({});
    }
    if selector["matchLabels"]
        .get("batch.kubernetes.io/controller-uid")
        .is_none()
    {
        selector["matchLabels"]["batch.kubernetes.io/controller-uid"] = uid;
    }
}

impl Strategy for JobStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        default_object(&rt.kind, object);
    }

    fn prepare_create(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        _name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        generate_job_selector(object);
        Ok(())
    }
}

/// Where a DaemonSet's template generation is written in apps/v1.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// DaemonSets: their defaults, and the template generation upstream's
/// strategy counts (1 at create, one more for each template change).
#[derive(Debug)]
pub struct DaemonSetStrategy;

fn template_generation(ds: &Value) -> i64 {
    ds["metadata"]["annotations"][TEMPLATE_GENERATION]
        .as_str()
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

fn set_template_generation(ds: &mut Value, generation: i64) {
    if !ds["metadata"]["annotations"].is_object() {
        ds["metadata"]["annotations"] = json!({});
    }
    ds["metadata"]["annotations"][TEMPLATE_GENERATION] = json!(generation.to_string());
}

impl Strategy for DaemonSetStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        default_object(&rt.kind, object);
        // apps/v1 always carries the internal template generation as this
        // annotation, 0 until the registry counts it: a writer's fields
        // include it, as upstream's decoder makes them.
        if object["metadata"].is_object()
            && object["metadata"]["annotations"][TEMPLATE_GENERATION].is_null()
        {
            set_template_generation(object, 0);
        }
    }

    fn prepare_create(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        _name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        if object["metadata"].is_object() {
            let generation = template_generation(object).max(1);
            set_template_generation(object, generation);
        }
        Ok(())
    }

    fn prepare_update(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if new["metadata"].is_object() {
            let before = template_generation(old);
            let changed = new["spec"]["template"] != old["spec"]["template"];
            set_template_generation(new, before + i64::from(changed));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_get_a_selector_of_their_uid() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"manualSelector": false, "template": {"spec": {}}}});
        generate_job_selector(&mut job);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"job-name": "pi", "batch.kubernetes.io/job-name": "pi",
                "controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1"})
        );
        let mut manual = json!({"metadata": {"name": "m", "uid": "u-2"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
        let before = manual.clone();
        generate_job_selector(&mut manual);
        assert_eq!(manual, before);
    }

    #[test]
    fn daemon_sets_count_their_template_generations() {
        let store = crate::store::MemoryStore::new(
            kemu_shared::FakeClock::at_epoch(),
            crate::store::StoreLimits::default(),
        );
        let ctx = Context {
            store: &store,
            network: None,
            namespace: "default",
            user: None,
            now: chrono::DateTime::UNIX_EPOCH,
        };
        let rt = crate::resources::ResourceRegistry::builtin_ref()
            .lookup("apps", "v1", "daemonsets")
            .unwrap();
        let mut ds = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {}}}});
        DaemonSetStrategy
            .prepare_create(&ctx, &rt, "d", &mut ds)
            .unwrap();
        assert_eq!(ds["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        let mut same = ds.clone();
        same["metadata"]["annotations"] = json!({});
        DaemonSetStrategy
            .prepare_update(&ctx, &rt, &ds, &mut same)
            .unwrap();
        assert_eq!(same["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        let mut changed = ds.clone();
        changed["spec"]["template"]["metadata"] = json!({"labels": {"a": "b"}});
        DaemonSetStrategy
            .prepare_update(&ctx, &rt, &ds, &mut changed)
            .unwrap();
        assert_eq!(changed["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }

    #[test]
    fn workloads_get_upstreams_defaults_and_keep_what_is_set() {
        let mut d = json!({ "replicas": 3, "strategy": { "type": "Recreate" } });
        default_spec("Deployment", &mut d);
        assert_eq!(
            d,
            json!({ "replicas": 3, "strategy": { "type": "Recreate" },
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600 })
        );
        let mut d = json!({ "strategy": { "rollingUpdate": { "maxSurge": 2 } } });
        default_spec("Deployment", &mut d);
        assert_eq!(
            d["strategy"],
            json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 2, "maxUnavailable": "25%" } })
        );
        let mut s = json!({});
        default_spec("StatefulSet", &mut s);
        assert_eq!(
            s["updateStrategy"],
            json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } })
        );
        assert_eq!(s["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            s["persistentVolumeClaimRetentionPolicy"],
            json!({ "whenDeleted": "Retain", "whenScaled": "Retain" })
        );
        let mut ds = json!({ "updateStrategy": { "type": "OnDelete" } });
        default_spec("DaemonSet", &mut ds);
        assert_eq!(ds["updateStrategy"], json!({ "type": "OnDelete" }));
        let mut queue = json!({ "parallelism": 3 });
        default_spec("Job", &mut queue);
        assert!(
            queue["completions"].is_null(),
            "a work queue keeps no completions"
        );
        let mut one = json!({});
        default_spec("Job", &mut one);
        assert_eq!(
            one,
            json!({ "completions": 1, "parallelism": 1, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": false,
                "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false })
        );
        let mut cj = json!({ "schedule": "* * * * *" });
        default_spec("CronJob", &mut cj);
        assert_eq!(cj["concurrencyPolicy"], "Allow");
        assert_eq!(cj["successfulJobsHistoryLimit"], 3);
    }
}
