//! The `pvc-protection` and `pv-protection` controllers of
//! kube-controller-manager: each claim and volume carries its protection
//! finalizer (admission adds it on create; these add it to objects written
//! without it), and a deleted one keeps it while it is in use:
//!
//! - a PersistentVolumeClaim while a scheduled, non-terminated Pod of its
//!   namespace mounts it (a `persistentVolumeClaim` volume, or the
//!   `<pod>-<volume>` claim of an `ephemeral` one);
//! - a PersistentVolume while it is `Bound`;
//! - a VolumeAttributesClass while a claim or volume names it (the
//!   `vac-protection` controller).
//!
//! So `kubectl delete pvc` on a claim in use leaves it `Terminating` until
//! its last Pod is gone, as on a real cluster.

use std::sync::Arc;

use serde_json::Value;

use super::client::{BoxFuture, ClientError, EventType, Kind, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::authz::admission::storage_protection::{
    PV_FINALIZER, PVC_FINALIZER, VAC_FINALIZER, add_finalizer,
};

/// The claims `pod` mounts, by name.
fn claims_of(pod: &Value) -> Vec<String> {
    let pod_name = obj::name(pod);
    pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(c) = v["persistentVolumeClaim"]["claimName"].as_str() {
                return Some(c.to_owned());
            }
            // Upstream's `ephemeral.VolumeClaimName`.
            (!v["ephemeral"].is_null())
                .then(|| format!("{pod_name}-{}", v["name"].as_str().unwrap_or_default()))
        })
        .collect()
}

/// The VolumeAttributesClasses a claim or volume names: a claim's wanted,
/// current and target class, a volume's class.
fn classes_of(o: &Value) -> impl Iterator<Item = &str> {
    [
        &o["spec"]["volumeAttributesClassName"],
        &o["status"]["currentVolumeAttributesClassName"],
        &o["status"]["modifyVolumeStatus"]["targetVolumeAttributesClassName"],
    ]
    .into_iter()
    .filter_map(Value::as_str)
}

/// Whether `pod` still holds its claims: scheduled (the kubelet will not
/// start a Pod on a claim being deleted) and not terminated.
fn holds_claims(pod: &Value) -> bool {
    !pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

fn has_finalizer(o: &Value, finalizer: &str) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|f| f == finalizer))
}

fn without_finalizer(o: &Value, finalizer: &str) -> Value {
    let mut next = o.clone();
    if let Some(a) = next["metadata"]["finalizers"].as_array_mut() {
        a.retain(|f| f != finalizer);
    }
    next
}

/// One of the three controllers: the claims', the volumes' or the classes'.
pub struct StorageProtection {
    rt: Arc<Runtime>,
    kind: Kind,
    finalizer: &'static str,
}

impl StorageProtection {
    /// Wires the controllers to the claim, volume, class and Pod informers.
    pub fn register(rt: &Arc<Runtime>) -> Vec<Registration> {
        let pvc_queue = rt.queue("pvc-protection");
        let q = pvc_queue.clone();
        rt.informer(kinds::PVC).on_change(move |c| {
            if c.kind != EventType::Deleted {
                q.add(ObjKey::of(&c.new));
            }
        });
        // A Pod that stops holding a claim being deleted releases it.
        let (q, claims) = (pvc_queue.clone(), rt.informer(kinds::PVC).clone());
        rt.informer(kinds::POD).on_change(move |c| {
            let released = c.kind == EventType::Deleted || !holds_claims(&c.new);
            if !released {
                return;
            }
            let ns = obj::namespace(&c.new);
            for name in claims_of(&c.new) {
                if claims.get_by(ns, &name).is_some_and(|p| obj::deleting(&p)) {
                    q.add(ObjKey::new(ns, &name));
                }
            }
        });
        let pv_queue = rt.queue("pv-protection");
        let q = pv_queue.clone();
        rt.informer(kinds::PV).on_change(move |c| {
            if c.kind != EventType::Deleted {
                q.add(ObjKey::of(&c.new));
            }
        });
        let vac_queue = rt.queue("vac-protection");
        let q = vac_queue.clone();
        rt.informer(kinds::VOLUME_ATTRIBUTES_CLASS)
            .on_change(move |c| {
                if c.kind != EventType::Deleted {
                    q.add(ObjKey::of(&c.new));
                }
            });
        // A claim or volume that lets go of a class being deleted releases it.
        for kind in [kinds::PVC, kinds::PV] {
            let q = vac_queue.clone();
            let classes = rt.informer(kinds::VOLUME_ATTRIBUTES_CLASS).clone();
            rt.informer(kind).on_change(move |c| {
                let old = c.old.as_deref().into_iter().flat_map(classes_of);
                for name in old.chain(classes_of(&c.new)) {
                    if classes.get_by("", name).is_some_and(|v| obj::deleting(&v)) {
                        q.add(ObjKey::new("", name));
                    }
                }
            });
        }
        vec![
            Registration {
                name: "vac-protection",
                queue: vac_queue,
                reconciler: Arc::new(Self {
                    rt: rt.clone(),
                    kind: kinds::VOLUME_ATTRIBUTES_CLASS,
                    finalizer: VAC_FINALIZER,
                }),
            },
            Registration {
                name: "pvc-protection",
                queue: pvc_queue,
                reconciler: Arc::new(Self {
                    rt: rt.clone(),
                    kind: kinds::PVC,
                    finalizer: PVC_FINALIZER,
                }),
            },
            Registration {
                name: "pv-protection",
                queue: pv_queue,
                reconciler: Arc::new(Self {
                    rt: rt.clone(),
                    kind: kinds::PV,
                    finalizer: PV_FINALIZER,
                }),
            },
        ]
    }

