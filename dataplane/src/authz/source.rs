//! Where the evaluator reads RBAC objects from: a narrow trait the object
//! store implements, an in-memory implementation, and a layering of sources
//! (the store plus bindings a cloud's identity mapping adds without storing
//! them, as EKS access policies are not visible as RBAC objects).

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
}

/// RBAC objects held in memory (tests, fixtures, cloud-derived bindings).
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    objects: Vec<Value>,
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn namespace(v: &Value) -> &str {
    v.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl MemorySource {
    /// A source of these objects (any of the four kinds; others are ignored).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Self {
        MemorySource {
            objects: objects.into_iter().collect(),
        }
    }

    /// Adds (or replaces, by kind, namespace and name) one object.
    pub fn put(&mut self, object: Value) {
        let key = |v: &Value| {
            (
                kind(v).to_owned(),
                namespace(v).to_owned(),
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            )
        };
        let k = key(&object);
        self.objects.retain(|o| key(o) != k);
        self.objects.push(object);
    }

    fn of(&self, k: &str, ns: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|o| kind(o) == k && ns.is_none_or(|ns| namespace(o) == ns))
            .cloned()
            .collect()
    }
}

impl RbacSource for MemorySource {
    fn cluster_roles(&self) -> Vec<Value> {
        self.of("ClusterRole", None)
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.of("ClusterRoleBinding", None)
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.of("Role", Some(namespace))
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.of("RoleBinding", Some(namespace))
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
}
