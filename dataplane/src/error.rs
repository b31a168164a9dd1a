//! Errors of the Kubernetes API, mapped to a `metav1.Status` in one `match`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use thiserror::Error;

/// Everything a request to a cluster can fail with.
#[derive(Debug, Error)]
pub enum ApiError {
    /// No handler for the path.
    #[error("the server could not find the requested resource")]
    NotFound,
    /// The cluster behind this listener no longer exists.
    #[error("cluster {0} not found")]
    ClusterGone(String),
    /// No valid credential was presented.
    #[error("Unauthorized")]
    Unauthorized,
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The method is not allowed on the path.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// Something kemu itself failed at.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The `reason` of the Status, as upstream's `metav1.StatusReason`.
    fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound | ApiError::ClusterGone(_) => "NotFound",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Forbidden(_) => "Forbidden",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::Internal(_) => "InternalError",
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::NotFound | ApiError::ClusterGone(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let code = self.status_code();
        HttpResponse::build(code).json(json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "details": {},
            "code": code.as_u16(),
        }))
    }
}
