//! The ReplicaSet controller: keeps `spec.replicas` active Pods from the
//! template, deleting the least valuable first as upstream ranks them, and
//! reports `replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas` (Ready for `minReadySeconds`) and `observedGeneration`.
//! It adopts orphan Pods its selector matches and releases the Pods it
//! controls whose labels no longer match (upstream's `ClaimPods`).
//!
//! The same code keeps core/v1 ReplicationControllers, as upstream runs its
//! ReplicaSet controller for them: a [`Flavor`] says which kind, and an RC's
//! selector is a plain label map.
//!
//! Per-owner Pod counts and each Pod's scale-down rank are kept
//! incrementally from Pod events, so a reconcile costs O(Pods created or
//! deleted) and never reads the owned Pods back (a scale-down of 100,000 ranks
//! them from the tally); so are the orphans and relabeled Pods a sync must
//! look at. One sync creates or
//! deletes at most [`BURST_REPLICAS`] Pods, then writes status and goes
//! again, as upstream's `burstReplicas` has it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, Kind, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{Change, Informer, ObjKey, Queue, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector::LabelSelector;

/// Which kind a [`ReplicaSetController`] keeps.
#[derive(Debug, Clone, Copy)]
pub struct Flavor {
    kind: Kind,
    /// The Events' source component, as upstream names it.
    component: &'static str,
    name: &'static str,
}

/// apps/v1 ReplicaSets.
pub const REPLICA_SETS: Flavor = Flavor {
    kind: kinds::REPLICA_SET,
    component: "replicaset-controller",
    name: "replicaset",
};

/// core/v1 ReplicationControllers.
pub const REPLICATION_CONTROLLERS: Flavor = Flavor {
    kind: kinds::REPLICATION_CONTROLLER,
    component: "replication-controller",
    name: "replicationcontroller",
};

impl Flavor {
    /// The owner's selector; an RC's is a label map, defaulted from its
    /// template's labels.
    fn selector(&self, owner: &Value) -> LabelSelector {
        let s = &owner["spec"]["selector"];
        if self.kind == kinds::REPLICATION_CONTROLLER {
            let labels = match s.as_object() {
                Some(m) if !m.is_empty() => s,
                _ => &owner["spec"]["template"]["metadata"]["labels"],
            };
            LabelSelector::from_label_selector(&json!({ "matchLabels": labels }))
        } else {
            LabelSelector::from_label_selector(s)
        }
        .unwrap_or_default()
    }
}

/// Most Pods created or deleted in one sync, as upstream's `burstReplicas`:
/// a large ReplicaSet reports its progress between batches.
pub const BURST_REPLICAS: i64 = 500;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    active: i64,
    ready: i64,
}

/// What the tally keeps of one controlled Pod: enough to count it and to
/// rank it for scale-down without reading the Pod back.
struct Tracked {
    owner: String,
    uid: String,
    active: bool,
    ready: bool,
    /// When its Ready condition last turned (for `minReadySeconds`).
    ready_since: Option<chrono::DateTime<chrono::Utc>>,
    rank: Rank,
}

#[derive(Default)]
struct Tally {
    pods: HashMap<ObjKey, Tracked>,
    owners: HashMap<String, Counts>,
    /// Active controlled Pods by owner uid: the scale-down candidates.
    active: HashMap<String, HashSet<ObjKey>>,
    /// Active Pods with no controller, by namespace: candidates for adoption.
    orphans: HashMap<String, HashSet<ObjKey>>,
    /// Controlled Pods whose labels changed, by owner uid: candidates for
    /// release.
    relabeled: HashMap<String, HashSet<ObjKey>>,
}

