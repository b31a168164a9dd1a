//! The admin endpoint of a running kemu (plain HTTP, on the bind host; its URL
//! is the ready line's `admin`), and the client the `kemu snapshot` and
//! `kemu reset` commands use.
//!
//! - `GET /kemu/snapshot`: the whole state as a state file (what
//!   `--restore FILE` reads).
//! - `POST /kemu/reset`: back to the start-up state (after `--restore`, the
//!   state directory's replay and fixtures): clusters created since are
//!   deleted and their listeners closed, deleted ones come back on their old
//!   ports, every store holds its start-up objects, watches end.
//! - `GET /kemu/requests?after=SEQ&cluster=NAME&status=4xx&api=eks`: the
//!   request log ([`kemu_shared::observe`]) after a sequence number, filtered;
//!   `wait=1` holds the answer until there is a record to give (up to 25 s),
//!   for `kemu requests --follow`.
//! - `GET /metrics`: every cluster's and facade's counters in Prometheus'
//!   text format, with a `cluster` label.
//! - `GET /kemu/ready`: the ready line (what `kemu env` builds its lines
//!   from); `GET /kemu/clusters`: every cluster of every cloud;
//!   `GET /kemu/kubeconfig?name=N[&cloud=C][&download=1]`: a cluster-admin
//!   kubeconfig (`download=1` answers it as an attachment).
//! - `GET /kemu/requests/stream?…`: the request log as server-sent events,
//!   one record per event (`id` its sequence number), the ring's records
//!   first, then each as it is made; `Last-Event-ID` resumes after one.
//! - The web dashboard ([`crate::dashboard`]) unless turned off.

use std::io::{Read, Write};
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, web};
use parking_lot::Mutex;
use serde_json::json;

use crate::Kemu;
use crate::persist::{self, ApplyMode, Persistence, PersistenceError, StateImage};

/// What the admin endpoint can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Reset was asked before start-up finished.
    #[error("kemu has not finished starting; nothing to reset to")]
    NotStarted,
    /// The state could not be put in place or logged.
    #[error(transparent)]
    Persistence(#[from] PersistenceError),
}

impl ResponseError for AdminError {
    fn status_code(&self) -> StatusCode {
        match self {
            AdminError::NotStarted => StatusCode::SERVICE_UNAVAILABLE,
            AdminError::Persistence(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code()).json(json!({ "error": self.to_string() }))
    }
}

/// The admin surface of one kemu.
#[derive(Debug)]
pub struct Admin {
    kemu: Kemu,
    persistence: Option<Persistence>,
    start: Mutex<Option<Arc<StateImage>>>,
    ready: Mutex<Option<crate::server::ReadyLine>>,
    resetting: Mutex<()>,
    dashboard: bool,
}

impl Admin {
    /// The admin surface of `kemu`, logging resets to `persistence` if set,
    /// with the web dashboard if `dashboard`.
    pub fn new(kemu: Kemu, persistence: Option<Persistence>, dashboard: bool) -> Self {
        Self {
            kemu,
            persistence,
            start: Mutex::new(None),
            ready: Mutex::new(None),
            resetting: Mutex::new(()),
            dashboard,
        }
    }

    /// The kemu it administers.
    pub fn kemu(&self) -> &Kemu {
        &self.kemu
    }

    /// Takes the current state as the one [`Admin::reset`] returns to. The
    /// binary calls it once start-up is complete, just before the ready line.
    pub fn mark_start(&self, ready: &crate::server::ReadyLine) {
        *self.start.lock() = Some(Arc::new(persist::capture(&self.kemu)));
        *self.ready.lock() = Some(ready.clone());
    }

    /// The whole state, as a state file.
    pub fn snapshot(&self) -> Vec<u8> {
        persist::encode(&persist::capture(&self.kemu), 0)
    }

