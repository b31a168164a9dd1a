//! The trait every cloud facade implements, and the one dispatcher that serves
//! them: parse the request into an operation, run it, render the error in the
//! facade's own wire format.

use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use futures_util::FutureExt;

/// A cloud facade: one operation enum, one error enum, one handler.
pub trait ApiHandler: Clone + 'static {
    /// Name used in logs.
    const API_NAME: &'static str;
    /// One variant per operation of the cloud API.
    type Endpoint: Debug;
    /// The facade's error enum; its `ResponseError` impl is the one `match`
    /// that maps errors to the wire.
    type Error: ResponseError;

    /// The registry the facade serves (its request log).
    fn registry(&self) -> &crate::ClusterRegistry;

    /// Decides which operation a request is, or why it is none.
    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Self::Endpoint, Self::Error>;

    /// The error answered for a request whose handling panicked (a bug):
    /// the cloud's internal-error answer.
    fn panicked() -> Self::Error;

    /// Runs one operation.
    fn handle(
        &self,
        req: HttpRequest,
        body: Bytes,
        endpoint: Self::Endpoint,
    ) -> impl Future<Output = Result<HttpResponse, Self::Error>>;
}

/// Mounts a facade on an actix-web service config: every request goes through
/// [`ApiHandler::parse_endpoint`] and [`ApiHandler::handle`].
pub fn mount<A: ApiHandler>(cfg: &mut web::ServiceConfig, api: A) {
    cfg.app_data(web::Data::new(api))
        // Cloud SDKs send bodies well above actix's 256 KiB default (node pool
        // lists, policies); the clouds themselves allow a few MiB.
        .app_data(web::PayloadConfig::new(8 << 20))
        .default_service(web::to(dispatch::<A>));
}

async fn dispatch<A: ApiHandler>(req: HttpRequest, body: Bytes, api: web::Data<A>) -> HttpResponse {
    let started = crate::SystemClock::instant();
    let arrived = api.registry().clock().now();
    let operation = std::cell::RefCell::new(String::new());
    let run = async {
        let endpoint = api.parse_endpoint(&req)?;
        tracing::debug!(api = A::API_NAME, ?endpoint, "request");
        *operation.borrow_mut() = operation_name(&endpoint);
        api.handle(req.clone(), body, endpoint).await
    };
    let result = AssertUnwindSafe(run)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let panic = crate::panics::message(panic.as_ref());
            tracing::error!(api = A::API_NAME, path = %path_and_query(&req), %panic, "request handler panicked");
            Err(A::panicked())
        });
    let mut reason = None;
    let response = result.unwrap_or_else(|e| {
        tracing::info!(api = A::API_NAME, path = %path_and_query(&req), error = %e, "request failed");
        reason = Some(e.to_string());
        e.error_response()
    });
    let operation = operation.into_inner();
    api.registry().observer().facade(crate::observe::Record {
        seq: 0,
        time: arrived.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        api: A::API_NAME.to_owned(),
        cluster: crate::observe::facade_cluster(req.path()),
        caller: access_key(&req),
        method: req.method().to_string(),
        path: req.path().to_owned(),
        verb: if operation.is_empty() {
            "Unknown".to_owned()
        } else {
            operation
        },
        resource: None,
        status: response.status().as_u16(),
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        reason,
    });
    response
}

/// An operation's name: its endpoint variant's (`DescribeCluster`).
fn operation_name(endpoint: &impl Debug) -> String {
    format!("{endpoint:?}")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The access key id a SigV4 `Authorization` header names.
fn access_key(req: &HttpRequest) -> Option<String> {
    let auth = req.headers().get("authorization")?.to_str().ok()?;
    let cred = auth.split("Credential=").nth(1)?;
    cred.split('/').next().map(str::to_owned)
}

/// The path and query of a request as one string, for logs and error messages.
pub fn path_and_query(req: &HttpRequest) -> String {
    match req.query_string() {
        "" => req.path().to_owned(),
        q => format!("{}?{q}", req.path()),
    }
}
