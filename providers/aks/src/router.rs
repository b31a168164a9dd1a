//! Which operation a request is: one variant per ARM or Azure AD operation.
//! ARM matches path segments without case; the values keep the caller's casing.

use actix_web::http::Method;

use crate::error::Error;

/// A resource group, as addressed in a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPath {
    /// Subscription id.
    pub subscription: String,
    /// Resource group name.
    pub resource_group: String,
}

/// A managed cluster, as addressed in a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPath {
    /// Subscription id.
    pub subscription: String,
    /// Resource group name.
    pub resource_group: String,
    /// Cluster name.
    pub name: String,
}

/// The operations the facade serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET {scope}/providers/Microsoft.Authorization/roleDefinitions`.
    ListRoleDefinitions {
        /// The ARM scope.
        scope: String,
    },
    /// `GET {scope}/providers/Microsoft.Authorization/roleDefinitions/{id}`.
    GetRoleDefinition {
        /// The ARM scope.
        scope: String,
        /// Role definition id (a GUID).
        id: String,
    },
    /// `GET {scope}/providers/Microsoft.Authorization/roleAssignments`.
    ListRoleAssignments {
        /// The ARM scope.
        scope: String,
    },
    /// `PUT {scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
    PutRoleAssignment {
        /// The ARM scope.
        scope: String,
        /// Assignment name (a GUID).
        name: String,
    },
    /// `DELETE {scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
    DeleteRoleAssignment {
        /// The ARM scope.
        scope: String,
        /// Assignment name (a GUID).
        name: String,
    },
    /// `GET /metadata/endpoints`: the cloud's endpoints (object or list form).
    MetadataEndpoints,
    /// `GET /{tenant}[/v2.0]/.well-known/openid-configuration`.
    OpenIdConfiguration {
        /// Tenant id or `organizations`/`common`.
        tenant: String,
    },
    /// `POST /{tenant}/oauth2[/v2.0]/token`.
    Token {
        /// Tenant id.
        tenant: String,
    },
    /// `GET /{tenant}/discovery[/v2.0]/keys`.
    SigningKeys,
    /// `GET /tenants`.
    ListTenants,
    /// `GET /subscriptions`.
    ListSubscriptions,
    /// `GET /subscriptions/{s}`.
    GetSubscription {
        /// Subscription id.
        subscription: String,
    },
    /// `GET /subscriptions/{s}/providers`: terraform's provider registration check.
    ListProviders {
        /// Subscription id.
        subscription: String,
    },
    /// `GET /subscriptions/{s}/providers/{namespace}`.
    GetProvider {
        /// Subscription id.
        subscription: String,
        /// Resource provider namespace.
        namespace: String,
    },
    /// `POST /subscriptions/{s}/providers/{namespace}/register`.
    RegisterProvider {
        /// Subscription id.
        subscription: String,
        /// Resource provider namespace.
        namespace: String,
    },
    /// `GET /subscriptions/{s}/resourcegroups`.
    ListResourceGroups {
        /// Subscription id.
        subscription: String,
    },
    /// `PUT /subscriptions/{s}/resourcegroups/{rg}`.
    PutResourceGroup(GroupPath),
    /// `GET /subscriptions/{s}/resourcegroups/{rg}`.
    GetResourceGroup(GroupPath),
    /// `HEAD /subscriptions/{s}/resourcegroups/{rg}`.
    CheckResourceGroup(GroupPath),
    /// `DELETE /subscriptions/{s}/resourcegroups/{rg}`.
    DeleteResourceGroup(GroupPath),
    /// `GET /subscriptions/{s}/operationresults/{id}`: a resource group deletion.
    GetGroupOperationResult {
        /// Operation id.
        id: String,
    },
    /// `GET /subscriptions/{s}/providers/Microsoft.ContainerService/locations/{l}/operations/{id}`.
    GetOperationStatus {
        /// Operation id.
        id: String,
    },
    /// `GET /subscriptions/{s}/providers/Microsoft.ContainerService/locations/{l}/operationresults/{id}`.
    GetOperationResult {
        /// Operation id.
        id: String,
    },
    /// `GET /subscriptions/{s}/providers/Microsoft.ContainerService/locations/{l}/kubernetesVersions`.
    ListKubernetesVersions,
    /// `GET /subscriptions/{s}/providers/Microsoft.ContainerService/managedClusters`.
    ListClusters {
        /// Subscription id.
        subscription: String,
    },
    /// `GET …/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters`.
    ListClustersInGroup(GroupPath),
    /// `PUT …/managedClusters/{n}`: create or update.
    PutCluster(ClusterPath),
    /// `GET …/managedClusters/{n}`.
    GetCluster(ClusterPath),
    /// `DELETE …/managedClusters/{n}`.
    DeleteCluster(ClusterPath),
    /// `POST …/managedClusters/{n}/listClusterUserCredential`.
    ListUserCredential(ClusterPath),
    /// `POST …/managedClusters/{n}/listClusterAdminCredential`.
    ListAdminCredential(ClusterPath),
    /// `POST …/managedClusters/{n}/listClusterMonitoringUserCredential`.
    ListMonitoringCredential(ClusterPath),
    /// `GET …/managedClusters/{n}/upgradeProfiles/default`.
    GetUpgradeProfile(ClusterPath),
    /// `POST …/managedClusters/{n}/start`.
    StartCluster(ClusterPath),
    /// `POST …/managedClusters/{n}/stop`.
    StopCluster(ClusterPath),
    /// `POST …/managedClusters/{n}/resetServicePrincipalProfile`.
    ResetServicePrincipalProfile(ClusterPath),
    /// `POST …/managedClusters/{n}/resetAADProfile`.
    ResetAadProfile(ClusterPath),
    /// `GET …/managedClusters/{n}/maintenanceConfigurations`.
    ListMaintenanceConfigurations(ClusterPath),
    /// `GET …/managedClusters/{n}/maintenanceConfigurations/{c}`.
    GetMaintenanceConfiguration(ClusterPath, String),
    /// `GET …/managedClusters/{n}/agentPools`.
    ListAgentPools(ClusterPath),
    /// `PUT …/managedClusters/{n}/agentPools/{p}`.
    PutAgentPool(ClusterPath, String),
    /// `GET …/managedClusters/{n}/agentPools/{p}`.
    GetAgentPool(ClusterPath, String),
    /// `DELETE …/managedClusters/{n}/agentPools/{p}`.
    DeleteAgentPool(ClusterPath, String),
    /// `GET …/managedClusters/{n}/agentPools/{p}/upgradeProfiles/default`.
    GetAgentPoolUpgradeProfile(ClusterPath, String),
}

