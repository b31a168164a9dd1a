//! EKS errors, mapped to the wire in one `match`: the code in the
//! `x-amzn-ErrorType` header (botocore reads it; the waiters match on it), the
//! text in `{"message"}`, the status the model gives each code.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kemu_shared::RegistryError;
use serde_json::json;
use thiserror::Error;

/// Everything an EKS request can fail with.
#[derive(Debug, Error)]
pub enum Error {
    /// No such cluster, node group, add-on, profile, update or entry (404).
    #[error("{0}")]
    ResourceNotFound(String),
    /// No resource with that ARN, for the tag APIs only (404).
    #[error("{0}")]
    NotFound(String),
    /// The resource exists already or is busy (409).
    #[error("{0}")]
    ResourceInUse(String),
    /// A parameter is invalid (400).
    #[error("{0}")]
    InvalidParameter(String),
    /// The request is invalid in the resource's current state (400).
    #[error("{0}")]
    InvalidRequest(String),
    /// A malformed request to the tag APIs, or a body that is not JSON (400).
    #[error("{0}")]
    BadRequest(String),
    /// A quota is reached (400).
    #[error("{0}")]
    ResourceLimitExceeded(String),
    /// No operation has this method and path (404).
    #[error("Unknown operation {0}")]
    UnknownOperation(String),
    /// No signature at all (403).
    #[error("Missing Authentication Token")]
    MissingAuthenticationToken,
    /// A signature without its parts (403).
    #[error("{0}")]
    IncompleteSignature(String),
    /// A signature whose scope or date is wrong (403).
    #[error("{0}")]
    InvalidSignature(String),
    /// kemu failed (500).
    #[error("{0}")]
    Server(String),
}

impl Error {
    fn code(&self) -> &'static str {
        match self {
            Error::ResourceNotFound(_) => "ResourceNotFoundException",
            Error::NotFound(_) => "NotFoundException",
            Error::ResourceInUse(_) => "ResourceInUseException",
            Error::InvalidParameter(_) => "InvalidParameterException",
            Error::InvalidRequest(_) => "InvalidRequestException",
            Error::BadRequest(_) => "BadRequestException",
            Error::ResourceLimitExceeded(_) => "ResourceLimitExceededException",
            Error::UnknownOperation(_) => "UnknownOperationException",
            Error::MissingAuthenticationToken => "MissingAuthenticationTokenException",
            Error::IncompleteSignature(_) => "IncompleteSignatureException",
            Error::InvalidSignature(_) => "InvalidSignatureException",
            Error::Server(_) => "ServerException",
        }
    }
}

impl From<RegistryError> for Error {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::NotFound(name) => {
                Error::ResourceNotFound(format!("No cluster found for name: {name}."))
            }
            RegistryError::AlreadyExists(name) => {
                Error::ResourceInUse(format!("Cluster already exists with name: {name}"))
            }
            RegistryError::WrongState { .. } => Error::ResourceInUse(e.to_string()),
            RegistryError::Pki(e) => Error::Server(e.to_string()),
        }
    }
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        match self {
            Error::ResourceNotFound(_) | Error::NotFound(_) | Error::UnknownOperation(_) => {
                StatusCode::NOT_FOUND
            }
            Error::ResourceInUse(_) => StatusCode::CONFLICT,
            Error::MissingAuthenticationToken
            | Error::IncompleteSignature(_)
            | Error::InvalidSignature(_) => StatusCode::FORBIDDEN,
            Error::InvalidParameter(_)
            | Error::InvalidRequest(_)
            | Error::BadRequest(_)
            | Error::ResourceLimitExceeded(_) => StatusCode::BAD_REQUEST,
            Error::Server(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .insert_header(("x-amzn-ErrorType", self.code()))
            .json(json!({ "message": self.to_string() }))
    }
}
