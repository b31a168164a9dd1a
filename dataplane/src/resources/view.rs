//! One cluster's live view of the registry: the built-ins plus the custom
//! resource types of its established CustomResourceDefinitions. Requests
//! read it on every call (an `Arc` clone under a read lock); the CRD
//! controller swaps in a new one when the CRDs change.

use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use serde_json::Value;

use super::{ResourceRegistry, custom};
use crate::api::openapi::Documents;
use crate::api::request::group_resource;
use crate::controllers::crd::CustomTypes;
use crate::store::{ObjectKey, Preconditions, Store};

/// One registry snapshot and its OpenAPI documents (built on first use).
#[derive(Debug)]
pub struct View {
    /// The types served.
    pub registry: Arc<ResourceRegistry>,
    /// Whether any custom type is in it.
    custom: bool,
    docs: OnceLock<Arc<Documents>>,
}

impl View {
    fn new(registry: ResourceRegistry, custom: bool) -> Self {
        Self {
            registry: Arc::new(registry),
            custom,
            docs: OnceLock::new(),
        }
    }

    /// The OpenAPI documents of this view (the shared built-in ones when no
    /// custom type is served).
    pub fn documents(&self) -> Arc<Documents> {
        if !self.custom {
            return Documents::builtin();
        }
        self.docs
            .get_or_init(|| Arc::new(Documents::build(&self.registry)))
            .clone()
    }
}

/// The live view of one cluster.
#[derive(Debug)]
pub struct ClusterResources {
    current: RwLock<Arc<View>>,
}

impl Default for ClusterResources {
    fn default() -> Self {
        Self {
            current: RwLock::new(Arc::new(View::new(ResourceRegistry::served(), false))),
        }
    }
}

impl ClusterResources {
    /// The view now.
    pub fn view(&self) -> Arc<View> {
        self.current.read().clone()
    }

    /// The registry now.
    pub fn registry(&self) -> Arc<ResourceRegistry> {
        self.current.read().registry.clone()
    }

    /// Serves the built-ins plus the types of `crds` (those whose names were
    /// accepted).
    pub fn serve_crds(&self, crds: &[Arc<Value>]) {
        let mut extra = Vec::new();
        for crd in crds {
            if custom::condition_true(crd, "NamesAccepted") {
                extra.extend(custom::types_of(crd));
            }
        }
        let base = ResourceRegistry::served_ref();
        let next = if extra.is_empty() {
            View::new(base.clone(), false)
        } else {
            View::new(base.with(extra), true)
        };
        let mut cur = self.current.write();
        if cur.registry.all() != next.registry.all() {
            *cur = Arc::new(next);
        }
    }
}

/// What the CRD controller changes of a cluster: its view and its store.
#[derive(Debug)]
pub struct ClusterCustomTypes {
    /// The view.
    pub resources: Arc<ClusterResources>,
    /// The store.
    pub store: Arc<dyn Store>,
}

impl CustomTypes for ClusterCustomTypes {
    fn serve(&self, crds: &[Arc<Value>]) {
        self.resources.serve_crds(crds);
    }

    fn delete_all(&self, crd: &Value) -> usize {
        let types = custom::types_of(crd);
        let Some(rt) = types.first() else {
            return 0;
        };
        let resource = group_resource(rt);
        let snapshot = self.store.snapshot(&resource);
        let keys: Vec<(String, String)> = snapshot
            .iter_stored(None, None)
            .map(|((ns, name), _)| (ns.to_owned(), name.to_owned()))
            .collect();
        for (ns, name) in &keys {
            let key = ObjectKey::new(&resource, ns, name);
            if let Err(e) = self.store.delete(&key, &Preconditions::default()) {
                tracing::debug!(%resource, %name, error = %e, "custom resource cleanup");
            }
        }
        self.store.snapshot(&resource).objects.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(accepted: bool) -> Arc<Value> {
        let status = if accepted { "True" } else { "False" };
        Arc::new(json!({
            "metadata": { "name": "crontabs.stable.example.com" },
            "spec": { "group": "stable.example.com", "scope": "Namespaced",
                "names": { "plural": "crontabs", "kind": "CronTab" },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object" } } }] },
            "status": { "conditions": [{ "type": "NamesAccepted", "status": status }] }
        }))
    }

    #[test]
    fn accepted_crds_are_served_until_they_go() {
        let view = ClusterResources::default();
        let builtin = view.registry().all().len();
        view.serve_crds(&[crd(false)]);
        assert!(
            view.registry()
                .lookup("stable.example.com", "v1", "crontabs")
                .is_none()
        );
        view.serve_crds(&[crd(true)]);
        let rt = view
            .registry()
            .lookup("stable.example.com", "v1", "crontabs")
            .unwrap();
        assert!(rt.custom.is_some());
        let docs = view.view().documents();
        assert!(docs.v3_paths().any(|p| p == "apis/stable.example.com/v1"));
        view.serve_crds(&[]);
        assert_eq!(view.registry().all().len(), builtin);
    }
}
