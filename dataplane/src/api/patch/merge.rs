//! JSON merge patch (RFC 7386).

use serde_json::{Map, Value};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_removes_and_objects_merge() {
        let mut m = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "l": [1, 2]});
        merge(
            &mut m,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "l": [3]}),
        );
        assert_eq!(
            m,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "l": [3]})
        );
    }
}
