//! Workloads, as upstream's `pkg/apis/{apps,batch,core}/validation` check
//! them: replicas, selectors that match their template's labels, the
//! template's pod spec and the restart policy each controller allows, and
//! what may not change on update.

use serde_json::{Value, json};

use super::errors::Errors;
use super::pods;
use crate::label_selector;

/// The `spec.template` of a ReplicaSet-like controller: labels matched by
/// `selector` (unless it is empty), a valid pod template, `Always` restarts.
fn replicated_template(e: &mut Errors, spec: &Value, selector_matches: Option<bool>) {
    let t = &spec["template"];
    if selector_matches == Some(false) {
        e.invalid(
            "spec.template.metadata.labels",
            &t["metadata"]["labels"],
            "`selector` does not match template `labels`",
        );
    }
    pods::template(e, "spec.template", t);
    let restart = &t["spec"]["restartPolicy"];
    if restart.as_str().is_some_and(|r| r != "Always") {
        e.unsupported("spec.template.spec.restartPolicy", restart, &["Always"]);
    }
}

/// A `metav1.LabelSelector` at `spec.selector` that must be set and not
/// empty (`what` names the kind in the message); whether it matches the
/// template's labels, when it can be told.
fn label_selector(e: &mut Errors, spec: &Value, what: &str) -> Option<bool> {
    let sel = &spec["selector"];
    if sel.is_null() {
        e.required("spec.selector", "");
        return None;
    }
    let empty = sel["matchLabels"].as_object().is_none_or(|m| m.is_empty())
        && sel["matchExpressions"].as_array().is_none_or(Vec::is_empty);
    if empty {
        e.invalid(
            "spec.selector",
            sel,
            &format!("empty selector is invalid for {what}"),
        );
        return None;
    }
    Some(label_selector::matches(
        sel,
        &spec["template"]["metadata"]["labels"],
    ))
}

/// A selector fixed at create, on update.
fn fixed_selector(e: &mut Errors, o: &Value, old: Option<&Value>) {
    if let Some(old) = old {
        e.immutable(
            "spec.selector",
            &o["spec"]["selector"],
            &old["spec"]["selector"],
        );
    }
}

/// The status a Deployment's or ReplicaSet's `/status` writes: counts of at
/// least 0, none above `replicas`, no more available than ready.
pub fn replicas_status(e: &mut Errors, o: &Value, kind: &str) {
    // A Deployment counts updated replicas, a ReplicaSet fully labeled ones.
    let own = if kind == "Deployment" {
        "updatedReplicas"
    } else {
        "fullyLabeledReplicas"
    };
    let st = &o["status"];
    let counted = [
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "terminatingReplicas",
        "collisionCount",
    ];
    for f in counted {
        e.at_least(&format!("status.{f}"), &st[f], 0);
    }
    let n = |f: &str| st[f].as_i64().unwrap_or(0);
    for f in [own, "readyReplicas", "availableReplicas"] {
        if n(f) > n("replicas") {
            e.invalid(
                &format!("status.{f}"),
                &json!(n(f)),
                "cannot be greater than status.replicas",
            );
        }
    }
    if n("availableReplicas") > n("readyReplicas") {
        e.invalid(
            "status.availableReplicas",
            &json!(n("availableReplicas")),
            "cannot be greater than readyReplicas",
        );
    }
}

/// Deployments.
pub fn deployment(e: &mut Errors, o: &Value, old: Option<&Value>) {
    fixed_selector(e, o, old);
    let spec = &o["spec"];
    e.at_least("spec.replicas", &spec["replicas"], 0);
    let matches = label_selector(e, spec, "deployment");
    replicated_template(e, spec, matches);
    e.one_of(
        "spec.strategy.type",
        &spec["strategy"]["type"],
        &["Recreate", "RollingUpdate"],
    );
    e.at_least("spec.minReadySeconds", &spec["minReadySeconds"], 0);
    e.at_least(
        "spec.revisionHistoryLimit",
        &spec["revisionHistoryLimit"],
        0,
    );
}

/// ReplicaSets.
pub fn replica_set(e: &mut Errors, o: &Value, old: Option<&Value>) {
    fixed_selector(e, o, old);
    let spec = &o["spec"];
    e.at_least("spec.replicas", &spec["replicas"], 0);
    e.at_least("spec.minReadySeconds", &spec["minReadySeconds"], 0);
    let matches = label_selector(e, spec, "deployment");
    replicated_template(e, spec, matches);
}

/// DaemonSets.
pub fn daemon_set(e: &mut Errors, o: &Value, old: Option<&Value>) {
    fixed_selector(e, o, old);
    let spec = &o["spec"];
    let matches = label_selector(e, spec, "daemonset");
    replicated_template(e, spec, matches);
    e.at_least("spec.minReadySeconds", &spec["minReadySeconds"], 0);
    e.one_of(
        "spec.updateStrategy.type",
        &spec["updateStrategy"]["type"],
        &["OnDelete", "RollingUpdate"],
    );
}

