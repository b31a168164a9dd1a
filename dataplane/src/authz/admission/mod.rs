//! Admission as pure functions, run after defaulting and authorization and
//! before storing, in upstream's order. Mutating: [`namespace`]
//! (NamespaceLifecycle, which only refuses), [`limitrange::mutate`]
//! (container defaults), [`serviceaccount`] (default account, token volume).
//! Mutating [`webhook`]s last. Validating: [`limitrange::validate`]
//! (min/max/ratio), validating [`webhook`]s, then [`quota`] (object counts
//! and compute resources against every ResourceQuota of the namespace).
//!
//! [`quantity`] parses and prints `resource.Quantity` as upstream does.

pub mod jsonpatch;
pub mod limitrange;
pub mod namespace;
pub mod quantity;
pub mod quota;
pub mod serviceaccount;
pub mod webhook;

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
