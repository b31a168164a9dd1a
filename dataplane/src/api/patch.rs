//! Patch types: JSON patch (RFC 6902), merge patch (RFC 7386), strategic merge
//! patch (list merge by key, the directives `kubectl apply` sends), and
//! `apply-patch+yaml` treated as a merge until server-side apply lands.

use serde_json::{Map, Value};

use crate::api::openapi;
use crate::error::ApiError;

/// The patch type, from the request's Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// The media types PATCH accepts, as upstream lists them in a 415.
pub const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json, application/apply-patch+cbor";

impl PatchType {
    /// The patch type named by a Content-Type, if supported.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// An OpenAPI v2 schema of the patched type (its patch extensions drive the
/// strategic merge), if the type has one.
pub type Schema = Option<&'static Value>;

/// Applies `patch` to `target`, whose type's schema is `schema`.
pub fn apply(
    kind: PatchType,
    target: &mut Value,
    patch: &Value,
    schema: Schema,
) -> Result<(), ApiError> {
    match kind {
        PatchType::Json => json_patch(target, patch),
        PatchType::Merge | PatchType::Apply => {
            merge(target, patch);
            Ok(())
        }
        PatchType::StrategicMerge => {
            strategic(target, patch, &mut Vec::new(), schema);
            Ok(())
        }
    }
}

/// RFC 7386: objects merge, `null` removes, anything else replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

fn bad_patch(msg: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(msg.to_string())
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<Vec<String>, ApiError> {
    if path.is_empty() {
        return Ok(vec![]);
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| bad_patch(format!("invalid JSON pointer: {path}")))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn parent_mut<'a>(target: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, ApiError> {
    let mut v = target;
    for t in tokens {
        v = match v {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| bad_patch(format!("doc is missing path: /{}", tokens.join("/"))))?;
    }
    Ok(v)
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    let tokens = split_pointer(path)?;
    let Some((last, parents)) = tokens.split_last() else {
        *target = value;
        return Ok(());
    };
    match parent_mut(target, parents)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|i| *i <= a.len())
                    .ok_or_else(|| {
                        bad_patch(format!(
                            "add operation does not apply: doc is missing path: {path}"
                        ))
                    })?
            };
            a.insert(i, value);
        }
        _ => return Err(bad_patch(format!("doc is missing path: {path}"))),
    }
    Ok(())
}

fn remove(target: &mut Value, path: &str) -> Result<Value, ApiError> {
    let tokens = split_pointer(path)?;
    let Some((last, parents)) = tokens.split_last() else {
        return Err(bad_patch("cannot remove the whole document"));
    };
    let missing = || {
        bad_patch(format!(
            "remove operation does not apply: doc is missing path: \"{path}\""
        ))
    };
    match parent_mut(target, parents)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i = last
                .parse::<usize>()
                .ok()
                .filter(|i| *i < a.len())
                .ok_or_else(missing)?;
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

fn get(target: &Value, path: &str) -> Result<Value, ApiError> {
    let pointer = if path.is_empty() { "" } else { path };
    target
        .pointer(pointer)
        .cloned()
        .ok_or_else(|| bad_patch(format!("doc is missing path: {path}")))
}

/// RFC 6902, applied to a copy so a failing operation changes nothing.
fn json_patch(target: &mut Value, ops: &Value) -> Result<(), ApiError> {
    let ops = ops.as_array().ok_or_else(|| {
        bad_patch("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    })?;
    let mut doc = target.clone();
    for op in ops {
        let path = op["path"].as_str().unwrap_or_default();
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| bad_patch(format!("missing value for {} operation", op["op"])))
        };
        let from = || op["from"].as_str().unwrap_or_default().to_owned();
        match op["op"].as_str() {
            Some("add") => add(&mut doc, path, value()?)?,
            Some("remove") => {
                remove(&mut doc, path)?;
            }
            Some("replace") => {
                remove(&mut doc, path)?;
                add(&mut doc, path, value()?)?;
            }
            Some("move") => {
                let v = remove(&mut doc, &from())?;
                add(&mut doc, path, v)?;
            }
            Some("copy") => {
                let v = get(&doc, &from())?;
                add(&mut doc, path, v)?;
            }
            Some("test") => {
                if get(&doc, path)? != value()? {
                    return Err(bad_patch(format!("testing value {path} failed")));
                }
            }
            other => {
                return Err(bad_patch(format!(
                    "Unexpected kind: {}",
                    other.unwrap_or_default()
                )));
            }
        }
    }
    *target = doc;
    Ok(())
}

/// The merge key of a list field, by its name and where it sits, for the
/// lists `kubectl apply` patches on the common kinds.
fn merge_key(path: &[String], field: &str) -> Option<&'static str> {
    let under = |name: &str| path.iter().any(|p| p == name);
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "readinessGates" => "name",
        "hostAliases" => "ip",
        "ports" if under("containers") || under("initContainers") => "containerPort",
        "ports" => "port",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "topologySpreadConstraints" => "topologyKey",
        _ => return None,
    })
}

