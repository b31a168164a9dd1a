//! The PersistentVolume controller with the cloud's provisioners, as
//! kube-controller-manager's `persistentvolume-binder` and the CSI external
//! provisioners run them:
//!
//! - a claim without `storageClassName` gets the default class (upstream's
//!   retroactive default assignment);
//! - a claim binds to a matching `Available` volume of its class (smallest
//!   that fits), or to the one its `volumeName` names;
//! - otherwise its class's provisioner makes a volume `pvc-<claim uid>` at
//!   once (`Immediate`) or once the scheduler picked a Node for its first
//!   consumer (`WaitForFirstConsumer`, the `selected-node` annotation), pinned
//!   to that Node's zone; both are bound (`Bound`);
//! - when a claim is gone, its volume is deleted (`Delete`) or shows
//!   `Released` (`Retain`), by its reclaim policy.
//!
//! Events as upstream: `WaitForFirstConsumer`, `ExternalProvisioning`,
//! `Provisioning`, `ProvisioningSucceeded`, `ProvisioningFailed`,
//! `FailedBinding`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use super::volume_binding::{self, SELECTED_NODE};
use crate::volumes::Provisioner;
use crate::volumes::provisioner::ZONE_LABEL;

const COMPONENT: &str = "persistentvolume-controller";
const IN_TREE: [&str; 2] = ["kubernetes.io/aws-ebs", "kubernetes.io/gce-pd"];

/// The PersistentVolume controller.
pub struct VolumeController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    provisioner: Provisioner,
}

fn access_modes(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect()
}

fn claimed_by(pv: &Value) -> Option<ObjKey> {
    let r = &pv["spec"]["claimRef"];
    Some(ObjKey::new(r["namespace"].as_str()?, r["name"].as_str()?))
}

