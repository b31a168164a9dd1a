//! Service → EndpointSlices (and the legacy Endpoints object): the Pods a
//! Service selects that have an IP, with `ready`/`serving`/`terminating`
//! conditions, their Node and a `targetRef`; target ports resolved (named
//! ports through the container's ports); at most 100 endpoints per slice, as
//! upstream's default.
//!
//! Not done here: ClusterIP and NodePort allocation (the registry allocates
//! them on create: `strategy::service`), LoadBalancer status
//! ([`loadbalancer`](super::loadbalancer)).
//! A Service's reconcile reads the Pods of its namespace: O(Pods in the
//! namespace) per change, deduplicated by the work queue.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector::LabelSelector;

const MAX_PER_SLICE: usize = 100;
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

fn selector(svc: &Value) -> Option<LabelSelector> {
    let sel = svc["spec"]["selector"].as_object()?;
    if sel.is_empty() {
        return None;
    }
    LabelSelector::from_label_selector(&json!({"matchLabels": sel}))
}

/// The port a Service port reaches on `pod`.
fn target_port(port: &Value, pod: &Value) -> Option<i64> {
    match &port["targetPort"] {
        Value::Number(n) => n.as_i64(),
        Value::String(name) => pod["spec"]["containers"]
            .as_array()?
            .iter()
            .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_i64()),
        _ => port["port"].as_i64(),
    }
}

/// The EndpointSlice controller (with the Endpoints mirror).
pub struct EndpointSliceController {
    rt: Arc<Runtime>,
}

