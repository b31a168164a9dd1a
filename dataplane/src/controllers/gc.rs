//! The garbage collector, by ownerReferences, as upstream's: dependents whose
//! owners are all gone are deleted (background propagation); an owner deleted
//! with `Orphan` has its dependents' references removed before its `orphan`
//! finalizer; one deleted with `Foreground` waits (`foregroundDeletion`) until
//! its dependents are gone, each deleted in the foreground too.
//!
//! Owners are looked up in the informers' caches and confirmed absent with a
//! live `get` before anything is deleted, so a cache still filling never costs
//! a dependent its life. Dependents are found through the owner index, so work
//! is O(dependents) per deletion.
//!
//! Scope: dependents of the kinds the runtime watches (Pods, ReplicaSets,
//! Deployments, Jobs, CronJobs, ServiceAccounts, Nodes, Namespaces).

use std::sync::Arc;

use serde_json::Value;

use super::WATCHED;
use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, Kind, Propagation};
use super::obj;
use super::runtime::{Change, Informer, ObjKey, Queue, Reconciler, Registration, Requeue, Runtime};

/// The watched kind an ownerReference names, if any.
fn kind_of(r: &Value) -> Option<Kind> {
    WATCHED
        .iter()
        .find(|k| r["apiVersion"] == k.api_version && r["kind"] == k.kind)
        .copied()
}

/// The collector for the dependents of one kind.
pub struct GarbageCollector {
    rt: Arc<Runtime>,
    kind: Kind,
}

/// Wires one queue per watched kind; answers the registrations.
impl GarbageCollector {
    /// Registers the collector for every watched kind.
    pub fn register(rt: &Arc<Runtime>) -> Vec<Registration> {
        let queues: Vec<(Kind, Arc<Queue>)> = WATCHED
            .iter()
            .map(|k| (*k, rt.queue("garbage-collector")))
            .collect();
        let queues = Arc::new(queues);
        for kind in WATCHED {
            let (qs, rt2) = (queues.clone(), rt.clone());
            rt.informer(kind)
                .on_change(move |c| on_change(&rt2, &qs, kind, c));
        }
        queues
            .iter()
            .map(|(k, q)| Registration {
                name: "garbage-collector",
                queue: q.clone(),
                reconciler: Arc::new(Self {
                    rt: rt.clone(),
                    kind: *k,
                }),
            })
            .collect()
    }

    async fn collect(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let inf = self.rt.informer(self.kind);
        let Some(o) = inf.get(key) else {
            return Ok(Requeue::No);
        };
        let uid = obj::uid(&o).to_owned();
        if obj::deleting(&o) && obj::has_finalizer(&o, "orphan") {
            for (kind, dep) in self.dependents(&uid) {
                let mut d = (*dep).clone();
                if let Some(refs) = d["metadata"]["ownerReferences"].as_array_mut() {
                    refs.retain(|r| r["uid"] != uid.as_str());
                }
                self.write(kind, d).await?;
            }
            let mut done = (*o).clone();
            obj::remove_finalizer(&mut done, "orphan");
            self.write(self.kind, done).await?;
            return Ok(Requeue::No);
        }
        if obj::deleting(&o) && obj::has_finalizer(&o, "foregroundDeletion") {
            // Each dependent is looked at as upstream's attemptToDelete
            // does: one with another, solid owner only loses this one.
            for (kind, dep) in self.dependents(&uid) {
                if !obj::deleting(&dep) {
                    self.attempt_delete(kind, dep).await?;
                }
            }
            let blocking = self.dependents(&uid).iter().any(|(_, d)| {
                obj::owner_refs(d)
                    .iter()
                    .any(|r| r["uid"] == uid.as_str() && r["blockOwnerDeletion"] == true)
            });
            if !blocking {
                let mut done = (*o).clone();
                obj::remove_finalizer(&mut done, "foregroundDeletion");
                self.write(self.kind, done).await?;
            }
            return Ok(Requeue::No);
        }
        if !obj::deleting(&o) {
            self.attempt_delete(self.kind, o).await?;
        }
        Ok(Requeue::No)
    }

    /// Upstream's attemptToDeleteItem for `o` (of `kind`), not being
    /// deleted: owners gone (dangling), deleted in the foreground (waiting
    /// for their dependents), or solid decide what becomes of it.
    async fn attempt_delete(&self, kind: Kind, o: Arc<Value>) -> Result<(), ClientError> {
        let uid = obj::uid(&o).to_owned();
        let refs = obj::owner_refs(&o).to_vec();
        if refs.is_empty() {
            return Ok(());
        }
        let (mut dangling, mut waiting, mut solid) = (Vec::new(), Vec::new(), 0);
        for r in &refs {
            match self.owner(r, obj::namespace(&o)).await? {
                None => dangling.push(r["uid"].clone()),
                Some(owner)
                    if obj::deleting(&owner)
                        && obj::has_finalizer(&owner, "foregroundDeletion") =>
                {
                    waiting.push(r["uid"].clone())
                }
                Some(_) => solid += 1,
            }
        }
        if solid > 0 {
            // A solid owner keeps the object; it only leaves the others.
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            let mut d = (*o).clone();
            if let Some(list) = d["metadata"]["ownerReferences"].as_array_mut() {
                list.retain(|r| !dangling.contains(&r["uid"]) && !waiting.contains(&r["uid"]));
            }
            self.write(kind, d).await?;
            return Ok(());
        }
        let deps = if waiting.is_empty() {
            Vec::new()
        } else {
            self.dependents(&uid)
        };
        if !deps.is_empty() {
            // A dependent that itself waits for its dependents may close a
            // cycle of blocking references: this object stops blocking its
            // owners, so the cycle's foreground deletion can finish.
            let cycle = deps
                .iter()
                .any(|(_, d)| obj::deleting(d) && obj::has_finalizer(d, "foregroundDeletion"));
            let mut o = o;
            if cycle {
                let mut d = (*o).clone();
                if let Some(list) = d["metadata"]["ownerReferences"].as_array_mut() {
                    for r in list.iter_mut().filter(|r| r["blockOwnerDeletion"] == true) {
                        r["blockOwnerDeletion"] = Value::Bool(false);
                    }
                }
                match self.write(kind, d).await? {
                    Some(w) => o = w,
                    None => return Ok(()),
                }
            }
            self.delete(kind, &o, Propagation::Foreground).await?;
        } else {
            self.delete(kind, &o, Propagation::Background).await?;
        }
        Ok(())
    }