const CS: &str = "microsoft.containerservice";

impl Endpoint {
    /// Parses method and path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        let seg: Vec<&str> = path.trim_matches('/').split('/').collect();
        let low: Vec<String> = seg.iter().map(|s| s.to_ascii_lowercase()).collect();
        let low: Vec<&str> = low.iter().map(String::as_str).collect();
        let s = |i: usize| seg[i].to_owned();
        let group = || GroupPath {
            subscription: s(1),
            resource_group: s(3),
        };
        let cluster = || ClusterPath {
            subscription: s(1),
            resource_group: s(3),
            name: s(7),
        };
        use Endpoint as E;
        // Microsoft.Authorization answers under any scope.
        if let Some(i) = low
            .windows(2)
            .rposition(|w| w == ["providers", "microsoft.authorization"])
        {
            let scope = format!("/{}", seg[..i].join("/"));
            let at = |j: usize| seg[i + j].to_owned();
            return match (method.as_str(), &low[i + 2..]) {
                ("GET", ["roledefinitions"]) => Ok(E::ListRoleDefinitions { scope }),
                ("GET", ["roledefinitions", _]) => Ok(E::GetRoleDefinition { scope, id: at(3) }),
                ("GET", ["roleassignments"]) => Ok(E::ListRoleAssignments { scope }),
                ("PUT", ["roleassignments", _]) => Ok(E::PutRoleAssignment { scope, name: at(3) }),
                ("DELETE", ["roleassignments", _]) => {
                    Ok(E::DeleteRoleAssignment { scope, name: at(3) })
                }
                _ => Err(Error::NoRoute(path.to_owned())),
            };
        }
        let endpoint = match (method.as_str(), low.as_slice()) {
            ("GET", ["metadata", "endpoints"]) => E::MetadataEndpoints,
            ("GET", [_, ".well-known", "openid-configuration"])
            | ("GET", [_, "v2.0", ".well-known", "openid-configuration"]) => {
                E::OpenIdConfiguration { tenant: s(0) }
            }
            ("POST", [_, "oauth2", "token"]) | ("POST", [_, "oauth2", "v2.0", "token"]) => {
                E::Token { tenant: s(0) }
            }
            ("GET", [_, "discovery", "keys"]) | ("GET", [_, "discovery", "v2.0", "keys"]) => {
                E::SigningKeys
            }
            ("GET", ["tenants"]) => E::ListTenants,
            ("GET", ["subscriptions"]) => E::ListSubscriptions,
            ("GET", ["subscriptions", _]) => E::GetSubscription { subscription: s(1) },
            ("GET", ["subscriptions", _, "providers"]) => E::ListProviders { subscription: s(1) },
            ("GET", ["subscriptions", _, "providers", _]) => E::GetProvider {
                subscription: s(1),
                namespace: s(3),
            },
            ("POST", ["subscriptions", _, "providers", _, "register"]) => E::RegisterProvider {
                subscription: s(1),
                namespace: s(3),
            },
            ("GET", ["subscriptions", _, "resourcegroups"]) => {
                E::ListResourceGroups { subscription: s(1) }
            }
            (m, ["subscriptions", _, "resourcegroups", _]) => match m {
                "PUT" => E::PutResourceGroup(group()),
                "GET" => E::GetResourceGroup(group()),
                "HEAD" => E::CheckResourceGroup(group()),
                "DELETE" => E::DeleteResourceGroup(group()),
                _ => return Err(Error::NoRoute(path.to_owned())),
            },
            ("GET", ["subscriptions", _, "operationresults", _]) => {
                E::GetGroupOperationResult { id: s(3) }
            }
            (
                "GET",
                [
                    "subscriptions",
                    _,
                    "providers",
                    CS,
                    "locations",
                    _,
                    "operations",
                    _,
                ],
            ) => E::GetOperationStatus { id: s(7) },
            (
                "GET",
                [
                    "subscriptions",
                    _,
                    "providers",
                    CS,
                    "locations",
                    _,
                    "operationresults",
                    _,
                ],
            ) => E::GetOperationResult { id: s(7) },
            (
                "GET",
                [
                    "subscriptions",
                    _,
                    "providers",
                    CS,
                    "locations",
                    _,
                    "kubernetesversions",
                ],
            ) => E::ListKubernetesVersions,
            ("GET", ["subscriptions", _, "providers", CS, "managedclusters"]) => {
                E::ListClusters { subscription: s(1) }
            }
            (
                "GET",
                [
                    "subscriptions",
                    _,
                    "resourcegroups",
                    _,
                    "providers",
                    CS,
                    "managedclusters",
                ],
            ) => E::ListClustersInGroup(group()),
            (
                m,
                [
                    "subscriptions",
                    _,
                    "resourcegroups",
                    _,
                    "providers",
                    CS,
                    "managedclusters",
                    _,
                ],
            ) => match m {
                "PUT" => E::PutCluster(cluster()),
                "GET" => E::GetCluster(cluster()),
                "DELETE" => E::DeleteCluster(cluster()),
                _ => return Err(Error::NoRoute(path.to_owned())),
            },
            (
                m,
                [
                    "subscriptions",
                    _,
                    "resourcegroups",
                    _,
                    "providers",
                    CS,
                    "managedclusters",
                    _,
                    rest @ ..,
                ],
            ) => Self::parse_cluster_child(m, rest, cluster(), &seg[8..])
                .ok_or_else(|| Error::NoRoute(path.to_owned()))?,
            _ => return Err(Error::NoRoute(path.to_owned())),
        };
        Ok(endpoint)
    }

    /// Operations below one managed cluster; `rest` is lower-cased, `raw` not.
    fn parse_cluster_child(
        method: &str,
        rest: &[&str],
        cluster: ClusterPath,
        raw: &[&str],
    ) -> Option<Self> {
        use Endpoint as E;
        let name = |i: usize| raw.get(i).map(|s| (*s).to_owned()).unwrap_or_default();
        Some(match (method, rest) {
            ("POST", ["listclusterusercredential"]) => E::ListUserCredential(cluster),
            ("POST", ["listclusteradmincredential"]) => E::ListAdminCredential(cluster),
            ("POST", ["listclustermonitoringusercredential"]) => {
                E::ListMonitoringCredential(cluster)
            }
            ("GET", ["upgradeprofiles", "default"]) => E::GetUpgradeProfile(cluster),
            ("POST", ["start"]) => E::StartCluster(cluster),
            ("POST", ["stop"]) => E::StopCluster(cluster),
            ("POST", ["resetserviceprincipalprofile"]) => E::ResetServicePrincipalProfile(cluster),
            ("POST", ["resetaadprofile"]) => E::ResetAadProfile(cluster),
            ("GET", ["maintenanceconfigurations"]) => E::ListMaintenanceConfigurations(cluster),
            ("GET", ["maintenanceconfigurations", _]) => {
                E::GetMaintenanceConfiguration(cluster, name(1))
            }
            ("GET", ["agentpools"]) => E::ListAgentPools(cluster),
            ("PUT", ["agentpools", _]) => E::PutAgentPool(cluster, name(1)),
            ("GET", ["agentpools", _]) => E::GetAgentPool(cluster, name(1)),
            ("DELETE", ["agentpools", _]) => E::DeleteAgentPool(cluster, name(1)),
            ("GET", ["agentpools", _, "upgradeprofiles", "default"]) => {
                E::GetAgentPoolUpgradeProfile(cluster, name(1))
            }
            _ => return None,
        })
    }

    /// Whether the operation is an ARM call (which requires `api-version`);
    /// Azure AD calls do not carry one.
    pub fn is_arm(&self) -> bool {
        !matches!(
            self,
            Endpoint::OpenIdConfiguration { .. } | Endpoint::Token { .. } | Endpoint::SigningKeys
        )
    }
}

/// The `api-version` query parameter; ARM refuses a request without one.
pub fn require_api_version(query: &str) -> Result<String, Error> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("api-version"))
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
        .ok_or(Error::MissingApiVersion)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_without_case_and_keep_values() {
        let e = Endpoint::parse(
            &Method::GET,
            "/subscriptions/S/resourcegroups/MyRG/providers/Microsoft.ContainerService/managedClusters/C1/agentPools/NP1",
        )
        .unwrap();
        let cluster = ClusterPath {
            subscription: "S".into(),
            resource_group: "MyRG".into(),
            name: "C1".into(),
        };
        assert_eq!(e, Endpoint::GetAgentPool(cluster, "NP1".into()));
        assert!(matches!(
            Endpoint::parse(&Method::POST, "/t/oauth2/v2.0/token").unwrap(),
            Endpoint::Token { .. }
        ));
        assert!(Endpoint::parse(&Method::PATCH, "/subscriptions/s/resourcegroups/x").is_err());
    }
}
