//! A server measured: its URL and an admin credential, read from a
//! kubeconfig, and HTTPS clients that each hold a connection of their own.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use serde_json::Value;

/// A server and the credential every request of a case presents.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's base URL, without a trailing slash.
    pub base: String,
    ca_pem: Vec<u8>,
    /// PEM certificate and key; none for a server that needs no credential.
    identity_pem: Option<Vec<u8>>,
    /// A bearer token presented instead of the certificate.
    token: Option<String>,
}

impl Target {
    /// The first cluster and user of the kubeconfig at `path` (embedded CA
    /// and client certificate, as `kemu` and `scripts/upstream` write them).
    pub fn from_kubeconfig(path: &Path) -> anyhow::Result<Self> {
        let p = path.display();
        let text = std::fs::read_to_string(path).with_context(|| format!("{p}"))?;
        let config: Value = serde_norway::from_str(&text).with_context(|| format!("{p}"))?;
        let field = |list: &str, inner: &str, key: &str| -> anyhow::Result<Vec<u8>> {
            let b64 = config[list][0][inner][key]
                .as_str()
                .ok_or_else(|| anyhow!("{p}: no {list}[0].{inner}.{key}"))?;
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .with_context(|| format!("{p}: {list}[0].{inner}.{key}"))
        };
        let base = config["clusters"][0]["cluster"]["server"]
            .as_str()
            .ok_or_else(|| anyhow!("{p}: no clusters[0].cluster.server"))?;
        let mut identity = field("users", "user", "client-certificate-data")?;
        identity.extend(field("users", "user", "client-key-data")?);
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            ca_pem: field("clusters", "cluster", "certificate-authority-data")?,
            identity_pem: Some(identity),
            token: None,
        })
    }

    /// A server at `base` trusting `ca_pem`, with no credential.
    pub fn anonymous(base: &str, ca_pem: &[u8]) -> Self {
        Self {
            base: base.to_owned(),
            ca_pem: ca_pem.to_vec(),
            identity_pem: None,
            token: None,
        }
    }

    /// The same server, authenticating with `token` instead.
    pub fn with_token(&self, token: &str) -> Self {
        Self {
            identity_pem: None,
            token: Some(token.to_owned()),
            ..self.clone()
        }
    }

    /// `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A client of its own (its own connection pool): HTTP/2 when the server
    /// offers it, as kubectl and client-go talk.
    pub fn client(&self) -> anyhow::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&self.ca_pem)?])
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(1);
        if let Some(identity) = &self.identity_pem {
            builder = builder.identity(reqwest::Identity::from_pem(identity)?);
        }
        if let Some(token) = &self.token {
            let mut headers = reqwest::header::HeaderMap::new();
            let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?;
            headers.insert(reqwest::header::AUTHORIZATION, value);
            builder = builder.default_headers(headers);
        }
        Ok(builder.build()?)
    }

    /// `n` clients, each with its own connection.
    pub fn clients(&self, n: usize) -> anyhow::Result<Vec<reqwest::Client>> {
        (0..n).map(|_| self.client()).collect()
    }
}

/// Sends `request`, reads the whole body and checks the status is `want`.
pub async fn expect(
    request: reqwest::RequestBuilder,
    want: u16,
    what: &str,
) -> anyhow::Result<bytes::Bytes> {
    let resp = request.send().await.with_context(|| what.to_owned())?;
    let status = resp.status().as_u16();
    // Read to the end, as a client does: an HTTP/2 stream dropped unread is
    // reset, and a connection ends after too many of those.
    let body = resp.bytes().await.with_context(|| what.to_owned())?;
    if status != want {
        bail!(
            "{what}: answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(body)
}
