//! `SelfSubjectReview` (`kubectl auth whoami`): who the server thinks the caller is.

use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use chrono::SecondsFormat;
use kemu_shared::UserInfo;
use serde_json::json;

use crate::api::wire;
use crate::engine::Engine;

/// POST `/apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub async fn create(req: HttpRequest) -> HttpResponse {
    let user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_default();
    let info = crate::auth::user_info_json(&user);
    // Upstream stamps the review with the time it answered.
    let now = req.app_data::<web::Data<Engine>>().map(|e| {
        e.registry()
            .clock()
            .now()
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    });
    wire::respond(
        HttpResponse::Created(),
        &json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": { "creationTimestamp": now },
            "status": { "userInfo": info },
        }),
    )
}
