//! An HTTPS client of one cluster's own listener, as a cluster admin
//! (`system:masters`) named by the caller: what fixtures apply through and
//! the dashboard's watch relay reads through, so both go by the cluster's API.

use kemu_shared::ClusterRecord;
use kemu_shared::pki::CertAndKey;

use crate::Kemu;

/// What connecting can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The cluster has no listener to connect to.
    #[error(
        "the cluster's API server is not live (state {0}; is kemu running with --no-dataplane?)"
    )]
    NotLive(String),
    /// The credential or the client could not be made.
    #[error("{0}")]
    Client(String),
}

/// A client of `record`'s listener: its URL, the client, and the
/// certificate the client presents (for a kubeconfig with the same one).
#[derive(Debug, Clone)]
pub struct ClusterClient {
    /// The API server's URL.
    pub server: String,
    /// The cluster's CA, PEM.
    pub ca_pem: String,
    /// Trusts only the cluster's CA; presents `cert`.
    pub http: reqwest::Client,
    /// The admin certificate, freshly issued by the cluster's CA.
    pub cert: CertAndKey,
}

impl ClusterClient {
    /// Connects to `record` as `user` in `system:masters`.
    pub fn admin(kemu: &Kemu, record: &ClusterRecord, user: &str) -> Result<Self, ConnectError> {
        let advertised = kemu_shared::advertise(record);
        let (Some(server), Some(ca)) = (advertised.server_url(), advertised.ca_pem()) else {
            return Err(ConnectError::NotLive(format!("{:?}", record.lifecycle)));
        };
        let client = |e: &dyn std::fmt::Display| ConnectError::Client(e.to_string());
        let cert = record
            .ca
            .client_cert(user, &["system:masters".into()], kemu.clock().now())
            .map_err(|e| client(&format!("client certificate: {e}")))?;
        let identity =
            reqwest::Identity::from_pem(format!("{}{}", cert.cert_pem, cert.key_pem).as_bytes())
                .map_err(|e| client(&e))?;
        let http = reqwest::Client::builder()
            .tls_certs_only(
                [reqwest::Certificate::from_pem(ca.as_bytes()).map_err(|e| client(&e))?],
            )
            .identity(identity)
            .build()
            .map_err(|e| client(&e))?;
        Ok(Self {
            server,
            ca_pem: ca.to_owned(),
            http,
            cert,
        })
    }
}
