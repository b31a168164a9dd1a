//! The subresources that are not a view of the object itself (`status` and
//! `scale` are served by [`crate::api::resource`]): one table says which
//! handler serves which subresource of which type, and each handler lives in
//! its own file. Only subresources the served minor lists are routed.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpMessage, HttpRequest, HttpResponse, ResponseError, web};
use kemu_shared::{ClusterRecord, UserInfo};
use serde_json::{Value, json};
use thiserror::Error;

use crate::api::request::{Params, Scope};
use crate::api::{binding, eviction, log, pod_views, proxy, streams, token, wire};
use crate::engine::{ClusterContext, Engine};
use crate::error::{ApiError, Target};
use crate::store::{Object, ObjectKey, Store};

/// Which handler serves a subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// `pods/log`: the containers' synthetic logs.
    Log,
    /// `pods/eviction`: a delete that honours PodDisruptionBudgets.
    Eviction,
    /// `pods/binding`: assigns the Pod to a Node.
    Binding,
    /// `pods/ephemeralcontainers`, `pods/resize`: a Pod whose writes may
    /// change only some fields.
    PodView(pod_views::View),
    /// `pods/exec`, `pods/attach`, `pods/portforward`: streams into
    /// simulated containers.
    Stream(streams::Stream),
    /// `serviceaccounts/token`: TokenRequest.
    Token,
    /// `pods/proxy`, `services/proxy`, `nodes/proxy`: what listens behind
    /// the object.
    Proxy,
}

/// (group, resource, subresource) → handler.
const TABLE: &[(&str, &str, &str, Handler)] = &[
    ("", "pods", "log", Handler::Log),
    ("", "pods", "eviction", Handler::Eviction),
    ("", "pods", "binding", Handler::Binding),
    (
        "",
        "pods",
        "ephemeralcontainers",
        Handler::PodView(pod_views::View::EphemeralContainers),
    ),
    (
        "",
        "pods",
        "resize",
        Handler::PodView(pod_views::View::Resize),
    ),
    ("", "pods", "exec", Handler::Stream(streams::Stream::Exec)),
    (
        "",
        "pods",
        "attach",
        Handler::Stream(streams::Stream::Attach),
    ),
    (
        "",
        "pods",
        "portforward",
        Handler::Stream(streams::Stream::PortForward),
    ),
    ("", "serviceaccounts", "token", Handler::Token),
    ("", "pods", "proxy", Handler::Proxy),
    ("", "services", "proxy", Handler::Proxy),
    ("", "nodes", "proxy", Handler::Proxy),
];

/// The handler of the request's subresource, if this module serves it.
pub fn handler(scope: &Scope) -> Option<Handler> {
    let sub = scope.subresource.as_deref()?;
    scope.name.as_ref()?;
    if !scope.rt.subresources.iter().any(|s| s.name == sub) {
        return None;
    }
    TABLE
        .iter()
        .find(|(g, r, s, _)| *g == scope.rt.group && *r == scope.rt.plural && *s == sub)
        .map(|(.., h)| *h)
}

/// Everything the subresource handlers can fail with.
#[derive(Debug, Error)]
pub enum SubresourceError {
    /// A plain API error.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// An eviction a PodDisruptionBudget forbids now: 429 with the
    /// `DisruptionBudget` cause, as upstream answers.
    #[error("Cannot evict pod as it would violate the pod's disruption budget.")]
    DisruptionBudget {
        /// The cause's message (which budget, how many pods it needs).
        cause: String,
        /// `retryAfterSeconds` (0: none), also sent as `Retry-After`.
        retry_after: u32,
    },
}

impl ResponseError for SubresourceError {
    fn status_code(&self) -> StatusCode {
        match self {
            SubresourceError::Api(e) => e.status_code(),
            SubresourceError::DisruptionBudget { .. } => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            SubresourceError::Api(e) => e.status(),
            SubresourceError::DisruptionBudget { cause, retry_after } => {
                let mut details =
                    json!({ "causes": [{ "reason": "DisruptionBudget", "message": cause }] });
                if *retry_after > 0 {
                    details["retryAfterSeconds"] = json!(retry_after);
                }
                json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": self.to_string(),
                    "reason": "TooManyRequests",
                    "details": details,
                    "code": 429,
                })
            }
        };
        let mut response = HttpResponse::build(self.status_code());
        if let SubresourceError::DisruptionBudget { retry_after, .. } = self
            && *retry_after > 0
        {
            response.insert_header(("Retry-After", retry_after.to_string()));
        }
        let mut res = wire::respond(response, &body);
        crate::error::mark(&mut res, &body);
        res
    }
}

/// What every subresource handler reads.
pub struct Ctx {
    /// The engine.
    pub engine: web::Data<Engine>,
    /// The cluster's record (CA, service-account key, endpoint).
    pub record: ClusterRecord,
    /// The cluster's store (dry-run wrapped when asked).
    pub store: Arc<dyn Store>,
    /// Where the request points.
    pub scope: Scope,
    /// The query.
    pub params: Params,
    /// Who the request is served as.
    pub user: UserInfo,
}

