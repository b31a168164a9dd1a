//! The disruption controller: keeps each PodDisruptionBudget's status as
//! kube-controller-manager's does — `expectedPods`, `currentHealthy`,
//! `desiredHealthy`, `disruptionsAllowed`, `disruptedPods` (evictions the
//! eviction subresource recorded, forgotten once the Pod is gone or after
//! two minutes) and the `DisruptionAllowed` condition — so the eviction
//! subresource ([`crate::api::eviction`]) answers from it.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, Kind, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector;

/// How long an eviction stays in `disruptedPods` while its Pod is not gone.
const DELETION_TIMEOUT_SECS: i64 = 120;

/// Whether a budget's selector picks these labels (policy/v1: a null
/// selector picks nothing, an empty one everything).
pub fn selects(budget: &Value, labels: &Value) -> bool {
    let sel = &budget["spec"]["selector"];
    !sel.is_null() && label_selector::matches(sel, labels)
}

/// An int-or-percent scaled to `total`, rounded up (upstream's
/// `GetScaledValueFromIntOrPercent(…, true)`); `None` when malformed.
pub fn scaled(v: &Value, total: i64) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let pct: i64 = s.strip_suffix('%')?.parse().ok()?;
            Some((pct * total + 99) / 100)
        }
        _ => None,
    }
}

/// The PodDisruptionBudget controller.
pub struct DisruptionController {
    rt: Arc<Runtime>,
}

impl DisruptionController {
    /// Wires the controller to the budget and Pod informers.
    pub fn register(rt: &Arc<Runtime>) -> Registration {
        let queue = rt.queue("disruption");
        let q = queue.clone();
        rt.informer(kinds::POD_DISRUPTION_BUDGET)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let q = queue.clone();
        let budgets = rt.informer(kinds::POD_DISRUPTION_BUDGET).clone();
        rt.informer(kinds::POD).on_change(move |c| {
            for b in budgets.list_namespace(obj::namespace(&c.new)) {
                let before = c.old.as_deref().map(obj::labels);
                if selects(&b, obj::labels(&c.new)) || before.is_some_and(|l| selects(&b, l)) {
                    q.add(ObjKey::of(&b));
                }
            }
        });
        Registration {
            name: "disruption",
            queue,
            reconciler: Arc::new(Self { rt: rt.clone() }),
        }
    }

