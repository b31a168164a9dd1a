//! The cluster's store as an [`RbacSource`]: its ClusterRoles,
//! ClusterRoleBindings, Roles and RoleBindings (`rbac.authorization.k8s.io`),
//! read from the current snapshot, with point reads for role lookups.

use serde_json::Value;

use super::source::RbacSource;
use crate::store::{ObjectKey, Store};

const CLUSTER_ROLES: &str = "clusterroles.rbac.authorization.k8s.io";
const CLUSTER_ROLE_BINDINGS: &str = "clusterrolebindings.rbac.authorization.k8s.io";
const ROLES: &str = "roles.rbac.authorization.k8s.io";
const ROLE_BINDINGS: &str = "rolebindings.rbac.authorization.k8s.io";

/// The RBAC objects of one cluster's store.
pub struct StoreSource<'a>(pub &'a dyn Store);

impl StoreSource<'_> {
    fn list(&self, resource: &str, namespace: Option<&str>) -> Vec<Value> {
        self.0
            .snapshot(resource)
            .iter(namespace, None)
            .map(|(_, o)| (*o).clone())
            .collect()
    }

    fn point(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        self.0
            .get(&ObjectKey::new(resource, namespace, name))
            .map(|o| (*o).clone())
    }
}

impl RbacSource for StoreSource<'_> {
    fn cluster_roles(&self) -> Vec<Value> {
        self.list(CLUSTER_ROLES, None)
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.list(CLUSTER_ROLE_BINDINGS, None)
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.list(ROLES, Some(namespace))
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.list(ROLE_BINDINGS, Some(namespace))
    }
    fn cluster_role(&self, name: &str) -> Option<Value> {
        self.point(CLUSTER_ROLES, "", name)
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        self.point(ROLES, namespace, name)
    }
}

/// Stores `objects` (any of the four RBAC kinds) in a new cluster's store, as
/// kube-apiserver's bootstrap-roles hook does at first start.
pub fn seed(store: &dyn Store, objects: impl IntoIterator<Item = Value>) {
    for object in objects {
        let resource = match object.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => CLUSTER_ROLES,
            Some("ClusterRoleBinding") => CLUSTER_ROLE_BINDINGS,
            Some("Role") => ROLES,
            Some("RoleBinding") => ROLE_BINDINGS,
            _ => continue,
        };
        let at = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let key = ObjectKey::new(resource, at("/metadata/namespace"), at("/metadata/name"));
        if let Err(e) = store.create(&key, object.clone()) {
            tracing::warn!(resource, name = %key.name, error = %e, "bootstrap RBAC object not stored");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, StoreLimits};
    use kemu_shared::FakeClock;

    #[test]
    fn a_seeded_store_reads_as_the_bootstrap_policy() {
        let store = MemoryStore::new(FakeClock::at_epoch(), StoreLimits::default());
        seed(&store, super::super::bootstrap::objects().iter().cloned());
        let src = StoreSource(&store);
        assert!(src.cluster_role("cluster-admin").is_some());
        assert!(src.cluster_role("nope").is_none());
        assert!(
            src.cluster_role_bindings()
                .iter()
                .any(|b| b["metadata"]["name"] == "system:public-info-viewer")
        );
        assert!(!src.roles("kube-system").is_empty());
        assert!(src.roles("default").is_empty());
        assert_eq!(
            src.cluster_roles().len(),
            super::super::bootstrap::source().cluster_roles().len()
        );
    }
}
