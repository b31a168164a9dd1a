//! AKS: what `listClusterUserCredential` / `listClusterAdminCredential`
//! kubeconfigs authenticate as, and Azure RBAC role assignments.
//!
//! With local accounts (no AAD), both credentials are cluster admins, as on
//! AKS: `clusterAdmin` is a client certificate `CN=masterclient,
//! O=system:masters`; `clusterUser` is the user `clusterUser`, bound to
//! `cluster-admin` by the `aks-cluster-admin-binding` ClusterRoleBinding every
//! AKS cluster has. With AAD, `aadProfile.adminGroupObjectIDs` are bound to
//! `cluster-admin` (`aks-cluster-admin-binding-aad`), and with Azure RBAC the
//! built-in "Azure Kubernetes Service RBAC …" roles grant `cluster-admin`,
//! `admin`, `edit` or `view`, cluster-wide or per namespace.

use kemu_shared::UserInfo;
use serde_json::{Value, json};

use super::{all_rules, bind, cluster_role, group_subject, read_all_rules, user_subject};
use crate::authz::source::MemorySource;

/// Which credential a kubeconfig came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// `listClusterUserCredential` (`az aks get-credentials`).
    User,
    /// `listClusterAdminCredential` (`az aks get-credentials --admin`).
    Admin,
}

/// The identity the credential's kubeconfig carries (its client certificate's
/// CN and O, or its token's user), for a cluster with local accounts.
pub fn credential_user(kind: Credential) -> UserInfo {
    let (name, mut groups) = match kind {
        Credential::Admin => ("masterclient", vec!["system:masters".to_owned()]),
        Credential::User => ("clusterUser", Vec::new()),
    };
    groups.push("system:authenticated".into());
    UserInfo {
        username: name.into(),
        groups,
        ..Default::default()
    }
}

/// The ClusterRoleBindings every AKS cluster holds (stored, visible with
/// kubectl): `clusterUser` is `cluster-admin`; with AAD, so are the admin groups.
pub fn bootstrap_objects(admin_group_object_ids: &[String]) -> Vec<Value> {
    let labels = json!({ "addonmanager.kubernetes.io/mode": "Reconcile", "kubernetes.io/cluster-service": "true" });
    let mut out = vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": { "name": "aks-cluster-admin-binding", "labels": labels },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
        "subjects": [user_subject("clusterUser")],
    })];
    if !admin_group_object_ids.is_empty() {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": "aks-cluster-admin-binding-aad", "labels": labels },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
            "subjects": admin_group_object_ids.iter().map(|g| group_subject(g)).collect::<Vec<_>>(),
        }));
    }
    out
}

/// One Azure role assignment on the cluster or one of its namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleAssignment {
    /// Built-in role name, e.g. `Azure Kubernetes Service RBAC Reader`.
    pub role_name: String,
    /// AAD object id of the principal (the Kubernetes username under AAD).
    pub principal_id: String,
    /// `User`, `Group` or `ServicePrincipal`.
    pub principal_type: String,
    /// The assignment scope: the cluster's ARM id, or `<id>/namespaces/<ns>`.
    pub scope: String,
}

/// The virtual RBAC objects Azure RBAC role assignments grant on the cluster
/// whose ARM id is `cluster_id` (assignments on other scopes are ignored).
pub fn azure_rbac_source(cluster_id: &str, assignments: &[RoleAssignment]) -> MemorySource {
    let mut src = super::empty();
    src.put(cluster_role("aks:cluster-admin", all_rules(), None));
    src.put(cluster_role(
        "aks:admin",
        json!([]),
        Some("rbac.authorization.k8s.io/aggregate-to-admin"),
    ));
    src.put(cluster_role(
        "aks:writer",
        json!([]),
        Some("rbac.authorization.k8s.io/aggregate-to-edit"),
    ));
    src.put(cluster_role(
        "aks:reader",
        json!([]),
        Some("rbac.authorization.k8s.io/aggregate-to-view"),
    ));
    src.put(cluster_role("aks:read-all", read_all_rules(), None));
    let lower_cluster = cluster_id.to_ascii_lowercase();
    for (i, a) in assignments.iter().enumerate() {
        let role = match a.role_name.as_str() {
            "Azure Kubernetes Service RBAC Cluster Admin" => "aks:cluster-admin",
            "Azure Kubernetes Service RBAC Admin" => "aks:admin",
            "Azure Kubernetes Service RBAC Writer" => "aks:writer",
            "Azure Kubernetes Service RBAC Reader" => "aks:reader",
            _ => continue,
        };
        // ARM ids compare case-insensitively.
        let scope = a.scope.to_ascii_lowercase();
        let Some(rest) = scope.strip_prefix(&lower_cluster) else {
            continue;
        };
        let namespace = match rest.trim_start_matches('/') {
            "" => None,
            r => match r.strip_prefix("namespaces/") {
                // Keep the namespace's own case from the original scope.
                Some(_) => a.scope.rsplit('/').next(),
                None => continue,
            },
        };
        let subject = if a.principal_type == "Group" {
            group_subject(&a.principal_id)
        } else {
            user_subject(&a.principal_id)
        };
        let name = format!("aks:azure-rbac:{i}");
        src.put(bind(&name, role, subject.clone(), namespace));
        // Cluster-wide Admin also reads cluster-scoped objects, as Azure's role does.
        if namespace.is_none() && role == "aks:admin" {
            src.put(bind(&format!("{name}:read"), "aks:read-all", subject, None));
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

    #[test]
    fn local_account_credentials_are_admins() {
        let mut boot = bootstrap::source();
        for o in bootstrap_objects(&[]) {
            boot.put(o);
        }
        let authz = Authorizer::new(Mode::Rbac, &boot);
        for kind in [Credential::User, Credential::Admin] {
            let u = credential_user(kind);
            assert!(
                authz
                    .authorize(&Attributes::resource(u, "delete", "", "nodes", ""))
                    .allowed,
                "{kind:?}"
            );
        }
        assert_eq!(credential_user(Credential::Admin).username, "masterclient");
    }

    #[test]
    fn azure_rbac_assignments_grant_by_scope() {
        let id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1";
        let assignments = vec![
            RoleAssignment {
                role_name: "Azure Kubernetes Service RBAC Reader".into(),
                principal_id: "oid-reader".into(),
                principal_type: "User".into(),
                scope: format!("{id}/namespaces/dev"),
            },
            RoleAssignment {
                role_name: "Azure Kubernetes Service RBAC Writer".into(),
                principal_id: "gid-writers".into(),
                principal_type: "Group".into(),
                scope: id.to_ascii_lowercase(),
            },
        ];
        let boot = bootstrap::source();
        let cloud = azure_rbac_source(id, &assignments);
        let src = Layered(vec![&boot, &cloud]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        let reader = UserInfo {
            username: "oid-reader".into(),
            ..Default::default()
        };
        assert!(
            authz
                .authorize(&Attributes::resource(
                    reader.clone(),
                    "list",
                    "",
                    "pods",
                    "dev"
                ))
                .allowed
        );
        assert!(
            !authz
                .authorize(&Attributes::resource(reader, "list", "", "pods", "prod"))
                .allowed
        );
        let writer = UserInfo {
            username: "x".into(),
            groups: vec!["gid-writers".into()],
            ..Default::default()
        };
        assert!(
            authz
                .authorize(&Attributes::resource(
                    writer,
                    "create",
                    "apps",
                    "deployments",
                    "prod"
                ))
                .allowed
        );
    }
}
