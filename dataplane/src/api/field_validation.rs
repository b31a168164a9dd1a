//! `fieldValidation=Strict|Warn|Ignore` (default `Warn`, as kube-apiserver
//! since 1.27): unknown fields — against the type's schema — and duplicate
//! JSON keys are found while the body is parsed, in document order, named by
//! path as upstream's strict decoder names them (`unknown field
//! "spec.template.spec.containers[0].foo"`, `duplicate field "spec.replicas"`).
//! `Strict` rejects them (400, or 422 for patches, as upstream), `Warn` answers
//! them as `Warning` headers, `Ignore` says nothing; unknown fields are dropped
//! from what is stored unless the schema preserves them.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::api::openapi;
use crate::api::options::{self, OptionsKind};
use crate::api::request::Params;
use crate::error::{ApiError, Cause, Target};
use crate::resources::ResourceType;

/// What to do with unknown and duplicate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// Reject the request.
    Strict,
    /// Accept it and warn.
    Warn,
    /// Accept it silently.
    Ignore,
}

impl Directive {
    /// From the `fieldValidation` parameter (`Warn` when absent); 422 for
    /// anything else, as upstream validates the options.
    pub fn parse(params: &Params, kind: OptionsKind) -> Result<Self, ApiError> {
        match params.get("fieldValidation") {
            None | Some("Warn") => Ok(Directive::Warn),
            Some("Strict") => Ok(Directive::Strict),
            Some("Ignore") => Ok(Directive::Ignore),
            Some(other) => Err(options::invalid(
                kind,
                vec![options::unsupported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            )),
        }
    }
}

/// The schema a type's objects are strictly decoded against.
#[derive(Debug, Clone)]
pub enum FieldSchema {
    /// A built-in type's OpenAPI v2 definition; `$ref`s point into
    /// [`openapi::definitions`].
    OpenApi(&'static Value),
    /// A structural schema without `$ref`s (a CustomResourceDefinition
    /// version's `openAPIV3Schema`).
    Structural(Arc<Value>),
    /// Every field is kept (types without a schema).
    PreserveUnknown,
}

impl ResourceType {
    /// The schema unknown fields are found with. Custom resources plug their
    /// structural schema in here.
    pub fn field_schema(&self) -> FieldSchema {
        match openapi::definitions().get(&self.definition) {
            Some(def) if !self.definition.is_empty() => FieldSchema::OpenApi(def),
            _ => FieldSchema::PreserveUnknown,
        }
    }
}

/// Where `$ref`s resolve.
fn refs(schema: &FieldSchema) -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match schema {
        FieldSchema::OpenApi(_) => openapi::definitions(),
        _ => EMPTY.get_or_init(Map::new),
    }
}

/// A schema node, `$ref`s and single `allOf`s resolved.
fn resolve<'a>(mut s: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    for _ in 0..8 {
        if let Some(name) = s
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
        {
            match defs.get(name) {
                Some(d) => s = d,
                None => return s,
            }
        } else if let Some([one]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            s = one;
        } else {
            return s;
        }
    }
    s
}

fn preserves(s: &Value) -> bool {
    s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// The schema of field `key` under object schema `s`: `Ok(Some)` known,
/// `Ok(None)` anything goes, `Err(())` unknown.
fn field<'a>(
    s: Option<&'a Value>,
    key: &str,
    defs: &'a Map<String, Value>,
) -> Result<Option<&'a Value>, ()> {
    let Some(s) = s.map(|s| resolve(s, defs)) else {
        return Ok(None);
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        if let Some(p) = props.get(key) {
            return Ok(Some(p));
        }
        return match s.get("additionalProperties") {
            Some(a) if a.is_object() => Ok(Some(a)),
            Some(Value::Bool(true)) => Ok(None),
            _ if preserves(s) => Ok(None),
            _ => Err(()),
        };
    }
    match s.get("additionalProperties") {
        Some(a) if a.is_object() => Ok(Some(a)),
        _ => Ok(None),
    }
}

