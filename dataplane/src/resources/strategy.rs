//! What a type's own strategy does to a write beyond the generic checks,
//! asked of the type by the generic handlers (no per-kind handler code):
//!
//! - custom resources: defaulting, pruning, structural-schema validation, and
//!   the storage version's `apiVersion` on write / the served one on read
//!   (`conversion: None`);
//! - events.k8s.io/v1 Events: stored as core/v1 Events and served back
//!   converted ([`super::events`]);
//! - CustomResourceDefinition: defaulting and validation (its first DELETE
//!   is the store's [`crate::store::deletion`] plan).

use std::borrow::Cow;

use serde_json::{Value, json};

use super::custom::{self, CustomSpec};
use super::{ResourceType, cel_rules, crd_validation, events, schema};
use crate::error::{ApiError, Cause, Target};

/// How unknown fields of a body are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownFields {
    /// Dropped silently (patches, `Ignore`).
    #[default]
    Drop,
    /// Dropped, each with a warning (`Warn`, the default).
    Warn,
    /// Refused with upstream's strict decoding error (`Strict`).
    Refuse,
}

impl UnknownFields {
    /// From the `fieldValidation` query parameter of a create or update.
    pub fn from_param(value: Option<&str>) -> Self {
        match value {
            Some("Strict") => UnknownFields::Refuse,
            Some("Ignore") => UnknownFields::Drop,
            _ => UnknownFields::Warn,
        }
    }
}

fn invalid(rt: &ResourceType, object: &Value, causes: Vec<Cause>) -> ApiError {
    invalid_as(object, &rt.group, &rt.kind, causes)
}

/// An Invalid error naming `object` as a `kind` of `group`: upstream
/// names the group-kind (`CronTab.stable.example.com "x" is invalid`).
fn invalid_as(object: &Value, group: &str, kind: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
        },
        kind: if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        },
        causes,
    }
}

/// Refuses a PUT of a custom resource without `metadata.resourceVersion`:
/// custom resources allow no unconditional update. Upstream names the
/// resource, not the kind, in this one error.
pub fn require_resource_version(rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let given = object["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|v| !v.is_empty());
    if rt.custom.is_none() || given {
        return Ok(());
    }
    let cause = Cause {
        reason: "FieldValueInvalid".into(),
        message: "Invalid value: 0: must be specified for an update".into(),
        field: "metadata.resourceVersion".into(),
    };
    Err(invalid_as(object, &rt.group, &rt.plural, vec![cause]))
}

/// Runs before a new object is stored; the warnings to answer with.
pub fn prepare_create(
    rt: &ResourceType,
    object: &mut Value,
    unknown: UnknownFields,
) -> Result<Vec<String>, ApiError> {
    prepare(rt, object, None, unknown)
}

/// Runs before a changed object is stored (`old` as stored); the warnings
/// to answer with.
pub fn prepare_update(
    rt: &ResourceType,
    object: &mut Value,
    old: &Value,
    unknown: UnknownFields,
) -> Result<Vec<String>, ApiError> {
    prepare(rt, object, Some(old), unknown)
}

fn prepare(
    rt: &ResourceType,
    object: &mut Value,
    old: Option<&Value>,
    unknown: UnknownFields,
) -> Result<Vec<String>, ApiError> {
    if let Some(spec) = &rt.custom {
        return prepare_custom(rt, spec, object, old, unknown);
    }
    if events::is_events_view(rt) {
        let core = events::to_core(object);
        if old.is_none() {
            events::validate_create(&core)?;
        }
        *object = core;
        return Ok(Vec::new());
    }
    if custom::is_crd(rt) {
        crd_validation::apply_defaults(object);
        let causes = crd_validation::validate(object, old);
        if !causes.is_empty() {
            return Err(invalid(rt, object, causes));
        }
    }
    Ok(Vec::new())
}

fn prepare_custom(
    rt: &ResourceType,
    spec: &CustomSpec,
    object: &mut Value,
    old: Option<&Value>,
    unknown: UnknownFields,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    if spec.schema.is_object() {
        schema::apply_defaults(&spec.schema, object);
        let mut removed = Vec::new();
        schema::prune(&spec.schema, object, "", &mut removed);
        let unknown_fields = removed
            .iter()
            .map(|f| format!("unknown field {}", crate::api::options::go_quote(f)));
        match unknown {
            UnknownFields::Refuse if !removed.is_empty() => {
                return Err(ApiError::BadRequest(format!(
                    "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
                    unknown_fields.collect::<Vec<_>>().join(", "),
                    kind = rt.kind,
                    v = rt.version,
                )));
            }
            UnknownFields::Warn => warnings.extend(unknown_fields),
            _ => {}
        }
        let mut causes = Vec::new();
        schema::validate(&spec.schema, object, "", &mut causes);
        if let Some(paths) = &spec.scale {
            scale_causes(paths, object, &mut causes);
        }
        // Upstream skips the CEL rules once the schema found a value of the
        // wrong shape, and says so.
        let blocking = causes.iter().any(|c| {
            matches!(
                c.reason.as_str(),
                "FieldValueNotSupported"
                    | "FieldValueRequired"
                    | "FieldValueTooLong"
                    | "FieldValueTooMany"
                    | "FieldValueTypeInvalid"
            )
        });
        cel_rules::validate(&spec.schema, object, old, "", !blocking, &mut causes);
        if blocking {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
                field: "<nil>".into(),
            });
        }
        if !causes.is_empty() {
            return Err(invalid(rt, object, causes));
        }
    }
    object["apiVersion"] = json!(format!("{}/{}", rt.group, spec.storage_version));
    Ok(warnings)
}

