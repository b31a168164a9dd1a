//! The one engine that serves every cluster's listener.

use std::sync::Arc;

use actix_web::web;
use kemu_shared::ClusterRegistry;

use crate::api;
use crate::resources::ResourceRegistry;

/// Which cluster a listener serves; set as app data on each listener.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// The cluster's id in the registry.
    pub id: String,
}

/// The shared Kubernetes API engine.
#[derive(Debug, Clone)]
pub struct Engine {
    registry: ClusterRegistry,
    resources: Arc<ResourceRegistry>,
}

impl Engine {
    /// An engine answering for the clusters of `registry`.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self {
            registry,
            resources: Arc::new(ResourceRegistry::builtin()),
        }
    }

    /// The resource types every cluster serves.
    pub fn resources(&self) -> &Arc<ResourceRegistry> {
        &self.resources
    }

    /// The registry the engine serves.
    pub fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }

    /// Mounts every route of one cluster's listener.
    pub fn configure(&self, cfg: &mut web::ServiceConfig, cluster: ClusterContext) {
        cfg.app_data(web::Data::new(self.clone()))
            .app_data(web::Data::new(cluster));
        api::configure(cfg);
    }
}
