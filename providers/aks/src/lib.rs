//! The Azure AKS facade: Azure Resource Manager's `Microsoft.ContainerService`
//! over the shared cluster registry.
//!
//! # Layout
//!
//! - [`router`]: one [`router::Endpoint`] variant per ARM operation; paths match
//!   without case, as ARM's do.
//! - [`error`]: the facade's error enum, mapped to ARM's `{"error":{code,message}}`.
//! - [`render`]: the shared record in AKS vocabulary (provisioningState,
//!   powerState, fqdn, kubeconfig).
//! - [`cluster`]: the managed cluster operations.

pub mod cluster;
pub mod error;
pub mod render;
pub mod router;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use kemu_shared::{ApiHandler, ClusterRegistry};

pub use error::Error;
pub use router::Endpoint;

/// The AKS facade, cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Aks {
    registry: ClusterRegistry,
}

impl Aks {
    /// A facade over `registry`.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self { registry }
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }
}

impl ApiHandler for Aks {
    const API_NAME: &'static str = "aks";
    type Endpoint = Endpoint;
    type Error = Error;

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        let endpoint = Endpoint::parse(req.method(), req.path())?;
        router::require_api_version(req.query_string())?;
        Ok(endpoint)
    }

    async fn handle(
        &self,
        _req: HttpRequest,
        _body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        match endpoint {
            Endpoint::GetManagedCluster {
                subscription,
                resource_group,
                name,
            } => cluster::get(self, &subscription, &resource_group, &name),
        }
    }
}
