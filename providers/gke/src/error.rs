//! GKE errors as google.rpc.Status, mapped in one `match`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kemu_shared::RegistryError;
use serde_json::json;
use thiserror::Error;

/// Everything a GKE request can fail with.
#[derive(Debug, Error)]
pub enum Error {
    /// NOT_FOUND.
    #[error("{0}")]
    NotFound(String),
    /// ALREADY_EXISTS.
    #[error("{0}")]
    AlreadyExists(String),
    /// INVALID_ARGUMENT.
    #[error("{0}")]
    InvalidArgument(String),
    /// FAILED_PRECONDITION.
    #[error("{0}")]
    FailedPrecondition(String),
    /// UNAUTHENTICATED: no bearer token.
    #[error(
        "Request is missing required authentication credential. Expected OAuth 2 access token, \
         login cookie or other valid authentication credential."
    )]
    Unauthenticated,
    /// INTERNAL.
    #[error("{0}")]
    Internal(String),
    /// ABORTED: a concurrent change (an IAM policy's stale etag).
    #[error("{0}")]
    Aborted(String),
}

impl Error {
    fn status_name(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "NOT_FOUND",
            Error::AlreadyExists(_) => "ALREADY_EXISTS",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::FailedPrecondition(_) => "FAILED_PRECONDITION",
            Error::Unauthenticated => "UNAUTHENTICATED",
            Error::Internal(_) => "INTERNAL",
            Error::Aborted(_) => "ABORTED",
        }
    }
}

impl From<RegistryError> for Error {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::NotFound(name) => Error::NotFound(format!("Not found: {name}.")),
            RegistryError::AlreadyExists(name) => {
                Error::AlreadyExists(format!("Already exists: {name}."))
            }
            RegistryError::WrongState { .. } => Error::FailedPrecondition(e.to_string()),
            RegistryError::Pki(e) => Error::Internal(e.to_string()),
        }
    }
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        match self {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::AlreadyExists(_) => StatusCode::CONFLICT,
            Error::InvalidArgument(_) | Error::FailedPrecondition(_) => StatusCode::BAD_REQUEST,
            Error::Unauthenticated => StatusCode::UNAUTHORIZED,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Error::Aborted(_) => StatusCode::CONFLICT,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let code = self.status_code();
        let mut resp = HttpResponse::build(code);
        if let Error::Unauthenticated = self {
            resp.insert_header((
                "WWW-Authenticate",
                "Bearer realm=\"https://accounts.google.com/\"",
            ));
        }
        resp.json(json!({ "error": {
            "code": code.as_u16(),
            "message": self.to_string(),
            "status": self.status_name(),
        }}))
    }
}
