//! The HTTPS call to an admission webhook: POST the AdmissionReview, verify
//! the server with the webhook's `caBundle`, give up after its
//! `timeoutSeconds`. Async: the request's worker is never blocked on it.

use std::time::Duration;

use serde_json::Value;

use crate::authz::admission::webhook::Webhook;

/// POSTs `review` to `url` and answers the response body, or the cause of
/// the failure worded as kube-apiserver words it (`failed to call webhook:
/// Post "…": …`).
pub async fn post(hook: &Webhook, url: &str, review: &Value) -> Result<Value, String> {
    let failed = |why: String| format!("failed to call webhook: Post \"{url}\": {why}");
    let client = client(hook).map_err(|e| failed(e.to_string()))?;
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .json(review)
        .send()
        .await
        .map_err(|e| failed(describe(&e)))?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(|e| failed(describe(&e)))?;
    if !status.is_success() {
        return Err(format!(
            "received invalid webhook response: expected response code 200, got {}",
            status.as_u16()
        ));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("received invalid webhook response: {e}"))
}

fn client(hook: &Webhook) -> Result<reqwest::Client, reqwest::Error> {
    kemu_shared::pki::install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(hook.timeout_seconds()))
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = hook.ca_bundle() {
        let certs = reqwest::Certificate::from_pem_bundle(&pem)?;
        builder = builder.tls_certs_only(certs);
    }
    builder.build()
}

/// The innermost cause of a transport error (`connection refused`, …), or
/// Go's wording for a timeout.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "context deadline exceeded".into();
    }
    let mut source: &dyn std::error::Error = e;
    while let Some(inner) = source.source() {
        source = inner;
    }
    source.to_string()
}
