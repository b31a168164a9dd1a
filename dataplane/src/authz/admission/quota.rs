//! ResourceQuota admission (`plugin/pkg/admission/resourcequota`): what a
//! write adds to each quota of its namespace, refused with upstream's
//! `exceeded quota` / `must specify` / `status unknown` messages, and the
//! usage a quota controller computes for `status.used`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::Operation;
use super::quantity::Quantity;
use crate::authz::forbidden::Forbidden;

/// Usage by quota resource name (`pods`, `requests.cpu`, `count/deployments.apps`, …).
pub type Usage = BTreeMap<String, Quantity>;

const COMPUTE: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

fn one() -> Quantity {
    Quantity::from_units(1)
}

fn list<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn resource_list(v: Option<&Value>) -> Usage {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| Some((k.clone(), Quantity::of_json(q)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A container's requests, with each limit standing in for a missing request
/// (what API defaulting does before admission).
fn container_requests(c: &Value) -> Usage {
    let mut r = resource_list(c.pointer("/resources/requests"));
    for (k, v) in resource_list(c.pointer("/resources/limits")) {
        r.entry(k).or_insert(v);
    }
    r
}

fn container_limits(c: &Value) -> Usage {
    resource_list(c.pointer("/resources/limits"))
}

/// Upstream `PodRequests`/`PodLimits`: the containers' sum, at least each init
/// container's, plus the pod overhead.
fn pod_total(pod: &Value, of: fn(&Value) -> Usage) -> Usage {
    let mut sum = Usage::new();
    for c in list(pod, "/spec/containers") {
        for (k, v) in of(c) {
            let e = sum.entry(k).or_default();
            *e = *e + v;
        }
    }
    for c in list(pod, "/spec/initContainers") {
        for (k, v) in of(c) {
            let e = sum.entry(k).or_insert(v);
            if v > *e {
                *e = v;
            }
        }
    }
    for (k, v) in resource_list(pod.pointer("/spec/overhead")) {
        let e = sum.entry(k).or_default();
        *e = *e + v;
    }
    sum
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// Whether no container requests or limits anything (QoS BestEffort).
fn best_effort(pod: &Value) -> bool {
    list(pod, "/spec/containers")
        .chain(list(pod, "/spec/initContainers"))
        .all(|c| container_requests(c).is_empty() && container_limits(c).is_empty())
}

/// The usage `object` (of `group`/`resource`) adds to a quota.
pub fn usage(group: &str, resource: &str, object: &Value) -> Usage {
    let mut u = Usage::new();
    let count = if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    };
    u.insert(count, one());
    if !group.is_empty() {
        return u;
    }
    match resource {
        "pods" => {
            if is_terminal(object) {
                return u;
            }
            u.insert("pods".into(), one());
            for (k, v) in pod_total(object, container_requests) {
                // Upstream also counts these three under their bare names.
                if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
                    u.insert(k.clone(), v);
                }
                u.insert(format!("requests.{k}"), v);
            }
            for (k, v) in pod_total(object, container_limits) {
                u.insert(format!("limits.{k}"), v);
            }
        }
        "services" => {
            u.insert("services".into(), one());
            let ty = object
                .pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = list(object, "/spec/ports").count() as i64;
            if ty == "LoadBalancer" {
                u.insert("services.loadbalancers".into(), one());
            }
            if ty == "LoadBalancer" || ty == "NodePort" {
                u.insert("services.nodeports".into(), Quantity::from_units(ports));
            }
        }
        "persistentvolumeclaims" => {
            u.insert("persistentvolumeclaims".into(), one());
            let storage = object
                .pointer("/spec/resources/requests/storage")
                .and_then(Quantity::of_json)
                .unwrap_or_default();
            u.insert("requests.storage".into(), storage);
            if let Some(sc) = object
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
            {
                let prefix = format!("{sc}.storageclass.storage.k8s.io/");
                u.insert(format!("{prefix}persistentvolumeclaims"), one());
                u.insert(format!("{prefix}requests.storage"), storage);
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            u.insert(resource.into(), one());
        }
        _ => {}
    }
    u
}

/// Whether `quota`'s scopes select `object` (only pods can match a scoped quota).
fn matches_scopes(quota: &Value, resource: &str, object: &Value) -> bool {
    let mut scopes: Vec<(String, String, Vec<String>)> = list(quota, "/spec/scopes")
        .filter_map(Value::as_str)
        .map(|s| (s.to_owned(), "Exists".to_owned(), Vec::new()))
        .collect();
    for e in list(quota, "/spec/scopeSelector/matchExpressions") {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let values = list(e, "/values")
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        scopes.push((s("scopeName"), s("operator"), values));
    }
    if scopes.is_empty() {
        return true;
    }
    if resource != "pods" {
        return false;
    }
    scopes.iter().all(|(scope, op, values)| {
        let terminating = object
            .pointer("/spec/activeDeadlineSeconds")
            .is_some_and(|v| !v.is_null());
        let priority = object
            .pointer("/spec/priorityClassName")
            .and_then(Value::as_str);
        match (scope.as_str(), op.as_str()) {
            ("Terminating", _) => terminating,
            ("NotTerminating", _) => !terminating,
            ("BestEffort", _) => best_effort(object),
            ("NotBestEffort", _) => !best_effort(object),
            ("PriorityClass", "Exists") => priority.is_some(),
            ("PriorityClass", "DoesNotExist") => priority.is_none(),
            ("PriorityClass", "In") => priority.is_some_and(|p| values.iter().any(|v| v == p)),
            ("PriorityClass", "NotIn") => priority.is_none_or(|p| !values.iter().any(|v| v == p)),
            _ => false,
        }
    })
}

fn pretty(u: &Usage) -> String {
    u.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn mask(u: &Usage, keys: &BTreeSet<String>) -> Usage {
    u.iter()
        .filter(|(k, _)| keys.contains(*k))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The quota's hard limits (`status.hard`, as the controller copies them
/// from `spec.hard`; `spec.hard` while the controller has not yet).
fn hard_of(quota: &Value) -> Usage {
    match quota.pointer("/status/hard") {
        Some(h) if h.as_object().is_some_and(|m| !m.is_empty()) => resource_list(Some(h)),
        _ => resource_list(quota.pointer("/spec/hard")),
    }
}

/// Upstream's check that each container requests what a compute quota limits.
fn must_specify(pod: &Value, required: &BTreeSet<String>) -> Option<String> {
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in list(pod, "/spec/containers").chain(list(pod, "/spec/initContainers")) {
        let (req, lim) = (container_requests(c), container_limits(c));
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        for r in required {
            let present = match r.split_once('.') {
                Some(("limits", k)) => lim.contains_key(k),
                Some(("requests", k)) => req.contains_key(k),
                _ => req.contains_key(r.as_str()),
            };
            if !present {
                missing.entry(r.clone()).or_default().insert(name.clone());
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// Admits a write of `object` (`old` on update) of `group`/`resource` against
/// the ResourceQuotas of its namespace. `Ok` carries the quotas whose
/// `status.used` the write increments (write them back, as upstream's
/// admission does); `Err` the 403.
pub fn admit(
    op: Operation,
    group: &str,
    resource: &str,
    object: &Value,
    old: Option<&Value>,
    quotas: &[Value],
) -> Result<Vec<Value>, Forbidden> {
    // Pods and generic counts are charged on create; services and PVCs also
    // on updates that grow them.
    let handles = match op {
        Operation::Create => true,
        Operation::Update => {
            group.is_empty() && matches!(resource, "services" | "persistentvolumeclaims")
        }
        Operation::Delete => false,
    };
    if !handles {
        return Ok(Vec::new());
    }
    let name = super::object_name(object);
    let forbid = |why: String| Forbidden::of_object(group, resource, name, &why);
    let mut delta = usage(group, resource, object);
    if let Some(old) = old {
        let before = usage(group, resource, old);
        for (k, v) in delta.iter_mut() {
            if let Some(b) = before.get(k) {
                *v = *v - *b;
            }
        }
    }
    let mut updated = Vec::new();
    for quota in quotas {
        if !matches_scopes(quota, resource, object) {
            continue;
        }
        let qname = quota
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let hard = hard_of(quota);
        let constrained: BTreeSet<String> = hard
            .keys()
            .filter(|k| delta.contains_key(*k))
            .cloned()
            .collect();
        let compute_required: BTreeSet<String> = hard
            .keys()
            .filter(|k| COMPUTE.contains(&k.as_str()))
            .cloned()
            .collect();
        if resource == "pods"
            && group.is_empty()
            && !compute_required.is_empty()
            && !is_terminal(object)
            && let Some(why) = must_specify(object, &compute_required)
        {
            return Err(forbid(format!("failed quota: {qname}: {why}")));
        }
        let requested = mask(&delta, &constrained);
        if requested.values().all(|v| v.nanos == 0) {
            continue;
        }
        let used = resource_list(quota.pointer("/status/used"));
        let unknown: Vec<&String> = constrained
            .iter()
            .filter(|k| !used.contains_key(*k))
            .collect();
        if !unknown.is_empty() {
            let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
            return Err(forbid(format!(
                "status unknown for quota: {qname}, resources: {}",
                names.join(",")
            )));
        }
        let mut new_used = used.clone();
        for (k, v) in &requested {
            let e = new_used.entry(k.clone()).or_default();
            *e = *e + *v;
        }
        let exceeded: BTreeSet<String> = requested
            .keys()
            .filter(|k| v_gt(new_used.get(*k), hard.get(*k)))
            .cloned()
            .collect();
        if !exceeded.is_empty() {
            return Err(forbid(format!(
                "exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
                pretty(&mask(&requested, &exceeded)),
                pretty(&mask(&used, &exceeded)),
                pretty(&mask(&hard, &exceeded)),
            )));
        }
        let mut q = quota.clone();
        let used_json: Map<String, Value> = new_used
            .iter()
            .map(|(k, v)| (k.clone(), json!(v.to_string())))
            .collect();
        q["status"]["used"] = Value::Object(used_json);
        updated.push(q);
    }
    Ok(updated)
}

fn v_gt(a: Option<&Quantity>, b: Option<&Quantity>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a > b)
}

/// What `quota`'s `status` should be given the namespace's objects
/// (`(group, resource, object)`), as the quota controller computes it:
/// `{"hard": spec.hard, "used": {...}}` with every hard key present.
pub fn status(quota: &Value, objects: &[(String, String, Value)]) -> Value {
    let hard = resource_list(quota.pointer("/spec/hard"));
    let mut used: Usage = hard
        .keys()
        .map(|k| {
            let zero = Quantity {
                nanos: 0,
                binary: hard[k].binary,
            };
            (k.clone(), zero)
        })
        .collect();
    for (g, r, o) in objects {
        if !matches_scopes(quota, r, o) {
            continue;
        }
        for (k, v) in usage(g, r, o) {
            if let Some(e) = used.get_mut(&k) {
                *e = *e + v;
            }
        }
    }
    json!({
        "hard": quota.pointer("/spec/hard").cloned().unwrap_or(json!({})),
        "used": used.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect::<Map<_, _>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, cpu_req: Option<&str>, mem_lim: Option<&str>) -> Value {
        let mut res = json!({});
        if let Some(c) = cpu_req {
            res["requests"] = json!({"cpu": c});
        }
        if let Some(m) = mem_lim {
            res["limits"] = json!({"memory": m});
        }
        json!({"kind":"Pod","metadata":{"name":name,"namespace":"q"},
               "spec":{"containers":[{"name":"app","image":"nginx","resources":res}]}})
    }

    fn quota(hard: Value, used: Value) -> Value {
        json!({"kind":"ResourceQuota","metadata":{"name":"compute","namespace":"q"},
               "spec":{"hard":hard},"status":{"hard":hard,"used":used}})
    }

    #[test]
    fn pod_counts_and_cpu_are_enforced_with_upstream_messages() {
        let q = quota(
            json!({"pods":"2","requests.cpu":"1"}),
            json!({"pods":"2","requests.cpu":"500m"}),
        );
        let e = admit(
            Operation::Create,
            "",
            "pods",
            &pod("p3", Some("100m"), None),
            None,
            &[q],
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p3\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
        );
        let q = quota(
            json!({"pods":"2","requests.cpu":"1"}),
            json!({"pods":"1","requests.cpu":"500m"}),
        );
        let e = admit(
            Operation::Create,
            "",
            "pods",
            &pod("big", Some("600m"), None),
            None,
            std::slice::from_ref(&q),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"big\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1"
        );
        let ok = admit(
            Operation::Create,
            "",
            "pods",
            &pod("p2", Some("500m"), None),
            None,
            &[q],
        )
        .unwrap();
        assert_eq!(
            ok[0]["status"]["used"],
            json!({"pods":"2","requests.cpu":"1"})
        );
        assert_eq!(e.status()["code"], 403);
    }

    #[test]
    fn compute_quotas_need_requests() {
        let q = quota(
            json!({"limits.memory":"1Gi","requests.cpu":"1"}),
            json!({"limits.memory":"0","requests.cpu":"0"}),
        );
        let e = admit(
            Operation::Create,
            "",
            "pods",
            &pod("p", None, None),
            None,
            &[q],
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app"
        );
    }

    #[test]
    fn unknown_status_and_object_counts() {
        let q = json!({"metadata":{"name":"counts"},"spec":{"hard":{"count/deployments.apps":"1","configmaps":"1"}}});
        let e = admit(
            Operation::Create,
            "",
            "configmaps",
            &json!({"metadata":{"name":"c"}}),
            None,
            std::slice::from_ref(&q),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "configmaps \"c\" is forbidden: status unknown for quota: counts, resources: configmaps"
        );
        let objs = vec![(
            "apps".to_owned(),
            "deployments".to_owned(),
            json!({"metadata":{"name":"d1"}}),
        )];
        let mut q = q;
        q["status"] = status(&q, &objs);
        assert_eq!(
            q["status"]["used"],
            json!({"configmaps":"0","count/deployments.apps":"1"})
        );
        let e = admit(
            Operation::Create,
            "apps",
            "deployments",
            &json!({"metadata":{"name":"d2"}}),
            None,
            std::slice::from_ref(&q),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "deployments.apps \"d2\" is forbidden: exceeded quota: counts, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"
        );
        // Updates of pods or deployments are not charged; unrelated kinds pass.
        assert!(
            admit(
                Operation::Update,
                "apps",
                "deployments",
                &json!({}),
                Some(&json!({})),
                std::slice::from_ref(&q)
            )
            .unwrap()
            .is_empty()
        );
        assert!(
            admit(
                Operation::Create,
                "",
                "secrets",
                &json!({"metadata":{"name":"s"}}),
                None,
                &[q]
            )
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn scopes_select_pods() {
        let mut q = quota(json!({"pods":"0"}), json!({"pods":"0"}));
        q["spec"]["scopes"] = json!(["BestEffort"]);
        assert!(
            admit(
                Operation::Create,
                "",
                "pods",
                &pod("a", None, None),
                None,
                std::slice::from_ref(&q)
            )
            .is_err()
        );
        assert!(
            admit(
                Operation::Create,
                "",
                "pods",
                &pod("b", Some("1"), None),
                None,
                &[q]
            )
            .is_ok()
        );
    }

    #[test]
    fn usage_sums_containers_and_takes_init_maximum() {
        let p = json!({"spec":{"containers":[
            {"name":"a","resources":{"requests":{"cpu":"250m","memory":"64Mi"},"limits":{"memory":"128Mi"}}},
            {"name":"b","resources":{"limits":{"cpu":"500m"}}}],
            "initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}}}]}});
        let u = usage("", "pods", &p);
        assert_eq!(u["requests.cpu"].to_string(), "1");
        assert_eq!(u["cpu"].to_string(), "1");
        assert_eq!(u["requests.memory"].to_string(), "64Mi");
        assert_eq!(u["limits.cpu"].to_string(), "500m");
        assert_eq!(u["pods"].to_string(), "1");
        assert_eq!(u["count/pods"].to_string(), "1");
        let done = json!({"status":{"phase":"Succeeded"}});
        assert!(!usage("", "pods", &done).contains_key("pods"));
    }
}
