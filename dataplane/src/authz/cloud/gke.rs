//! GKE: Google identities (the access token's account email) are granted
//! Kubernetes permissions by their project IAM roles, beside RBAC, as GKE's
//! IAM authorizer does: `roles/owner` and `roles/container.admin` may do
//! anything, `roles/editor` and `roles/container.developer` may read and
//! write every object but not RBAC, `roles/viewer` and
//! `roles/container.viewer` may read (not Secrets). The cluster creator holds
//! a project role that makes it admin, as on GCP.

use serde_json::{Value, json};

use super::{all_rules, bind, cluster_role, group_subject, user_subject};
use crate::authz::source::MemorySource;

/// What an IAM role grants inside clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    Admin,
    Developer,
    Viewer,
}

fn grant_of(role: &str) -> Option<Grant> {
    match role {
        "roles/owner" | "roles/container.admin" => Some(Grant::Admin),
        "roles/editor" | "roles/container.developer" => Some(Grant::Developer),
        "roles/viewer" | "roles/container.viewer" => Some(Grant::Viewer),
        _ => None,
    }
}

/// The Kubernetes subject of an IAM member (`user:`, `serviceAccount:`,
/// `group:`); other member kinds (`domain:`, `allUsers`) grant nothing here.
fn subject(member: &str) -> Option<Value> {
    let (kind, name) = member.split_once(':')?;
    match kind {
        "user" | "serviceAccount" => Some(user_subject(name)),
        "group" => Some(group_subject(name)),
        _ => None,
    }
}

/// Reads everything except Secrets: `view`'s aggregation plus the
/// cluster-scoped kinds a viewer sees on GKE.
fn viewer_roles(src: &mut MemorySource) {
    src.put(cluster_role(
        "gke:viewer",
        json!([]),
        Some("rbac.authorization.k8s.io/aggregate-to-view"),
    ));
    src.put(cluster_role(
        "gke:viewer-cluster",
        json!([
            {"apiGroups": [""], "resources": ["nodes", "namespaces", "persistentvolumes", "componentstatuses"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["storage.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io", "node.k8s.io"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
            {"nonResourceURLs": ["*"], "verbs": ["get"]}
        ]),
        None,
    ));
}

/// GKE's reason for a denied resource request: `requires one of
/// ["container.pods.create"] permission(s).`, naming the IAM permission of
/// the verb (and subresource); `None` for non-resource requests.
pub fn missing_permission(a: &crate::authz::Attributes) -> Option<String> {
    if !a.resource_request || a.resource.is_empty() {
        return None;
    }
    let read = matches!(a.verb.as_str(), "get" | "list" | "watch");
    let action = match (a.subresource.as_str(), a.verb.as_str()) {
        ("status", _) if read => "getStatus",
        ("status", _) => "updateStatus",
        ("scale", _) if read => "getScale",
        ("scale", _) => "updateScale",
        ("log", _) => "getLogs",
        ("exec", _) => "exec",
        ("attach", _) => "attach",
        ("portforward", _) => "portForward",
        ("proxy", _) => "proxy",
        (_, "watch") => "list",
        (_, "patch") => "update",
        (_, "deletecollection") => "delete",
        (_, verb) => verb,
    };
    Some(format!(
        "requires one of [\"container.{}.{action}\"] permission(s).",
        a.resource
    ))
}

/// The virtual RBAC objects the project's IAM policy grants (`policy` is a
/// `getIamPolicy` result: `{"bindings":[{"role","members":[…]}]}`).
/// `creator` (an email) is granted as `roles/owner`.
pub fn iam_source(policy: &Value, creator: Option<&str>) -> MemorySource {
    let mut src = super::empty();
    src.put(cluster_role("gke:admin", all_rules(), None));
    src.put(cluster_role(
        "gke:developer",
        json!([]),
        Some("rbac.authorization.k8s.io/aggregate-to-edit"),
    ));
    viewer_roles(&mut src);
    let mut members: Vec<(String, Grant)> = Vec::new();
    if let Some(c) = creator {
        members.push((format!("user:{c}"), Grant::Admin));
    }
    for b in policy
        .get("bindings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(g) = b.get("role").and_then(Value::as_str).and_then(grant_of) else {
            continue;
        };
        for m in b
            .get("members")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(m) = m.as_str() {
                members.push((m.to_owned(), g));
            }
        }
    }
    for (i, (member, grant)) in members.iter().enumerate() {
        let Some(subj) = subject(member) else {
            continue;
        };
        let roles: &[&str] = match grant {
            Grant::Admin => &["gke:admin"],
            Grant::Developer => &["gke:developer", "gke:viewer-cluster"],
            Grant::Viewer => &["gke:viewer", "gke:viewer-cluster"],
        };
        for r in roles {
            src.put(bind(&format!("gke:iam:{i}:{r}"), r, subj.clone(), None));
        }
    }
    src
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::attributes::Attributes;
    use crate::authz::authorizer::{Authorizer, Mode};
    use crate::authz::bootstrap;
    use crate::authz::source::Layered;
    use kemu_shared::UserInfo;

    fn u(name: &str) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    #[test]
    fn iam_roles_grant_as_gke() {
        let policy = json!({"bindings":[
            {"role":"roles/container.developer","members":["user:dev@example.com"]},
            {"role":"roles/viewer","members":["serviceAccount:ci@p.iam.gserviceaccount.com"]},
            {"role":"roles/storage.admin","members":["user:other@example.com"]}]});
        let boot = bootstrap::source();
        let cloud = iam_source(&policy, Some("owner@example.com"));
        let src = Layered(vec![&boot, &cloud]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        let can = |who: &str, verb: &str, group: &str, res: &str, ns: &str| {
            authz
                .authorize(&Attributes::resource(u(who), verb, group, res, ns))
                .allowed
        };
        assert!(can(
            "owner@example.com",
            "create",
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            ""
        ));
        assert!(can(
            "dev@example.com",
            "create",
            "apps",
            "deployments",
            "any"
        ));
        assert!(can("dev@example.com", "get", "", "secrets", "any"));
        assert!(can("dev@example.com", "list", "", "nodes", ""));
        assert!(!can(
            "dev@example.com",
            "create",
            "rbac.authorization.k8s.io",
            "roles",
            "any"
        ));
        let ci = "ci@p.iam.gserviceaccount.com";
        assert!(can(ci, "list", "", "pods", "x"));
        assert!(!can(ci, "get", "", "secrets", "x"));
        assert!(!can(ci, "delete", "", "pods", "x"));
        assert!(!can("other@example.com", "list", "", "pods", "x"));
    }
}
