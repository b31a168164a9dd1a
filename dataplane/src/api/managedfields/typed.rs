//! Objects walked with their schema, as structured-merge-diff walks typed
//! values: the shape of each node (struct, map, list and how its items are
//! identified, scalar) comes from the upstream OpenAPI extensions
//! (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`, and for lists
//! without a list type the patch merge key, as upstream does for built-ins).
//! Values without a schema are deduced: objects granular, lists atomic.
//!
//! Upstream compares Go values, not JSON: a struct field Go always holds
//! (a non-pointer struct, a nil slice without `omitempty`, a scalar without
//! it) is there at its zero value even when the JSON leaves it out, so its
//! appearing is no addition ([`go_zero`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::fieldset::{Element, FieldSet, Path, field};
use crate::api::openapi;
use crate::api::patch::Schema;
use crate::api::patch::strategic::child_schema;

/// How a list's items are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The list is one value.
    Atomic,
    /// Items are identified by their value.
    Set,
    /// Items are identified by these key fields.
    Map(Vec<String>),
}

/// The shape of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A leaf.
    Scalar,
    /// An object with declared fields.
    Struct {
        /// `x-kubernetes-map-type: atomic`.
        atomic: bool,
    },
    /// An object of arbitrary keys.
    Map {
        /// `x-kubernetes-map-type: atomic`.
        atomic: bool,
    },
    /// A list.
    List(ListType),
}

fn str_ext<'a>(s: &'a Value, r: &'a Value, name: &str) -> Option<&'a str> {
    s.get(name).or_else(|| r.get(name)).and_then(Value::as_str)
}

/// The shape of `value` under property schema `schema`.
pub fn shape(schema: Schema, value: &Value) -> Shape {
    let deduced = match value {
        Value::Object(_) => Shape::Map { atomic: false },
        Value::Array(_) => Shape::List(ListType::Atomic),
        _ => Shape::Scalar,
    };
    let Some(s) = schema else {
        return deduced;
    };
    let r = openapi::resolve(s);
    let atomic_map = str_ext(s, r, "x-kubernetes-map-type") == Some("atomic");
    let ty = r.get("type").and_then(Value::as_str);
    let shape = if r.get("properties").is_some() {
        Shape::Struct { atomic: atomic_map }
    } else if ty == Some("object")
        && r.get("additionalProperties").is_none()
        && r.get("x-kubernetes-preserve-unknown-fields").is_none()
    {
        // No declared shape (a RawExtension): structured-merge-diff's
        // untyped, one atomic value.
        Shape::Scalar
    } else if ty == Some("object") || r.get("additionalProperties").is_some() {
        Shape::Map { atomic: atomic_map }
    } else if ty == Some("array") || r.get("items").is_some() {
        Shape::List(list_type(s, r))
    } else if ty.is_none() {
        return deduced;
    } else {
        Shape::Scalar
    };
    // A value that does not fit its schema is one leaf.
    match (&shape, value) {
        (Shape::Struct { .. } | Shape::Map { .. }, Value::Object(_))
        | (Shape::List(_), Value::Array(_)) => shape,
        _ => Shape::Scalar,
    }
}