    /// Returns kemu to its start-up state; says how many clusters and objects
    /// that is.
    pub fn reset(&self) -> Result<(usize, usize), AdminError> {
        let _one = self.resetting.lock();
        let start = self.start.lock().clone().ok_or(AdminError::NotStarted)?;
        persist::apply(&self.kemu, &start, ApplyMode::Reset)?;
        if let Some(p) = &self.persistence {
            p.record_cloud(&self.kemu);
        }
        Ok((
            self.kemu.registry().list(|_| true).len(),
            start.object_count(),
        ))
    }

    /// Mounts the admin routes.
    pub fn configure(self: &Arc<Self>, cfg: &mut web::ServiceConfig) {
        cfg.app_data(web::Data::from(self.clone()))
            .route("/kemu/snapshot", web::get().to(snapshot))
            .route("/kemu/reset", web::post().to(reset))
            .route("/kemu/requests", web::get().to(requests))
            .route("/kemu/requests/stream", web::get().to(request_stream))
            .route("/kemu/ready", web::get().to(ready))
            .route("/kemu/clusters", web::get().to(clusters))
            .route("/kemu/kubeconfig", web::get().to(kubeconfig))
            .route("/metrics", web::get().to(metrics));
        if self.dashboard {
            crate::dashboard::configure(cfg);
        }
    }
}

async fn snapshot(admin: web::Data<Admin>) -> HttpResponse {
    let body = web::block(move || admin.snapshot())
        .await
        .unwrap_or_default();
    HttpResponse::Ok()
        .content_type("application/x-ndjson")
        .body(body)
}

async fn reset(admin: web::Data<Admin>) -> Result<HttpResponse, AdminError> {
    let (clusters, objects) = admin.reset()?;
    Ok(HttpResponse::Ok().json(json!({ "reset": true, "clusters": clusters, "objects": objects })))
}

/// Which requests a `/kemu/requests` call asks for.
#[derive(Debug, Default, serde::Deserialize)]
pub struct RequestFilter {
    /// Only records after this sequence number.
    #[serde(default)]
    pub after: u64,
    /// Only this cluster's (by name).
    pub cluster: Option<String>,
    /// Only these codes: `404`, or a class such as `4xx`.
    pub status: Option<String>,
    /// Only this API's: `kubernetes`, `eks`, `gke`, `aks`.
    pub api: Option<String>,
    /// Wait for a record when there is none yet.
    #[serde(default)]
    pub wait: u8,
}

impl RequestFilter {
    /// Whether the record passes.
    pub fn matches(&self, r: &kemu_shared::observe::Record) -> bool {
        let status = r.status.to_string();
        self.cluster
            .as_deref()
            .is_none_or(|c| r.cluster.as_deref() == Some(c))
            && self.api.as_deref().is_none_or(|a| r.api == a)
            && self.status.as_deref().is_none_or(|want| {
                want.len() == 3
                    && want
                        .chars()
                        .zip(status.chars())
                        .all(|(w, s)| w == 'x' || w == 'X' || w == s)
            })
    }
}

async fn requests(admin: web::Data<Admin>, filter: web::Query<RequestFilter>) -> HttpResponse {
    let observer = admin.kemu.registry().observer();
    let pick = || -> Vec<kemu_shared::observe::Record> {
        observer
            .since(filter.after)
            .into_iter()
            .filter(|r| filter.matches(r))
            .collect()
    };
    let mut found = pick();
    if found.is_empty() && filter.wait > 0 {
        // A follower's long poll: the next record, or an empty answer.
        let deadline = admin.kemu.clock().sleep(std::time::Duration::from_secs(25));
        tokio::pin!(deadline);
        while found.is_empty() {
            let appended = observer.appended();
            tokio::pin!(appended);
            appended.as_mut().enable();
            found = pick();
            if !found.is_empty() {
                break;
            }
            tokio::select! {
                () = appended => found = pick(),
                () = &mut deadline => break,
            }
        }
    }
    HttpResponse::Ok().json(found)
}

/// How often an idle request stream sends a comment, so a browser that went
/// away is noticed.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

async fn request_stream(
    admin: web::Data<Admin>,
    req: actix_web::HttpRequest,
    filter: web::Query<RequestFilter>,
) -> HttpResponse {
    let mut after = filter.after;
    if let Some(last) = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
    {
        after = after.max(last);
    }
    let filter = filter.into_inner();
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let kemu = admin.kemu.clone();
    actix_rt::spawn(async move {
        let observer = kemu.registry().observer();
        loop {
            let appended = observer.appended();
            tokio::pin!(appended);
            appended.as_mut().enable();
            let found = observer.since(after);
            if let Some(last) = found.last() {
                after = last.seq;
            }
            for r in found.iter().filter(|r| filter.matches(r)) {
                let data = serde_json::to_string(r).unwrap_or_default();
                let ev = bytes::Bytes::from(format!("id: {}\ndata: {data}\n\n", r.seq));
                if tx.send(ev).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                () = appended => {}
                () = kemu.clock().sleep(HEARTBEAT) => {
                    if tx.send(bytes::Bytes::from_static(b": idle\n\n")).await.is_err() {
                        return;
                    }
                }
                () = tx.closed() => return,
            }
        }
    });
    crate::dashboard::event_stream(rx)
}

async fn ready(admin: web::Data<Admin>) -> HttpResponse {
    match admin.ready.lock().clone() {
        Some(r) => HttpResponse::Ok().json(r),
        None => AdminError::NotStarted.error_response(),
    }
}

/// One cluster as `kemu clusters` lists it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ClusterRow {
    /// `eks`, `gke` or `aks`.
    pub cloud: String,
    /// Its name.
    pub name: String,
    /// Account and region, project and location, or subscription, group
    /// and location.
    pub scope: String,
    /// `PROVISIONING`, `RUNNING`, …
    pub state: String,
    /// Kubernetes minor.
    pub version: String,
    /// Its API server's URL (empty while it has none).
    pub endpoint: String,
    /// The kubeconfig a fixture wrote for it, if one did.
    pub kubeconfig: String,
    /// Its node groups, node pools or agent pools.
    #[serde(default, rename = "nodePools")]
    pub node_pools: Vec<PoolRow>,
}

