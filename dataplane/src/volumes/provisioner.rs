//! The PersistentVolume a provisioner makes for a claim, in the cloud's shape:
//! a CSI source with the cloud's volume handle (EBS `vol-…`, a GCE PD path, an
//! Azure managed disk id), or the in-tree source for in-tree classes, and the
//! zone the volume lives in as its node affinity.

use kemu_shared::OwnerScope;
use serde_json::{Value, json};

/// The well-known zone label every pool Node carries; volumes are pinned to
/// their zone with it.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// What the provisioners of one cluster need to name volumes.
#[derive(Debug, Clone)]
pub struct Provisioner {
    scope: Option<OwnerScope>,
    cluster: String,
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Provisioner {
    /// The provisioners of cluster `cluster` in `scope`.
    pub fn new(scope: OwnerScope, cluster: &str) -> Self {
        Self {
            scope: Some(scope),
            cluster: cluster.to_owned(),
        }
    }

    /// Provisioners of a cluster of no particular cloud (tests).
    pub fn generic() -> Self {
        Self {
            scope: None,
            cluster: String::new(),
        }
    }

    /// Fills in `pv.spec`'s volume source for `provisioner`, for the volume
    /// `pv_name` in `zone`.
    pub fn source(&self, provisioner: &str, pv_name: &str, zone: Option<&str>, pv: &mut Value) {
        let h = fnv(pv_name);
        let zone_or = |d: &str| zone.unwrap_or(d).to_owned();
        match (provisioner, &self.scope) {
            ("kubernetes.io/aws-ebs", _) => {
                pv["spec"]["awsElasticBlockStore"] = json!({
                    "volumeID": format!("aws://{}/vol-0{:016x}", zone_or(""), h),
                    "fsType": "ext4",
                });
            }
            ("kubernetes.io/gce-pd", _) => {
                pv["spec"]["gcePersistentDisk"] = json!({"pdName": pv_name, "fsType": "ext4"});
            }
            (driver, Some(OwnerScope::Gke { project, .. })) if driver.ends_with("gke.io") => {
                pv["spec"]["csi"] = json!({
                    "driver": driver, "fsType": "ext4",
                    "volumeHandle": format!("projects/{project}/zones/{}/disks/{pv_name}", zone_or("us-central1-a")),
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": format!("{h}-1234-pd.csi.storage.gke.io")},
                });
            }
            (
                driver,
                Some(OwnerScope::Aks {
                    subscription,
                    resource_group,
                    location,
                }),
            ) => {
                pv["spec"]["csi"] = json!({
                    "driver": driver, "fsType": "ext4",
                    "volumeHandle": format!(
                        "/subscriptions/{subscription}/resourceGroups/mc_{resource_group}_{}_{location}/providers/Microsoft.Compute/disks/{pv_name}",
                        self.cluster
                    ),
                    "volumeAttributes": {"csi.storage.k8s.io/pv/name": pv_name, "storage.kubernetes.io/csiProvisionerIdentity": format!("{h}-8081-{driver}")},
                });
            }
            (driver, _) => {
                pv["spec"]["csi"] = json!({
                    "driver": driver, "fsType": "ext4",
                    "volumeHandle": format!("vol-0{h:016x}"),
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": format!("{h}-8081-{driver}")},
                });
            }
        }
        if let Some(z) = zone {
            pv["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE_LABEL, "operator": "In", "values": [z]}]}]}});
        }
    }
}