impl Tally {
    fn apply(&mut self, change: &Change, owner_kind: &str) {
        let key = ObjKey::of(&change.new);
        let p = &change.new;
        let gone = change.kind == super::client::EventType::Deleted;
        if !gone && obj::controller_ref(p).is_none() && !obj::deleting(p) && obj::pod_active(p) {
            self.orphans
                .entry(key.namespace.clone())
                .or_default()
                .insert(key.clone());
        } else if let Some(o) = self.orphans.get_mut(&key.namespace) {
            o.remove(&key);
            if o.is_empty() {
                self.orphans.remove(&key.namespace);
            }
        }
        if let Some(old) = &change.old
            && !gone
            && obj::labels(old) != obj::labels(p)
            && let Some(owner) = obj::controller_ref(p)
                .filter(|r| r["kind"] == owner_kind)
                .and_then(|r| r["uid"].as_str())
        {
            self.relabeled
                .entry(owner.to_owned())
                .or_default()
                .insert(key.clone());
        }
        if let Some(old) = self.pods.remove(&key) {
            if old.active
                && let Some(set) = self.active.get_mut(&old.owner)
            {
                set.remove(&key);
                if set.is_empty() {
                    self.active.remove(&old.owner);
                }
            }
            if let Some(c) = self.owners.get_mut(&old.owner) {
                c.active -= i64::from(old.active);
                c.ready -= i64::from(old.ready);
                if *c == Counts::default() {
                    self.owners.remove(&old.owner);
                }
            }
        }
        if gone {
            return;
        }
        let Some(owner) = obj::controller_ref(p).filter(|r| r["kind"] == owner_kind) else {
            return;
        };
        let Some(owner) = owner["uid"].as_str() else {
            return;
        };
        let active = obj::pod_active(p);
        let ready = active && obj::pod_ready(p);
        let c = self.owners.entry(owner.to_owned()).or_default();
        c.active += i64::from(active);
        c.ready += i64::from(ready);
        if active {
            self.active
                .entry(owner.to_owned())
                .or_default()
                .insert(key.clone());
        }
        let tracked = Tracked {
            owner: owner.to_owned(),
            uid: obj::uid(p).to_owned(),
            active,
            ready,
            ready_since: obj::condition(p, "Ready")
                .and_then(|c| obj::str_at(c, &["lastTransitionTime"]))
                .and_then(obj::parse_time),
            rank: deletion_rank(p),
        };
        self.pods.insert(key, tracked);
    }

    /// How many active Pods of `owner` have been Ready for `min_ready`
    /// seconds at `now`, and when the next one will have been (upstream's
    /// `IsPodAvailable`, from what the tally keeps).
    fn available(
        &self,
        owner: &str,
        min_ready: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> (i64, Requeue) {
        let mut available = 0;
        let mut next = Requeue::No;
        for t in self
            .active
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|k| self.pods.get(k))
        {
            if !t.ready {
                continue;
            }
            let Some(at) = t
                .ready_since
                .unwrap_or(now)
                .checked_add_signed(obj::secs(min_ready))
            else {
                continue;
            };
            if at <= now {
                available += 1;
            } else {
                next = next.min(Requeue::After(obj::to_std(at - now)));
            }
        }
        (available, next)
    }

    /// The `n` active Pods of `owner` to delete first, with their uids, in
    /// upstream's order (ties by namespace and name, so runs repeat).
    fn victims(&self, owner: &str, n: usize) -> Vec<(ObjKey, String)> {
        let Some(keys) = self.active.get(owner) else {
            return Vec::new();
        };
        let mut ranked: Vec<(&Rank, &ObjKey, &str)> = keys
            .iter()
            .filter_map(|k| self.pods.get(k).map(|t| (&t.rank, k, t.uid.as_str())))
            .collect();
        let order =
            |a: &(&Rank, &ObjKey, &str), b: &(&Rank, &ObjKey, &str)| (a.0, a.1).cmp(&(b.0, b.1));
        if ranked.len() > n {
            ranked.select_nth_unstable_by(n, order);
            ranked.truncate(n);
        }
        ranked.sort_unstable_by(order);
        ranked
            .into_iter()
            .map(|(_, k, uid)| (k.clone(), uid.to_owned()))
            .collect()
    }
}

/// The ReplicaSet (or ReplicationController) controller.
pub struct ReplicaSetController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    tally: Arc<Mutex<Tally>>,
    flavor: Flavor,
}

