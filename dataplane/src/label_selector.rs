//! Label selectors, in both their forms: the string of `?labelSelector=`
//! (`app=web,tier in (a,b),!canary`), parsed and refused as kube-apiserver
//! does, and the `metav1.LabelSelector` objects of specs, webhooks and
//! policies. One matcher serves the API, the controllers and authorization.

use serde_json::Value;

use crate::error::ApiError;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
    Gt(i64),
    Lt(i64),
}

/// A parsed `labelSelector`; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<(String, LabelOp)>,
}

fn bad_label(msg: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("unable to parse requirement: {msg}"))
}

fn valid_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn valid_label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    }) && !name.is_empty()
        && valid_label_value(name)
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

impl LabelSelector {
    /// Parses a selector such as `app=web,tier in (a,b),!legacy`.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self { requirements });
        }
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad_label("found '', expected: identifier"));
            }
            let (key, op) = if let Some(key) = part.strip_prefix('!') {
                (key.trim().to_owned(), LabelOp::NotExists)
            } else if let Some((k, v)) = part.split_once("!=") {
                (k.trim().to_owned(), LabelOp::NotEq(v.trim().to_owned()))
            } else if let Some((k, v)) = part.split_once("==") {
                (k.trim().to_owned(), LabelOp::Eq(v.trim().to_owned()))
            } else if let Some((k, v)) = part.split_once('=') {
                (k.trim().to_owned(), LabelOp::Eq(v.trim().to_owned()))
            } else if let Some((k, v)) = part.split_once('>') {
                let n = v.trim().parse().map_err(|_| {
                    bad_label(format!(
                        "for 'gt', 'lt' operators, the value must be an integer: {v}"
                    ))
                })?;
                (k.trim().to_owned(), LabelOp::Gt(n))
            } else if let Some((k, v)) = part.split_once('<') {
                let n = v.trim().parse().map_err(|_| {
                    bad_label(format!(
                        "for 'gt', 'lt' operators, the value must be an integer: {v}"
                    ))
                })?;
                (k.trim().to_owned(), LabelOp::Lt(n))
            } else if let Some(open) = part.find('(') {
                let head: Vec<&str> = part[..open].split_whitespace().collect();
                let inner = part[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| bad_label(format!("found '{part}', expected: ')'")))?;
                let values: Vec<String> = inner
                    .split(',')
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .collect();
                match head.as_slice() {
                    [k, "in"] => ((*k).to_owned(), LabelOp::In(values)),
                    [k, "notin"] => ((*k).to_owned(), LabelOp::NotIn(values)),
                    _ => {
                        return Err(bad_label(format!(
                            "found '{part}', expected: in, notin, =, ==, !=, gt, lt"
                        )));
                    }
                }
            } else {
                (part.to_owned(), LabelOp::Exists)
            };
            if !valid_label_key(&key) {
                return Err(bad_label(format!(
                    "key: Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                )));
            }
            let values: Vec<&String> = match &op {
                LabelOp::Eq(v) | LabelOp::NotEq(v) => vec![v],
                LabelOp::In(vs) | LabelOp::NotIn(vs) => vs.iter().collect(),
                _ => vec![],
            };
            if let Some(bad) = values.into_iter().find(|v| !valid_label_value(v)) {
                return Err(bad_label(format!(
                    "values[0][{key}]: Invalid value: \"{bad}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                )));
            }
            requirements.push((key, op));
        }
        Ok(Self { requirements })
    }

    /// Whether it selects nothing out (no requirement).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), as
    /// upstream's `LabelSelectorAsSelector`; `None` when an operator is
    /// unknown or a value is not a string. Null selects everything.
    pub fn from_label_selector(v: &Value) -> Option<Self> {
        let mut requirements = Vec::new();
        if let Some(m) = v["matchLabels"].as_object() {
            for (k, val) in m {
                requirements.push((k.clone(), LabelOp::Eq(val.as_str()?.to_owned())));
            }
        }
        for e in v["matchExpressions"].as_array().into_iter().flatten() {
            let values = || -> Option<Vec<String>> {
                e["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| x.as_str().map(str::to_owned))
                    .collect()
            };
            let op = match e["operator"].as_str()? {
                "In" => LabelOp::In(values()?),
                "NotIn" => LabelOp::NotIn(values()?),
                "Exists" => LabelOp::Exists,
                "DoesNotExist" => LabelOp::NotExists,
                _ => return None,
            };
            requirements.push((e["key"].as_str()?.to_owned(), op));
        }
        Some(Self { requirements })
    }

    /// Whether `object`'s `metadata.labels` satisfy every requirement.
    pub fn selects(&self, object: &Value) -> bool {
        self.matches_labels(&object["metadata"]["labels"])
    }

    /// Whether `labels` (a JSON map, or null) satisfy every requirement.
    pub fn matches_labels(&self, labels: &Value) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.get(key).and_then(Value::as_str);
            match op {
                LabelOp::Eq(v) => value == Some(v.as_str()),
                LabelOp::NotEq(v) => value != Some(v.as_str()),
                LabelOp::In(vs) => value.is_some_and(|x| vs.iter().any(|v| v == x)),
                LabelOp::NotIn(vs) => value.is_none_or(|x| !vs.iter().any(|v| v == x)),
                LabelOp::Exists => value.is_some(),
                LabelOp::NotExists => value.is_none(),
                LabelOp::Gt(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x > *n),
                LabelOp::Lt(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x < *n),
            }
        })
    }
}

/// Whether `labels` satisfy the `metav1.LabelSelector` `selector`: an empty
/// selector matches everything, an invalid one nothing.
pub fn matches(selector: &Value, labels: &Value) -> bool {
    LabelSelector::from_label_selector(selector).is_some_and(|s| s.matches_labels(labels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front", "n": "5"}));
        let yes = [
            "app=web",
            "app==web",
            "app!=db",
            "tier in (front, back)",
            "tier notin (back)",
            "app",
            "!legacy",
            "app=web,tier in (front,back)",
            "n>3",
            "n<6",
            "",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().selects(&o), "{s}");
        }
        let no = [
            "app=db",
            "app!=web",
            "tier in (back)",
            "tier notin (front)",
            "legacy",
            "!app",
            "n>5",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().selects(&o), "{s}");
        }
        for bad in ["app=we b!", "a b", "x in (a", "=web", "n>x"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn label_selector_objects() {
        let l = json!({"a":"1","b":"2"});
        let yes = [
            json!({}),
            json!(null),
            json!({"matchLabels":{"a":"1"}}),
            json!({"matchExpressions":[{"key":"b","operator":"In","values":["2","3"]}]}),
            json!({"matchExpressions":[{"key":"c","operator":"NotIn","values":["2"]}]}),
            json!({"matchExpressions":[{"key":"a","operator":"Exists"}]}),
            json!({"matchExpressions":[{"key":"z","operator":"DoesNotExist"}]}),
        ];
        for s in yes {
            assert!(matches(&s, &l), "{s}");
        }
        let no = [
            json!({"matchLabels":{"a":"2"}}),
            json!({"matchExpressions":[{"key":"b","operator":"NotIn","values":["2"]}]}),
            json!({"matchExpressions":[{"key":"a","operator":"Bogus"}]}),
        ];
        for s in no {
            assert!(!matches(&s, &l), "{s}");
        }
        assert!(!matches(&json!({"matchLabels":{"a":"1"}}), &json!(null)));
    }
}
