//! Pod defaults, as upstream's `SetDefaults_PodSpec`, `SetDefaults_Container`
//! and their kin fill them on every write of a Pod or of a pod template
//! (`restartPolicy`, `dnsPolicy`, `schedulerName`, `securityContext`,
//! `terminationGracePeriodSeconds`; each container's `imagePullPolicy` and
//! termination message; ports, probes, volume modes), plus what only Pods
//! get: `enableServiceLinks` and requests copied from limits. The admission
//! plugins' `priority`, `preemptionPolicy` and the not-ready/unreachable
//! tolerations of 300 s come apart ([`admit_pod`]), after a create's fields
//! are tracked, so they are nobody's in `managedFields`, as upstream has it.

use serde_json::{Value, json};

use super::{Context, Strategy, set_default};
use crate::error::ApiError;
use crate::resources::ResourceType;

fn each<'a>(v: &'a mut Value, field: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(field)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|x| x.is_object())
}

/// An image reference's last path part: its name, its tag when one is
/// written, and whether a digest (`@sha256:…`) pins it.
pub fn image_parts(image: &str) -> (&str, Option<&str>, bool) {
    let last = image.rsplit('/').next().unwrap_or(image);
    let (named, digest) = match last.split_once('@') {
        Some((n, _)) => (n, true),
        None => (last, false),
    };
    match named.split_once(':') {
        Some((name, tag)) => (name, Some(tag), digest),
        None => (named, None, digest),
    }
}

/// `IfNotPresent`, or `Always` for an image whose tag is `latest` (a missing
/// tag without a digest counts as `latest`, as the image reference parser
/// reads it).
fn pull_policy(image: &str) -> &'static str {
    let tag = match image_parts(image) {
        (_, tag, true) => tag,
        (_, tag, false) => Some(tag.unwrap_or("latest")),
    };
    if tag == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn default_probe(probe: &mut Value) {
    if !probe.is_object() {
        return;
    }
    set_default(probe, "timeoutSeconds", json!(1));
    set_default(probe, "periodSeconds", json!(10));
    set_default(probe, "successThreshold", json!(1));
    set_default(probe, "failureThreshold", json!(3));
    if probe["httpGet"].is_object() {
        set_default(&mut probe["httpGet"], "path", json!("/"));
        set_default(&mut probe["httpGet"], "scheme", json!("HTTP"));
    }
}

fn default_container(c: &mut Value) {
    let image = c["image"].as_str().unwrap_or("").to_owned();
    set_default(c, "imagePullPolicy", json!(pull_policy(&image)));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    // A struct field Go writes even when empty.
    set_default(c, "resources", json!({}));
    for port in each(c, "ports") {
        set_default(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe) {
            default_probe(p);
        }
    }
    for env in each(c, "env") {
        if let Some(f) = env.pointer_mut("/valueFrom/fieldRef") {
            set_default(f, "apiVersion", json!("v1"));
        }
    }
}

fn default_volume(v: &mut Value) {
    const SOURCES_WITH_MODE: [&str; 3] = ["configMap", "secret", "projected"];
    let has_source = v.as_object().is_some_and(|m| m.keys().any(|k| k != "name"));
    if !has_source {
        v["emptyDir"] = json!({});
    }
    for source in SOURCES_WITH_MODE {
        if v[source].is_object() {
            set_default(&mut v[source], "defaultMode", json!(420));
        }
    }
}

/// Fills a PodSpec (a Pod's or a template's) as upstream's defaulting does.
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    service_account_alias(spec);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in each(spec, list) {
            default_container(c);
        }
    }
    for v in each(spec, "volumes") {
        default_volume(v);
    }
}

/// The tolerations upstream's DefaultTolerationSeconds plugin adds, for a Pod
/// not tolerating these taints already.
const DEFAULT_TOLERATIONS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// Fills a Pod: its spec's defaults, then what only Pods get.
pub fn default_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    default_pod_spec(spec);
    set_default(spec, "enableServiceLinks", json!(true));
    for list in ["containers", "initContainers"] {
        for c in each(spec, list) {
            if let Some(limits) = c["resources"]["limits"].as_object().cloned() {
                let requests = &mut c["resources"]["requests"];
                if !requests.is_object() {
                    *requests = json!({});
                }
                for (k, v) in limits {
                    set_default(requests, &k, v);
                }
            }
        }
    }
}

