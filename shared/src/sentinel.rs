//! The one rule for what a cluster advertises. All three facades render its
//! result; none decides for itself.
//!
//! - A cluster still provisioning, or failed, advertises nothing: no endpoint,
//!   no CA (as the clouds show while a cluster is being created).
//! - A cluster whose listener is bound advertises that listener and its own CA.
//! - Any other cluster (no data plane, or the listener not bound yet) advertises
//!   the [`SENTINEL_HOST`] and **no CA**: a real CA beside an endpoint that leads
//!   nowhere would let a kubeconfig look valid while it cannot work.

use crate::cluster::{ClusterRecord, Lifecycle, Serving};

/// The host shown when the data plane does not serve a cluster. `.invalid` never
/// resolves (RFC 2606), so a client fails fast with a clear DNS error.
pub const SENTINEL_HOST: &str = "dataplane-not-live.kemu.invalid";

/// The port shown with [`SENTINEL_HOST`].
pub const SENTINEL_PORT: u16 = 443;

/// What a cluster shows of its data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advertised {
    /// No endpoint yet and no CA.
    Unassigned,
    /// The sentinel endpoint and no CA: credentials cannot be issued.
    Sentinel,
    /// The real endpoint and CA.
    Live {
        /// Host of the cluster's listener.
        host: String,
        /// Port of the cluster's listener.
        port: u16,
        /// The cluster CA, PEM.
        ca_pem: String,
    },
}

impl Advertised {
    /// The endpoint as `host:port`, if one is shown.
    pub fn host_port(&self) -> Option<String> {
        match self {
            Advertised::Unassigned => None,
            Advertised::Sentinel => Some(format!("{SENTINEL_HOST}:{SENTINEL_PORT}")),
            Advertised::Live { host, port, .. } => Some(format!("{}:{port}", bracket(host))),
        }
    }

    /// The host alone, if one is shown.
    pub fn host(&self) -> Option<&str> {
        match self {
            Advertised::Unassigned => None,
            Advertised::Sentinel => Some(SENTINEL_HOST),
            Advertised::Live { host, .. } => Some(host),
        }
    }

    /// The server URL a kubeconfig would hold, if one is shown.
    pub fn server_url(&self) -> Option<String> {
        self.host_port().map(|hp| format!("https://{hp}"))
    }

    /// The CA PEM, only when the endpoint is live.
    pub fn ca_pem(&self) -> Option<&str> {
        match self {
            Advertised::Live { ca_pem, .. } => Some(ca_pem),
            _ => None,
        }
    }

    /// The CA as base64 of its PEM, the form all three clouds put on the wire.
    pub fn ca_base64(&self) -> Option<String> {
        use base64::Engine;
        self.ca_pem()
            .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem))
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Decides what `record` advertises. The only place this is decided.
pub fn advertise(record: &ClusterRecord) -> Advertised {
    match (record.lifecycle, &record.serving) {
        (Lifecycle::Provisioning | Lifecycle::Failed, _) => Advertised::Unassigned,
        (_, Serving::Live { host, port }) => Advertised::Live {
            host: host.clone(),
            port: *port,
            ca_pem: record.ca.cert_pem().to_owned(),
        },
        (_, Serving::Disabled | Serving::Pending) => Advertised::Sentinel,
    }
}
