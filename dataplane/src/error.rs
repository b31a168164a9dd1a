//! Errors of the Kubernetes API, mapped to a `metav1.Status` in one `match`,
//! worded as kube-apiserver words them.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::{Value, json};
use thiserror::Error;

/// Which object an error is about: the Status `details`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// Object name.
    pub name: String,
    /// API group (empty for core).
    pub group: String,
    /// Resource (plural), as upstream puts in `details.kind`.
    pub kind: String,
}

impl Target {
    /// `pods "web"` / `deployments.apps "web"`, as upstream messages name objects.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            format!("{} \"{}\"", self.kind, self.name)
        } else {
            format!("{}.{} \"{}\"", self.kind, self.group, self.name)
        }
    }
}

/// One invalid field: a Status `details.causes` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, …
    pub reason: String,
    /// What is wrong.
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

/// Everything a request to a cluster can fail with.
#[derive(Debug, Error)]
pub enum ApiError {
    /// No handler for the path.
    #[error("the server could not find the requested resource")]
    NotFound,
    /// The object does not exist.
    #[error("{} not found", .0.qualified())]
    ObjectNotFound(Target),
    /// The object exists already.
    #[error("{} already exists", .0.qualified())]
    AlreadyExists(Target),
    /// A write lost a race or named a stale resourceVersion.
    #[error("Operation cannot be fulfilled on {}: {message}", .target.qualified())]
    Conflict {
        /// The object.
        target: Target,
        /// Why, e.g. "the object has been modified; please apply your changes
        /// to the latest version and try again".
        message: String,
    },
    /// The object is invalid.
    #[error("{kind} \"{}\" is invalid: {}", .target.name, causes_text(.causes))]
    Invalid {
        /// The object (with `kind` the Kind, as upstream words Invalid).
        target: Target,
        /// Kind, e.g. `Deployment`.
        kind: String,
        /// The invalid fields.
        causes: Vec<Cause>,
    },
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The cluster behind this listener no longer exists.
    #[error("cluster {0} not found")]
    ClusterGone(String),
    /// No valid credential was presented.
    #[error("Unauthorized")]
    Unauthorized,
    /// A credential kemu recognises was refused, with why and what to do.
    #[error("Unauthorized: {0}")]
    UnauthorizedBecause(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The method is not allowed on the path.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// No acceptable media type can be produced.
    #[error("only the following media types are accepted: {0}")]
    NotAcceptable(String),
    /// The request body's media type is not supported.
    #[error("the body of the request was in an unknown format - accepted media types include: {0}")]
    UnsupportedMediaType(String),
    /// A resourceVersion or continue token is too old.
    #[error("{0}")]
    Gone(String),
    /// A continue token is too old: the message, and the token that goes on
    /// from the same key at the latest resourceVersion (an inconsistent
    /// list), in the Status's `metadata.continue`.
    #[error("{0}")]
    ContinueExpired(String, String),
    /// The request body or object is too large.
    #[error("{0}")]
    TooLarge(String),
    /// The caller must retry later (e.g. an eviction a PodDisruptionBudget blocks).
    #[error("{0}")]
    TooManyRequests(String),
    /// The request outlived its deadline (`--request-timeout`, `?timeout=`).
    #[error("Timeout: {0}")]
    Timeout(String),
    /// What the request needs cannot answer now (a proxy's backend).
    #[error("{0}")]
    ServiceUnavailable(String),
    /// Something kemu itself failed at.
    #[error("{0}")]
    Internal(String),
    /// Admission refused the write with this whole `metav1.Status` (a
    /// webhook's own code, reason and message; a 403 with its details).
    #[error("{}", .0["message"].as_str().unwrap_or_default())]
    Refused(Box<Value>),
    /// A patch that does not apply to the object (a JSON patch `test` that
    /// fails, a missing path): upstream answers 422 with this generic text.
    #[error("the server rejected our request due to an error in our request")]
    PatchRejected,
    /// An error upstream returns as a plain Go error: 500 with no reason.
    #[error("{0}")]
    Unclassified(String),
    /// Server-side apply found fields another manager owns.
    #[error("{message}")]
    ApplyConflict {
        /// "Apply failed with N conflict(s): …", as upstream words it.
        message: String,
        /// One `FieldManagerConflict` cause per field.
        causes: Vec<Cause>,
    },
}

fn causes_text(causes: &[Cause]) -> String {
    let parts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    match parts.len() {
        1 => parts[0].clone(),
        _ => format!("[{}]", parts.join(", ")),
    }
}

impl ApiError {
    /// The `reason` of the Status, as upstream's `metav1.StatusReason`.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound | ApiError::ObjectNotFound(_) | ApiError::ClusterGone(_) => {
                "NotFound"
            }
            ApiError::AlreadyExists(_) => "AlreadyExists",
            ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Unauthorized | ApiError::UnauthorizedBecause(_) => "Unauthorized",
            ApiError::Forbidden(_) => "Forbidden",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::NotAcceptable(_) => "NotAcceptable",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::Gone(_) | ApiError::ContinueExpired(..) => "Expired",
            ApiError::TooLarge(_) => "RequestEntityTooLarge",
            ApiError::TooManyRequests(_) => "TooManyRequests",
            ApiError::Timeout(_) => "Timeout",
            ApiError::ServiceUnavailable(_) => "ServiceUnavailable",
            ApiError::Internal(_) => "InternalError",
            ApiError::Refused(status) => match status["reason"].as_str() {
                Some("Forbidden") => "Forbidden",
                Some("BadRequest") => "BadRequest",
                Some("Invalid") => "Invalid",
                Some("InternalError") => "InternalError",
                _ => "",
            },
            ApiError::PatchRejected => "Invalid",
            ApiError::Unclassified(_) => "",
        }
    }

    /// The whole `metav1.Status` object, also used inside watch `ERROR` events.
    pub fn status(&self) -> Value {
        if let ApiError::Refused(status) = self {
            return (**status).clone();
        }
        let code = self.status_code().as_u16();
        let details = match self {
            ApiError::ObjectNotFound(t)
            | ApiError::AlreadyExists(t)
            | ApiError::Conflict { target: t, .. } => details(t, None),
            ApiError::Invalid { target, causes, .. } => details(target, Some(causes)),
            // Upstream's `NewNotFound`/`NewMethodNotSupported` of an empty
            // group-resource: details present, every field empty.
            // `NewTimeoutError`'s details hold a zero retryAfterSeconds.
            ApiError::PatchRejected
            | ApiError::NotFound
            | ApiError::MethodNotAllowed
            | ApiError::Timeout(_) => json!({}),
            ApiError::ApplyConflict { causes, .. } => json!({ "causes": causes_json(causes) }),
            _ => Value::Null,
        };
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": code,
        });
        if !details.is_null() {
            status["details"] = details;
        }
        if let ApiError::ContinueExpired(_, token) = self {
            status["metadata"]["continue"] = json!(token);
        }
        if self.reason().is_empty()
            && let Some(m) = status.as_object_mut()
        {
            // Go omits an empty (Unknown) reason.
            m.remove("reason");
        }
        status
    }
}