/// Upstream's QoS class from requests and limits.
pub fn qos_class(p: &Value) -> &'static str {
    let containers: Vec<&Value> = p["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let r = &c["resources"];
        for res in ["cpu", "memory"] {
            let req = r["requests"].get(res).or(r["limits"].get(res));
            let lim = r["limits"].get(res);
            any |= req.is_some() || lim.is_some();
            if lim.is_none() || req != lim {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Upstream's `podStrategy.PrepareForCreate`: a new Pod's status is
/// `Pending` with its QoS class (computed before LimitRange defaults, as
/// there). A status already set (by an earlier step of the same create) stays.
pub fn init_status(pod: &mut Value) {
    if !pod.is_object() || !pod["status"]["phase"].is_null() {
        return;
    }
    let qos = qos_class(pod);
    pod["status"] = json!({ "phase": "Pending", "qosClass": qos });
}

/// The Pod strategy: a new Pod's status is the registry's (`Pending`, its
/// QoS class, and `PodScheduled` false while scheduling gates hold it),
/// whatever the request said.
#[derive(Debug)]
pub struct PodStrategy;

impl Strategy for PodStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        default_object(&rt.kind, object);
    }

    fn prepare_create(
        &self,
        ctx: &Context<'_>,
        _rt: &ResourceType,
        _name: &str,
        pod: &mut Value,
    ) -> Result<(), ApiError> {
        let Some(m) = pod.as_object_mut() else {
            return Ok(());
        };
        m.remove("status");
        init_status(pod);
        let gated = pod["spec"]["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty());
        if gated {
            let now = ctx.now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            pod["status"]["conditions"] = json!([{
                "type": "PodScheduled", "status": "False", "lastProbeTime": null,
                "lastTransitionTime": now, "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]);
        }
        Ok(())
    }
}

/// `serviceAccount`, the deprecated alias of `serviceAccountName`: read when
/// the name is not given, and always written as the name (upstream's v1
/// conversion of a pod spec).
fn service_account_alias(spec: &mut Value) {
    let name = spec["serviceAccountName"]
        .as_str()
        .filter(|n| !n.is_empty());
    let alias = spec["serviceAccount"].as_str().filter(|n| !n.is_empty());
    match (name.map(str::to_owned), alias.map(str::to_owned)) {
        (Some(n), _) => spec["serviceAccount"] = json!(n),
        (None, Some(a)) => spec["serviceAccountName"] = json!(a),
        (None, None) => {}
    }
}

/// What the Priority and DefaultTolerationSeconds admission plugins add to a
/// Pod created: `priority` 0 and `PreemptLowerPriority` without a class,
/// and the not-ready/unreachable tolerations of 300 s.
pub fn admit_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    // The ServiceAccount plugin may just have named the account.
    service_account_alias(spec);
    if spec["priorityClassName"].as_str().is_none_or(str::is_empty) {
        set_default(spec, "priority", json!(0));
        set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
    if !spec["tolerations"].is_array() {
        spec["tolerations"] = json!([]);
    }
    let Some(tolerations) = spec["tolerations"].as_array_mut() else {
        return;
    };
    for key in DEFAULT_TOLERATIONS {
        let tolerated = tolerations.iter().any(|t| {
            let effect = t["effect"].as_str().unwrap_or("");
            (effect.is_empty() || effect == "NoExecute")
                && (t["key"] == key || (t["key"].is_null() && t["operator"] == "Exists"))
        });
        if !tolerated {
            tolerations.push(json!({"key": key, "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// Fills a Pod, or a PodTemplate's `template.spec`.
pub fn default_object(kind: &str, object: &mut Value) {
    match kind {
        "Pod" => default_pod(object),
        _ => {
            if let Some(spec) = object.pointer_mut("/template/spec") {
                default_pod_spec(spec);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_upstreams_defaults_and_keep_what_is_set() {
        let mut pod = json!({"spec": {"restartPolicy": "Never", "containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
             "readinessProbe": {"httpGet": {"port": 80}},
             "resources": {"limits": {"cpu": "1"}}},
            {"name": "b", "image": "registry.local:5000/app:1.2", "imagePullPolicy": "Never"},
            {"name": "c", "image": "app@sha256:abc"}],
            "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "x"}}]}});
        default_pod(&mut pod);
        assert!(pod["spec"].get("priority").is_none() && pod["spec"].get("tolerations").is_none());
        admit_pod(&mut pod);
        let s = &pod["spec"];
        assert_eq!(s["restartPolicy"], "Never");
        assert_eq!(s["dnsPolicy"], "ClusterFirst");
        assert_eq!(s["schedulerName"], "default-scheduler");
        assert_eq!(s["terminationGracePeriodSeconds"], 30);
        assert_eq!(s["securityContext"], json!({}));
        assert_eq!(s["enableServiceLinks"], true);
        assert_eq!(s["priority"], 0);
        assert_eq!(s["preemptionPolicy"], "PreemptLowerPriority");
        let c = &s["containers"];
        assert_eq!(c[0]["imagePullPolicy"], "Always");
        assert_eq!(c[1]["imagePullPolicy"], "Never");
        assert_eq!(c[2]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c[0]["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c[0]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            c[0]["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c[0]["resources"]["requests"], json!({"cpu": "1"}));
        assert_eq!(s["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(s["volumes"][1]["configMap"]["defaultMode"], 420);
        assert_eq!(s["tolerations"].as_array().map(Vec::len), Some(2));
        let before = pod.clone();
        default_pod(&mut pod);
        admit_pod(&mut pod);
        assert_eq!(pod, before, "defaulting twice changes nothing");
    }

    #[test]
    fn a_pod_tolerating_everything_gets_no_default_tolerations() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}],
            "tolerations": [{"operator": "Exists"}]}});
        admit_pod(&mut pod);
        assert_eq!(pod["spec"]["tolerations"], json!([{"operator": "Exists"}]));
    }

    #[test]
    fn image_references_decide_the_pull_policy() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("localhost:5000/nginx", "Always"),
            ("localhost:5000/nginx:1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
        ] {
            assert_eq!(pull_policy(image), want, "{image}");
        }
    }
}
