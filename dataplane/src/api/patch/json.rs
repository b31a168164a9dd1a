//! JSON patch (RFC 6902): add, remove, replace, move, copy and test, JSON
//! pointers with `~0`/`~1` escapes and the `-` end-of-array index. The
//! operations run on a copy, so a failing one (a `test` included) changes
//! nothing.

use serde_json::Value;

use super::PatchError;

fn does_not_apply(msg: impl Into<String>) -> PatchError {
    PatchError::DoesNotApply(msg.into())
}

/// The reference tokens of a JSON pointer, unescaped (`~1` → `/`, then
/// `~0` → `~`, in that order as RFC 6901 says).
fn tokens(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(vec![]);
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| does_not_apply(format!("invalid JSON pointer: {path:?}")))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// An array index token: decimal without leading zeros.
fn index(token: &str) -> Option<usize> {
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    if !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

fn child_mut<'a>(v: &'a mut Value, token: &str) -> Option<&'a mut Value> {
    match v {
        Value::Object(m) => m.get_mut(token),
        Value::Array(a) => index(token).and_then(|i| a.get_mut(i)),
        _ => None,
    }
}

fn parent_mut<'a>(
    doc: &'a mut Value,
    parents: &[String],
    path: &str,
) -> Result<&'a mut Value, PatchError> {
    let mut v = doc;
    for t in parents {
        v = child_mut(v, t)
            .ok_or_else(|| does_not_apply(format!("doc is missing path: {path:?}")))?;
    }
    Ok(v)
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), PatchError> {
    let toks = tokens(path)?;
    let Some((last, parents)) = toks.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(doc, parents, path)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                index(last).filter(|i| *i <= a.len()).ok_or_else(|| {
                    does_not_apply(format!(
                        "add operation does not apply: index out of range: {path:?}"
                    ))
                })?
            };
            a.insert(i, value);
        }
        _ => {
            return Err(does_not_apply(format!(
                "add operation does not apply: doc is missing path: {path:?}"
            )));
        }
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str, op: &str) -> Result<Value, PatchError> {
    let toks = tokens(path)?;
    let missing = || {
        does_not_apply(format!(
            "{op} operation does not apply: doc is missing path: {path:?}"
        ))
    };
    let Some((last, parents)) = toks.split_last() else {
        return Err(missing());
    };
    match parent_mut(doc, parents, path)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i = index(last).filter(|i| *i < a.len()).ok_or_else(missing)?;
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

fn get(doc: &Value, path: &str) -> Result<Value, PatchError> {
    let mut v = doc;
    for t in tokens(path)? {
        v = match v {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => index(&t).and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| does_not_apply(format!("doc is missing path: {path:?}")))?;
    }
    Ok(v.clone())
}

/// Applies the operations of `ops` to `target`, all or nothing.
pub fn apply(target: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let ops = ops.as_array().ok_or_else(|| {
        let found = match ops {
            Value::Object(_) => "object",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            _ => "null",
        };
        PatchError::Malformed(format!(
            "json: cannot unmarshal {found} into Go value of type jsonpatch.Patch"
        ))
    })?;
    if ops.iter().any(|op| !op.is_object()) {
        return Err(PatchError::Malformed(
            "json: cannot unmarshal array into Go value of type jsonpatch.Operation".into(),
        ));
    }
    let mut doc = target.clone();
    for op in ops {
        let kind = op["op"].as_str().unwrap_or_default();
        let path = op["path"]
            .as_str()
            .ok_or_else(|| does_not_apply(format!("{kind} operation missing path")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| does_not_apply(format!("{kind} operation missing value")))
        };
        let from = || {
            op["from"]
                .as_str()
                .ok_or_else(|| does_not_apply(format!("{kind} operation missing from")))
        };
        match kind {
            "add" => add(&mut doc, path, value()?)?,
            "remove" => {
                remove(&mut doc, path, kind)?;
            }
            "replace" => {
                let v = value()?;
                if path.is_empty() {
                    doc = v;
                } else {
                    remove(&mut doc, path, kind)?;
                    add(&mut doc, path, v)?;
                }
            }
            "move" => {
                let from = from()?;
                if path != from && path.starts_with(&format!("{from}/")) {
                    return Err(does_not_apply(format!(
                        "move operation does not apply: {from:?} is a prefix of {path:?}"
                    )));
                }
                let v = remove(&mut doc, from, kind)?;
                add(&mut doc, path, v)?;
            }
            "copy" => {
                let v = get(&doc, from()?)?;
                add(&mut doc, path, v)?;
            }
            "test" => {
                if get(&doc, path)? != value()? {
                    return Err(does_not_apply(format!(
                        "testing value {path} failed: test failed"
                    )));
                }
            }
            other => return Err(does_not_apply(format!("Unexpected kind: {other}"))),
        }
    }
    *target = doc;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_operation_and_escapes() {
        let mut d = json!({"a": [1, 2], "b": {"c": 1}, "m/n": {"x~y": 1}});
        let p = json!([
            {"op": "add", "path": "/a/-", "value": 3},
            {"op": "add", "path": "/a/0", "value": 0},
            {"op": "replace", "path": "/b/c", "value": 2},
            {"op": "test", "path": "/b/c", "value": 2},
            {"op": "copy", "from": "/b", "path": "/d"},
            {"op": "move", "from": "/m~1n/x~0y", "path": "/moved"},
            {"op": "remove", "path": "/a/1"},
            {"op": "test", "path": "/m~1n", "value": {}}
        ]);
        apply(&mut d, &p).unwrap();
        assert_eq!(
            d,
            json!({"a": [0, 2, 3], "b": {"c": 2}, "d": {"c": 2}, "m/n": {}, "moved": 1})
        );
    }

    #[test]
    fn failures_change_nothing() {
        let before = json!({"a": [1, 2], "b": {"c": 1}});
        for bad in [
            json!([{"op": "remove", "path": "/a/0"}, {"op": "remove", "path": "/zz"}]),
            json!([{"op": "replace", "path": "/b/c", "value": 5}, {"op": "test", "path": "/b/c", "value": 1}]),
            json!([{"op": "add", "path": "/a/9", "value": 1}]),
            json!([{"op": "add", "path": "/a/01", "value": 1}]),
            json!([{"op": "move", "from": "/b", "path": "/b/c/d"}]),
            json!([{"op": "frob", "path": "/a"}]),
            json!([{"op": "add", "path": "/x"}]),
        ] {
            let mut d = before.clone();
            let e = apply(&mut d, &bad).unwrap_err();
            assert!(matches!(e, PatchError::DoesNotApply(_)), "{bad}: {e:?}");
            assert_eq!(d, before);
        }
        let mut d = before.clone();
        assert!(matches!(
            apply(&mut d, &json!({"op": "add"})),
            Err(PatchError::Malformed(_))
        ));
    }
}
