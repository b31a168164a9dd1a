//! What a custom resource's structural schema asks beyond kube-openapi's
//! checks, as apiextensions-apiserver checks it after them: lists of
//! `x-kubernetes-list-type: set` hold no value twice and `map` lists no key
//! twice, then every `x-kubernetes-validations` rule is evaluated with `self`
//! (and `oldSelf` on an update that had the value: transition rules), each
//! failure a field error at the rule's node.

use cel_interpreter::{Context, Value as Cel};
use serde_json::{Map, Value, json};

use crate::authz::admission::{compile_cel, execute_cel, to_cel};
use crate::error::Cause;

/// Checks `value` (and `old`, the stored value at the same place) against
/// `schema` at `path`, adding what fails to `out`; the CEL rules only when
/// `rules` (list uniqueness always).
pub fn validate(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    rules: bool,
    out: &mut Vec<Cause>,
) {
    if !schema.is_object() || value.is_null() {
        return;
    }
    match value {
        Value::Array(items) => {
            unique(schema, items, path, out);
            let item_schema = &schema["items"];
            for (i, item) in items.iter().enumerate() {
                let before = old.and_then(|o| correlate(schema, item, o));
                validate(
                    item_schema,
                    item,
                    before,
                    &format!("{path}[{i}]"),
                    rules,
                    out,
                );
            }
        }
        Value::Object(m) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, s) in props {
                    if let Some(child) = m.get(k) {
                        let before = old.and_then(|o| o.get(k));
                        validate(s, child, before, &child_path(path, k), rules, out);
                    }
                }
            } else if schema["additionalProperties"].is_object() {
                for (k, child) in m {
                    let before = old.and_then(|o| o.get(k));
                    let at = format!("{path}[{k}]");
                    validate(
                        &schema["additionalProperties"],
                        child,
                        before,
                        &at,
                        rules,
                        out,
                    );
                }
            }
        }
        _ => {}
    }
    if rules {
        self::rules(schema, value, old, path, out);
    }
}

fn child_path(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_owned()
    } else {
        format!("{path}.{k}")
    }
}

/// The stored item an item of a `map` list (by its keys) or `set` list (by
/// value) updates, for its transition rules.
fn correlate<'a>(schema: &Value, item: &Value, old: &'a Value) -> Option<&'a Value> {
    let olds = old.as_array()?;
    match schema["x-kubernetes-list-type"].as_str() {
        Some("set") => olds.iter().find(|o| *o == item),
        Some("map") => {
            let keys = map_keys(schema);
            olds.iter()
                .find(|o| keys.iter().all(|k| o[k.as_str()] == item[k.as_str()]))
        }
        _ => None,
    }
}

fn map_keys(schema: &Value) -> Vec<String> {
    schema["x-kubernetes-list-map-keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect()
}

/// `set` and `map` lists' duplicates: `Duplicate value: <value or keys>`.
fn unique(schema: &Value, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    let identity = |item: &Value| -> Option<Value> {
        match schema["x-kubernetes-list-type"].as_str() {
            Some("set") => Some(item.clone()),
            Some("map") => {
                let mut keys = Map::new();
                for k in map_keys(schema) {
                    if let Some(v) = item.get(&k) {
                        keys.insert(k, v.clone());
                    }
                }
                Some(Value::Object(keys))
            }
            _ => None,
        }
    };
    let mut seen: Vec<Value> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(id) = identity(item) else { return };
        if seen.contains(&id) {
            out.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!(
                    "Duplicate value: {}",
                    crate::strategy::validate::errors::show(&id)
                ),
                field: format!("{path}[{i}]"),
            });
        } else {
            seen.push(id);
        }
    }
}

/// The node's `x-kubernetes-validations`.
fn rules(schema: &Value, value: &Value, old: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let Some(list) = schema["x-kubernetes-validations"].as_array() else {
        return;
    };
    let ty = schema["type"].as_str().unwrap_or("object");
    for rule in list {
        let Some(expr) = rule["rule"].as_str() else {
            continue;
        };
        let transition = expr.contains("oldSelf");
        let optional = rule["optionalOldSelf"] == true;
        if transition && old.is_none() && !optional {
            continue;
        }
        let Ok(program) = compile_cel(expr) else {
            continue;
        };
        let mut ctx = Context::default();
        ctx.add_variable_from_value("self", to_cel(value));
        if transition {
            ctx.add_variable_from_value("oldSelf", old.map_or(Cel::Null, to_cel));
        }
        // A rule that cannot be evaluated here is not held against the
        // object: kemu's CEL is not cel-go, and a false refusal is worse.
        if !matches!(execute_cel(&program, &ctx), Ok(Cel::Bool(false))) {
            continue;
        }
        let message = rule["messageExpression"]
            .as_str()
            .and_then(|m| compile_cel(m).ok())
            .and_then(|p| match execute_cel(&p, &ctx) {
                Ok(Cel::String(s)) if !s.is_empty() => Some(s.to_string()),
                _ => None,
            })
            .or_else(|| rule["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("failed rule: {expr}"));
        let field = match rule["fieldPath"].as_str().filter(|f| !f.is_empty()) {
            Some(f) => format!("{path}{f}"),
            None => path.to_owned(),
        };
        let (reason, text) = match rule["reason"].as_str() {
            Some("FieldValueForbidden") => ("FieldValueForbidden", format!("Forbidden: {message}")),
            Some("FieldValueRequired") => {
                ("FieldValueRequired", format!("Required value: {message}"))
            }
            Some("FieldValueDuplicate") => (
                "FieldValueDuplicate",
                format!("Duplicate value: {}: {message}", json!(ty)),
            ),
            _ => (
                "FieldValueInvalid",
                format!("Invalid value: {}: {message}", json!(ty)),
            ),
        };
        out.push(Cause {
            reason: reason.into(),
            message: text,
            field,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
                {"rule": "self.size != 'forbidden'", "messageExpression": "'size ' + self.size + ' is not allowed'"}],
            "properties": {
                "size": {"type": "string"}, "replicas": {"type": "integer"}, "minReplicas": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}}}}})
    }

    fn messages(value: Value, old: Option<Value>) -> Vec<String> {
        let mut out = Vec::new();
        validate(&schema(), &value, old.as_ref(), "", true, &mut out);
        out.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn rules_and_list_types_refuse_as_upstream() {
        assert_eq!(
            messages(
                json!({"spec": {"size": "s", "replicas": 1, "minReplicas": 3}}),
                None
            ),
            ["spec: Invalid value: \"object\": replicas must be at least minReplicas"]
        );
        assert_eq!(
            messages(
                json!({"spec": {"size": "forbidden", "replicas": 1, "minReplicas": 0}}),
                None
            ),
            ["spec: Invalid value: \"object\": size forbidden is not allowed"]
        );
        assert_eq!(
            messages(
                json!({"spec": {"size": "s", "replicas": 1, "minReplicas": 0,
                "tags": ["a", "a"], "ports": [{"name": "a"}, {"name": "a"}]}}),
                None
            ),
            [
                "spec.ports[1]: Duplicate value: {\"name\":\"a\"}",
                "spec.tags[1]: Duplicate value: \"a\""
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_updates_only() {
        let spec = |name: &str| json!({"spec": {"size": "s", "replicas": 1, "minReplicas": 0, "name": name}});
        assert!(messages(spec("a"), None).is_empty());
        assert!(messages(spec("a"), Some(spec("a"))).is_empty());
        assert_eq!(
            messages(spec("b"), Some(spec("a"))),
            ["spec.name: Invalid value: \"string\": name is immutable"]
        );
    }
}
