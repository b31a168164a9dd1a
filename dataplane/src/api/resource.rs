//! The generic verbs on every resource type: get, list, watch, create, update,
//! patch, delete, deletecollection, and the subresources.
//!
//! PLACEHOLDER: every request answers 404 until the verbs are built.

use actix_web::HttpResponse;

use crate::error::ApiError;

/// Every request under `/api/v1/…` and `/apis/{group}/{version}/…`.
pub async fn dispatch() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}
