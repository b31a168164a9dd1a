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
use crate::resources::view::ClusterCustomTypes;
use crate::resources::{ClusterResources, ResourceRegistry};
use crate::store::{ClusterJournal, MemoryStore, Store, StoreImage, StoreLimits};
use crate::volumes::{self, Provisioner};

/// Which cluster a listener serves; set as app data on each listener.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// The cluster's id in the registry.
    pub id: String,
    /// Its name in its cloud (the request log's).
    pub name: String,
}

/// The shared Kubernetes API engine.
#[derive(Debug, Clone)]
pub struct Engine {
    registry: ClusterRegistry,
    resources: Arc<ResourceRegistry>,
    stores: Arc<DashMap<String, Arc<MemoryStore>>>,
    /// Each cluster's live registry view (built-ins plus its CRDs' types).
    cluster_resources: Arc<DashMap<String, Arc<ClusterResources>>>,
    controllers: Arc<DashMap<String, Controllers>>,
    networks: Arc<DashMap<String, Arc<ClusterNetwork>>>,
    /// Each cluster's exec'd containers (what they wrote).
    sandboxes: Arc<DashMap<String, Arc<crate::exec::Sandboxes>>>,
    authorization: Mode,
    /// The last resourceVersion of each retired cluster's store, so a store
    /// put back (reset) never counts below what clients have seen.
    retired: Arc<DashMap<String, u64>>,
    /// Where every store's writes are logged, when kemu persists its state.
    journal: Arc<parking_lot::RwLock<Option<Arc<dyn ClusterJournal>>>>,
    /// ServiceAccount token signatures verified in the last 10 s.
    verified_tokens: Arc<crate::sa_token::VerifiedTokens>,
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
            cluster_resources: Arc::new(DashMap::new()),
            controllers: Arc::new(DashMap::new()),
            networks: Arc::new(DashMap::new()),
            sandboxes: Arc::new(DashMap::new()),
            authorization: Mode::default(),
            journal: Arc::default(),
            retired: Arc::default(),
            verified_tokens: Arc::default(),
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

    /// The built-in resource types every cluster serves.
    pub fn resources(&self) -> &Arc<ResourceRegistry> {
        &self.resources
    }

    /// The live view of one cluster's types: the built-ins plus its custom
    /// resources (cheap: read on every request).
    pub fn cluster_resources(&self, cluster_id: &str) -> Arc<ClusterResources> {
        self.cluster_resources
            .entry(cluster_id.to_owned())
            .or_default()
            .value()
            .clone()
    }

    /// The resource types one cluster serves now.
    pub fn resources_of(&self, cluster_id: &str) -> Arc<ResourceRegistry> {
        match self.cluster_resources.get(cluster_id) {
            Some(r) => r.registry(),
            None => self.resources.clone(),
        }
    }

