//! How each kind is deleted, as upstream's registry strategies declare it:
//! graceful deletion (Pods), the default garbage-collection policy
//! (`DefaultGarbageCollectionPolicy`), whether DELETE answers with the deleted
//! object (`ReturnDeletedObject`) and the warning some kinds add.

use crate::controllers::WATCHED;
use crate::store::DeleteStrategy;
use crate::store::deletion::GcPolicy;

use super::ResourceType;

/// Kinds whose storage sets `ReturnDeletedObject` (group, kind), as
/// kube-apiserver 1.34 answers a finished DELETE of each.
const RETURN_DELETED_OBJECT: [(&str, &str); 17] = [
    ("", "Pod"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "PodTemplate"),
    ("", "ResourceQuota"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "ResourceSlice"),
];

/// Upstream's `DefaultGarbageCollectionPolicy` by group-version and kind:
/// the legacy `v1` ReplicationController and `batch/v1` Job orphan their
/// dependents; Events never take the collector's finalizers.
fn gc_policy(api_version: &str, kind: &str) -> GcPolicy {
    match (api_version, kind) {
        ("v1", "ReplicationController") | ("batch/v1", "Job") => GcPolicy::OrphanDependents,
        ("v1" | "events.k8s.io/v1", "Event") => GcPolicy::Unsupported,
        _ => GcPolicy::DeleteDependents,
    }
}

/// The strategy of `kind` in `api_version` (`v1`, `apps/v1`).
pub fn strategy(api_version: &str, kind: &str) -> DeleteStrategy {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    // kemu's garbage collector looks after the kinds its informers watch;
    // others never get its finalizers, so no object waits for it forever.
    let collected = WATCHED
        .iter()
        .any(|k| k.api_version == api_version && k.kind == kind);
    DeleteStrategy {
        kind: kind.to_owned(),
        group: group.to_owned(),
        graceful: api_version == "v1" && kind == "Pod",
        namespace: api_version == "v1" && kind == "Namespace",
        crd: api_version == "apiextensions.k8s.io/v1" && kind == "CustomResourceDefinition",
        gc: collected.then(|| gc_policy(api_version, kind)),
    }
}

impl ResourceType {
    /// How objects of this type are deleted.
    pub fn delete_strategy(&self) -> DeleteStrategy {
        strategy(&self.api_version(), &self.kind)
    }

    /// Upstream's collection policy of this type when kemu's collector does
    /// not watch it (it then has no dependents to wait for, and a delete
    /// finishes at once); `None` for the kinds it collects.
    pub fn uncollected_policy(&self) -> Option<DeleteStrategy> {
        let mut s = self.delete_strategy();
        if s.gc.is_some() || self.custom.is_some() {
            return None;
        }
        s.gc = Some(gc_policy(&self.api_version(), &self.kind));
        Some(s)
    }

    /// Whether a finished DELETE answers with the object (else a `Success`
    /// Status naming it).
    pub fn returns_deleted_object(&self) -> bool {
        RETURN_DELETED_OBJECT
            .iter()
            .any(|(g, k)| *g == self.group && *k == self.kind)
    }

    /// The warning a DELETE without a propagation policy gets, where
    /// upstream gives one (a `batch/v1` Job orphans its Pods by default).
    pub fn delete_default_warning(&self) -> Option<&'static str> {
        (self.api_version() == "batch/v1" && self.kind == "Job").then_some(
            "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_delete_as_upstream() {
        let pod = strategy("v1", "Pod");
        assert!(pod.graceful);
        assert_eq!(pod.gc, Some(GcPolicy::DeleteDependents));
        assert_eq!(
            strategy("batch/v1", "Job").gc,
            Some(GcPolicy::OrphanDependents)
        );
        assert_eq!(strategy("apps/v1", "Deployment").group, "apps");
        assert!(!strategy("apps/v1", "Deployment").graceful);
        // Kinds the collector does not watch never get its finalizers.
        assert_eq!(strategy("v1", "PodTemplate").gc, None);
    }
}