/// The `scale` subresource's own checks of the replica counts and selector
/// it reads (upstream's `ValidateScaleSpec` and `ValidateScaleStatus`).
fn scale_causes(paths: &custom::ScalePaths, object: &Value, out: &mut Vec<Cause>) {
    let counts = [Some(&paths.spec_replicas), Some(&paths.status_replicas)];
    for path in counts.into_iter().flatten() {
        let message = match custom::get_path(object, path) {
            None | Some(Value::Null) => continue,
            Some(Value::Number(n)) => match n.as_i64() {
                Some(r) if r < 0 => (r, "should be a non-negative integer".to_owned()),
                Some(r) if r > i64::from(i32::MAX) => {
                    (r, format!("should be less than or equal to {}", i32::MAX))
                }
                Some(_) => continue,
                None => (
                    0,
                    format!("{path} accessor error: {n} is of the type float64, expected int64"),
                ),
            },
            Some(v) => (
                0,
                format!(
                    "{path} accessor error: {} is of the type {}, expected int64",
                    crate::api::field_validation::go_format(v),
                    go_type(v)
                ),
            ),
        };
        out.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {}", message.0, message.1),
            field: path.clone(),
        });
    }
    if let Some(path) = &paths.label_selector
        && let Some(v) = custom::get_path(object, path).filter(|v| !v.is_null() && !v.is_string())
    {
        out.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: \"\": {path} accessor error: {} is of the type {}, expected string",
                crate::api::field_validation::go_format(v),
                go_type(v)
            ),
            field: path.clone(),
        });
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// An object as served at `rt`'s version: custom resources are stored in
/// the storage version and served in any (`conversion: None` rewrites only
/// `apiVersion`).
pub fn present<'a>(rt: &ResourceType, object: &'a Value) -> Cow<'a, Value> {
    if events::is_events_view(rt) {
        if object["apiVersion"] == "events.k8s.io/v1" || !object.is_object() {
            return Cow::Borrowed(object);
        }
        return Cow::Owned(events::to_events_v1(object));
    }
    let Some(spec) = &rt.custom else {
        return Cow::Borrowed(object);
    };
    let api_version = rt.api_version();
    let same_version = object["apiVersion"].as_str() == Some(api_version.as_str());
    if (same_version && !spec.defaults) || !object.is_object() {
        return Cow::Borrowed(object);
    }
    let mut o = object.clone();
    o["apiVersion"] = json!(api_version);
    // Upstream defaults what it reads: a default added to the schema later
    // shows on objects stored before it.
    if spec.defaults {
        schema::apply_defaults(&spec.schema, &mut o);
    }
    Cow::Owned(o)
}

/// Whether `present` may change objects of `rt` (lets hot paths skip it).
pub fn converts(rt: &ResourceType) -> bool {
    events::is_events_view(rt)
        || rt
            .custom
            .as_ref()
            .is_some_and(|c| c.storage_version != rt.version || c.defaults)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": { "name": "crontabs.stable.example.com" },
            "spec": { "group": "stable.example.com", "scope": "Namespaced",
                "names": { "plural": "crontabs", "kind": "CronTab" },
                "versions": [
                    { "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": {
                        "type": "object", "properties": { "spec": { "type": "object",
                            "properties": { "replicas": { "type": "integer", "minimum": 0, "default": 1 } } } } } } },
                    { "name": "v2", "served": true, "storage": false, "schema": { "openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }
                ] }
        })
    }

    #[test]
    fn custom_resources_are_defaulted_pruned_validated_and_stored_in_the_storage_version() {
        let types = custom::types_of(&crd());
        let v1 = &types[0];
        let mut o = json!({ "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": { "name": "a" }, "spec": { "junk": 1 } });
        prepare_create(v1, &mut o, UnknownFields::Drop).unwrap();
        assert_eq!(o["spec"], json!({ "replicas": 1 }));
        let mut strict = json!({ "metadata": { "name": "a" }, "spec": { "junk": 1 } });
        let e = prepare_create(v1, &mut strict, UnknownFields::Refuse).unwrap_err();
        assert!(e.to_string().contains("unknown field \"spec.junk\""), "{e}");
        let mut bad = json!({ "metadata": { "name": "a" }, "spec": { "replicas": -1 } });
        let e = prepare_create(v1, &mut bad, UnknownFields::Drop).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CronTab.stable.example.com \"a\" is invalid: spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        );
        let v2 = &types[1];
        let mut o2 =
            json!({ "apiVersion": "stable.example.com/v2", "metadata": { "name": "b" }, "x": 1 });
        prepare_create(v2, &mut o2, UnknownFields::Refuse).unwrap();
        assert_eq!(o2["apiVersion"], "stable.example.com/v1");
        assert_eq!(present(v2, &o2)["apiVersion"], "stable.example.com/v2");
        // v1's schema has a default: objects read are defaulted, as ones
        // stored before the default was added.
        assert!(converts(v2) && converts(v1));
        let stored = json!({ "apiVersion": "stable.example.com/v1", "metadata": { "name": "c" }, "spec": {} });
        assert_eq!(present(v1, &stored)["spec"], json!({ "replicas": 1 }));
    }
}
