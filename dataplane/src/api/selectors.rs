//! Label and field selectors, parsed and matched as kube-apiserver does.

use serde_json::Value;

use crate::error::ApiError;
pub use crate::label_selector::LabelSelector;

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
        Self::parse_with(s, group, kind, None)
    }

    /// As [`FieldSelector::parse`], for a custom resource when `custom` has
    /// its version's `selectableFields` (as `spec.color`).
    pub fn parse_with(
        s: &str,
        group: &str,
        kind: &str,
        custom: Option<&[String]>,
    ) -> Result<Self, ApiError> {
        let extra = custom.unwrap_or_default();
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
                && !extra.iter().any(|f| f == field)
            {
                // Kinds with field label conversions of their own (and
                // custom resources) refuse in their words; the others fall
                // back to upstream's default metadata-only conversion.
                if custom.is_some() || !kind_fields(group, kind).is_empty() {
                    return Err(ApiError::BadRequest(format!(
                        "field label not supported: {field}"
                    )));
                }
                return Err(ApiError::BadRequest(format!(
                    "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
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

    /// Whether an object whose JSON is `json` may satisfy every term: false
    /// only when the value an equality term wants appears nowhere in it, so
    /// a list over encoded objects decodes only the candidates.
    pub fn may_match_json(&self, json: &[u8]) -> bool {
        self.terms.iter().all(|(field, eq, want)| {
            // An empty value matches an absent field, these two match an
            // absent one as `false`, and escaped text is not found verbatim.
            let unsure = want.is_empty()
                || matches!(field.as_str(), "spec.unschedulable" | "spec.hostNetwork")
                || want.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
            !*eq || unsure || memchr::memmem::find(json, want.as_bytes()).is_some()
        })
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

    #[test]
    fn custom_selectable_fields_select() {
        let extra = ["host".to_owned(), "spec.color".to_owned()];
        let s = FieldSelector::parse_with("host=h1,spec.color!=red", "g", "Widget", Some(&extra))
            .unwrap();
        assert!(s.matches(&json!({"host": "h1", "spec": {"color": "blue"}})));
        assert!(!s.matches(&json!({"host": "h2", "spec": {"color": "blue"}})));
        let e = FieldSelector::parse_with("spec.size=1", "g", "Widget", Some(&extra)).unwrap_err();
        assert_eq!(e.to_string(), "field label not supported: spec.size");
    }

    #[test]
    fn encoded_objects_are_ruled_out_only_when_they_cannot_match() {
        let event = json!({"metadata": {"name": "e", "namespace": "ns"}, "count": 3,
            "involvedObject": {"kind": "Pod", "name": "web-1", "uid": "u-1"}});
        let json = serde_json::to_vec(&event).unwrap();
        let parse = |s| FieldSelector::parse(s, "", "Event").unwrap();
        for s in [
            "involvedObject.name=web-1,involvedObject.uid=u-1",
            "involvedObject.name!=web-2",
            "involvedObject.name=web-2",
            "involvedObject.fieldPath=",
            "involvedObject.name=we\"b",
        ] {
            let sel = parse(s);
            assert!(
                sel.may_match_json(&json) || !sel.matches(&event),
                "{s}: ruled out, yet it matches"
            );
        }
        assert!(!parse("involvedObject.name=web-2").may_match_json(&json));
        assert!(!parse("involvedObject.uid=u-2,involvedObject.name=web-1").may_match_json(&json));
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
