//! Strategic merge patch, as kube-apiserver applies it: maps merge, `null`
//! deletes, lists merge as the schema's `x-kubernetes-patch-strategy` /
//! `x-kubernetes-patch-merge-key` say (by merge key, as a set of primitives)
//! or are replaced; the directives `$patch: replace|delete|merge` (on maps
//! and list items), `$setElementOrder/<field>`, `$retainKeys` and
//! `$deleteFromPrimitiveList/<field>` are honoured. Errors carry upstream's
//! wording and class (400, 422 or a plain 500).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{PatchError, Schema};
use crate::api::openapi;

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Applies `patch` to `target` (all or nothing).
pub fn apply(target: &mut Value, patch: &Value, schema: Schema) -> Result<(), PatchError> {
    let Value::Object(p) = patch else {
        return Err(PatchError::Malformed(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_type(patch)
        )));
    };
    let mut doc = match target {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if merge_map(&mut doc, p, schema)? == Outcome::Delete {
        doc.clear();
    }
    *target = Value::Object(doc);
    Ok(())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    }
}

/// A value printed as Go's `%v` prints the decoded JSON (maps sorted by key),
/// for the messages that quote a patch fragment.
fn go_fmt(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", go_fmt(&m[*k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Keep,
    Delete,
}

/// How a list field merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListMerge {
    /// Element by element, matched on this key.
    Key(String),
    /// As a set of primitives.
    Set,
    /// The patch's list replaces the object's.
    Replace,
}

/// The schema of a map's value under `key`: a declared property, else the
/// `additionalProperties` of a map type.
pub fn child_schema(schema: Schema, key: &str) -> Schema {
    let s = openapi::resolve(schema?);
    s.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// From the field's `x-kubernetes-patch-strategy` / `-merge-key`.
pub fn list_merge(field: Schema) -> ListMerge {
    let Some(prop) = field else {
        return ListMerge::Replace;
    };
    let merge = prop
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .is_some_and(|s| s.split(',').any(|x| x == "merge"));
    match (
        merge,
        prop.get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str),
    ) {
        (true, Some(key)) => ListMerge::Key(key.to_owned()),
        (true, None) => ListMerge::Set,
        _ => ListMerge::Replace,
    }
}

