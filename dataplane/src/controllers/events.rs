//! Events (core/v1) as kube-controller-manager, the scheduler and the kubelet
//! record them: one per occurrence, with upstream's reasons and messages, named
//! `<object>.<hex time>` as upstream's recorder names them.
//!
//! Like client-go's event correlator, similar events are aggregated: once an
//! object has had [`AGGREGATE_AFTER`] differently worded events of one reason
//! from one source within [`AGGREGATE_WINDOW`] (a ReplicaSet's
//! `SuccessfulCreate` for each of its Pods), the next ones update a single
//! Event whose message starts `(combined from similar events): ` and whose
//! `count` grows.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use kemu_shared::SharedClock;
use serde_json::{Value, json};

use super::client::{Client, ClientError, kinds};
use super::obj;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Normal operation.
    Normal,
    /// Something to look at.
    Warning,
}

/// Distinct messages of one kind of event after which they are aggregated
/// (client-go's `defaultAggregateMaxEvents`).
pub const AGGREGATE_AFTER: usize = 10;
/// How long similar events are remembered (client-go's
/// `defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_WINDOW: Duration = Duration::from_secs(600);
/// Keys remembered per source before the memory is dropped (client-go keeps
/// an LRU of 4096).
const AGGREGATE_KEYS: usize = 4096;

/// Similar events of one object, reason and source. Kept for every such key
/// (four per Pod a kubelet starts), so small: messages as their hashes, the
/// aggregate only once there is one.
#[derive(Default)]
struct Similar {
    messages: Vec<u64>,
    last: Option<DateTime<Utc>>,
    combined: Option<Box<Combined>>,
}

