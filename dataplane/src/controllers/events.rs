//! Events (core/v1) as kube-controller-manager, the scheduler and the kubelet
//! record them: one per occurrence, with upstream's reasons and messages, named
//! `<object>.<hex time>` as upstream's recorder names them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kemu_shared::SharedClock;
use serde_json::{Value, json};

use super::client::{Client, kinds};
use super::obj;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Normal operation.
    Normal,
    /// Something to look at.
    Warning,
}

/// Writes Events through the client on behalf of one component.
#[derive(Clone)]
pub struct Recorder {
    client: Arc<dyn Client>,
    clock: SharedClock,
    seq: Arc<AtomicU64>,
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
        }
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
        if let Err(e) = self.client.create(kinds::EVENT, event).await {
            tracing::debug!(error = %e, reason, "event not recorded");
        }
    }
}