fn list_type(s: &Value, r: &Value) -> ListType {
    match str_ext(s, r, "x-kubernetes-list-type") {
        Some("atomic") => return ListType::Atomic,
        Some("set") => return ListType::Set,
        Some("map") => {
            let keys = s
                .get("x-kubernetes-list-map-keys")
                .or_else(|| r.get("x-kubernetes-list-map-keys"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            return ListType::Map(keys);
        }
        _ => {}
    }
    let merge = str_ext(s, r, "x-kubernetes-patch-strategy")
        .is_some_and(|st| st.split(',').any(|x| x == "merge"));
    match (merge, str_ext(s, r, "x-kubernetes-patch-merge-key")) {
        (true, Some(k)) => ListType::Map(vec![k.to_owned()]),
        (true, None) => ListType::Set,
        _ => ListType::Atomic,
    }
}

/// The schema of a list's items.
pub fn items(schema: Schema) -> Schema {
    let s = schema?;
    s.get("items").or_else(|| openapi::resolve(s).get("items"))
}

/// Whether `key` is a declared field of struct schema `schema`.
fn declared(schema: Schema, key: &str) -> bool {
    schema.is_some_and(|s| {
        openapi::resolve(s)
            .get("properties")
            .is_some_and(|p| p.get(key).is_some())
    })
}

/// The path element of list item `item` at `index`.
pub fn item_element(list: &ListType, index: usize, item: &Value, item_schema: Schema) -> Element {
    match (list, item) {
        (ListType::Map(keys), Value::Object(m)) if !keys.is_empty() => {
            // `k:{…}` with the keys sorted, written directly (this runs for
            // every item of every associative list on each write).
            let mut sorted: Vec<&String> = keys.iter().collect();
            sorted.sort();
            let mut out = String::from("k:{");
            let mut first = true;
            for key in sorted {
                let default;
                let v = match m.get(key) {
                    Some(v) => v,
                    None => {
                        // A key field left out takes its default, as upstream's
                        // converter reads it from the schema; the v2 definitions
                        // lack the one key default built-ins have (a port's protocol).
                        default = child_schema(item_schema, key)
                            .and_then(|s| s.get("default").cloned())
                            .or_else(|| (key == "protocol").then(|| Value::from("TCP")));
                        match &default {
                            Some(d) => d,
                            None => continue,
                        }
                    }
                };
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                out.push_str(&v.to_string());
            }
            out.push('}');
            out
        }
        (ListType::Set, v) => format!("v:{v}"),
        _ => format!("i:{index}"),
    }
}

/// The items of a list by their path element (first occurrence wins).
fn index_items<'a>(
    list: &ListType,
    items: &'a [Value],
    item_schema: Schema,
) -> Vec<(Element, &'a Value)> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut out: Vec<(Element, &Value)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let e = item_element(list, i, item, item_schema);
        if seen.insert(e.clone()) {
            out.push((e, item));
        }
    }
    out
}

/// The fields a configuration sets, as upstream's `ToFieldSet`.
pub fn to_field_set(value: &Value, schema: Schema) -> FieldSet {
    let mut out = FieldSet::new();
    to_set(value, schema, &mut Vec::new(), &mut out);
    out
}

fn to_set(value: &Value, schema: Schema, path: &mut Path, out: &mut FieldSet) {
    match shape(schema, value) {
        Shape::Scalar
        | Shape::Struct { atomic: true }
        | Shape::Map { atomic: true }
        | Shape::List(ListType::Atomic) => out.insert(path),
        s @ (Shape::Struct { .. } | Shape::Map { .. }) => {
            let Value::Object(m) = value else { return };
            for (k, v) in m {
                path.push(field(k));
                to_set(v, child_schema(schema, k), path, out);
                let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if empty || matches!(s, Shape::Map { .. }) || !declared(schema, k) {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(lt) => {
            let Value::Array(a) = value else { return };
            let is = items(schema);
            for (e, item) in index_items(&lt, a, is) {
                path.push(e);
                to_set(item, is, path, out);
                out.insert(path);
                path.pop();
            }
        }
    }
}

/// What changed between two versions of an object, as upstream's `Compare`.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Paths only the new version has.
    pub added: FieldSet,
    /// Leaves whose value changed.
    pub modified: FieldSet,
    /// Paths only the old version has.
    pub removed: FieldSet,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

/// Compares `old` and `new` under `schema`.
pub fn compare(old: &Value, new: &Value, schema: Schema) -> Comparison {
    let mut c = Comparison::default();
    cmp(Some(old), Some(new), schema, &mut Vec::new(), &mut c);
    c
}

/// The fields Go's typed value of definition `schema` holds when its JSON
/// omits them, with their zero values (fixtures/k8s/always-written.json).
fn go_zero(schema: Schema) -> &'static [(String, Value)] {
    static BY_DEFINITION: OnceLock<HashMap<usize, Vec<(String, Value)>>> = OnceLock::new();
    let table = BY_DEFINITION.get_or_init(|| {
        let written = crate::api::wire::always_written();
        // Keyed by the definition's address: schemas here are references
        // into the one static table of definitions.
        openapi::definitions()
            .iter()
            .filter_map(|(name, d)| {
                let fields = written.get(name)?.clone();
                Some((std::ptr::from_ref(d) as usize, fields))
            })
            .collect()
    });
    schema
        .map(openapi::resolve)
        .and_then(|d| table.get(&(std::ptr::from_ref(d) as usize)))
        .map_or(&[], Vec::as_slice)
}

/// The entries of an object node as Go holds them (a struct's with the
/// fields Go always holds filled in).
fn held<'a>(
    v: Option<&'a Value>,
    is_struct: bool,
    schema: Schema,
    empty: &'a Map<String, Value>,
) -> Cow<'a, Map<String, Value>> {
    match v.and_then(Value::as_object) {
        Some(m) if is_struct => as_go(m, schema),
        Some(m) => Cow::Borrowed(m),
        None => Cow::Borrowed(empty),
    }
}