/// One node pool of a [`ClusterRow`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PoolRow {
    /// Its name.
    pub name: String,
    /// How many Nodes it has.
    pub count: u32,
    /// Instance type, machine type or VM size.
    pub machine_type: String,
}

/// A cloud as the admin API and its URLs name it: `eks`, `gke`, `aks`.
pub(crate) fn cloud_name(c: kemu_shared::Cloud) -> String {
    format!("{c:?}").to_ascii_lowercase()
}

fn rows(admin: &Admin) -> Vec<ClusterRow> {
    let ready = admin.ready.lock().clone();
    admin
        .kemu
        .registry()
        .list(|_| true)
        .into_iter()
        .map(|c| {
            let cloud = cloud_name(c.cloud());
            let scope = match &c.scope {
                kemu_shared::OwnerScope::Eks { account, region } => format!("{account}/{region}"),
                kemu_shared::OwnerScope::Gke { project, location } => {
                    format!("{project}/{location}")
                }
                kemu_shared::OwnerScope::Aks {
                    subscription,
                    resource_group,
                    location,
                } => format!("{subscription}/{resource_group}/{location}"),
            };
            let kubeconfig = ready
                .as_ref()
                .and_then(|r| {
                    r.clusters
                        .iter()
                        .find(|l| l.cloud == cloud && l.name == c.name)
                })
                .map(|l| l.kubeconfig.clone())
                .unwrap_or_default();
            ClusterRow {
                endpoint: kemu_shared::advertise(&c).server_url().unwrap_or_default(),
                state: format!("{:?}", c.lifecycle).to_ascii_uppercase(),
                node_pools: c
                    .node_pools
                    .iter()
                    .map(|p| PoolRow {
                        name: p.name.clone(),
                        count: p.count,
                        machine_type: p.machine_type.clone(),
                    })
                    .collect(),
                version: c.version.clone(),
                name: c.name,
                cloud,
                scope,
                kubeconfig,
            }
        })
        .collect()
}