impl Ctx {
    /// The key of the named object.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(
            &self.scope.resource(),
            self.scope.namespace.as_deref().unwrap_or_default(),
            self.scope.name.as_deref().unwrap_or_default(),
        )
    }

    /// The named object, or upstream's 404.
    pub fn object(&self) -> Result<Object, ApiError> {
        let key = self.key();
        self.store.get(&key).ok_or_else(|| {
            ApiError::ObjectNotFound(Target {
                name: key.name.clone(),
                group: self.scope.rt.group.clone(),
                kind: self.scope.rt.plural.clone(),
            })
        })
    }

    /// The current instant on the cluster's clock.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.engine.registry().clock().now()
    }

    /// The clock.
    pub fn clock(&self) -> kemu_shared::SharedClock {
        self.engine.registry().clock().clone()
    }
}

/// A `Success` Status, as upstream answers a subresource create that returns
/// no object (eviction, binding).
pub fn success(code: StatusCode) -> HttpResponse {
    crate::api::wire::respond(
        HttpResponse::build(code),
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": code.as_u16(),
        }),
    )
}

/// The body of a POST-only subresource (binding, eviction, token); any
/// other method is not allowed.
pub fn post_body(method: &str, body: Result<Value, ApiError>) -> Result<Value, SubresourceError> {
    if method != "POST" {
        return Err(ApiError::MethodNotAllowed.into());
    }
    Ok(body?)
}

/// Checks that a create body's `metadata.name` (if any) names the object of
/// the URL, as upstream's subresource creates do.
pub fn check_body_name(body: &Value, url_name: &str, kind: &str) -> Result<(), ApiError> {
    match body["metadata"]["name"].as_str() {
        Some(n) if !n.is_empty() && n != url_name => Err(ApiError::BadRequest(format!(
            "name in URL does not match name in {kind} object"
        ))),
        _ => Ok(()),
    }
}

/// Serves one subresource request (the engine and cluster are the
/// listener's app data).
pub async fn serve(
    handler: Handler,
    req: HttpRequest,
    payload: web::Payload,
    scope: Scope,
    store: Arc<dyn Store>,
    params: Params,
) -> HttpResponse {
    let (Some(engine), Some(cluster)) = (
        req.app_data::<web::Data<Engine>>().cloned(),
        req.app_data::<web::Data<ClusterContext>>(),
    ) else {
        return ApiError::Internal("engine not mounted".into()).error_response();
    };
    let record = match engine.registry().get(&cluster.id) {
        Ok(r) => r,
        Err(_) => return ApiError::ClusterGone(cluster.id.clone()).error_response(),
    };
    let user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_default();
    let ctx = Ctx {
        engine,
        record,
        store,
        scope,
        params,
        user,
    };
    tracing::debug!(?handler, name = ?ctx.scope.name, "subresource");
    let method = req.method().as_str().to_owned();
    let ct = crate::api::request::header(&req, "content-type").to_owned();
    let result = match handler {
        Handler::Log => log::serve(&ctx, &method),
        Handler::Eviction => eviction::serve(&ctx, &method, object(payload, &ct).await),
        Handler::Binding => binding::serve(&ctx, &method, object(payload, &ct).await),
        Handler::PodView(view) => pod_views::serve(&ctx, view, &method, &ct, read(payload).await),
        Handler::Stream(stream) => streams::serve(&ctx, stream, &req, payload).await,
        Handler::Token => token::serve(&ctx, &method, object(payload, &ct).await),
        Handler::Proxy => proxy::serve(&ctx, &req, payload).await.map_err(Into::into),
    };
    result.unwrap_or_else(|e| e.error_response())
}

async fn read(payload: web::Payload) -> Result<Vec<u8>, ApiError> {
    crate::api::request::read_body(payload).await
}

/// The body as an object, by its Content-Type (kubectl sends protobuf for
/// some: `create token`); an empty body is an empty object.
async fn object(payload: web::Payload, content_type: &str) -> Result<Value, ApiError> {
    let body = read(payload).await?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    crate::api::request::decode_object(content_type, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_eviction_is_a_429_with_the_budget_cause() {
        let e = SubresourceError::DisruptionBudget {
            cause: "The disruption budget web needs 2 healthy pods and has 2 currently".into(),
            retry_after: 10,
        };
        let r = e.error_response();
        assert_eq!(r.status().as_u16(), 429);
        assert_eq!(r.headers().get("Retry-After").unwrap(), "10");
        let body = actix_web::body::to_bytes(r.into_body());
        let body: Value = serde_json::from_slice(
            &futures_util::FutureExt::now_or_never(body)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(
            body["message"],
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(body["details"]["causes"][0]["reason"], "DisruptionBudget");
        assert_eq!(body["details"]["retryAfterSeconds"], 10);
    }
}
