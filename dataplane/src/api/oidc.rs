//! Service-account issuer discovery, as kube-apiserver serves it:
//! `/.well-known/openid-configuration` and `/openid/v1/jwks` (the cluster's
//! service-account key as a JWK set), so relying parties can verify the
//! tokens [`crate::api::token`] issues. Who may read them is RBAC's call
//! (upstream binds `system:service-account-issuer-discovery` to every
//! ServiceAccount).

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;
use crate::sa_token;

fn record(
    engine: &Engine,
    cluster: &ClusterContext,
) -> Result<kemu_shared::ClusterRecord, ApiError> {
    engine
        .registry()
        .get(&cluster.id)
        .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))
}

/// GET `/.well-known/openid-configuration`.
pub async fn configuration(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let record = record(&engine, &cluster)?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .json(json!({
            "issuer": sa_token::issuer(&record),
            "jwks_uri": sa_token::jwks_uri(&record),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })))
}

/// GET `/openid/v1/jwks`.
pub async fn jwks(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let record = record(&engine, &cluster)?;
    let body = json!({ "keys": [record.sa_key.jwk()] });
    Ok(HttpResponse::Ok()
        .content_type("application/jwk-set+json")
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(body.to_string()))
}