/// Puts the Status's reason and message on the answer for the request log.
pub fn mark(res: &mut HttpResponse, status: &Value) {
    let reason = status["reason"].as_str().unwrap_or("Unknown");
    let message = status["message"].as_str().unwrap_or_default();
    res.extensions_mut()
        .insert(kemu_shared::observe::Refusal(format!(
            "{reason}: {message}"
        )));
}

fn details(t: &Target, causes: Option<&Vec<Cause>>) -> Value {
    // Empty fields are left out, as upstream's `omitempty` does.
    let mut d = json!({});
    if !t.name.is_empty() {
        d["name"] = json!(t.name);
    }
    if !t.kind.is_empty() {
        d["kind"] = json!(t.kind);
    }
    if !t.group.is_empty() {
        d["group"] = json!(t.group);
    }
    if let Some(causes) = causes {
        d["causes"] = causes_json(causes);
    }
    d
}

fn causes_json(causes: &[Cause]) -> Value {
    causes
        .iter()
        .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
        .collect()
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::NotFound | ApiError::ObjectNotFound(_) | ApiError::ClusterGone(_) => {
                StatusCode::NOT_FOUND
            }
            ApiError::AlreadyExists(_)
            | ApiError::Conflict { .. }
            | ApiError::ApplyConflict { .. } => StatusCode::CONFLICT,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::UnauthorizedBecause(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Gone(_) | ApiError::ContinueExpired(..) => StatusCode::GONE,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) | ApiError::Unclassified(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Refused(status) => status["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::FORBIDDEN),
            ApiError::PatchRejected => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut res =
            crate::api::wire::respond(HttpResponse::build(self.status_code()), &self.status());
        mark(&mut res, &self.status());
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_upstream() {
        let t = Target {
            name: "web".into(),
            group: "apps".into(),
            kind: "deployments".into(),
        };
        let s = ApiError::ObjectNotFound(t.clone()).status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["group"], "apps");
        let s = ApiError::Invalid {
            target: t,
            kind: "Deployment".into(),
            causes: vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.selector".into(),
            }],
        }
        .status();
        assert_eq!(
            s["message"],
            "Deployment \"web\" is invalid: spec.selector: Required value"
        );
        assert_eq!(s["code"], 422);
    }
}
