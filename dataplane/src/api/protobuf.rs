//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which
//! `kubectl create <generator>` sends without falling back to JSON.
//!
//! PLACEHOLDER: decoding is refused with 415 until it is built.

use serde_json::Value;

use crate::error::ApiError;

/// The protobuf media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Whether a Content-Type names the protobuf encoding.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// Decodes a protobuf body (the `k8s\0` magic + `runtime.Unknown` envelope)
/// into the object's JSON form.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let _ = body;
    Err(ApiError::UnsupportedMediaType(
        "application/json, application/yaml".into(),
    ))
}
