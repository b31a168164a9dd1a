//! Which GKE operation a request is: one variant per operation. The
//! `locations` paths and the legacy `zones` paths (the Python client's
//! flattened arguments) name the same resources; legacy custom methods are
//! spelled with a slash (`/setSize`) where the `locations` ones use a colon.

use actix_web::http::Method;
use kemu_shared::OwnerScope;

use crate::error::Error;

/// A cluster, as a request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRef {
    /// Project id.
    pub project: String,
    /// Zone or region (`-` for every location, in lists).
    pub location: String,
    /// Cluster name.
    pub name: String,
}

impl ClusterRef {
    /// The registry scope the cluster lives in.
    pub fn scope(&self) -> OwnerScope {
        OwnerScope::Gke {
            project: self.project.clone(),
            location: self.location.clone(),
        }
    }

    /// `projects/P/locations/L/clusters/N`, as GKE names it in messages.
    pub fn path(&self) -> String {
        format!(
            "projects/{}/locations/{}/clusters/{}",
            self.project, self.location, self.name
        )
    }
}

/// A node pool, as a request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolRef {
    /// Its cluster.
    pub cluster: ClusterRef,
    /// Node pool name.
    pub name: String,
}

impl PoolRef {
    /// `projects/P/locations/L/clusters/N/nodePools/NP`.
    pub fn path(&self) -> String {
        format!("{}/nodePools/{}", self.cluster.path(), self.name)
    }
}

/// A project and location (`-` for every location).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationRef {
    /// Project id.
    pub project: String,
    /// Zone or region, or `-`.
    pub location: String,
}

/// An operation, as a request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRef {
    /// Project and location.
    pub parent: LocationRef,
    /// The operation's bare id.
    pub id: String,
}

/// List of the operations the GKE facade serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /v1/projects/P/locations/L/serverConfig` (legacy `zones/Z/serverconfig`).
    GetServerConfig(LocationRef),
    /// `GET /v1/projects/P/locations/L/clusters`; `L` may be `-`.
    ListClusters(LocationRef),
    /// `POST /v1/projects/P/locations/L/clusters`.
    CreateCluster(LocationRef),
    /// `GET …/clusters/N`.
    GetCluster(ClusterRef),
    /// `PUT …/clusters/N` with `update.desired*`.
    UpdateCluster(ClusterRef),
    /// `DELETE …/clusters/N`.
    DeleteCluster(ClusterRef),
    /// `POST …/clusters/N:setResourceLabels` (legacy `/resourceLabels`).
    SetResourceLabels(ClusterRef),
    /// `POST …/clusters/N:setLegacyAbac` (legacy `/legacyAbac`).
    SetLegacyAbac(ClusterRef),
    /// `POST …/clusters/N:setNetworkPolicy`.
    SetNetworkPolicy(ClusterRef),
    /// `POST …/clusters/N:setMaintenancePolicy`.
    SetMaintenancePolicy(ClusterRef),
    /// `POST …/clusters/N:setMasterAuth`.
    SetMasterAuth(ClusterRef),
    /// `POST …/clusters/N:startIpRotation`.
    StartIpRotation(ClusterRef),
    /// `POST …/clusters/N:completeIpRotation`.
    CompleteIpRotation(ClusterRef),
    /// `POST …/clusters/N:updateMaster` (legacy `/master`).
    UpdateMaster(ClusterRef),
    /// `POST …/clusters/N:setLogging` (legacy `/logging`).
    SetLogging(ClusterRef),
    /// `POST …/clusters/N:setMonitoring` (legacy `/monitoring`).
    SetMonitoring(ClusterRef),
    /// `POST …/clusters/N:setAddons` (legacy `/addons`).
    SetAddons(ClusterRef),
    /// `POST …/clusters/N:setLocations` (legacy `/locations`).
    SetLocations(ClusterRef),
    /// `GET …/clusters/N/nodePools`.
    ListNodePools(ClusterRef),
    /// `POST …/clusters/N/nodePools`.
    CreateNodePool(ClusterRef),
    /// `GET …/nodePools/NP`.
    GetNodePool(PoolRef),
    /// `PUT …/nodePools/NP` (legacy `POST …/update`).
    UpdateNodePool(PoolRef),
    /// `DELETE …/nodePools/NP`.
    DeleteNodePool(PoolRef),
    /// `POST …/nodePools/NP:setSize` (legacy `/setSize`).
    SetNodePoolSize(PoolRef),
    /// `POST …/nodePools/NP:setAutoscaling` (legacy `/autoscaling`).
    SetNodePoolAutoscaling(PoolRef),
    /// `POST …/nodePools/NP:setManagement` (legacy `/setManagement`).
    SetNodePoolManagement(PoolRef),
    /// `POST …/nodePools/NP:rollback`.
    RollbackNodePool(PoolRef),
    /// `GET /v1/projects/P/locations/L/operations`; `L` may be `-`.
    ListOperations(LocationRef),
    /// `GET …/operations/OP`.
    GetOperation(OperationRef),
    /// `POST …/operations/OP:cancel`.
    CancelOperation(OperationRef),
    /// Service Usage `GET /v1/projects/P/services/S`: gcloud's pre-flight
    /// check before `clusters create`.
    GetService {
        /// Project id.
        project: String,
        /// Service name, e.g. `container.googleapis.com`.
        service: String,
    },
    /// Compute `GET /compute/v1/projects/P/zones/Z/instanceGroupManagers`:
    /// terraform derives `node_count` from it.
    ListInstanceGroupManagers {
        /// Project id.
        project: String,
        /// Zone.
        zone: String,
    },
    /// Resource Manager `POST /v1/projects/P:getIamPolicy`.
    GetIamPolicy {
        /// Project id.
        project: String,
    },
    /// Resource Manager `POST /v1/projects/P:setIamPolicy`.
    SetIamPolicy {
        /// Project id.
        project: String,
    },
    /// Compute `GET /compute/v1/projects/P/zones/Z/instanceGroupManagers/M`.
    GetInstanceGroupManager {
        /// Project id.
        project: String,
        /// Zone.
        zone: String,
        /// Manager name.
        name: String,
    },
}

