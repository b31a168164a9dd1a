//! JSON as kube-apiserver writes it, byte for byte: a built-in type's keys in
//! its Go struct's field order (`kind` and `apiVersion` first), every other
//! map's keys sorted (Go sorts map keys), strings escaped as Go's
//! `encoding/json` escapes them (`<`, `>` and `&` as `\u003c`…), and a
//! newline after each value, as `json.Encoder` ends it.
//!
//! The field order comes from the protobuf layouts of
//! `fixtures/k8s/protobuf.json.gz`, which list each message's fields as
//! go-to-protobuf generated them: in struct order (their tags are not).
//! Fields Go writes even when zero (no `omitempty`: a struct value's `{}`,
//! a scalar's zero, a nil list's `null`) come from upstream's own OpenAPI v3,
//! recorded in `fixtures/k8s/always-written.json`.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use actix_web::{HttpResponse, HttpResponseBuilder};
use serde_json::Value;

use crate::resources::ResourceRegistry;

/// One message's fields in struct order.
struct Message {
    /// Position of each JSON name.
    index: HashMap<String, usize>,
    /// Each field's message type (of its items, or of a map's values), and
    /// whether it is a map.
    types: Vec<(Option<usize>, bool)>,
    /// Fields written when absent, with the value they are written as.
    always: Vec<(String, Value)>,
}

/// Upstream's fields without `omitempty`, by definition.
const ALWAYS_WRITTEN: &str = include_str!("../../../fixtures/k8s/always-written.json");

/// `fixtures/k8s/always-written.json`: definition → the fields Go always
/// writes, with the value each takes when unset.
pub(crate) fn always_written() -> &'static HashMap<String, Vec<(String, Value)>> {
    static ALWAYS: OnceLock<HashMap<String, Vec<(String, Value)>>> = OnceLock::new();
    ALWAYS.get_or_init(|| {
        // Compiled-in data checked by the tests: failure is a build defect.
        let mut all: HashMap<String, Vec<(String, Value)>> =
            serde_json::from_str::<Value>(ALWAYS_WRITTEN)
                .ok()
                .and_then(|v| serde_json::from_value(v["definitions"].clone()).ok())
                .expect("fixtures/k8s/always-written.json: definition -> [[field, value]]");
        // The OpenAPI documents give some `omitempty` fields a default
        // (`minReadySeconds: 0`, `protocol: TCP`); Go leaves those out when
        // unset, and the defaults are the strategies' to apply.
        for (definition, fields) in &mut all {
            fields.retain(|(f, _)| !crate::api::go_types::omits_zero(definition, f));
        }
        // Nil lists and maps without `omitempty` are written `null`: those
        // of the served (GA) types that the OpenAPI documents do not name.
        for (definition, field) in crate::api::go_types::written_nil() {
            let served = !definition.contains("alpha") && !definition.contains("beta");
            if !served || field == "items" {
                continue;
            }
            let fields = all.entry(definition.to_owned()).or_default();
            if !fields.iter().any(|(f, _)| f == field) {
                fields.push((field.to_owned(), Value::Null));
            }
        }
        all
    })
}

struct Layouts {
    messages: Vec<Message>,
    by_name: HashMap<String, usize>,
    /// `apiVersion`/`kind` → message, from the definitions' group-version-kinds.
    by_gvk: HashMap<(String, String), usize>,
}

/// Types whose JSON is not their fields: any JSON value, written as a map.
const OPAQUE: [&str; 3] = [
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.Json",
];

/// apiextensions' schema unions, written as the schema they hold (when they
/// hold a boolean or a list of names, that is a scalar or a list anyway).
const SCHEMA_UNIONS: [&str; 3] = [
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray",
];

/// The message of a schema union's schema.
const SCHEMA: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps";

/// A field's JSON name and, for a message, its type.
type ExtraField = (&'static str, Option<&'static str>);

/// A field as read from the layouts: JSON name, message type, whether a map.
type LayoutField = (String, Option<String>, bool);

