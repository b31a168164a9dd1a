//! The cloud facades' side of the write-ahead log: after every mutating call
//! (anything but GET and HEAD) has run, and before its response leaves, the
//! cloud state is logged if it changed. One generic middleware for all three
//! facades; no facade knows about persistence.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::web;

use super::Persistence;
use crate::Kemu;

/// App data of a facade listener: where its writes are logged, if anywhere.
#[derive(Debug, Clone)]
pub struct CloudLog(pub Option<(Persistence, Kemu)>);

/// Middleware: runs the call, then logs the cloud state if the call may have
/// changed it.
pub async fn log_cloud_writes(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let log = req
        .app_data::<web::Data<CloudLog>>()
        .and_then(|l| l.0.clone())
        .filter(|_| !matches!(*req.method(), Method::GET | Method::HEAD));
    let response = next.call(req).await?;
    if let Some((persistence, kemu)) = log {
        persistence.record_cloud(&kemu);
    }
    Ok(response)
}
