//! The web dashboard on the admin endpoint: the bundle built from
//! `dashboard/` (Preact, by Vite; `scripts/dashboard` rebuilds `dist/`),
//! embedded in the binary, and the one relay it needs beyond the admin API.
//!
//! - `GET /`, `GET /assets/…`: the bundle.
//! - `GET /kemu/clusters/{cloud}/{name}/watch`: server-sent events carrying
//!   the cluster's namespaces, Nodes, Pods, workloads and Events as its own
//!   Kubernetes API lists and watches them. The relay calls the cluster's
//!   HTTPS listener with a client certificate for `kemu-dashboard` (so those
//!   calls show in the request log as that caller); it never reads a store.
//!
//! Each event's data is one JSON object: `{"resource":R,"type":"RESET",
//! "items":[…],"truncated":bool}` after each list, `{"resource":R,"type":
//! "ADDED"|"MODIFIED"|"DELETED","object":{…}}` per watch event, and
//! `{"type":"ERROR","message":…}` while the cluster cannot be reached.

use std::convert::Infallible;
use std::time::Duration;

use actix_web::{HttpResponse, web};
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Kemu;
use crate::admin::Admin;
use crate::cluster_client::ClusterClient;

/// The embedded bundle: path, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_bytes!("../dashboard/dist/index.html"),
    ),
    (
        "/assets/app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../dashboard/dist/assets/app.js"),
    ),
    (
        "/assets/index.css",
        "text/css; charset=utf-8",
        include_bytes!("../dashboard/dist/assets/index.css"),
    ),
];

/// What the relay lists and watches: the event's `resource`, and its
/// cluster-wide collection path.
const RESOURCES: &[(&str, &str)] = &[
    ("namespaces", "/api/v1/namespaces"),
    ("nodes", "/api/v1/nodes"),
    ("pods", "/api/v1/pods"),
    ("events", "/api/v1/events"),
    ("deployments", "/apis/apps/v1/deployments"),
    ("statefulsets", "/apis/apps/v1/statefulsets"),
    ("daemonsets", "/apis/apps/v1/daemonsets"),
    ("jobs", "/apis/batch/v1/jobs"),
];

/// Objects a list hands the browser at most, per resource.
const LIST_LIMIT: usize = 5000;

/// How long the relay waits before it lists again after a failure.
const RETRY: Duration = Duration::from_secs(2);

/// The user the relay's certificate names.
const USER: &str = "kemu-dashboard";

/// Mounts the bundle and the relay.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for (path, _, _) in ASSETS {
        cfg.route(path, web::get().to(asset));
    }
    cfg.route("/kemu/clusters/{cloud}/{name}/watch", web::get().to(watch));
}

async fn asset(req: actix_web::HttpRequest) -> HttpResponse {
    match ASSETS.iter().find(|(p, _, _)| *p == req.path()) {
        Some((_, content_type, body)) => HttpResponse::Ok()
            .content_type(*content_type)
            .insert_header(("cache-control", "no-cache"))
            .body(*body),
        None => HttpResponse::NotFound().finish(),
    }
}

