//! What every part of kemu shares: the cluster registry, the one sentinel rule,
//! the per-cluster PKI, the clock and the start-up configuration.
//!
//! # Layout
//!
//! - [`auth`]: the authenticated user, and the bearer-token hook each facade
//!   registers for its cloud's clusters.
//! - [`clock`]: the [`Clock`] trait with a system and a fake implementation; the
//!   only place that reads wall time.
//! - [`cluster`]: one [`ClusterRecord`] per cluster, in a cloud-neutral vocabulary.
//! - [`registry`]: the thread-safe [`ClusterRegistry`] all three facades share, and
//!   the [`DataPlaneHook`] through which the data plane serves its clusters.
//! - [`sentinel`]: the single function deciding which endpoint and CA a cluster
//!   advertises ([`sentinel::advertise`]).
//! - [`kubeconfig`]: single-context kubeconfigs (server, CA, one credential).
//! - [`pki`]: a CA per cluster, serving and client certificates.
//! - [`sa_key`]: each cluster's service-account signing key (JWTs, JWKS).
//! - [`config`]: addresses and switches chosen at start-up.
//! - [`error`]: the shared error vocabulary every facade maps to its wire format.
//! - [`facade`]: the handler trait every cloud facade implements, and its dispatcher.
//! - [`observe`]: the request log and request counters every API feeds.
//! - [`panics`]: what a panic caught at a request or reconcile boundary said.
//! - [`persist`]: the [`Persist`] trait every piece of cloud state implements for
//!   the state directory, snapshots and reset.

pub mod auth;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod error;
pub mod facade;
pub mod kubeconfig;
pub mod observe;
pub mod panics;
pub mod persist;
pub mod pki;
pub mod registry;
pub mod sa_key;
pub mod sentinel;

pub use auth::{TokenAuthenticator, UserInfo};
pub use clock::{Clock, FakeClock, SharedClock, SystemClock};
pub use cluster::{
    Cloud, ClusterId, ClusterRecord, ClusterSpec, Lifecycle, NodePool, OwnerScope, Serving, Taint,
};
pub use config::Config;
pub use error::RegistryError;
pub use facade::ApiHandler;
pub use persist::{Persist, PersistError};
pub use registry::{ClusterRegistry, DataPlaneHook};
pub use sa_key::ServiceAccountKey;
pub use sentinel::{Advertised, advertise};
