//! LimitRange admission (`plugin/pkg/admission/limitranger`): container
//! defaults filled into Pods on create (mutating), then min / max /
//! maxLimitRequestRatio per Container and per Pod, and min / max storage per
//! PersistentVolumeClaim (validating), worded as upstream.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Operation;
use super::quantity::Quantity;
use crate::authz::forbidden::Forbidden;
use crate::authz::rbac::aggregate;

/// The annotation upstream records its defaults in.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

type List = BTreeMap<String, Quantity>;

fn list_at(v: &Value, ptr: &str) -> List {
    v.pointer(ptr)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| Some((k.clone(), Quantity::of_json(q)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn items(lr: &Value) -> Vec<Value> {
    lr.pointer("/spec/limits")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Upstream `SetDefaults_LimitRangeItem` for every item of a LimitRange
/// (what the API stores): a Container item's `default` falls back to `max`,
/// its `defaultRequest` to `default`, then to `min`.
pub fn default_limit_range(lr: &Value) -> Value {
    let mut out = lr.clone();
    let Some(limits) = out
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return out;
    };
    for item in limits.iter_mut() {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let mut default = item
            .get("default")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut request = item
            .get("defaultRequest")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in item
            .get("max")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            default.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &default {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in item
            .get("min")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        item["default"] = Value::Object(default);
        item["defaultRequest"] = Value::Object(request);
    }
    out
}

fn merge(
    container: &mut Value,
    requests: &List,
    limits: &List,
    prefix: &str,
    notes: &mut Vec<String>,
) {
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut fill = |field: &str, defaults: &List| -> Vec<String> {
        let mut set = Vec::new();
        if !container["resources"].is_object() {
            container["resources"] = json!({});
        }
        if !container["resources"][field].is_object() {
            container["resources"][field] = json!({});
        }
        for (k, v) in defaults {
            if container["resources"][field].get(k).is_none() {
                container["resources"][field][k] = json!(v.to_string());
                set.push(k.clone());
            }
        }
        set.sort();
        set
    };
    let set_requests = fill("requests", requests);
    let set_limits = fill("limits", limits);
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {prefix} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!(
            "{} limit for {prefix} {name}",
            set_limits.join(", ")
        ));
    }
}

/// The mutating half, for a Pod being created: fills each container's
/// missing requests and limits from the namespace's LimitRanges' Container
/// defaults and records what it set in the `kubernetes.io/limit-ranger`
/// annotation. Other kinds and operations are left alone.
pub fn mutate(
    op: Operation,
    group: &str,
    resource: &str,
    object: &mut Value,
    limit_ranges: &[Value],
) {
    if op != Operation::Create || !group.is_empty() || resource != "pods" {
        return;
    }
    for lr in limit_ranges {
        let lr = default_limit_range(lr);
        let (mut requests, mut limits) = (List::new(), List::new());
        for item in items(&lr) {
            if item.get("type").and_then(Value::as_str) == Some("Container") {
                requests.extend(list_at(&item, "/defaultRequest"));
                limits.extend(list_at(&item, "/default"));
            }
        }
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        for (field, prefix) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            if let Some(cs) = object
                .pointer_mut(&format!("/spec/{field}"))
                .and_then(Value::as_array_mut)
            {
                for c in cs.iter_mut() {
                    merge(c, &requests, &limits, prefix, &mut notes);
                }
            }
        }
        if !notes.is_empty() {
            if !object["metadata"].is_object() {
                object["metadata"] = json!({});
            }
            if !object["metadata"]["annotations"].is_object() {
                object["metadata"]["annotations"] = Value::Object(Map::new());
            }
            object["metadata"]["annotations"][ANNOTATION] =
                json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
        }
    }
}

fn min_constraint(
    ty: &str,
    res: &str,
    enforced: Quantity,
    req: &List,
    lim: &List,
) -> Option<String> {
    let Some(r) = req.get(res) else {
        return Some(format!(
            "minimum {res} usage per {ty} is {enforced}.  No request is specified"
        ));
    };
    if *r < enforced {
        return Some(format!(
            "minimum {res} usage per {ty} is {enforced}, but request is {r}"
        ));
    }
    match lim.get(res) {
        Some(l) if *l < enforced => Some(format!(
            "minimum {res} usage per {ty} is {enforced}, but limit is {l}"
        )),
        _ => None,
    }
}

fn max_constraint(
    ty: &str,
    res: &str,
    enforced: Quantity,
    req: &List,
    lim: &List,
) -> Option<String> {
    let Some(l) = lim.get(res) else {
        return Some(format!(
            "maximum {res} usage per {ty} is {enforced}.  No limit is specified"
        ));
    };
    if *l > enforced {
        return Some(format!(
            "maximum {res} usage per {ty} is {enforced}, but limit is {l}"
        ));
    }
    match req.get(res) {
        Some(r) if *r > enforced => Some(format!(
            "maximum {res} usage per {ty} is {enforced}, but request is {r}"
        )),
        _ => None,
    }
}

fn max_request_constraint(ty: &str, res: &str, enforced: Quantity, req: &List) -> Option<String> {
    match req.get(res) {
        None => Some(format!(
            "maximum {res} usage per {ty} is {enforced}.  No request is specified"
        )),
        Some(r) if *r > enforced => Some(format!(
            "maximum {res} usage per {ty} is {enforced}, but request is {r}"
        )),
        _ => None,
    }
}

fn ratio_constraint(
    ty: &str,
    res: &str,
    enforced: Quantity,
    req: &List,
    lim: &List,
) -> Option<String> {
    let r = req.get(res).filter(|r| r.nanos != 0);
    let l = lim.get(res).filter(|l| l.nanos != 0);
    let Some(r) = r else {
        return Some(format!(
            "{res} max limit to request ratio per {ty} is {enforced}, but no request is specified or request is 0"
        ));
    };
    let Some(l) = l else {
        return Some(format!(
            "{res} max limit to request ratio per {ty} is {enforced}, but no limit is specified or limit is 0"
        ));
    };
    let observed = l.nanos as f64 / r.nanos as f64;
    let max = enforced.nanos as f64 / 1e9;
    (observed > max).then(|| {
        format!("{res} max limit to request ratio per {ty} is {enforced}, but provided ratio is {observed:.6}")
    })
}

fn check(item: &Value, ty: &str, req: &List, lim: &List, errs: &mut Vec<String>) {
    for (k, v) in list_at(item, "/min") {
        errs.extend(min_constraint(ty, &k, v, req, lim));
    }
    for (k, v) in list_at(item, "/max") {
        errs.extend(max_constraint(ty, &k, v, req, lim));
    }
    for (k, v) in list_at(item, "/maxLimitRequestRatio") {
        errs.extend(ratio_constraint(ty, &k, v, req, lim));
    }
}

fn pod_sum(pod: &Value, field: &str) -> List {
    let mut sum = List::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in list_at(c, &format!("/resources/{field}")) {
            let e = sum.entry(k).or_default();
            *e = *e + v;
        }
    }
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in list_at(c, &format!("/resources/{field}")) {
            let e = sum.entry(k).or_insert(v);
            if v > *e {
                *e = v;
            }
        }
    }
    sum
}

