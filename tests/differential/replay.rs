//! Replays a case file against one server and keeps its answers as they came.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::case::{Case, CaseFile};
use crate::json::Json;

/// The headers whose values are compared.
pub const COMPARED_HEADERS: [&str; 3] = ["content-type", "warning", "location"];

/// A server to replay against: its base URL and a client holding an admin
/// credential for it.
pub struct Target {
    pub base: String,
    client: reqwest::Client,
}

/// One answer as the server sent it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Answer {
    pub id: String,
    pub status: u16,
    /// The compared headers present, by lowercase name (repeated ones
    /// joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body as text (a watch: the event lines received).
    pub body: String,
}

impl Target {
    /// The server of a kubeconfig's current (or first) context, with its
    /// embedded CA and client certificate.
    pub fn from_kubeconfig(path: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let config: serde_json::Value =
            serde_norway::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        let field = |list: &str, inner: &str, key: &str| -> Result<String, String> {
            config[list][0][inner][key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{path}: no {list}[0].{inner}.{key}"))
        };
        let decode = |b64: String| -> Result<Vec<u8>, String> {
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("{path}: {e}"))
        };
        let base = field("clusters", "cluster", "server")?;
        let ca = decode(field("clusters", "cluster", "certificate-authority-data")?)?;
        let mut identity = decode(field("users", "user", "client-certificate-data")?)?;
        identity.extend(decode(field("users", "user", "client-key-data")?)?);
        Self::new(base, &ca, &identity)
    }

    /// A target at `base` trusting `ca_pem`, authenticating with the PEM
    /// certificate and key in `identity_pem`.
    pub fn new(base: String, ca_pem: &[u8], identity_pem: &[u8]) -> Result<Self, String> {
        kemu::shared::pki::install_crypto_provider();
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(ca_pem).map_err(|e| e.to_string())?])
            .identity(reqwest::Identity::from_pem(identity_pem).map_err(|e| e.to_string())?)
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            base: base.trim_end_matches('/').to_string(),
            client,
        })
    }

    /// Every case of `file`, in order, in its own namespace; the answers in
    /// the same order.
    pub async fn replay(&self, file: &CaseFile) -> Result<Vec<Answer>, String> {
        let ns = format!("diff-{}", file.stem);
        let mut vars = BTreeMap::from([("ns".to_string(), ns.clone())]);
        self.prepare(&ns).await?;
        let mut answers = Vec::new();
        for case in &file.cases {
            // A transport failure (a connection the server dropped) is an
            // answer too: status 0 and the error, and the file goes on.
            let answer = self.send(case, &vars).await.unwrap_or_else(|e| Answer {
                id: case.id.clone(),
                status: 0,
                headers: BTreeMap::new(),
                body: format!("no answer: {e}"),
            });
            if let Some(body) = answer_json(&answer) {
                for (name, path) in &case.capture {
                    if let Some(value) = body.at(path) {
                        let text = match value {
                            Json::Str(s) => s.clone(),
                            other => other.emit(),
                        };
                        vars.insert(name.clone(), text);
                    }
                }
            }
            answers.push(answer);
        }
        Ok(answers)
    }

    /// The file's namespace and its `default` ServiceAccount, whoever makes
    /// them (kemu's controllers may be first).
    async fn prepare(&self, ns: &str) -> Result<(), String> {
        let namespace =
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let account = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
        for (path, body) in [
            ("/api/v1/namespaces".to_string(), namespace),
            (format!("/api/v1/namespaces/{ns}/serviceaccounts"), account),
        ] {
            let resp = self
                .client
                .post(format!("{}{path}", self.base))
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("{path}: {e}"))?;
            let status = resp.status().as_u16();
            if status != 201 && status != 409 {
                let text = resp.text().await.unwrap_or_default();
                return Err(format!("setup POST {path}: {status} {text}"));
            }
        }
        Ok(())
    }

    async fn send(&self, case: &Case, vars: &BTreeMap<String, String>) -> Result<Answer, String> {
        let path = substitute(&case.path, vars);
        let method: reqwest::Method = case.method.parse().map_err(|_| "bad method".to_string())?;
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        let body = match (&case.body, &case.body_text) {
            (Some(v), _) => Some(substitute(&v.to_string(), vars)),
            (None, Some(t)) => Some(substitute(t, vars)),
            (None, None) => None,
        };
        let given = |name: &str| case.headers.keys().any(|k| k.eq_ignore_ascii_case(name));
        if !given("accept") {
            req = req.header("accept", "application/json");
        }
        if body.is_some() && !given("content-type") {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in &case.headers {
            req = req.header(k.as_str(), substitute(v, vars));
        }
        if let Some(body) = body {
            req = req.body(body);
        }
        let mut resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let mut headers = BTreeMap::new();
        for name in COMPARED_HEADERS {
            let values: Vec<&str> = resp
                .headers()
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            if !values.is_empty() {
                headers.insert(name.to_string(), values.join(", "));
            }
        }
        let body = match case.watch {
            Some(events) if status == 200 => read_events(&mut resp, events).await?,
            _ => {
                let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        Ok(Answer {
            id: case.id.clone(),
            status,
            headers,
            body,
        })
    }
}

/// Up to `events` lines of a watch stream; fewer when the server ends it,
/// or after 20 s (a missing event is then a difference, not a hang).
async fn read_events(resp: &mut reqwest::Response, events: usize) -> Result<String, String> {
    let mut text = Vec::new();
    let read = async {
        while text.iter().filter(|b| **b == b'\n').count() < events {
            match resp.chunk().await {
                Ok(Some(chunk)) => text.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    };
    // Past the deadline what arrived is the answer.
    if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(20), read).await {
        return Err(e);
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// `{name}` replaced by each variable's value.
fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// The answer's body as JSON, if it is JSON.
pub fn answer_json(answer: &Answer) -> Option<Json> {
    Json::parse(&answer.body)
}