/// The schema of the items of array schema `s`.
fn items<'a>(s: Option<&'a Value>, defs: &'a Map<String, Value>) -> Option<&'a Value> {
    s.map(|s| resolve(s, defs)).and_then(|s| s.get("items"))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// One strict-decoding problem, worded as upstream.
fn unknown(path: &str) -> String {
    format!("unknown field {}", options::go_quote(path))
}

/// Parses JSON while finding unknown and duplicate fields.
struct Seed<'a> {
    path: String,
    schema: Option<&'a Value>,
    defs: &'a Map<String, Value>,
    problems: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let item = items(self.schema, self.defs);
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Seed {
            path: format!("{}[{}]", self.path, out.len()),
            schema: item,
            defs: self.defs,
            problems: self.problems,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if out.contains_key(&key) {
                self.problems
                    .borrow_mut()
                    .push(format!("duplicate field \"{path}\""));
            }
            match field(self.schema, &key, self.defs) {
                Ok(schema) => {
                    let v = map.next_value_seed(Seed {
                        path,
                        schema,
                        defs: self.defs,
                        problems: self.problems,
                    })?;
                    out.insert(key, v);
                }
                Err(()) => {
                    self.problems.borrow_mut().push(unknown(&path));
                    // Dropped, as decoding into the type drops it; duplicates
                    // below it are still found.
                    map.next_value_seed(Seed {
                        path,
                        schema: None,
                        defs: self.defs,
                        problems: self.problems,
                    })?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A body parsed against a schema: the value (unknown fields dropped) and
/// every problem found, in document order.
#[derive(Debug)]
pub struct Checked {
    /// The value to use.
    pub value: Value,
    /// `unknown field "…"` / `duplicate field "…"`.
    pub problems: Vec<String>,
}

/// Parses a JSON body against `schema`. Malformed JSON is the caller's
/// usual 400.
pub fn parse_json(body: &[u8], schema: &FieldSchema) -> Result<Checked, serde_json::Error> {
    let problems = RefCell::new(Vec::new());
    let defs = refs(schema);
    let root = match schema {
        FieldSchema::OpenApi(s) => Some(*s),
        FieldSchema::Structural(s) => Some(s.as_ref()),
        FieldSchema::PreserveUnknown => None,
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Seed {
        path: String::new(),
        schema: root,
        defs,
        problems: &problems,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Checked {
        value,
        problems: problems.into_inner(),
    })
}

/// Finds (and drops) unknown fields of an already parsed value, such as a
/// patched object.
pub fn check_value(value: Value, schema: &FieldSchema) -> Checked {
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    parse_json(&bytes, schema).unwrap_or(Checked {
        value,
        problems: Vec::new(),
    })
}

/// Only the duplicate keys of a body (a patch is decoded into a map, where
/// no field is unknown).
pub fn duplicates(body: &[u8]) -> Vec<String> {
    parse_json(body, &FieldSchema::PreserveUnknown)
        .map(|c| c.problems)
        .unwrap_or_default()
}

/// The keys a block-style YAML body sets twice in one mapping, as go-yaml's
/// strict decoder reports them: `line 7: key "k" already set in map` (the
/// line of the second one, from 1). Flow collections (`{…}`, `[…]`) and
/// block scalars' contents are not looked into.
pub fn yaml_duplicates(body: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Open mappings: (indent of their keys, keys seen).
    let mut open: Vec<(usize, Vec<String>)> = Vec::new();
    // Inside a block scalar (`|`, `>`): lines indented more than this.
    let mut scalar_at: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        let mut indent = line.len() - trimmed.len();
        if let Some(at) = scalar_at {
            if trimmed.is_empty() || indent > at {
                continue;
            }
            scalar_at = None;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.starts_with("---") || trimmed.starts_with("...") {
            open.clear();
            continue;
        }
        // `- key: v` opens a new mapping in a list item.
        let mut rest = trimmed;
        let mut item = false;
        while let Some(r) = rest
            .strip_prefix("- ")
            .or_else(|| (rest == "-").then_some(""))
        {
            indent += rest.len() - r.trim_start().len();
            rest = r.trim_start();
            item = true;
        }
        let Some(key) = mapping_key(rest) else {
            continue;
        };
        while open.last().is_some_and(|(i, _)| *i > indent) {
            open.pop();
        }
        if item {
            while open.last().is_some_and(|(i, _)| *i >= indent) {
                open.pop();
            }
        }
        match open.last_mut() {
            Some((i, keys)) if *i == indent => {
                if keys.contains(&key) {
                    out.push(format!("line {}: key {key:?} already set in map", n + 1));
                } else {
                    keys.push(key);
                }
            }
            _ => open.push((indent, vec![key])),
        }
        let value = rest.split_once(':').map_or("", |(_, v)| v.trim());
        if value.starts_with('|') || value.starts_with('>') {
            scalar_at = Some(indent);
        }
    }
    out
}

/// The key of a `key: value` (or `key:`) line, unquoted.
fn mapping_key(rest: &str) -> Option<String> {
    if rest.starts_with(['{', '[', '&', '*', '!', '?']) {
        return None;
    }
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = rest[1..].find(q)? + 1;
        let after = &rest[end + 1..];
        return (after.starts_with(':')).then(|| rest[1..end].to_owned());
    }
    let colon = rest
        .find(": ")
        .or_else(|| rest.ends_with(':').then(|| rest.len() - 1))?;
    let key = &rest[..colon];
    (!key.contains(" #")).then(|| key.trim_end().to_owned())
}

/// `strict decoding error: a, b`.
pub fn strict_error(problems: &[String]) -> String {
    format!("strict decoding error: {}", problems.join(", "))
}

/// The 400 a strict create or update answers: `Deployment in version "v1"
/// cannot be handled as a Deployment: strict decoding error: …`.
pub fn decode_error(rt: &ResourceType, body: &Value, problems: &[String]) -> ApiError {
    decode_failure(rt, body, &strict_error(problems))
}

/// The 400 of a body the decoder refuses: `Deployment in version "v1"
/// cannot be handled as a Deployment: <why>`.
pub fn decode_failure(rt: &ResourceType, body: &Value, why: &str) -> ApiError {
    let kind = body["kind"].as_str().filter(|k| !k.is_empty());
    let version = body["apiVersion"]
        .as_str()
        .map(|v| v.rsplit('/').next().unwrap_or(v).to_owned());
    match (kind, version) {
        (Some(kind), Some(version)) => ApiError::BadRequest(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: {why}",
            rt.kind,
        )),
        _ => ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): {why}",
            rt.kind,
        )),
    }
}

