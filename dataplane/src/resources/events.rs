//! `events.k8s.io/v1` Events: a second view of the core/v1 Events' storage,
//! as kube-apiserver serves them (one etcd resource, `events`, converted on
//! the way in and out). An Event created through either API is listed and
//! watched through both.
//!
//! The field mapping is upstream's conversion: `involvedObject` ↔
//! `regarding`, `message` ↔ `note`, `source` ↔ `deprecatedSource`,
//! `reportingComponent` ↔ `reportingController`, `firstTimestamp`/
//! `lastTimestamp`/`count` ↔ the `deprecated*` fields; the rest keep their
//! names. Objects are stored in the core form.

use serde_json::{Map, Value, json};

use super::ResourceType;
use crate::error::{ApiError, Cause, Target};

/// The API group of the second view.
const GROUP: &str = "events.k8s.io";

/// The core field ↔ events.k8s.io field pairs renamed by the conversion.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("reportingComponent", "reportingController"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Fields both forms share under one name.
const SHARED: &[&str] = &[
    "metadata",
    "eventTime",
    "series",
    "reportingInstance",
    "action",
    "reason",
    "related",
    "type",
];

/// Whether `rt` is the events.k8s.io view of core Events.
pub fn is_events_view(rt: &ResourceType) -> bool {
    rt.group == GROUP && rt.kind == "Event"
}

/// The store resource of `rt` when it shares another type's storage.
pub fn shared_storage(rt: &ResourceType) -> Option<&'static str> {
    is_events_view(rt).then_some("events")
}

/// A stored (core/v1) Event as events.k8s.io/v1 serves it.
pub fn to_events_v1(core: &Value) -> Value {
    convert(core, false, "events.k8s.io/v1")
}

/// An events.k8s.io/v1 Event in its stored (core/v1) form.
pub fn to_core(v1: &Value) -> Value {
    convert(v1, true, "v1")
}

fn convert(from: &Value, to_core: bool, api_version: &str) -> Value {
    let Some(src) = from.as_object() else {
        return from.clone();
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!("Event"));
    for field in SHARED {
        if let Some(v) = src.get(*field).filter(|v| !is_empty(v)) {
            out.insert((*field).into(), v.clone());
        }
    }
    for (core, v1) in RENAMED {
        let (from_name, to_name) = if to_core { (v1, core) } else { (core, v1) };
        if let Some(v) = src.get(*from_name).filter(|v| !is_empty(v)) {
            out.insert((*to_name).into(), v.clone());
        }
    }
    // Fields upstream's types always serialize (structs and non-omitempty times).
    let always: &[(&str, Value)] = if to_core {
        &[
            ("involvedObject", json!({})),
            ("source", json!({})),
            ("firstTimestamp", Value::Null),
            ("lastTimestamp", Value::Null),
            ("eventTime", Value::Null),
        ]
    } else {
        &[
            ("regarding", json!({})),
            ("deprecatedSource", json!({})),
            ("deprecatedFirstTimestamp", Value::Null),
            ("deprecatedLastTimestamp", Value::Null),
            ("eventTime", Value::Null),
        ]
    };
    for (name, default) in always {
        out.entry(*name).or_insert_with(|| default.clone());
    }
    Value::Object(out)
}

/// Upstream's `omitempty`: empty strings, zero counts and nulls are dropped.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

