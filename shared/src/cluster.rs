//! The cloud-neutral record of one cluster. Each facade renders it in its own
//! vocabulary; nothing cloud-specific is stored twice.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::pki::ClusterCa;
use crate::sa_key::ServiceAccountKey;

/// Which cloud a cluster belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cloud {
    /// Amazon EKS.
    Eks,
    /// Google GKE.
    Gke,
    /// Azure AKS.
    Aks,
}

impl Cloud {
    /// Every cloud, in a fixed order.
    pub const ALL: [Cloud; 3] = [Cloud::Eks, Cloud::Gke, Cloud::Aks];
}

impl fmt::Display for Cloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cloud::Eks => "eks",
            Cloud::Gke => "gke",
            Cloud::Aks => "aks",
        })
    }
}

/// Who owns a cluster and where it lives, as each cloud scopes its names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "cloud", rename_all = "lowercase")]
pub enum OwnerScope {
    /// An AWS account and region.
    Eks {
        /// 12-digit account id.
        account: String,
        /// Region, e.g. `us-east-1`.
        region: String,
    },
    /// A GCP project and location (region or zone).
    Gke {
        /// Project id.
        project: String,
        /// Region or zone, e.g. `us-central1` or `us-central1-a`.
        location: String,
    },
    /// An Azure subscription, resource group and location.
    Aks {
        /// Subscription id (a GUID).
        subscription: String,
        /// Resource group name; compared case-insensitively by ARM.
        resource_group: String,
        /// Location, e.g. `westeurope`.
        location: String,
    },
}

impl OwnerScope {
    /// The cloud this scope belongs to.
    pub fn cloud(&self) -> Cloud {
        match self {
            OwnerScope::Eks { .. } => Cloud::Eks,
            OwnerScope::Gke { .. } => Cloud::Gke,
            OwnerScope::Aks { .. } => Cloud::Aks,
        }
    }

    /// The scope in the form names are unique within: ARM compares resource group
    /// names without case, and an AKS name is unique per resource group whatever
    /// the location.
    pub fn identity_key(&self) -> String {
        match self {
            OwnerScope::Eks { account, region } => format!("eks/{account}/{region}"),
            OwnerScope::Gke { project, location } => format!("gke/{project}/{location}"),
            OwnerScope::Aks {
                subscription,
                resource_group,
                ..
            } => format!(
                "aks/{}/{}",
                subscription.to_ascii_lowercase(),
                resource_group.to_ascii_lowercase()
            ),
        }
    }
}

/// A cluster's unique id: a UUID, stable for its life.
pub type ClusterId = String;

/// Where a cluster is in its life, in a vocabulary no cloud uses verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// Being created: no endpoint yet.
    Provisioning,
    /// Serving.
    Running,
    /// Serving while a change is applied.
    Updating,
    /// Being deleted.
    Deleting,
    /// Creation or an update failed.
    Failed,
}

impl Lifecycle {
    /// Every state, in a fixed order.
    pub const ALL: [Lifecycle; 5] = [
        Lifecycle::Provisioning,
        Lifecycle::Running,
        Lifecycle::Updating,
        Lifecycle::Deleting,
        Lifecycle::Failed,
    ];
}

/// A taint every Node of a pool carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// A node group / node pool / agent pool: `count` Nodes in the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePool {
    /// Pool name, unique in the cluster.
    pub name: String,
    /// Number of Nodes.
    pub count: u32,
    /// Instance type / machine type / VM size.
    pub machine_type: String,
    /// Labels every Node of the pool carries, besides the ones kemu derives.
    pub labels: BTreeMap<String, String>,
    /// Taints every Node of the pool carries.
    pub taints: Vec<Taint>,
}

/// Where the data plane serves a cluster, as the registry last heard it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Serving {
    /// No data plane is attached (kemu runs with `--no-dataplane`).
    Disabled,
    /// A data plane is attached but the cluster's listener is not bound yet.
    Pending,
    /// The cluster's HTTPS listener is bound on `host:port`.
    Live {
        /// The advertise host.
        host: String,
        /// The port, kept for the cluster's life.
        port: u16,
    },
}

/// What a caller asks for when creating a cluster.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// Owner and location.
    pub scope: OwnerScope,
    /// Name, unique within the scope.
    pub name: String,
    /// Kubernetes minor version, e.g. `1.34`.
    pub version: String,
    /// Initial node pools.
    pub node_pools: Vec<NodePool>,
    /// Tags (EKS), resource labels (GKE) or tags (AKS).
    pub tags: BTreeMap<String, String>,
    /// How long the cluster stays `Provisioning`, on the clock.
    pub provisioning: std::time::Duration,
    /// Anything the facade keeps verbatim to echo back (its own request fields).
    pub extra: serde_json::Value,
}

/// One cluster, as every part of kemu sees it. Serialized whole (its CA's
/// keys included) by the state directory and snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// Unique id.
    pub id: ClusterId,
    /// Owner and location.
    pub scope: OwnerScope,
    /// Name, unique within the scope.
    pub name: String,
    /// Kubernetes minor version, e.g. `1.34`.
    pub version: String,
    /// Where the cluster is in its life.
    pub lifecycle: Lifecycle,
    /// A transition the clock will apply: (when, to what). `None` for the
    /// deletion case means the record disappears at that instant.
    pub pending: Option<(DateTime<Utc>, Option<Lifecycle>)>,
    /// Where the data plane serves it.
    pub serving: Serving,
    /// The port the cluster keeps for its life, once one was chosen.
    pub port: Option<u16>,
    /// The cluster's own certificate authority.
    pub ca: ClusterCa,
    /// The key that signs its ServiceAccount tokens (persist it beside the
    /// CA: [`ServiceAccountKey::key_pem`] / [`ServiceAccountKey::from_pem`]).
    pub sa_key: ServiceAccountKey,
    /// Node pools.
    pub node_pools: Vec<NodePool>,
    /// Tags or labels.
    pub tags: BTreeMap<String, String>,
    /// Facade-owned fields echoed back verbatim.
    pub extra: serde_json::Value,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl ClusterRecord {
    /// The cloud the cluster belongs to.
    pub fn cloud(&self) -> Cloud {
        self.scope.cloud()
    }
}
