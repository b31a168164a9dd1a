//! AKS errors, mapped to the wire in one `match`: ARM's
//! `{"error":{"code","message"}}` for management calls, Azure AD's OAuth error
//! body (`error`, `error_description`, `error_codes`) for the token endpoint.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kemu_shared::RegistryError;
use serde_json::json;
use thiserror::Error;

/// Everything an ARM or Azure AD request can fail with.
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
    /// The resource group does not exist.
    #[error("Resource group '{0}' could not be found.")]
    ResourceGroupNotFound(String),
    /// No operation with that id.
    #[error("Operation '{0}' was not found.")]
    OperationNotFound(String),
    /// No route for the path.
    #[error("No HTTP resource was found that matches the request URI '{0}'.")]
    NoRoute(String),
    /// `api-version` is missing.
    #[error("The api-version query parameter (?api-version=) is required for all requests.")]
    MissingApiVersion,
    /// The body is not valid JSON of the expected shape.
    #[error("The request content was invalid and could not be deserialized: '{0}'.")]
    InvalidRequestContent(String),
    /// `location` is missing on a create.
    #[error("The 'location' property is required for this definition.")]
    LocationRequired,
    /// A resource's `location` is no Azure region.
    #[error(
        "The provided location '{location}' is not available for resource type '{resource_type}'. List of available regions for the resource type is '{regions}'.",
        regions = crate::location::REGIONS.join(",")
    )]
    LocationNotAvailableForResourceType {
        /// The location given.
        location: String,
        /// e.g. `Microsoft.ContainerService/managedClusters`.
        resource_type: String,
    },
    /// A resource group's `location` is no Azure region.
    #[error(
        "The provided location '{0}' is not available for resource group. List of available regions is '{regions}'.",
        regions = crate::location::REGIONS.join(",")
    )]
    LocationNotAvailableForResourceGroup(String),
    /// A parameter is invalid.
    #[error("{0}")]
    InvalidParameter(String),
    /// A resource group exists in another location.
    #[error(
        "Invalid resource group location '{given}'. The Resource group already exists in location '{existing}'."
    )]
    InvalidResourceGroupLocation {
        /// Location asked for.
        given: String,
        /// Location it has.
        existing: String,
    },
    /// The Kubernetes version is not offered.
    #[error(
        "Version {0} is not supported in this region. Please use [az aks get-versions] command to get the supported version list in this region."
    )]
    VersionNotSupported(String),
    /// The request is valid but not in the resource's current state.
    #[error("{0}")]
    OperationNotAllowed(String),
    /// The request conflicts with the resource's configuration.
    #[error("{0}")]
    BadRequest(String),
    /// An ARM call without an `Authorization` header.
    #[error("Authentication failed. The 'Authorization' header is missing.")]
    MissingAuthorization,
    /// An `Authorization` header that is not `Bearer <token>`.
    #[error("Authentication failed. The 'Authorization' header is provided in an invalid format.")]
    InvalidAuthorizationHeader,
    /// The bearer token has expired.
    #[error("The access token expiry UTC time '{0}' is earlier than current UTC time.")]
    ExpiredToken(String),
    /// Azure AD: the client secret does not match.
    #[error(
        "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '{0}'."
    )]
    InvalidClientSecret(String),
    /// Azure AD: no such application in the tenant.
    #[error(
        "AADSTS700016: Application with identifier '{client_id}' was not found in the directory '{tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant."
    )]
    UnknownClient {
        /// Client id asked for.
        client_id: String,
        /// Tenant asked in.
        tenant: String,
    },
    /// Azure AD: a grant kemu does not serve, or a malformed token request.
    #[error("AADSTS70003: The app requested an unsupported grant type '{0}'.")]
    UnsupportedGrantType(String),
    /// kemu failed.
    #[error("{0}")]
    Internal(String),
}

impl From<RegistryError> for Error {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::NotFound(name) => Error::Internal(format!("cluster {name} vanished")),
            RegistryError::AlreadyExists(name) => Error::OperationNotAllowed(format!(
                "Operation is not allowed because managed cluster '{name}' already exists."
            )),
            RegistryError::WrongState { .. } => Error::OperationNotAllowed(e.to_string()),
            RegistryError::Pki(e) => Error::Internal(e.to_string()),
        }
    }
}

