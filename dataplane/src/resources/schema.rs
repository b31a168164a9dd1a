//! A custom resource against its structural schema, in upstream's order:
//! defaulting (`default`), pruning of unknown fields (unless
//! `x-kubernetes-preserve-unknown-fields`), then validation with
//! kube-openapi's messages turned into field errors as apiextensions-apiserver
//! turns them (`spec.replicas: Invalid value: -1: spec.replicas in body should
//! be greater than or equal to 0`).
//!
//! `x-kubernetes-validations` (CEL rules) and list types are
//! [`super::cel_rules`]'s; not evaluated: `format` beyond the integer widths.

use serde_json::{Map, Value};

use crate::error::Cause;

/// Fills in `default`s of missing (or null, where not nullable) fields.
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(m) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, s) in props {
                    let Some(d) = s.get("default") else { continue };
                    let missing = match m.get(k) {
                        None => true,
                        Some(Value::Null) => s["nullable"] != true,
                        Some(_) => false,
                    };
                    if missing {
                        m.insert(k.clone(), d.clone());
                    }
                }
                for (k, s) in props {
                    if let Some(child) = m.get_mut(k) {
                        apply_defaults(s, child);
                    }
                }
            } else if schema["additionalProperties"].is_object() {
                for child in m.values_mut() {
                    apply_defaults(&schema["additionalProperties"], child);
                }
            }
        }
        Value::Array(a) if schema["items"].is_object() => {
            for child in a {
                apply_defaults(&schema["items"], child);
            }
        }
        _ => {}
    }
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Drops fields the schema does not know, returning their paths. At the root
/// and in embedded resources, `apiVersion`, `kind` and `metadata` stay.
pub fn prune(schema: &Value, value: &mut Value, path: &str, removed: &mut Vec<String>) {
    prune_at(schema, value, path, true, removed);
}

fn prune_at(schema: &Value, value: &mut Value, path: &str, root: bool, removed: &mut Vec<String>) {
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    let embedded = root || schema["x-kubernetes-embedded-resource"] == true;
    match value {
        Value::Object(m) => {
            let props = schema["properties"].as_object();
            let additional = &schema["additionalProperties"];
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && k == "metadata" {
                    // ObjectMeta decodes as the built-in type: what it does
                    // not declare is dropped.
                    if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                        prune_metadata(meta, &child_path(path, "metadata"), removed);
                    }
                    continue;
                }
                if embedded && matches!(k.as_str(), "apiVersion" | "kind") {
                    continue;
                }
                let p = child_path(path, &k);
                let sub = props
                    .and_then(|p| p.get(&k))
                    .or_else(|| additional.is_object().then_some(additional));
                match sub {
                    Some(s) => {
                        if let Some(child) = m.get_mut(&k) {
                            prune_at(s, child, &p, false, removed);
                        }
                    }
                    None if preserve || *additional == Value::Bool(true) => {}
                    None => {
                        m.remove(&k);
                        removed.push(p);
                    }
                }
            }
        }
        Value::Array(a) if schema["items"].is_object() => {
            for (i, child) in a.iter_mut().enumerate() {
                let p = format!("{path}[{i}]");
                prune_at(&schema["items"], child, &p, false, removed);
            }
        }
        _ => {}
    }
}

/// Drops the fields of an embedded object's `metadata` that ObjectMeta does
/// not declare.
fn prune_metadata(
    meta: &mut serde_json::Map<String, Value>,
    path: &str,
    removed: &mut Vec<String>,
) {
    let declared = crate::api::openapi::definitions()
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .and_then(|d| d["properties"].as_object());
    let Some(declared) = declared else { return };
    let unknown: Vec<String> = meta
        .keys()
        .filter(|k| !declared.contains_key(*k))
        .cloned()
        .collect();
    for k in unknown {
        meta.remove(&k);
        removed.push(child_path(path, &k));
    }
}

/// The JSON type name kube-openapi reports for a value.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn matches_type(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        _ => true,
    }
}

/// A value as Go's field errors print it (`%#v`-like for scalars).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => number(n.as_f64().unwrap_or_default()),
        other => other.to_string(),
    }
}

/// A number as Go's `%v` prints a float64 (integral values without `.0`).
fn number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.to_owned(),
        message,
        field: field.to_owned(),
    }
}

