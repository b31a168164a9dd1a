//! The one engine that serves every cluster's listener, and the store of each
//! cluster it serves.

use std::sync::Arc;

use actix_web::web;
use dashmap::DashMap;
use kemu_shared::{Cloud, ClusterRecord, ClusterRegistry};

use crate::api;
use crate::authz::{self, Mode};
use crate::controllers::store_client::StoreClient;
use crate::controllers::{ControllerConfig, Controllers};
use crate::network::{self, ClusterNetwork};
use crate::nodes;
use crate::resources::ResourceRegistry;
use crate::store::{MemoryStore, Store, StoreLimits};
use crate::volumes::{self, Provisioner};

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
    stores: Arc<DashMap<String, Arc<dyn Store>>>,
    controllers: Arc<DashMap<String, Controllers>>,
    networks: Arc<DashMap<String, Arc<ClusterNetwork>>>,
    authorization: Mode,
}

/// The tokio runtime every cluster's controllers run on. Process-wide and never
/// dropped: a runtime must not be dropped from inside another one, and engines
/// are dropped wherever their last clone goes.
fn controller_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kemu-controllers")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the controllers' runtime: {e}"))
    })
}

impl Engine {
    /// An engine answering for the clusters of `registry`.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self {
            registry,
            resources: Arc::new(ResourceRegistry::served()),
            stores: Arc::new(DashMap::new()),
            controllers: Arc::new(DashMap::new()),
            networks: Arc::new(DashMap::new()),
            authorization: Mode::default(),
        }
    }

    /// The same engine authorizing requests in `mode` (RBAC by default).
    pub fn with_authorization(mut self, mode: Mode) -> Self {
        self.authorization = mode;
        self
    }

    /// How the engine authorizes requests.
    pub fn authorization(&self) -> Mode {
        self.authorization
    }

    /// The resource types every cluster serves.
    pub fn resources(&self) -> &Arc<ResourceRegistry> {
        &self.resources
    }

    /// The registry the engine serves.
    pub fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }

    /// The store of a served cluster.
    pub fn store(&self, cluster_id: &str) -> Option<Arc<dyn Store>> {
        self.stores.get(cluster_id).map(|s| s.value().clone())
    }

    /// Opens the cluster's store if it has none (an in-memory one with the
    /// initial namespaces and the bootstrap RBAC policy, plus AKS's own
    /// bindings on AKS) and brings its Nodes in line with the record's node
    /// pools.
    pub fn open_store(&self, record: &ClusterRecord) -> Arc<dyn Store> {
        let mut created = false;
        let store = self
            .stores
            .entry(record.id.clone())
            .or_insert_with(|| {
                created = true;
                let store = MemoryStore::new(self.registry.clock().clone(), StoreLimits::default());
                authz::store_source::seed(&store, authz::bootstrap::objects().iter().cloned());
                if record.cloud() == Cloud::Aks {
                    authz::store_source::seed(&store, authz::cloud::aks::bootstrap_objects(&[]));
                }
                Arc::new(store)
            })
            .value()
            .clone();
        nodes::reconcile(store.as_ref(), record);
        let net = self
            .networks
            .entry(record.id.clone())
            .or_insert_with(|| Arc::new(ClusterNetwork::for_record(record)))
            .value()
            .clone();
        network::apiserver::reconcile(store.as_ref(), network::apiserver::listener(record), &net);
        if created {
            volumes::classes::seed(store.as_ref(), record);
            self.start_controllers(record, store.clone());
        }
        store
    }

    /// Points the cluster's `kubernetes` Service at its bound listener.
    pub fn listener_bound(&self, cluster_id: &str, host: &str, port: u16) {
        if let (Some(store), Some(net)) = (self.store(cluster_id), self.network(cluster_id)) {
            network::apiserver::reconcile(store.as_ref(), Some((host, port)), &net);
        }
    }

    /// The networking of a served cluster (service CIDR, allocators).
    pub fn network(&self, cluster_id: &str) -> Option<Arc<ClusterNetwork>> {
        self.networks.get(cluster_id).map(|n| n.value().clone())
    }

    /// Starts the cluster's controllers, scheduler and kubelet on its store.
    fn start_controllers(&self, record: &ClusterRecord, store: Arc<dyn Store>) {
        let client = StoreClient::new(store, self.resources.clone());
        let config = ControllerConfig {
            root_ca: Some(Arc::from(record.ca.cert_pem())),
            network: self.network(&record.id),
            provisioner: Provisioner::new(record.scope.clone(), &record.name),
            ..ControllerConfig::default()
        };
        let clock = self.registry.clock().clone();
        let _guard = controller_runtime().enter();
        let controllers = Controllers::start(client, clock, config);
        self.controllers.insert(record.id.clone(), controllers);
    }

    /// The running controllers of a served cluster (tests wait on them).
    pub fn controllers(
        &self,
        cluster_id: &str,
    ) -> Option<dashmap::mapref::one::Ref<'_, String, Controllers>> {
        self.controllers.get(cluster_id)
    }

    /// Re-reads a changed record: its Nodes follow its node pools.
    pub fn record_changed(&self, record: &ClusterRecord) {
        if let Some(store) = self.store(&record.id) {
            nodes::reconcile(store.as_ref(), record);
            if let Some(net) = self.network(&record.id) {
                let listener = network::apiserver::listener(record);
                network::apiserver::reconcile(store.as_ref(), listener, &net);
            }
        }
    }

    /// Forgets a retired cluster's objects.
    pub fn drop_store(&self, cluster_id: &str) {
        self.controllers.remove(cluster_id);
        self.networks.remove(cluster_id);
        self.stores.remove(cluster_id);
    }

    /// Mounts every route of one cluster's listener.
    pub fn configure(&self, cfg: &mut web::ServiceConfig, cluster: ClusterContext) {
        cfg.app_data(web::Data::new(self.clone()))
            .app_data(web::Data::new(cluster));
        api::configure(cfg);
    }
}
