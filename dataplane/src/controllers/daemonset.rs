//! The DaemonSet controller: one Pod per eligible Node (node selector, node
//! affinity, taints against the template's tolerations plus the ones upstream
//! adds to daemon Pods), pinned with a `metadata.name` node-affinity term and
//! placed by the scheduler, as upstream does. Nodes joining or leaving a pool
//! gain or lose their Pod; a template change replaces Pods one Node at a time
//! (`RollingUpdate`, `maxUnavailable` 1) or waits for deletions (`OnDelete`).
//! Status: `desiredNumberScheduled`, `currentNumberScheduled`,
//! `numberMisscheduled`, `numberReady`, `numberAvailable`,
//! `numberUnavailable`, `updatedNumberScheduled`, `observedGeneration`.
//! Each template is recorded as a ControllerRevision ([`History`]).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, kinds};
use super::deployment::template_hash;
use super::events::{EventKind, Recorder};
use super::history::History;
use super::obj;
use super::replicaset::pod_from_template_of;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use super::scheduler::node_admits;
use super::statefulset::REVISION_LABEL;

const COMPONENT: &str = "daemonset-controller";

/// The tolerations upstream adds to every daemon Pod.
fn daemon_tolerations() -> Vec<Value> {
    let mut t: Vec<Value> = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    .iter()
    .map(|k| json!({"key": k, "operator": "Exists", "effect": "NoExecute"}))
    .collect();
    for k in [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        t.push(json!({"key": k, "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

/// The Node a daemon Pod is for: its binding, else its pinning affinity term.
fn target_node(p: &Value) -> Option<String> {
    if let Some(n) = p["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Some(n.to_owned());
    }
    p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        .as_str()
        .map(String::from)
}

/// The DaemonSet controller.
pub struct DaemonSetController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    history: History,
}

impl DaemonSetController {
    /// Wires the controller to the DaemonSet, Pod and Node informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("daemonset");
        let q = queue.clone();
        rt.informer(kinds::DAEMON_SET)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        rt.enqueue_controllers_of(kinds::POD, "DaemonSet", &queue);
        let (q, dsi) = (queue.clone(), rt.informer(kinds::DAEMON_SET).clone());
        rt.informer(kinds::NODE).on_change(move |c| {
            // Node pools change rarely next to Pods: every DaemonSet looks again.
            let relevant = c.old.as_ref().is_none_or(|o| {
                o["metadata"]["labels"] != c.new["metadata"]["labels"]
                    || o["spec"] != c.new["spec"]
                    || c.kind == super::client::EventType::Deleted
            });
            if relevant {
                for ds in dsi.list() {
                    q.add(ObjKey::of(&ds));
                }
            }
        });
        Registration {
            name: "daemonset",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                history: History::default(),
            }),
        }
    }

    async fn event(&self, ds: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, None, ds, kind, reason, msg)
            .await;
    }

    fn pod_for(&self, ds: &Value, node: &str, revision: &str) -> Value {
        let mut pod = pod_from_template_of(
            kinds::DAEMON_SET,
            ds,
            &ds["spec"]["template"],
            &format!("{}-", obj::name(ds)),
        );
        let labels = &mut pod["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        labels[REVISION_LABEL] = json!(revision);
        labels["pod-template-generation"] = json!(obj::generation(ds).to_string());
        let mut tolerations = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for t in daemon_tolerations() {
            if !tolerations
                .iter()
                .any(|x| x["key"] == t["key"] && x["effect"] == t["effect"])
            {
                tolerations.push(t);
            }
        }
        pod["spec"]["tolerations"] = json!(tolerations);
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        });
        pod
    }

    async fn delete_pod(&self, ds: &Value, p: &Value) -> Result<(), ClientError> {
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
        self.event(
            ds,
            EventKind::Normal,
            "SuccessfulDelete",
            format!("Deleted pod: {}", obj::name(p)),
        )
        .await;
        Ok(())
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(ds) = self.rt.informer(kinds::DAEMON_SET).get(key) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&ds) {
            self.history.forget(obj::uid(&ds));
            return Ok(Requeue::No);
        }
        let revision = template_hash(
            &ds["spec"]["template"],
            ds["status"]["collisionCount"].as_i64().filter(|c| *c > 0),
        );
        self.history
            .record(
                &*self.rt.client,
                kinds::DAEMON_SET,
                &ds,
                &revision,
                REVISION_LABEL,
            )
            .await?;
        let nodes = self.rt.informer(kinds::NODE).list();
        let mut by_node: HashMap<String, Vec<Arc<Value>>> = HashMap::new();
        let mut orphans = Vec::new();
        for p in self.rt.informer(kinds::POD).controlled_by(obj::uid(&ds)) {
            match target_node(&p) {
                Some(n) => by_node.entry(n).or_default().push(p),
                None => orphans.push(p),
            }
        }
        let (mut desired, mut scheduled, mut misscheduled, mut ready, mut available, mut updated) =
            (0, 0, 0, 0, 0, 0);
        let min_ready = ds["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
        let now = self.rt.clock.now();
        let mut requeue = Requeue::No;
        let on_delete = ds["spec"]["updateStrategy"]["type"] == "OnDelete";
        let mut replaced_one = false;
        // Outdated Pods that are not available are replaced at once: they
        // count against no budget (upstream's rolling update does so too).
        let mut outdated_unavailable: Vec<Arc<Value>> = Vec::new();
        // An update may take one Node's Pod down when every other is available.
        for node in &nodes {
            let name = obj::name(node).to_owned();
            let probe = self.pod_for(&ds, &name, &revision);
            let eligible = node_admits(&probe, node);
            let pods: Vec<Arc<Value>> = by_node.remove(&name).unwrap_or_default();
            let live: Vec<&Arc<Value>> = pods.iter().filter(|p| !obj::deleting(p)).collect();
            if eligible {
                desired += 1;
                if live.is_empty() {
                    let created = match self.rt.client.create(kinds::POD, probe).await {
                        Ok(created) => created,
                        Err(e) => {
                            let msg = format!("Error creating: {e}");
                            self.event(&ds, EventKind::Warning, "FailedCreate", msg)
                                .await;
                            return Err(e);
                        }
                    };
                    let msg = format!("Created pod: {}", obj::name(&created));
                    self.rt.informer(kinds::POD).observe(created);
                    self.event(&ds, EventKind::Normal, "SuccessfulCreate", msg)
                        .await;
                    continue;
                }
                scheduled += 1;
                for extra in live.iter().skip(1) {
                    self.delete_pod(&ds, extra).await?;
                }
                let p = live[0];
                if obj::pod_terminal(p) {
                    self.delete_pod(&ds, p).await?;
                    continue;
                }
                if obj::pod_ready(p) {
                    ready += 1;
                }
                let is_available = match obj::pod_available(p, min_ready, now) {
                    (true, _) => true,
                    (false, Some(w)) => {
                        requeue = requeue.min(Requeue::After(w));
                        false
                    }
                    _ => false,
                };
                if is_available {
                    available += 1;
                }
                if obj::labels(p)[REVISION_LABEL] == revision.as_str() {
                    updated += 1;
                } else if !is_available && !on_delete {
                    outdated_unavailable.push(Arc::clone(p));
                }
            } else {
                for p in &live {
                    if p["spec"]["nodeName"]
                        .as_str()
                        .is_some_and(|n| !n.is_empty())
                    {
                        misscheduled += 1;
                    }
                    self.delete_pod(&ds, p).await?;
                }
            }
        }
        // Pods for Nodes that no longer exist.
        for p in by_node.into_values().flatten().chain(orphans) {
            if !obj::deleting(&p) {
                self.delete_pod(&ds, &p).await?;
            }
        }
        for p in &outdated_unavailable {
            self.delete_pod(&ds, p).await?;
        }
        if !on_delete && available == desired && updated < desired {
            for p in self.rt.informer(kinds::POD).controlled_by(obj::uid(&ds)) {
                if !obj::deleting(&p)
                    && obj::labels(&p)[REVISION_LABEL] != revision.as_str()
                    && !replaced_one
                {
                    self.delete_pod(&ds, &p).await?;
                    replaced_one = true;
                }
            }
        }
        let mut status = json!({
            "currentNumberScheduled": scheduled,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
            "updatedNumberScheduled": updated,
            "observedGeneration": obj::generation(&ds),
        });
        if let Some(m) = status.as_object_mut() {
            m.retain(|k, v| {
                !(v.as_i64() == Some(0)
                    && matches!(
                        k.as_str(),
                        "numberAvailable" | "numberUnavailable" | "updatedNumberScheduled"
                    ))
            });
        }
        if ds.get("status") != Some(&status) {
            let mut new = (*ds).clone();
            new["status"] = status;
            let written = self.rt.client.update_status(kinds::DAEMON_SET, new).await?;
            self.rt.informer(kinds::DAEMON_SET).observe(written);
        }
        Ok(requeue)
    }
}

impl Reconciler for DaemonSetController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
