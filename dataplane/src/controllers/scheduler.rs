//! The scheduler: binds each Pod without `spec.nodeName` (and with the default
//! scheduler) to a Node that passes upstream's filters — Ready and schedulable,
//! taints tolerated, `nodeSelector`, required node affinity, resource requests
//! within allocatable (cpu, memory, pods) — preferring the least allocated Node.
//! A Pod that fits nowhere stays Pending with `PodScheduled=False` and a
//! `FailedScheduling` Event, and is tried again whenever a Node changes.
//!
//! Node usage is tracked incrementally from Pod events (and at bind time), so
//! placing one Pod costs O(Nodes), never O(Pods). The filters that read only
//! the Pod's placement constraints and the Node (taints, selectors, affinity,
//! readiness) are kept per set of constraints until a Node changes: the Pods of
//! one template share them, so at scale a Pod costs a resource check per Node.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, EventType, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use super::volume_binding;

const COMPONENT: &str = "default-scheduler";

/// What a Pod asks for: milli-cpu and milli-bytes of memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Milli-cores.
    pub cpu: i128,
    /// Memory in milli-bytes (quantities are parsed to milli-units).
    pub memory: i128,
}

/// The requests of a Pod: the sum over containers, at least the largest init
/// container's (upstream's effective request).
pub fn pod_requests(p: &Value) -> Requests {
    let of = |c: &Value| Requests {
        cpu: obj::quantity_milli(&c["resources"]["requests"]["cpu"]).unwrap_or(0),
        memory: obj::quantity_milli(&c["resources"]["requests"]["memory"]).unwrap_or(0),
    };
    let mut sum = Requests::default();
    for c in p["spec"]["containers"].as_array().into_iter().flatten() {
        let r = of(c);
        sum.cpu += r.cpu;
        sum.memory += r.memory;
    }
    for c in p["spec"]["initContainers"].as_array().into_iter().flatten() {
        let r = of(c);
        sum.cpu = sum.cpu.max(r.cpu);
        sum.memory = sum.memory.max(r.memory);
    }
    sum
}

#[derive(Debug, Clone, Default)]
struct NodeInfo {
    node: Arc<Value>,
    cpu: i128,
    memory: i128,
    pods: i128,
    used: Requests,
    used_pods: i128,
}

/// Per Node (in `State::nodes` order), why the constraints rule it out.
type StaticVerdicts = Arc<Vec<Option<&'static str>>>;

#[derive(Default)]
struct State {
    nodes: BTreeMap<String, NodeInfo>,
    // Bumped whenever `nodes` changes: cached verdicts are for one epoch.
    epoch: u64,
    // Placement constraints (as JSON) → (epoch, verdicts).
    verdicts: HashMap<String, (u64, StaticVerdicts)>,
    // bound pod → (node, requests)
    placed: HashMap<ObjKey, (String, Requests)>,
    unschedulable: HashSet<ObjKey>,
    // claim → Pods waiting for it to exist or bind.
    claim_waiters: HashMap<ObjKey, HashSet<ObjKey>>,
}

impl State {
    fn unplace(&mut self, key: &ObjKey) {
        if let Some((node, r)) = self.placed.remove(key)
            && let Some(n) = self.nodes.get_mut(&node)
        {
            n.used.cpu -= r.cpu;
            n.used.memory -= r.memory;
            n.used_pods -= 1;
        }
    }

    fn place(&mut self, key: ObjKey, node: &str, r: Requests) {
        self.unplace(&key);
        if let Some(n) = self.nodes.get_mut(node) {
            n.used.cpu += r.cpu;
            n.used.memory += r.memory;
            n.used_pods += 1;
        }
        self.placed.insert(key, (node.to_owned(), r));
    }

