//! The StorageClasses a new cluster of each cloud has, as documented:
//!
//! - EKS: `gp2` (in-tree `kubernetes.io/aws-ebs`, the default before 1.30) and
//!   `gp3` (the EBS CSI driver, `ebs.csi.aws.com`; the default here from 1.30,
//!   where EKS stopped marking `gp2` default and users add a gp3 class).
//! - GKE: `standard-rwo` (default, `pd.csi.storage.gke.io`, pd-balanced),
//!   `premium-rwo` (pd-ssd) and `standard` (in-tree `kubernetes.io/gce-pd`,
//!   pd-standard, `Immediate`).
//! - AKS: `default` (default, `disk.csi.azure.com`, StandardSSD_LRS),
//!   `managed-csi`, `managed-csi-premium`, `azurefile-csi`.

use kemu_shared::{ClusterRecord, OwnerScope};
use serde_json::{Value, json};

use crate::store::{ObjectKey, Store};

const RESOURCE: &str = "storageclasses.storage.k8s.io";

fn class(
    name: &str,
    provisioner: &str,
    default: bool,
    mode: &str,
    expand: bool,
    parameters: Value,
) -> Value {
    let mut c = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "labels": {}},
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": mode,
        "allowVolumeExpansion": expand,
        "parameters": parameters,
    });
    if default {
        c["metadata"]["annotations"] =
            json!({"storageclass.kubernetes.io/is-default-class": "true"});
    }
    if let Some(m) = c["metadata"].as_object_mut() {
        m.remove("labels");
    }
    c
}

fn minor(version: &str) -> u32 {
    version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// The StorageClasses of a new cluster of `record`.
pub fn defaults(record: &ClusterRecord) -> Vec<Value> {
    const WFFC: &str = "WaitForFirstConsumer";
    match record.scope {
        OwnerScope::Eks { .. } => {
            let gp3_default = minor(&record.version) >= 30;
            vec![
                class(
                    "gp2",
                    "kubernetes.io/aws-ebs",
                    !gp3_default,
                    WFFC,
                    false,
                    json!({"type": "gp2", "fsType": "ext4"}),
                ),
                class(
                    "gp3",
                    "ebs.csi.aws.com",
                    gp3_default,
                    WFFC,
                    true,
                    json!({"type": "gp3", "encrypted": "true"}),
                ),
            ]
        }
        OwnerScope::Gke { .. } => vec![
            class(
                "premium-rwo",
                "pd.csi.storage.gke.io",
                false,
                WFFC,
                true,
                json!({"type": "pd-ssd"}),
            ),
            class(
                "standard",
                "kubernetes.io/gce-pd",
                false,
                "Immediate",
                true,
                json!({"type": "pd-standard"}),
            ),
            class(
                "standard-rwo",
                "pd.csi.storage.gke.io",
                true,
                WFFC,
                true,
                json!({"type": "pd-balanced"}),
            ),
        ],
        OwnerScope::Aks { .. } => vec![
            class(
                "azurefile-csi",
                "file.csi.azure.com",
                false,
                "Immediate",
                true,
                json!({"skuName": "Standard_LRS"}),
            ),
            class(
                "default",
                "disk.csi.azure.com",
                true,
                WFFC,
                true,
                json!({"skuname": "StandardSSD_LRS"}),
            ),
            class(
                "managed-csi",
                "disk.csi.azure.com",
                false,
                WFFC,
                true,
                json!({"skuname": "StandardSSD_LRS"}),
            ),
            class(
                "managed-csi-premium",
                "disk.csi.azure.com",
                false,
                WFFC,
                true,
                json!({"skuname": "Premium_LRS"}),
            ),
        ],
    }
}

/// Stores the cloud's StorageClasses in a new cluster (existing ones, maybe
/// edited by the user, are left alone).
pub fn seed(store: &dyn Store, record: &ClusterRecord) {
    for c in defaults(record) {
        let name = c["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = ObjectKey::new(RESOURCE, "", &name);
        if store.get(&key).is_none()
            && let Err(e) = store.create(&key, c)
        {
            tracing::warn!(class = %name, error = %e, "storage class not stored");
        }
    }
}