/// A fixed hash of `text` (not randomized per process: deterministic).
fn digest(text: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The aggregate Event of similar events.
#[derive(Clone)]
struct Combined {
    namespace: String,
    name: String,
    count: i64,
    first: String,
    /// As this recorder last wrote it: the next occurrence updates it without
    /// reading it back, as client-go patches it.
    written: Option<Arc<Value>>,
}

/// How an aggregate Event's message starts (client-go's
/// `EventAggregatorByReasonMessageFunc`).
pub const COMBINED: &str = "(combined from similar events): ";

/// Writes Events through the client on behalf of one component.
#[derive(Clone)]
pub struct Recorder {
    client: Arc<dyn Client>,
    clock: SharedClock,
    seq: Arc<AtomicU64>,
    // Per source (component and host): aggregation key → similar events.
    // Keys are hashed: a 64-bit collision would merely aggregate two keys.
    similar: Arc<Mutex<HashMap<String, HashMap<u64, Similar>>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder writing through `client`.
    pub fn new(client: Arc<dyn Client>, clock: SharedClock) -> Self {
        Self {
            client,
            clock,
            seq: Arc::default(),
            similar: Arc::default(),
        }
    }

    /// Notes an event; answers the aggregate Event to update (namespace,
    /// name, count so far, first timestamp) or `Ok(false)` to record it
    /// normally, `Ok(true)` to create the aggregate.
    fn correlate(
        &self,
        source: &str,
        key: u64,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, Combined> {
        let mut all = self.similar.lock();
        let per_source = all.entry(source.to_owned()).or_default();
        if per_source.len() >= AGGREGATE_KEYS && !per_source.contains_key(&key) {
            per_source.clear();
        }
        let s = per_source.entry(key).or_default();
        let window = chrono::Duration::from_std(AGGREGATE_WINDOW).unwrap_or_default();
        if s.last.is_some_and(|l| l + window < now) {
            *s = Similar::default();
        }
        s.last = Some(now);
        let message = digest(message);
        if s.messages.len() < AGGREGATE_AFTER && !s.messages.contains(&message) {
            s.messages.push(message);
        }
        if s.messages.len() < AGGREGATE_AFTER {
            return Ok(false);
        }
        match &mut s.combined {
            Some(c) => {
                c.count += 1;
                Err((**c).clone())
            }
            None => Ok(true),
        }
    }

    fn remember_combined(&self, source: &str, key: u64, ns: &str, name: &str, first: &str) {
        if let Some(s) = self
            .similar
            .lock()
            .get_mut(source)
            .and_then(|m| m.get_mut(&key))
        {
            s.combined = Some(Box::new(Combined {
                namespace: ns.to_owned(),
                name: name.to_owned(),
                count: 1,
                first: first.to_owned(),
                written: None,
            }));
        }
    }

    fn remember_written(&self, source: &str, key: u64, written: Arc<Value>) {
        let mut all = self.similar.lock();
        if let Some(c) = all
            .get_mut(source)
            .and_then(|m| m.get_mut(&key))
            .and_then(|s| s.combined.as_mut())
            && c.name == obj::name(&written)
        {
            c.written = Some(written);
        }
    }

    /// Writes occurrence `c.count` into the aggregate Event; answers it as
    /// written (`NotFound` when it is gone).
    async fn update_combined(
        &self,
        c: &Combined,
        ts: &str,
        message: &str,
    ) -> Result<Arc<Value>, ClientError> {
        let next = |mut e: Value| {
            let count = c.count.max(e["count"].as_i64().unwrap_or(0) + 1);
            e["count"] = json!(count);
            e["lastTimestamp"] = json!(ts);
            e["firstTimestamp"] = json!(c.first);
            e["message"] = json!(format!("{COMBINED}{message}"));
            e
        };
        // Conflicts when someone else wrote it since: read it then.
        if let Some(w) = &c.written
            && let Ok(written) = self.client.update(kinds::EVENT, next((**w).clone())).await
        {
            return Ok(written);
        }
        let current = self.client.get(kinds::EVENT, &c.namespace, &c.name).await?;
        self.client
            .update(kinds::EVENT, next(Arc::unwrap_or_clone(current)))
            .await
    }

    /// Records an Event about `involved` from `component` (e.g.
    /// `deployment-controller`); `host` is the node for kubelet events.
    /// Failures are logged, never returned: an Event is best effort upstream too.
    pub async fn record(
        &self,
        component: &str,
        host: Option<&str>,
        involved: &Value,
        kind: EventKind,
        reason: &str,
        message: String,
    ) {
        let now = self.clock.now();
        let ts = obj::fmt_time(now);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let nanos = now.timestamp_nanos_opt().unwrap_or_default() as u64;
        let ns = match obj::namespace(involved) {
            "" => "default",
            ns => ns,
        };
        let mut source = json!({ "component": component });
        if let Some(h) = host {
            source["host"] = json!(h);
        }
        let mut involved_ref = json!({
            "kind": involved["kind"],
            "name": obj::name(involved),
            "uid": obj::uid(involved),
            "apiVersion": involved["apiVersion"],
            "resourceVersion": involved["metadata"]["resourceVersion"],
        });
        if !obj::namespace(involved).is_empty() {
            involved_ref["namespace"] = json!(obj::namespace(involved));
        }
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                // upstream: `<name>.<hex UnixNano>`; the sequence keeps same-instant events apart.
                "name": format!("{}.{nanos:x}{seq:04x}", obj::name(involved)),
                "namespace": ns,
            },
            "involvedObject": involved_ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "type": match kind { EventKind::Normal => "Normal", EventKind::Warning => "Warning" },
            "eventTime": null,
            "reportingComponent": component,
            "reportingInstance": host.unwrap_or(""),
        });
        let source_key = format!("{component}/{}", host.unwrap_or(""));
        let key = digest(&format!(
            "{}/{ns}/{}/{}/{}/{reason}",
            involved["kind"].as_str().unwrap_or(""),
            obj::name(involved),
            obj::uid(involved),
            event["type"].as_str().unwrap_or(""),
        ));
        let mut event = event;
        let combined = match self.correlate(&source_key, key, &message, now) {
            Ok(false) => false,
            Ok(true) => true,
            Err(c) => match self.update_combined(&c, &ts, &message).await {
                Ok(written) => {
                    self.remember_written(&source_key, key, written);
                    return;
                }
                // Gone (expired or deleted): a new aggregate takes its place.
                Err(ClientError::NotFound(_)) => true,
                Err(e) => {
                    tracing::debug!(error = %e, reason, "event not recorded");
                    return;
                }
            },
        };
        if combined {
            event["message"] = json!(format!("{COMBINED}{message}"));
            self.remember_combined(&source_key, key, ns, obj::name(&event), &ts);
        }
        match self.client.create(kinds::EVENT, event).await {
            Ok(written) if combined => self.remember_written(&source_key, key, written),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, reason, "event not recorded"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::client::MemClient;
    use kemu_shared::FakeClock;

    async fn created_pod(recorder: &Recorder, rs: &Value, i: usize) {
        recorder
            .record(
                "replicaset-controller",
                None,
                rs,
                EventKind::Normal,
                "SuccessfulCreate",
                format!("Created pod: web-{i}"),
            )
            .await;
    }

    #[tokio::test]
    async fn similar_events_are_combined_after_ten() {
        let clock = FakeClock::at_epoch();
        let client = MemClient::new(clock.clone());
        let recorder = Recorder::new(client.clone(), clock.clone());
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "web", "namespace": "default", "uid": "u1"}});
        for i in 0..12 {
            created_pod(&recorder, &rs, i).await;
        }
        let events = client.list(kinds::EVENT, Some("default"), None).await;
        let events = events.unwrap_or_default();
        assert_eq!(events.len(), 10);
        let combined: Vec<_> = events
            .iter()
            .filter(|e| e["message"].as_str().unwrap_or("").starts_with(COMBINED))
            .collect();
        assert_eq!(combined.len(), 1);
        assert_eq!(combined[0]["count"], 3);
        assert_eq!(
            combined[0]["message"],
            "(combined from similar events): Created pod: web-11"
        );

        // Written by someone else meanwhile: read back, the count goes on.
        let mut edited = (**combined[0]).clone();
        edited["metadata"]["labels"] = json!({"seen": "yes"});
        client.update(kinds::EVENT, edited).await.unwrap();
        created_pod(&recorder, &rs, 12).await;
        let name = obj::name(combined[0]);
        let current = client.get(kinds::EVENT, "default", name).await.unwrap();
        assert_eq!(
            (
                current["count"].clone(),
                current["metadata"]["labels"]["seen"].clone()
            ),
            (json!(4), json!("yes"))
        );
        // Deleted (expired): a new aggregate takes its place.
        client
            .delete(kinds::EVENT, "default", name, Default::default())
            .await
            .unwrap();
        created_pod(&recorder, &rs, 13).await;
        let events = client
            .list(kinds::EVENT, Some("default"), None)
            .await
            .unwrap();
        assert_eq!(events.len(), 10);
        assert!(events.iter().any(|e| e["count"] == 1
            && e["message"] == "(combined from similar events): Created pod: web-13"));

        // After the window, similar events start afresh.
        clock.advance(AGGREGATE_WINDOW + Duration::from_secs(1));
        created_pod(&recorder, &rs, 14).await;
        assert_eq!(client.count(kinds::EVENT), 11);
    }
}
