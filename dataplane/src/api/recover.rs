//! Panic recovery, as kube-apiserver's `WithPanicRecovery` filter: a request
//! whose handling panics (a bug) is answered 500 with upstream's sentence, as
//! a `metav1.Status`, and logged with its path; the worker and the
//! connection serve on.

use std::panic::AssertUnwindSafe;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use futures_util::FutureExt;

use crate::error::ApiError;

/// What upstream answers a request that panicked.
pub const PANICKED: &str = "This request caused apiserver to panic. Look in the logs for details.";

/// Runs the rest of the chain, answering a panic in it with a 500 Status.
pub async fn catch_panics(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    // Not a clone of the request: routing needs it unshared.
    let (method, path) = (req.method().clone(), req.path().to_owned());
    match AssertUnwindSafe(next.call(req)).catch_unwind().await {
        Ok(res) => res,
        Err(panic) => {
            let panic = kemu_shared::panics::message(panic.as_ref());
            tracing::error!(%method, %path, %panic, "request handler panicked");
            // actix answers an error with its own `error_response`.
            Err(ApiError::Internal(PANICKED.into()).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::{App, HttpResponse, test, web};

    use super::*;

    #[actix_web::test]
    async fn a_panic_is_a_500_status_and_the_service_serves_on() {
        let app = test::init_service(
            App::new()
                .wrap(actix_web::middleware::from_fn(catch_panics))
                .route(
                    "/bad",
                    web::get().to(|req: actix_web::HttpRequest| async move {
                        let missing = req.headers().get("x-missing");
                        HttpResponse::Ok().body(format!("{:?}", missing.expect("a bug")))
                    }),
                )
                .route(
                    "/good",
                    web::get().to(|| async { HttpResponse::Ok().body("ok") }),
                ),
        )
        .await;
        let bad = test::TestRequest::get().uri("/bad").to_request();
        // The server writes an error with its `error_response`, as here.
        let bad = test::try_call_service(&app, bad)
            .await
            .err()
            .expect("an error");
        let bad = bad.error_response();
        assert_eq!(bad.status(), 500);
        let body = actix_web::body::to_bytes(bad.into_body()).await.unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 500);
        assert_eq!(status["message"], PANICKED);
        let good =
            test::call_service(&app, test::TestRequest::get().uri("/good").to_request()).await;
        assert_eq!(good.status(), 200);
    }
}
