//! The Kubernetes API engine behind every kemu cluster.
//!
//! # Layout
//!
//! - [`listener`]: one HTTPS listener per cluster, on the advertise host, with a
//!   certificate from that cluster's CA; all of them served by one [`Engine`].
//! - [`engine`]: the shared engine: routes every request of every cluster.
//! - [`api`]: the API machinery over HTTP: discovery, OpenAPI, the generic
//!   verbs, selectors, watch, Table output, deletion answers, write options
//!   (`dryRun`), field validation; one file per concern; the patch types in
//!   `api/patch/` (JSON, merge, strategic) and field management with
//!   server-side apply in `api/managedfields/`.
//! - [`label_selector`]: label selectors in string and object form, one
//!   matcher for the API, the controllers and authorization.
//! - [`resources`]: the resource registry: every type served, with its metadata.
//! - [`store`]: the versioned object store of each cluster, behind a trait;
//!   what a DELETE does to an object is one pure plan (`store::deletion`).
//! - [`nodes`]: the Node objects of each cluster's node pools.
//! - [`network`]: service CIDRs, ClusterIP/NodePort allocation, the
//!   `kubernetes` Service, load balancer ingress per cloud.
//! - [`metrics`]: synthetic usage and the `metrics.k8s.io` API (`kubectl top`).
//! - [`volumes`]: each cloud's StorageClasses and provisioned volume shapes.
//! - [`strategy`]: per-kind create/update hooks the generic handlers call.
//! - [`controllers`]: the controllers, scheduler and simulated kubelet of a
//!   cluster, behind a narrow client trait the store implements.
//! - [`auth`]: who the caller is (client certificate, cloud token, anonymous).
//! - [`authz`]: what the caller may do (RBAC, cloud identity mapping, access
//!   reviews) and admission (ResourceQuota, LimitRange, webhooks,
//!   ValidatingAdmissionPolicy); the
//!   request path runs admission through [`api::admission`].
//! - [`cloud_identity`]: each cloud's identity mapping and virtual grants,
//!   wired into [`auth`].
//! - [`exec`]: simulated containers to exec into: a filesystem made from
//!   the Pod's spec and objects, the kubelet's environment, a small shell.
//! - [`sa_token`]: ServiceAccount JWTs: issuing and authenticating them.
//! - [`identity`]: who is calling, read from the TLS connection.
//! - [`error`]: the data plane's error enum, rendered as a `metav1.Status`.

pub mod api;
pub mod auth;
pub mod authz;
pub mod cloud_identity;
pub mod controllers;
pub mod engine;
pub mod error;
pub mod exec;
pub mod identity;
pub mod label_selector;
pub mod listener;
pub mod metrics;
pub mod network;
pub mod nodes;
pub mod resources;
pub mod sa_token;
pub mod store;
pub mod strategy;
pub mod volumes;

pub use engine::Engine;
pub use error::ApiError;
pub use listener::{DataPlane, DataPlaneError};
