//! What a body keeps through upstream's Go types. kube-apiserver decodes a
//! built-in object into its Go struct, so an `omitempty` field at its zero
//! value (`""`, `0`, `false`, `[]`, `{}`) or null is gone before anything
//! defaults, tracks or stores it: `group: ""` in a reference or
//! `finalizers: []` is as if never sent. A pointer field keeps its zero value
//! (`replicas: 0`, `storageClassName: ""`) and loses only null.
//!
//! The fields come from the Go types themselves, recorded in
//! `fixtures/k8s/go-types.json` by `upstream/cmd/gen-go-types`: definition →
//! JSON field → `[what Go omits, the definition of the struct it holds]`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

const GO_TYPES: &str = include_str!("../../../fixtures/k8s/go-types.json");

/// A definition's fields: what Go omits of each, and the struct it holds
/// (after `[]` per list and `{}` per map it sits in).
type Fields = HashMap<String, [String; 2]>;

fn types() -> &'static HashMap<String, Fields> {
    static TYPES: OnceLock<HashMap<String, Fields>> = OnceLock::new();
    TYPES.get_or_init(|| {
        // Compiled-in data checked by the tests: failure is a build defect.
        serde_json::from_str(GO_TYPES)
            .expect("fixtures/k8s/go-types.json: definition -> field -> [zero, child]")
    })
}

/// Whether Go leaves `v` out of a field whose omission is `zero`.
fn omitted(zero: &str, v: &Value) -> bool {
    match (zero, v) {
        ("", _) => false,
        (_, Value::Null) => true,
        ("string", Value::String(s)) => s.is_empty(),
        ("bool", Value::Bool(b)) => !b,
        ("number", Value::Number(n)) => n.as_f64() == Some(0.0),
        ("list", Value::Array(a)) => a.is_empty(),
        ("map", Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// Drops from `v`, an object of `definition`, what Go's decoding would not
/// keep, at every depth the Go types reach. Values of another shape than
/// the type's are left alone (the decoder refuses them elsewhere).
pub fn strip(definition: &str, v: &mut Value) {
    let Some(fields) = types().get(definition) else {
        return;
    };
    let Some(m) = v.as_object_mut() else {
        return;
    };
    m.retain(|k, x| fields.get(k).is_none_or(|[zero, _]| !omitted(zero, x)));
    for (k, x) in m.iter_mut() {
        if let Some([_, child]) = fields.get(k)
            && !child.is_empty()
        {
            held(child, x);
        }
    }
}

/// Strips `v`, which holds `child`'s struct as its path (`[]`, `{}`) says.
fn held(child: &str, v: &mut Value) {
    if let Some(rest) = child.strip_prefix("[]") {
        if let Some(items) = v.as_array_mut() {
            items.iter_mut().for_each(|x| held(rest, x));
        }
    } else if let Some(rest) = child.strip_prefix("{}") {
        if let Some(values) = v.as_object_mut() {
            values.values_mut().for_each(|x| held(rest, x));
        }
    } else {
        strip(child, v);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn omitempty_zero_values_go_and_pointers_keep_theirs() {
        let mut ip = json!({"metadata": {"name": "a", "finalizers": [], "labels": {}},
            "spec": {"parentRef": {"group": "", "resource": "services", "name": "web"}}});
        strip("io.k8s.api.networking.v1.IPAddress", &mut ip);
        assert_eq!(
            ip,
            json!({"metadata": {"name": "a"},
                "spec": {"parentRef": {"resource": "services", "name": "web"}}})
        );
        let mut pvc = json!({"spec": {"storageClassName": "", "volumeName": "",
            "selector": null, "accessModes": ["ReadWriteOnce"]}});
        strip("io.k8s.api.core.v1.PersistentVolumeClaim", &mut pvc);
        assert_eq!(
            pvc,
            json!({"spec": {"storageClassName": "", "accessModes": ["ReadWriteOnce"]}})
        );
    }

    #[test]
    fn lists_and_maps_of_structs_are_walked() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "c", "image": "", "ports": [{"containerPort": 80, "hostIP": ""}]}]}});
        strip("io.k8s.api.core.v1.Pod", &mut pod);
        assert_eq!(
            pod,
            json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}})
        );
        let mut crd = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema":
            {"type": "object", "required": [], "properties": {"a": {"type": "string", "format": ""}}}}}]}});
        strip(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            &mut crd,
        );
        assert_eq!(
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
    }

    #[test]
    fn every_child_is_a_recorded_definition() {
        for fields in types().values() {
            for [_, child] in fields.values() {
                let name = child.trim_start_matches(['[', ']', '{', '}']);
                assert!(name.is_empty() || types().contains_key(name), "{child}");
            }
        }
    }
}