impl EndpointSliceController {
    /// Wires the controller to the Service and Pod informers.
    pub fn register(rt: &Arc<Runtime>) -> Registration {
        let queue = rt.queue("endpointslice");
        let q = queue.clone();
        rt.informer(kinds::SERVICE)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let (q, svcs) = (queue.clone(), rt.informer(kinds::SERVICE).clone());
        rt.informer(kinds::POD).on_change(move |c| {
            let ns = obj::namespace(&c.new);
            for svc in svcs.list_namespace(ns) {
                let Some(sel) = selector(&svc) else { continue };
                let hit = sel.selects(&c.new) || c.old.as_ref().is_some_and(|o| sel.selects(o));
                if hit {
                    q.add(ObjKey::of(&svc));
                }
            }
        });
        Registration {
            name: "endpointslice",
            queue,
            reconciler: Arc::new(Self { rt: rt.clone() }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(svc) = self.rt.informer(kinds::SERVICE).get(key) else {
            // Gone: its Endpoints go too (slices follow by ownerReference).
            return match self
                .rt
                .client
                .delete(
                    kinds::ENDPOINTS,
                    &key.namespace,
                    &key.name,
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(ClientError::NotFound(_)) => Ok(Requeue::No),
                Err(e) => Err(e),
            };
        };
        let Some(sel) = selector(&svc) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&svc) {
            return Ok(Requeue::No);
        }
        let mut pods: Vec<Arc<Value>> = self
            .rt
            .informer(kinds::POD)
            .list_namespace(&key.namespace)
            .into_iter()
            .filter(|p| {
                sel.selects(p) && !obj::pod_terminal(p) && p["status"]["podIP"].as_str().is_some()
            })
            .collect();
        pods.sort_by(|a, b| obj::name(a).cmp(obj::name(b)));
        let ports: Vec<Value> = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
        let slice_ports: Vec<Value> = ports
            .iter()
            .map(|p| {
                let mut sp = json!({"protocol": p["protocol"].as_str().unwrap_or("TCP"),
                    "port": pods.first().and_then(|pod| target_port(p, pod)).or(p["port"].as_i64())});
                sp["name"] = json!(p["name"].as_str().unwrap_or(""));
                sp
            })
            .collect();
        let endpoints: Vec<Value> = pods
            .iter()
            .map(|p| {
                let ready = obj::pod_ready(p) && !obj::deleting(p);
                json!({
                    "addresses": [p["status"]["podIP"]],
                    "conditions": {"ready": ready, "serving": obj::pod_ready(p), "terminating": obj::deleting(p)},
                    "nodeName": p["spec"]["nodeName"],
                    "targetRef": {"kind": "Pod", "namespace": obj::namespace(p), "name": obj::name(p), "uid": obj::uid(p)},
                })
            })
            .collect();
        let inf = self.rt.informer(kinds::ENDPOINT_SLICE);
        let mut existing: Vec<Arc<Value>> = inf
            .controlled_by(obj::uid(&svc))
            .into_iter()
            .filter(|s| obj::labels(s)["endpointslice.kubernetes.io/managed-by"] == MANAGED_BY)
            .collect();
        existing.sort_by(|a, b| obj::name(a).cmp(obj::name(b)));
        let chunks: Vec<&[Value]> = if endpoints.is_empty() {
            vec![&[][..]]
        } else {
            endpoints.chunks(MAX_PER_SLICE).collect()
        };
        for (i, chunk) in chunks.iter().enumerate() {
            let body = |mut s: Value| {
                s["addressType"] = json!("IPv4");
                s["endpoints"] = json!(chunk);
                s["ports"] = json!(slice_ports);
                s
            };
            match existing.get(i) {
                Some(cur) => {
                    let new = body((**cur).clone());
                    if new != **cur {
                        let w = self.rt.client.update(kinds::ENDPOINT_SLICE, new).await?;
                        inf.observe(w);
                    }
                }
                None => {
                    let s = body(json!({
                        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {"generateName": format!("{}-", key.name), "namespace": key.namespace,
                            "labels": {"kubernetes.io/service-name": key.name, "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
                            "ownerReferences": [obj::controller_ref_to(kinds::SERVICE, &svc)]},
                    }));
                    let w = self.rt.client.create(kinds::ENDPOINT_SLICE, s).await?;
                    inf.observe(w);
                }
            }
        }
        for extra in existing.iter().skip(chunks.len()) {
            match self
                .rt
                .client
                .delete(
                    kinds::ENDPOINT_SLICE,
                    obj::namespace(extra),
                    obj::name(extra),
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(ClientError::NotFound(_)) => inf.observe_deleted(extra),
                Err(e) => return Err(e),
            }
        }
        self.sync_endpoints(&svc, &pods, &ports).await?;
        Ok(Requeue::No)
    }

    /// The legacy Endpoints object, named as the Service.
    async fn sync_endpoints(
        &self,
        svc: &Value,
        pods: &[Arc<Value>],
        ports: &[Value],
    ) -> Result<(), ClientError> {
        let addr = |p: &Value| {
            json!({"ip": p["status"]["podIP"], "nodeName": p["spec"]["nodeName"],
                   "targetRef": {"kind": "Pod", "namespace": obj::namespace(p), "name": obj::name(p), "uid": obj::uid(p)}})
        };
        let ready: Vec<Value> = pods
            .iter()
            .filter(|p| obj::pod_ready(p) && !obj::deleting(p))
            .map(|p| addr(p))
            .collect();
        let not_ready: Vec<Value> = pods
            .iter()
            .filter(|p| !obj::pod_ready(p) || obj::deleting(p))
            .map(|p| addr(p))
            .collect();
        let eports: Vec<Value> = ports
            .iter()
            .map(|p| {
                json!({"name": p["name"].as_str().unwrap_or(""), "protocol": p["protocol"].as_str().unwrap_or("TCP"),
                       "port": pods.first().and_then(|pod| target_port(p, pod)).or(p["port"].as_i64())})
            })
            .collect();
        let mut subset = json!({"ports": eports});
        if !ready.is_empty() {
            subset["addresses"] = json!(ready);
        }
        if !not_ready.is_empty() {
            subset["notReadyAddresses"] = json!(not_ready);
        }
        let subsets = if pods.is_empty() {
            json!([])
        } else {
            json!([subset])
        };
        let (ns, name) = (obj::namespace(svc), obj::name(svc));
        match self.rt.client.get(kinds::ENDPOINTS, ns, name).await {
            Ok(cur) => {
                let mut cur = Arc::unwrap_or_clone(cur);
                if cur["subsets"] != subsets {
                    cur["subsets"] = subsets;
                    self.rt.client.update(kinds::ENDPOINTS, cur).await?;
                }
            }
            Err(ClientError::NotFound(_)) => {
                let mut e = json!({"apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": ns}, "subsets": subsets});
                if let Some(l) = svc["metadata"].get("labels") {
                    e["metadata"]["labels"] = l.clone();
                }
                match self.rt.client.create(kinds::ENDPOINTS, e).await {
                    Ok(_) | Err(ClientError::AlreadyExists(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

impl Reconciler for EndpointSliceController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