    fn set_node(&mut self, node: Arc<Value>) {
        let name = obj::name(&node).to_owned();
        let known = self.nodes.get(&name);
        if known.is_some_and(|n| {
            obj::resource_version(&n.node) == obj::resource_version(&node)
                && obj::uid(&n.node) == obj::uid(&node)
        }) {
            // A resync of what is known.
            return;
        }
        self.epoch += 1;
        let recount = known.is_none();
        let alloc = &node["status"]["allocatable"];
        let entry = self.nodes.entry(name.clone()).or_default();
        entry.cpu = obj::quantity_milli(&alloc["cpu"]).unwrap_or(i128::MAX / 4);
        entry.memory = obj::quantity_milli(&alloc["memory"]).unwrap_or(i128::MAX / 4);
        entry.pods = obj::quantity_milli(&alloc["pods"]).map_or(i128::MAX / 4, |p| p / 1000);
        entry.node = node;
        if !recount {
            return;
        }
        // Recount what is already bound there (a Node added after its Pods).
        let (mut used, mut count) = (Requests::default(), 0);
        for (n, r) in self.placed.values() {
            if *n == name {
                used.cpu += r.cpu;
                used.memory += r.memory;
                count += 1;
            }
        }
        if let Some(e) = self.nodes.get_mut(&name) {
            e.used = used;
            e.used_pods = count;
        }
    }
}

fn tolerates(pod: &Value, taint: &Value) -> bool {
    pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| {
            let effect_ok = t["effect"]
                .as_str()
                .is_none_or(|e| e.is_empty() || taint["effect"] == e);
            let key = t["key"].as_str().unwrap_or("");
            let op = t["operator"].as_str().unwrap_or("Equal");
            if key.is_empty() {
                return op == "Exists" && effect_ok;
            }
            if taint["key"] != key || !effect_ok {
                return false;
            }
            op == "Exists"
                || taint["value"].as_str().unwrap_or("") == t["value"].as_str().unwrap_or("")
        })
}