/// What a StatefulSet's spec may change after create.
const STATEFUL_SET_MUTABLE: [&str; 7] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// StatefulSets.
pub fn stateful_set(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let spec = &o["spec"];
    if let Some(old) = old {
        let fixed = |s: &Value| {
            let mut s = s.clone();
            if let Some(m) = s.as_object_mut() {
                m.retain(|k, _| !STATEFUL_SET_MUTABLE.contains(&k.as_str()));
            }
            s
        };
        if fixed(spec) != fixed(&old["spec"]) {
            e.forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            );
        }
    }
    let policy = &spec["podManagementPolicy"];
    if let Some(p) = policy.as_str()
        && p != "OrderedReady"
        && p != "Parallel"
    {
        e.invalid(
            "spec.podManagementPolicy",
            policy,
            "must be 'OrderedReady' or 'Parallel'",
        );
    }
    e.one_of(
        "spec.updateStrategy.type",
        &spec["updateStrategy"]["type"],
        &["OnDelete", "RollingUpdate"],
    );
    e.at_least("spec.replicas", &spec["replicas"], 0);
    e.at_least("spec.minReadySeconds", &spec["minReadySeconds"], 0);
    let matches = label_selector(e, spec, "statefulset");
    replicated_template(e, spec, matches);
}

/// ReplicationControllers: a map selector, required.
pub fn replication_controller(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    e.at_least("spec.replicas", &spec["replicas"], 0);
    e.at_least("spec.minReadySeconds", &spec["minReadySeconds"], 0);
    let sel = spec["selector"].as_object().filter(|m| !m.is_empty());
    if sel.is_none() {
        e.required("spec.selector", "");
    }
    let matches = sel.map(|s| {
        let labels = &spec["template"]["metadata"]["labels"];
        s.iter().all(|(k, v)| &labels[k] == v)
    });
    replicated_template(e, spec, matches);
}

/// ControllerRevisions: a revision of at least 0, and data fixed at create.
pub fn controller_revision(e: &mut Errors, o: &Value, old: Option<&Value>) {
    e.at_least("revision", &o["revision"], 0);
    if let Some(old) = old {
        e.immutable("data", &o["data"], &old["data"]);
    }
}

/// PodTemplates.
pub fn pod_template(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    pods::template(e, "template", &o["template"]);
}

/// Pods.
pub fn pod(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    pods::pod_spec(e, "spec", &o["spec"]);
}

/// `cron.ParseStandard`'s first check: five fields, or a `@` descriptor.
fn schedule_problem(schedule: &str) -> Option<String> {
    let mut s = schedule.trim();
    if let Some(rest) = s.strip_prefix("TZ=").or_else(|| s.strip_prefix("CRON_TZ=")) {
        s = rest.split_once(' ').map_or("", |(_, r)| r.trim());
    }
    if s.starts_with('@') {
        return None;
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    (fields.len() != 5).then(|| {
        format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        )
    })
}

/// CronJobs.
pub fn cron_job(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    let schedule = &spec["schedule"];
    match schedule.as_str() {
        None | Some("") => e.required("spec.schedule", ""),
        Some(s) => {
            if let Some(p) = schedule_problem(s) {
                e.invalid("spec.schedule", schedule, &p);
            }
        }
    }
    e.one_of(
        "spec.concurrencyPolicy",
        &spec["concurrencyPolicy"],
        &["Allow", "Forbid", "Replace"],
    );
    for f in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        e.at_least(&format!("spec.{f}"), &spec[f], 0);
    }
    super::job::spec(e, "spec.jobTemplate.spec", &spec["jobTemplate"]["spec"]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(check: fn(&mut Errors, &Value, Option<&Value>), o: Value) -> Vec<String> {
        let mut e = Errors::default();
        check(&mut e, &o, None);
        e.0.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn template(app: &str, restart: &str) -> Value {
        json!({"metadata": {"labels": {"app": app}},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "i"}]}})
    }

    #[test]
    fn selectors_must_match_their_templates() {
        let d = json!({"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "one"}},
            "template": template("two", "Always")}});
        assert_eq!(
            messages(deployment, d),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"two\"}: `selector` does not match template `labels`"
            ]
        );
        let ds = json!({"spec": {"selector": {"matchLabels": {"app": "one"}},
            "template": template("one", "Never")}});
        assert_eq!(
            messages(daemon_set, ds),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""
            ]
        );
    }

    #[test]
    fn jobs_restart_on_failure_or_never_and_schedules_have_five_fields() {
        let j = json!({"spec": {"template": template("x", "Always")}});
        assert_eq!(
            messages(super::super::job::job, j),
            [
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            schedule_problem("every day").unwrap(),
            "expected exactly 5 fields, found 2: [every day]"
        );
        assert_eq!(schedule_problem("*/5 * * * *"), None);
        assert_eq!(schedule_problem("@hourly"), None);
    }
}
