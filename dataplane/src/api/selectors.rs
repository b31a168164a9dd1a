//! Label and field selectors, parsed and matched as kube-apiserver does.

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

    /// Whether `object`'s labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
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

/// A parsed `fieldSelector`; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

/// The fields upstream lets a kind be selected by, besides `metadata.name` and
/// `metadata.namespace`.
fn kind_fields(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        // events.k8s.io names them after its own fields ([`storage_field`]).
        ("events.k8s.io", "Event") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "source",
            "type",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "Secret") => &["type"],
        ("", "Namespace") => &["status.phase"],
        ("", "Node") => &["spec.unschedulable"],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => &["status.replicas"],
        ("", "Service") => &["spec.clusterIP", "spec.type"],
        ("batch", "Job") => &["status.successful"],
        ("certificates.k8s.io", "CertificateSigningRequest") => &["spec.signerName"],
        _ => &[],
    }
}

/// The stored object's field a selectable field of `group`/`kind` reads:
/// events.k8s.io Events are stored as core Events, so their labels map to
/// the core names (upstream's `AddFieldLabelConversionsForEvent`).
fn storage_field<'a>(group: &str, kind: &str, field: &'a str) -> std::borrow::Cow<'a, str> {
    if (group, kind) != ("events.k8s.io", "Event") {
        return field.into();
    }
    match field {
        "reportingController" => "reportingComponent".into(),
        f => match f.strip_prefix("regarding.") {
            Some(rest) => format!("involvedObject.{rest}").into(),
            None => f.into(),
        },
    }
}

/// The value a field selector compares for `field` of `object`, as a string.
fn field_value(object: &Value, field: &str) -> String {
    let path: Vec<&str> = match field {
        // upstream: the source component, else the reporting controller.
        "source"
            if object["source"]["component"]
                .as_str()
                .is_none_or(str::is_empty) =>
        {
            vec!["reportingComponent"]
        }
        "source" => vec!["source", "component"],
        "status.podIPs" => vec!["status", "podIP"],
        f => f.split('.').collect(),
    };
    let mut v = object;
    for p in path {
        v = &v[p];
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null if field == "spec.unschedulable" || field == "spec.hostNetwork" => {
            "false".into()
        }
        _ => String::new(),
    }
}

impl FieldSelector {
    /// Parses `a=b,c!=d` and checks every field is supported for the kind.
    pub fn parse(s: &str, group: &str, kind: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self { terms });
        }
        for part in s.split(',') {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::BadRequest(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace")
                && !kind_fields(group, kind).contains(&field)
            {
                return Err(ApiError::BadRequest(format!(
                    "field label not supported: {field}"
                )));
            }
            let field = storage_field(group, kind, field).into_owned();
            terms.push((field, eq, value.trim().to_owned()));
        }
        Ok(Self { terms })
    }

    /// Whether it has no term.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The name a `metadata.name=` term pins, if any.
    pub fn name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, eq, _)| *eq && f == "metadata.name")
            .map(|(_, _, v)| v.as_str())
    }

    /// Whether `object` satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, eq, want)| {
            let got = match field.as_str() {
                "metadata.name" => object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                "metadata.namespace" => object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                f => field_value(object, f),
            };
            (got == *want) == *eq
        })
    }
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
            assert!(LabelSelector::parse(s).unwrap().matches(&o), "{s}");
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
            assert!(!LabelSelector::parse(s).unwrap().matches(&o), "{s}");
        }
        for bad in ["app=we b!", "a b", "x in (a", "=web", "n>x"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors_per_kind() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let s = FieldSelector::parse(
            "status.phase=Running,spec.nodeName=n1,metadata.name=p",
            "",
            "Pod",
        )
        .unwrap();
        assert!(s.matches(&pod));
        assert_eq!(s.name(), Some("p"));
        assert!(
            !FieldSelector::parse("status.phase!=Running", "", "Pod")
                .unwrap()
                .matches(&pod)
        );
        let err = FieldSelector::parse("spec.foo=bar", "", "Pod").unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.foo");
        assert!(FieldSelector::parse("status.phase=Running", "", "ConfigMap").is_err());
        let ev = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "type": "Normal", "source": {"component": "kubelet"}});
        let s = FieldSelector::parse(
            "involvedObject.kind=Pod,involvedObject.name=p,type=Normal,source=kubelet",
            "",
            "Event",
        )
        .unwrap();
        assert!(s.matches(&ev));
        // events.k8s.io selects the same stored Events by its own names.
        let s = FieldSelector::parse(
            "regarding.kind=Pod,regarding.name=p,reportingController=kubelet,type=Normal",
            "events.k8s.io",
            "Event",
        )
        .unwrap();
        let mut ev = ev;
        ev["reportingComponent"] = json!("kubelet");
        assert!(s.matches(&ev));
        let err =
            FieldSelector::parse("involvedObject.kind=Pod", "events.k8s.io", "Event").unwrap_err();
        assert_eq!(
            err.to_string(),
            "field label not supported: involvedObject.kind"
        );
        // `source` falls back to the reporting controller.
        let v1_made = json!({"metadata": {"name": "e"}, "source": {}, "reportingComponent": "ctl"});
        assert!(
            FieldSelector::parse("source=ctl", "", "Event")
                .unwrap()
                .matches(&v1_made)
        );
    }
}