impl VolumeController {
    /// Wires the controller to the claim, volume and class informers.
    pub fn register(
        rt: &Arc<Runtime>,
        recorder: Recorder,
        provisioner: Provisioner,
    ) -> Registration {
        let queue = rt.queue("persistentvolume");
        let q = queue.clone();
        rt.informer(kinds::PVC)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let q = queue.clone();
        rt.informer(kinds::PV).on_change(move |c| {
            if let Some(k) = claimed_by(&c.new) {
                q.add(k);
            }
        });
        let (q, claims) = (queue.clone(), rt.informer(kinds::PVC).clone());
        rt.informer(kinds::STORAGE_CLASS).on_change(move |c| {
            // A new (default) class may unblock pending claims.
            if c.kind != EventType::Deleted {
                for pvc in claims.list() {
                    if !volume_binding::bound(&pvc) {
                        q.add(ObjKey::of(&pvc));
                    }
                }
            }
        });
        Registration {
            name: "persistentvolume",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                provisioner,
            }),
        }
    }

    async fn event(&self, component: &str, o: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(component, None, o, kind, reason, msg)
            .await;
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(pvc) = self.rt.informer(kinds::PVC).get(key) else {
            return self.reclaim(key).await;
        };
        if obj::deleting(&pvc) {
            return Ok(Requeue::No);
        }
        if volume_binding::bound(&pvc) {
            return Ok(Requeue::No);
        }
        if pvc["spec"]["storageClassName"].is_null()
            && let Some(class) = volume_binding::default_class(&self.rt)
        {
            let mut next = (*pvc).clone();
            next["spec"]["storageClassName"] = json!(obj::name(&class));
            let w = self.rt.client.update(kinds::PVC, next).await?;
            self.rt.informer(kinds::PVC).observe(w);
            return Ok(Requeue::No);
        }
        if let Some(pv) = self.find_volume(&pvc) {
            self.bind(&pvc, &pv, false).await?;
            return Ok(Requeue::No);
        }
        if pvc["spec"]["volumeName"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
        {
            // Pre-bound to a volume that does not exist (yet).
            return self.pending(&pvc, None).await;
        }
        let class_name = pvc["spec"]["storageClassName"].as_str().unwrap_or("");
        if class_name.is_empty() {
            let msg = "no persistent volumes available for this claim and no storage class is set";
            return self
                .pending(
                    &pvc,
                    Some(("FailedBinding", msg.to_owned(), EventKind::Normal)),
                )
                .await;
        }
        let Some(class) = volume_binding::class_of(&self.rt, &pvc) else {
            let msg = format!("storageclass.storage.k8s.io \"{class_name}\" not found");
            return self
                .pending(&pvc, Some(("ProvisioningFailed", msg, EventKind::Warning)))
                .await;
        };
        let selected = obj::annotation(&pvc, SELECTED_NODE).map(str::to_owned);
        if volume_binding::waits_for_consumer(Some(&class)) && selected.is_none() {
            let msg = "waiting for first consumer to be created before binding".to_owned();
            return self
                .pending(&pvc, Some(("WaitForFirstConsumer", msg, EventKind::Normal)))
                .await;
        }
        self.provision(&pvc, &class, selected.as_deref()).await?;
        Ok(Requeue::No)
    }

    /// Marks a claim Pending, recording `event` the first time.
    async fn pending(
        &self,
        pvc: &Value,
        event: Option<(&str, String, EventKind)>,
    ) -> Result<Requeue, ClientError> {
        if pvc["status"]["phase"] == "Pending" {
            return Ok(Requeue::No);
        }
        let mut next = pvc.clone();
        next["status"]["phase"] = json!("Pending");
        let w = self.rt.client.update_status(kinds::PVC, next).await?;
        self.rt.informer(kinds::PVC).observe(w);
        if let Some((reason, msg, kind)) = event {
            self.event(COMPONENT, pvc, kind, reason, msg).await;
        }
        Ok(Requeue::No)
    }

    /// An Available volume this claim may bind: the one it names, else the
    /// smallest of its class with the modes and size it asks for.
    fn find_volume(&self, pvc: &Value) -> Option<Arc<Value>> {
        let pvs = self.rt.informer(kinds::PV);
        let claim_uid = obj::uid(pvc);
        // A volume already promised to this claim (a bind half done).
        if let Some(pv) = pvs
            .list()
            .into_iter()
            .find(|pv| pv["spec"]["claimRef"]["uid"] == claim_uid)
        {
            return Some(pv);
        }
        if let Some(name) = pvc["spec"]["volumeName"].as_str().filter(|v| !v.is_empty()) {
            return pvs.get_by("", name).filter(|pv| {
                pv["spec"]["claimRef"].is_null() || claimed_by(pv) == Some(ObjKey::of(pvc))
            });
        }
        let class = pvc["spec"]["storageClassName"].as_str().unwrap_or("");
        let want = obj::quantity_milli(&volume_binding::requested(pvc)).unwrap_or(0);
        let modes = access_modes(&pvc["spec"]["accessModes"]);
        let mut fits: Vec<(i128, Arc<Value>)> = pvs
            .list()
            .into_iter()
            .filter(|pv| {
                pv["spec"]["claimRef"].is_null()
                    && !obj::deleting(pv)
                    && pv["spec"]["storageClassName"].as_str().unwrap_or("") == class
                    && pv["status"]["phase"] != "Released"
                    && modes
                        .iter()
                        .all(|m| access_modes(&pv["spec"]["accessModes"]).contains(m))
            })
            .filter_map(|pv| {
                let size = obj::quantity_milli(&pv["spec"]["capacity"]["storage"])?;
                (size >= want).then_some((size, pv))
            })
            .collect();
        fits.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| obj::name(&a.1).cmp(obj::name(&b.1)))
        });
        fits.into_iter().next().map(|(_, pv)| pv)
    }

    /// The zone a new volume goes to: the selected Node's, else one of the
    /// cluster's zones chosen by the claim's uid.
    fn zone(&self, pvc: &Value, selected: Option<&str>) -> Option<String> {
        let nodes = self.rt.informer(kinds::NODE);
        let zone_of = |n: &Value| {
            n["metadata"]["labels"][ZONE_LABEL]
                .as_str()
                .map(str::to_owned)
        };
        if let Some(node) = selected {
            return nodes.get_by("", node).and_then(|n| zone_of(&n));
        }
        let mut zones: Vec<String> = nodes.list().iter().filter_map(|n| zone_of(n)).collect();
        zones.sort();
        zones.dedup();
        if zones.is_empty() {
            return None;
        }
        let h = obj::uid(pvc)
            .bytes()
            .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
        Some(zones[h % zones.len()].clone())
    }

    async fn provision(
        &self,
        pvc: &Value,
        class: &Value,
        selected: Option<&str>,
    ) -> Result<(), ClientError> {
        let provisioner = class["provisioner"].as_str().unwrap_or("").to_owned();
        let claim = format!("{}/{}", obj::namespace(pvc), obj::name(pvc));
        let in_tree = IN_TREE.contains(&provisioner.as_str());
        let pv_name = format!("pvc-{}", obj::uid(pvc));
        if !in_tree {
            let msg = format!(
                "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
            );
            self.event(
                COMPONENT,
                pvc,
                EventKind::Normal,
                "ExternalProvisioning",
                msg,
            )
            .await;
            let msg = format!("External provisioner is provisioning volume for claim \"{claim}\"");
            self.event(&provisioner, pvc, EventKind::Normal, "Provisioning", msg)
                .await;
        }
        let zone = self.zone(pvc, selected);
        let mut pv = json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name,
                "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
            "spec": {
                "accessModes": pvc["spec"]["accessModes"],
                "capacity": {"storage": volume_binding::requested(pvc)},
                "persistentVolumeReclaimPolicy": class["reclaimPolicy"].as_str().unwrap_or("Delete"),
                "storageClassName": obj::name(class),
                "volumeMode": pvc["spec"]["volumeMode"].as_str().unwrap_or("Filesystem"),
            },
        });
        if let Some(opts) = class["mountOptions"].as_array() {
            pv["spec"]["mountOptions"] = json!(opts);
        }
        self.provisioner
            .source(&provisioner, &pv_name, zone.as_deref(), &mut pv);
        let pv = match self.rt.client.create(kinds::PV, pv).await {
            Ok(w) => w,
            Err(ClientError::AlreadyExists(_)) => {
                self.rt.client.get(kinds::PV, "", &pv_name).await?
            }
            Err(e) => return Err(e),
        };
        self.rt.informer(kinds::PV).observe(pv.clone());
        let (component, msg) = if in_tree {
            (
                COMPONENT.to_owned(),
                format!("Successfully provisioned volume {pv_name} using {provisioner}"),
            )
        } else {
            (
                provisioner.clone(),
                format!("Successfully provisioned volume {pv_name}"),
            )
        };
        self.event(
            &component,
            pvc,
            EventKind::Normal,
            "ProvisioningSucceeded",
            msg,
        )
        .await;
        let mut claim = pvc.clone();
        obj::set_annotation(
            &mut claim,
            "volume.beta.kubernetes.io/storage-provisioner",
            &provisioner,
        );
        obj::set_annotation(
            &mut claim,
            "volume.kubernetes.io/storage-provisioner",
            &provisioner,
        );
        self.bind(&claim, &pv, true).await
    }

    /// Binds `pv` and `pvc` to each other, both sides, as the binder does.
    async fn bind(&self, pvc: &Value, pv: &Value, provisioned: bool) -> Result<(), ClientError> {
        let pv_name = obj::name(pv).to_owned();
        let mut v = pv.clone();
        if v["spec"]["claimRef"]["uid"] != obj::uid(pvc) {
            v["spec"]["claimRef"] = json!({"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                "namespace": obj::namespace(pvc), "name": obj::name(pvc), "uid": obj::uid(pvc),
                "resourceVersion": pvc["metadata"]["resourceVersion"]});
            if !provisioned {
                obj::set_annotation(&mut v, "pv.kubernetes.io/bound-by-controller", "yes");
            }
            v = Arc::unwrap_or_clone(self.rt.client.update(kinds::PV, v).await?);
        }
        if v["status"]["phase"] != "Bound" {
            v["status"] = json!({"phase": "Bound", "lastPhaseTransitionTime": obj::fmt_time(self.rt.clock.now())});
            v = Arc::unwrap_or_clone(self.rt.client.update_status(kinds::PV, v).await?);
        }
        self.rt.informer(kinds::PV).observe(Arc::new(v.clone()));
        let mut c = pvc.clone();
        if c["spec"]["volumeName"] != pv_name.as_str()
            || obj::annotation(&c, "pv.kubernetes.io/bind-completed").is_none()
        {
            c["spec"]["volumeName"] = json!(pv_name);
            obj::set_annotation(&mut c, "pv.kubernetes.io/bind-completed", "yes");
            obj::set_annotation(&mut c, "pv.kubernetes.io/bound-by-controller", "yes");
            c = Arc::unwrap_or_clone(self.rt.client.update(kinds::PVC, c).await?);
        }
        c["status"] = json!({"phase": "Bound", "accessModes": v["spec"]["accessModes"],
            "capacity": v["spec"]["capacity"]});
        let w = self.rt.client.update_status(kinds::PVC, c).await?;
        self.rt.informer(kinds::PVC).observe(w);
        Ok(())
    }

    /// The claim `key` is gone: its volumes follow their reclaim policy.
    async fn reclaim(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let claims = self.rt.informer(kinds::PVC);
        for pv in self.rt.informer(kinds::PV).list() {
            if claimed_by(&pv).as_ref() != Some(key) {
                continue;
            }
            // A new claim of the same name is not this volume's claim.
            if claims
                .get(key)
                .is_some_and(|c| pv["spec"]["claimRef"]["uid"] == obj::uid(&c))
            {
                continue;
            }
            // Released first, as the binder does (pv-protection then lets go).
            if pv["status"]["phase"] != "Released" {
                let mut v = (*pv).clone();
                v["status"] = json!({"phase": "Released", "lastPhaseTransitionTime": obj::fmt_time(self.rt.clock.now())});
                let w = self.rt.client.update_status(kinds::PV, v).await?;
                self.rt.informer(kinds::PV).observe(w);
            }
            if pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete" && !obj::deleting(&pv) {
                match self
                    .rt
                    .client
                    .delete(kinds::PV, "", obj::name(&pv), DeleteOptions::default())
                    .await
                {
                    // Held by its finalizer until the pv-protection controller lets go.
                    Ok(Some(w)) => self.rt.informer(kinds::PV).observe(w),
                    Ok(None) | Err(ClientError::NotFound(_)) => {
                        self.rt.informer(kinds::PV).observe_deleted(&pv)
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for VolumeController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
