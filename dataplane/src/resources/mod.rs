//! The resource registry: every resource type a cluster serves, with what
//! discovery, OpenAPI, Table output and the generic handlers need to know.
//!
//! The built-ins of the served minor come from `fixtures/k8s/resources.json`,
//! which `scripts/gen-k8s-schema.py` generates from upstream's published
//! models (group, version, kind, plural, scope, verbs and subresources of every
//! GA resource); it is parsed once, on first use. CustomResourceDefinitions
//! add types per cluster at run time ([`view`]), each carrying its schema and
//! strategy ([`custom`], [`schema`], [`strategy`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

mod aggregated;
mod builtin;
pub mod cel_rules;
pub mod crd_validation;
pub mod custom;
pub mod deletion;
pub mod events;
pub mod scale;
pub mod schema;
pub mod strategy;
pub mod view;

pub use custom::CustomSpec;
pub use view::ClusterResources;

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
    /// Name of its OpenAPI definition, e.g. `io.k8s.api.apps.v1.Deployment`
    /// (custom resources: upstream's `com.example.stable.v1.CronTab`).
    pub definition: String,
    /// What a custom resource type carries (schema, subresources, printer
    /// columns); `None` for built-ins.
    pub custom: Option<Arc<CustomSpec>>,
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

    /// The warning every request to a deprecated type gets, as upstream's
    /// handlers add it.
    pub fn deprecation_warning(&self) -> Option<&'static str> {
        (self.group.is_empty() && self.version == "v1" && self.kind == "Endpoints").then_some(
            "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
        )
    }
}

/// Every resource type a cluster serves.
#[derive(Debug, Clone, Default)]
pub struct ResourceRegistry {
    types: Vec<Arc<ResourceType>>,
    by_gvr: HashMap<(String, String, String), usize>,
}

/// The built-in groups in kube-apiserver 1.34's discovery order.
const GROUP_ORDER: [&str; 21] = [
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
];

impl ResourceRegistry {
    /// A registry of `types`.
    pub fn new(types: Vec<ResourceType>) -> Self {
        Self::from_shared(types.into_iter().map(Arc::new).collect())
    }

    /// This registry plus `extra` types (a cluster's custom resources);
    /// a type already served at the same group/version/plural stays.
    pub fn with(&self, extra: Vec<ResourceType>) -> Self {
        let mut types = self.types.clone();
        for t in extra {
            if self.lookup(&t.group, &t.version, &t.plural).is_none() {
                types.push(Arc::new(t));
            }
        }
        Self::from_shared(types)
    }

    fn from_shared(types: Vec<Arc<ResourceType>>) -> Self {
        let by_gvr = types
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.group.clone(), t.version.clone(), t.plural.clone()), i))
            .collect();
        Self { types, by_gvr }
    }

    /// The built-in types of the served minor (parsed once; cloning shares
    /// the types).
    pub fn builtin() -> Self {
        Self::builtin_ref().clone()
    }

    /// What a cluster serves: the built-ins plus the APIs kemu answers in
    /// place of aggregated API servers (`metrics.k8s.io`, read-only, JSON).
    pub fn served() -> Self {
        Self::served_ref().clone()
    }

    /// [`served`](Self::served), built on first use.
    pub fn served_ref() -> &'static ResourceRegistry {
        static SERVED: OnceLock<ResourceRegistry> = OnceLock::new();
        SERVED.get_or_init(|| {
            let mut types: Vec<ResourceType> = Self::builtin_ref()
                .all()
                .iter()
                .map(|t| (**t).clone())
                .collect();
            types.extend(aggregated::types());
            Self::new(types)
        })
    }

    /// The built-in registry itself, parsed on first use.
    pub fn builtin_ref() -> &'static ResourceRegistry {
        static BUILTIN: OnceLock<ResourceRegistry> = OnceLock::new();
        BUILTIN.get_or_init(|| Self::new(builtin::types()))
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

    /// The subresource `name` of the type at `group`/`version`/`plural`.
    pub fn subresource(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        name: &str,
    ) -> Option<(Arc<ResourceType>, Subresource)> {
        let rt = self.lookup(group, version, plural)?;
        let sub = rt.subresources.iter().find(|s| s.name == name)?.clone();
        Some((rt, sub))
    }

    /// The API groups served, in discovery order (the core group, named `""`,
    /// first), each with its versions, preferred version first.
    pub fn groups(&self) -> Vec<ApiGroup> {
        let mut groups: Vec<ApiGroup> = Vec::new();
        for t in &self.types {
            match groups.iter_mut().find(|g| g.name == t.group) {
                Some(g) if g.versions.contains(&t.version) => {}
                Some(g) => g.versions.push(t.version.clone()),
                None => groups.push(ApiGroup {
                    name: t.group.clone(),
                    versions: vec![t.version.clone()],
                }),
            }
        }
        for g in &mut groups {
            g.versions
                .sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        // kube-apiserver lists groups by their APIService priority; others
        // (metrics, custom resources) follow in the order they came.
        groups.sort_by_key(|g| {
            GROUP_ORDER
                .iter()
                .position(|n| *n == g.name)
                .unwrap_or(GROUP_ORDER.len())
        });
        groups
    }

    /// The group `name` with its versions, preferred first.
    pub fn group(&self, name: &str) -> Option<ApiGroup> {
        self.groups().into_iter().find(|g| g.name == name)
    }

    /// The types served in `group`/`version`, in discovery order.
    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
        self.types
            .iter()
            .filter(move |t| t.group == group && t.version == version)
    }

    /// Resolves what a user typed (`deploy`, `deployments`, `deployment`,
    /// `deployments.apps`) to the preferred version's type.
    pub fn resolve(&self, name: &str) -> Option<Arc<ResourceType>> {
        let (name, group) = name.split_once('.').unwrap_or((name, ""));
        let name = name.to_ascii_lowercase();
        self.groups()
            .iter()
            .filter(|g| group.is_empty() || g.name == group)
            .flat_map(|g| {
                g.versions
                    .iter()
                    .flat_map(|v| self.in_group_version(&g.name, v))
                    .collect::<Vec<_>>()
            })
            .find(|t| t.plural == name || t.singular == name || t.short_names.contains(&name))
            .cloned()
    }

    /// The type of `kind` in `api_version` (`v1`, `apps/v1`).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.kind == kind && t.api_version() == api_version)
            .cloned()
    }
}

/// One API group: its name (`""` for core) and versions, preferred first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiGroup {
    /// Group name; empty for the core group.
    pub name: String,
    /// Versions served, the preferred one first.
    pub versions: Vec<String>,
}

impl ApiGroup {
    /// The preferred version (upstream: GA over beta over alpha, higher first).
    pub fn preferred(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }
}

/// Upstream's version priority: `v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1`.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stage, n) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (stage, major, n)
}

#[cfg(test)]
mod tests;
