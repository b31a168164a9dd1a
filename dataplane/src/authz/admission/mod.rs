//! Admission as pure functions, run after defaulting and authorization and
//! before storing, in upstream's order: [`limitrange`] (mutating: container
//! defaults; then validating: min/max/ratio), then [`quota`] (object counts
//! and compute resources against every ResourceQuota of the namespace).
//!
//! [`quantity`] parses and prints `resource.Quantity` as upstream does.

pub mod limitrange;
pub mod quantity;
pub mod quota;

/// Which write is being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create (POST, or a server-side apply that creates).
    Create,
    /// An update or patch.
    Update,
    /// A delete (admission of deletes has nothing to check here).
    Delete,
}