fn merge_map(
    t: &mut Map<String, Value>,
    p: &Map<String, Value>,
    schema: Schema,
) -> Result<Outcome, PatchError> {
    match p.get(PATCH) {
        None => {}
        Some(Value::String(d)) if d == "merge" => {}
        Some(Value::String(d)) if d == "delete" => return Ok(Outcome::Delete),
        Some(Value::String(d)) if d == "replace" => {
            let mut fresh = Map::new();
            let mut rest = p.clone();
            rest.remove(PATCH);
            merge_map(&mut fresh, &rest, schema)?;
            *t = fresh;
            return Ok(Outcome::Keep);
        }
        Some(other) => {
            return Err(PatchError::Unclassified(format!(
                "unknown patch type: {} in map: {}",
                go_fmt(other),
                go_fmt(&Value::Object(p.clone()))
            )));
        }
    }
    if let Some(retain) = p.get(RETAIN_KEYS) {
        let keys: Vec<&str> = retain
            .as_array()
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            .ok_or_else(|| PatchError::Malformed("invalid patch format of retainKeys".into()))?;
        let content_outside = p
            .iter()
            .any(|(k, v)| !k.starts_with('$') && !v.is_null() && !keys.contains(&k.as_str()));
        if content_outside {
            return Err(PatchError::DoesNotApply(
                "patch content doesn't match retainKeys list".into(),
            ));
        }
        t.retain(|k, _| keys.contains(&k.as_str()));
    }
    let mut orders = Vec::new();
    let originals: Vec<(String, Vec<Value>)> = p
        .keys()
        .filter_map(|k| k.strip_prefix(SET_ELEMENT_ORDER))
        .map(|f| {
            let list = match t.get(f) {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            (f.to_owned(), list)
        })
        .collect();
    for (k, v) in p {
        if k == PATCH || k == RETAIN_KEYS {
            continue;
        }
        if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let order = v.as_array().ok_or_else(|| {
                PatchError::Malformed("invalid patch format of setElementOrder list".into())
            })?;
            orders.push((field, order));
            continue;
        }
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let drop = v.as_array().ok_or_else(|| {
                PatchError::Malformed("invalid patch format of primitive list".into())
            })?;
            if let Some(Value::Array(list)) = t.get_mut(field) {
                list.retain(|x| !drop.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::Malformed(
                "strategic merge patch format is not supported".into(),
            ));
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        let field = child_schema(schema, k);
        match v {
            Value::Array(items) => {
                let merged = merge_list(t.get(k), items, field)?;
                t.insert(k.clone(), Value::Array(merged));
            }
            Value::Object(pm) => {
                let mut cur = match t.remove(k) {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                if merge_map(&mut cur, pm, field)? == Outcome::Keep {
                    t.insert(k.clone(), Value::Object(cur));
                }
            }
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
    for (field, order) in orders {
        let merge = list_merge(child_schema(schema, field));
        let server = originals
            .iter()
            .find(|(f, _)| f == field)
            .map_or(&[][..], |(_, l)| l.as_slice());
        if let Some(Value::Array(list)) = t.get_mut(field) {
            let merged = std::mem::take(list);
            *list = normalize_order(merged, order, server, &merge);
        }
    }
    Ok(Outcome::Keep)
}

/// Merges patch `items` into the current list `cur` as the field's strategy says.
fn merge_list(
    cur: Option<&Value>,
    items: &[Value],
    field: Schema,
) -> Result<Vec<Value>, PatchError> {
    if items.iter().any(Value::is_array) {
        return Err(PatchError::DoesNotApply(
            "lists of lists are not supported".into(),
        ));
    }
    let item_schema = field.and_then(|f| f.get("items"));
    let mut list = match cur {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    // `{"$patch": "replace"}` among the items: the rest replace the list.
    let directive = |item: &Value| item.get(PATCH).and_then(Value::as_str).map(str::to_owned);
    let replace = items.iter().any(|i| {
        i.as_object().is_some_and(|m| m.len() == 1) && directive(i).as_deref() == Some("replace")
    });
    if replace {
        list.clear();
    }
    let merge = list_merge(field);
    match merge {
        ListMerge::Replace if !replace => {
            // Replaced whole; nested directives are still stripped.
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(fresh(item, item_schema)?);
            }
            return Ok(out);
        }
        ListMerge::Set => {
            let server = list.clone();
            let wanted: Vec<Value> = items
                .iter()
                .filter(|i| !(i.is_object() && directive(i).is_some()))
                .cloned()
                .collect();
            for item in &wanted {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
            return Ok(normalize_order(list, &wanted, &server, &merge));
        }
        _ => {}
    }
    let key = match &merge {
        ListMerge::Key(k) => k.clone(),
        _ => String::new(),
    };
    // Upstream orders by the list as it is once the deletions are done.
    let mut server = list.clone();
    for item in items {
        let Value::Object(pm) = item else {
            if !list.contains(item) {
                list.push(item.clone());
            }
            continue;
        };
        let d = directive(item);
        if pm.len() == 1 && d.is_some() {
            match d.as_deref() {
                Some("replace") => continue,
                Some("delete") => {
                    list.clear();
                    server.clear();
                    continue;
                }
                _ => continue,
            }
        }
        if key.is_empty() {
            list.push(fresh(item, item_schema)?);
            continue;
        }
        let Some(id) = pm.get(&key) else {
            return Err(PatchError::Unclassified(format!(
                "map: {} does not contain declared merge key: {key}",
                go_fmt(item)
            )));
        };
        let pos = list.iter().position(|x| x.get(&key) == Some(id));
        match (pos, d.as_deref()) {
            (Some(i), Some("delete")) => {
                list.remove(i);
                server.retain(|x| x.get(&key) != Some(id));
            }
            (None, Some("delete")) => {}
            (Some(i), Some("replace")) => {
                list[i] = fresh(item, item_schema)?;
            }
            (Some(i), _) => {
                let mut m = match list[i].take() {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                merge_map(&mut m, pm, item_schema)?;
                list[i] = Value::Object(m);
            }
            (None, _) => list.push(fresh(item, item_schema)?),
        }
    }
    if key.is_empty() {
        return Ok(list);
    }
    let wanted: Vec<Value> = items
        .iter()
        .filter(|i| directive(i).is_none())
        .cloned()
        .collect();
    Ok(normalize_order(list, &wanted, &server, &merge))
}

/// Upstream's `normalizeElementOrder`: the merged items the patch names, in
/// the patch's order, interleaved with the items only the server had, in
/// the server's order. Where both items of a pair are in `server`, the
/// earlier one there goes first; otherwise the patch's item does (so new
/// items come before the server's).
fn normalize_order(
    merged: Vec<Value>,
    wanted: &[Value],
    server: &[Value],
    merge: &ListMerge,
) -> Vec<Value> {
    // Items are told apart by their merge key's value (a primitive by
    // itself), compared as JSON text so that long lists stay O(n log n).
    let id_of = |v: &Value| -> String {
        match merge {
            ListMerge::Key(k) => v.get(k).map(Value::to_string).unwrap_or_default(),
            _ => v.to_string(),
        }
    };
    let index = |list: &[Value]| -> HashMap<String, usize> {
        let mut at = HashMap::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            at.entry(id_of(v)).or_insert(i);
        }
        at
    };
    let (wanted_at, server_at) = (index(wanted), index(server));
    let position = |at: &HashMap<String, usize>, v: &Value| at.get(&id_of(v)).copied();
    let (mut named, mut only_server): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| position(&wanted_at, v).is_some());
    named.sort_by_cached_key(|v| position(&wanted_at, v).unwrap_or(usize::MAX));
    only_server.sort_by_cached_key(|v| position(&server_at, v).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(named.len() + only_server.len());
    let (mut left, mut right) = (
        only_server.into_iter().peekable(),
        named.into_iter().peekable(),
    );
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (position(&server_at, l), position(&server_at, r)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
    out
}

/// A patch fragment as a new value: directives applied to nothing.
fn fresh(item: &Value, schema: Schema) -> Result<Value, PatchError> {
    match item {
        Value::Object(pm) => {
            let mut m = Map::new();
            let mut pm = pm.clone();
            if pm.get(PATCH).and_then(Value::as_str) == Some("replace") {
                pm.remove(PATCH);
            }
            merge_map(&mut m, &pm, schema)?;
            Ok(Value::Object(m))
        }
        other => Ok(other.clone()),
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
    fn containers_merge_by_name_with_directives() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}], "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}
        ]}}}});
        let p = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
        "containers": [
            {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
            {"name": "b", "$patch": "delete"},
            {"name": "c", "image": "c:1"}
        ]}}}});
        apply(&mut d, &p, deployment()).unwrap();
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 2);
        assert_eq!(c[0]["name"], "c");
        assert_eq!(c[1]["image"], "a:2");
        assert_eq!(c[1]["ports"][0]["containerPort"], 80);
        // Items new to the server come first, as upstream orders them.
        assert_eq!(
            c[1]["env"],
            json!([{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}])
        );
    }

    #[test]
    fn map_directives_and_primitive_lists() {
        let schema = openapi::definitions().get("io.k8s.api.core.v1.ConfigMap");
        let mut f = json!({"metadata": {"finalizers": ["a", "c"], "labels": {"x": "1", "y": "2"}}});
        apply(
            &mut f,
            &json!({"metadata": {
                "finalizers": ["b", "a"],
                "$deleteFromPrimitiveList/finalizers": ["c"],
                "labels": {"$patch": "replace", "z": "3"}
            }}),
            schema,
        )
        .unwrap();
        // As kube-apiserver 1.34 answers this patch: the patch's order.
        assert_eq!(f["metadata"]["finalizers"], json!(["b", "a"]));
        assert_eq!(f["metadata"]["labels"], json!({"z": "3"}));
        apply(
            &mut f,
            &json!({"metadata": {"labels": {"$patch": "delete"}}}),
            schema,
        )
        .unwrap();
        assert!(f["metadata"].get("labels").is_none());
    }

    #[test]
    fn retain_keys_and_list_replace() {
        let mut d = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        apply(
            &mut d,
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"},
                "template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "z"}]}}}}),
            deployment(),
        )
        .unwrap();
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            json!([{"name": "z"}])
        );
    }

    #[test]
    fn invalid_patches_answer_as_upstream() {
        let before = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                PatchError::Unclassified(
                    "map: map[image:x] does not contain declared merge key: name".into(),
                ),
            ),
            (
                json!({"spec": {"$patch": "frob"}}),
                PatchError::Unclassified(
                    "unknown patch type: frob in map: map[$patch:frob]".into(),
                ),
            ),
            (
                json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
                PatchError::DoesNotApply("patch content doesn't match retainKeys list".into()),
            ),
            (
                json!({"spec": {"$retainKeys": "a"}}),
                PatchError::Malformed("invalid patch format of retainKeys".into()),
            ),
            (
                json!({"spec": {"$setElementOrder/x": 1}}),
                PatchError::Malformed("invalid patch format of setElementOrder list".into()),
            ),
            (
                json!([1]),
                PatchError::Malformed(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}"
                        .into(),
                ),
            ),
        ];
        for (patch, want) in cases {
            let mut d = before.clone();
            assert_eq!(apply(&mut d, &patch, deployment()), Err(want), "{patch}");
            assert_eq!(d, before);
        }
    }
}
