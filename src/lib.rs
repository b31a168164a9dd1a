//! kemu: Amazon EKS, Google GKE and Azure AKS on one machine, with one in-process
//! Kubernetes API engine serving the clusters they create.
//!
//! This crate is the plugin API a host application mounts, and the engine room
//! of the `kemu` binary.
//!
//! # Layout
//!
//! - [`Kemu`]: the shared engine: one clock, one cluster registry, one data
//!   plane. A host mounts each facade with one call:
//!   `App::new().configure(kemu.eks())`.
//! - [`fixtures`]: declarative multi-cloud fixtures (`kemu --fixture FILE`),
//!   loaded through the facades and the clusters' APIs.
//! - [`server`]: the standalone server the binary runs: one listener per facade
//!   (AKS over HTTPS), the ready line, clean shutdown.
//! - [`persist`]: the state directory (write-ahead log + compaction), state
//!   files for snapshot and restore, reset to the start-up state.
//! - [`admin`]: the admin endpoint (snapshot, reset, the request log,
//!   clusters, kubeconfigs, metrics) and the client the `kemu` commands use.
//! - [`cluster_client`]: a cluster-admin HTTPS client of a cluster's own
//!   listener (fixtures apply through it, the dashboard reads through it).
//! - [`dashboard`]: the web dashboard on the admin endpoint (the bundle built
//!   from `dashboard/`, and its relay of each cluster's watches).
//! - [`env`]: the shell lines that point aws, gcloud and az at a kemu.
//! - [`bench`]: `kemu bench`, the benchmark a user runs: kemu beside nginx
//!   and a real cluster, one table.
//! - Crates: `kemu-shared` (registry, sentinel, PKI, clock), `kemu-dataplane`
//!   (the Kubernetes API engine), `kemu-eks`, `kemu-gke`, `kemu-aks` (facades).
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//!
//! # async fn host() -> anyhow::Result<()> {
//! let kemu = kemu::Kemu::builder().build()?;
//! let eks = kemu.eks();
//! HttpServer::new(move || App::new().configure(eks.clone()))
//!     .bind(("127.0.0.1", 0))?
//!     .run()
//!     .await?;
//! # Ok(())
//! # }
//! ```

pub mod admin;
pub mod bench;
pub mod cluster_client;
pub mod dashboard;
pub mod env;
pub mod fixtures;
pub mod persist;
pub mod server;

use std::sync::Arc;

use actix_web::web::ServiceConfig;
use kemu_dataplane::DataPlane;
pub use kemu_dataplane::DataPlaneError;
pub use kemu_dataplane::authz::Mode;
pub use kemu_gke::GkeOptions;
use kemu_shared::pki::{CertAndKey, ClusterCa};
pub use kemu_shared::{
    self as shared, Clock, ClusterRegistry, Config, FakeClock, SharedClock, SystemClock,
};
use parking_lot::Mutex;

/// What building a [`Kemu`] can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The data plane could not start.
    #[error(transparent)]
    DataPlane(#[from] DataPlaneError),
    /// kemu's own CA could not be made.
    #[error(transparent)]
    Pki(#[from] kemu_shared::error::PkiError),
}

/// Builds a [`Kemu`].
#[derive(Debug)]
pub struct KemuBuilder {
    clock: SharedClock,
    config: Config,
    dataplane: bool,
    eks: kemu_eks::Settings,
    aks: kemu_aks::AksConfig,
    gke: kemu_gke::GkeOptions,
    authorization: Mode,
}

impl KemuBuilder {
    /// How clusters authorize requests: RBAC (the default, as a real cluster)
    /// or [`Mode::AllowAll`].
    pub fn authorization(mut self, mode: Mode) -> Self {
        self.authorization = mode;
        self
    }

    /// Sets how the EKS facade behaves (provisioning delay, accepted keys).
    pub fn eks_settings(mut self, settings: kemu_eks::Settings) -> Self {
        self.eks = settings;
        self
    }

    /// Uses `clock` for everything (a [`FakeClock`] in tests).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Sets the advertise and bind hosts.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Configures the AKS facade (service principals, provisioning delay).
    pub fn aks_config(mut self, config: kemu_aks::AksConfig) -> Self {
        self.aks = config;
        self
    }

    /// Whether the data plane starts with kemu (default) or clusters show the
    /// sentinel until [`Kemu::attach_dataplane`].
    pub fn dataplane(mut self, enabled: bool) -> Self {
        self.dataplane = enabled;
        self
    }

    /// Options of the GKE facade (its provisioning delay on the clock).
    pub fn gke_options(mut self, options: kemu_gke::GkeOptions) -> Self {
        self.gke = options;
        self
    }

    /// Starts the engine: registry, data plane, and kemu's own CA for its HTTPS
    /// facades.
    pub fn build(self) -> Result<Kemu, Error> {
        kemu_shared::pki::install_crypto_provider();
        let registry = ClusterRegistry::new(self.clock.clone());
        let facade_ca = ClusterCa::generate("kemu-facade-ca", self.clock.now())?;
        let facade_cert = facade_ca.serving_cert(&self.config.serving_hosts(), self.clock.now())?;
        // One EKS facade for every mount: its state (node groups, access
        // entries…) and the token authenticator reading it are shared.
        let mut eks_settings = self.eks;
        for host in self.config.serving_hosts() {
            if !eks_settings.sts_hosts.contains(&host) {
                eks_settings.sts_hosts.push(host);
            }
        }
        let eks = kemu_eks::Eks::with_settings(registry.clone(), eks_settings);
        registry.set_authenticator(kemu_shared::Cloud::Eks, Arc::new(eks.authenticator()));
        // One GKE facade for every mount, so its operations are shared.
        let gke = kemu_gke::Gke::with_options(registry.clone(), self.gke);
        // GKE clusters' Kubernetes API takes the access tokens
        // gke-gcloud-auth-plugin hands kubectl, and the projects' IAM roles.
        registry.set_authenticator(kemu_shared::Cloud::Gke, gke.tokens());
        let kemu = Kemu {
            inner: Arc::new(Inner {
                gke,
                clock: self.clock,
                config: self.config,
                registry: registry.clone(),
                dataplane: Mutex::new(None),
                authorization: self.authorization,
                facade_ca,
                facade_cert,
                eks,
                aks: kemu_aks::Aks::with_config(registry.clone(), self.aks),
            }),
        };
        // The data plane checks AKS bearer tokens with the facade that minted them.
        registry.set_authenticator(
            kemu_shared::Cloud::Aks,
            Arc::new(kemu.inner.aks.token_authenticator()),
        );
        if self.dataplane {
            kemu.attach_dataplane()?;
        }
        Ok(kemu)
    }
}

/// The shared engine: one clock, one registry, one data plane, shared by every
/// facade a host mounts. Cheap to clone.
#[derive(Clone)]
pub struct Kemu {
    inner: Arc<Inner>,
}

struct Inner {
    gke: kemu_gke::Gke,
    clock: SharedClock,
    config: Config,
    registry: ClusterRegistry,
    dataplane: Mutex<Option<DataPlane>>,
    authorization: Mode,
    facade_ca: ClusterCa,
    facade_cert: CertAndKey,
    eks: kemu_eks::Eks,
    /// One AKS facade, so every mount shares its resource groups and operations.
    aks: kemu_aks::Aks,
}

impl std::fmt::Debug for Kemu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kemu")
            .field("registry", &self.inner.registry)
            .field("dataplane", &self.dataplane_live())
            .finish_non_exhaustive()
    }
}

