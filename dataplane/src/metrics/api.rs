//! `metrics.k8s.io/v1beta1`, answered by the engine as metrics-server answers
//! through the aggregation layer: `nodes` (NodeMetrics) and `pods`
//! (PodMetrics), get and list, with label and field selectors. The usage is
//! computed from the store on each request ([`usage`](super::usage)), so it
//! follows Pods and annotations at once.

use std::collections::HashMap;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::usage::{self, Overrides};
use crate::api::request::{self, Output, Params};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::table;
use crate::controllers::obj;
use crate::engine::{ClusterContext, Engine};
use crate::error::{ApiError, Target};
use crate::store::{ObjectKey, Store};

/// The group-version served.
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";
const GROUP: &str = "metrics.k8s.io";

/// Which objects a request names.
#[derive(Debug, PartialEq, Eq)]
enum Path {
    Nodes(Option<String>),
    Pods {
        namespace: Option<String>,
        name: Option<String>,
    },
}

fn parse(path: &str) -> Result<Path, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let own = |s: &&str| Some((*s).to_owned());
    Ok(match segs.as_slice() {
        ["nodes"] => Path::Nodes(None),
        ["nodes", n] => Path::Nodes(own(n)),
        ["pods"] => Path::Pods {
            namespace: None,
            name: None,
        },
        ["namespaces", ns, "pods"] => Path::Pods {
            namespace: own(ns),
            name: None,
        },
        ["namespaces", ns, "pods", n] => Path::Pods {
            namespace: own(ns),
            name: own(n),
        },
        _ => return Err(ApiError::NotFound),
    })
}

/// The store resource of an owner kind, for usage annotations on workloads.
fn owner_resource(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ReplicaSet" => "replicasets.apps",
        "Deployment" => "deployments.apps",
        "StatefulSet" => "statefulsets.apps",
        "DaemonSet" => "daemonsets.apps",
        "Job" => "jobs.batch",
        "CronJob" => "cronjobs.batch",
        _ => return None,
    })
}

/// The usage of every container of `pod`, reading overrides from its owners.
pub fn pod_usage(store: &dyn Store, pod: &Value) -> Vec<usage::ContainerUsage> {
    let lookup = |kind: &str, ns: &str, name: &str| {
        let resource = owner_resource(kind)?;
        store
            .get(&ObjectKey::new(resource, ns, name))
            .map(|o| (*o).clone())
    };
    usage::containers(pod, &Overrides::of(pod, &lookup))
}

fn not_found(kind: &str, name: &str) -> ApiError {
    ApiError::ObjectNotFound(Target {
        name: name.to_owned(),
        group: GROUP.into(),
        kind: kind.into(),
    })
}

fn pod_metrics(store: &dyn Store, pod: &Value, ts: &str) -> Value {
    let containers: Vec<Value> = pod_usage(store, pod)
        .into_iter()
        .map(|c| {
            json!({"name": c.name, "usage": {"cpu": usage::fmt_cpu(c.cpu_milli), "memory": usage::fmt_memory(c.memory_bytes)}})
        })
        .collect();
    let mut meta =
        json!({"name": obj::name(pod), "namespace": obj::namespace(pod), "creationTimestamp": ts});
    if let Some(l) = pod["metadata"].get("labels") {
        meta["labels"] = l.clone();
    }
    json!({"kind": "PodMetrics", "apiVersion": API_VERSION, "metadata": meta,
           "timestamp": ts, "window": "15s", "containers": containers})
}

fn node_metrics(node: &Value, used: (i128, i128), ts: &str) -> Value {
    let mut meta = json!({"name": obj::name(node), "creationTimestamp": ts});
    if let Some(l) = node["metadata"].get("labels") {
        meta["labels"] = l.clone();
    }
    json!({"kind": "NodeMetrics", "apiVersion": API_VERSION, "metadata": meta,
           "timestamp": ts, "window": "20s",
           "usage": {"cpu": usage::fmt_cpu(used.0), "memory": usage::fmt_memory(used.1)}})
}

/// Every `GET` under `/apis/metrics.k8s.io/v1beta1/`.
pub async fn dispatch(
    req: HttpRequest,
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let path = parse(req.match_info().get("path").unwrap_or_default())?;
    let store = engine
        .store(&cluster.id)
        .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
    let params = Params::parse(req.query_string())?;
    let output = request::negotiate(&req, &params)?;
    let plural = match path {
        Path::Nodes(_) => "nodes",
        Path::Pods { .. } => "pods",
    };
    let rt = engine
        .resources()
        .lookup(GROUP, "v1beta1", plural)
        .ok_or(ApiError::NotFound)?;
    let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse(
        params.get("fieldSelector").unwrap_or_default(),
        &rt.group,
        &rt.kind,
    )?;
    let now = engine.registry().clock().now();
    let ts = obj::fmt_time(now);
    let store = store.as_ref();
    let (single, items): (bool, Vec<Value>) = match path {
        Path::Pods { namespace, name } => {
            let snapshot = store.snapshot("pods");
            let pods = snapshot
                .iter(namespace.as_deref(), None)
                .map(|(_, p)| p)
                .filter(|p| usage::reported(p))
                .filter(|p| name.as_deref().is_none_or(|n| n == obj::name(p)));
            let items: Vec<Value> = pods
                .filter(|p| labels.selects(p) && fields.matches(p))
                .map(|p| pod_metrics(store, &p, &ts))
                .collect();
            if let Some(n) = &name
                && items.is_empty()
            {
                return Err(not_found("pods", n));
            }
            (name.is_some(), items)
        }
        Path::Nodes(name) => {
            let mut per_node: HashMap<String, (i128, i128)> = HashMap::new();
            let pods = store.snapshot("pods");
            for (_, p) in pods.iter(None, None) {
                if !usage::reported(&p) {
                    continue;
                }
                let node = p["spec"]["nodeName"].as_str().unwrap_or_default();
                let e = per_node.entry(node.to_owned()).or_default();
                for c in pod_usage(store, &p) {
                    e.0 += c.cpu_milli;
                    e.1 += c.memory_bytes;
                }
            }
            let nodes = store.snapshot("nodes");
            let items: Vec<Value> = nodes
                .iter(None, None)
                .map(|(_, n)| n)
                .filter(|n| name.as_deref().is_none_or(|want| want == obj::name(n)))
                .filter(|n| labels.selects(n) && fields.matches(n))
                .map(|n| {
                    let pods = per_node.get(obj::name(&n)).copied();
                    node_metrics(&n, usage::node(pods.into_iter()), &ts)
                })
                .collect();
            if let Some(n) = &name
                && items.is_empty()
            {
                return Err(not_found("nodes", n));
            }
            (name.is_some(), items)
        }
    };
    let meta = json!({"resourceVersion": ""});
    match output {
        Output::Table(include) => {
            Ok(HttpResponse::Ok().json(table::render(&rt, &items, include, meta, now)))
        }
        // The metrics API answers whole objects to a metadata-only Accept.
        Output::Json | Output::Metadata(_) if single => Ok(HttpResponse::Ok().json(&items[0])),
        Output::Json | Output::Metadata(_) => Ok(HttpResponse::Ok().json(json!({
            "kind": rt.list_kind, "apiVersion": API_VERSION, "metadata": {}, "items": items,
        }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse("nodes").unwrap(), Path::Nodes(None));
        assert_eq!(
            parse("namespaces/d/pods/web").unwrap(),
            Path::Pods {
                namespace: Some("d".into()),
                name: Some("web".into())
            }
        );
        assert!(parse("namespaces/d/deployments").is_err());
    }
}
