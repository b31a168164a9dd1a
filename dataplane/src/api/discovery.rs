//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/{group}`, `/apis/{group}/{version}`,
//! legacy and aggregated (`apidiscovery.k8s.io/v2`, chosen by Accept).
//!
//! PLACEHOLDER: every handler answers 404 until discovery is built.

use actix_web::HttpResponse;

use crate::error::ApiError;

/// `GET /api`.
pub async fn core_versions() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /apis`.
pub async fn groups() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /api/v1`.
pub async fn core_resources() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /apis/{group}`.
pub async fn group() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /apis/{group}/{version}`.
pub async fn group_resources() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}
