//! The kubelet's heartbeats, on the clock: each Node's Lease in
//! `kube-node-lease` is renewed every 10 s (`leaseDurationSeconds: 40`, as the
//! kubelet's default renew interval is a quarter of it), and the Node's
//! conditions get a new `lastHeartbeatTime` every 5 minutes (the kubelet's
//! `nodeStatusReportFrequency` when nothing changed). A Node's Lease is owned
//! by the Node and goes with it.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

/// The namespace of Node Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How often a Lease is renewed.
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// How long a Lease is valid.
pub const LEASE_DURATION_SECONDS: i64 = 40;
/// How often an unchanged Node status is reported.
pub const STATUS_REPORT: Duration = Duration::from_secs(300);

/// The heartbeat loop of every Node's kubelet.
pub struct Heartbeat {
    rt: Arc<Runtime>,
}

fn due(last: Option<DateTime<Utc>>, every: Duration, now: DateTime<Utc>) -> (bool, DateTime<Utc>) {
    let every = chrono::Duration::from_std(every).unwrap_or_default();
    match last {
        Some(t) if t + every > now => (false, t + every),
        _ => (true, now + every),
    }
}

impl Heartbeat {
    /// Wires the heartbeats to the Node informer.
    pub fn register(rt: &Arc<Runtime>) -> Registration {
        let queue = rt.queue("heartbeat");
        let q = queue.clone();
        rt.informer(kinds::NODE).on_change(move |c| {
            if matches!(c.kind, EventType::Added | EventType::Deleted) {
                q.add(ObjKey::of(&c.new));
            }
        });
        Registration {
            name: "heartbeat",
            queue,
            reconciler: Arc::new(Self { rt: rt.clone() }),
        }
    }

    async fn renew_lease(
        &self,
        node: &Value,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, ClientError> {
        let name = obj::name(node);
        let client = &self.rt.client;
        match client.get(kinds::LEASE, LEASE_NAMESPACE, name).await {
            Ok(lease) => {
                let mut lease = Arc::unwrap_or_clone(lease);
                let last = obj::time_at(&lease, &["spec", "renewTime"]);
                let (renew, next) = due(last, RENEW_INTERVAL, now);
                if renew {
                    lease["spec"]["renewTime"] = json!(obj::fmt_micro_time(now));
                    client.update(kinds::LEASE, lease).await?;
                }
                Ok(next)
            }
            Err(ClientError::NotFound(_)) => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": obj::uid(node)}]},
                    "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                             "renewTime": obj::fmt_micro_time(now)},
                });
                match client.create(kinds::LEASE, lease).await {
                    Ok(_) | Err(ClientError::AlreadyExists(_)) => {}
                    Err(e) => return Err(e),
                }
                Ok(now + chrono::Duration::from_std(RENEW_INTERVAL).unwrap_or_default())
            }
            Err(e) => Err(e),
        }
    }

    async fn report_status(
        &self,
        node: &Value,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, ClientError> {
        let conds = node["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let last = conds
            .iter()
            .find(|c| c["type"] == "Ready")
            .and_then(|c| c["lastHeartbeatTime"].as_str())
            .and_then(obj::parse_time);
        let (report, next) = due(last, STATUS_REPORT, now);
        if report && !conds.is_empty() {
            let ts = obj::fmt_time(now);
            let mut n = node.clone();
            for c in n["status"]["conditions"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                c["lastHeartbeatTime"] = json!(ts);
                if c["lastTransitionTime"].is_null() {
                    c["lastTransitionTime"] = json!(ts);
                }
            }
            let w = self.rt.client.update_status(kinds::NODE, n).await?;
            self.rt.informer(kinds::NODE).observe(w);
        }
        Ok(next)
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(node) = self.rt.informer(kinds::NODE).get(key) else {
            return match self
                .rt
                .client
                .delete(
                    kinds::LEASE,
                    LEASE_NAMESPACE,
                    &key.name,
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(ClientError::NotFound(_)) => Ok(Requeue::No),
                Err(e) => Err(e),
            };
        };
        let now = self.rt.clock.now();
        let lease_next = self.renew_lease(&node, now).await?;
        let status_next = self.report_status(&node, now).await?;
        let next = lease_next.min(status_next);
        Ok(Requeue::After(obj::to_std(next - now)))
    }
}

impl Reconciler for Heartbeat {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
