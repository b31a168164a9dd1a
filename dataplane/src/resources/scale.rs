//! The `autoscaling/v1` Scale of an object, as its `/scale` subresource
//! serves it: built-ins scale `.spec.replicas` and report their label
//! selector in string form; custom resources use the paths of their CRD's
//! `subresources.scale`. The API's scale subresource and the HPA controller
//! both read and write scale through here.

use serde_json::{Value, json};

use super::ResourceType;
use super::custom;

/// Whether `rt` serves a `/scale` subresource.
pub fn has_scale(rt: &ResourceType) -> bool {
    rt.subresources.iter().any(|s| s.name == "scale")
}

/// The Scale of `object` of type `rt`.
pub fn view(rt: &ResourceType, object: &Value) -> Value {
    let mut scale = scale_of(rt, object);
    // `spec.replicas` is `omitempty`: a Scale to zero has an empty spec.
    if scale["spec"]["replicas"] == 0
        && let Some(spec) = scale["spec"].as_object_mut()
    {
        spec.remove("replicas");
    }
    scale
}

fn scale_of(rt: &ResourceType, object: &Value) -> Value {
    if let Some(paths) = rt.custom.as_ref().and_then(|c| c.scale.as_ref()) {
        return custom::scale_view(paths, object);
    }
    let meta = &object["metadata"];
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": { "replicas": object["spec"]["replicas"].as_i64().unwrap_or(1) },
        "status": { "replicas": object["status"]["replicas"].as_i64().unwrap_or(0) },
    });
    let selector = &object["spec"]["selector"];
    // A ReplicationController's selector is a plain label map.
    let selector = if rt.group.is_empty() && rt.kind == "ReplicationController" {
        selector_string(&json!({ "matchLabels": selector }))
    } else {
        selector_string(selector)
    };
    if !selector.is_empty() {
        scale["status"]["selector"] = json!(selector);
    }
    scale
}

/// `object` with its desired replicas set to `replicas`.
pub fn set_replicas(rt: &ResourceType, object: &mut Value, replicas: i64) {
    match rt.custom.as_ref().and_then(|c| c.scale.as_ref()) {
        Some(p) => custom::set_path(object, &p.spec_replicas, json!(replicas)),
        None => object["spec"]["replicas"] = json!(replicas),
    }
}

/// A `metav1.LabelSelector` as upstream prints it (`LabelSelectorAsSelector(…).String()`):
/// requirements sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
pub fn selector_string(selector: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = selector["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let text = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_owned(), text));
    }
    reqs.sort();
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceRegistry;

    #[test]
    fn label_selectors_print_as_upstream_prints_them() {
        let s = json!({
            "matchLabels": { "tier": "web", "app": "shop" },
            "matchExpressions": [
                { "key": "env", "operator": "In", "values": ["prod", "dev"] },
                { "key": "canary", "operator": "DoesNotExist" },
                { "key": "zone", "operator": "NotIn", "values": ["b"] },
                { "key": "owner", "operator": "Exists" },
            ],
        });
        assert_eq!(
            selector_string(&s),
            "app=shop,!canary,env in (dev,prod),owner,tier=web,zone notin (b)"
        );
        assert_eq!(selector_string(&Value::Null), "");
    }

    #[test]
    fn built_ins_scale_spec_replicas() {
        let rt = ResourceRegistry::builtin()
            .lookup("apps", "v1", "deployments")
            .unwrap();
        assert!(has_scale(&rt));
        let mut d = json!({ "metadata": { "name": "web", "namespace": "default" },
            "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "web" } } },
            "status": { "replicas": 2 } });
        let s = view(&rt, &d);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({ "replicas": 2, "selector": "app=web" }));
        set_replicas(&rt, &mut d, 5);
        assert_eq!(d["spec"]["replicas"], 5);
        let cm = ResourceRegistry::builtin()
            .lookup("", "v1", "configmaps")
            .unwrap();
        assert!(!has_scale(&cm));
    }
}