/// Types the layouts lack (no protobuf form), in their structs' order.
const EXTRA: [(&str, &[ExtraField]); 4] = [
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Table",
        &[
            (
                "metadata",
                Some("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"),
            ),
            (
                "columnDefinitions",
                Some("io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition"),
            ),
            (
                "rows",
                Some("io.k8s.apimachinery.pkg.apis.meta.v1.TableRow"),
            ),
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition",
        &[
            ("name", None),
            ("type", None),
            ("format", None),
            ("description", None),
            ("priority", None),
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow",
        &[
            ("cells", None),
            (
                "conditions",
                Some("io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition"),
            ),
            ("object", None),
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition",
        &[
            ("type", None),
            ("status", None),
            ("reason", None),
            ("message", None),
        ],
    ),
];

fn layouts() -> &'static Layouts {
    static LAYOUTS: OnceLock<Layouts> = OnceLock::new();
    LAYOUTS.get_or_init(|| {
        let mut text = String::new();
        // Compiled-in data checked by the tests: failure is a build defect.
        flate2::read::GzDecoder::new(crate::api::protobuf::LAYOUTS_GZ)
            .read_to_string(&mut text)
            .expect("fixtures/k8s/protobuf.json.gz is gzip");
        let raw: HashMap<String, Vec<Value>> =
            serde_json::from_str(&text).expect("fixtures/k8s/protobuf.json.gz is JSON");
        let mut fields: Vec<(String, Vec<LayoutField>)> = raw
            .into_iter()
            .filter(|(name, _)| !OPAQUE.contains(&name.as_str()))
            .map(|(name, list)| {
                let list = list
                    .iter()
                    .filter_map(|f| {
                        let map = f[2] == "map";
                        Some((
                            f[1].as_str()?.to_owned(),
                            f[4].as_str().map(str::to_owned),
                            map,
                        ))
                    })
                    .collect();
                (name, list)
            })
            .collect();
        for (name, list) in EXTRA {
            let list = list
                .iter()
                .map(|(f, t)| (f.to_string(), t.map(str::to_string), false))
                .collect();
            fields.push((name.to_string(), list));
        }
        // An embedded struct (`json:",inline"`, a layout field without a
        // JSON name) contributes its own fields in its place.
        let raw_lists: HashMap<String, Vec<LayoutField>> = fields.iter().cloned().collect();
        for (_, list) in fields.iter_mut() {
            *list = inline(list, &raw_lists, 0);
        }
        let by_name: HashMap<String, usize> = fields
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        let always = always_written();
        let messages = fields
            .iter()
            .map(|(name, list)| Message {
                always: always
                    .get(name)
                    .map(|a| {
                        a.iter()
                            .filter(|(f, _)| list.iter().any(|(g, _, _)| g == f))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default(),
                index: list
                    .iter()
                    .enumerate()
                    .map(|(i, (f, _, _))| (f.clone(), i))
                    .collect(),
                types: list
                    .iter()
                    .map(|(_, t, map)| {
                        let t = t.as_deref().map(|t| {
                            if SCHEMA_UNIONS.contains(&t) {
                                SCHEMA
                            } else {
                                t
                            }
                        });
                        (t.and_then(|t| by_name.get(t).copied()), *map)
                    })
                    .collect(),
            })
            .collect();
        let mut by_gvk = HashMap::new();
        for (name, d) in crate::api::openapi::definitions() {
            let Some(&m) = by_name.get(name) else {
                continue;
            };
            for g in d["x-kubernetes-group-version-kind"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let (group, version, kind) = (
                    g["group"].as_str().unwrap_or(""),
                    g["version"].as_str().unwrap_or(""),
                    g["kind"].as_str().unwrap_or(""),
                );
                let api_version = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                by_gvk.entry((api_version, kind.to_string())).or_insert(m);
            }
        }
        for rt in ResourceRegistry::builtin_ref().all() {
            if let Some(&m) = by_name.get(&rt.definition) {
                by_gvk.insert((rt.api_version(), rt.kind.clone()), m);
            }
        }
        // meta.k8s.io views, served in v1 and v1beta1 with one layout.
        for kind in [
            "Table",
            "PartialObjectMetadata",
            "PartialObjectMetadataList",
        ] {
            if let Some(&m) = by_name.get(&format!("io.k8s.apimachinery.pkg.apis.meta.v1.{kind}")) {
                for v in ["v1", "v1beta1"] {
                    by_gvk.insert((format!("meta.k8s.io/{v}"), kind.into()), m);
                }
            }
        }
        Layouts {
            messages,
            by_name,
            by_gvk,
        }
    })
}

/// `list` with each embedded struct replaced by its fields.
fn inline(
    list: &[LayoutField],
    all: &HashMap<String, Vec<LayoutField>>,
    depth: usize,
) -> Vec<LayoutField> {
    let mut out = Vec::with_capacity(list.len());
    for field in list {
        match (&field.0[..], &field.1) {
            ("", Some(t)) if depth < 8 => {
                if let Some(inner) = all.get(t) {
                    out.extend(inline(inner, all, depth + 1));
                }
            }
            _ => out.push(field.clone()),
        }
    }
    out
}

/// The message of an object by its own `apiVersion` and `kind`; `None` for
/// custom resources and anything untyped.
fn message_of(value: &Value) -> Option<usize> {
    let api_version = value.get("apiVersion")?.as_str()?;
    let kind = value.get("kind")?.as_str()?;
    layouts()
        .by_gvk
        .get(&(api_version.to_string(), kind.to_string()))
        .copied()
}

/// `value` as kube-apiserver writes it, without the closing newline; typed
/// by its own `apiVersion` and `kind`.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write(&mut out, value);
    out
}

/// Appends `value` as kube-apiserver writes it, typed by its own
/// `apiVersion` and `kind`.
pub fn write(out: &mut Vec<u8>, value: &Value) {
    write_typed(out, value, message_of(value), true);
}

/// Appends an item of a built-in type's list: without `kind` and
/// `apiVersion`, as a typed list's items are written (a custom resource's
/// items keep theirs: write those with [`write`]).
pub fn write_list_item(out: &mut Vec<u8>, value: &Value) {
    let Some(m) = message_of(value) else {
        return write(out, value);
    };
    match value {
        Value::Object(map) => {
            let m = &layouts().messages[m];
            let fields = map.iter().filter(|(k, _)| !is_type_meta(m, k));
            write_members(out, fields.collect(), m, false);
        }
        other => scalar(out, other),
    }
}

/// Appends the JSON [`write`] made of a built-in object as its typed list's
/// item, the same bytes [`write_list_item`] writes for the object, without
/// decoding it: the leading type meta is cut. `false` (nothing written) when
/// `json` does not start with a known type's `kind` and `apiVersion`.
pub fn write_list_item_json(out: &mut Vec<u8>, json: &[u8]) -> bool {
    fn quoted<'a>(json: &'a [u8], after: &[u8]) -> Option<(&'a str, &'a [u8])> {
        let rest = json.strip_prefix(after)?;
        let end = memchr::memchr(b'"', rest)?;
        let value = std::str::from_utf8(&rest[..end]).ok()?;
        // Escapes would make the raw bytes differ from the value.
        (!value.contains('\\')).then_some((value, &rest[end + 1..]))
    }
    let Some((kind, rest)) = quoted(json, br#"{"kind":""#) else {
        return false;
    };
    let Some((api_version, rest)) = quoted(rest, br#","apiVersion":""#) else {
        return false;
    };
    // The object's other fields, or its closing brace when it has none.
    let fields = match rest.first() {
        Some(b',') => &rest[1..],
        Some(b'}') => rest,
        _ => return false,
    };
    let known = layouts()
        .by_gvk
        .contains_key(&(api_version.to_owned(), kind.to_owned()));
    if known {
        out.push(b'{');
        out.extend_from_slice(fields);
    }
    known
}

/// Appends `value` as the named message (`io.k8s.api.core.v1.Pod`).
pub fn write_as(out: &mut Vec<u8>, value: &Value, message: &str) {
    let m = layouts().by_name.get(message).copied();
    write_typed(out, value, m, false);
}

/// `value` as the named top-level message (type meta first), for the
/// answers that name their kind but no apiVersion, or a type no
/// `apiVersion`/`kind` pair finds (discovery documents); ends with the
/// newline.
pub fn to_vec_as(value: &Value, message: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    let m = layouts().by_name.get(message).copied();
    write_typed(&mut out, value, m, true);
    out.push(b'\n');
    out
}

/// A JSON answer with kube-apiserver's bytes and Content-Type.
pub fn respond(mut builder: HttpResponseBuilder, value: &Value) -> HttpResponse {
    let mut body = to_vec(value);
    body.push(b'\n');
    builder.content_type("application/json").body(body)
}

/// `json` (compact, as [`to_vec`] writes it) indented as Go's
/// `json.MarshalIndent` with two spaces: how kube-apiserver writes a Status
/// for a request whose Accept names a view (Table, metadata only).
pub fn indent(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                out.push(b);
            }
            b'{' | b'[' => {
                out.push(b);
                let empty = matches!(json.get(i + 1), Some(b'}' | b']'));
                depth += 1;
                if !empty {
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if !matches!(json.get(i.wrapping_sub(1)), Some(b'{' | b'[')) {
                    newline(&mut out, depth);
                }
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(b),
        }
    }
    out
}

