//! What a cluster's API tells of itself: every request recorded in kemu's
//! request log ([`kemu_shared::observe`]) with its verb, resource, caller,
//! status and latency, counted under kube-apiserver's metric names; and the
//! cluster's own `GET /metrics` in Prometheus' text format, to a caller RBAC
//! lets `get` that path (`system:monitoring`, cluster admins), as
//! kube-apiserver serves it.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use kemu_shared::observe::{Record, Refusal, RequestLabels};
use kemu_shared::{SystemClock, UserInfo};

use crate::api::request::group_resource;
use crate::authz::Attributes;
use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;

/// Records the request once it is answered (the head of a watch or stream).
pub async fn record(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = SystemClock::instant();
    let (Some(engine), Some(cluster)) = (
        req.app_data::<web::Data<Engine>>().cloned(),
        req.app_data::<web::Data<ClusterContext>>()
            .map(|c| (**c).clone()),
    ) else {
        return next.call(req).await;
    };
    let arrived = engine.registry().clock().now();
    let attributes = crate::authz::from_request(
        UserInfo::default(),
        req.method().as_str(),
        req.path(),
        req.query_string(),
    );
    let apply = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/apply-patch"));
    let (method, path) = (req.method().to_string(), req.path().to_owned());
    let result = next.call(req).await;
    let (status, caller, reason) = match &result {
        Ok(res) => (
            res.status().as_u16(),
            res.request()
                .extensions()
                .get::<UserInfo>()
                .map(|u| u.username.clone()),
            res.response()
                .extensions()
                .get::<Refusal>()
                .map(|r| r.0.clone())
                .or_else(|| {
                    // An answer written elsewhere: the reason its code has.
                    let code = res.status();
                    (code.is_client_error() || code.is_server_error())
                        .then(|| code.canonical_reason())
                        .flatten()
                        .map(str::to_owned)
                }),
        ),
        Err(e) => (
            e.as_response_error().status_code().as_u16(),
            None,
            Some(e.to_string()),
        ),
    };
    let resource = attributes.resource_request.then(|| {
        let gr = if attributes.api_group.is_empty() {
            attributes.resource.clone()
        } else {
            format!("{}.{}", attributes.resource, attributes.api_group)
        };
        match attributes.subresource.as_str() {
            "" => gr,
            sub => format!("{gr}/{sub}"),
        }
    });
    let record = Record {
        seq: 0,
        time: arrived.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        api: "kubernetes".into(),
        cluster: Some(cluster.name.clone()),
        caller,
        method,
        path,
        verb: attributes.verb.clone(),
        resource,
        status,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        reason,
    };
    let observer = engine.registry().observer();
    if attributes.resource_request {
        observer.kubernetes(record, labels(&attributes, &cluster, apply));
    } else {
        observer.log(record);
    }
    result
}

/// kube-apiserver's labels for a resource request (`CleanVerb`,
/// `CleanScope`).
fn labels(a: &Attributes, cluster: &ClusterContext, apply: bool) -> RequestLabels {
    let connect = matches!(
        a.subresource.as_str(),
        "exec" | "attach" | "portforward" | "proxy"
    );
    let verb = match a.verb.as_str() {
        _ if connect => "CONNECT",
        "list" => "LIST",
        "watch" => "WATCH",
        "get" => "GET",
        "create" => "POST",
        "update" => "PUT",
        "patch" if apply => "APPLY",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        other => return labels_of(a, cluster, &other.to_ascii_uppercase()),
    };
    labels_of(a, cluster, verb)
}

fn labels_of(a: &Attributes, cluster: &ClusterContext, verb: &str) -> RequestLabels {
    let scope = if !a.name.is_empty() || a.verb == "create" {
        "resource"
    } else if !a.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    RequestLabels {
        cluster_id: cluster.id.clone(),
        cluster: cluster.name.clone(),
        verb: verb.to_owned(),
        group: a.api_group.clone(),
        version: a.api_version.clone(),
        resource: a.resource.clone(),
        subresource: a.subresource.clone(),
        scope: scope.to_owned(),
    }
}

/// A `workqueue_*` family: name, type, help, and its value of a queue.
type QueueFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&crate::controllers::runtime::QueueStats) -> u64,
);

/// The gauges and counters of `clusters`' stores and controllers, one family
/// after another (Prometheus' text format keeps a family's samples together):
/// `apiserver_storage_objects`, `kemu_watchers` (open watches per resource)
/// and client-go's `workqueue_depth`, `workqueue_adds_total` and
/// `workqueue_retries_total` per controller. `labelled` adds a `cluster`
/// label (the admin endpoint's view of every cluster).
pub fn render(engine: &Engine, clusters: &[ClusterContext], labelled: bool, out: &mut String) {
    use std::fmt::Write as _;
    let label = |cluster: &ClusterContext| {
        if labelled {
            format!(
                "cluster=\"{}\",",
                kemu_shared::observe::escape(&cluster.name)
            )
        } else {
            String::new()
        }
    };
    out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n");
    for cluster in clusters {
        let Some(store) = engine.store(&cluster.id) else {
            continue;
        };
        let mut resources: Vec<String> = engine
            .resources_of(&cluster.id)
            .all()
            .iter()
            .map(|rt| group_resource(rt))
            .collect();
        resources.sort();
        resources.dedup();
        let l = label(cluster);
        for r in resources {
            let n = store.snapshot(&r).objects.len();
            let _ = writeln!(out, "apiserver_storage_objects{{{l}resource=\"{r}\"}} {n}");
        }
    }
    out.push_str("# HELP kemu_watchers Open watches on the store, by resource (controllers' informers included).\n# TYPE kemu_watchers gauge\n");
    for cluster in clusters {
        let l = label(cluster);
        for (r, n) in engine.watchers(&cluster.id) {
            let _ = writeln!(out, "kemu_watchers{{{l}resource=\"{r}\"}} {n}");
        }
    }
    let queues: Vec<_> = clusters
        .iter()
        .map(|c| (label(c), engine.queue_stats(&c.id)))
        .collect();
    let families: [QueueFamily; 3] = [
        (
            "workqueue_depth",
            "gauge",
            "Current depth of workqueue",
            |q| q.depth as u64,
        ),
        (
            "workqueue_adds_total",
            "counter",
            "Total number of adds handled by workqueue",
            |q| q.adds,
        ),
        (
            "workqueue_retries_total",
            "counter",
            "Total number of retries handled by workqueue",
            |q| q.retries,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (l, stats) in &queues {
            for q in stats {
                let _ = writeln!(out, "{name}{{{l}name=\"{}\"}} {}", q.name, value(q));
            }
        }
    }
}

/// `GET /metrics` of one cluster.
pub async fn metrics(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let mut out = String::new();
    engine
        .registry()
        .observer()
        .render_requests(Some(&cluster.id), &mut out);
    render(&engine, std::slice::from_ref(&**cluster), false, &mut out);
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(out))
}
