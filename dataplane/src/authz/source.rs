//! Where the evaluator reads RBAC objects from: a narrow trait the object
//! store implements, an in-memory implementation, and a layering of sources
//! (the store plus bindings a cloud's identity mapping adds without storing
//! them, as EKS access policies are not visible as RBAC objects).

use std::collections::BTreeMap;

use serde_json::Value;

/// Read access to a cluster's RBAC objects, as JSON (`rbac.authorization.k8s.io/v1`).
pub trait RbacSource: Send + Sync {
    /// Every ClusterRole.
    fn cluster_roles(&self) -> Vec<Value>;
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<Value>;
    /// The Roles of one namespace.
    fn roles(&self, namespace: &str) -> Vec<Value>;
    /// The RoleBindings of one namespace.
    fn role_bindings(&self, namespace: &str) -> Vec<Value>;

    /// One ClusterRole by name (a point read; the default scans the list).
    fn cluster_role(&self, name: &str) -> Option<Value> {
        self.cluster_roles()
            .into_iter()
            .find(|r| str_at(r, "/metadata/name") == name)
    }

    /// One Role by namespace and name (a point read; the default scans the list).
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        self.roles(namespace)
            .into_iter()
            .find(|r| str_at(r, "/metadata/name") == name)
    }
}

/// RBAC objects held in memory (tests, fixtures, cloud-derived bindings),
/// indexed by kind and namespace.
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    /// (kind, namespace) → name → object.
    objects: BTreeMap<(String, String), BTreeMap<String, Value>>,
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

impl MemorySource {
    /// A source of these objects (any of the four kinds; others are ignored).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Self {
        let mut s = MemorySource::default();
        for o in objects {
            s.put(o);
        }
        s
    }

    /// Adds (or replaces, by kind, namespace and name) one object.
    pub fn put(&mut self, object: Value) {
        let key = (
            str_at(&object, "/kind").to_owned(),
            str_at(&object, "/metadata/namespace").to_owned(),
        );
        let name = str_at(&object, "/metadata/name").to_owned();
        self.objects.entry(key).or_default().insert(name, object);
    }

    fn of(&self, kind: &str, namespace: &str) -> Vec<Value> {
        self.objects
            .get(&(kind.to_owned(), namespace.to_owned()))
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

impl RbacSource for MemorySource {
    fn cluster_roles(&self) -> Vec<Value> {
        self.of("ClusterRole", "")
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.of("ClusterRoleBinding", "")
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.of("Role", namespace)
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.of("RoleBinding", namespace)
    }
    fn cluster_role(&self, name: &str) -> Option<Value> {
        self.objects
            .get(&("ClusterRole".to_owned(), String::new()))?
            .get(name)
            .cloned()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        self.objects
            .get(&("Role".to_owned(), namespace.to_owned()))?
            .get(name)
            .cloned()
    }
}

/// Several sources read as one (e.g. the store, then cloud-derived bindings).
pub struct Layered<'a>(pub Vec<&'a dyn RbacSource>);

impl RbacSource for Layered<'_> {
    fn cluster_roles(&self) -> Vec<Value> {
        self.0.iter().flat_map(|s| s.cluster_roles()).collect()
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.0
            .iter()
            .flat_map(|s| s.cluster_role_bindings())
            .collect()
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.0.iter().flat_map(|s| s.roles(namespace)).collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.0
            .iter()
            .flat_map(|s| s.role_bindings(namespace))
            .collect()
    }
    fn cluster_role(&self, name: &str) -> Option<Value> {
        self.0.iter().find_map(|s| s.cluster_role(name))
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        self.0.iter().find_map(|s| s.role(namespace, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn point_reads_and_layers() {
        let a = MemorySource::new([
            json!({"kind":"ClusterRole","metadata":{"name":"x"},"rules":[{"verbs":["a"]}]}),
            json!({"kind":"Role","metadata":{"name":"r","namespace":"n"}}),
        ]);
        let b = MemorySource::new([
            json!({"kind":"ClusterRole","metadata":{"name":"x"},"rules":[{"verbs":["b"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"y"}}),
        ]);
        let l = Layered(vec![&a, &b]);
        assert_eq!(l.cluster_role("x").unwrap()["rules"][0]["verbs"][0], "a");
        assert!(l.cluster_role("y").is_some());
        assert!(l.cluster_role("z").is_none());
        assert!(l.role("n", "r").is_some());
        assert!(l.role("m", "r").is_none());
        assert_eq!(l.cluster_roles().len(), 3);
        assert_eq!(a.roles("n").len(), 1);
    }
}