impl ReplicaSetController {
    /// Wires the controller of `flavor`'s kind to the runtime's informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder, flavor: Flavor) -> Registration {
        let queue = rt.queue(flavor.name);
        let tally: Arc<Mutex<Tally>> = Arc::default();
        let q = queue.clone();
        rt.informer(flavor.kind)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let (q, t, rsi) = (
            queue.clone(),
            tally.clone(),
            rt.informer(flavor.kind).clone(),
        );
        rt.informer(kinds::POD).on_change(move |c| {
            if c.is_resync() {
                return;
            }
            t.lock().apply(c, flavor.kind.kind);
            for p in [Some(&c.new), c.old.as_ref()].into_iter().flatten() {
                enqueue_owner(&q, &rsi, p, flavor);
            }
        });
        Registration {
            name: flavor.name,
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                tally,
                flavor,
            }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let rsi = self.rt.informer(self.flavor.kind);
        let pods = self.rt.informer(kinds::POD);
        let Some(rs) = rsi.get(key) else {
            return Ok(Requeue::No);
        };
        let uid = obj::uid(&rs).to_owned();
        if !obj::deleting(&rs) {
            self.claim(&rs).await?;
        }
        let want = rs["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
        let have = self.counts(&uid).active;
        let mut failure = None;
        let more = if have < want {
            !obj::deleting(&rs) && want - have > BURST_REPLICAS
        } else {
            have - want > BURST_REPLICAS
        };
        if !obj::deleting(&rs) && have < want {
            for i in 0..(want - have).min(BURST_REPLICAS) {
                let pod = pod_from_template_of(
                    self.flavor.kind,
                    &rs,
                    &rs["spec"]["template"],
                    &format!("{}-", obj::name(&rs)),
                );
                match self.rt.client.create(kinds::POD, pod).await {
                    Ok(created) => {
                        let msg = format!("Created pod: {}", obj::name(&created));
                        pods.observe(created);
                        self.recorder
                            .record(
                                self.flavor.component,
                                None,
                                &rs,
                                EventKind::Normal,
                                "SuccessfulCreate",
                                msg,
                            )
                            .await;
                    }
                    Err(e) => {
                        self.recorder
                            .record(
                                self.flavor.component,
                                None,
                                &rs,
                                EventKind::Warning,
                                "FailedCreate",
                                format!("Error creating: {e}"),
                            )
                            .await;
                        failure = Some(e);
                        break;
                    }
                }
                if i % 64 == 63 {
                    tokio::task::yield_now().await;
                }
            }
        } else if have > want {
            // Ranked from the tally: no Pod is read back to choose.
            let victims = self
                .tally
                .lock()
                .victims(&uid, (have - want).min(BURST_REPLICAS) as usize);
            for (key, pod_uid) in victims {
                let deleted = json!({"metadata": {
                    "namespace": key.namespace, "name": key.name, "uid": pod_uid}});
                match self
                    .rt
                    .client
                    .delete(
                        kinds::POD,
                        &key.namespace,
                        &key.name,
                        DeleteOptions::default(),
                    )
                    .await
                {
                    Ok(Some(kept)) => pods.observe(kept),
                    Ok(None) | Err(ClientError::NotFound(_)) => pods.observe_deleted(&deleted),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
                self.recorder
                    .record(
                        self.flavor.component,
                        None,
                        &rs,
                        EventKind::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {}", key.name),
                    )
                    .await;
            }
        }
        let requeue = self.update_status(&rs, failure.as_ref()).await?;
        match failure {
            Some(e) => Err(e),
            None if more => Ok(Requeue::After(std::time::Duration::ZERO)),
            None => Ok(requeue),
        }
    }

    /// Upstream's `ClaimPods`: adopts the orphans in `rs`'s namespace its
    /// selector matches, releases the Pods it controls that no longer match.
    async fn claim(&self, rs: &Value) -> Result<(), ClientError> {
        let selector = self.flavor.selector(rs);
        let uid = obj::uid(rs);
        let pods = self.rt.informer(kinds::POD);
        let (orphans, relabeled) = {
            let mut t = self.tally.lock();
            let orphans: Vec<ObjKey> = t
                .orphans
                .get(obj::namespace(rs))
                .map(|o| o.iter().cloned().collect())
                .unwrap_or_default();
            (orphans, t.relabeled.remove(uid).unwrap_or_default())
        };
        // An empty selector would select every Pod: upstream refuses such
        // owners at validation, so kemu adopts nothing for them.
        if selector.is_empty() {
            return Ok(());
        }
        for key in orphans {
            let Some(p) = pods.get(&key) else { continue };
            if obj::controller_ref(&p).is_some() || obj::deleting(&p) || !selector.selects(&p) {
                continue;
            }
            self.write_pod(obj::adopted(&p, self.flavor.kind, rs))
                .await?;
        }
        for key in relabeled {
            let Some(p) = pods.get(&key) else { continue };
            if obj::controller_uid(&p) != Some(uid) || selector.selects(&p) {
                continue;
            }
            self.write_pod(obj::released(&p, uid)).await?;
        }
        Ok(())
    }

    /// Writes an adopted or released Pod; one gone or changed meanwhile is
    /// looked at again on its own event.
    async fn write_pod(&self, pod: Value) -> Result<(), ClientError> {
        match self.rt.client.update(kinds::POD, pod).await {
            Ok(w) => self.rt.informer(kinds::POD).observe(w),
            Err(ClientError::NotFound(_) | ClientError::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn counts(&self, uid: &str) -> Counts {
        self.tally
            .lock()
            .owners
            .get(uid)
            .copied()
            .unwrap_or_default()
    }

    async fn update_status(
        &self,
        rs: &Value,
        failure: Option<&ClientError>,
    ) -> Result<Requeue, ClientError> {
        let uid = obj::uid(rs);
        let c = self.counts(uid);
        let min_ready = rs["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
        let now = self.rt.clock.now();
        let (available, requeue) = if min_ready <= 0 {
            (c.ready, Requeue::No)
        } else {
            self.tally.lock().available(uid, min_ready, now)
        };
        let mut status = json!({
            "replicas": c.active,
            "fullyLabeledReplicas": c.active,
            "readyReplicas": c.ready,
            "availableReplicas": available,
            "observedGeneration": obj::generation(rs),
        });
        let mut conditions: Vec<Value> = rs["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ts = obj::fmt_time(now);
        match failure {
            // Upstream keeps the first failure's message while the reason
            // holds: a new message each time would rewrite the status on
            // every retry, and the write would requeue it at once.
            Some(_)
                if conditions.iter().any(|c| {
                    c["type"] == "ReplicaFailure"
                        && c["status"] == "True"
                        && c["reason"] == "FailedCreate"
                }) => {}
            Some(e) => {
                obj::set_condition(
                    &mut conditions,
                    json!({"type":"ReplicaFailure","status":"True","reason":"FailedCreate","message":e.to_string()}),
                    &ts,
                    false,
                );
            }
            None => conditions.retain(|c| c["type"] != "ReplicaFailure"),
        }
        if !conditions.is_empty() {
            status["conditions"] = json!(conditions);
        }
        // Upstream omits zero counts (omitempty) except replicas.
        for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
            if status[f] == 0
                && let Some(m) = status.as_object_mut()
            {
                m.remove(f);
            }
        }
        if rs.get("status") != Some(&status) {
            let mut new = rs.clone();
            new["status"] = status;
            let written = self.rt.client.update_status(self.flavor.kind, new).await?;
            self.rt.informer(self.flavor.kind).observe(written);
        }
        Ok(requeue)
    }
}

/// Queues the owner of `pod`, or, for an orphan, every owner in its
/// namespace whose selector matches it (upstream's `getPodReplicaSets`).
fn enqueue_owner(q: &Arc<Queue>, rsi: &Informer, pod: &Value, flavor: Flavor) {
    match obj::controller_ref(pod) {
        Some(_) => {
            if let Some(key) = super::runtime::controller_key(pod, flavor.kind.kind)
                && rsi.get(&key).is_some()
            {
                q.add(key);
            }
        }
        None if !obj::deleting(pod) && obj::pod_active(pod) => {
            for rs in rsi.list_namespace(obj::namespace(pod)) {
                let selector = flavor.selector(&rs);
                if !selector.is_empty() && selector.selects(pod) {
                    q.add(ObjKey::of(&rs));
                }
            }
        }
        None => {}
    }
}

impl Reconciler for ReplicaSetController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

/// A Pod from a controller's template, owned by it, named `<owner>-xxxxx`.
pub fn pod_from_template_of(
    owner_kind: super::client::Kind,
    owner: &Value,
    template: &Value,
    generate_name: &str,
) -> Value {
    let mut meta = json!({
        "generateName": generate_name,
        "namespace": obj::namespace(owner),
        "ownerReferences": [obj::controller_ref_to(owner_kind, owner)],
    });
    for f in ["labels", "annotations"] {
        if let Some(v) = template["metadata"].get(f) {
            meta[f] = v.clone();
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": template["spec"].clone(),
    })
}

/// A Pod's place in the scale-down order: smaller goes first.
type Rank = (
    u8,
    u8,
    u8,
    std::cmp::Reverse<String>,
    std::cmp::Reverse<i64>,
    std::cmp::Reverse<String>,
);

/// Upstream's order for scale-down victims: unassigned before assigned, Pending
/// before Unknown before Running, not Ready before Ready, Ready for less time
/// first, more restarts first, newer first.
fn deletion_rank(p: &Value) -> Rank {
    let assigned = u8::from(
        p["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty()),
    );
    let phase = match obj::pod_phase(p) {
        "Pending" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let ready = u8::from(obj::pod_ready(p));
    let ready_since = obj::condition(p, "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or("")
        .to_owned();
    let restarts: i64 = p["status"]["containerStatuses"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["restartCount"].as_i64()).sum())
        .unwrap_or(0);
    let created = obj::str_at(p, &["metadata", "creationTimestamp"])
        .unwrap_or("")
        .to_owned();
    (
        assigned,
        phase,
        ready,
        std::cmp::Reverse(ready_since),
        std::cmp::Reverse(restarts),
        std::cmp::Reverse(created),
    )
}
