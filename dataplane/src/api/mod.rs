//! The Kubernetes API machinery over HTTP, one file per concern.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::ApiError;

pub mod admission;
pub mod binding;
pub mod deadline;
pub mod delete;
pub mod discovery;
pub mod eviction;
pub mod field_validation;
pub mod go_types;
pub mod health;
pub mod log;
pub mod managedfields;
pub mod netpol;
pub mod observe;
pub mod oidc;
pub mod openapi;
pub mod options;
pub mod parse_pool;
pub mod partial;
pub mod patch;
pub mod pod_views;
pub mod protobuf;
pub mod proxy;
pub mod recover;
pub mod request;
pub mod resource;
pub mod reviews;
pub mod selectors;
pub mod streams;
pub mod subresources;
pub mod table;
pub mod token;
pub mod validation;
pub mod version;
pub mod watch;
pub mod webhook_call;
pub mod whoami;
pub mod wire;

/// Mounts every API route; anything else is a 404 `Status`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/version", web::get().to(version::get))
        .route("/metrics", web::get().to(observe::metrics))
        .route("/version/", web::get().to(version::get))
        .route("/healthz", web::get().to(health::get))
        .route("/livez", web::get().to(health::get))
        .route("/readyz", web::get().to(health::get))
        .route("/healthz/{check}", web::get().to(health::check))
        .route("/livez/{check}", web::get().to(health::check))
        .route("/readyz/{check}", web::get().to(health::check))
        .route(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            web::post().to(whoami::create),
        )
        .configure(reviews::configure)
        .configure(netpol::configure)
        .route("/api", web::get().to(discovery::core_versions))
        .route("/api/", web::get().to(discovery::core_versions))
        .route("/apis", web::get().to(discovery::groups))
        .route("/apis/", web::get().to(discovery::groups))
        .route("/api/v1", web::get().to(discovery::core_resources))
        .route("/api/v1/", web::get().to(discovery::core_resources))
        .route("/apis/{group}", web::get().to(discovery::group))
        .route("/apis/{group}/", web::get().to(discovery::group))
        .route(
            "/apis/{group}/{version}",
            web::get().to(discovery::group_resources),
        )
        .route(
            "/apis/{group}/{version}/",
            web::get().to(discovery::group_resources),
        )
        .route(
            "/.well-known/openid-configuration",
            web::get().to(oidc::configuration),
        )
        .route("/openid/v1/jwks", web::get().to(oidc::jwks))
        .route("/openapi/v2", web::get().to(openapi::v2))
        .route("/openapi/v3", web::get().to(openapi::v3_root))
        .route("/openapi/v3/{path:.*}", web::get().to(openapi::v3_document))
        .route(
            "/apis/metrics.k8s.io/v1beta1/{path:.*}",
            web::get().to(crate::metrics::api::dispatch),
        )
        .route("/api/v1/{path:.*}", web::to(resource::dispatch))
        .route(
            "/apis/{group}/{version}/{path:.*}",
            web::to(resource::dispatch),
        )
        .default_service(web::to(not_found));
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    tracing::debug!(path = %kemu_shared::facade::path_and_query(&req), "no route");
    Err(ApiError::NotFound)
}
