//! What a type's own strategy does to a write beyond the generic checks,
//! asked of the type by the generic handlers (no per-kind handler code):
//!
//! - custom resources: defaulting, pruning, structural-schema validation, and
//!   the storage version's `apiVersion` on write / the served one on read
//!   (`conversion: None`);
//! - events.k8s.io/v1 Events: stored as core/v1 Events and served back
//!   converted ([`super::events`]);
//! - CustomResourceDefinition: defaulting and validation, and, on the first
//!   DELETE, the `customresourcecleanup.apiextensions.k8s.io` finalizer with a
//!   `Terminating` condition (the CRD controller then deletes its objects).

use std::borrow::Cow;

use serde_json::{Value, json};

use super::custom::{self, CLEANUP_FINALIZER, CustomSpec};
use super::{ResourceType, cel_rules, crd_validation, events, schema};
use crate::error::{ApiError, Cause, Target};

/// How unknown fields of a body are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownFields {
    /// Dropped silently (patches, `Ignore`, `Warn`).
    #[default]
    Drop,
    /// Refused with upstream's strict decoding error (`Strict`).
    Refuse,
}

impl UnknownFields {
    /// From the `fieldValidation` query parameter of a create or update.
    pub fn from_param(value: Option<&str>) -> Self {
        match value {
            Some("Strict") => UnknownFields::Refuse,
            _ => UnknownFields::Drop,
        }
    }
}

fn invalid(rt: &ResourceType, object: &Value, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            group: rt.group.clone(),
            kind: rt.kind.clone(),
        },
        // Upstream names the group-kind: `CronTab.stable.example.com "x" is invalid`.
        kind: if rt.group.is_empty() {
            rt.kind.clone()
        } else {
            format!("{}.{}", rt.kind, rt.group)
        },
        causes,
    }
}

/// Runs before a new object is stored.
pub fn prepare_create(
    rt: &ResourceType,
    object: &mut Value,
    unknown: UnknownFields,
) -> Result<(), ApiError> {
    prepare(rt, object, None, unknown)
}

/// Runs before a changed object is stored (`old` as stored).
pub fn prepare_update(
    rt: &ResourceType,
    object: &mut Value,
    old: &Value,
    unknown: UnknownFields,
) -> Result<(), ApiError> {
    prepare(rt, object, Some(old), unknown)
}

fn prepare(
    rt: &ResourceType,
    object: &mut Value,
    old: Option<&Value>,
    unknown: UnknownFields,
) -> Result<(), ApiError> {
    if let Some(spec) = &rt.custom {
        return prepare_custom(rt, spec, object, old, unknown);
    }
    if events::is_events_view(rt) {
        let core = events::to_core(object);
        if old.is_none() {
            events::validate_create(&core)?;
        }
        *object = core;
        return Ok(());
    }
    if custom::is_crd(rt) {
        crd_validation::apply_defaults(object);
        let causes = crd_validation::validate(object, old);
        if !causes.is_empty() {
            return Err(invalid(rt, object, causes));
        }
    }
    Ok(())
}

fn prepare_custom(
    rt: &ResourceType,
    spec: &CustomSpec,
    object: &mut Value,
    old: Option<&Value>,
    unknown: UnknownFields,
) -> Result<(), ApiError> {
    if spec.schema.is_object() {
        schema::apply_defaults(&spec.schema, object);
        let mut removed = Vec::new();
        schema::prune(&spec.schema, object, "", &mut removed);
        if unknown == UnknownFields::Refuse && !removed.is_empty() {
            let fields: Vec<String> = removed
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect();
            return Err(ApiError::BadRequest(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
                fields.join(", "),
                kind = rt.kind,
                v = rt.version,
            )));
        }
        let mut causes = Vec::new();
        schema::validate(&spec.schema, object, "", &mut causes);
        cel_rules::validate(&spec.schema, object, old, "", &mut causes);
        if !causes.is_empty() {
            return Err(invalid(rt, object, causes));
        }
    }
    object["apiVersion"] = json!(format!("{}/{}", rt.group, spec.storage_version));
    Ok(())
}

/// The write to make before a DELETE goes to the store, if the type wants
/// one: a CRD not yet terminating gets the cleanup finalizer and the
/// `Terminating` condition, as upstream's CRD storage does.
pub fn prepare_delete(rt: &ResourceType, current: &Value, now: &str) -> Option<Value> {
    if !custom::is_crd(rt) || current["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    let mut next = current.clone();
    let finalizers = next["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        let mut f = finalizers;
        f.push(json!(CLEANUP_FINALIZER));
        next["metadata"]["finalizers"] = json!(f);
    }
    let mut conditions: Vec<Value> = next["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "Terminating");
    conditions.push(json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    }));
    next["status"]["conditions"] = json!(conditions);
    Some(next)
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

    #[test]
    fn deleting_a_crd_first_adds_the_cleanup_finalizer() {
        let rt = super::super::ResourceRegistry::builtin()
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let next = prepare_delete(&rt, &crd(), "t").unwrap();
        assert_eq!(next["metadata"]["finalizers"][0], CLEANUP_FINALIZER);
        assert_eq!(
            next["status"]["conditions"][0]["reason"],
            "InstanceDeletionPending"
        );
        let mut terminating = next.clone();
        terminating["metadata"]["deletionTimestamp"] = json!("t");
        assert!(prepare_delete(&rt, &terminating, "t").is_none());
    }
}
