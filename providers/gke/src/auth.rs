//! Who may call: the facade wants a bearer access token on every request (any
//! opaque string, as `CLOUDSDK_AUTH_ACCESS_TOKEN` hands out), and the clusters'
//! Kubernetes API accepts the same tokens, which `gke-gcloud-auth-plugin`
//! gives kubectl.
//!
//! kemu checks no signature and asks no token service: by default every token
//! is the project owner's, `owner@PROJECT.iam.gserviceaccount.com`, with
//! cluster-admin (group `system:masters`), as a project owner has through IAM on
//! GKE. Tokens can be mapped to other Google identities with
//! [`AccessTokens::insert`], and [`AccessTokens::strict`] refuses the rest.
//! The authenticator also hands the data plane each project's IAM policy
//! ([`crate::iam`]), from which GKE grants Kubernetes access.
//! JWT-shaped tokens are left to the data plane (ServiceAccount tokens).

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::HttpRequest;
use kemu_shared::{Cloud, ClusterRecord, TokenAuthenticator, UserInfo};
use parking_lot::RwLock;

use crate::error::Error;
use crate::iam::IamPolicies;
use crate::state::project_location;
use crate::wire;

/// The bearer token of a facade request; UNAUTHENTICATED without one.
pub fn bearer(req: &HttpRequest) -> Result<String, Error> {
    req.headers()
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or(Error::Unauthenticated)
}

/// The identity of the project owner, which unmapped tokens act as.
pub fn owner(project: &str) -> String {
    format!("owner@{project}.iam.gserviceaccount.com")
}

/// GKE access tokens for the clusters' Kubernetes API.
#[derive(Debug, Default)]
pub struct AccessTokens {
    accounts: RwLock<BTreeMap<String, String>>,
    strict: bool,
    iam: Arc<IamPolicies>,
}

impl AccessTokens {
    /// Every token accepted; unmapped ones act as the project owner.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only tokens mapped with [`AccessTokens::insert`] are accepted.
    pub fn strict() -> Self {
        Self {
            strict: true,
            ..Self::default()
        }
    }

    /// The project IAM policies the facade serves and GKE authorizes by.
    pub fn iam(&self) -> &Arc<IamPolicies> {
        &self.iam
    }

    /// Maps `token` to the Google account `email` (authenticated, no groups
    /// beyond `system:authenticated`: RBAC decides what it may do).
    pub fn insert(&self, token: &str, email: &str) {
        self.accounts
            .write()
            .insert(token.to_owned(), email.to_owned());
    }
}

fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.matches('.').count() == 2
}

fn user(username: String, groups: &[&str]) -> UserInfo {
    UserInfo {
        uid: format!("{}", wire::fnv(&[&username])),
        username,
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        extra: BTreeMap::new(),
    }
}

impl TokenAuthenticator for AccessTokens {
    fn authenticate(
        &self,
        cluster: &ClusterRecord,
        token: &str,
    ) -> Result<Option<UserInfo>, String> {
        if cluster.cloud() != Cloud::Gke || looks_like_jwt(token) {
            return Ok(None);
        }
        if let Some(email) = self.accounts.read().get(token) {
            return Ok(Some(user(email.clone(), &["system:authenticated"])));
        }
        if self.strict {
            return Err("access token is not known to kemu".into());
        }
        let (project, _) = project_location(cluster);
        Ok(Some(user(
            owner(project),
            &["system:masters", "system:authenticated"],
        )))
    }

    /// The project's IAM policy, for GKE's IAM authorizer in the data plane.
    fn access_config(&self, cluster: &ClusterRecord) -> serde_json::Value {
        if cluster.cloud() != Cloud::Gke {
            return serde_json::Value::Null;
        }
        let (project, _) = project_location(cluster);
        serde_json::json!({ "iamPolicy": self.iam.get(project) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::{ClusterRegistry, ClusterSpec, FakeClock, OwnerScope};

    fn record(scope: OwnerScope) -> ClusterRecord {
        let registry = ClusterRegistry::new(FakeClock::at_epoch());
        registry
            .create(ClusterSpec {
                scope,
                name: "c".into(),
                version: "1.34".into(),
                node_pools: vec![],
                tags: Default::default(),
                provisioning: std::time::Duration::ZERO,
                extra: serde_json::Value::Null,
            })
            .unwrap()
    }

    #[test]
    fn tokens_map_to_google_identities() {
        let gke = record(OwnerScope::Gke {
            project: "proj-1".into(),
            location: "us-central1".into(),
        });
        let tokens = AccessTokens::new();
        tokens.insert("dev-token", "dev@example.com");
        let owner = tokens.authenticate(&gke, "anything").unwrap().unwrap();
        assert_eq!(owner.username, "owner@proj-1.iam.gserviceaccount.com");
        assert!(owner.groups.contains(&"system:masters".to_owned()));
        let dev = tokens.authenticate(&gke, "dev-token").unwrap().unwrap();
        assert_eq!(dev.username, "dev@example.com");
        assert!(!dev.groups.contains(&"system:masters".to_owned()));

        let strict = AccessTokens::strict();
        strict.insert("dev-token", "dev@example.com");
        assert!(strict.authenticate(&gke, "anything").is_err());
        assert!(strict.authenticate(&gke, "dev-token").unwrap().is_some());

        let eks = record(OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        });
        assert_eq!(tokens.authenticate(&eks, "anything").unwrap(), None);
    }
}
