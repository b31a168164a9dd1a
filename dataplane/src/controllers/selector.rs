//! Label selectors: `metav1.LabelSelector` objects and the string form
//! (`app=web,tier in (a,b),!canary`), matched against an object's labels.

use serde_json::Value;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key in (values)` / `key=value`.
    In(String, Vec<String>),
    /// `key notin (values)` / `key!=value`.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A conjunction of requirements; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// All must hold.
    pub requirements: Vec<Requirement>,
}

impl Selector {
    /// From a `metav1.LabelSelector`; `None` when an operator is unknown.
    /// A missing selector (null) selects everything.
    pub fn from_label_selector(v: &Value) -> Option<Self> {
        let mut requirements = Vec::new();
        if let Some(m) = v["matchLabels"].as_object() {
            for (k, val) in m {
                requirements.push(Requirement::In(k.clone(), vec![val.as_str()?.to_owned()]));
            }
        }
        if let Some(list) = v["matchExpressions"].as_array() {
            for e in list {
                let key = e["key"].as_str()?.to_owned();
                let values: Vec<String> = e["values"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                requirements.push(match e["operator"].as_str()? {
                    "In" => Requirement::In(key, values),
                    "NotIn" => Requirement::NotIn(key, values),
                    "Exists" => Requirement::Exists(key),
                    "DoesNotExist" => Requirement::DoesNotExist(key),
                    _ => return None,
                });
            }
        }
        Some(Self { requirements })
    }

    /// From the string form used in `labelSelector=`; `None` when malformed.
    pub fn parse(s: &str) -> Option<Self> {
        let mut requirements = Vec::new();
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some(key) = part.strip_prefix('!') {
                requirements.push(Requirement::DoesNotExist(key.trim().to_owned()));
            } else if let Some((k, v)) = part.split_once("!=") {
                requirements.push(Requirement::NotIn(k.trim().into(), vec![v.trim().into()]));
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                requirements.push(Requirement::In(k.trim().into(), vec![v.trim().into()]));
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                requirements.push(Requirement::NotIn(k.trim().into(), set(rest)?));
            } else if let Some((k, rest)) = part.split_once(" in ") {
                requirements.push(Requirement::In(k.trim().into(), set(rest)?));
            } else {
                requirements.push(Requirement::Exists(part.to_owned()));
            }
        }
        Some(Self { requirements })
    }

    /// Whether `labels` (a JSON map, or null) satisfy every requirement.
    pub fn matches(&self, labels: &Value) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::In(k, vs) => labels[k]
                .as_str()
                .is_some_and(|v| vs.iter().any(|x| x == v)),
            Requirement::NotIn(k, vs) => labels[k]
                .as_str()
                .is_none_or(|v| !vs.iter().any(|x| x == v)),
            Requirement::Exists(k) => labels.get(k).is_some(),
            Requirement::DoesNotExist(k) => labels.get(k).is_none(),
        })
    }

    /// Whether it selects nothing in particular (an empty selector).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
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

fn set(s: &str) -> Option<Vec<String>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|x| x.trim().to_owned()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_match() {
        let l = json!({"app":"web","tier":"a"});
        let s = Selector::parse("app=web,tier in (a,b),!canary").unwrap();
        assert!(s.matches(&l));
        assert!(!Selector::parse("app!=web").unwrap().matches(&l));
        let s = Selector::from_label_selector(&json!({"matchLabels":{"app":"web"},
            "matchExpressions":[{"key":"tier","operator":"NotIn","values":["b"]}]}))
        .unwrap();
        assert!(s.matches(&l));
        assert!(!s.matches(&json!(null)));
    }
}