/// Upstream's checks of an Event created through events.k8s.io/v1 (its
/// stored form `core`): the strict rules of `ValidateEventCreate`, on top of
/// the ones every Event with an `eventTime` passes.
pub fn validate_create(core: &Value) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let text = |f: &str| core[f].as_str().unwrap_or_default();
    let set = |f: &str| !is_empty(&core[f]);
    if let Some(series) = core.get("series").filter(|s| !s.is_null()) {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            causes.push(invalid("series.count", "should be at least 2"));
        }
        if is_empty(&series["lastObservedTime"]) {
            causes.push(required("series.lastObservedTime"));
        }
    }
    if !set("eventTime") {
        causes.push(required("eventTime"));
    }
    let ty = text("type");
    if ty != "Normal" && ty != "Warning" {
        causes.push(invalid("type", &format!("has invalid value: {ty}")));
    }
    for f in ["firstTimestamp", "lastTimestamp", "count"] {
        if set(f) {
            causes.push(invalid(f, "needs to be unset"));
        }
    }
    if !is_empty(&core["source"]["component"]) || !is_empty(&core["source"]["host"]) {
        causes.push(invalid("source", "needs to be unset"));
    }
    if set("eventTime") {
        let ns = core["metadata"]["namespace"].as_str().unwrap_or_default();
        if is_empty(&core["involvedObject"]["namespace"]) && ns != "default" && ns != "kube-system"
        {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"\": does not match event.namespace".into(),
                field: "involvedObject.namespace".into(),
            });
        }
        for (field, limit) in [
            ("reportingComponent", None),
            ("reportingInstance", Some(128)),
            ("action", Some(128)),
            ("reason", Some(128)),
        ] {
            let shown = if field == "reportingComponent" {
                "reportingController"
            } else {
                field
            };
            match (text(field).len(), limit) {
                (0, _) => causes.push(required(shown)),
                (n, Some(l)) if n > l => {
                    causes.push(invalid(shown, &format!("can have at most {l} characters")));
                }
                _ => {}
            }
        }
        if text("message").len() > 1024 {
            causes.push(invalid("message", "can have at most 1024 characters"));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    // The storage is core Events', so upstream names the core kind.
    Err(ApiError::Invalid {
        target: Target {
            name: core["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            group: String::new(),
            kind: "Event".into(),
        },
        kind: "Event".into(),
        causes,
    })
}

fn required(field: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field: field.into(),
    }
}

fn invalid(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"\": {detail}"),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core_event() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": { "name": "web.1", "namespace": "default", "resourceVersion": "7" },
            "involvedObject": { "kind": "Pod", "name": "web", "namespace": "default" },
            "reason": "Scheduled", "message": "Successfully assigned default/web to n1",
            "source": { "component": "default-scheduler" },
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1, "type": "Normal", "eventTime": null,
            "reportingComponent": "default-scheduler", "reportingInstance": "",
        })
    }

    #[test]
    fn core_events_read_as_events_v1_with_upstream_field_names() {
        let v1 = to_events_v1(&core_event());
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["regarding"]["name"], "web");
        assert_eq!(v1["note"], "Successfully assigned default/web to n1");
        assert_eq!(v1["deprecatedSource"]["component"], "default-scheduler");
        assert_eq!(v1["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(v1["deprecatedCount"], 1);
        assert_eq!(v1["reportingController"], "default-scheduler");
        assert!(v1.get("reportingInstance").is_none(), "empty is omitted");
        assert!(v1["eventTime"].is_null() && v1.get("eventTime").is_some());
        assert!(v1.get("message").is_none() && v1.get("involvedObject").is_none());
        assert_eq!(v1["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn the_conversion_round_trips() {
        let core = core_event();
        let back = to_core(&to_events_v1(&core));
        let mut expected = core.clone();
        expected
            .as_object_mut()
            .unwrap()
            .remove("reportingInstance");
        assert_eq!(back, expected);
        let v1 = json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": { "name": "x", "namespace": "default" },
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", "action": "Sync", "reason": "Synced", "note": "done",
            "type": "Normal", "regarding": { "kind": "Pod", "name": "p" },
            "series": { "count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z" } });
        let core = to_core(&v1);
        assert_eq!(core["message"], "done");
        assert_eq!(core["reportingComponent"], "example.com/ctl");
        assert_eq!(core["source"], json!({}));
        assert!(core["firstTimestamp"].is_null());
        assert_eq!(to_events_v1(&core), {
            let mut v = v1.clone();
            v["deprecatedSource"] = json!({});
            v["deprecatedFirstTimestamp"] = Value::Null;
            v["deprecatedLastTimestamp"] = Value::Null;
            v
        });
    }

    #[test]
    fn creates_through_events_v1_are_checked_strictly() {
        let e = validate_create(&to_core(&json!({
            "metadata": { "name": "x", "namespace": "default" },
            "note": "n", "deprecatedCount": 3, "type": "Odd",
        })))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Event \"x\" is invalid: [eventTime: Required value, type: Invalid value: \"\": has invalid value: Odd, count: Invalid value: \"\": needs to be unset]"
        );
        let e = validate_create(&to_core(&json!({
            "metadata": { "name": "x", "namespace": "default" },
            "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal",
        })))
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "reportingController: Required value, reportingInstance: Required value, action: Required value, reason: Required value"
            ),
            "{e}"
        );
    }
}