/// A struct as Go holds it: `m` with the fields Go always holds filled in.
fn as_go<'a>(m: &'a Map<String, Value>, schema: Schema) -> Cow<'a, Map<String, Value>> {
    let zero = go_zero(schema);
    if zero.iter().all(|(f, _)| m.contains_key(f)) {
        return Cow::Borrowed(m);
    }
    let mut full = m.clone();
    for (f, v) in zero {
        full.entry(f.clone()).or_insert_with(|| v.clone());
    }
    Cow::Owned(full)
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

fn cmp(l: Option<&Value>, r: Option<&Value>, schema: Schema, path: &mut Path, c: &mut Comparison) {
    // The shape comes from a side that is not `null`, when one is not.
    let v = match (l, r) {
        (_, Some(r)) if !r.is_null() => r,
        (Some(l), _) => l,
        (_, Some(r)) => r,
        (None, None) => return,
    };
    let mut sh = shape(schema, v);
    // A value that changes type is a leaf; a `null` (a nil slice or map Go
    // holds) takes the other side's shape.
    if let (Some(l), Some(r)) = (l, r)
        && !l.is_null()
        && !r.is_null()
        && shape(schema, l) != shape(schema, r)
    {
        sh = Shape::Scalar;
    }
    let leaf = match &sh {
        Shape::Scalar
        | Shape::Struct { atomic: true }
        | Shape::Map { atomic: true }
        | Shape::List(ListType::Atomic) => true,
        _ => is_empty_container(l) && is_empty_container(r),
    };
    if leaf {
        if !path.is_empty() {
            match (l, r) {
                (None, _) => c.added.insert(path),
                (_, None) => c.removed.insert(path),
                (Some(a), Some(b)) if a != b => c.modified.insert(path),
                _ => {}
            }
        }
        return;
    }
    match &sh {
        Shape::Struct { .. } | Shape::Map { .. } => {
            let empty = Map::new();
            let is_struct = matches!(sh, Shape::Struct { .. });
            let (lm, rm) = (
                held(l, is_struct, schema, &empty),
                held(r, is_struct, schema, &empty),
            );
            let (lm, rm) = (lm.as_ref(), rm.as_ref());
            for k in lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k))) {
                path.push(field(k));
                cmp(lm.get(k), rm.get(k), child_schema(schema, k), path, c);
                path.pop();
            }
        }
        Shape::List(lt) => {
            let is = items(schema);
            let la = l
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let ra = r
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let li = index_items(lt, la, is);
            let ri = index_items(lt, ra, is);
            fn find<'v>(set: &[(Element, &'v Value)], e: &Element) -> Option<&'v Value> {
                set.iter().find(|(x, _)| x == e).map(|(_, v)| *v)
            }
            for (e, lv) in &li {
                path.push(e.clone());
                cmp(Some(lv), find(&ri, e), is, path, c);
                path.pop();
            }
            for (e, rv) in &ri {
                if find(&li, e).is_none() {
                    path.push(e.clone());
                    cmp(None, Some(rv), is, path, c);
                    path.pop();
                }
            }
        }
        Shape::Scalar => {}
    }
    // A granular node that appears or goes is itself added or removed (a
    // field Go always holds never appears: `as_go` gave it its zero value).
    if !path.is_empty() {
        match (l, r) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            _ => {}
        }
    }
}

