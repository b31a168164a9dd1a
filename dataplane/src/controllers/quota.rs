//! The ResourceQuota controller (kube-controller-manager's
//! `resourcequota` controller): keeps each quota's `status.hard` equal to
//! `spec.hard` and `status.used` to what the namespace's objects use
//! ([`crate::authz::admission::quota::status`]), so `kubectl describe quota`
//! shows usage.
//!
//! As upstream, creations are charged by admission (which writes
//! `status.used` itself); the controller recalculates when a quota appears
//! or its `spec.hard` changes, when a tracked object is deleted or a Pod
//! ends, and on every resync (which also catches objects the controllers
//! create without admission).

use std::sync::Arc;

use serde_json::Value;

use super::client::{BoxFuture, ClientError, EventType, Kind, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::authz::admission::quota;

/// The kinds whose objects a quota counts, with their group.
const TRACKED: [(&str, Kind); 13] = [
    ("", kinds::POD),
    ("", kinds::SERVICE),
    ("", kinds::CONFIG_MAP),
    ("", kinds::SECRET),
    ("", kinds::PVC),
    ("", kinds::RESOURCE_QUOTA),
    ("", kinds::SERVICE_ACCOUNT),
    ("apps", kinds::DEPLOYMENT),
    ("apps", kinds::REPLICA_SET),
    ("apps", kinds::STATEFUL_SET),
    ("apps", kinds::DAEMON_SET),
    ("batch", kinds::JOB),
    ("batch", kinds::CRON_JOB),
];

/// The ResourceQuota controller.
pub struct QuotaController {
    rt: Arc<Runtime>,
}

fn hard(q: &Value) -> &Value {
    &q["spec"]["hard"]
}

impl QuotaController {
    /// Wires the controller to the ResourceQuota informer and the informers
    /// of the kinds it counts.
    pub fn register(rt: &Arc<Runtime>) -> Registration {
        let queue = rt.queue("resourcequota");
        let q = queue.clone();
        rt.informer(kinds::RESOURCE_QUOTA).on_change(move |c| {
            let resync = c
                .old
                .as_ref()
                .is_some_and(|o| obj::resource_version(o) == obj::resource_version(&c.new));
            let respec = c.old.as_ref().is_none_or(|o| hard(o) != hard(&c.new));
            if c.kind != EventType::Deleted && (resync || respec) {
                q.add(ObjKey::of(&c.new));
            }
        });
        for (_, kind) in TRACKED {
            if kind == kinds::RESOURCE_QUOTA {
                continue;
            }
            let Some(informer) = rt.try_informer(kind) else {
                continue;
            };
            let (q, quotas) = (queue.clone(), rt.informer(kinds::RESOURCE_QUOTA).clone());
            informer.on_change(move |c| {
                let ended = kind == kinds::POD
                    && obj::pod_terminal(&c.new)
                    && c.old.as_ref().is_some_and(|o| !obj::pod_terminal(o));
                if c.kind == EventType::Deleted || ended {
                    for quota in quotas.list_namespace(obj::namespace(&c.new)) {
                        q.add(ObjKey::of(&quota));
                    }
                }
            });
        }
        Registration {
            name: "resourcequota",
            queue,
            reconciler: Arc::new(Self { rt: rt.clone() }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(current) = self.rt.informer(kinds::RESOURCE_QUOTA).get(key) else {
            return Ok(Requeue::No);
        };
        // Read fresh: admission may have charged it since the cache saw it.
        let quota = match self
            .rt
            .client
            .get(kinds::RESOURCE_QUOTA, &key.namespace, &key.name)
            .await
        {
            Ok(q) => Arc::unwrap_or_clone(q),
            Err(ClientError::NotFound(_)) => return Ok(Requeue::No),
            Err(e) => return Err(e),
        };
        drop(current);
        let mut objects = Vec::new();
        for (group, kind) in TRACKED {
            let items = match self.rt.try_informer(kind) {
                Some(informer) => informer
                    .list_namespace(&key.namespace)
                    .into_iter()
                    .map(Arc::unwrap_or_clone)
                    .collect::<Vec<_>>(),
                None => self
                    .rt
                    .client
                    .list(kind, Some(&key.namespace), None)
                    .await?
                    .into_iter()
                    .map(Arc::unwrap_or_clone)
                    .collect(),
            };
            objects.extend(
                items
                    .into_iter()
                    .filter(|o| !obj::deleting(o) || kind == kinds::POD)
                    .map(|o| (group.to_owned(), kind.plural.to_owned(), o)),
            );
        }
        let status = quota::status(&quota, &objects);
        if quota.get("status") == Some(&status) {
            return Ok(Requeue::No);
        }
        let mut next = quota;
        next["status"] = status;
        match self
            .rt
            .client
            .update_status(kinds::RESOURCE_QUOTA, next)
            .await
        {
            Ok(w) => {
                self.rt.informer(kinds::RESOURCE_QUOTA).observe(w);
                Ok(Requeue::No)
            }
            Err(ClientError::NotFound(_)) => Ok(Requeue::No),
            Err(e) => Err(e),
        }
    }
}

impl Reconciler for QuotaController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
