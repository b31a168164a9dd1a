//! Storage as each cloud sets it up: the StorageClasses a new cluster has, and
//! what a dynamically provisioned volume of each provisioner looks like (its
//! volume source, handle and zone topology key).
//!
//! # Layout
//!
//! - [`classes`]: each cloud's StorageClasses, seeded into a new cluster.
//! - [`provisioner`]: the PersistentVolume a provisioner makes for a claim.

pub mod classes;
pub mod provisioner;

pub use provisioner::Provisioner;
