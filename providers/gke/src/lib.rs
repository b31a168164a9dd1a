//! The Google GKE facade: `container.googleapis.com/v1` over the shared cluster
//! registry, plus the two calls of other Google APIs its clients make on the
//! way (Service Usage's pre-flight check, compute's instance group managers).
//!
//! # Layout
//!
//! - [`router`]: one [`router::Endpoint`] variant per operation, from the
//!   `locations` or the legacy `zones` paths.
//! - [`error`]: the facade's error enum, mapped to google.rpc.Status.
//! - [`wire`]: request bodies (enums as names or numbers, unknown fields
//!   tolerated) and `enum-encoding=int` responses.
//! - [`auth`]: the bearer token every request needs, and the access-token
//!   authenticator of the clusters' Kubernetes API.
//! - [`state`]: what GKE keeps of a cluster beyond the shared record, and the
//!   Nodes (with GKE's labels) its node pools become.
//! - [`render`]: Cluster and NodePool resources; the endpoint and CA come only
//!   from the shared sentinel rule.
//! - [`cluster`], [`node_pool`]: the operations; [`operation`]: long-running
//!   Operations on the clock.
//! - [`server_config`]: versions and release channels.
//! - [`service_usage`], [`compute`]: the other APIs' calls; [`iam`]:
//!   Resource Manager's project IAM policies, which GKE authorizes by.

pub mod auth;
pub mod cluster;
pub mod compute;
pub mod error;
pub mod iam;
pub mod node_pool;
pub mod operation;
pub mod persist;
pub mod render;
pub mod router;
pub mod server_config;
pub mod service_usage;
pub mod state;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use kemu_shared::{ApiHandler, ClusterRegistry};
use serde_json::{Value, json};

pub use auth::AccessTokens;
pub use error::Error;
pub use router::Endpoint;

use cluster::Setter as C;
use node_pool::Setter as P;
use operation::{OpType, Operation, Operations};
use router::ClusterRef;
use wire::Shape;

/// How the facade behaves.
#[derive(Debug, Clone, Default)]
pub struct GkeOptions {
    /// How long, on the clock, clusters stay PROVISIONING (and updates keep
    /// them RECONCILING, deletions STOPPING) and operations RUNNING. Zero, the
    /// default, makes every operation DONE on its first get.
    pub provisioning: Duration,
}

/// The GKE facade, cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Gke {
    registry: ClusterRegistry,
    operations: Arc<Operations>,
    options: GkeOptions,
    tokens: Arc<AccessTokens>,
}

