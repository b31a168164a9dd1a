//! AKS errors as ARM error bodies, mapped in one `match`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use thiserror::Error;

/// Everything an ARM request can fail with.
#[derive(Debug, Error)]
pub enum Error {
    /// The resource does not exist.
    #[error(
        "The Resource '{kind}/{name}' under resource group '{resource_group}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix"
    )]
    ResourceNotFound {
        /// Resource type, e.g. `Microsoft.ContainerService/managedClusters`.
        kind: String,
        /// Resource name.
        name: String,
        /// Resource group.
        resource_group: String,
    },
    /// No route for the path.
    #[error("No HTTP resource was found that matches the request URI '{0}'.")]
    NoRoute(String),
    /// `api-version` is missing.
    #[error("The api-version query parameter (?api-version=) is required for all requests.")]
    MissingApiVersion,
    /// A parameter is invalid.
    #[error("{0}")]
    InvalidParameter(String),
    /// kemu failed.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    fn code(&self) -> &'static str {
        match self {
            Error::ResourceNotFound { .. } => "ResourceNotFound",
            Error::NoRoute(_) => "NotFound",
            Error::MissingApiVersion => "MissingApiVersionParameter",
            Error::InvalidParameter(_) => "InvalidParameter",
            Error::Internal(_) => "InternalServerError",
        }
    }
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        match self {
            Error::ResourceNotFound { .. } | Error::NoRoute(_) => StatusCode::NOT_FOUND,
            Error::MissingApiVersion | Error::InvalidParameter(_) => StatusCode::BAD_REQUEST,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .insert_header(("x-ms-failure-cause", "gateway"))
            .json(json!({ "error": { "code": self.code(), "message": self.to_string() } }))
    }
}
