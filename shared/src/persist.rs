//! The one hook through which kemu's state directory, snapshots and reset reach
//! every piece of cloud state, without knowing what is inside: the registry
//! and each facade implement [`Persist`], and the persistence layer stores
//! whatever JSON they hand it under their [`Persist::name`].

use serde_json::Value;

/// Why a piece of state could not be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersistError {
    /// The stored JSON does not have the expected shape.
    #[error("{part}: stored state is not valid: {reason}")]
    Invalid {
        /// The part's [`Persist::name`].
        part: &'static str,
        /// What serde said.
        reason: String,
    },
}

impl PersistError {
    /// An [`PersistError::Invalid`] for `part`.
    pub fn invalid(part: &'static str, reason: impl std::fmt::Display) -> Self {
        Self::Invalid {
            part,
            reason: reason.to_string(),
        }
    }
}

/// A piece of kemu's state that survives restarts, snapshots and resets.
///
/// `snapshot` must capture everything a later `restore` needs to answer every
/// request as before; `restore` replaces the whole state with it (it is also
/// how a reset returns to the start-up state), so it must accept a snapshot of
/// the same part taken at any time.
pub trait Persist: Send + Sync {
    /// A stable, unique key for this part in state files (`registry`, `eks`…).
    fn name(&self) -> &'static str;

    /// The whole state of the part, as JSON.
    fn snapshot(&self) -> Value;

    /// Replaces the whole state of the part with `state` (from [`Persist::snapshot`]).
    fn restore(&self, state: Value) -> Result<(), PersistError>;
}