/// How a list field merges.
enum ListMerge {
    /// Element by element, matched on this key.
    Key(String),
    /// As a set of primitives.
    Set,
    /// The patch's list replaces the object's.
    Replace,
}

/// From the field's `x-kubernetes-patch-strategy` / `-merge-key` when the
/// schema is known, else from the built-in table of common merge keys.
fn list_merge(schema: Schema, path: &[String], field: &str) -> ListMerge {
    let Some(schema) = schema else {
        return merge_key(path, field).map_or(ListMerge::Replace, |k| ListMerge::Key(k.into()));
    };
    let Some(prop) = openapi::property(schema, field) else {
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

/// Strategic merge patch: maps merge, lists merge as their schema says (by
/// merge key, as a set) or are replaced; `$patch`, `$setElementOrder`,
/// `$retainKeys` and `$deleteFromPrimitiveList` directives are honoured.
fn strategic(target: &mut Value, patch: &Value, path: &mut Vec<String>, schema: Schema) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut v = patch.clone();
            if let Value::Object(m) = &mut v {
                m.remove("$patch");
            }
            *target = v;
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if k == "$patch" || k.starts_with("$setElementOrder/") || k == "$retainKeys" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(drop)) = (t.get_mut(field), v.as_array()) {
                list.retain(|x| !drop.contains(x));
            }
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        let field_schema = schema.and_then(|s| openapi::property(s, k));
        path.push(k.clone());
        match (v, list_merge(schema, path, k)) {
            (Value::Array(items), ListMerge::Key(key)) => {
                let cur = t.entry(k.clone()).or_insert_with(|| Value::Array(vec![]));
                if !cur.is_array() {
                    *cur = Value::Array(vec![]);
                }
                if let Value::Array(list) = cur {
                    let item_schema = field_schema.and_then(|f| f.get("items"));
                    merge_list(list, items, &key, path, item_schema);
                }
            }
            (Value::Array(items), ListMerge::Set) => {
                let cur = t.entry(k.clone()).or_insert_with(|| Value::Array(vec![]));
                if let Value::Array(list) = cur {
                    for item in items {
                        if !list.contains(item) {
                            list.push(item.clone());
                        }
                    }
                } else {
                    *cur = v.clone();
                }
            }
            _ => strategic(
                t.entry(k.clone()).or_insert(Value::Null),
                v,
                path,
                field_schema,
            ),
        }
        path.pop();
        if t.get(k).is_some_and(Value::is_null) {
            t.remove(k);
        }
    }
}

fn merge_list(
    list: &mut Vec<Value>,
    items: &[Value],
    key: &str,
    path: &mut Vec<String>,
    schema: Schema,
) {
    for item in items {
        let id = &item[key];
        let pos = list.iter().position(|x| !id.is_null() && &x[key] == id);
        match (pos, item["$patch"].as_str()) {
            (Some(i), Some("delete")) => {
                list.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), _) => strategic(&mut list[i], item, path, schema),
            (None, _) => {
                let mut v = Value::Null;
                strategic(&mut v, item, path, schema);
                list.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_is_all_or_nothing() {
        let mut d = json!({"a": [1, 2], "b": {"c": 1}});
        let p = json!([{"op": "add", "path": "/a/-", "value": 3}, {"op": "replace", "path": "/b/c", "value": 2}, {"op": "test", "path": "/b/c", "value": 2}]);
        apply(PatchType::Json, &mut d, &p, None).unwrap();
        assert_eq!(d, json!({"a": [1, 2, 3], "b": {"c": 2}}));
        let bad = json!([{"op": "remove", "path": "/a/0"}, {"op": "remove", "path": "/zz"}]);
        assert!(apply(PatchType::Json, &mut d, &bad, None).is_err());
        assert_eq!(d["a"], json!([1, 2, 3]));
    }

    #[test]
    fn strategic_merge_merges_containers_by_name() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}], "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}
        ]}}}});
        let p = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [
            {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
            {"name": "b", "$patch": "delete"}
        ]}}}});
        let schema = openapi::definitions().get("io.k8s.api.apps.v1.Deployment");
        assert!(schema.is_some());
        let mut by_table = d.clone();
        apply(PatchType::StrategicMerge, &mut by_table, &p, None).unwrap();
        apply(PatchType::StrategicMerge, &mut d, &p, schema).unwrap();
        assert_eq!(d, by_table, "schema and built-in table agree");
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 1);
        assert_eq!(c[0]["image"], "a:2");
        assert_eq!(c[0]["ports"][0]["containerPort"], 80);
        assert_eq!(c[0]["env"].as_array().unwrap().len(), 2);
        let mut m = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        apply(
            PatchType::Merge,
            &mut m,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            None,
        )
        .unwrap();
        // Primitive lists with strategy `merge` (finalizers) merge as sets.
        let mut f = json!({"metadata": {"finalizers": ["a"]}});
        let schema = openapi::definitions().get("io.k8s.api.core.v1.ConfigMap");
        apply(
            PatchType::StrategicMerge,
            &mut f,
            &json!({"metadata": {"finalizers": ["b", "a"]}}),
            schema,
        )
        .unwrap();
        assert_eq!(f["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(m, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
    }
}
