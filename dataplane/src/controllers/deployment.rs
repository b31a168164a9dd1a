//! The Deployment controller, following upstream's algorithm: one ReplicaSet per
//! pod template (`pod-template-hash`), rolling updates bounded by `maxSurge` and
//! `maxUnavailable`, `Recreate`, proportional scaling, `paused`,
//! `revisionHistoryLimit`, `progressDeadlineSeconds`, the
//! `deployment.kubernetes.io/*` annotations that `kubectl rollout` reads, and
//! the status and `Available`/`Progressing` conditions as upstream sets them.
//!
//! The hash: upstream hashes a Go dump of the template with FNV-32a and encodes
//! the decimal number in the safe alphabet. kemu hashes the template's canonical
//! JSON (sorted keys) the same way, so the value has upstream's shape and
//! stability but is not the digit-for-digit value a real cluster would pick.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, NAME_ALPHABET, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector::LabelSelector;

const COMPONENT: &str = "deployment-controller";
/// The revision annotation on Deployments and their ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label distinguishing a Deployment's ReplicaSets.
pub const HASH_LABEL: &str = "pod-template-hash";
const SKIP_COPY: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// FNV-32a.
fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The `pod-template-hash` of `template` (with the Deployment's collisionCount).
pub fn template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut s = String::new();
    canonical(template, &mut s);
    let mut bytes = s.into_bytes();
    if let Some(c) = collision_count {
        let mut extra = [0u8; 8];
        extra[..4].copy_from_slice(&(c as u32).to_le_bytes());
        bytes.extend_from_slice(&extra);
    }
    fnv32a(&bytes)
        .to_string()
        .bytes()
        .map(|b| NAME_ALPHABET[b as usize % NAME_ALPHABET.len()] as char)
        .collect()
}

/// An `IntOrString` resolved against `total` (percentages rounded up or down).
fn resolve(v: &Value, total: i64, round_up: bool, default: i64) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(default),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => {
                let x = p * total;
                if round_up { (x + 99) / 100 } else { x / 100 }
            }
            None => s.parse().unwrap_or(default),
        },
        _ => default,
    }
}

fn replicas(v: &Value) -> i64 {
    v["spec"]["replicas"].as_i64().unwrap_or(1)
}

fn status_i(v: &Value, f: &str) -> i64 {
    v["status"][f].as_i64().unwrap_or(0)
}

