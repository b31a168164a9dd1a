//! `/healthz`, `/livez` and `/readyz`: `ok` as plain text, as upstream answers,
//! and their individual checks (`/livez/ping`, `/readyz/etcd`, …).

use actix_web::{HttpRequest, HttpResponse};

/// The checks kube-apiserver serves under each health endpoint that hold for
/// any live kemu cluster (its store is in the process; no post-start hook
/// is pending once the listener serves).
const CHECKS: [&str; 4] = ["ping", "log", "etcd", "informer-sync"];

/// Answers `ok` while the cluster's listener is up.
pub async fn get() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body("ok")
}

/// One named check: `ok`, or upstream's plain-text 404 for a check it does
/// not have.
pub async fn check(req: HttpRequest) -> HttpResponse {
    let name = req.match_info().get("check").unwrap_or_default();
    if CHECKS.contains(&name) {
        return get().await;
    }
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body("404 page not found\n")
}
