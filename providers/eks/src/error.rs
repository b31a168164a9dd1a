//! EKS errors, mapped to the wire in one `match`: the code in the
//! `x-amzn-ErrorType` header (botocore reads it), the text in `{"message"}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kemu_shared::RegistryError;
use serde_json::json;
use thiserror::Error;

/// Everything an EKS request can fail with.
#[derive(Debug, Error)]
pub enum Error {
    /// No such cluster (or node group, add-on, …).
    #[error("{0}")]
    ResourceNotFound(String),
    /// The resource exists already or is busy.
    #[error("{0}")]
    ResourceInUse(String),
    /// A parameter is invalid.
    #[error("{0}")]
    InvalidParameter(String),
    /// The request is invalid in the resource's current state.
    #[error("{0}")]
    InvalidRequest(String),
    /// No operation has this method and path.
    #[error("Unknown operation {0}")]
    UnknownOperation(String),
    /// kemu failed.
    #[error("{0}")]
    Server(String),
}

impl Error {
    fn code(&self) -> &'static str {
        match self {
            Error::ResourceNotFound(_) => "ResourceNotFoundException",
            Error::ResourceInUse(_) => "ResourceInUseException",
            Error::InvalidParameter(_) => "InvalidParameterException",
            Error::InvalidRequest(_) => "InvalidRequestException",
            Error::UnknownOperation(_) => "UnknownOperationException",
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
            Error::ResourceNotFound(_) | Error::UnknownOperation(_) => StatusCode::NOT_FOUND,
            Error::ResourceInUse(_) => StatusCode::CONFLICT,
            Error::InvalidParameter(_) | Error::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Error::Server(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .insert_header(("x-amzn-ErrorType", self.code()))
            .json(json!({ "message": self.to_string() }))
    }
}
