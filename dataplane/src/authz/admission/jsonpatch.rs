//! RFC 6902 JSON Patch, as mutating webhooks return it.

use serde_json::Value;

fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| format!("invalid JSON pointer {pointer:?}"))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn parent<'a>(doc: &'a mut Value, toks: &[String]) -> Result<&'a mut Value, String> {
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| format!("path /{t} not found"))?,
            Value::Array(a) => {
                let i: usize = t
                    .parse()
                    .map_err(|_| format!("invalid array index {t:?}"))?;
                a.get_mut(i)
                    .ok_or_else(|| format!("array index {i} out of range"))?
            }
            _ => return Err(format!("cannot descend into /{t}")),
        };
    }
    Ok(cur)
}

fn get(doc: &Value, pointer: &str) -> Result<Value, String> {
    doc.pointer(pointer)
        .cloned()
        .ok_or_else(|| format!("path {pointer} not found"))
}

fn add(doc: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let toks = tokens(pointer)?;
    let Some((last, head)) = toks.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, head)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last
                    .parse()
                    .map_err(|_| format!("invalid array index {last:?}"))?;
                if i > a.len() {
                    return Err(format!("array index {i} out of range"));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(format!("cannot add at {pointer}")),
    }
    Ok(())
}

fn remove(doc: &mut Value, pointer: &str) -> Result<Value, String> {
    let toks = tokens(pointer)?;
    let Some((last, head)) = toks.split_last() else {
        return Err("cannot remove the whole document".into());
    };
    match parent(doc, head)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| format!("path {pointer} not found")),
        Value::Array(a) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid array index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("array index {i} out of range"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("path {pointer} not found")),
    }
}

/// Applies `patch` (an array of operations) to `doc`; on error `doc` is unchanged.
pub fn apply(doc: &Value, patch: &Value) -> Result<Value, String> {
    let ops = patch.as_array().ok_or("a JSON patch must be an array")?;
    let mut out = doc.clone();
    for op in ops {
        let s = |k: &str| op.get(k).and_then(Value::as_str);
        let path = s("path").ok_or("operation without path")?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| "operation without value".to_owned())
        };
        match s("op").unwrap_or("") {
            "add" => add(&mut out, path, value()?)?,
            "remove" => {
                remove(&mut out, path)?;
            }
            "replace" => {
                remove(&mut out, path)?;
                add(&mut out, path, value()?)?;
            }
            "move" => {
                let v = remove(&mut out, s("from").ok_or("move without from")?)?;
                add(&mut out, path, v)?;
            }
            "copy" => {
                let v = get(&out, s("from").ok_or("copy without from")?)?;
                add(&mut out, path, v)?;
            }
            "test" => {
                if get(&out, path)? != value()? {
                    return Err(format!("test failed at {path}"));
                }
            }
            other => return Err(format!("unknown patch operation {other:?}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc6902_operations() {
        let doc = json!({"metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c"}]}});
        let p = json!([
            {"op":"add","path":"/metadata/labels/b~1c","value":"2"},
            {"op":"replace","path":"/metadata/labels/a","value":"x"},
            {"op":"add","path":"/spec/containers/-","value":{"name":"side"}},
            {"op":"copy","from":"/metadata/labels/a","path":"/metadata/annotations"},
            {"op":"move","from":"/metadata/annotations","path":"/metadata/moved"},
            {"op":"remove","path":"/spec/containers/0"},
            {"op":"test","path":"/spec/containers/0/name","value":"side"}
        ]);
        let out = apply(&doc, &p).unwrap();
        assert_eq!(
            out,
            json!({"metadata":{"labels":{"a":"x","b/c":"2"},"moved":"x"},"spec":{"containers":[{"name":"side"}]}})
        );
        assert!(apply(&doc, &json!([{"op":"remove","path":"/nope"}])).is_err());
        assert!(
            apply(
                &doc,
                &json!([{"op":"test","path":"/metadata/labels/a","value":"2"}])
            )
            .is_err()
        );
    }
}
