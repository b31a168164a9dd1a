//! The Kubernetes API machinery over HTTP, one file per concern.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::ApiError;

pub mod health;
pub mod version;

/// Mounts every API route; anything else is a 404 `Status`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/version", web::get().to(version::get))
        .route("/version/", web::get().to(version::get))
        .route("/healthz", web::get().to(health::get))
        .route("/livez", web::get().to(health::get))
        .route("/readyz", web::get().to(health::get))
        .default_service(web::to(not_found));
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    tracing::debug!(path = %kemu_shared::facade::path_and_query(&req), "no route");
    Err(ApiError::NotFound)
}
