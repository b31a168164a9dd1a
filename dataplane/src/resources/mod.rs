//! The resource registry: every resource type a cluster serves, with what
//! discovery, OpenAPI, Table output and the generic handlers need to know.
//!
//! The built-in list here is a PLACEHOLDER of a few kinds, so the generic
//! handlers can be built against the interface; it is to be replaced by the
//! full list of the served minor, derived from the typed models and upstream
//! schemas (not typed by hand kind by kind).

use std::collections::HashMap;
use std::sync::Arc;

/// A subresource of a resource type (`status`, `scale`, `log`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// Name, e.g. `status`.
    pub name: String,
    /// Kind it answers with, e.g. `Scale` (group/version as `api_version`).
    pub kind: String,
    /// apiVersion of that kind, e.g. `autoscaling/v1`.
    pub api_version: String,
    /// Verbs allowed on it.
    pub verbs: Vec<String>,
}

/// One resource type in one group-version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Kind of its list, e.g. `DeploymentList`.
    pub list_kind: String,
    /// Plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment`.
    pub singular: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names, e.g. `deploy`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// Verbs, e.g. `create`, `delete`, `deletecollection`, `get`, `list`,
    /// `patch`, `update`, `watch`.
    pub verbs: Vec<String>,
    /// Subresources.
    pub subresources: Vec<Subresource>,
}

impl ResourceType {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Every resource type a cluster serves.
#[derive(Debug, Clone, Default)]
pub struct ResourceRegistry {
    types: Vec<Arc<ResourceType>>,
    by_gvr: HashMap<(String, String, String), usize>,
}

impl ResourceRegistry {
    /// A registry of `types`.
    pub fn new(types: Vec<ResourceType>) -> Self {
        let types: Vec<Arc<ResourceType>> = types.into_iter().map(Arc::new).collect();
        let by_gvr = types
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.group.clone(), t.version.clone(), t.plural.clone()), i))
            .collect();
        Self { types, by_gvr }
    }

    /// The built-in types of the served minor.
    pub fn builtin() -> Self {
        Self::new(placeholder_builtins())
    }

    /// Every type, in a stable order.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// The type served at `group`/`version`/`plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_gvr
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .map(|&i| self.types[i].clone())
    }

    /// The type of `kind` in `api_version` (`v1`, `apps/v1`).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.kind == kind && t.api_version() == api_version)
            .cloned()
    }
}

fn placeholder_builtins() -> Vec<ResourceType> {
    let verbs: Vec<String> = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    .map(String::from)
    .to_vec();
    let t =
        |group: &str, kind: &str, plural: &str, namespaced: bool, short: &[&str]| ResourceType {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            namespaced,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: vec![],
            verbs: verbs.clone(),
            subresources: vec![],
        };
    // Subresources the generic handlers serve, on the placeholder kinds.
    let sub = |name: &str, kind: &str, api_version: &str| Subresource {
        name: name.into(),
        kind: kind.into(),
        api_version: api_version.into(),
        verbs: ["get", "patch", "update"].map(String::from).to_vec(),
    };
    let with = |mut rt: ResourceType, subs: &[(&str, &str, &str)]| {
        rt.subresources = subs.iter().map(|(n, k, a)| sub(n, k, a)).collect();
        rt
    };
    let scale = ("scale", "Scale", "autoscaling/v1");
    vec![
        with(
            t("", "Namespace", "namespaces", false, &["ns"]),
            &[("status", "Namespace", "v1")],
        ),
        with(
            t("", "Pod", "pods", true, &["po"]),
            &[("status", "Pod", "v1")],
        ),
        with(
            t("", "Node", "nodes", false, &["no"]),
            &[("status", "Node", "v1")],
        ),
        t("", "Event", "events", true, &["ev"]),
        with(
            t("apps", "Deployment", "deployments", true, &["deploy"]),
            &[("status", "Deployment", "apps/v1"), scale],
        ),
        with(
            t("apps", "ReplicaSet", "replicasets", true, &["rs"]),
            &[("status", "ReplicaSet", "apps/v1"), scale],
        ),
        with(
            t("apps", "StatefulSet", "statefulsets", true, &["sts"]),
            &[("status", "StatefulSet", "apps/v1"), scale],
        ),
        t("", "ConfigMap", "configmaps", true, &["cm"]),
        t("", "Secret", "secrets", true, &[]),
        t("", "Service", "services", true, &["svc"]),
    ]
}