    fn dependents(&self, uid: &str) -> Vec<(Kind, Arc<Value>)> {
        WATCHED
            .iter()
            .flat_map(|k| {
                self.rt
                    .informer(*k)
                    .owned_by(uid)
                    .into_iter()
                    .map(move |d| (*k, d))
            })
            .collect()
    }

    /// The live owner named by `r` (of a dependent in `ns`), if it exists
    /// with that uid.
    async fn owner(&self, r: &Value, ns: &str) -> Result<Option<Value>, ClientError> {
        let (Some(kind), Some(name), Some(uid)) =
            (kind_of(r), r["name"].as_str(), r["uid"].as_str())
        else {
            // A kind the runtime does not watch: left alone.
            return Ok(Some(Value::Null));
        };
        let ns = if kind.namespaced { ns } else { "" };
        self.lookup(kind, ns, name, uid).await
    }

    async fn lookup(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        uid: &str,
    ) -> Result<Option<Value>, ClientError> {
        if let Some(c) = self.rt.informer(kind).get_by(ns, name)
            && obj::uid(&c) == uid
        {
            return Ok(Some((*c).clone()));
        }
        match self.rt.client.get(kind, ns, name).await {
            Ok(v) if obj::uid(&v) == uid => Ok(Some(Arc::unwrap_or_clone(v))),
            Ok(_) | Err(ClientError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Updates `v`; the object written, or `None` when it is gone.
    async fn write(&self, kind: Kind, v: Value) -> Result<Option<Arc<Value>>, ClientError> {
        match self.rt.client.update(kind, v).await {
            Ok(w) => {
                self.rt.informer(kind).observe(w.clone());
                Ok(Some(w))
            }
            Err(ClientError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn delete(
        &self,
        kind: Kind,
        v: &Value,
        propagation: Propagation,
    ) -> Result<(), ClientError> {
        let opts = DeleteOptions {
            propagation: Some(propagation),
            uid: Some(obj::uid(v).to_owned()),
            ..DeleteOptions::default()
        };
        match self
            .rt
            .client
            .delete(kind, obj::namespace(v), obj::name(v), opts)
            .await
        {
            Ok(Some(kept)) => self.rt.informer(kind).observe(kept),
            Ok(None) | Err(ClientError::NotFound(_)) => self.rt.informer(kind).observe_deleted(v),
            Err(ClientError::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

fn queue_of(qs: &[(Kind, Arc<Queue>)], kind: Kind) -> Option<&Arc<Queue>> {
    qs.iter().find(|(k, _)| *k == kind).map(|(_, q)| q)
}

fn on_change(rt: &Arc<Runtime>, qs: &[(Kind, Arc<Queue>)], kind: Kind, c: &Change) {
    let o = &c.new;
    let uid = obj::uid(o);
    match c.kind {
        EventType::Deleted => {
            // Its dependents may be orphans now.
            for k in WATCHED {
                let inf: &Arc<Informer> = rt.informer(k);
                if let Some(q) = queue_of(qs, k) {
                    for d in inf.owned_by(uid) {
                        q.add(ObjKey::of(&d));
                    }
                }
            }
            // A foreground owner may be waiting for it.
            for r in obj::owner_refs(o) {
                if let (Some(k), Some(n)) = (kind_of(r), r["name"].as_str())
                    && let Some(q) = queue_of(qs, k)
                {
                    let ns = if k.namespaced { obj::namespace(o) } else { "" };
                    q.add(ObjKey::new(ns, n));
                }
            }
        }
        _ => {
            let refs_changed = c
                .old
                .as_ref()
                .is_none_or(|old| obj::owner_refs(old) != obj::owner_refs(o));
            let finalizing = obj::deleting(o)
                && (obj::has_finalizer(o, "orphan") || obj::has_finalizer(o, "foregroundDeletion"));
            if ((refs_changed && !obj::owner_refs(o).is_empty()) || finalizing)
                && let Some(q) = queue_of(qs, kind)
            {
                q.add(ObjKey::of(o));
            }
            // A reference dropped or made non-blocking: its owner, if it
            // waits in the foreground, may be free to go now.
            if let Some(old) = &c.old {
                let now = obj::owner_refs(o);
                for r in obj::owner_refs(old).iter().filter(|r| !now.contains(r)) {
                    if let (Some(k), Some(n)) = (kind_of(r), r["name"].as_str())
                        && let Some(q) = queue_of(qs, k)
                    {
                        let ns = if k.namespaced { obj::namespace(o) } else { "" };
                        q.add(ObjKey::new(ns, n));
                    }
                }
            }
            if finalizing {
                // Dependents must learn their owner is going in the foreground.
                for k in WATCHED {
                    if let Some(q) = queue_of(qs, k) {
                        for d in rt.informer(k).owned_by(uid) {
                            q.add(ObjKey::of(&d));
                        }
                    }
                }
            }
        }
    }
}

impl Reconciler for GarbageCollector {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.collect(key))
    }
}
