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
        .map_err(|e| failed(describe(&e, url)))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| failed(describe(&e, url)))?;
    if !status.is_success() {
        return Err(format!(
            "received invalid webhook response: expected response code 200, got {}",
            status.as_u16()
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("received invalid webhook response: {e}"))
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

/// The innermost cause of a transport error, worded as Go's net/http words
/// the common ones (a refused connection, a timeout).
fn describe(e: &reqwest::Error, url: &str) -> String {
    if e.is_timeout() {
        return "context deadline exceeded".into();
    }
    let mut source: &dyn std::error::Error = e;
    while let Some(inner) = source.source() {
        source = inner;
    }
    let refused = source
        .downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    if refused {
        let host = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split(['/', '?'])
            .next()
            .unwrap_or_default();
        return format!("dial tcp {host}: connect: connection refused");
    }
    source.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_refused_connection_is_worded_as_go_words_it() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let hook = Webhook {
            name: "w".into(),
            configuration: "c".into(),
            spec: json!({"timeoutSeconds": 1}),
        };
        let url = format!("http://127.0.0.1:{port}/x?timeout=1s");
        let err = post(&hook, &url, &json!({})).await.unwrap_err();
        assert_eq!(
            err,
            format!(
                "failed to call webhook: Post \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
    }
}
