//! The StatefulSet controller: Pods named `<set>-<ordinal>` with a stable
//! hostname, created in order and each waiting for its predecessor to be
//! Running and Ready (`OrderedReady`) or all at once (`Parallel`), removed from
//! the highest ordinal down; a PVC `<claim>-<set>-<ordinal>` per
//! `volumeClaimTemplate`, kept or deleted as `persistentVolumeClaimRetentionPolicy`
//! says; rolling updates from the highest ordinal down to `partition`, one Pod
//! at a time, or `OnDelete`. Status as upstream: `replicas`, `readyReplicas`,
//! `availableReplicas`, `currentReplicas`, `updatedReplicas`,
//! `currentRevision`, `updateRevision`, `observedGeneration`.
//!
//! Each template is recorded as a ControllerRevision `<set>-<hash>`
//! ([`History`]); a Pod below the partition that is re-created gets the
//! current revision's template, as upstream's `newVersionedStatefulSetPod`.
//!
//! Not done: PVC binding (claims are created, not provisioned),
//! `maxUnavailable`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, kinds};
use super::deployment::template_hash;
use super::events::{EventKind, Recorder};
use super::history::History;
use super::obj;
use super::replicaset::pod_from_template_of;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

const COMPONENT: &str = "statefulset-controller";
/// The revision label on StatefulSet (and DaemonSet) Pods.
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// The hash label of a StatefulSet's ControllerRevisions.
const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The StatefulSet controller.
pub struct StatefulSetController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    history: History,
}

