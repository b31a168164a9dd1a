//! The Google GKE facade: `container.googleapis.com/v1` over the shared cluster
//! registry.
//!
//! # Layout
//!
//! - [`router`]: one [`router::Endpoint`] variant per GKE operation.
//! - [`error`]: the facade's error enum, mapped to google.rpc.Status.
//! - [`render`]: the shared record in GKE vocabulary (status, endpoint, CA).
//! - [`cluster`]: the cluster operations.

pub mod cluster;
pub mod error;
pub mod render;
pub mod router;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use kemu_shared::{ApiHandler, ClusterRegistry};

pub use error::Error;
pub use router::Endpoint;

/// The GKE facade, cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Gke {
    registry: ClusterRegistry,
}

impl Gke {
    /// A facade over `registry`.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self { registry }
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }
}

impl ApiHandler for Gke {
    const API_NAME: &'static str = "gke";
    type Endpoint = Endpoint;
    type Error = Error;

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        Endpoint::parse(req.method(), req.path())
    }

    async fn handle(
        &self,
        _req: HttpRequest,
        _body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        match endpoint {
            Endpoint::GetCluster { scope, name } => cluster::get(self, &scope, &name),
            Endpoint::ListClusters { scope } => cluster::list(self, &scope),
        }
    }
}