    /// Whether the object still needs protecting.
    fn in_use(&self, o: &Value) -> bool {
        if self.kind == kinds::PV {
            return o["status"]["phase"] == "Bound";
        }
        if self.kind == kinds::VOLUME_ATTRIBUTES_CLASS {
            let name = obj::name(o);
            let names = |v: &Arc<Value>| classes_of(v).any(|c| c == name);
            return self.rt.informer(kinds::PVC).list().iter().any(names)
                || self.rt.informer(kinds::PV).list().iter().any(names);
        }
        let name = obj::name(o);
        self.rt
            .informer(kinds::POD)
            .list_namespace(obj::namespace(o))
            .iter()
            .any(|p| holds_claims(p) && claims_of(p).iter().any(|c| c == name))
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let informer = self.rt.informer(self.kind);
        let Some(o) = informer.get(key) else {
            return Ok(Requeue::No);
        };
        let next = if !obj::deleting(&o) {
            let mut next = (*o).clone();
            if !add_finalizer(&mut next, self.finalizer) {
                return Ok(Requeue::No);
            }
            next
        } else if has_finalizer(&o, self.finalizer) && !self.in_use(&o) {
            without_finalizer(&o, self.finalizer)
        } else {
            return Ok(Requeue::No);
        };
        match self.rt.client.update(self.kind, next).await {
            Ok(w) => informer.observe(w),
            // Gone once its last finalizer went: the watch says so.
            Err(ClientError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for StorageProtection {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_hold_their_claims_while_scheduled_and_not_terminated() {
        let pod = json!({
            "metadata": { "name": "web-0" },
            "spec": { "nodeName": "n1", "volumes": [
                { "name": "data", "persistentVolumeClaim": { "claimName": "data-web-0" } },
                { "name": "scratch", "ephemeral": { "volumeClaimTemplate": {} } },
                { "name": "cfg", "configMap": { "name": "c" } },
            ] },
            "status": { "phase": "Running" },
        });
        assert_eq!(claims_of(&pod), ["data-web-0", "web-0-scratch"]);
        assert!(holds_claims(&pod));
        let mut done = pod.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert!(!holds_claims(&done));
        let mut pending = pod.clone();
        pending["spec"]["nodeName"] = Value::Null;
        assert!(!holds_claims(&pending));
    }

    #[test]
    fn the_finalizer_comes_off_alone() {
        let o = json!({ "metadata": { "finalizers": ["a/b", PVC_FINALIZER] } });
        assert!(has_finalizer(&o, PVC_FINALIZER));
        let next = without_finalizer(&o, PVC_FINALIZER);
        assert_eq!(next["metadata"]["finalizers"], json!(["a/b"]));
        assert!(!has_finalizer(&next, PVC_FINALIZER));
    }
}