fn invalid(field: &str, value: &Value, detail: String) -> Cause {
    cause(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {}: {detail}", show(value)),
    )
}

/// Validates `value` at `path` (e.g. `spec`) against `schema`, appending
/// every failure.
pub fn validate(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if !schema.is_object() {
        return;
    }
    let name = if path.is_empty() { "." } else { path };
    if value.is_null() && (schema["nullable"] == true || schema["type"].is_null()) {
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(is_integer(value) || value.is_string()) {
            out.push(cause(
                "FieldValueTypeInvalid",
                path,
                format!(
                    "Invalid value: \"{t}\": {name} in body must be of type integer,string: \"{t}\"",
                    t = type_name(value)
                ),
            ));
            return;
        }
    } else if let Some(ty) = schema["type"].as_str()
        && !matches_type(ty, value)
    {
        let t = type_name(value);
        out.push(cause(
            "FieldValueTypeInvalid",
            path,
            format!("Invalid value: \"{t}\": {name} in body must be of type {ty}: \"{t}\""),
        ));
        return;
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        let supported: Vec<String> = options
            .iter()
            .map(|o| match o {
                Value::String(s) => format!("{s:?}"),
                other => other.to_string(),
            })
            .collect();
        out.push(cause(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                show(value),
                supported.join(", ")
            ),
        ));
    }
    match value {
        Value::String(s) => validate_string(schema, s, value, path, name, out),
        Value::Number(n) => validate_number(
            schema,
            n.as_f64().unwrap_or_default(),
            value,
            path,
            name,
            out,
        ),
        Value::Array(a) => {
            let len = a.len() as u64;
            if let Some(max) = schema["maxItems"].as_u64()
                && len > max
            {
                out.push(cause(
                    "FieldValueTooMany",
                    path,
                    format!("Too many: {len}: must have at most {max} items"),
                ));
            }
            if let Some(min) = schema["minItems"].as_u64()
                && len < min
            {
                out.push(invalid(
                    path,
                    &Value::from(len),
                    format!("{name} in body should have at least {min} items"),
                ));
            }
            if schema["items"].is_object() {
                for (i, item) in a.iter().enumerate() {
                    validate(&schema["items"], item, &format!("{path}[{i}]"), out);
                }
            }
        }
        Value::Object(m) => validate_object(schema, m, path, name, out),
        _ => {}
    }
}

fn validate_string(
    schema: &Value,
    s: &str,
    value: &Value,
    path: &str,
    name: &str,
    out: &mut Vec<Cause>,
) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema["maxLength"].as_u64()
        && len > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(cause(
            "FieldValueTooLong",
            path,
            format!("Too long: may not be more than {max} {unit}"),
        ));
    }
    if let Some(min) = schema["minLength"].as_u64()
        && len < min
    {
        out.push(invalid(
            path,
            value,
            format!("{name} in body should be at least {min} chars long"),
        ));
    }
    if let Some(pattern) = schema["pattern"].as_str()
        && regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(s))
    {
        out.push(invalid(
            path,
            value,
            format!("{name} in body should match '{pattern}'"),
        ));
    }
}

fn validate_number(
    schema: &Value,
    f: f64,
    value: &Value,
    path: &str,
    name: &str,
    out: &mut Vec<Cause>,
) {
    if let Some(min) = schema["minimum"].as_f64() {
        let exclusive = schema["exclusiveMinimum"] == true;
        if f < min || (exclusive && f == min) {
            let word = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(invalid(
                path,
                value,
                format!("{name} in body should be {word} {}", number(min)),
            ));
        }
    }
    if let Some(max) = schema["maximum"].as_f64() {
        let exclusive = schema["exclusiveMaximum"] == true;
        if f > max || (exclusive && f == max) {
            let word = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(invalid(
                path,
                value,
                format!("{name} in body should be {word} {}", number(max)),
            ));
        }
    }
    if let Some(m) = schema["multipleOf"].as_f64()
        && m > 0.0
        && (f / m).fract() != 0.0
    {
        out.push(invalid(
            path,
            value,
            format!("{name} in body should be a multiple of {}", number(m)),
        ));
    }
    let (lo, hi) = match schema["format"].as_str() {
        Some("int32") => (i32::MIN as f64, i32::MAX as f64),
        _ => (f64::MIN, f64::MAX),
    };
    if f < lo || f > hi {
        out.push(invalid(
            path,
            value,
            format!("{name} in body must be of type int32: \"{}\"", number(f)),
        ));
    }
}