    /// The replicas the controllers of `pods` want (upstream's
    /// `getExpectedScale`): each controller counted once, a ReplicaSet of a
    /// Deployment as the Deployment; a Pod without a controller counts one.
    fn expected_scale(&self, pods: &[Arc<Value>]) -> i64 {
        let mut by_controller: BTreeMap<String, i64> = BTreeMap::new();
        let mut loose = 0;
        for p in pods {
            let Some(owner) = obj::controller_ref(p) else {
                loose += 1;
                continue;
            };
            let ns = obj::namespace(p);
            let name = owner["name"].as_str().unwrap_or_default();
            let replicas = |kind: Kind, name: &str| {
                self.rt
                    .informer(kind)
                    .get_by(ns, name)
                    .map(|o| (obj::uid(&o).to_owned(), o))
            };
            let found = match owner["kind"].as_str() {
                Some("ReplicaSet") => replicas(kinds::REPLICA_SET, name).map(|(uid, rs)| {
                    match obj::controller_ref(&rs).filter(|o| o["kind"] == "Deployment") {
                        Some(d) => {
                            replicas(kinds::DEPLOYMENT, d["name"].as_str().unwrap_or_default())
                                .unwrap_or((uid, rs))
                        }
                        None => (uid, rs),
                    }
                }),
                Some("StatefulSet") => replicas(kinds::STATEFUL_SET, name),
                _ => None,
            };
            match found {
                Some((uid, o)) => {
                    by_controller.insert(uid, o["spec"]["replicas"].as_i64().unwrap_or(1));
                }
                None => loose += 1,
            }
        }
        by_controller.values().sum::<i64>() + loose
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let informer = self.rt.informer(kinds::POD_DISRUPTION_BUDGET);
        let Some(budget) = informer.get(key) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&budget) {
            return Ok(Requeue::No);
        }
        let now = self.rt.clock.now();
        let pods: Vec<Arc<Value>> = self
            .rt
            .informer(kinds::POD)
            .list_namespace(&key.namespace)
            .into_iter()
            .filter(|p| selects(&budget, obj::labels(p)))
            .collect();
        let spec = &budget["spec"];
        let (expected, desired) = if !spec["maxUnavailable"].is_null() {
            let expected = self.expected_scale(&pods);
            let max = scaled(&spec["maxUnavailable"], expected).unwrap_or(0);
            (expected, (expected - max).max(0))
        } else if let Some(n) = spec["minAvailable"].as_i64() {
            (pods.len() as i64, n)
        } else if !spec["minAvailable"].is_null() {
            let expected = self.expected_scale(&pods);
            (
                expected,
                scaled(&spec["minAvailable"], expected).unwrap_or(0),
            )
        } else {
            (0, 0)
        };
        // Evictions still under way: their Pods are not counted healthy.
        let mut disrupted = serde_json::Map::new();
        let mut wake: Option<DateTime<Utc>> = None;
        for (name, at) in budget["status"]["disruptedPods"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let Some(at_time) = at.as_str().and_then(obj::parse_time) else {
                continue;
            };
            let expires = at_time + obj::secs(DELETION_TIMEOUT_SECS);
            let live = pods
                .iter()
                .any(|p| obj::name(p) == name && !obj::deleting(p));
            if live && expires > now {
                disrupted.insert(name.clone(), at.clone());
                wake = Some(wake.map_or(expires, |w| w.min(expires)));
            }
        }
        let healthy = pods
            .iter()
            .filter(|p| {
                !obj::deleting(p) && obj::pod_ready(p) && !disrupted.contains_key(obj::name(p))
            })
            .count() as i64;
        let allowed = if expected <= 0 {
            0
        } else {
            (healthy - desired).max(0)
        };
        let generation = obj::generation(&budget);
        let ts = obj::fmt_time(now);
        let mut conds: Vec<Value> = budget["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (status, reason) = if allowed > 0 {
            ("True", "SufficientPods")
        } else {
            ("False", "InsufficientPods")
        };
        obj::set_condition(
            &mut conds,
            json!({"type": "DisruptionAllowed", "status": status, "reason": reason,
                   "message": "", "observedGeneration": generation}),
            &ts,
            false,
        );
        for c in &mut conds {
            if c["type"] == "DisruptionAllowed" {
                c["observedGeneration"] = json!(generation);
            }
        }
        let mut new_status = json!({
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": conds,
        });
        if !disrupted.is_empty() {
            new_status["disruptedPods"] = Value::Object(disrupted);
        }
        if budget.get("status") != Some(&new_status) {
            let mut next = (*budget).clone();
            next["status"] = new_status;
            match self
                .rt
                .client
                .update_status(kinds::POD_DISRUPTION_BUDGET, next)
                .await
            {
                Ok(w) => informer.observe(w),
                Err(ClientError::NotFound(_)) => return Ok(Requeue::No),
                Err(e) => return Err(e),
            }
        }
        Ok(match wake {
            Some(at) => Requeue::After(obj::to_std(at - now)),
            None => Requeue::No,
        })
    }
}

impl Reconciler for DisruptionController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&json!("50%"), 3), Some(2));
        assert_eq!(scaled(&json!(2), 3), Some(2));
        assert_eq!(scaled(&json!("x"), 3), None);
        let b = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}});
        assert!(selects(&b, &json!({"app": "web"})));
        assert!(!selects(&json!({"spec": {}}), &json!({"app": "web"})));
    }
}