fn write_typed(out: &mut Vec<u8>, value: &Value, message: Option<usize>, top: bool) {
    match value {
        Value::Object(map) => {
            let Some(m) = message.map(|m| &layouts().messages[m]) else {
                out.push(b'{');
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    string(out, k);
                    out.push(b':');
                    // An untyped object's values are untyped, but an
                    // embedded object names its own type.
                    write_typed(out, v, message_of(v), false);
                }
                out.push(b'}');
                return;
            };
            write_members(out, map.iter().collect(), m, top);
        }
        other => scalar(out, other),
    }
}

/// An object's members as `m`: type meta first (at the top), then the
/// fields in struct order, then whatever the layout lacks, sorted.
fn write_members<'a>(
    out: &mut Vec<u8>,
    mut entries: Vec<(&'a String, &'a Value)>,
    m: &'a Message,
    top: bool,
) {
    for (field, zero) in &m.always {
        if !entries.iter().any(|(k, _)| *k == field) {
            entries.push((field, zero));
        }
    }
    // `kind` and `apiVersion` are the inline TypeMeta, unless the struct
    // has fields of those names (ManagedFieldsEntry, StatusDetails).
    let rank = |k: &str| -> (usize, usize) {
        match (m.index.get(k), k) {
            (Some(&i), _) => (1, i),
            (None, "kind") => (0, 0),
            (None, "apiVersion") => (0, 1),
            (None, _) => (2, 0),
        }
    };
    entries.sort_by_key(|(k, _)| rank(k));
    let partial_list = entries
        .iter()
        .any(|(k, v)| *k == "kind" && v.as_str() == Some("PartialObjectMetadataList"));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, k);
        out.push(b':');
        let (field_type, map) = m
            .index
            .get(k.as_str())
            .map_or((None, false), |&i| m.types[i]);
        match (k.as_str(), field_type, v) {
            // A typed list's items carry no type meta (but metadata-only
            // items name their own kind).
            ("items", Some(item), Value::Array(items)) if top && !partial_list => {
                out.push(b'[');
                for (j, v) in items.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    match v {
                        Value::Object(o) => {
                            let item = &layouts().messages[item];
                            let fields = o.iter().filter(|(k, _)| !is_type_meta(item, k));
                            write_members(out, fields.collect(), item, false)
                        }
                        other => scalar(out, other),
                    }
                }
                out.push(b']');
            }
            ("fieldsV1", _, Value::Object(_)) => write_fields_v1(out, v),
            _ => write_field(out, v, field_type, map),
        }
    }
    out.push(b'}');
}

