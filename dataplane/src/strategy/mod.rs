//! Per-kind behaviour of the registry's create and update paths, as upstream's
//! REST strategies hold it (`PrepareForCreate`, `PrepareForUpdate` and the
//! allocations a registry makes before storing). The generic handlers call
//! [`prepare_create`] and [`prepare_update`] for every kind; the table below
//! says which kinds do anything.
//!
//! # Layout
//!
//! - [`certificates`]: a CertificateSigningRequest carries its requester.
//! - [`defaults`]: the defaults of kinds with no other behaviour here.
//! - [`namespace`]: Namespace `spec.finalizers`, written only by `/finalize`.
//! - [`volumes`]: PersistentVolumes and claims start `Pending`.
//! - [`pods`]: Pod and pod template defaults.
//! - [`service`]: Service defaults, ClusterIP and NodePort allocation.
//! - [`validate`]: upstream's validation of every built-in kind.
//! - [`webhooks`]: admission webhook configurations: defaults, and their
//!   `matchConditions` compiled.
//! - [`workloads`]: the apps/v1 and batch/v1 workloads' defaults.

pub mod certificates;
pub mod defaults;
pub mod namespace;
pub mod pods;
pub mod service;
pub mod validate;
pub mod volumes;
pub mod webhooks;
pub mod workloads;

use serde_json::Value;

use crate::error::ApiError;
use crate::network::ClusterNetwork;
use crate::resources::ResourceType;
use crate::store::Store;

/// What a strategy may read while preparing an object.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The cluster's store (the dry-run view on dry runs).
    pub store: &'a dyn Store,
    /// The cluster's networking, when the engine knows its record.
    pub network: Option<&'a ClusterNetwork>,
    /// The request's namespace (`""` for cluster-scoped requests); bodies may
    /// omit it.
    pub namespace: &'a str,
    /// Who made the request, when a user did.
    pub user: Option<&'a kemu_shared::UserInfo>,
    /// Now, from the cluster's clock.
    pub now: chrono::DateTime<chrono::Utc>,
}

/// The per-kind hooks; each defaults to doing nothing.
pub trait Strategy: Sync {
    /// Upstream's defaulting of the kind, which its decoder applies before
    /// anything else sees the object (the field manager included).
    /// [`prepare_create`] and [`prepare_update`] run it before the hooks
    /// below; setting only what is unset, it may run more than once.
    fn defaults(&self, _rt: &ResourceType, _object: &mut Value) {}

    /// Fills in and allocates what the registry owns on create; `name` is the
    /// final name (after `generateName`).
    fn prepare_create(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        _name: &str,
        _object: &mut Value,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// Carries over and checks what the registry owns on update.
    fn prepare_update(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        _old: &Value,
        _new: &mut Value,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Sets `field` of the JSON object `v` to `value` when it is missing or
/// null, as upstream's `SetDefaults_*` fill unset fields; anything but an
/// object is left alone.
pub fn set_default(v: &mut Value, field: &str, value: Value) {
    if v.is_object() && v[field].is_null() {
        v[field] = value;
    }
}

/// A strategy that only fills defaults, given the kind and the whole object.
#[derive(Debug)]
pub struct Defaults(pub fn(kind: &str, object: &mut Value));

impl Strategy for Defaults {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        (self.0)(&rt.kind, object);
    }
}

/// (group, kind) → strategy.
static STRATEGIES: &[(&str, &str, &dyn Strategy)] = &[
    ("", "Service", &service::ServiceStrategy),
    ("", "Pod", &pods::PodStrategy),
    ("", "PodTemplate", &Defaults(pods::default_object)),
    ("apps", "Deployment", &Defaults(workloads::default_object)),
    ("apps", "StatefulSet", &Defaults(workloads::default_object)),
    ("apps", "DaemonSet", &workloads::DaemonSetStrategy),
    ("apps", "ReplicaSet", &Defaults(workloads::default_object)),
    ("batch", "Job", &workloads::JobStrategy),
    ("batch", "CronJob", &Defaults(workloads::default_object)),
    (
        "",
        "ReplicationController",
        &Defaults(defaults::default_object),
    ),
    ("", "Namespace", &namespace::NamespaceStrategy),
    ("", "Secret", &Defaults(defaults::default_object)),
    ("", "LimitRange", &Defaults(defaults::default_object)),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        &Defaults(defaults::default_object),
    ),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &certificates::CsrStrategy,
    ),
    ("", "PersistentVolume", &volumes::VolumeStrategy),
    ("", "PersistentVolumeClaim", &volumes::VolumeStrategy),
    (
        "networking.k8s.io",
        "NetworkPolicy",
        &Defaults(defaults::default_object),
    ),
    (
        "resource.k8s.io",
        "ResourceClaim",
        &Defaults(defaults::default_object),
    ),
    (
        "resource.k8s.io",
        "ResourceClaimTemplate",
        &Defaults(defaults::default_object),
    ),
    (
        "scheduling.k8s.io",
        "PriorityClass",
        &Defaults(defaults::default_object),
    ),
    (
        "storage.k8s.io",
        "StorageClass",
        &Defaults(defaults::default_object),
    ),
    (
        "storage.k8s.io",
        "CSIDriver",
        &Defaults(defaults::default_object),
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        &Defaults(defaults::default_object),
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        &Defaults(defaults::default_object),
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        &webhooks::WebhookConfigurationStrategy,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        &webhooks::WebhookConfigurationStrategy,
    ),
];

fn strategy(rt: &ResourceType) -> Option<&'static dyn Strategy> {
    STRATEGIES
        .iter()
        .find(|(g, k, _)| *g == rt.group && *k == rt.kind)
        .map(|(_, _, s)| *s)
}

/// Applies the kind's defaults to `object`, as upstream's decoder does.
pub fn defaults(rt: &ResourceType, object: &mut Value) {
    if let Some(s) = strategy(rt) {
        s.defaults(rt, object);
    }
}

/// Runs the kind's defaults, then its create hook, on `object`, named `name`.
pub fn prepare_create(
    ctx: &Context<'_>,
    rt: &ResourceType,
    name: &str,
    object: &mut Value,
) -> Result<(), ApiError> {
    match strategy(rt) {
        Some(s) => {
            s.defaults(rt, object);
            s.prepare_create(ctx, rt, name, object)
        }
        None => Ok(()),
    }
}

/// Runs the kind's defaults, then its update hook, on `new`, replacing `old`.
pub fn prepare_update(
    ctx: &Context<'_>,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
) -> Result<(), ApiError> {
    match strategy(rt) {
        Some(s) => {
            s.defaults(rt, new);
            s.prepare_update(ctx, rt, old, new)
        }
        None => Ok(()),
    }
}
