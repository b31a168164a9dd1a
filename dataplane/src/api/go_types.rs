//! A body on its way through upstream's Go types. kube-apiserver decodes a
//! built-in object into its Go struct, so:
//! - a value of the wrong type is refused, with Go's decoder's own words
//!   (`json: cannot unmarshal string into Go struct field
//!   DeploymentSpec.spec.replicas of type int32`): [`type_error`];
//! - an `omitempty` field at its zero value (`""`, `0`, `false`, `[]`, `{}`)
//!   or null is gone before anything defaults, tracks or stores it:
//!   `group: ""` in a reference or `finalizers: []` is as if never sent. A
//!   pointer field keeps its zero value (`replicas: 0`,
//!   `storageClassName: ""`) and loses only null: [`strip`];
//! - a `resource.Quantity` is written back in its canonical form (`0.5` and
//!   `"0.5"` as `"500m"`, `1.5Gi` as `"1536Mi"`), as its `MarshalJSON` does.
//!
//! The fields come from the Go types themselves, recorded in
//! `fixtures/k8s/go-types.json` by `upstream/cmd/gen-go-types`: definition →
//! JSON field → `[what Go omits, the definition of the struct it holds, the
//! chain of Go types its value goes through]`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::authz::admission::quantity::Quantity;

const GO_TYPES: &str = include_str!("../../../fixtures/k8s/go-types.json");

/// A definition's fields: what Go omits of each, the struct it holds (after
/// `[]` per list and `{}` per map it sits in), and its Go types with what
/// each accepts (`[]string:slice|string:string`).
type Fields = HashMap<String, [String; 3]>;

fn types() -> &'static HashMap<String, Fields> {
    static TYPES: OnceLock<HashMap<String, Fields>> = OnceLock::new();
    TYPES.get_or_init(|| {
        // Compiled-in data checked by the tests: failure is a build defect.
        serde_json::from_str(GO_TYPES)
            .expect("fixtures/k8s/go-types.json: definition -> field -> [zero, child, type]")
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

/// The list and map fields Go writes as `null` when unset (no `omitempty`,
/// a nil slice or map), by definition.
pub fn written_nil() -> impl Iterator<Item = (&'static str, &'static str)> {
    types().iter().flat_map(|(definition, fields)| {
        fields.iter().filter_map(move |(field, [zero, _, chain])| {
            let nil = zero.is_empty()
                && (chain.starts_with("[]") || chain.starts_with("map["))
                && !chain.starts_with("[]uint8");
            nil.then_some((definition.as_str(), field.as_str()))
        })
    })
}

/// Whether Go's encoder leaves field `field` of `definition` out when it
/// holds its zero value (`omitempty` or `omitzero`); false for a field or
/// definition the Go types do not know.
pub fn omits_zero(definition: &str, field: &str) -> bool {
    types()
        .get(definition)
        .and_then(|f| f.get(field))
        .is_some_and(|[zero, ..]| !zero.is_empty())
}

/// Whether field `field` of `definition` is a Go pointer (omitted when
/// nil, so a zero it holds was set and is kept).
pub fn is_pointer(definition: &str, field: &str) -> bool {
    types()
        .get(definition)
        .and_then(|f| f.get(field))
        .is_some_and(|[zero, ..]| zero == "nil")
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
    m.retain(|k, x| fields.get(k).is_none_or(|[zero, ..]| !omitted(zero, x)));
    for (k, x) in m.iter_mut() {
        let Some([_, child, chain]) = fields.get(k) else {
            continue;
        };
        if !child.is_empty() {
            held(child, x);
        } else if chain.ends_with(":quantity") {
            quantities(chain, x);
        }
    }
}

/// Canonical quantities in `v`, whose Go types `chain` ends in a Quantity
/// (held directly, or in lists and maps).
fn quantities(chain: &str, v: &mut Value) {
    let (head, rest) = chain.split_once('|').unwrap_or((chain, ""));
    match (head.rsplit(':').next(), v) {
        (Some("slice"), Value::Array(items)) => items.iter_mut().for_each(|x| quantities(rest, x)),
        (Some("map"), Value::Object(values)) => {
            values.values_mut().for_each(|x| quantities(rest, x))
        }
        (Some("quantity"), q @ (Value::String(_) | Value::Number(_))) => {
            // Exponent forms keep their own canonical form upstream.
            let text = q.as_str().map_or_else(|| q.to_string(), str::to_owned);
            if !text.contains(['e', 'E'])
                && let Some(parsed) = Quantity::parse(&text)
            {
                *q = Value::String(parsed.to_string());
            }
        }
        _ => {}
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

/// The first value in `v`, an object of `definition`, that Go's decoder
/// refuses, as its error reads (`apiVersion` and `kind` are the type meta's
/// concern). Unknown fields are no error here: field validation has them.
pub fn type_error(definition: &str, v: &Value) -> Option<String> {
    let mut path = Vec::new();
    struct_error(definition, v, &mut path, true)
}

fn struct_error<'a>(
    definition: &str,
    v: &'a Value,
    path: &mut Vec<&'a str>,
    top: bool,
) -> Option<String> {
    let fields = types().get(definition)?;
    let owner = definition.rsplit('.').next().unwrap_or(definition);
    for (k, x) in v.as_object()? {
        if top && (k == "apiVersion" || k == "kind") {
            continue;
        }
        let Some([_, child, chain]) = fields.get(k) else {
            continue;
        };
        path.push(k);
        let chain: Vec<(&str, &str)> = chain
            .split('|')
            .map(|p| p.rsplit_once(':').unwrap_or((p, "any")))
            .collect();
        let found = value_error(owner, &chain, child, x, path);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// What Go's errors call a JSON value.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `n` fits Go's integer kind `kind` (`int32`, `uint8`, …).
fn fits(kind: &str, n: &serde_json::Number) -> bool {
    let (lo, hi): (i128, i128) = match kind {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int" | "int64" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => (0, u64::MAX.into()),
    };
    let v = n
        .as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from));
    v.is_some_and(|v| (lo..=hi).contains(&v))
}

/// Upstream's quantity syntax, checked before anything parses the number.
const QUANTITY: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

fn quantity_error(v: &Value) -> Option<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(QUANTITY).expect("a valid pattern"));
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    };
    (!re.is_match(&text))
        .then(|| format!("quantities must match the regular expression '{QUANTITY}'"))
}