/// A `fieldsV1` set in structured-merge-diff's order: `.` first, then field
/// names, keys, values and indexes, each compared as values (a key's port 80
/// before port 443), not as the strings they are written as.
fn write_fields_v1(out: &mut Vec<u8>, v: &Value) {
    let Value::Object(m) = v else {
        return scalar(out, v);
    };
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by(|(a, _), (b, _)| fields_v1_order(a, b));
    out.push(b'{');
    for (i, (k, child)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, k);
        out.push(b':');
        write_fields_v1(out, child);
    }
    out.push(b'}');
}

/// structured-merge-diff's `PathElement.Compare`, on the written elements.
fn fields_v1_order(a: &str, b: &str) -> std::cmp::Ordering {
    let rank = |e: &str| match e.split_once(':').map(|(p, _)| p) {
        _ if e == "." => 0,
        Some("f") => 1,
        Some("k") => 2,
        Some("v") => 3,
        Some("i") => 4,
        _ => 5,
    };
    let (ra, rb) = (rank(a), rank(b));
    if ra != rb || ra == 0 {
        return ra.cmp(&rb);
    }
    let (ta, tb) = (&a[2..], &b[2..]);
    match ra {
        1 => ta.cmp(tb),
        4 => match (ta.parse::<i64>(), tb.parse::<i64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => ta.cmp(tb),
        },
        _ => match (
            serde_json::from_str::<Value>(ta),
            serde_json::from_str::<Value>(tb),
        ) {
            (Ok(x), Ok(y)) => value_order(&x, &y),
            _ => ta.cmp(tb),
        },
    }
}

