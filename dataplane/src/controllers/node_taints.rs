//! The `NoSchedule` half of kube-controller-manager's node lifecycle
//! controller: a Node's `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` taints follow its `Ready` condition
//! (`False` → not-ready, `Unknown` → unreachable, `True` → neither).
//!
//! kube-apiserver's TaintNodesByCondition admission gives every Node
//! created through the API the not-ready taint; this takes it off once the
//! Node says it is Ready, so a Node a test registers (as kwok does) takes
//! Pods only when Ready, as on a real cluster. A Node without a `Ready`
//! condition keeps what it has: upstream waits for its kubelet, and kemu
//! runs no kubelet for a Node it did not make.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, EventType, kinds};
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

/// The taint of a Node whose `Ready` condition is `False`.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of a Node whose `Ready` condition is `Unknown`.
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The taints `node` should carry: its own, with the not-ready and
/// unreachable `NoSchedule` taints as its `Ready` condition says. `None`
/// when they already are.
pub fn tainted(node: &Value) -> Option<Vec<Value>> {
    let ready = node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?;
    let want = match ready["status"].as_str() {
        Some("False") => Some(NOT_READY),
        Some("Unknown") => Some(UNREACHABLE),
        _ => None,
    };
    let taints: Vec<Value> = node["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ours = |t: &Value| {
        t["effect"] == "NoSchedule" && (t["key"] == NOT_READY || t["key"] == UNREACHABLE)
    };
    let has_wanted = want.is_none_or(|key| taints.iter().any(|t| ours(t) && t["key"] == key));
    let has_other = taints
        .iter()
        .any(|t| ours(t) && Some(t["key"].as_str().unwrap_or_default()) != want);
    if has_wanted && !has_other {
        return None;
    }
    let mut next: Vec<Value> = taints.into_iter().filter(|t| !ours(t)).collect();
    if let Some(key) = want {
        next.push(json!({"key": key, "effect": "NoSchedule"}));
    }
    Some(next)
}

/// The controller keeping Nodes' condition taints.
pub struct NodeTaints {
    rt: Arc<Runtime>,
}

impl NodeTaints {
    /// Wires the controller to the Node informer.
    pub fn register(rt: &Arc<Runtime>) -> Registration {
        let queue = rt.queue("node-lifecycle");
        let q = queue.clone();
        rt.informer(kinds::NODE).on_change(move |c| {
            if c.kind != EventType::Deleted && tainted(&c.new).is_some() {
                q.add(ObjKey::of(&c.new));
            }
        });
        Registration {
            name: "node-lifecycle",
            queue,
            reconciler: Arc::new(Self { rt: rt.clone() }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let informer = self.rt.informer(kinds::NODE);
        let Some(node) = informer.get(key) else {
            return Ok(Requeue::No);
        };
        let Some(taints) = tainted(&node) else {
            return Ok(Requeue::No);
        };
        let mut next = (*node).clone();
        if taints.is_empty() {
            if let Some(spec) = next["spec"].as_object_mut() {
                spec.remove("taints");
            }
        } else {
            next["spec"]["taints"] = Value::Array(taints);
        }
        match self.rt.client.update(kinds::NODE, next).await {
            Ok(w) => informer.observe(w),
            Err(ClientError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for NodeTaints {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: Option<&str>, taints: Value) -> Value {
        let conditions = ready.map_or(json!([]), |s| json!([{"type": "Ready", "status": s}]));
        json!({"spec": {"taints": taints}, "status": {"conditions": conditions}})
    }

    #[test]
    fn ready_nodes_lose_the_not_ready_taint_alone() {
        let own = json!({"key": "a", "effect": "NoSchedule"});
        let n = node(
            Some("True"),
            json!([own, {"key": NOT_READY, "effect": "NoSchedule"}]),
        );
        assert_eq!(tainted(&n), Some(vec![own.clone()]));
        assert_eq!(tainted(&node(Some("True"), json!([own]))), None);
    }

    #[test]
    fn not_ready_and_unknown_nodes_are_tainted() {
        let not_ready = json!({"key": NOT_READY, "effect": "NoSchedule"});
        assert_eq!(
            tainted(&node(Some("False"), json!(null))),
            Some(vec![not_ready.clone()])
        );
        assert_eq!(tainted(&node(Some("False"), json!([not_ready]))), None);
        assert_eq!(
            tainted(&node(Some("Unknown"), json!([not_ready]))),
            Some(vec![json!({"key": UNREACHABLE, "effect": "NoSchedule"})])
        );
    }

    #[test]
    fn nodes_without_a_ready_condition_are_left_alone() {
        let n = node(None, json!([{"key": NOT_READY, "effect": "NoSchedule"}]));
        assert_eq!(tainted(&n), None);
    }
}