/// Merges an applied configuration into the live object, as upstream's
/// `Merge`: granular objects merge, associative lists merge item by item
/// (the configuration's order, live-only items kept in place), atomic
/// values and scalars are replaced. `null` in the configuration removes.
pub fn merge(live: &Value, config: &Value, schema: Schema) -> Value {
    match shape(schema, config) {
        Shape::Struct { atomic: false } | Shape::Map { atomic: false } if live.is_object() => {
            let mut out = live.as_object().cloned().unwrap_or_default();
            if let Value::Object(cm) = config {
                for (k, cv) in cm {
                    if cv.is_null() {
                        out.remove(k);
                        continue;
                    }
                    let cs = child_schema(schema, k);
                    let merged = match out.get(k) {
                        Some(lv) => merge(lv, cv, cs),
                        None => strip_nulls(cv),
                    };
                    out.insert(k.clone(), merged);
                }
            }
            Value::Object(out)
        }
        Shape::List(lt @ (ListType::Set | ListType::Map(_))) if live.is_array() => {
            let is = items(schema);
            let la = live.as_array().map(Vec::as_slice).unwrap_or(&[]);
            let ra = config.as_array().map(Vec::as_slice).unwrap_or(&[]);
            let li = index_items(&lt, la, is);
            let ri = index_items(&lt, ra, is);
            Value::Array(merge_items(&li, &ri, is))
        }
        _ => strip_nulls(config),
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The item order upstream's merge produces: walk both lists; shared items
/// follow the configuration's order, live-only items stay where they were.
fn merge_items(li: &[(Element, &Value)], ri: &[(Element, &Value)], is: Schema) -> Vec<Value> {
    let in_r = |e: &Element| ri.iter().find(|(x, _)| x == e).map(|(_, v)| *v);
    let in_l = |e: &Element| li.iter().find(|(x, _)| x == e).map(|(_, v)| *v);
    let shared: Vec<&Element> = ri
        .iter()
        .map(|(e, _)| e)
        .filter(|e| in_l(e).is_some())
        .collect();
    let mut next_shared = 0;
    let mut out = Vec::with_capacity(li.len().max(ri.len()));
    let (mut a, mut b) = (0, 0);
    while a < li.len() || b < ri.len() {
        if a < li.len() && b < ri.len() {
            let (le, lv) = &li[a];
            if *le == ri[b].0 {
                out.push(merge(lv, ri[b].1, is));
                a += 1;
                b += 1;
                next_shared += 1;
                continue;
            }
            if in_r(le).is_some() && shared.get(next_shared).is_some_and(|s| *s != le) {
                a += 1;
                continue;
            }
        }
        if a < li.len() && in_r(&li[a].0).is_none() {
            out.push(li[a].1.clone());
            a += 1;
            continue;
        }
        if b < ri.len() {
            let (re, rv) = &ri[b];
            out.push(match in_l(re) {
                Some(lv) => merge(lv, rv, is),
                None => strip_nulls(rv),
            });
            if shared.get(next_shared).is_some_and(|s| *s == re) {
                next_shared += 1;
            }
            b += 1;
        } else {
            // Only shared live items already emitted remain.
            a += 1;
        }
    }
    out
}

/// Removes from `value` every member of `set` that `keep` does not touch
/// (a node something in `keep` lies under stays, only its other members
/// go), as upstream's prune removes what an applier stopped applying.
pub fn remove(value: &mut Value, set: &FieldSet, keep: &FieldSet, schema: Schema) {
    match shape(schema, value) {
        Shape::Struct { .. } | Shape::Map { .. } => {
            let Value::Object(m) = value else { return };
            for (e, member, below) in set.entries() {
                let Some(name) = e.strip_prefix("f:") else {
                    continue;
                };
                let keep_below = keep.subtree(std::slice::from_ref(e));
                let kept = keep.contains(std::slice::from_ref(e))
                    || keep_below.is_some_and(|k| !k.is_empty());
                if member && !kept {
                    m.remove(name);
                    continue;
                }
                let empty = FieldSet::new();
                if let Some(child) = m.get_mut(name) {
                    let was_empty = is_empty_container(Some(child));
                    remove(
                        child,
                        below,
                        keep_below.unwrap_or(&empty),
                        child_schema(schema, name),
                    );
                    if !was_empty && is_empty_container(Some(child)) && !kept {
                        m.remove(name);
                    }
                }
            }
        }
        Shape::List(lt) => {
            let is = items(schema);
            let Value::Array(a) = value else { return };
            let elements: Vec<Element> = a
                .iter()
                .enumerate()
                .map(|(i, v)| item_element(&lt, i, v, is))
                .collect();
            let mut drop = vec![false; a.len()];
            let empty = FieldSet::new();
            for (i, item) in a.iter_mut().enumerate() {
                let e = &elements[i];
                let Some(below) = set.subtree(std::slice::from_ref(e)) else {
                    continue;
                };
                let keep_below = keep.subtree(std::slice::from_ref(e)).unwrap_or(&empty);
                let kept = keep.contains(std::slice::from_ref(e)) || !keep_below.is_empty();
                if set.contains(std::slice::from_ref(e)) && !kept {
                    drop[i] = true;
                    continue;
                }
                // The key fields of a kept item stay with it.
                let mut below = below.clone();
                if let ListType::Map(keys) = &lt {
                    for k in keys {
                        below.remove_subtree(&[field(k)]);
                    }
                }
                remove(item, &below, keep_below, is);
            }
            let mut i = 0;
            a.retain(|_| {
                i += 1;
                !drop[i - 1]
            });
        }
        Shape::Scalar => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Schema {
        openapi::definitions().get("io.k8s.api.apps.v1.Deployment")
    }

    #[test]
    fn field_sets_follow_list_types() {
        let cfg = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i",
                    "ports": [{"containerPort": 80}]}]}}}});
        let s = to_field_set(&cfg, deployment()).to_fields_v1();
        assert_eq!(s["f:metadata"]["f:labels"], json!({"f:app": {}}));
        assert_eq!(
            s["f:spec"]["f:selector"],
            json!({}),
            "LabelSelector is an atomic map"
        );
        let c = &s["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
        assert_eq!(c["."], json!({}));
        assert_eq!(
            c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"],
            json!({".": {}, "f:containerPort": {}})
        );
    }

    #[test]
    fn compare_and_merge() {
        let live = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}});
        let cfg = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "c:1"}, {"name": "a", "image": "a:2"}]}}}});
        let merged = merge(&live, &cfg, deployment());
        let names: Vec<&str> = merged["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c", "a", "b"]);
        let c = compare(&live, &merged, deployment());
        assert!(c.modified.contains(&[field("spec"), field("replicas")]));
        let cpath = [
            field("spec"),
            field("template"),
            field("spec"),
            field("containers"),
            "k:{\"name\":\"c\"}".into(),
        ];
        assert!(c.added.contains(&cpath));
        assert!(c.removed.is_empty());
    }
}