/// Where an error goes on the wire: its status, and its code in its format.
enum Wire {
    Arm(StatusCode, &'static str),
    Aad(StatusCode, &'static str, u32),
}

impl Error {
    /// The one mapping to the wire.
    fn wire(&self) -> Wire {
        use StatusCode as S;
        match self {
            Error::ResourceNotFound { .. } => Wire::Arm(S::NOT_FOUND, "ResourceNotFound"),
            Error::ResourceGroupNotFound(_) => Wire::Arm(S::NOT_FOUND, "ResourceGroupNotFound"),
            Error::OperationNotFound(_) | Error::NoRoute(_) => Wire::Arm(S::NOT_FOUND, "NotFound"),
            Error::MissingApiVersion => Wire::Arm(S::BAD_REQUEST, "MissingApiVersionParameter"),
            Error::InvalidRequestContent(_) => Wire::Arm(S::BAD_REQUEST, "InvalidRequestContent"),
            Error::LocationRequired => Wire::Arm(S::BAD_REQUEST, "LocationRequired"),
            Error::LocationNotAvailableForResourceType { .. } => {
                Wire::Arm(S::BAD_REQUEST, "LocationNotAvailableForResourceType")
            }
            Error::LocationNotAvailableForResourceGroup(_) => {
                Wire::Arm(S::BAD_REQUEST, "LocationNotAvailableForResourceGroup")
            }
            Error::InvalidParameter(_) => Wire::Arm(S::BAD_REQUEST, "InvalidParameter"),
            Error::InvalidResourceGroupLocation { .. } => {
                Wire::Arm(S::CONFLICT, "InvalidResourceGroupLocation")
            }
            Error::VersionNotSupported(_) => Wire::Arm(S::BAD_REQUEST, "K8sVersionNotSupported"),
            Error::OperationNotAllowed(_) => Wire::Arm(S::CONFLICT, "OperationNotAllowed"),
            Error::BadRequest(_) => Wire::Arm(S::BAD_REQUEST, "BadRequest"),
            Error::MissingAuthorization => Wire::Arm(S::UNAUTHORIZED, "AuthenticationFailed"),
            Error::InvalidAuthorizationHeader => {
                Wire::Arm(S::UNAUTHORIZED, "AuthenticationFailedInvalidHeader")
            }
            Error::ExpiredToken(_) => Wire::Arm(S::UNAUTHORIZED, "ExpiredAuthenticationToken"),
            Error::Internal(_) => Wire::Arm(S::INTERNAL_SERVER_ERROR, "InternalServerError"),
            Error::InvalidClientSecret(_) => Wire::Aad(S::UNAUTHORIZED, "invalid_client", 7000215),
            Error::UnknownClient { .. } => Wire::Aad(S::BAD_REQUEST, "unauthorized_client", 700016),
            Error::UnsupportedGrantType(_) => {
                Wire::Aad(S::BAD_REQUEST, "unsupported_grant_type", 70003)
            }
        }
    }
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        match self.wire() {
            Wire::Arm(status, _) | Wire::Aad(status, _, _) => status,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let request_id = uuid::Uuid::new_v4().to_string();
        match self.wire() {
            Wire::Arm(status, code) => {
                let mut resp = HttpResponse::build(status);
                resp.insert_header(("x-ms-request-id", request_id.clone()))
                    .insert_header(("x-ms-correlation-request-id", request_id))
                    .insert_header(("x-ms-failure-cause", "gateway"));
                if let Some(challenge) = challenge(self) {
                    resp.insert_header(("WWW-Authenticate", challenge));
                }
                resp.json(json!({ "error": { "code": code, "message": self.to_string() } }))
            }
            Wire::Aad(status, error, number) => HttpResponse::build(status)
                .insert_header(("x-ms-request-id", request_id.clone()))
                .json(json!({
                    "error": error,
                    "error_description": self.to_string(),
                    "error_codes": [number],
                    "trace_id": request_id,
                    "correlation_id": request_id,
                    "error_uri": format!("https://login.microsoftonline.com/error?code={number}"),
                })),
        }
    }
}

/// ARM's `WWW-Authenticate` challenge on a 401 for a missing or malformed
/// header.
fn challenge(e: &Error) -> Option<String> {
    let why = match e {
        Error::MissingAuthorization => "missing 'Authorization' header",
        Error::InvalidAuthorizationHeader => "invalid 'Authorization' header format",
        _ => return None,
    };
    Some(format!(
        "Bearer authorization_uri=\"https://login.windows.net/\", error=\"invalid_token\", error_description=\"The authentication failed because of {why}.\""
    ))
}
