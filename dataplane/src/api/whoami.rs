//! `SelfSubjectReview` (`kubectl auth whoami`): who the server thinks the caller is.

use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use kemu_shared::UserInfo;
use serde_json::json;

/// POST `/apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub async fn create(req: HttpRequest) -> HttpResponse {
    let user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_default();
    let mut info = json!({ "username": user.username, "groups": user.groups });
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    HttpResponse::Created().json(json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": { "creationTimestamp": null },
        "status": { "userInfo": info },
    }))
}
