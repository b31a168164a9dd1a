//! The Kubernetes API engine behind every kemu cluster.
//!
//! # Layout
//!
//! - [`listener`]: one HTTPS listener per cluster, on the advertise host, with a
//!   certificate from that cluster's CA; all of them served by one [`Engine`].
//! - [`engine`]: the shared engine: routes every request of every cluster.
//! - [`api`]: the API machinery over HTTP: discovery, OpenAPI, the generic
//!   verbs, selectors, watch, Table output; one file per concern; the patch
//!   types in `api/patch/` (JSON, merge, strategic) and field management with
//!   server-side apply in `api/managedfields/`.
//! - [`resources`]: the resource registry: every type served, with its metadata.
//! - [`store`]: the versioned object store of each cluster, behind a trait.
//! - [`nodes`]: the Node objects of each cluster's node pools.
//! - [`controllers`]: the controllers, scheduler and simulated kubelet of a
//!   cluster, behind a narrow client trait the store implements.
//! - [`auth`]: who the caller is (client certificate, cloud token, anonymous).
//! - [`authz`]: what the caller may do (RBAC, cloud identity mapping, access
//!   reviews) and admission (ResourceQuota, LimitRange).
//! - [`identity`]: who is calling, read from the TLS connection.
//! - [`error`]: the data plane's error enum, rendered as a `metav1.Status`.

pub mod api;
pub mod auth;
pub mod authz;
pub mod controllers;
pub mod engine;
pub mod error;
pub mod identity;
pub mod listener;
pub mod nodes;
pub mod resources;
pub mod store;

pub use engine::Engine;
pub use error::ApiError;
pub use listener::{DataPlane, DataPlaneError};
