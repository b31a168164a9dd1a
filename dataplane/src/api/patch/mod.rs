//! Patch types, one file each: JSON patch (RFC 6902, [`json`]), merge patch
//! (RFC 7386, [`merge`]) and strategic merge patch ([`strategic`]), driven by
//! the upstream schemas' patch extensions. Server-side apply
//! (`apply-patch+yaml`) is field management, not a patch: see
//! [`managedfields`](crate::api::managedfields).

use serde_json::Value;
use thiserror::Error;

use crate::error::ApiError;

pub mod json;
pub mod merge;
pub mod strategic;

#[cfg(test)]
mod proptests;

pub use merge::merge;

/// The media types PATCH of a custom resource accepts.
pub const ACCEPTED_CUSTOM: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The patch type, from the request's Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// The media types PATCH accepts, as upstream lists them in a 415.
pub const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json, application/apply-patch+cbor";

impl PatchType {
    /// The patch type named by a Content-Type, if supported.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// An OpenAPI v2 schema of the patched type (its patch extensions drive the
/// strategic merge), if the type has one.
pub type Schema = Option<&'static Value>;

/// Why a patch could not be applied, sorted by how upstream answers it.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PatchError {
    /// The patch document is malformed (400 BadRequest with this message).
    #[error("{0}")]
    Malformed(String),
    /// The patch does not apply to the object (422 with upstream's generic
    /// "rejected" message: the apiserver drops the detail).
    #[error("{0}")]
    DoesNotApply(String),
    /// An error upstream's patch code returns as a plain Go error, which the
    /// apiserver answers as a 500 with no reason.
    #[error("{0}")]
    Unclassified(String),
}

impl From<PatchError> for ApiError {
    fn from(e: PatchError) -> Self {
        match e {
            PatchError::Malformed(m) => ApiError::BadRequest(m),
            PatchError::DoesNotApply(detail) => {
                tracing::debug!(%detail, "patch does not apply");
                ApiError::PatchRejected
            }
            PatchError::Unclassified(m) => ApiError::Unclassified(m),
        }
    }
}

/// Applies a JSON, merge or strategic merge `patch` to `target`, whose
/// type's schema is `schema`. On error `target` is unchanged. Apply patches
/// are handled by field management, never here.
pub fn apply(
    kind: PatchType,
    target: &mut Value,
    patch: &Value,
    schema: Schema,
) -> Result<(), PatchError> {
    let unmarshal = |what: &str| {
        PatchError::Malformed(format!(
            "error decoding patch: json: cannot unmarshal {what} into Go value of type map[string]interface {{}}"
        ))
    };
    // A merge patch is decoded into a map, as upstream decodes it.
    if kind != PatchType::Json {
        match patch {
            Value::Object(_) => {}
            Value::Null => return Ok(()),
            Value::Array(_) => return Err(unmarshal("array")),
            Value::String(_) => return Err(unmarshal("string")),
            Value::Number(_) => return Err(unmarshal("number")),
            Value::Bool(_) => return Err(unmarshal("bool")),
        }
    }
    let mut next = target.clone();
    match kind {
        PatchType::Json => json::apply(&mut next, patch)?,
        PatchType::Merge | PatchType::Apply => merge(&mut next, patch),
        PatchType::StrategicMerge => strategic::apply(&mut next, patch, schema)?,
    }
    // A JSON patch that replaces the whole document with something else.
    if !next.is_object() {
        return Err(PatchError::Unclassified(
            "json: cannot unmarshal the patched document into an object".into(),
        ));
    }
    *target = next;
    Ok(())
}