fn is_rolling(d: &Value) -> bool {
    d["spec"]["strategy"]["type"]
        .as_str()
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// (maxSurge, maxUnavailable) as upstream's ResolveFenceposts.
fn fenceposts(d: &Value) -> (i64, i64) {
    let ru = &d["spec"]["strategy"]["rollingUpdate"];
    let want = replicas(d);
    let surge = resolve(ru.get("maxSurge").unwrap_or(&json!("25%")), want, true, 0);
    let mut unavailable = resolve(
        ru.get("maxUnavailable").unwrap_or(&json!("25%")),
        want,
        false,
        0,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

fn max_unavailable(d: &Value) -> i64 {
    if !is_rolling(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

fn max_surge(d: &Value) -> i64 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

fn revision(rs: &Value) -> i64 {
    obj::annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn progress_deadline(d: &Value) -> Option<i64> {
    match d["spec"]["progressDeadlineSeconds"].as_i64() {
        Some(s) if s == i64::from(i32::MAX) => None,
        Some(s) => Some(s),
        // The apiserver defaults it to 600.
        None => Some(600),
    }
}

fn template_without_hash(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(l) = t["metadata"]["labels"].as_object_mut() {
        l.remove(HASH_LABEL);
        if l.is_empty() {
            t["metadata"].as_object_mut().map(|m| m.remove("labels"));
        }
    }
    if t["metadata"].as_object().is_some_and(|m| m.is_empty()) {
        t.as_object_mut().map(|m| m.remove("metadata"));
    }
    t
}

fn condition_of<'a>(status: &'a Value, t: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

fn cond(t: &str, status: &str, reason: &str, message: String) -> Value {
    json!({"type": t, "status": status, "reason": reason, "message": message})
}

/// Sets a condition in a status object as upstream's SetDeploymentCondition.
fn set_cond(status: &mut Value, c: Value, now: &str) {
    let mut list: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    if let Some(i) = list.iter().position(|x| x["type"] == c["type"]) {
        let old = &list[i];
        if old["status"] == c["status"] && old["reason"] == c["reason"] {
            return;
        }
    }
    obj::set_condition(&mut list, c, now, true);
    status["conditions"] = json!(list);
}

fn remove_cond(status: &mut Value, t: &str) {
    if let Some(a) = status["conditions"].as_array_mut() {
        a.retain(|c| c["type"] != t);
    }
}

/// The Deployment controller.
pub struct DeploymentController {
    rt: Arc<Runtime>,
    recorder: Recorder,
}

impl DeploymentController {
    /// Wires the controller to the runtime's informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("deployment");
        let q = queue.clone();
        rt.informer(kinds::DEPLOYMENT)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let q = queue.clone();
        rt.informer(kinds::REPLICA_SET).on_change(move |c| {
            for rs in [Some(&c.new), c.old.as_ref()].into_iter().flatten() {
                if let Some(r) = obj::controller_ref(rs).filter(|r| r["kind"] == "Deployment")
                    && let Some(n) = r["name"].as_str()
                {
                    q.add(ObjKey::new(obj::namespace(rs), n));
                }
            }
        });
        let q = queue.clone();
        // Recreate waits for old Pods to be gone: a Pod deletion wakes the Deployment.
        let rsi = rt.informer(kinds::REPLICA_SET).clone();
        rt.informer(kinds::POD).on_change(move |c| {
            if c.kind != super::client::EventType::Deleted {
                return;
            }
            if let Some(r) = obj::controller_ref(&c.new).filter(|r| r["kind"] == "ReplicaSet")
                && let Some(rs) = r["name"]
                    .as_str()
                    .and_then(|n| rsi.get_by(obj::namespace(&c.new), n))
                && let Some(d) = obj::controller_ref(&rs).and_then(|r| r["name"].as_str())
            {
                q.add(ObjKey::new(obj::namespace(&rs), d));
            }
        });
        Registration {
            name: "deployment",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
            }),
        }
    }

    fn now(&self) -> String {
        obj::fmt_time(self.rt.clock.now())
    }

    async fn event(&self, d: &Value, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, None, d, EventKind::Normal, reason, msg)
            .await;
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(d) = self.rt.informer(kinds::DEPLOYMENT).get(key) else {
            return Ok(Requeue::No);
        };
        let mut d = (*d).clone();
        let selector =
            LabelSelector::from_label_selector(&d["spec"]["selector"]).unwrap_or_default();
        if selector.is_empty() {
            if d["status"]["observedGeneration"] != json!(obj::generation(&d)) {
                self.recorder
                    .record(
                        COMPONENT,
                        None,
                        &d,
                        EventKind::Warning,
                        "SelectingAll",
                        "This deployment is selecting all pods. A non-empty selector is required."
                            .into(),
                    )
                    .await;
                d["status"]["observedGeneration"] = json!(obj::generation(&d));
                self.write_status(d).await?;
            }
            return Ok(Requeue::No);
        }
        let mut rss: Vec<Value> = self
            .rt
            .informer(kinds::REPLICA_SET)
            .controlled_by(obj::uid(&d))
            .into_iter()
            .map(|r| (*r).clone())
            .collect();
        if !obj::deleting(&d) {
            rss.extend(self.adopt(&d, &selector).await?);
        }
        rss.sort_by(|a, b| {
            obj::str_at(a, &["metadata", "creationTimestamp"])
                .cmp(&obj::str_at(b, &["metadata", "creationTimestamp"]))
                .then_with(|| obj::name(a).cmp(obj::name(b)))
        });
        if obj::deleting(&d) {
            let (new_rs, _) = self.new_and_old(&mut d, &mut rss, false).await?;
            return self.sync_status(&mut d, &rss, new_rs.as_ref()).await;
        }
        self.check_paused(&mut d).await?;
        if d["spec"]["paused"] == true {
            return self.scale_sync(&mut d, &mut rss).await;
        }
        if self.is_scaling_event(&d, &rss) {
            return self.scale_sync(&mut d, &mut rss).await;
        }
        if is_rolling(&d) {
            self.rollout_rolling(&mut d, &mut rss).await
        } else {
            self.rollout_recreate(&mut d, &mut rss).await
        }
    }

    /// Upstream's ClaimReplicaSets: ReplicaSets in the namespace with no
    /// controller whose labels the selector matches become this Deployment's.
    async fn adopt(&self, d: &Value, selector: &LabelSelector) -> Result<Vec<Value>, ClientError> {
        let mut adopted = Vec::new();
        for rs in self
            .rt
            .informer(kinds::REPLICA_SET)
            .list_namespace(obj::namespace(d))
        {
            if obj::controller_ref(&rs).is_some() || obj::deleting(&rs) || !selector.selects(&rs) {
                continue;
            }
            let mut new = (*rs).clone();
            let mut refs = obj::owner_refs(&new).to_vec();
            refs.push(obj::controller_ref_to(kinds::DEPLOYMENT, d));
            new["metadata"]["ownerReferences"] = json!(refs);
            match self.write_rs(new).await {
                Ok(w) => adopted.push(w),
                Err(ClientError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(adopted)
    }

    async fn write_status(&self, d: Value) -> Result<Value, ClientError> {
        let written = self.rt.client.update_status(kinds::DEPLOYMENT, d).await?;
        self.rt.informer(kinds::DEPLOYMENT).observe(written.clone());
        Ok(Arc::unwrap_or_clone(written))
    }

    async fn write_deployment(&self, d: Value) -> Result<Value, ClientError> {
        let written = self.rt.client.update(kinds::DEPLOYMENT, d).await?;
        self.rt.informer(kinds::DEPLOYMENT).observe(written.clone());
        Ok(Arc::unwrap_or_clone(written))
    }

    async fn write_rs(&self, rs: Value) -> Result<Value, ClientError> {
        let written = self.rt.client.update(kinds::REPLICA_SET, rs).await?;
        self.rt
            .informer(kinds::REPLICA_SET)
            .observe(written.clone());
        Ok(Arc::unwrap_or_clone(written))
    }

    async fn check_paused(&self, d: &mut Value) -> Result<(), ClientError> {
        if progress_deadline(d).is_none() {
            return Ok(());
        }
        let current = condition_of(&d["status"], "Progressing").cloned();
        if current
            .as_ref()
            .is_some_and(|c| c["reason"] == "ProgressDeadlineExceeded")
        {
            return Ok(());
        }
        let paused_cond = current
            .as_ref()
            .is_some_and(|c| c["reason"] == "DeploymentPaused");
        let paused = d["spec"]["paused"] == true;
        let now = self.now();
        let c = if paused && !paused_cond {
            cond(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
            )
        } else if !paused && paused_cond {
            cond(
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed".into(),
            )
        } else {
            return Ok(());
        };
        set_cond(&mut d["status"], c, &now);
        *d = self.write_status(d.clone()).await?;
        Ok(())
    }

    fn is_scaling_event(&self, d: &Value, rss: &[Value]) -> bool {
        let want = replicas(d).to_string();
        rss.iter()
            .filter(|rs| replicas(rs) > 0)
            .any(|rs| obj::annotation(rs, DESIRED).is_some_and(|a| a != want))
    }

    /// Upstream's getAllReplicaSetsAndSyncRevision: finds the new ReplicaSet
    /// (creating it when asked), syncs revisions, answers (new, old).
    async fn new_and_old(
        &self,
        d: &mut Value,
        rss: &mut Vec<Value>,
        create: bool,
    ) -> Result<(Option<Value>, Vec<Value>), ClientError> {
        let template = template_without_hash(&d["spec"]["template"]);
        let new_idx = rss
            .iter()
            .position(|rs| template_without_hash(&rs["spec"]["template"]) == template);
        let max_old = rss
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != new_idx)
            .map(|(_, rs)| revision(rs))
            .max()
            .unwrap_or(0);
        let new_revision = max_old + 1;
        let now = self.now();
        if let Some(i) = new_idx {
            let mut rs = rss[i].clone();
            let changed = self.set_new_rs_annotations(d, &mut rs, new_revision, true);
            if changed {
                rs = self.write_rs(rs).await?;
                rss[i] = rs.clone();
            }
            let rev = revision(&rs).to_string();
            let mut d_changed = false;
            if obj::annotation(d, REVISION) != Some(rev.as_str()) {
                obj::set_annotation(d, REVISION, &rev);
                d_changed = true;
            }
            if d_changed {
                *d = self.write_deployment(d.clone()).await?;
            }
            if condition_of(&d["status"], "Progressing").is_none() && progress_deadline(d).is_some()
            {
                let msg = format!("Found new replica set \"{}\"", obj::name(&rs));
                set_cond(
                    &mut d["status"],
                    cond("Progressing", "True", "FoundNewReplicaSet", msg),
                    &now,
                );
                *d = self.write_status(d.clone()).await?;
            }
            let old = rss
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| r.clone())
                .collect();
            return Ok((Some(rs), old));
        }
        if !create {
            return Ok((None, rss.clone()));
        }
        let collision = d["status"]["collisionCount"].as_i64();
        let hash = template_hash(&template, collision);
        let mut t = d["spec"]["template"].clone();
        t["metadata"]["labels"][HASH_LABEL] = json!(hash);
        let mut selector = d["spec"]["selector"].clone();
        selector["matchLabels"][HASH_LABEL] = json!(hash);
        let name = format!("{}-{hash}", obj::name(d));
        let mut labels = t["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        let mut rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": obj::namespace(d),
                "labels": labels,
                "ownerReferences": [obj::controller_ref_to(kinds::DEPLOYMENT, d)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": d["spec"]["minReadySeconds"].as_i64().unwrap_or(0),
                "selector": selector,
                "template": t,
            },
        });
        let all_old: Vec<Value> = rss.clone();
        let new_replicas = self.new_rs_new_replicas(d, &all_old, &rs);
        rs["spec"]["replicas"] = json!(new_replicas);
        self.set_new_rs_annotations(d, &mut rs, new_revision, false);
        let created = match self.rt.client.create(kinds::REPLICA_SET, rs.clone()).await {
            Ok(c) => Arc::unwrap_or_clone(c),
            Err(ClientError::AlreadyExists(m)) => {
                // A ReplicaSet of that name with another template: a hash
                // collision. Bump collisionCount so the next hash differs.
                let existing = self
                    .rt
                    .informer(kinds::REPLICA_SET)
                    .get_by(obj::namespace(d), &name);
                let same = existing.as_ref().is_some_and(|e| {
                    obj::controller_uid(e) == Some(obj::uid(d))
                        && template_without_hash(&e["spec"]["template"]) == template
                });
                if !same {
                    d["status"]["collisionCount"] = json!(collision.unwrap_or(0) + 1);
                    self.write_status(d.clone()).await?;
                }
                return Err(ClientError::AlreadyExists(m));
            }
            Err(e) => return Err(e),
        };
        self.rt
            .informer(kinds::REPLICA_SET)
            .observe(Arc::new(created.clone()));
        if new_replicas > 0 {
            self.event(
                d,
                "ScalingReplicaSet",
                format!(
                    "Scaled up replica set {} from 0 to {new_replicas}",
                    obj::name(&created)
                ),
            )
            .await;
        }
        let rev = revision(&created).to_string();
        if obj::annotation(d, REVISION) != Some(rev.as_str()) {
            obj::set_annotation(d, REVISION, &rev);
            *d = self.write_deployment(d.clone()).await?;
        }
        if progress_deadline(d).is_some() {
            let msg = format!("Created new replica set \"{}\"", obj::name(&created));
            set_cond(
                &mut d["status"],
                cond("Progressing", "True", "NewReplicaSetCreated", msg),
                &now,
            );
            *d = self.write_status(d.clone()).await?;
        }
        rss.push(created.clone());
        Ok((Some(created), all_old))
    }

    /// Copies the Deployment's annotations and sets the revision on the new
    /// ReplicaSet (and, when it is being created, its desired and max
    /// replicas); answers whether anything changed.
    fn set_new_rs_annotations(
        &self,
        d: &Value,
        rs: &mut Value,
        new_revision: i64,
        exists: bool,
    ) -> bool {
        let mut changed = false;
        if let Some(a) = d["metadata"]["annotations"].as_object() {
            for (k, v) in a {
                if SKIP_COPY.contains(&k.as_str()) {
                    continue;
                }
                if rs["metadata"]["annotations"].get(k) != Some(v) {
                    obj::set_annotation(rs, k, v.as_str().unwrap_or(""));
                    changed = true;
                }
            }
        }
        let old_rev = obj::annotation(rs, REVISION).map(String::from);
        let old_num = revision(rs);
        if old_rev.is_none() || old_num < new_revision {
            if exists && let Some(old) = &old_rev {
                let history = match obj::annotation(rs, REVISION_HISTORY) {
                    Some(h) if !h.is_empty() => format!("{h},{old}"),
                    _ => old.clone(),
                };
                obj::set_annotation(rs, REVISION_HISTORY, &history);
            }
            obj::set_annotation(rs, REVISION, &new_revision.to_string());
            changed = true;
        }
        // Only a ReplicaSet being created gets the replica annotations here:
        // an existing one keeps those of its last scaling, which
        // proportional scaling reads its share from (as upstream).
        let want = replicas(d).to_string();
        let max = (replicas(d) + max_surge(d)).to_string();
        if !exists
            && (obj::annotation(rs, DESIRED) != Some(want.as_str())
                || obj::annotation(rs, MAX_REPLICAS) != Some(max.as_str()))
        {
            obj::set_annotation(rs, DESIRED, &want);
            obj::set_annotation(rs, MAX_REPLICAS, &max);
            changed = true;
        }
        changed
    }

    /// Upstream's NewRSNewReplicas.
    fn new_rs_new_replicas(&self, d: &Value, all: &[Value], new_rs: &Value) -> i64 {
        let want = replicas(d);
        if !is_rolling(d) {
            return want;
        }
        let current: i64 = all.iter().map(replicas).sum::<i64>()
            + if all.iter().any(|r| obj::name(r) == obj::name(new_rs)) {
                0
            } else {
                replicas(new_rs)
            };
        let max_total = want + max_surge(d);
        if current >= max_total {
            return replicas(new_rs);
        }
        let up = (max_total - current).min(want - replicas(new_rs));
        replicas(new_rs) + up.max(0)
    }

    /// Scales a ReplicaSet (and refreshes its desired/max annotations),
    /// recording ScalingReplicaSet; answers whether the size changed.
    async fn scale_rs(&self, d: &Value, rs: &mut Value, to: i64) -> Result<bool, ClientError> {
        let from = replicas(rs);
        let want = replicas(d).to_string();
        let max = (replicas(d) + max_surge(d)).to_string();
        let size = from != to;
        let annotations = obj::annotation(rs, DESIRED) != Some(want.as_str())
            || obj::annotation(rs, MAX_REPLICAS) != Some(max.as_str());
        if !size && !annotations {
            return Ok(false);
        }
        let mut new = rs.clone();
        new["spec"]["replicas"] = json!(to);
        obj::set_annotation(&mut new, DESIRED, &want);
        obj::set_annotation(&mut new, MAX_REPLICAS, &max);
        *rs = self.write_rs(new).await?;
        if size {
            let dir = if to > from { "up" } else { "down" };
            self.event(
                d,
                "ScalingReplicaSet",
                format!(
                    "Scaled {dir} replica set {} from {from} to {to}",
                    obj::name(rs)
                ),
            )
            .await;
        }
        Ok(size)
    }

    async fn rollout_rolling(
        &self,
        d: &mut Value,
        rss: &mut Vec<Value>,
    ) -> Result<Requeue, ClientError> {
        let (new_rs, mut old) = self.new_and_old(d, rss, true).await?;
        let Some(mut new_rs) = new_rs else {
            return Ok(Requeue::No);
        };
        // Scale up the new ReplicaSet.
        let want = replicas(d);
        let target = if replicas(&new_rs) > want {
            want
        } else {
            let all: Vec<Value> = old
                .iter()
                .cloned()
                .chain(std::iter::once(new_rs.clone()))
                .collect();
            self.new_rs_new_replicas(d, &all, &new_rs)
        };
        if replicas(&new_rs) != target {
            let scaled = self.scale_rs(d, &mut new_rs, target).await?;
            replace(rss, &new_rs);
            if scaled {
                return self.sync_rollout_status(d, rss, Some(&new_rs)).await;
            }
        }
        // Scale down old ReplicaSets.
        if self.reconcile_old(d, &mut old, &new_rs).await? {
            for rs in &old {
                replace(rss, rs);
            }
            return self.sync_rollout_status(d, rss, Some(&new_rs)).await;
        }
        if self.complete(d, rss, Some(&new_rs)) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, rss, Some(&new_rs)).await
    }

    /// Upstream's reconcileOldReplicaSets (cleanup of unhealthy, then scale down
    /// within maxUnavailable); answers whether anything was scaled.
    async fn reconcile_old(
        &self,
        d: &Value,
        old: &mut [Value],
        new_rs: &Value,
    ) -> Result<bool, ClientError> {
        let old_count: i64 = old.iter().map(replicas).sum();
        if old_count == 0 {
            return Ok(false);
        }
        let all_count = old_count + replicas(new_rs);
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = replicas(new_rs) - status_i(new_rs, "availableReplicas");
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Clean up unhealthy replicas first (oldest ReplicaSets first).
        let mut cleaned = 0;
        for rs in old.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let r = replicas(rs);
            let avail = status_i(rs, "availableReplicas");
            if r == 0 || r == avail {
                continue;
            }
            let n = (max_scaled_down - cleaned).min(r - avail);
            if n <= 0 {
                continue;
            }
            self.scale_rs(d, rs, r - n).await?;
            cleaned += n;
        }
        // Then scale down healthy ones while availability allows.
        let available: i64 = old
            .iter()
            .map(|r| status_i(r, "availableReplicas"))
            .sum::<i64>()
            + status_i(new_rs, "availableReplicas");
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in old.iter_mut() {
                if scaled >= total {
                    break;
                }
                let r = replicas(rs);
                if r == 0 {
                    continue;
                }
                let n = r.min(total - scaled);
                self.scale_rs(d, rs, r - n).await?;
                scaled += n;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    async fn rollout_recreate(
        &self,
        d: &mut Value,
        rss: &mut Vec<Value>,
    ) -> Result<Requeue, ClientError> {
        let (new_rs, mut old) = self.new_and_old(d, rss, false).await?;
        let mut scaled_down = false;
        for rs in old.iter_mut() {
            if replicas(rs) > 0 {
                scaled_down |= self.scale_rs(d, rs, 0).await?;
                replace(rss, rs);
            }
        }
        if scaled_down {
            return self.sync_rollout_status(d, rss, new_rs.as_ref()).await;
        }
        // Wait until no old Pod is left running.
        let pods = self.rt.informer(kinds::POD);
        let running = old.iter().any(|rs| {
            status_i(rs, "replicas") > 0
                || pods
                    .controlled_by(obj::uid(rs))
                    .iter()
                    .any(|p| !obj::pod_terminal(p))
        });
        if running {
            return self.sync_rollout_status(d, rss, new_rs.as_ref()).await;
        }
        let (new_rs, old) = match new_rs {
            Some(n) => (n, old),
            None => {
                let (n, o) = self.new_and_old(d, rss, true).await?;
                match n {
                    Some(n) => (n, o),
                    None => return Ok(Requeue::No),
                }
            }
        };
        let mut new_rs = new_rs;
        self.scale_rs(d, &mut new_rs, replicas(d)).await?;
        replace(rss, &new_rs);
        if self.complete(d, rss, Some(&new_rs)) {
            self.cleanup(d, &old).await?;
        }
        self.sync_rollout_status(d, rss, Some(&new_rs)).await
    }

    /// Upstream's sync for scaling events and paused Deployments: proportional
    /// scaling, history cleanup when paused, then the plain status.
    async fn scale_sync(
        &self,
        d: &mut Value,
        rss: &mut Vec<Value>,
    ) -> Result<Requeue, ClientError> {
        let (new_rs, mut old) = self.new_and_old(d, rss, false).await?;
        self.scale(d, new_rs.clone(), &mut old).await?;
        let new_rs = new_rs.and_then(|n| {
            self.rt
                .informer(kinds::REPLICA_SET)
                .get(&ObjKey::of(&n))
                .map(|v| (*v).clone())
        });
        for rs in &old {
            replace(rss, rs);
        }
        if let Some(n) = &new_rs {
            replace(rss, n);
        }
        if d["spec"]["paused"] == true {
            self.cleanup(d, &old).await?;
        }
        self.sync_status(d, rss, new_rs.as_ref()).await
    }

    async fn scale(
        &self,
        d: &Value,
        new_rs: Option<Value>,
        old: &mut [Value],
    ) -> Result<(), ClientError> {
        let want = replicas(d);
        let mut active: Vec<Value> = old.iter().filter(|r| replicas(r) > 0).cloned().collect();
        if let Some(n) = &new_rs
            && replicas(n) > 0
        {
            active.push(n.clone());
        }
        // One active (or only the newest) ReplicaSet: it takes everything.
        if active.len() <= 1 {
            let mut target = active
                .pop()
                .or(new_rs.clone())
                .or_else(|| old.last().cloned());
            if let Some(rs) = target.as_mut()
                && replicas(rs) != want
            {
                self.scale_rs(d, rs, want).await?;
            }
            return Ok(());
        }
        // Saturated new ReplicaSet: old ones go to zero.
        if let Some(n) = &new_rs
            && replicas(n) == want
            && status_i(n, "availableReplicas") == want
        {
            for rs in old.iter_mut() {
                if replicas(rs) > 0 {
                    self.scale_rs(d, rs, 0).await?;
                }
            }
            return Ok(());
        }
        if !is_rolling(d) {
            return Ok(());
        }
        // Proportional scaling across active ReplicaSets.
        let allowed = want + max_surge(d);
        let total: i64 = active.iter().map(replicas).sum();
        let to_add = allowed - total;
        if to_add == 0 {
            return Ok(());
        }
        // Largest first (newer first on ties), as upstream orders them.
        active.sort_by(|a, b| {
            replicas(b).cmp(&replicas(a)).then_with(|| {
                obj::str_at(b, &["metadata", "creationTimestamp"])
                    .cmp(&obj::str_at(a, &["metadata", "creationTimestamp"]))
            })
        });
        let mut added = 0;
        let mut targets: Vec<i64> = Vec::with_capacity(active.len());
        for rs in &active {
            let prev_max: i64 = obj::annotation(d, MAX_REPLICAS)
                .or_else(|| obj::annotation(rs, MAX_REPLICAS))
                .and_then(|a| a.parse().ok())
                .unwrap_or(total.max(1));
            let rs_prev: i64 = obj::annotation(rs, MAX_REPLICAS)
                .and_then(|a| a.parse().ok())
                .unwrap_or(total.max(1));
            let base = rs_prev.max(prev_max).max(1);
            let mut share =
                (replicas(rs) as f64 * allowed as f64 / base as f64).round() as i64 - replicas(rs);
            if to_add > 0 {
                share = share.min(to_add - added).max(0);
            } else {
                share = share.max(to_add - added).min(0);
            }
            added += share;
            targets.push(replicas(rs) + share);
        }
        // Leftovers go to the largest ReplicaSet.
        if let Some(first) = targets.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
        for (rs, t) in active.iter_mut().zip(targets) {
            self.scale_rs(d, rs, t).await?;
            if let Some(o) = old.iter_mut().find(|o| obj::name(o) == obj::name(rs)) {
                *o = rs.clone();
            }
        }
        Ok(())
    }

    /// Deletes old ReplicaSets beyond `revisionHistoryLimit` (oldest revision first).
    async fn cleanup(&self, d: &Value, old: &[Value]) -> Result<(), ClientError> {
        let limit = d["spec"]["revisionHistoryLimit"].as_i64().unwrap_or(10);
        let mut cleanable: Vec<&Value> = old.iter().filter(|r| !obj::deleting(r)).collect();
        let diff = cleanable.len() as i64 - limit;
        if diff <= 0 {
            return Ok(());
        }
        cleanable.sort_by_key(|r| {
            (
                revision(r),
                obj::str_at(r, &["metadata", "creationTimestamp"]).map(String::from),
            )
        });
        let mut deleted = 0;
        for rs in cleanable {
            if deleted >= diff {
                break;
            }
            if status_i(rs, "replicas") != 0
                || replicas(rs) != 0
                || rs["status"]["observedGeneration"].as_i64().unwrap_or(0) < obj::generation(rs)
            {
                continue;
            }
            match self
                .rt
                .client
                .delete(
                    kinds::REPLICA_SET,
                    obj::namespace(rs),
                    obj::name(rs),
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(ClientError::NotFound(_)) => {
                    self.rt.informer(kinds::REPLICA_SET).observe_deleted(rs);
                    deleted += 1;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn calculate_status(&self, d: &Value, rss: &[Value], new_rs: Option<&Value>) -> Value {
        let available: i64 = rss.iter().map(|r| status_i(r, "availableReplicas")).sum();
        let total: i64 = rss.iter().map(replicas).sum();
        let unavailable = (total - available).max(0);
        let mut status = json!({
            "observedGeneration": obj::generation(d),
            "replicas": rss.iter().map(|r| status_i(r, "replicas")).sum::<i64>(),
            "updatedReplicas": new_rs.map(|r| status_i(r, "replicas")).unwrap_or(0),
            "readyReplicas": rss.iter().map(|r| status_i(r, "readyReplicas")).sum::<i64>(),
            "availableReplicas": available,
            "unavailableReplicas": unavailable,
        });
        if let Some(c) = d["status"].get("collisionCount") {
            status["collisionCount"] = c.clone();
        }
        if let Some(c) = d["status"].get("conditions") {
            status["conditions"] = c.clone();
        }
        let now = self.now();
        if available >= replicas(d) - max_unavailable(d) {
            set_cond(
                &mut status,
                cond(
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.".into(),
                ),
                &now,
            );
        } else {
            set_cond(
                &mut status,
                cond(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.".into(),
                ),
                &now,
            );
        }
        status
    }

    fn complete(&self, d: &Value, rss: &[Value], new_rs: Option<&Value>) -> bool {
        let s = self.calculate_status(d, rss, new_rs);
        deployment_complete(d, &s)
    }

    /// Upstream's syncDeploymentStatus (scaling and paused paths).
    async fn sync_status(
        &self,
        d: &mut Value,
        rss: &[Value],
        new_rs: Option<&Value>,
    ) -> Result<Requeue, ClientError> {
        let status = self.calculate_status(d, rss, new_rs);
        self.write_if_changed(d, status).await?;
        Ok(Requeue::No)
    }

    async fn write_if_changed(&self, d: &mut Value, status: Value) -> Result<(), ClientError> {
        let status = omit_zero(status);
        if d.get("status") != Some(&status) {
            d["status"] = status;
            *d = self.write_status(d.clone()).await?;
        }
        Ok(())
    }

    /// Upstream's syncRolloutStatus: Progressing, ReplicaFailure and the
    /// requeue that notices a missed progress deadline.
    async fn sync_rollout_status(
        &self,
        d: &mut Value,
        rss: &[Value],
        new_rs: Option<&Value>,
    ) -> Result<Requeue, ClientError> {
        let mut status = self.calculate_status(d, rss, new_rs);
        let now_t = self.rt.clock.now();
        let now = obj::fmt_time(now_t);
        let deadline = progress_deadline(d);
        if deadline.is_none() {
            remove_cond(&mut status, "Progressing");
        }
        let current = condition_of(&d["status"], "Progressing").cloned();
        let is_complete = status_i_of(&status, "replicas")
            == status_i_of(&status, "updatedReplicas")
            && current
                .as_ref()
                .is_some_and(|c| c["reason"] == "NewReplicaSetAvailable");
        if deadline.is_some() && !is_complete {
            let rs_name = new_rs.map(obj::name).unwrap_or("");
            if deployment_complete(d, &status) {
                let msg = match new_rs {
                    Some(_) => format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
                    None => format!(
                        "Deployment \"{}\" has successfully progressed.",
                        obj::name(d)
                    ),
                };
                set_cond(
                    &mut status,
                    cond("Progressing", "True", "NewReplicaSetAvailable", msg),
                    &now,
                );
            } else if deployment_progressing(d, &status) {
                let msg = match new_rs {
                    Some(_) => format!("ReplicaSet \"{rs_name}\" is progressing."),
                    None => format!("Deployment \"{}\" is progressing.", obj::name(d)),
                };
                let mut c = cond("Progressing", "True", "ReplicaSetUpdated", msg);
                if let Some(cur) = &current {
                    if cur["status"] == "True" {
                        c["lastTransitionTime"] = cur["lastTransitionTime"].clone();
                    }
                    remove_cond(&mut status, "Progressing");
                }
                let mut list: Vec<Value> =
                    status["conditions"].as_array().cloned().unwrap_or_default();
                obj::set_condition(&mut list, c, &now, true);
                status["conditions"] = json!(list);
            } else if timed_out(d, &status, now_t) {
                let msg = match new_rs {
                    Some(_) => format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
                    None => format!("Deployment \"{}\" has timed out progressing.", obj::name(d)),
                };
                set_cond(
                    &mut status,
                    cond("Progressing", "False", "ProgressDeadlineExceeded", msg),
                    &now,
                );
            }
        }
        // ReplicaFailure mirrors the ReplicaSets' own.
        let failure = new_rs.into_iter().chain(rss.iter()).find_map(|rs| {
            condition_of(&rs["status"], "ReplicaFailure").filter(|c| c["status"] == "True")
        });
        match failure {
            Some(f) => set_cond(
                &mut status,
                cond(
                    "ReplicaFailure",
                    "True",
                    f["reason"].as_str().unwrap_or(""),
                    f["message"].as_str().unwrap_or("").into(),
                ),
                &now,
            ),
            None => remove_cond(&mut status, "ReplicaFailure"),
        }
        self.write_if_changed(d, status).await?;
        // Requeue to notice the progress deadline passing.
        if let Some(secs) = deadline
            && !deployment_complete(d, &d["status"])
            && let Some(c) = condition_of(&d["status"], "Progressing")
            && c["reason"] != "ProgressDeadlineExceeded"
            && c["reason"] != "NewReplicaSetAvailable"
            && let Some(from) = c["lastUpdateTime"].as_str().and_then(obj::parse_time)
        {
            let at = obj::after_secs(from, secs);
            let wait = obj::to_std(at - now_t) + Duration::from_secs(1);
            return Ok(Requeue::After(wait));
        }
        Ok(Requeue::No)
    }
}

fn status_i_of(status: &Value, f: &str) -> i64 {
    status[f].as_i64().unwrap_or(0)
}

/// Upstream's DeploymentComplete.
fn deployment_complete(d: &Value, s: &Value) -> bool {
    let want = replicas(d);
    status_i_of(s, "updatedReplicas") == want
        && status_i_of(s, "replicas") == want
        && status_i_of(s, "availableReplicas") == want
        && s["observedGeneration"].as_i64().unwrap_or(0) >= obj::generation(d)
}

/// Upstream's DeploymentProgressing: any count moved the right way.
fn deployment_progressing(d: &Value, s: &Value) -> bool {
    let old = &d["status"];
    status_i_of(s, "updatedReplicas") > status_i_of(old, "updatedReplicas")
        || status_i_of(s, "replicas") < status_i_of(old, "replicas")
        || status_i_of(s, "readyReplicas") > status_i_of(old, "readyReplicas")
        || status_i_of(s, "availableReplicas") > status_i_of(old, "availableReplicas")
}

/// Upstream's DeploymentTimedOut.
fn timed_out(d: &Value, s: &Value, now: chrono::DateTime<chrono::Utc>) -> bool {
    let Some(secs) = progress_deadline(d) else {
        return false;
    };
    let Some(c) = condition_of(s, "Progressing") else {
        return false;
    };
    if c["reason"] == "NewReplicaSetAvailable" {
        return false;
    }
    if c["reason"] == "ProgressDeadlineExceeded" {
        return true;
    }
    let Some(from) = c["lastUpdateTime"].as_str().and_then(obj::parse_time) else {
        return false;
    };
    obj::after_secs(from, secs) < now
}

/// Drops zero counts, as upstream's `omitempty` does (replicas and
/// observedGeneration included).
fn omit_zero(mut status: Value) -> Value {
    if let Some(m) = status.as_object_mut() {
        m.retain(|_, v| v.as_i64() != Some(0));
    }
    status
}

fn replace(rss: &mut [Value], rs: &Value) {
    if let Some(slot) = rss.iter_mut().find(|r| obj::name(r) == obj::name(rs)) {
        *slot = rs.clone();
    }
}

impl Reconciler for DeploymentController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_shape_and_fenceposts() {
        let t = json!({"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}});
        let h = template_hash(&t, None);
        assert!(!h.is_empty() && h.len() <= 10);
        assert!(h.bytes().all(|b| NAME_ALPHABET.contains(&b)));
        assert_eq!(h, template_hash(&t, None));
        assert_ne!(h, template_hash(&t, Some(1)));
        let d = json!({"spec":{"replicas":10}});
        assert_eq!(fenceposts(&d), (3, 2));
        let d = json!({"spec":{"replicas":3,"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":0}}}});
        assert_eq!(fenceposts(&d), (0, 1));
    }
}
