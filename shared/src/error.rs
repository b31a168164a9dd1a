//! The shared error vocabulary. Each facade maps these to its own wire format in
//! the one `match` of its error enum.

use thiserror::Error;

/// What the cluster registry can refuse.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// No cluster with that name in that scope, or with that id.
    #[error("cluster {0} not found")]
    NotFound(String),
    /// A cluster with that name already exists in that scope.
    #[error("cluster {0} already exists")]
    AlreadyExists(String),
    /// The cluster is in a state that does not allow the operation.
    #[error("cluster {name} is {state}; the operation is not allowed now")]
    WrongState {
        /// Cluster name.
        name: String,
        /// Its lifecycle state, neutral vocabulary.
        state: String,
    },
    /// Its certificate authority could not be made.
    #[error("certificate authority: {0}")]
    Pki(#[from] PkiError),
}

/// Certificate and TLS errors.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PkiError {
    /// rcgen refused the parameters or the key.
    #[error("certificate generation failed: {0}")]
    Generate(String),
    /// A PEM or DER input did not parse.
    #[error("certificate parse failed: {0}")]
    Parse(String),
    /// rustls refused the configuration.
    #[error("TLS configuration failed: {0}")]
    Tls(String),
}

impl From<rcgen::Error> for PkiError {
    fn from(e: rcgen::Error) -> Self {
        PkiError::Generate(e.to_string())
    }
}
