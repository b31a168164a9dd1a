//! Each cloud's identity mapping, wired into the request path: who a
//! cloud-authenticated caller is inside the cluster, and the cloud's
//! *virtual* grants (permissions the cloud gives beside RBAC, never stored
//! as objects), from the pure functions of [`crate::authz::cloud`].
//!
//! - EKS: the caller's IAM ARN is mapped through the cluster's access
//!   entries (from the EKS facade, through the registry) and then the
//!   `kube-system/aws-auth` ConfigMap, as the cluster's
//!   `authenticationMode` says; a principal neither maps is refused (401),
//!   as EKS refuses it. The access policies associated with its entry
//!   (AmazonEKSClusterAdminPolicy, …AdminPolicy, …EditPolicy, …ViewPolicy,
//!   cluster-wide or per namespace) are its virtual grants. The cluster
//!   creator is admin by its bootstrap entry
//!   (`bootstrapClusterCreatorAdminPermissions`), or in the `CONFIG_MAP`
//!   mode implicitly, as `kubernetes-admin` in `system:masters`.
//! - GKE callers keep the identity the facade's authenticator gives them
//!   (the project owner's tokens are `system:masters`); the project's IAM
//!   policy (served by the facade, handed over as the authenticator's
//!   access configuration) grants its members their roles' Kubernetes
//!   permissions, and a GKE 403 names the IAM permission it lacked, as
//!   GKE's IAM authorizer words it.
//! - AKS callers keep their identity (AKS's `clusterUser` is bound by
//!   `aks-cluster-admin-binding`, seeded at cluster creation); on a cluster
//!   with `aadProfile.enableAzureRBAC`, the Azure role assignments the
//!   facade serves grant the built-in AKS RBAC roles' permissions.

use kemu_shared::{Cloud, ClusterRecord, ClusterRegistry, UserInfo};
use serde_json::Value;

use crate::authz::cloud::eks::{self, AccessEntry, AuthenticationMode, Caller};
use crate::authz::cloud::{aks, gke};
use crate::authz::{Attributes, Forbidden, MemorySource};
use crate::store::{ObjectKey, Store};

/// The cloud's virtual grants to the caller of one request, kept in the
/// request's extensions for the reviews and admission to consult.
#[derive(Debug, Clone, Default)]
pub struct CloudGrants(pub MemorySource);

/// The group the EKS facade puts a cluster-wide AmazonEKSClusterAdminPolicy
/// holder in (kept, so `kubectl auth whoami` shows the creator as admin).
const MASTERS: &str = "system:masters";

fn extra<'a>(user: &'a UserInfo, key: &str) -> Option<&'a str> {
    user.extra
        .get(key)
        .and_then(|v| v.first())
        .map(String::as_str)
}

fn eks_entries(registry: &ClusterRegistry, record: &ClusterRecord) -> Vec<AccessEntry> {
    entries_of(&registry.access_config(record))
}

/// The access entries of the EKS facade's access configuration.
fn entries_of(config: &Value) -> Vec<AccessEntry> {
    config
        .get("accessEntries")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let associated = e
                        .get("associatedAccessPolicies")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    AccessEntry::from_json(e, &associated)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Who a caller its cloud authenticated is inside the cluster; `None` when
/// the cloud maps it to no one (answer 401).
pub fn map_user(
    registry: &ClusterRegistry,
    record: &ClusterRecord,
    store: &dyn Store,
    user: UserInfo,
) -> Option<UserInfo> {
    if record.cloud() != Cloud::Eks {
        return Some(user);
    }
    let Some(arn) = extra(&user, "arn") else {
        return Some(user);
    };
    let caller = Caller {
        arn: arn.to_owned(),
        access_key_id: extra(&user, "accessKeyId").unwrap_or_default().to_owned(),
    };
    let mode = record
        .extra
        .pointer("/accessConfig/authenticationMode")
        .and_then(Value::as_str)
        .and_then(AuthenticationMode::parse)
        .unwrap_or_default();
    let aws_auth = store.get(&ObjectKey::new("configmaps", "kube-system", "aws-auth"));
    let config = registry.access_config(record);
    let entries = entries_of(&config);
    // The creator, recorded when `bootstrapClusterCreatorAdminPermissions`
    // made it admin (implicitly so in the CONFIG_MAP mode).
    let creator = config.get("creatorArn").and_then(Value::as_str);
    let mut mapped = eks::resolve(&caller, mode, &entries, aws_auth.as_deref(), creator)?;
    if user.groups.iter().any(|g| g == MASTERS) && !mapped.groups.iter().any(|g| g == MASTERS) {
        mapped.groups.insert(0, MASTERS.to_owned());
    }
    Some(mapped)
}

/// The cloud's virtual grants to `user` (as [`map_user`] answered it).
pub fn grants(registry: &ClusterRegistry, record: &ClusterRecord, user: &UserInfo) -> CloudGrants {
    match record.cloud() {
        Cloud::Eks if user.extra.contains_key("canonicalArn") => CloudGrants(
            eks::access_policy_source(&eks_entries(registry, record), user),
        ),
        Cloud::Gke => match registry.access_config(record).get("iamPolicy") {
            Some(policy) => CloudGrants(gke::iam_source(policy, None)),
            None => CloudGrants::default(),
        },
        Cloud::Aks => aks_grants(&registry.access_config(record)),
        _ => CloudGrants::default(),
    }
}

/// Azure RBAC for Kubernetes: on a cluster with
/// `aadProfile.enableAzureRBAC`, the role assignments on it (or its
/// namespaces) of the four "Azure Kubernetes Service RBAC …" roles.
fn aks_grants(config: &Value) -> CloudGrants {
    if config.get("azureRbac") != Some(&Value::Bool(true)) {
        return CloudGrants::default();
    }
    let cluster_id = config
        .get("clusterId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let assignments: Vec<aks::RoleAssignment> = config
        .get("roleAssignments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| aks::RoleAssignment {
            role_name: s(a, "roleName"),
            principal_id: s(a, "principalId"),
            principal_type: s(a, "principalType"),
            scope: s(a, "scope"),
        })
        .collect();
    CloudGrants(aks::azure_rbac_source(cluster_id, &assignments))
}

/// The 403 of a denied request, worded as the cluster's cloud words it:
/// GKE's IAM authorizer adds the IAM permission that would have allowed it.
pub fn denial(record: &ClusterRecord, attributes: &Attributes, rbac: Forbidden) -> Forbidden {
    match record.cloud() {
        Cloud::Gke => match gke::missing_permission(attributes) {
            Some(reason) => Forbidden::of_request(attributes, &reason),
            None => rbac,
        },
        _ => rbac,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn azure_role_assignments_grant_only_with_azure_rbac() {
        let id = "/subscriptions/s/resourcegroups/rg/providers/Microsoft.ContainerService/managedClusters/c";
        let config = |enabled: bool| {
            json!({"azureRbac": enabled, "clusterId": id, "roleAssignments": [{
                "roleName": "Azure Kubernetes Service RBAC Reader",
                "principalId": "oid-1", "principalType": "User",
                "scope": format!("{id}/namespaces/team"),
            }]})
        };
        let bindings = |g: &CloudGrants| {
            crate::authz::RbacSource::role_bindings(&g.0, "team")
                .iter()
                .filter(|b| b["subjects"][0]["name"] == "oid-1")
                .count()
        };
        assert_eq!(bindings(&aks_grants(&config(true))), 1);
        assert_eq!(bindings(&aks_grants(&config(false))), 0);
    }
}
