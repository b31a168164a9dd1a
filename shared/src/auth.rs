//! Who a caller of a cluster's API is. The data plane authenticates client
//! certificates itself; bearer tokens belong to the clouds (EKS `k8s-aws-v1.`
//! tokens, GKE access tokens, Azure tokens), so each facade registers a
//! [`TokenAuthenticator`] for its cloud with the registry.

use std::collections::BTreeMap;

use crate::cluster::ClusterRecord;

/// An authenticated user, as Kubernetes' `user.Info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name, e.g. `kubernetes-admin` or `arn:aws:iam::…`.
    pub username: String,
    /// Stable id, if the authenticator has one.
    pub uid: String,
    /// Groups, e.g. `system:masters`, `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra attributes (e.g. `arn`, `accessKeyId` for EKS).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Checks bearer tokens presented to the clusters of one cloud.
pub trait TokenAuthenticator: Send + Sync {
    /// `Ok(Some(user))` for a valid token of `cluster`; `Ok(None)` when the token
    /// is not of this authenticator's form; `Err(reason)` when it is, but is
    /// invalid (wrong cluster, expired, bad signature).
    fn authenticate(
        &self,
        cluster: &ClusterRecord,
        token: &str,
    ) -> Result<Option<UserInfo>, String>;

    /// The cloud's identity configuration of `cluster` that the data plane
    /// maps this cloud's callers through, in the cloud's own wire shape (EKS:
    /// `{"accessEntries": [<accessEntry> + "associatedAccessPolicies"]}`);
    /// `Null` when the cloud has none.
    fn access_config(&self, cluster: &ClusterRecord) -> serde_json::Value {
        let _ = cluster;
        serde_json::Value::Null
    }
}
