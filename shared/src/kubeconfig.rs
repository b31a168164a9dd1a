//! Kubeconfig files: the one AKS hands out, the ones kemu writes for fixtures
//! and tests. Only a server URL, a CA and the user's credential go in.

use base64::Engine;
use serde_json::json;

use crate::cluster::{ClusterRecord, OwnerScope};

/// The cloud CLI command that writes a working kubeconfig for `cluster`
/// (what an error tells a caller holding stale or foreign credentials).
pub fn refresh_command(cluster: &ClusterRecord) -> String {
    let name = &cluster.name;
    let cli = match &cluster.scope {
        OwnerScope::Eks { region, .. } => {
            format!("`aws eks update-kubeconfig --name {name} --region {region}`")
        }
        OwnerScope::Gke { project, location } => format!(
            "`gcloud container clusters get-credentials {name} --location {location} --project {project}`"
        ),
        OwnerScope::Aks { resource_group, .. } => {
            format!("`az aks get-credentials --resource-group {resource_group} --name {name}`")
        }
    };
    format!("{cli} (or `kemu kubeconfig {name}`)")
}

/// How the kubeconfig's user authenticates.
#[derive(Debug, Clone)]
pub enum UserAuth {
    /// A client certificate and key, both PEM.
    ClientCert {
        /// Certificate, PEM.
        cert_pem: String,
        /// Key, PEM.
        key_pem: String,
    },
    /// A bearer token.
    Token(String),
}

/// A single-context kubeconfig, as YAML-compatible JSON text (kubectl reads
/// JSON kubeconfigs; JSON is a subset of YAML).
pub fn render(context: &str, server: &str, ca_pem: &str, user: &str, auth: &UserAuth) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user_entry = match auth {
        UserAuth::ClientCert { cert_pem, key_pem } => json!({
            "client-certificate-data": b64(cert_pem),
            "client-key-data": b64(key_pem),
        }),
        UserAuth::Token(token) => json!({ "token": token }),
    };
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": context, "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca_pem),
        }}],
        "users": [{ "name": user, "user": user_entry }],
        "contexts": [{ "name": context, "context": { "cluster": context, "user": user } }],
        "current-context": context,
        "preferences": {},
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}
