//! StorageObjectInUseProtection: every new PersistentVolumeClaim gets the
//! `kubernetes.io/pvc-protection` finalizer, every new PersistentVolume
//! `kubernetes.io/pv-protection` and every new VolumeAttributesClass
//! `kubernetes.io/vac-protection`, so a claim a Pod still uses, a bound
//! volume or a class a claim or volume names stays `Terminating` until the
//! protection controllers ([`crate::controllers::storage_protection`])
//! release it.

use serde_json::{Value, json};

use super::Operation;

/// The finalizer of a PersistentVolumeClaim in use.
pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer of a bound PersistentVolume.
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";
/// The finalizer of a VolumeAttributesClass in use.
pub const VAC_FINALIZER: &str = "kubernetes.io/vac-protection";

/// The protection finalizer of `resource` in `group`, if it has one.
pub fn finalizer_of(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "persistentvolumeclaims") => Some(PVC_FINALIZER),
        ("", "persistentvolumes") => Some(PV_FINALIZER),
        ("storage.k8s.io", "volumeattributesclasses") => Some(VAC_FINALIZER),
        _ => None,
    }
}

/// Adds the protection finalizer to a created claim or volume (upstream
/// acts on creates only).
pub fn mutate(op: Operation, group: &str, resource: &str, object: &mut Value) {
    if op != Operation::Create {
        return;
    }
    if let Some(f) = finalizer_of(group, resource) {
        add_finalizer(object, f);
    }
}

/// Appends `finalizer` to `metadata.finalizers` unless it is there;
/// whether it changed anything.
pub fn add_finalizer(object: &mut Value, finalizer: &str) -> bool {
    if !object["metadata"].is_object() {
        return false;
    }
    let list = &mut object["metadata"]["finalizers"];
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(a) = list.as_array_mut() else {
        return false;
    };
    if a.iter().any(|f| f == finalizer) {
        return false;
    }
    a.push(json!(finalizer));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_claims_and_volumes_get_their_protection_finalizer_once() {
        let mut pvc = json!({ "metadata": { "name": "data" } });
        mutate(Operation::Create, "", "persistentvolumeclaims", &mut pvc);
        mutate(Operation::Create, "", "persistentvolumeclaims", &mut pvc);
        assert_eq!(pvc["metadata"]["finalizers"], json!([PVC_FINALIZER]));
        let mut pv = json!({ "metadata": { "name": "pv", "finalizers": ["a/b"] } });
        mutate(Operation::Create, "", "persistentvolumes", &mut pv);
        assert_eq!(pv["metadata"]["finalizers"], json!(["a/b", PV_FINALIZER]));
        let mut updated = json!({ "metadata": { "name": "data" } });
        mutate(
            Operation::Update,
            "",
            "persistentvolumeclaims",
            &mut updated,
        );
        assert!(updated["metadata"].get("finalizers").is_none());
        let mut cm = json!({ "metadata": { "name": "c" } });
        mutate(Operation::Create, "", "configmaps", &mut cm);
        assert!(cm["metadata"].get("finalizers").is_none());
    }
}
