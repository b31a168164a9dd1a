//! The slow-to-compile Kubernetes type crates, kept in a leaf crate that rarely
//! changes so incremental builds of the engine stay fast.
//!
//! The served Kubernetes minor is chosen here, in one place: the `v1_34` feature
//! of k8s-openapi (set in the workspace manifest) and [`SERVED_MINOR`].

pub use k8s_openapi;
pub use k8s_pb;
pub use prost;

/// The Kubernetes major version kemu serves.
pub const SERVED_MAJOR: u32 = 1;
/// The Kubernetes minor version kemu serves (matches the k8s-openapi feature).
pub const SERVED_MINOR: u32 = 34;
/// The patch release kemu reports in `/version`.
pub const SERVED_PATCH: u32 = 0;