/// Where Go's standard base64 decoder stops on `s`, if it does: the offset
/// its `illegal base64 data at input byte N` names.
fn base64_error(s: &[u8]) -> Option<usize> {
    let symbol = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    loop {
        // One quantum of four symbols; newlines anywhere are skipped.
        let mut j = 0;
        while j < 4 {
            let Some(&c) = s.get(si) else {
                return (j > 0).then(|| si - j);
            };
            si += 1;
            if symbol(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                while s.get(si).copied().is_some_and(newline) {
                    si += 1;
                }
                match s.get(si) {
                    None => return Some(s.len()),
                    Some(b'=') => si += 1,
                    Some(_) => return Some(si - 1),
                }
            }
            while s.get(si).copied().is_some_and(newline) {
                si += 1;
            }
            return (si < s.len()).then_some(si);
        }
    }
}

/// The error of `v`, held by a field of struct `owner` at `path`, whose
/// value goes through the Go types of `chain`; `child` is the struct at the
/// chain's end, if any (behind its `[]` and `{}`).
fn value_error<'a>(
    owner: &str,
    chain: &[(&str, &str)],
    child: &str,
    v: &'a Value,
    path: &mut Vec<&'a str>,
) -> Option<String> {
    let (go, kind) = *chain.first()?;
    if v.is_null() {
        return None;
    }
    let refused = |what: String, go: &str| {
        Some(format!(
            "json: cannot unmarshal {what} into Go struct field {owner}.{} of type {go}",
            path.join(".")
        ))
    };
    let ok = match (kind, v) {
        ("string" | "time", Value::String(_))
        | ("bool", Value::Bool(_))
        | ("float32" | "float64", Value::Number(_))
        | ("intorstring", Value::String(_)) => true,
        ("int" | "int8" | "int16" | "int32" | "int64", Value::Number(n))
        | ("uint" | "uint8" | "uint16" | "uint32" | "uint64", Value::Number(n)) => {
            if !fits(kind, n) {
                return refused(format!("number {n}"), go);
            }
            true
        }
        ("intorstring", Value::Number(n)) => {
            if !fits("int32", n) {
                return refused(format!("number {n}"), "int32");
            }
            true
        }
        ("intorstring", other) => return refused(json_kind(other).into(), "int32"),
        ("time", other) => return refused(json_kind(other).into(), "string"),
        ("quantity", _) => return quantity_error(v),
        ("bytes", Value::String(s)) => {
            return base64_error(s.as_bytes())
                .map(|at| format!("illegal base64 data at input byte {at}"));
        }
        ("slice", Value::Array(items)) => {
            let inner = child.strip_prefix("[]").unwrap_or(child);
            return items
                .iter()
                .find_map(|x| value_error(owner, &chain[1..], inner, x, path));
        }
        ("map", Value::Object(values)) => {
            let inner = child.strip_prefix("{}").unwrap_or(child);
            return values
                .values()
                .find_map(|x| value_error(owner, &chain[1..], inner, x, path));
        }
        ("struct", Value::Object(_)) => {
            return if child.is_empty() {
                None
            } else {
                struct_error(child, v, path, false)
            };
        }
        (
            "string" | "bool" | "float32" | "float64" | "int" | "int8" | "int16" | "int32"
            | "int64" | "uint" | "uint8" | "uint16" | "uint32" | "uint64" | "bytes" | "slice"
            | "map" | "struct",
            _,
        ) => false,
        _ => true,
    };
    if ok {
        None
    } else {
        refused(json_kind(v).into(), go)
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
    fn quantities_are_written_canonically() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {
            "limits": {"cpu": 1.5, "memory": "1.5Gi"}, "requests": {"cpu": "0.5", "x": "2e3"}}}]}});
        strip("io.k8s.api.core.v1.Pod", &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "1500m", "memory": "1536Mi"}, "requests": {"cpu": "500m", "x": "2e3"}})
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

    fn refused(definition: &str, v: Value) -> Option<String> {
        type_error(definition, &v)
    }

    #[test]
    fn wrong_types_are_refused_in_gos_words() {
        let cm = "io.k8s.api.core.v1.ConfigMap";
        assert_eq!(
            refused(cm, json!({"data": "x"})).unwrap(),
            "json: cannot unmarshal string into Go struct field ConfigMap.data of type map[string]string"
        );
        assert_eq!(
            refused(cm, json!({"data": {"k": 1}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
        assert_eq!(
            refused(cm, json!({"metadata": {"labels": []}})).unwrap(),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"
        );
        assert_eq!(
            refused(cm, json!({"binaryData": {"k": "not base64"}})).unwrap(),
            "illegal base64 data at input byte 3"
        );
        let deploy = "io.k8s.api.apps.v1.Deployment";
        assert_eq!(
            refused(deploy, json!({"spec": {"replicas": 1.5}})).unwrap(),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        assert_eq!(
            refused(deploy, json!({"spec": {"replicas": 99999999999_i64}})).unwrap(),
            "json: cannot unmarshal number 99999999999 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        let pod = "io.k8s.api.core.v1.Pod";
        assert_eq!(
            refused(
                pod,
                json!({"spec": {"containers": [{"name": "c", "command": "sh"}]}})
            )
            .unwrap(),
            "json: cannot unmarshal string into Go struct field Container.spec.containers.command of type []string"
        );
        assert_eq!(
            refused(
                pod,
                json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "lots"}}}]}})
            )
            .unwrap(),
            format!("quantities must match the regular expression '{QUANTITY}'")
        );
        let svc = "io.k8s.api.core.v1.Service";
        assert_eq!(
            refused(
                svc,
                json!({"spec": {"ports": [{"port": 80, "targetPort": true}]}})
            )
            .unwrap(),
            "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32"
        );
        for fine in [
            json!({"spec": {"ports": [{"port": 80, "targetPort": "http"}], "selector": null}}),
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}, "status": {}}),
        ] {
            assert_eq!(refused(svc, fine), None);
        }
    }

    #[test]
    fn base64_stops_where_gos_decoder_does() {
        assert_eq!(base64_error(b"aGk="), None);
        assert_eq!(base64_error(b"aGk=\n"), None);
        assert_eq!(base64_error(b""), None);
        assert_eq!(base64_error(b"not base64"), Some(3));
        assert_eq!(base64_error(b"aGk"), Some(0));
        assert_eq!(base64_error(b"aG=="), None);
        assert_eq!(base64_error(b"aG="), Some(3));
        assert_eq!(base64_error(b"a==="), Some(1));
        assert_eq!(base64_error(b"aGk=aGk="), Some(4));
    }

    #[test]
    fn every_child_is_a_recorded_definition() {
        for fields in types().values() {
            for [_, child, _] in fields.values() {
                let name = child.trim_start_matches(['[', ']', '{', '}']);
                assert!(name.is_empty() || types().contains_key(name), "{child}");
            }
        }
    }
}
