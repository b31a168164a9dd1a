//! The scheduler's volume binding (upstream's VolumeBinding plugin): a Pod's
//! PersistentVolumeClaims decide where and whether it can be placed.
//!
//! - A missing claim, or an unbound claim of an `Immediate` class, leaves the
//!   Pod unschedulable with upstream's message, tried again when the claim
//!   changes.
//! - An unbound claim of a `WaitForFirstConsumer` class gets the chosen Node in
//!   `volume.kubernetes.io/selected-node`; the provisioner makes its volume
//!   there and the Pod is bound once the claim is.
//! - A bound claim's volume `nodeAffinity` (its zone) filters the Nodes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{ClientError, kinds};
use super::obj;
use super::runtime::{ObjKey, Runtime};
use super::scheduler::match_node_expressions;

/// The annotation the scheduler puts on a delayed-binding claim.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The annotation marking the cluster's default StorageClass.
pub const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";

/// The StorageClass a claim uses: its `storageClassName`, else the default
/// class (`None` for `""`, which asks for no class).
pub fn class_of(rt: &Runtime, pvc: &Value) -> Option<Arc<Value>> {
    let classes = rt.informer(kinds::STORAGE_CLASS);
    match pvc["spec"]["storageClassName"].as_str() {
        Some("") => None,
        Some(name) => classes.get_by("", name),
        None => default_class(rt),
    }
}

/// The cluster's default StorageClass (the newest, as upstream picks among
/// several).
pub fn default_class(rt: &Runtime) -> Option<Arc<Value>> {
    let mut defaults: Vec<Arc<Value>> = rt
        .informer(kinds::STORAGE_CLASS)
        .list()
        .into_iter()
        .filter(|c| obj::annotation(c, DEFAULT_CLASS) == Some("true"))
        .collect();
    defaults.sort_by(|a, b| {
        let t = |v: &Value| {
            v["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        };
        t(b).cmp(&t(a)).then_with(|| obj::name(a).cmp(obj::name(b)))
    });
    defaults.into_iter().next()
}

/// Whether a claim waits for its first consumer before it is provisioned.
pub fn waits_for_consumer(class: Option<&Value>) -> bool {
    class.is_some_and(|c| c["volumeBindingMode"] == "WaitForFirstConsumer")
}

/// Whether a claim is bound to a volume.
pub fn bound(pvc: &Value) -> bool {
    pvc["spec"]["volumeName"]
        .as_str()
        .is_some_and(|v| !v.is_empty())
        && pvc["status"]["phase"] == "Bound"
}

/// What a Pod's claims say about scheduling it.
#[derive(Debug, Default)]
pub struct VolumeCheck {
    /// Do not place it now (its volumes are being provisioned).
    pub wait: bool,
    /// Claims whose changes should make the scheduler try again.
    pub waits_on: Vec<ObjKey>,
    /// Why no Node can take it, in upstream's words.
    pub unschedulable: Option<String>,
    /// Delayed-binding claims to provision on the chosen Node.
    pub to_provision: Vec<Arc<Value>>,
    /// The `nodeSelectorTerms` of the bound volumes.
    affinities: Vec<Value>,
}

impl VolumeCheck {
    /// Whether `node` satisfies every bound volume's node affinity.
    pub fn node_fits(&self, node: &Value) -> bool {
        self.affinities.iter().all(|terms| {
            terms.as_array().is_none_or(|t| {
                t.is_empty()
                    || t.iter().any(|term| {
                        match_node_expressions(&term["matchExpressions"], node, false)
                            && match_node_expressions(&term["matchFields"], node, true)
                    })
            })
        })
    }
}

/// Reads the claims of `pod`.
pub fn check(rt: &Runtime, pod: &Value) -> VolumeCheck {
    let mut out = VolumeCheck::default();
    let ns = obj::namespace(pod);
    let claims = rt.informer(kinds::PVC);
    for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() else {
            continue;
        };
        let key = ObjKey::new(ns, claim);
        let Some(pvc) = claims.get(&key) else {
            out.waits_on.push(key);
            out.unschedulable = Some(format!("persistentvolumeclaim \"{claim}\" not found"));
            continue;
        };
        if obj::deleting(&pvc) {
            out.waits_on.push(key);
            out.unschedulable = Some(format!(
                "persistentvolumeclaim \"{claim}\" is being deleted"
            ));
            continue;
        }
        if bound(&pvc) {
            let pv_name = pvc["spec"]["volumeName"].as_str().unwrap_or_default();
            if let Some(pv) = rt.informer(kinds::PV).get_by("", pv_name) {
                let terms = &pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"];
                if !terms.is_null() {
                    out.affinities.push(terms.clone());
                }
            }
            continue;
        }
        out.waits_on.push(key);
        if obj::annotation(&pvc, SELECTED_NODE).is_some() {
            out.wait = true;
        } else if waits_for_consumer(class_of(rt, &pvc).as_deref()) {
            out.to_provision.push(pvc);
        } else {
            out.unschedulable = Some("pod has unbound immediate PersistentVolumeClaims".into());
        }
    }
    out
}

/// Records the chosen Node on delayed-binding claims.
pub async fn select_node(
    rt: &Runtime,
    claims: &[Arc<Value>],
    node: &str,
) -> Result<(), ClientError> {
    for pvc in claims {
        let mut next = (**pvc).clone();
        obj::set_annotation(&mut next, SELECTED_NODE, node);
        let written = rt.client.update(kinds::PVC, next).await?;
        rt.informer(kinds::PVC).observe(written);
    }
    Ok(())
}

/// A claim's requested size (`spec.resources.requests.storage`).
pub fn requested(pvc: &Value) -> Value {
    match &pvc["spec"]["resources"]["requests"]["storage"] {
        Value::Null => json!("1Gi"),
        q => q.clone(),
    }
}