async fn clusters(admin: web::Data<Admin>) -> HttpResponse {
    HttpResponse::Ok().json(rows(&admin))
}

/// Which cluster a kubeconfig is asked for.
#[derive(Debug, serde::Deserialize)]
struct KubeconfigQuery {
    name: String,
    cloud: Option<String>,
    #[serde(default)]
    download: u8,
}

async fn kubeconfig(admin: web::Data<Admin>, q: web::Query<KubeconfigQuery>) -> HttpResponse {
    let kemu = &admin.kemu;
    let found: Vec<_> = kemu
        .registry()
        .list(|c| {
            c.name == q.name
                && q.cloud
                    .as_deref()
                    .is_none_or(|want| cloud_name(c.cloud()) == want)
        })
        .into_iter()
        .collect();
    let text = |code: StatusCode, body: String| {
        HttpResponse::build(code)
            .content_type("text/plain; charset=utf-8")
            .body(body)
    };
    let record = match found.as_slice() {
        [one] => one,
        [] => {
            return text(
                StatusCode::NOT_FOUND,
                format!("no cluster named {}\n", q.name),
            );
        }
        _ => {
            return text(
                StatusCode::CONFLICT,
                format!(
                    "more than one cluster is named {}: say which cloud with --cloud\n",
                    q.name
                ),
            );
        }
    };
    let advertised = kemu_shared::advertise(record);
    let (Some(server), Some(ca)) = (advertised.server_url(), advertised.ca_pem()) else {
        let why = if matches!(record.serving, kemu_shared::Serving::Disabled) {
            "kemu runs with --no-dataplane: start it without that flag to serve clusters".to_owned()
        } else {
            format!("state {:?}: ask again once it is running", record.lifecycle)
        };
        return text(
            StatusCode::CONFLICT,
            format!("cluster {} has no API server ({why})\n", record.name),
        );
    };
    let user = "kemu-admin";
    let cert = match record
        .ca
        .client_cert(user, &["system:masters".into()], kemu.clock().now())
    {
        Ok(c) => c,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    };
    let context = format!("{}-{}", cloud_name(record.cloud()), record.name);
    let body = kemu_shared::kubeconfig::render(
        &context,
        &server,
        ca,
        user,
        &kemu_shared::kubeconfig::UserAuth::ClientCert {
            cert_pem: cert.cert_pem,
            key_pem: cert.key_pem,
        },
    );
    let mut answer = HttpResponse::Ok();
    answer.content_type("application/yaml");
    if q.download > 0 {
        answer.insert_header((
            "content-disposition",
            format!("attachment; filename=\"{context}.kubeconfig\""),
        ));
    }
    answer.body(body)
}