/// The validating half: `Err` is the 403 (Pods on create; PVCs on create and
/// update), its message `<resource> "<name>" is forbidden: <errors>`.
pub fn validate(
    op: Operation,
    group: &str,
    resource: &str,
    object: &Value,
    limit_ranges: &[Value],
) -> Result<(), Forbidden> {
    let applies = group.is_empty()
        && match resource {
            "pods" => op == Operation::Create,
            "persistentvolumeclaims" => op != Operation::Delete,
            _ => false,
        };
    if !applies {
        return Ok(());
    }
    let mut errs = Vec::new();
    for lr in limit_ranges {
        let lr = default_limit_range(lr);
        for item in items(&lr) {
            let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
            match (resource, ty) {
                ("pods", "Container") => {
                    for field in ["containers", "initContainers"] {
                        for c in object
                            .pointer(&format!("/spec/{field}"))
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            let (req, lim) = (
                                list_at(c, "/resources/requests"),
                                list_at(c, "/resources/limits"),
                            );
                            check(&item, ty, &req, &lim, &mut errs);
                        }
                    }
                }
                ("pods", "Pod") => {
                    let (req, lim) = (pod_sum(object, "requests"), pod_sum(object, "limits"));
                    check(&item, ty, &req, &lim, &mut errs);
                }
                ("persistentvolumeclaims", "PersistentVolumeClaim") => {
                    let req = list_at(object, "/spec/resources/requests");
                    for (k, v) in list_at(&item, "/min") {
                        errs.extend(min_constraint(ty, &k, v, &req, &List::new()));
                    }
                    for (k, v) in list_at(&item, "/max") {
                        errs.extend(max_request_constraint(ty, &k, v, &req));
                    }
                }
                _ => {}
            }
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    let name = super::object_name(object);
    Err(Forbidden::of_object(
        group,
        resource,
        name,
        &aggregate(&errs),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lr() -> Value {
        json!({"kind":"LimitRange","metadata":{"name":"limits","namespace":"d"},"spec":{"limits":[
            {"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"200m"},
             "max":{"cpu":"1"},"min":{"cpu":"50m"},"maxLimitRequestRatio":{"cpu":"4"}}]}})
    }

    #[test]
    fn defaults_fill_containers_as_upstream() {
        let mut pod = json!({"metadata":{"name":"p"},"spec":{"containers":[
            {"name":"app","image":"nginx"},
            {"name":"side","image":"x","resources":{"limits":{"cpu":"200m"},"requests":{"cpu":"200m"}}}]}});
        mutate(Operation::Create, "", "pods", &mut pod, &[lr()]);
        let app = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(app["limits"], json!({"cpu":"500m","memory":"256Mi"}));
        assert_eq!(app["requests"], json!({"cpu":"200m","memory":"256Mi"}));
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["limits"],
            json!({"cpu":"200m","memory":"256Mi"})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; memory request for container side; memory limit for container side"
        );
        assert!(validate(Operation::Create, "", "pods", &pod, &[lr()]).is_ok());
    }

    #[test]
    fn min_max_and_ratio_are_enforced_with_upstream_messages() {
        let pod = |req: &str, lim: &str| {
            json!({"metadata":{"name":"p"},"spec":{"containers":[
            {"name":"app","resources":{"requests":{"cpu":req},"limits":{"cpu":lim}}}]}})
        };
        let e = validate(Operation::Create, "", "pods", &pod("500m", "2"), &[lr()]).unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
        );
        let e = validate(Operation::Create, "", "pods", &pod("10m", "1"), &[lr()]).unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, cpu max limit to request ratio per Container is 4, but provided ratio is 100.000000]"
        );
        assert!(validate(Operation::Create, "", "pods", &pod("500m", "1"), &[lr()]).is_ok());
        // Pod updates are not checked, as upstream.
        assert!(validate(Operation::Update, "", "pods", &pod("500m", "2"), &[lr()]).is_ok());
    }

    #[test]
    fn pod_and_pvc_limits() {
        let lr = json!({"spec":{"limits":[{"type":"Pod","max":{"memory":"1Gi"}},
            {"type":"PersistentVolumeClaim","min":{"storage":"1Gi"},"max":{"storage":"10Gi"}}]}});
        let pod = json!({"metadata":{"name":"p"},"spec":{"containers":[
            {"name":"a","resources":{"limits":{"memory":"768Mi"}}},{"name":"b","resources":{"limits":{"memory":"512Mi"}}}]}});
        let e = validate(
            Operation::Create,
            "",
            "pods",
            &pod,
            std::slice::from_ref(&lr),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1280Mi"
        );
        let pvc = |s: &str| json!({"metadata":{"name":"data"},"spec":{"resources":{"requests":{"storage":s}}}});
        let e = validate(
            Operation::Create,
            "",
            "persistentvolumeclaims",
            &pvc("500Mi"),
            std::slice::from_ref(&lr),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "persistentvolumeclaims \"data\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
        );
        let e = validate(
            Operation::Update,
            "",
            "persistentvolumeclaims",
            &pvc("20Gi"),
            std::slice::from_ref(&lr),
        )
        .unwrap_err();
        assert!(e.message.ends_with(
            "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"
        ));
        assert!(
            validate(
                Operation::Create,
                "",
                "persistentvolumeclaims",
                &pvc("5Gi"),
                &[lr]
            )
            .is_ok()
        );
    }

    #[test]
    fn limit_range_defaulting() {
        let d = default_limit_range(
            &json!({"spec":{"limits":[{"type":"Container","max":{"cpu":"2"},"min":{"memory":"64Mi"}}]}}),
        );
        assert_eq!(d["spec"]["limits"][0]["default"], json!({"cpu":"2"}));
        assert_eq!(
            d["spec"]["limits"][0]["defaultRequest"],
            json!({"cpu":"2","memory":"64Mi"})
        );
    }
}
