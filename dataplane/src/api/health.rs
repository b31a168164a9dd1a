//! `/healthz`, `/livez` and `/readyz`: `ok` as plain text, as upstream answers.

use actix_web::HttpResponse;

/// Answers `ok` while the cluster's listener is up.
pub async fn get() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body("ok")
}