/// Whether `node` matches every node selector requirement in `exprs`
/// (labels, or fields when `field`).
pub(super) fn match_node_expressions(exprs: &Value, node: &Value, field: bool) -> bool {
    exprs.as_array().into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or("");
        let value = if field {
            (key == "metadata.name").then(|| obj::name(node))
        } else {
            node["metadata"]["labels"][key].as_str()
        };
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        match e["operator"].as_str().unwrap_or("") {
            "In" => value.is_some_and(|v| values.contains(&v)),
            "NotIn" => value.is_none_or(|v| !values.contains(&v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            op @ ("Gt" | "Lt") => {
                let (Some(v), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    values.first().and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if op == "Gt" { v > bound } else { v < bound }
            }
            _ => false,
        }
    })
}

impl State {
    fn remove_node(&mut self, name: &str) {
        self.epoch += 1;
        self.nodes.remove(name);
    }

    /// The static verdicts for `pod`'s constraints on every Node, computed
    /// once per epoch.
    fn verdicts(&mut self, pod: &Value) -> StaticVerdicts {
        let spec = &pod["spec"];
        let constraints = json!([
            spec["nodeSelector"],
            spec["affinity"]["nodeAffinity"],
            spec["tolerations"]
        ])
        .to_string();
        if self.verdicts.len() > 1024 {
            self.verdicts.clear();
        }
        if let Some((epoch, v)) = self.verdicts.get(&constraints)
            && *epoch == self.epoch
        {
            return v.clone();
        }
        let v: StaticVerdicts = Arc::new(
            self.nodes
                .values()
                .map(|n| static_filter(pod, &n.node).err())
                .collect(),
        );
        self.verdicts.insert(constraints, (self.epoch, v.clone()));
        v
    }
}

/// Why a Node was rejected by what does not change as Pods are placed, in
/// upstream's words (for the FailedScheduling message).
fn static_filter(pod: &Value, node: &Value) -> Result<(), &'static str> {
    if node["spec"]["unschedulable"] == true {
        let tolerated = tolerates(
            pod,
            &json!({"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}),
        );
        if !tolerated {
            return Err("node(s) were unschedulable");
        }
    }
    let ready = obj::condition(node, "Ready").is_none_or(|c| c["status"] == "True");
    if !ready
        && !tolerates(
            pod,
            &json!({"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}),
        )
    {
        return Err("node(s) had untolerated taint {node.kubernetes.io/not-ready: }");
    }
    if let Some(sel) = pod["spec"]["nodeSelector"].as_object() {
        let labels = &node["metadata"]["labels"];
        if !sel.iter().all(|(k, v)| labels[k] == *v) {
            return Err("node(s) didn't match Pod's node affinity/selector");
        }
    }
    let required = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    if let Some(terms) = required.as_array()
        && !terms.is_empty()
        && !terms.iter().any(|t| {
            match_node_expressions(&t["matchExpressions"], node, false)
                && match_node_expressions(&t["matchFields"], node, true)
        })
    {
        return Err("node(s) didn't match Pod's node affinity/selector");
    }
    for t in node["spec"]["taints"].as_array().into_iter().flatten() {
        let effect = t["effect"].as_str().unwrap_or("");
        if (effect == "NoSchedule" || effect == "NoExecute") && !tolerates(pod, t) {
            return Err("node(s) had untolerated taint");
        }
    }
    Ok(())
}

/// Whether `req` fits in what the Node has left.
fn fit(req: Requests, n: &NodeInfo) -> Result<(), &'static str> {
    if n.used_pods + 1 > n.pods {
        return Err("Too many pods");
    }
    if req.cpu > 0 && n.used.cpu + req.cpu > n.cpu {
        return Err("Insufficient cpu");
    }
    if req.memory > 0 && n.used.memory + req.memory > n.memory {
        return Err("Insufficient memory");
    }
    Ok(())
}

/// Upstream's LeastAllocated score (0–100), with its non-zero defaults for
/// Pods that request nothing (100m cpu, 200Mi memory).
fn score(req: Requests, n: &NodeInfo) -> i128 {
    let cpu_req = if req.cpu == 0 { 100 } else { req.cpu };
    let mem_req = if req.memory == 0 {
        200 * 1024 * 1024 * 1000
    } else {
        req.memory
    };
    let part = |cap: i128, used: i128, r: i128| {
        if cap <= 0 || cap >= i128::MAX / 8 {
            return 100;
        }
        ((cap - used - r).max(0) * 100) / cap
    };
    (part(n.cpu, n.used.cpu, cpu_req) + part(n.memory, n.used.memory, mem_req)) / 2
}

fn is_ours(p: &Value) -> bool {
    p["spec"]["nodeName"].as_str().is_none_or(str::is_empty)
        // A gated Pod waits until its last scheduling gate is removed.
        && p["spec"]["schedulingGates"]
            .as_array()
            .is_none_or(Vec::is_empty)
        && p["spec"]["schedulerName"]
            .as_str()
            .is_none_or(|s| s == COMPONENT)
        && obj::pod_active(p)
}

/// The scheduler.
pub struct Scheduler {
    rt: Arc<Runtime>,
    recorder: Recorder,
    state: Arc<Mutex<State>>,
}

impl Scheduler {
    /// Wires the scheduler to the Pod and Node informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("scheduler");
        let state: Arc<Mutex<State>> = Arc::default();
        let (q, s) = (queue.clone(), state.clone());
        rt.informer(kinds::POD).on_change(move |c| {
            let key = ObjKey::of(&c.new);
            let p = &c.new;
            let node = p["spec"]["nodeName"].as_str().unwrap_or("");
            let mut st = s.lock();
            if c.kind == EventType::Deleted || node.is_empty() || obj::pod_terminal(p) {
                st.unplace(&key);
            } else {
                st.place(key.clone(), node, pod_requests(p));
            }
            if c.kind == EventType::Deleted || !is_ours(p) {
                st.unschedulable.remove(&key);
            } else {
                drop(st);
                q.add(key);
            }
        });
        let (q, s) = (queue.clone(), state.clone());
        rt.informer(kinds::NODE).on_change(move |c| {
            let mut st = s.lock();
            if c.kind == EventType::Deleted {
                st.remove_node(obj::name(&c.new));
            } else {
                st.set_node(c.new.clone());
            }
            // A Node changed: every Pod that fit nowhere gets another try.
            for k in st.unschedulable.drain() {
                q.add(k);
            }
        });
        let (q, s) = (queue.clone(), state.clone());
        rt.informer(kinds::PVC).on_change(move |c| {
            if let Some(pods) = s.lock().claim_waiters.remove(&ObjKey::of(&c.new)) {
                for k in pods {
                    q.add(k);
                }
            }
        });
        Registration {
            name: "scheduler",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                state,
            }),
        }
    }

    async fn schedule(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(pod) = self.rt.informer(kinds::POD).get(key) else {
            return Ok(Requeue::No);
        };
        if !is_ours(&pod) {
            return Ok(Requeue::No);
        }
        let req = pod_requests(&pod);
        let volumes = volume_binding::check(&self.rt, &pod);
        if !volumes.waits_on.is_empty() {
            let mut st = self.state.lock();
            for claim in &volumes.waits_on {
                st.claim_waiters
                    .entry(claim.clone())
                    .or_default()
                    .insert(key.clone());
            }
        }
        if volumes.wait {
            return Ok(Requeue::No);
        }
        let choice = {
            let mut st = self.state.lock();
            let verdicts = st.verdicts(&pod);
            let mut best: Option<(&String, i128, i128)> = None;
            let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
            for ((name, n), verdict) in st.nodes.iter().zip(verdicts.iter()) {
                let placed = match verdict {
                    Some(why) => Err(*why),
                    None => fit(req, n),
                };
                let placed = placed.and_then(|()| {
                    if volumes.node_fits(&n.node) {
                        Ok(())
                    } else {
                        Err("node(s) had volume node affinity conflict")
                    }
                });
                match placed {
                    Ok(()) => {
                        let s = score(req, n);
                        if best.is_none_or(|(_, bs, bp)| s > bs || (s == bs && n.used_pods < bp)) {
                            best = Some((name, s, n.used_pods));
                        }
                    }
                    Err(r) => *reasons.entry(r).or_default() += 1,
                }
            }
            match (&volumes.unschedulable, best) {
                (Some(why), _) => Err((st.nodes.len(), BTreeMap::new(), Some(why.clone()))),
                (None, Some((n, _, _))) => Ok(n.clone()),
                (None, None) => Err((st.nodes.len(), reasons, None)),
            }
        };
        match choice {
            Ok(node) if !volumes.to_provision.is_empty() => {
                // Delayed binding: the claims learn the node, the provisioner
                // makes their volumes there, then the Pod is bound.
                volume_binding::select_node(&self.rt, &volumes.to_provision, &node).await?;
            }
            Ok(node) => {
                let mut bound = (*pod).clone();
                bound["spec"]["nodeName"] = json!(node);
                let written = self.rt.client.update(kinds::POD, bound).await?;
                self.state.lock().place(key.clone(), &node, req);
                self.state.lock().unschedulable.remove(key);
                self.rt.informer(kinds::POD).observe(written.clone());
                let msg = format!(
                    "Successfully assigned {}/{} to {node}",
                    key.namespace, key.name
                );
                self.recorder
                    .record(
                        COMPONENT,
                        None,
                        &written,
                        EventKind::Normal,
                        "Scheduled",
                        msg,
                    )
                    .await;
            }
            Err((total, reasons, why)) => {
                let detail: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
                let msg = if let Some(why) = why {
                    format!(
                        "0/{total} nodes are available: {why}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
                    )
                } else if total == 0 {
                    "no nodes available to schedule pods".to_owned()
                } else {
                    format!(
                        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
                        detail.join(", ")
                    )
                };
                self.state.lock().unschedulable.insert(key.clone());
                let current = obj::condition(&pod, "PodScheduled");
                if current.is_none_or(|c| c["message"] != msg.as_str()) {
                    let mut p = (*pod).clone();
                    let mut conds: Vec<Value> = p["status"]["conditions"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    let now = obj::fmt_time(self.rt.clock.now());
                    obj::set_condition(
                        &mut conds,
                        json!({"type":"PodScheduled","status":"False","reason":"Unschedulable","message":msg,"lastProbeTime":null}),
                        &now,
                        false,
                    );
                    p["status"]["conditions"] = json!(conds);
                    p["status"]["phase"] = json!("Pending");
                    let written = self.rt.client.update_status(kinds::POD, p).await?;
                    self.rt.informer(kinds::POD).observe(written.clone());
                    self.recorder
                        .record(
                            COMPONENT,
                            None,
                            &written,
                            EventKind::Warning,
                            "FailedScheduling",
                            msg,
                        )
                        .await;
                }
            }
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for Scheduler {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.schedule(key))
    }
}

/// Whether a Pod's node selector and affinity admit `node` (DaemonSets reuse it).
pub fn node_admits(pod: &Value, node: &Value) -> bool {
    static_filter(pod, node).is_ok()
}
