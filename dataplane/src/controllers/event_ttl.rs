//! Events expire, as kube-apiserver's `--event-ttl` (one hour by default)
//! makes them: etcd drops an Event when the lease of its last write runs out,
//! so watchers see it deleted and `kubectl get events` and `describe` stop
//! showing it. Without this a long-running cluster would keep every Event
//! it ever recorded.
//!
//! Each write of an Event is looked at again once its lease would end; the
//! Event is then deleted unless it says it was written since: its creation,
//! `lastTimestamp`, `eventTime` or `series.lastObservedTime`, which every
//! recorder write moves, or a `managedFields` time, which every write through
//! the API moves (a `kubectl label` renews the lease, as in etcd).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// When `event` was last written, as far as it says.
fn last_recorded(event: &Value) -> Option<DateTime<Utc>> {
    let managed = event["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| obj::time_at(entry, &["time"]));
    [
        &["metadata", "creationTimestamp"][..],
        &["lastTimestamp"],
        &["eventTime"],
        &["series", "lastObservedTime"],
    ]
    .iter()
    .filter_map(|path| obj::time_at(event, path))
    .chain(managed)
    .max()
}

/// The controller deleting expired Events.
pub struct EventTtl {
    rt: Arc<Runtime>,
    ttl: chrono::Duration,
}

impl EventTtl {
    /// Wires the controller to the Event informer; Events live `ttl` after
    /// they were last recorded.
    pub fn register(rt: &Arc<Runtime>, ttl: Duration) -> Registration {
        let queue = rt.queue("event-ttl");
        // Each write starts a new lease: look at the Event when it would end.
        // Timed from the write, not queued now, since hundreds of thousands
        // of Events are written during a large rollout.
        let (q, timers) = (queue.clone(), rt.timers.clone());
        rt.informer(kinds::EVENT).on_change(move |c| {
            if c.kind != EventType::Deleted && !c.is_resync() {
                timers.add_after(ttl, &q, ObjKey::of(&c.new));
            }
        });
        Registration {
            name: "event-ttl",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                ttl: chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX),
            }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        // Read from the store: the Event informer keeps nothing.
        let event = match self
            .rt
            .client
            .get(kinds::EVENT, &key.namespace, &key.name)
            .await
        {
            Ok(event) => event,
            Err(ClientError::NotFound(_)) => return Ok(Requeue::No),
            Err(e) => return Err(e),
        };
        let now = self.rt.clock.now();
        let expires = last_recorded(&event)
            .unwrap_or(now)
            .checked_add_signed(self.ttl)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        if expires > now {
            return Ok(Requeue::After(obj::to_std(expires - now)));
        }
        let options = DeleteOptions {
            uid: Some(obj::uid(&event).to_owned()),
            ..DeleteOptions::default()
        };
        match self
            .rt
            .client
            .delete(kinds::EVENT, &key.namespace, &key.name, options)
            .await
        {
            Ok(_) | Err(ClientError::NotFound(_)) => Ok(Requeue::No),
            Err(e) => Err(e),
        }
    }
}

impl Reconciler for EventTtl {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_lease_runs_from_the_last_occurrence() {
        let e = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "lastTimestamp": "2026-01-01T00:10:00Z",
            "series": {"lastObservedTime": "2026-01-01T00:20:00.000000Z"}});
        assert_eq!(
            last_recorded(&e),
            obj::parse_time("2026-01-01T00:20:00Z"),
            "the series' last observation is the latest"
        );
        let labelled = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl-label", "operation": "Update", "time": "2026-01-01T00:30:00Z"}]},
            "lastTimestamp": "2026-01-01T00:10:00Z"});
        assert_eq!(
            last_recorded(&labelled),
            obj::parse_time("2026-01-01T00:30:00Z"),
            "a write through the API renews the lease"
        );
        let created = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            last_recorded(&created),
            obj::parse_time("2026-01-01T00:00:00Z")
        );
    }
}