/// structured-merge-diff's value order: numbers by value, strings by
/// bytes, lists and maps (a key's fields, by name) element by element.
fn value_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let rank = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = value_order(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Both sorted by name (serde's maps are).
            for ((kp, p), (kq, q)) in x.iter().zip(y) {
                let o = kp.cmp(kq).then_with(|| value_order(p, q));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Whether `key` is the inline TypeMeta of `m`, not a field of its own.
fn is_type_meta(m: &Message, key: &str) -> bool {
    matches!(key, "kind" | "apiVersion") && !m.index.contains_key(key)
}

/// A field's value: a message, a list of them, or a map of them.
fn write_field(out: &mut Vec<u8>, value: &Value, message: Option<usize>, map: bool) {
    match (value, message) {
        (Value::Array(items), _) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_field(out, v, message, false);
            }
            out.push(b']');
        }
        (Value::Object(entries), Some(m)) if map => {
            out.push(b'{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, k);
                out.push(b':');
                write_typed(out, v, Some(m), false);
            }
            out.push(b'}');
        }
        (Value::Object(_), Some(m)) => write_typed(out, value, Some(m), false),
        // An opaque field (RawExtension, JSON): an embedded object names
        // its own type.
        (Value::Object(_), None) => write_typed(out, value, message_of(value), true),
        (other, _) => scalar(out, other),
    }
}

fn scalar(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_typed(out, v, message_of(v), false);
            }
            out.push(b']');
        }
        Value::Object(_) => write_typed(out, value, None, false),
        // null, booleans and numbers print as Go prints them.
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// A string as Go's `encoding/json` escapes it.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            _ => None,
        };
        let short = escape.is_some();
        let unicode = b < 0x20 || b == b'<' || b == b'>' || b == b'&';
        // U+2028 and U+2029, which JavaScript reads as line ends.
        let separator = b == 0xe2
            && bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9));
        if !(short || unicode || separator) {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if let Some(e) = escape {
            out.extend_from_slice(e);
            i += 1;
        } else if separator {
            out.extend_from_slice(if bytes[i + 2] == 0xa8 {
                b"\\u2028"
            } else {
                b"\\u2029"
            });
            i += 3;
        } else {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
            i += 1;
        }
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(v: &Value) -> String {
        String::from_utf8(to_vec(v)).unwrap()
    }

    #[test]
    fn typed_objects_in_struct_order() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "data": {"b": "1", "a": "<&>"},
            "metadata": {"uid": "u", "name": "x", "namespace": "d", "labels": {"z": "1", "a": "2"}},
        });
        assert_eq!(
            text(&cm),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"d","uid":"u","labels":{"a":"2","z":"1"}},"data":{"a":"\u003c\u0026\u003e","b":"1"}}"#
        );
    }

    #[test]
    fn nested_messages_lists_and_maps() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"image": "nginx", "name": "c",
                "resources": {"limits": {"memory": "1Gi", "cpu": "1"}}}],
                "restartPolicy": "Always", "volumes": []},
        });
        assert_eq!(
            text(&pod),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"volumes":[],"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}],"restartPolicy":"Always"},"status":{}}"#
        );
    }

    #[test]
    fn list_items_cut_from_the_objects_json_equal_those_written_from_the_value() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            json!({"apiVersion": "v1", "kind": "Secret"}),
        ];
        for object in objects {
            let (mut cut, mut written) = (Vec::new(), Vec::new());
            assert!(write_list_item_json(&mut cut, &to_vec(&object)));
            write_list_item(&mut written, &object);
            assert_eq!(String::from_utf8(cut), String::from_utf8(written));
        }
        let custom = json!({"kind": "Widget", "apiVersion": "example.com/v1", "spec": {}});
        let mut out = Vec::new();
        assert!(!write_list_item_json(&mut out, &to_vec(&custom)));
        let unknown = br#"{"kind":"Widget","apiVersion":"example.com/v1","spec":{}}"#;
        assert!(!write_list_item_json(&mut out, unknown));
        assert!(out.is_empty());
    }

    #[test]
    fn untyped_objects_sorted() {
        let cr = json!({"kind": "Widget", "apiVersion": "example.com/v1", "spec": {"b": 1, "a": [1.5, null]}});
        assert_eq!(
            text(&cr),
            r#"{"apiVersion":"example.com/v1","kind":"Widget","spec":{"a":[1.5,null],"b":1}}"#
        );
    }

    #[test]
    fn indented_as_go_indents() {
        let v = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 404});
        assert_eq!(
            String::from_utf8(indent(&to_vec(&v))).unwrap(),
            "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"code\": 404\n}"
        );
    }

    #[test]
    fn go_escapes() {
        let mut out = Vec::new();
        string(&mut out, "a\"\\\n\u{1}\u{8}\u{2028}é");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"\\\n\u0001\b\u2028é""#
        );
    }
}