/// One server-sent event carrying `data`.
pub fn event(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// A server-sent event response fed by `rx`.
pub fn event_stream(rx: mpsc::Receiver<Bytes>) -> HttpResponse {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(stream)
}

async fn watch(admin: web::Data<Admin>, path: web::Path<(String, String)>) -> HttpResponse {
    let (cloud, name) = path.into_inner();
    let kemu = admin.kemu().clone();
    let found: Vec<_> = kemu
        .registry()
        .list(|c| c.name == name && crate::admin::cloud_name(c.cloud()) == cloud);
    let Some(record) = found.into_iter().next() else {
        return HttpResponse::NotFound()
            .json(json!({ "error": format!("no {cloud} cluster named {name}") }));
    };
    let (tx, rx) = mpsc::channel(256);
    for (resource, path) in RESOURCES {
        let relay = Relay {
            kemu: kemu.clone(),
            id: record.id.clone(),
            resource,
            path,
            tx: tx.clone(),
        };
        actix_rt::spawn(relay.run());
    }
    event_stream(rx)
}

/// Lists and watches one resource of one cluster for one browser.
struct Relay {
    kemu: Kemu,
    id: kemu_shared::ClusterId,
    resource: &'static str,
    path: &'static str,
    tx: mpsc::Sender<Bytes>,
}

/// Why a relay stops its current list and watch.
enum Stop {
    /// The browser went away.
    Gone,
    /// Something failed: say so, wait, list again.
    Failed(String),
    /// The watch ended (timeout, 410): list again at once.
    Ended,
}

impl Relay {
    async fn run(self) {
        loop {
            let stop = tokio::select! {
                stop = self.once() => stop,
                () = self.tx.closed() => Stop::Gone,
            };
            match stop {
                Stop::Gone => return,
                Stop::Ended => {}
                Stop::Failed(message) => {
                    let e = event(
                        &json!({ "type": "ERROR", "resource": self.resource, "message": message }),
                    );
                    if self.tx.send(e).await.is_err() {
                        return;
                    }
                    tokio::select! {
                        () = self.kemu.clock().sleep(RETRY) => {}
                        () = self.tx.closed() => return,
                    }
                }
            }
        }
    }

    /// One list, then its watch until it ends.
    async fn once(&self) -> Stop {
        let (client, server) = match self.client() {
            Ok(c) => c,
            Err(e) => return Stop::Failed(e),
        };
        let url = format!("{server}{}", self.path);
        let list = match client
            .get(format!("{url}?limit={LIST_LIMIT}"))
            .header("accept", "application/json")
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r.json::<Value>().await,
            Ok(r) => return Stop::Failed(format!("{}: HTTP {}", self.path, r.status())),
            Err(e) => return Stop::Failed(format!("{}: {e}", self.path)),
        };
        let Ok(mut list) = list else {
            return Stop::Failed(format!("{}: the list is not JSON", self.path));
        };
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let truncated = list["metadata"]["continue"]
            .as_str()
            .is_some_and(|c| !c.is_empty());
        let reset = json!({
            "resource": self.resource,
            "type": "RESET",
            "items": list["items"].take(),
            "truncated": truncated,
        });
        if self.tx.send(event(&reset)).await.is_err() {
            return Stop::Gone;
        }
        let resp = match client
            .get(format!(
                "{url}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
            ))
            .header("accept", "application/json")
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => return Stop::Failed(format!("{} watch: HTTP {}", self.path, r.status())),
            Err(e) => return Stop::Failed(format!("{} watch: {e}", self.path)),
        };
        let mut body = resp.bytes_stream();
        let mut pending = Vec::new();
        while let Some(chunk) = body.next().await {
            let Ok(chunk) = chunk else {
                return Stop::Ended;
            };
            pending.extend_from_slice(&chunk);
            while let Some(eol) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=eol).collect();
                let Ok(mut ev) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                match ev["type"].as_str() {
                    Some("ADDED" | "MODIFIED" | "DELETED") => {
                        let out = json!({
                            "resource": self.resource,
                            "type": ev["type"].take(),
                            "object": ev["object"].take(),
                        });
                        if self.tx.send(event(&out)).await.is_err() {
                            return Stop::Gone;
                        }
                    }
                    Some("ERROR") => return Stop::Ended,
                    _ => {}
                }
            }
        }
        Stop::Ended
    }

    /// A client of the cluster's listener as it is now (its port and CA are
    /// read each time: a reset or a restore may have moved them).
    fn client(&self) -> Result<(reqwest::Client, String), String> {
        let record = self
            .kemu
            .registry()
            .get(&self.id)
            .map_err(|e| e.to_string())?;
        let c = ClusterClient::admin(&self.kemu, &record, USER).map_err(|e| e.to_string())?;
        Ok((c.http, c.server))
    }
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    #[test]
    fn every_built_file_is_embedded() {
        let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dashboard/dist");
        let mut built = Vec::new();
        let mut dirs = vec![dist.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(&dist).unwrap().display().to_string();
                    built.push(if rel == "index.html" {
                        "/".to_owned()
                    } else {
                        format!("/{rel}")
                    });
                }
            }
        }
        built.sort();
        let mut embedded: Vec<_> = ASSETS.iter().map(|(p, _, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(built, embedded);
    }
}