impl Kemu {
    /// A builder on the system clock, loopback addresses, data plane on.
    pub fn builder() -> KemuBuilder {
        KemuBuilder {
            clock: SystemClock::shared(),
            config: Config::default(),
            dataplane: true,
            eks: kemu_eks::Settings::default(),
            aks: kemu_aks::AksConfig::default(),
            gke: kemu_gke::GkeOptions::default(),
            authorization: Mode::default(),
        }
    }

    /// The cluster registry every facade shares.
    pub fn registry(&self) -> &ClusterRegistry {
        &self.inner.registry
    }

    /// The clock.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// The start-up configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Whether the data plane is attached.
    pub fn dataplane_live(&self) -> bool {
        self.inner.dataplane.lock().is_some()
    }

    /// The data plane, if attached.
    pub fn dataplane(&self) -> Option<DataPlane> {
        self.inner.dataplane.lock().clone()
    }

    /// Starts the data plane if it is not running; every cluster is reconciled to
    /// its real endpoint and CA.
    pub fn attach_dataplane(&self) -> Result<(), Error> {
        let mut slot = self.inner.dataplane.lock();
        if slot.is_none() {
            *slot = Some(DataPlane::start_authorizing(
                self.inner.config.clone(),
                self.inner.registry.clone(),
                self.inner.authorization,
            )?);
        }
        Ok(())
    }

    /// The EKS facade itself (its access entries, its token authenticator).
    pub fn eks_facade(&self) -> &kemu_eks::Eks {
        &self.inner.eks
    }

    /// Mounts the EKS facade: `App::new().configure(kemu.eks())`.
    pub fn eks(&self) -> impl Fn(&mut ServiceConfig) + Clone + Send + 'static {
        let facade = self.inner.eks.clone();
        move |cfg| facade.clone().configure(cfg)
    }

    /// The GKE facade itself (its token authenticator and IAM policies).
    pub fn gke_facade(&self) -> &kemu_gke::Gke {
        &self.inner.gke
    }

    /// Mounts the GKE facade: `App::new().configure(kemu.gke())`.
    pub fn gke(&self) -> impl Fn(&mut ServiceConfig) + Clone + Send + 'static {
        let facade = self.inner.gke.clone();
        move |cfg| facade.clone().configure(cfg)
    }

    /// Mounts the AKS facade: `App::new().configure(kemu.aks())`. Serve it over
    /// HTTPS ([`Kemu::facade_tls`]): `az` refuses plain HTTP.
    pub fn aks(&self) -> impl Fn(&mut ServiceConfig) + Clone + Send + 'static {
        let facade = self.inner.aks.clone();
        move |cfg| facade.clone().configure(cfg)
    }

    /// kemu's own CA, PEM: what clients of the HTTPS facades must trust.
    pub fn facade_ca_pem(&self) -> &str {
        self.inner.facade_ca.cert_pem()
    }

    /// A rustls configuration for an HTTPS facade listener, with a certificate
    /// from kemu's own CA covering loopback and the advertise host.
    pub fn facade_tls(&self) -> Result<rustls::ServerConfig, Error> {
        Ok(self
            .inner
            .facade_ca
            .rustls_server_config(&self.inner.facade_cert, false)?)
    }

    /// Every piece of cloud state that persists, in restore order: each
    /// facade's own state, then the registry (which re-serves clusters).
    pub fn persisted_parts(&self) -> Vec<Arc<dyn kemu_shared::Persist>> {
        vec![
            Arc::new(self.inner.eks.clone()),
            Arc::new(self.inner.gke.clone()),
            Arc::new(self.inner.aks.clone()),
            Arc::new(self.inner.registry.clone()),
        ]
    }

    /// Closes every cluster listener.
    pub async fn shutdown(&self) {
        let dataplane = self.inner.dataplane.lock().take();
        if let Some(dp) = dataplane {
            dp.shutdown().await;
        }
    }
}