async fn metrics(admin: web::Data<Admin>) -> HttpResponse {
    use std::fmt::Write as _;
    let kemu = &admin.kemu;
    let mut out = String::new();
    let observer = kemu.registry().observer();
    observer.render_requests(None, &mut out);
    observer.render_facades(&mut out);
    let clusters = kemu.registry().list(|_| true);
    out.push_str(
        "# HELP kemu_clusters Clusters kemu holds, by cloud.\n# TYPE kemu_clusters gauge\n",
    );
    for cloud in ["eks", "gke", "aks"] {
        let n = clusters
            .iter()
            .filter(|c| cloud_name(c.cloud()) == cloud)
            .count();
        let _ = writeln!(out, "kemu_clusters{{cloud=\"{cloud}\"}} {n}");
    }
    if let Some(dp) = kemu.dataplane() {
        let contexts: Vec<_> = clusters
            .iter()
            .map(|c| kemu_dataplane::engine::ClusterContext {
                id: c.id.clone(),
                name: c.name.clone(),
            })
            .collect();
        kemu_dataplane::api::observe::render(dp.engine(), &contexts, true, &mut out);
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(out)
}

/// A query value, percent-encoded.
pub fn query_escape(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How `kemu requests` prints records: aligned columns (a header once), or
/// JSON lines.
#[derive(Debug)]
pub struct RequestTable {
    json: bool,
    header: bool,
}

impl RequestTable {
    /// A printer; `json` for JSON lines.
    pub fn new(json: bool) -> Self {
        Self {
            json,
            header: false,
        }
    }

    /// Prints records to stdout.
    pub fn print(&mut self, records: &[kemu_shared::observe::Record]) {
        let mut out = std::io::stdout().lock();
        for r in records {
            if self.json {
                let _ = writeln!(out, "{}", serde_json::to_string(r).unwrap_or_default());
                continue;
            }
            if !self.header {
                let _ = writeln!(
                    out,
                    "{:<24} {:<10} {:<16} {:<28} {:<22} {:<40} {:>6} {:>9}  REASON",
                    "TIME", "API", "CLUSTER", "CALLER", "VERB", "RESOURCE", "STATUS", "LATENCY",
                );
                self.header = true;
            }
            let _ = writeln!(
                out,
                "{:<24} {:<10} {:<16} {:<28} {:<22} {:<40} {:>6} {:>7.1}ms  {}",
                r.time,
                r.api,
                r.cluster.as_deref().unwrap_or("-"),
                r.caller.as_deref().unwrap_or("-"),
                r.verb,
                r.resource.as_deref().unwrap_or(&r.path),
                r.status,
                r.latency_ms,
                r.reason.as_deref().unwrap_or("")
            );
        }
        let _ = out.flush();
    }
}

/// What talking to a running kemu's admin endpoint can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not `http://host:port`.
    #[error("admin URL {0:?}: expected http://HOST:PORT (the ready line's `admin`)")]
    Url(String),
    /// The connection failed.
    #[error("admin endpoint {url}: {source}")]
    Io {
        /// The admin URL.
        url: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The answer is not HTTP, or an error.
    #[error("admin endpoint {url}: {message}")]
    Answer {
        /// The admin URL.
        url: String,
        /// Status and body, or what is wrong with the answer.
        message: String,
    },
}

/// Sends `METHOD path` to the admin endpoint at `url` and returns the body of
/// a 2xx answer. Plain HTTP/1.1 over loopback: no client library needed.
pub fn call(url: &str, method: &str, path: &str) -> Result<Vec<u8>, ClientError> {
    let authority = url
        .strip_prefix("http://")
        .map(|a| a.trim_end_matches('/'))
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .ok_or_else(|| ClientError::Url(url.to_owned()))?;
    let err = |source| ClientError::Io {
        url: url.to_owned(),
        source,
    };
    let mut stream = std::net::TcpStream::connect(authority).map_err(err)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(err)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(err)?;
    let answer = |message: String| ClientError::Answer {
        url: url.to_owned(),
        message,
    };
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| answer("no HTTP header in the answer".into()))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut body = raw[split + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| answer(format!("not an HTTP status line: {head}")))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        body = dechunk(&body).ok_or_else(|| answer("bad chunked body".into()))?;
    }
    if !(200..300).contains(&status) {
        return Err(answer(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    Ok(body)
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_decode() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_none());
    }

    #[test]
    fn urls_must_be_plain_http() {
        assert!(matches!(
            call("https://x:1", "GET", "/"),
            Err(ClientError::Url(_))
        ));
        assert!(matches!(
            call("http://", "GET", "/"),
            Err(ClientError::Url(_))
        ));
    }
}
