//! Each cloud's identities, mapped the way the real service maps them, as
//! pure functions from the cloud's configuration to who the caller is
//! ([`UserInfo`](kemu_shared::UserInfo)) and to RBAC objects the evaluator
//! consults beside the cluster's own ([`MemorySource`]).
//!
//! - [`eks`]: access entries and access policies, the `aws-auth` ConfigMap,
//!   the cluster creator's admin entry.
//! - [`gke`]: project IAM roles (owner/editor/viewer, container.*).
//! - [`aks`]: `clusterUser` / `clusterAdmin` credentials, Azure RBAC role
//!   assignments and AAD admin groups.
//!
//! Cloud-granted permissions are *virtual* (as on EKS and GKE, where a
//! webhook authorizer grants them): layer the returned source over the
//! store's with [`Layered`](super::source::Layered); nothing is written to
//! the cluster.

pub mod aks;
pub mod eks;
pub mod gke;

use serde_json::{Value, json};

use super::source::MemorySource;

/// A virtual ClusterRole: literal rules, or an aggregation of labelled roles.
pub(crate) fn cluster_role(name: &str, rules: Value, aggregate_label: Option<&str>) -> Value {
    let mut r = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": { "name": name },
        "rules": rules,
    });
    if let Some(label) = aggregate_label {
        r["aggregationRule"] =
            json!({ "clusterRoleSelectors": [{ "matchLabels": { label: "true" } }] });
    }
    r
}

/// A virtual binding of ClusterRole `role` to `subject`, cluster-wide
/// (`namespace` None) or in one namespace.
pub(crate) fn bind(name: &str, role: &str, subject: Value, namespace: Option<&str>) -> Value {
    let mut b = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": if namespace.is_some() { "RoleBinding" } else { "ClusterRoleBinding" },
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [subject],
    });
    if let Some(ns) = namespace {
        b["metadata"]["namespace"] = json!(ns);
    }
    b
}

/// A `User` subject.
pub(crate) fn user_subject(name: &str) -> Value {
    json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name })
}

/// A `Group` subject.
pub(crate) fn group_subject(name: &str) -> Value {
    json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name })
}

/// Rules granting every verb on everything (cluster-admin's).
pub(crate) fn all_rules() -> Value {
    json!([
        { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
        { "nonResourceURLs": ["*"], "verbs": ["*"] }
    ])
}

/// Rules granting reads of everything.
pub(crate) fn read_all_rules() -> Value {
    json!([{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"] }])
}

/// An empty source, to start from.
pub(crate) fn empty() -> MemorySource {
    MemorySource::default()
}