/// The 422 a strict patch answers: ` "" is invalid: patch: Invalid value:
/// "<shown>": strict decoding error: …`.
pub fn patch_error(shown: &str, problems: &[String]) -> ApiError {
    patch_invalid(shown, &strict_error(problems))
}

/// The 422 of a patch whose result the decoder refuses: ` "" is invalid:
/// patch: Invalid value: "<shown>": <why>`.
pub fn patch_invalid(shown: &str, why: &str) -> ApiError {
    ApiError::Invalid {
        target: Target::default(),
        kind: String::new(),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {why}", options::go_quote(shown)),
            field: "patch".into(),
        }],
    }
}

/// Go's `%+v` of a decoded JSON value (`map[spec:map[replicas:2]]`), as
/// upstream shows a strategic merge patch in its errors.
pub fn go_format(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(go_format).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_format(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// A `Warning` header value for one message, as upstream's
/// `NewWarningHeader` writes it: `299 - "…"` with `"` and `\` escaped. A
/// control character, which no header value may hold, is a space (as Go's
/// server writes a line break).
pub fn warning_header(message: &str) -> String {
    let mut out = String::with_capacity(message.len() + 8);
    out.push_str("299 - \"");
    for c in message.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push(c),
            c if c.is_ascii_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_duplicate_keys_are_found_by_line() {
        let body =
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: a\n  k: b\n";
        assert_eq!(
            yaml_duplicates(body),
            ["line 7: key \"k\" already set in map"]
        );
        // Same key in sibling list items, in other mappings, in a block
        // scalar: no duplicate.
        let body = b"spec:\n  ports:\n  - name: a\n    port: 1\n  - name: b\n    port: 2\n  name: top\nscript: |\n  name: x\n  name: y\n";
        assert!(
            yaml_duplicates(body).is_empty(),
            "{:?}",
            yaml_duplicates(body)
        );
        let body = b"spec:\n  foo: foo1\n  'foo': foo2\n";
        assert_eq!(
            yaml_duplicates(body),
            ["line 3: key \"foo\" already set in map"]
        );
    }

    fn deployment() -> FieldSchema {
        FieldSchema::OpenApi(
            openapi::definitions()
                .get("io.k8s.api.apps.v1.Deployment")
                .unwrap(),
        )
    }

    #[test]
    fn unknown_and_duplicate_fields_in_document_order() {
        let body = br#"{"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":"web","labels":{"a":"1","a":"2"},"bogus":1},
            "spec":{"replicas":1,"replicas":2,"foo":{"x":1},
              "template":{"spec":{"containers":[{"name":"c","image":"i","colour":"red"}]}},
              "selector":{"matchLabels":{"a":"2"}}}}"#;
        let c = parse_json(body, &deployment()).unwrap();
        assert_eq!(
            c.problems,
            [
                "duplicate field \"metadata.labels.a\"",
                "unknown field \"metadata.bogus\"",
                "duplicate field \"spec.replicas\"",
                "unknown field \"spec.foo\"",
                "unknown field \"spec.template.spec.containers[0].colour\"",
            ]
        );
        assert_eq!(c.value["spec"]["replicas"], 2, "the last duplicate wins");
        assert!(
            c.value["spec"].get("foo").is_none(),
            "unknown fields are dropped"
        );
        assert_eq!(c.value["metadata"]["labels"]["a"], "2");
        // Free-form fields (annotations, managedFields' FieldsV1) take anything.
        let ok = br#"{"metadata":{"annotations":{"x":"y"},"managedFields":[{"fieldsV1":{"f:spec":{}}}]}}"#;
        assert!(parse_json(ok, &deployment()).unwrap().problems.is_empty());
        let any = parse_json(br#"{"a":1,"a":2}"#, &FieldSchema::PreserveUnknown).unwrap();
        assert_eq!(any.problems, ["duplicate field \"a\""]);
    }

    #[test]
    fn errors_read_as_upstream() {
        let rt = ResourceType {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            list_kind: "DeploymentList".into(),
            plural: "deployments".into(),
            singular: "deployment".into(),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            verbs: vec![],
            subresources: vec![],
            definition: "io.k8s.api.apps.v1.Deployment".into(),
            custom: None,
        };
        let body = serde_json::json!({"kind": "Deployment", "apiVersion": "apps/v1"});
        assert_eq!(
            decode_error(&rt, &body, &[unknown("spec.foo")]).to_string(),
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.foo\""
        );
        assert_eq!(
            warning_header("unknown field \"spec.foo\""),
            "299 - \"unknown field \\\"spec.foo\\\"\""
        );
        assert_eq!(
            go_format(&serde_json::json!({"spec": {"replicas": 2, "x": [1, "a"]}})),
            "map[spec:map[replicas:2 x:[1 a]]]"
        );
        let e = patch_error("map[spec:map[foo:1]]", &[unknown("spec.foo")]);
        assert_eq!(
            e.to_string(),
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[foo:1]]\": strict decoding error: unknown field \"spec.foo\""
        );
        assert_eq!(e.status()["code"], 422);
    }
}
