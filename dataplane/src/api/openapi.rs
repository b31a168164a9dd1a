//! OpenAPI: `/openapi/v2` and `/openapi/v3` (root with `?hash=` URLs, one
//! document per group-version).
//!
//! PLACEHOLDER: every handler answers 404 until OpenAPI is built.

use actix_web::HttpResponse;

use crate::error::ApiError;

/// `GET /openapi/v2`.
pub async fn v2() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /openapi/v3`.
pub async fn v3_root() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// `GET /openapi/v3/{api|apis/group}/{version}`.
pub async fn v3_document() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}