    /// The registry the engine serves.
    pub fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }

    /// ServiceAccount token signatures verified in the last 10 s on the clock.
    pub fn verified_tokens(&self) -> &crate::sa_token::VerifiedTokens {
        &self.verified_tokens
    }

    /// The store of a served cluster.
    pub fn store(&self, cluster_id: &str) -> Option<Arc<dyn Store>> {
        self.stores
            .get(cluster_id)
            .map(|s| s.value().clone() as Arc<dyn Store>)
    }

    /// The work queues of the cluster's controllers, with their counters.
    pub fn queue_stats(&self, cluster_id: &str) -> Vec<crate::controllers::runtime::QueueStats> {
        self.controllers
            .get(cluster_id)
            .map(|c| c.runtime().queue_stats())
            .unwrap_or_default()
    }

    /// How many watches are open on each resource of the cluster's store
    /// (its controllers' informers among them), by group-resource.
    pub fn watchers(&self, cluster_id: &str) -> Vec<(String, usize)> {
        self.stores
            .get(cluster_id)
            .map(|s| s.watchers())
            .unwrap_or_default()
    }

    /// The newest resourceVersion the cluster's store has issued: of its
    /// store, or of the store it had when it was retired.
    pub fn last_resource_version(&self, cluster_id: &str) -> Option<u64> {
        match self.stores.get(cluster_id) {
            Some(s) => Some(s.resource_version()),
            None => self.retired.get(cluster_id).map(|rv| *rv),
        }
    }

    /// The whole content of every served cluster's store, by cluster id.
    pub fn store_images(&self) -> Vec<(String, StoreImage)> {
        self.stores
            .iter()
            .map(|s| (s.key().clone(), s.value().image()))
            .collect()
    }

    /// Logs every later write of every store (present and future) to `journal`.
    pub fn set_journal(&self, journal: Option<Arc<dyn ClusterJournal>>) {
        for s in self.stores.iter() {
            s.value()
                .set_sink(journal.as_ref().map(|j| j.sink(s.key())));
        }
        *self.journal.write() = journal;
    }

    /// Replaces (or puts in place) the store of `cluster_id` with one holding
    /// `image`: restarts, restores and resets. The old store's watches end and
    /// its controllers stop; new ones start when the cluster is next served
    /// ([`Engine::open_store`]).
    pub fn install_store(&self, cluster_id: &str, image: StoreImage) {
        let store =
            MemoryStore::from_image(self.registry.clock().clone(), StoreLimits::default(), image);
        if let Some(journal) = self.journal.read().clone() {
            journal.opened(cluster_id, &store.image());
            store.set_sink(Some(journal.sink(cluster_id)));
        }
        self.controllers.remove(cluster_id);
        if let Some(old) = self.stores.insert(cluster_id.to_owned(), Arc::new(store)) {
            old.close();
        }
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
                    // AAD admin groups are cluster admins, as on AKS.
                    let admin_groups: Vec<String> = record
                        .extra
                        .pointer("/properties/aadProfile/adminGroupObjectIDs")
                        .and_then(serde_json::Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|g| g.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    authz::store_source::seed(
                        &store,
                        authz::cloud::aks::bootstrap_objects(&admin_groups),
                    );
                }
                if let Some(journal) = self.journal.read().clone() {
                    journal.opened(&record.id, &store.image());
                    store.set_sink(Some(journal.sink(&record.id)));
                }
                Arc::new(store)
            })
            .value()
            .clone();
        let store: Arc<dyn Store> = store;
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
        }
        // A store installed from an image has no controllers yet.
        if !self.controllers.contains_key(&record.id) {
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

    /// The simulated containers of a cluster.
    pub fn sandboxes(&self, cluster_id: &str) -> Arc<crate::exec::Sandboxes> {
        self.sandboxes
            .entry(cluster_id.to_owned())
            .or_default()
            .value()
            .clone()
    }

    /// Opens the cluster's containers for its kubelet.
    fn opener(&self, record: &ClusterRecord, store: Arc<dyn Store>) -> crate::exec::Opener {
        let sandboxes = self.sandboxes(&record.id);
        let registry = self.registry.clone();
        let id = record.id.clone();
        let fallback = record.clone();
        crate::exec::Opener::new(move |pod, container| {
            let record = registry.get(&id).unwrap_or_else(|_| fallback.clone());
            let now = registry.clock().now();
            crate::exec::open(&sandboxes, store.as_ref(), &record, pod, container, now)
        })
    }

    /// The runtime blocking work that waits on the clock runs on.
    pub fn background(&self) -> tokio::runtime::Handle {
        controller_runtime().handle().clone()
    }

    /// Starts the cluster's controllers, scheduler and kubelet on its store.
    fn start_controllers(&self, record: &ClusterRecord, store: Arc<dyn Store>) {
        let resources = self.cluster_resources(&record.id);
        let client = StoreClient::new(store.clone(), resources.clone());
        let opener = self.opener(record, store.clone());
        let config = ControllerConfig {
            root_ca: Some(Arc::from(record.ca.cert_pem())),
            network: self.network(&record.id),
            provisioner: Provisioner::new(record.scope.clone(), &record.name),
            sa_key: Some(record.sa_key.clone()),
            custom_types: Some(Arc::new(ClusterCustomTypes { resources, store })),
            sandboxes: Some(self.sandboxes(&record.id)),
            opener: Some(opener),
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
        self.sandboxes.remove(cluster_id);
        self.cluster_resources.remove(cluster_id);
        if let Some((_, old)) = self.stores.remove(cluster_id) {
            self.retired
                .insert(cluster_id.to_owned(), old.resource_version());
            old.close();
        }
    }

    /// Mounts every route of one cluster's listener.
    pub fn configure(&self, cfg: &mut web::ServiceConfig, cluster: ClusterContext) {
        cfg.app_data(web::Data::new(self.clone()))
            .app_data(web::Data::new(cluster));
        api::configure(cfg);
    }
}
