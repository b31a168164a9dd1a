//! The Amazon EKS facade: the EKS REST-JSON API over the shared cluster registry.
//!
//! # Layout
//!
//! - [`router`]: one [`router::Endpoint`] variant per EKS operation, parsed from
//!   method and path.
//! - [`error`]: the facade's error enum, mapped to `x-amzn-ErrorType` + `{"message"}`.
//! - [`render`]: the shared record in EKS vocabulary (status, endpoint, CA).
//! - [`cluster`]: the cluster operations.

pub mod cluster;
pub mod error;
pub mod render;
pub mod router;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use kemu_shared::{ApiHandler, ClusterRegistry, OwnerScope};

pub use error::Error;
pub use router::Endpoint;

/// The account every request acts as, unless configured otherwise.
pub const DEFAULT_ACCOUNT: &str = "000000000000";
/// The region assumed when a request names none.
pub const DEFAULT_REGION: &str = "us-east-1";

/// The EKS facade, cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Eks {
    registry: ClusterRegistry,
    account: String,
}

impl Eks {
    /// A facade over `registry`, acting as the default account.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self {
            registry,
            account: DEFAULT_ACCOUNT.to_owned(),
        }
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }

    /// The account and region a request acts in: the region from the SigV4
    /// credential scope (`Credential=AKID/date/REGION/eks/aws4_request`).
    pub fn scope_of(&self, req: &HttpRequest) -> OwnerScope {
        let region = req
            .headers()
            .get("authorization")
            .and_then(|h| h.to_str().ok())
            .and_then(|auth| auth.split("Credential=").nth(1))
            .and_then(|cred| cred.split('/').nth(2))
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_REGION);
        OwnerScope::Eks {
            account: self.account.clone(),
            region: region.to_owned(),
        }
    }
}

impl ApiHandler for Eks {
    const API_NAME: &'static str = "eks";
    type Endpoint = Endpoint;
    type Error = Error;

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        Endpoint::parse(req.method(), req.path())
    }

    async fn handle(
        &self,
        req: HttpRequest,
        _body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        let scope = self.scope_of(&req);
        match endpoint {
            Endpoint::DescribeCluster { name } => cluster::describe(self, &scope, &name),
            Endpoint::ListClusters => cluster::list(self, &scope),
        }
    }
}