fn ordinal(set: &str, pod: &str) -> Option<i64> {
    pod.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

impl StatefulSetController {
    /// Wires the controller to the StatefulSet and Pod informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("statefulset");
        let q = queue.clone();
        rt.informer(kinds::STATEFUL_SET)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        rt.enqueue_controllers_of(kinds::POD, "StatefulSet", &queue);
        Registration {
            name: "statefulset",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                history: History::default(),
            }),
        }
    }

    async fn event(&self, sts: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, None, sts, kind, reason, msg)
            .await;
    }

    async fn delete_pod(&self, sts: &Value, p: &Value) -> Result<(), ClientError> {
        let inf = self.rt.informer(kinds::POD);
        match self
            .rt
            .client
            .delete(
                kinds::POD,
                obj::namespace(p),
                obj::name(p),
                DeleteOptions::default(),
            )
            .await
        {
            Ok(Some(kept)) => inf.observe(kept),
            Ok(None) | Err(ClientError::NotFound(_)) => inf.observe_deleted(p),
            Err(e) => return Err(e),
        }
        let msg = format!(
            "delete Pod {} in StatefulSet {} successful",
            obj::name(p),
            obj::name(sts)
        );
        self.event(sts, EventKind::Normal, "SuccessfulDelete", msg)
            .await;
        Ok(())
    }

    async fn create_pod(
        &self,
        sts: &Value,
        ord: i64,
        template: &Value,
        revision: &str,
    ) -> Result<(), ClientError> {
        let set = obj::name(sts);
        let ns = obj::namespace(sts);
        let name = format!("{set}-{ord}");
        let retention = &sts["spec"]["persistentVolumeClaimRetentionPolicy"];
        let mut volumes = Vec::new();
        for t in sts["spec"]["volumeClaimTemplates"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let claim = t["metadata"]["name"].as_str().unwrap_or("data");
            let pvc_name = format!("{claim}-{name}");
            let mut pvc = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": pvc_name, "namespace": ns,
                             "labels": sts["spec"]["selector"]["matchLabels"].clone()},
                "spec": t["spec"].clone(),
                "status": {"phase": "Pending"},
            });
            if retention["whenDeleted"] == "Delete" {
                pvc["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": "apps/v1", "kind": "StatefulSet", "name": set, "uid": obj::uid(sts),
                    "controller": true, "blockOwnerDeletion": true}]);
            }
            match self.rt.client.create(kinds::PVC, pvc).await {
                Ok(_) => {
                    let msg =
                        format!("create Claim {pvc_name} Pod {name} in StatefulSet {set} success");
                    self.event(sts, EventKind::Normal, "SuccessfulCreate", msg)
                        .await;
                }
                Err(ClientError::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
            volumes.push(json!({"name": claim, "persistentVolumeClaim": {"claimName": pvc_name}}));
        }
        let mut pod = pod_from_template_of(kinds::STATEFUL_SET, sts, template, "");
        pod["metadata"]["name"] = json!(name);
        if let Some(m) = pod["metadata"].as_object_mut() {
            m.remove("generateName");
        }
        let labels = &mut pod["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        labels[REVISION_LABEL] = json!(revision);
        labels["statefulset.kubernetes.io/pod-name"] = json!(name);
        labels["apps.kubernetes.io/pod-index"] = json!(ord.to_string());
        pod["spec"]["hostname"] = json!(name);
        if let Some(svc) = sts["spec"]["serviceName"].as_str() {
            pod["spec"]["subdomain"] = json!(svc);
        }
        if !volumes.is_empty() {
            let list = pod["spec"]["volumes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut list: Vec<Value> = list
                .into_iter()
                .filter(|v| !volumes.iter().any(|n| n["name"] == v["name"]))
                .collect();
            list.extend(volumes);
            pod["spec"]["volumes"] = json!(list);
        }
        match self.rt.client.create(kinds::POD, pod).await {
            Ok(created) => {
                self.rt.informer(kinds::POD).observe(created);
                let msg = format!("create Pod {name} in StatefulSet {set} successful");
                self.event(sts, EventKind::Normal, "SuccessfulCreate", msg)
                    .await;
                Ok(())
            }
            Err(ClientError::AlreadyExists(_)) => Ok(()),
            Err(e) => {
                let msg = format!("create Pod {name} in StatefulSet {set} failed error: {e}");
                self.event(sts, EventKind::Warning, "FailedCreate", msg)
                    .await;
                Err(e)
            }
        }
    }

    /// The template and revision of a new Pod `ord`: the current revision's
    /// below the partition of a rolling update (or, with no `rollingUpdate`,
    /// below the current replicas), else the update revision's.
    async fn template_for(
        &self,
        sts: &Value,
        ord: i64,
        current_rev: &str,
        update_rev: &str,
    ) -> Result<(Value, String), ClientError> {
        let strategy = &sts["spec"]["updateStrategy"];
        let rolling = strategy["type"].as_str().unwrap_or("RollingUpdate") == "RollingUpdate";
        let below = match strategy.get("rollingUpdate").filter(|r| r.is_object()) {
            Some(r) => ord < r["partition"].as_i64().unwrap_or(0),
            None => rolling && ord < sts["status"]["currentReplicas"].as_i64().unwrap_or(0),
        };
        if below
            && current_rev != update_rev
            && let Some(t) =
                History::template(&*self.rt.client, obj::namespace(sts), current_rev).await?
        {
            return Ok((t, current_rev.to_owned()));
        }
        Ok((sts["spec"]["template"].clone(), update_rev.to_owned()))
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(sts) = self.rt.informer(kinds::STATEFUL_SET).get(key) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&sts) {
            self.history.forget(obj::uid(&sts));
            return Ok(Requeue::No);
        }
        let set = obj::name(&sts).to_owned();
        let spec = &sts["spec"];
        let want = spec["replicas"].as_i64().unwrap_or(1).max(0);
        let ordered = spec["podManagementPolicy"]
            .as_str()
            .unwrap_or("OrderedReady")
            == "OrderedReady";
        let min_ready = spec["minReadySeconds"].as_i64().unwrap_or(0);
        let hash = template_hash(
            &spec["template"],
            sts["status"]["collisionCount"].as_i64().filter(|c| *c > 0),
        );
        self.history
            .record(
                &*self.rt.client,
                kinds::STATEFUL_SET,
                &sts,
                &hash,
                HASH_LABEL,
            )
            .await?;
        let update_rev = format!("{set}-{hash}");
        let current_rev = sts["status"]["currentRevision"]
            .as_str()
            .unwrap_or(&update_rev)
            .to_owned();
        let now = self.rt.clock.now();
        let mut pods: BTreeMap<i64, Arc<Value>> = self
            .rt
            .informer(kinds::POD)
            .controlled_by(obj::uid(&sts))
            .into_iter()
            .filter_map(|p| ordinal(&set, obj::name(&p)).map(|o| (o, p)))
            .collect();
        let healthy =
            |p: &Value| obj::pod_phase(p) == "Running" && obj::pod_ready(p) && !obj::deleting(p);
        let mut requeue = Requeue::No;

        'manage: {
            // Create or replace the Pods in range, in order.
            for ord in 0..want {
                match pods.get(&ord).cloned() {
                    None => {
                        let (template, rev) = self
                            .template_for(&sts, ord, &current_rev, &update_rev)
                            .await?;
                        self.create_pod(&sts, ord, &template, &rev).await?;
                        if ordered {
                            break 'manage;
                        }
                    }
                    Some(p) if obj::pod_terminal(&p) && !obj::deleting(&p) => {
                        self.delete_pod(&sts, &p).await?;
                        pods.remove(&ord);
                        // Look again for the replacement even if the
                        // deletion's own event is coalesced away.
                        requeue = requeue.min(Requeue::After(std::time::Duration::from_secs(1)));
                        if ordered {
                            break 'manage;
                        }
                    }
                    Some(p) if ordered && !healthy(&p) => break 'manage,
                    Some(_) => {}
                }
            }
            // Remove the Pods out of range, highest first. In order, only a
            // healthy Pod or the first unhealthy one goes: the lowest
            // unhealthy ordinal, as upstream's firstUnavailablePod (its
            // condemned list is walked from the lowest ordinal).
            let first_unhealthy = pods.iter().find(|(_, p)| !healthy(p)).map(|(o, _)| *o);
            let condemned: Vec<Arc<Value>> =
                pods.range(want..).rev().map(|(_, p)| p.clone()).collect();
            for p in condemned {
                if obj::deleting(&p) {
                    if ordered {
                        break 'manage;
                    }
                    continue;
                }
                let ord = ordinal(&set, obj::name(&p)).unwrap_or(0);
                if ordered && !healthy(&p) && Some(ord) != first_unhealthy {
                    break 'manage;
                }
                self.delete_pod(&sts, &p).await?;
                pods.remove(&ord);
                if spec["persistentVolumeClaimRetentionPolicy"]["whenScaled"] == "Delete" {
                    for t in spec["volumeClaimTemplates"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let claim = format!(
                            "{}-{set}-{ord}",
                            t["metadata"]["name"].as_str().unwrap_or("data")
                        );
                        match self
                            .rt
                            .client
                            .delete(
                                kinds::PVC,
                                obj::namespace(&sts),
                                &claim,
                                DeleteOptions::default(),
                            )
                            .await
                        {
                            Ok(_) | Err(ClientError::NotFound(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                if ordered {
                    break 'manage;
                }
            }
            // Rolling update: one stale Pod at a time, highest ordinal first,
            // only while every Pod is healthy.
            let strategy = spec["updateStrategy"]["type"]
                .as_str()
                .unwrap_or("RollingUpdate");
            if strategy == "RollingUpdate" {
                let partition = spec["updateStrategy"]["rollingUpdate"]["partition"]
                    .as_i64()
                    .unwrap_or(0);
                let all_healthy = (0..want).all(|o| pods.get(&o).is_some_and(|p| healthy(p)));
                if all_healthy
                    && let Some((_, stale)) = pods
                        .range(partition..want)
                        .rev()
                        .find(|(_, p)| obj::labels(p)[REVISION_LABEL] != update_rev.as_str())
                {
                    let stale = stale.clone();
                    self.delete_pod(&sts, &stale).await?;
                }
            }
        }

        // Status from what the cache now holds.
        let pods: Vec<Arc<Value>> = self.rt.informer(kinds::POD).controlled_by(obj::uid(&sts));
        let live: Vec<&Arc<Value>> = pods.iter().filter(|p| !obj::deleting(p)).collect();
        let ready = live.iter().filter(|p| obj::pod_ready(p)).count() as i64;
        let mut available = 0;
        for p in &live {
            match obj::pod_available(p, min_ready, now) {
                (true, _) => available += 1,
                (false, Some(w)) => requeue = requeue.min(Requeue::After(w)),
                _ => {}
            }
        }
        let rev_of = |p: &&Arc<Value>| {
            obj::labels(p)[REVISION_LABEL]
                .as_str()
                .unwrap_or("")
                .to_owned()
        };
        let updated = live.iter().filter(|p| rev_of(p) == update_rev).count() as i64;
        let mut current_rev = current_rev;
        if updated == want && ready == want && live.len() as i64 == want {
            current_rev = update_rev.clone();
        }
        let current = live.iter().filter(|p| rev_of(p) == current_rev).count() as i64;
        let mut status = json!({
            "observedGeneration": obj::generation(&sts),
            "replicas": live.len(),
            "readyReplicas": ready,
            "availableReplicas": available,
            "currentReplicas": current,
            "updatedReplicas": updated,
            "currentRevision": current_rev,
            "updateRevision": update_rev,
            "collisionCount": sts["status"]["collisionCount"].as_i64().unwrap_or(0),
        });
        if let Some(m) = status.as_object_mut() {
            m.retain(|k, v| {
                !(v.as_i64() == Some(0) && k != "replicas" && k != "availableReplicas")
            });
        }
        if sts.get("status") != Some(&status) {
            let mut new = (*sts).clone();
            new["status"] = status;
            let written = self
                .rt
                .client
                .update_status(kinds::STATEFUL_SET, new)
                .await?;
            self.rt.informer(kinds::STATEFUL_SET).observe(written);
        }
        Ok(requeue)
    }
}

impl Reconciler for StatefulSetController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