fn validate_object(
    schema: &Value,
    m: &Map<String, Value>,
    path: &str,
    name: &str,
    out: &mut Vec<Cause>,
) {
    for r in schema["required"].as_array().into_iter().flatten() {
        if let Some(r) = r.as_str()
            && !m.contains_key(r)
        {
            out.push(cause(
                "FieldValueRequired",
                &child_path(path, r),
                "Required value".into(),
            ));
        }
    }
    if let Some(max) = schema["maxProperties"].as_u64()
        && m.len() as u64 > max
    {
        out.push(cause(
            "FieldValueTooMany",
            path,
            format!("Too many: {}: must have at most {max} items", m.len()),
        ));
    }
    if let Some(min) = schema["minProperties"].as_u64()
        && (m.len() as u64) < min
    {
        out.push(invalid(
            path,
            &Value::from(m.len()),
            format!("{name} in body should have at least {min} properties"),
        ));
    }
    if schema["x-kubernetes-embedded-resource"] == true {
        for field in ["apiVersion", "kind"] {
            if m.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                out.push(cause(
                    "FieldValueRequired",
                    &child_path(path, field),
                    "Required value: must not be empty".into(),
                ));
            }
        }
    }
    let props = schema["properties"].as_object();
    for (k, v) in m {
        let root_meta = path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
        if root_meta {
            continue;
        }
        let sub = props.and_then(|p| p.get(k)).or_else(|| {
            schema["additionalProperties"]
                .is_object()
                .then_some(&schema["additionalProperties"])
        });
        if let Some(s) = sub {
            validate(s, v, &child_path(path, k), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["cronSpec"],
                    "properties": {
                        "cronSpec": { "type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$" },
                        "image": { "type": "string", "maxLength": 10 },
                        "replicas": { "type": "integer", "minimum": 1, "maximum": 10, "default": 1 },
                        "mode": { "type": "string", "enum": ["a", "b"] },
                        "port": { "x-kubernetes-int-or-string": true },
                        "tags": { "type": "array", "maxItems": 2, "items": { "type": "string" } },
                        "extra": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "nothing": { "type": "string", "nullable": true }
                    }
                },
                "status": { "type": "object", "properties": { "replicas": { "type": "integer" } } }
            }
        })
    }

    fn errors(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        validate(&schema(), v, "", &mut out);
        out.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn every_failure_is_listed_with_its_field_path() {
        let bad = json!({ "apiVersion": "x/v1", "kind": "CronTab", "metadata": {},
            "spec": { "cronSpec": "nope", "image": "a-very-long-image", "replicas": "3", "mode": "c",
                      "port": true, "tags": ["a", "b", "c"], "nothing": null } });
        assert_eq!(
            errors(&bad),
            vec![
                "spec.cronSpec: Invalid value: \"nope\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
                "spec.image: Too long: may not be more than 10 bytes",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.tags: Too many: 3: must have at most 2 items",
            ]
        );
        assert_eq!(
            errors(&json!({ "spec": { "replicas": 0 } })),
            vec![
                "spec.cronSpec: Required value",
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ]
        );
        assert!(
            errors(&json!({ "spec": { "cronSpec": "* * * * */5", "port": "http" } })).is_empty()
        );
    }

    #[test]
    fn defaults_then_pruning() {
        let mut v = json!({ "apiVersion": "x/v1", "kind": "K", "metadata": { "name": "a" },
            "spec": { "cronSpec": "x", "unknown": 1, "extra": { "kept": true } }, "junk": 2 });
        apply_defaults(&schema(), &mut v);
        let mut removed = Vec::new();
        prune(&schema(), &mut v, "", &mut removed);
        assert_eq!(removed, vec!["junk", "spec.unknown"]);
        assert_eq!(v["spec"]["replicas"], 1);
        assert_eq!(v["spec"]["extra"]["kept"], true);
        assert_eq!(v["metadata"]["name"], "a");
    }
}