impl Endpoint {
    /// Parses method and path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        let not_found = || {
            Error::NotFound(format!(
                "The requested URL {path} was not found on this server."
            ))
        };
        let mut segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        // A custom method rides on the last segment: `…/clusters/c1:setSize`.
        let mut verb = None;
        if let Some(last) = segments.last_mut()
            && let Some((head, v)) = last.split_once(':')
        {
            *last = head;
            verb = Some(v);
        }
        let m = method.as_str();
        use Endpoint as E;
        let ep = match (segments.as_slice(), verb) {
            (["v1", "projects", p], Some("getIamPolicy")) if m == "POST" => E::GetIamPolicy {
                project: (*p).into(),
            },
            (["v1", "projects", p], Some("setIamPolicy")) if m == "POST" => E::SetIamPolicy {
                project: (*p).into(),
            },
            (["v1", "projects", p, "services", s], None) if m == "GET" => E::GetService {
                project: (*p).into(),
                service: (*s).into(),
            },
            (
                [
                    "compute",
                    "v1",
                    "projects",
                    p,
                    "zones",
                    z,
                    "instanceGroupManagers",
                ],
                None,
            ) if m == "GET" => E::ListInstanceGroupManagers {
                project: (*p).into(),
                zone: (*z).into(),
            },
            (
                [
                    "compute",
                    "v1",
                    "projects",
                    p,
                    "zones",
                    z,
                    "instanceGroupManagers",
                    n,
                ],
                None,
            ) if m == "GET" => E::GetInstanceGroupManager {
                project: (*p).into(),
                zone: (*z).into(),
                name: (*n).into(),
            },
            (
                [
                    "v1",
                    "projects",
                    p,
                    kind @ ("locations" | "zones"),
                    l,
                    rest @ ..,
                ],
                verb,
            ) => {
                let legacy = *kind == "zones";
                let loc = LocationRef {
                    project: (*p).into(),
                    location: (*l).into(),
                };
                Self::parse_located(m, loc, rest, verb, legacy).ok_or_else(not_found)?
            }
            _ => return Err(not_found()),
        };
        Ok(ep)
    }

    fn parse_located(
        m: &str,
        loc: LocationRef,
        rest: &[&str],
        verb: Option<&str>,
        legacy: bool,
    ) -> Option<Self> {
        use Endpoint as E;
        let cluster = |name: &str| ClusterRef {
            project: loc.project.clone(),
            location: loc.location.clone(),
            name: name.to_owned(),
        };
        let pool = |c: &str, p: &str| PoolRef {
            cluster: cluster(c),
            name: p.to_owned(),
        };
        let op = |id: &str| OperationRef {
            parent: loc.clone(),
            id: id.to_owned(),
        };
        Some(match (m, rest, verb) {
            ("GET", ["serverConfig"], None) if !legacy => E::GetServerConfig(loc),
            ("GET", ["serverconfig"], None) if legacy => E::GetServerConfig(loc),
            ("GET", ["clusters"], None) => E::ListClusters(loc),
            ("POST", ["clusters"], None) => E::CreateCluster(loc),
            ("GET", ["clusters", c], None) => E::GetCluster(cluster(c)),
            ("PUT", ["clusters", c], None) => E::UpdateCluster(cluster(c)),
            ("DELETE", ["clusters", c], None) => E::DeleteCluster(cluster(c)),
            ("POST", ["clusters", c], Some(v)) => {
                let c = cluster(c);
                match v {
                    "setResourceLabels" if !legacy => E::SetResourceLabels(c),
                    "setLegacyAbac" if !legacy => E::SetLegacyAbac(c),
                    "updateMaster" if !legacy => E::UpdateMaster(c),
                    "setLogging" if !legacy => E::SetLogging(c),
                    "setMonitoring" if !legacy => E::SetMonitoring(c),
                    "setAddons" if !legacy => E::SetAddons(c),
                    "setLocations" if !legacy => E::SetLocations(c),
                    "setNetworkPolicy" => E::SetNetworkPolicy(c),
                    "setMaintenancePolicy" => E::SetMaintenancePolicy(c),
                    "setMasterAuth" => E::SetMasterAuth(c),
                    "startIpRotation" => E::StartIpRotation(c),
                    "completeIpRotation" => E::CompleteIpRotation(c),
                    _ => return None,
                }
            }
            ("POST", ["clusters", c, v], None) if legacy => {
                let c = cluster(c);
                match *v {
                    "resourceLabels" => E::SetResourceLabels(c),
                    "legacyAbac" => E::SetLegacyAbac(c),
                    "master" => E::UpdateMaster(c),
                    "logging" => E::SetLogging(c),
                    "monitoring" => E::SetMonitoring(c),
                    "addons" => E::SetAddons(c),
                    "locations" => E::SetLocations(c),
                    "nodePools" => E::CreateNodePool(c),
                    _ => return None,
                }
            }
            ("GET", ["clusters", c, "nodePools"], None) => E::ListNodePools(cluster(c)),
            ("POST", ["clusters", c, "nodePools"], None) => E::CreateNodePool(cluster(c)),
            ("GET", ["clusters", c, "nodePools", p], None) => E::GetNodePool(pool(c, p)),
            ("PUT", ["clusters", c, "nodePools", p], None) if !legacy => {
                E::UpdateNodePool(pool(c, p))
            }
            ("DELETE", ["clusters", c, "nodePools", p], None) => E::DeleteNodePool(pool(c, p)),
            ("POST", ["clusters", c, "nodePools", p], Some(v)) => {
                let p = pool(c, p);
                match v {
                    "setSize" if !legacy => E::SetNodePoolSize(p),
                    "setAutoscaling" if !legacy => E::SetNodePoolAutoscaling(p),
                    "setManagement" if !legacy => E::SetNodePoolManagement(p),
                    "rollback" => E::RollbackNodePool(p),
                    _ => return None,
                }
            }
            ("POST", ["clusters", c, "nodePools", p, v], None) if legacy => {
                let p = pool(c, p);
                match *v {
                    "setSize" => E::SetNodePoolSize(p),
                    "autoscaling" => E::SetNodePoolAutoscaling(p),
                    "setManagement" => E::SetNodePoolManagement(p),
                    "update" => E::UpdateNodePool(p),
                    _ => return None,
                }
            }
            ("GET", ["operations"], None) => E::ListOperations(loc),
            ("GET", ["operations", o], None) => E::GetOperation(op(o)),
            ("POST", ["operations", o], Some("cancel")) => E::CancelOperation(op(o)),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(m: &str, p: &str) -> Option<Endpoint> {
        Endpoint::parse(&Method::from_bytes(m.as_bytes()).unwrap(), p).ok()
    }

    #[test]
    fn locations_and_legacy_zones_name_the_same_operations() {
        let a = parse(
            "POST",
            "/v1/projects/p/locations/z/clusters/c/nodePools/np:setSize",
        );
        let b = parse(
            "POST",
            "/v1/projects/p/zones/z/clusters/c/nodePools/np/setSize",
        );
        assert!(matches!(a, Some(Endpoint::SetNodePoolSize(_))));
        assert_eq!(a, b);
        assert_eq!(
            parse(
                "POST",
                "/v1/projects/p/locations/z/clusters/c:setResourceLabels"
            ),
            parse("POST", "/v1/projects/p/zones/z/clusters/c/resourceLabels"),
        );
        assert_eq!(
            parse("GET", "/v1/projects/p/zones/z/serverconfig"),
            parse("GET", "/v1/projects/p/locations/z/serverConfig"),
        );
        assert!(
            parse(
                "POST",
                "/v1/projects/p/locations/z/clusters/c/resourceLabels"
            )
            .is_none()
        );
        assert!(parse("GET", "/v1/projects/p/locations/z/nothing").is_none());
    }
}
