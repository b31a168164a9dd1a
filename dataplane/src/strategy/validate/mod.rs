//! Validation of the built-in kinds on create and update, as upstream's
//! `pkg/apis/*/validation` packages check them, with their field paths and
//! messages: the metadata of every object, then the kind's own rules.
//! kemu makes the checks its differential suite and real clients meet; a
//! kind without an entry here gets the metadata checks only.
//!
//! # Layout
//! - [`errors`]: the error list, worded as upstream's `field.Error`.
//! - [`meta`]: object metadata and the name formats.
//! - [`pods`]: pod specs, for Pods and every template.
//! - [`workloads`]: Deployments, ReplicaSets, StatefulSets, DaemonSets,
//!   ReplicationControllers, CronJobs, ControllerRevisions.
//! - [`job`]: Jobs and CronJobs' job templates.
//! - [`core`]: the other core/v1 kinds.
//! - [`others`]: the kinds of the other API groups.

pub mod core;
pub mod errors;
pub mod job;
pub mod meta;
pub mod others;
pub mod pods;
pub mod workloads;

use serde_json::Value;

use crate::error::Cause;
use crate::resources::ResourceType;
use errors::Errors;

/// One kind's rules: the object, and the stored one on update.
type Check = fn(&mut Errors, &Value, Option<&Value>);

/// (group, kind) → its rules.
static CHECKS: &[(&str, &str, Check)] = &[
    ("", "Pod", workloads::pod),
    ("", "LimitRange", core::limit_range),
    ("", "PodTemplate", workloads::pod_template),
    (
        "",
        "ReplicationController",
        workloads::replication_controller,
    ),
    ("", "ConfigMap", core::config_map),
    ("", "Secret", core::secret),
    ("", "Service", core::service),
    ("", "Endpoints", core::endpoints),
    ("", "ResourceQuota", core::resource_quota),
    ("", "PersistentVolumeClaim", core::persistent_volume_claim),
    ("", "PersistentVolume", core::persistent_volume),
    ("", "Node", core::node),
    ("", "Event", core::event),
    ("apps", "Deployment", workloads::deployment),
    ("apps", "ReplicaSet", workloads::replica_set),
    ("apps", "StatefulSet", workloads::stateful_set),
    ("apps", "DaemonSet", workloads::daemon_set),
    ("apps", "ControllerRevision", workloads::controller_revision),
    ("batch", "Job", job::job),
    ("batch", "CronJob", workloads::cron_job),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        others::horizontal_pod_autoscaler,
    ),
    (
        "policy",
        "PodDisruptionBudget",
        others::pod_disruption_budget,
    ),
    ("coordination.k8s.io", "Lease", others::lease),
    ("networking.k8s.io", "Ingress", others::ingress),
    ("networking.k8s.io", "IngressClass", others::ingress_class),
    ("networking.k8s.io", "NetworkPolicy", others::network_policy),
    ("networking.k8s.io", "IPAddress", others::ip_address),
    ("networking.k8s.io", "ServiceCIDR", others::service_cidr),
    ("rbac.authorization.k8s.io", "Role", others::role),
    (
        "rbac.authorization.k8s.io",
        "ClusterRole",
        others::cluster_role,
    ),
    (
        "rbac.authorization.k8s.io",
        "RoleBinding",
        others::role_binding,
    ),
    (
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        others::cluster_role_binding,
    ),
    ("storage.k8s.io", "StorageClass", others::storage_class),
    (
        "storage.k8s.io",
        "VolumeAttributesClass",
        others::volume_attributes_class,
    ),
    ("storage.k8s.io", "CSIDriver", others::csi_driver),
    ("storage.k8s.io", "CSINode", others::csi_node),
    (
        "storage.k8s.io",
        "CSIStorageCapacity",
        others::csi_storage_capacity,
    ),
    (
        "storage.k8s.io",
        "VolumeAttachment",
        others::volume_attachment,
    ),
    ("scheduling.k8s.io", "PriorityClass", others::priority_class),
    ("node.k8s.io", "RuntimeClass", others::runtime_class),
    ("discovery.k8s.io", "EndpointSlice", others::endpoint_slice),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        others::webhook_configuration,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        others::webhook_configuration,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        others::admission_policy,
    ),
    ("resource.k8s.io", "DeviceClass", others::device_class),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        others::admission_policy_binding,
    ),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        others::certificate_signing_request,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        others::flow_schema,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        others::priority_level_configuration,
    ),
    ("resource.k8s.io", "ResourceClaim", others::resource_claim),
    (
        "resource.k8s.io",
        "ResourceClaimTemplate",
        others::resource_claim_template,
    ),
    ("resource.k8s.io", "ResourceSlice", others::resource_slice),
];

/// What is wrong with a status subresource write of `object` of `rt`.
pub fn validate_status(rt: &ResourceType, object: &Value) -> Vec<Cause> {
    let mut e = Errors::default();
    if rt.group == "apps" && matches!(rt.kind.as_str(), "Deployment" | "ReplicaSet") {
        workloads::replicas_status(&mut e, object, &rt.kind);
    }
    e.0
}

/// The warnings upstream's strategies give for a valid `object` of `rt`
/// (`WarningsOnCreate`, `WarningsOnUpdate`).
pub fn warnings(rt: &ResourceType, object: &Value) -> Vec<String> {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Service") => core::service_warnings(object),
        _ => Vec::new(),
    }
}

/// What is wrong with `object` of `rt` (replacing `old` on update), in
/// upstream's order: its metadata, then its kind's rules.
pub fn validate(rt: &ResourceType, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut e = Errors::default();
    meta::object_meta(&mut e, &object["metadata"], rt.custom.is_none());
    if let Some((_, _, check)) = CHECKS
        .iter()
        .find(|(g, k, _)| *g == rt.group && *k == rt.kind)
    {
        check(&mut e, object, old);
    }
    e.0
}