impl Gke {
    /// A facade over `registry` with default options.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self::with_options(registry, GkeOptions::default())
    }

    /// A facade over `registry` with `options`.
    pub fn with_options(registry: ClusterRegistry, options: GkeOptions) -> Self {
        Self {
            registry,
            operations: Arc::default(),
            options,
            tokens: Arc::default(),
        }
    }

    /// The clusters' token authenticator, which shares the facade's project
    /// IAM policies with the data plane: register it for GKE clusters.
    pub fn tokens(&self) -> Arc<AccessTokens> {
        self.tokens.clone()
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }

    /// Records an operation on `r` that ends after the provisioning delay, and
    /// renders it as the answer to the mutating call.
    fn start_operation(
        &self,
        r: &ClusterRef,
        kind: OpType,
        pool: Option<&str>,
        detail: String,
    ) -> Value {
        let now = self.registry.clock().now();
        let id = format!(
            "operation-{}-{}",
            now.timestamp_millis(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let op = Operation {
            id,
            project: r.project.clone(),
            location: r.location.clone(),
            kind,
            cluster: r.name.clone(),
            pool: pool.map(str::to_owned),
            start: now,
            end: now + chrono::Duration::from_std(self.options.provisioning).unwrap_or_default(),
            error: None,
            detail,
        };
        let rendered = op.render(now, true);
        tracing::info!(op = %op.id, kind = kind.name(), cluster = %r.name, "operation started");
        self.operations.push(op);
        rendered
    }

    fn run(
        &self,
        req: &HttpRequest,
        body: &[u8],
        endpoint: Endpoint,
    ) -> Result<(Value, Shape), Error> {
        use Endpoint as E;
        let now = self.registry.clock().now();
        let body = || wire::body(body);
        let op = |v: Result<Value, Error>| v.map(|v| (v, Shape::Operation));
        match endpoint {
            E::GetServerConfig(_) => Ok((server_config::render(), Shape::Other)),
            E::ListClusters(at) => Ok((cluster::list(self, &at)?, Shape::Other)),
            E::CreateCluster(at) => op(cluster::create(self, &at, &body()?)),
            E::GetCluster(r) => {
                let ua = req
                    .headers()
                    .get("user-agent")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or_default();
                Ok((cluster::get(self, &r, ua)?, Shape::Cluster))
            }
            E::UpdateCluster(r) => op(cluster::update(self, &r, &body()?)),
            E::DeleteCluster(r) => op(cluster::delete(self, &r)),
            E::SetResourceLabels(r) => op(cluster::set(self, &r, C::ResourceLabels, &body()?)),
            E::SetLegacyAbac(r) => op(cluster::set(self, &r, C::LegacyAbac, &body()?)),
            E::SetNetworkPolicy(r) => op(cluster::set(self, &r, C::NetworkPolicy, &body()?)),
            E::SetMaintenancePolicy(r) => {
                op(cluster::set(self, &r, C::MaintenancePolicy, &body()?))
            }
            E::SetMasterAuth(r) => op(cluster::set(self, &r, C::MasterAuth, &body()?)),
            E::StartIpRotation(r) => op(cluster::set(self, &r, C::StartIpRotation, &body()?)),
            E::CompleteIpRotation(r) => op(cluster::set(self, &r, C::CompleteIpRotation, &body()?)),
            E::UpdateMaster(r) => op(cluster::set(self, &r, C::UpdateMaster, &body()?)),
            E::SetLogging(r) => op(cluster::set(self, &r, C::Logging, &body()?)),
            E::SetMonitoring(r) => op(cluster::set(self, &r, C::Monitoring, &body()?)),
            E::SetAddons(r) => op(cluster::set(self, &r, C::Addons, &body()?)),
            E::SetLocations(r) => op(cluster::set(self, &r, C::Locations, &body()?)),
            E::ListNodePools(r) => Ok((node_pool::list(self, &r)?, Shape::Other)),
            E::CreateNodePool(r) => op(node_pool::create(self, &r, &body()?)),
            E::GetNodePool(r) => Ok((node_pool::get(self, &r)?, Shape::NodePool)),
            E::UpdateNodePool(r) => op(node_pool::set(self, &r, P::Update, &body()?)),
            E::DeleteNodePool(r) => op(node_pool::delete(self, &r)),
            E::SetNodePoolSize(r) => op(node_pool::set(self, &r, P::Size, &body()?)),
            E::SetNodePoolAutoscaling(r) => op(node_pool::set(self, &r, P::Autoscaling, &body()?)),
            E::SetNodePoolManagement(r) => op(node_pool::set(self, &r, P::Management, &body()?)),
            E::RollbackNodePool(r) => op(node_pool::set(self, &r, P::Rollback, &body()?)),
            E::ListOperations(at) => {
                let ops: Vec<Value> = self
                    .operations
                    .list(&at)
                    .iter()
                    .map(|o| o.render(now, false))
                    .collect();
                Ok((json!({ "operations": ops }), Shape::Other))
            }
            E::GetOperation(r) => op(Ok(self.operations.get(&r)?.render(now, false))),
            E::CancelOperation(r) => {
                self.operations.cancel(&r, now)?;
                Ok((json!({}), Shape::Other))
            }
            E::GetIamPolicy { project } => Ok((self.tokens.iam().get(&project), Shape::Other)),
            E::SetIamPolicy { project } => Ok((
                self.tokens.iam().set(&project, &Value::Object(body()?))?,
                Shape::Other,
            )),
            E::GetService { project, service } => {
                Ok((service_usage::get(&project, &service), Shape::Other))
            }
            E::ListInstanceGroupManagers { project, zone } => {
                Ok((compute::list(self, &project, &zone), Shape::Other))
            }
            E::GetInstanceGroupManager {
                project,
                zone,
                name,
            } => Ok((compute::get(self, &project, &zone, &name)?, Shape::Other)),
        }
    }
}

impl ApiHandler for Gke {
    const API_NAME: &'static str = "gke";

    fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }
    type Endpoint = Endpoint;
    type Error = Error;

    fn panicked() -> Error {
        Error::Internal("Internal error encountered.".into())
    }

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        Endpoint::parse(req.method(), req.path())
    }

    async fn handle(
        &self,
        req: HttpRequest,
        body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        auth::bearer(&req)?;
        let (mut value, shape) = self.run(&req, &body, endpoint)?;
        if wire::wants_int_enums(&req) {
            wire::numbers_for_names(&mut value, shape);
        }
        Ok(HttpResponse::Ok().json(value))
    }
}
