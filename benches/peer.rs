//! Peer benchmark: kemu's engine beside a real kube-apiserver 1.34.4 + etcd
//! 3.5, in the same run on the same machine. Prints one table, asserts nothing.
//!
//! The upstream is started by `scripts/upstream start` into a temporary
//! directory (stopped at the end, also on a panic); it needs
//! `scripts/upstream build-apiserver` to have been run once.
//!
//! One client code path (`workload`) measures both targets, each reached over
//! HTTPS with an admin client certificate (kemu: an in-process cluster built as
//! `benches/engine.rs` builds it; upstream: the script's kubeconfig):
//! - creates/s of ConfigMaps, then gets/s of one ConfigMap (16 in flight,
//!   5,000 each, after 200 unmeasured gets),
//! - a list of 10,000 ConfigMaps in their own namespace (p50/p99 of 30 lists),
//! - watch event latency with 100 watchers on one namespace, each its own
//!   client and connection: 50 creates 20 ms apart, each timed from just
//!   before its POST is sent to its event line being read on each watcher
//!   (p50/p99 over all 5,000 deliveries).
//!
//! The requests are HTTP/2 on both (ALPN); the bench allocates with mimalloc,
//! as the `kemu` binary does. The upstream runs without a controller manager;
//! the kemu cluster runs its controllers (its root-CA publisher adds one
//! ConfigMap to each namespace).
//!
//! Start-up and memory, per target:
//! - kemu in process: `Kemu::builder().build()` + cluster create → first
//!   `/version` answered over TLS (median of 10).
//! - kemu as a process: the release `kemu` binary spawned on free ports with a
//!   one-EKS-cluster fixture (checked in a throwaway kemu, created through the
//!   EKS facade, kubeconfig written) → that cluster's first TLS `/version`;
//!   then, after 5 s idle, the process's VmRSS (median of 3).
//! - upstream: etcd and kube-apiserver spawned by this bench with exactly the
//!   command lines `scripts/upstream start` gave them (read from /proc; fresh
//!   ports, data and cert dirs, the script's certificates): etcd spawned →
//!   `/health` ok → kube-apiserver spawned → `/readyz` 200, both polled every
//!   10 ms; then, after 5 s idle, VmRSS of etcd + kube-apiserver (median of 3).
//!   The script's own time (openssl PKI, 0.5 s polls) is printed beside it.
//!
//! Run with `cargo bench --bench peer` (builds in release).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use kemu::SystemClock;
use kemu::shared::{ClusterSpec, OwnerScope, advertise};
use parking_lot::Mutex;
use serde_json::{Value, json};

// As the `kemu` binary runs (src/main.rs): the in-process engine measured
// here allocates as the shipped one does.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CONCURRENCY: usize = 16;
/// Creates, and gets, per target.
const REQUESTS: usize = 5000;
const WARM_GETS: usize = 200;
const LIST_OBJECTS: usize = 10_000;
const LISTS: usize = 30;
const WATCHERS: usize = 100;
const EVENTS: usize = 50;
const IN_PROCESS_STARTS: usize = 10;
const PROCESS_STARTS: usize = 3;
/// Idle time after start-up before the RSS is read.
const SETTLE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(10);
const READY_TIMEOUT: Duration = Duration::from_secs(180);

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn median<T: Copy + PartialOrd>(v: &[T]) -> T {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

async fn rate<F, Fut>(n: usize, f: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = SystemClock::instant();
    let mut inflight = FuturesUnordered::new();
    for i in 0..n {
        inflight.push(f(i));
        if inflight.len() >= CONCURRENCY {
            inflight.next().await;
        }
    }
    while inflight.next().await.is_some() {}
    n as f64 / start.elapsed().as_secs_f64()
}

/// A server and a client holding an admin credential for it.
#[derive(Clone)]
struct Target {
    base: String,
    ca_pem: Vec<u8>,
    identity_pem: Vec<u8>,
    /// Every request but the watches; requests time out after 60 s.
    client: reqwest::Client,
}

impl Target {
    /// A target at `base` trusting `ca_pem`, authenticating with the PEM
    /// certificate and key in `identity_pem` (as tests/differential/replay.rs).
    fn new(base: &str, ca_pem: &[u8], identity_pem: &[u8]) -> Result<Self, String> {
        Ok(Self {
            base: base.trim_end_matches('/').to_string(),
            client: client(ca_pem, identity_pem, Some(Duration::from_secs(60)))?,
            ca_pem: ca_pem.to_vec(),
            identity_pem: identity_pem.to_vec(),
        })
    }

    /// Another client with the same credential: its own connection.
    fn another_client(&self) -> reqwest::Client {
        client(&self.ca_pem, &self.identity_pem, None).expect("client")
    }

    /// The server of a kubeconfig's first cluster, with its embedded CA and
    /// the first user's client certificate.
    fn from_kubeconfig(path: &Path) -> Result<Self, String> {
        let (base, ca, identity) = read_kubeconfig(path)?;
        Self::new(&base, &ca, &identity)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// A client trusting `ca_pem`, presenting the certificate and key in
/// `identity_pem`; HTTP/2 when the server offers it (ALPN).
fn client(
    ca_pem: &[u8],
    identity_pem: &[u8],
    timeout: Option<Duration>,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem).map_err(|e| e.to_string())?])
        .identity(reqwest::Identity::from_pem(identity_pem).map_err(|e| e.to_string())?)
        .connect_timeout(Duration::from_secs(10));
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    builder.build().map_err(|e| e.to_string())
}

/// A kubeconfig's server URL, CA PEM and client certificate + key PEM.
fn read_kubeconfig(path: &Path) -> Result<(String, Vec<u8>, Vec<u8>), String> {
    let p = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{p}: {e}"))?;
    let config: Value = serde_norway::from_str(&text).map_err(|e| format!("{p}: {e}"))?;
    let field = |list: &str, inner: &str, key: &str| -> Result<String, String> {
        config[list][0][inner][key]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{p}: no {list}[0].{inner}.{key}"))
    };
    let decode = |b64: String| -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("{p}: {e}"))
    };
    let base = field("clusters", "cluster", "server")?;
    let ca = decode(field("clusters", "cluster", "certificate-authority-data")?)?;
    let mut identity = decode(field("users", "user", "client-certificate-data")?)?;
    identity.extend(decode(field("users", "user", "client-key-data")?)?);
    Ok((base, ca, identity))
}

/// What `workload` measured on one target.
struct Figures {
    protocol: String,
    creates: f64,
    gets: f64,
    list_p50: Duration,
    list_p99: Duration,
    list_bytes: usize,
    list_items: usize,
    watch_p50: Duration,
    watch_p99: Duration,
    watch_received: usize,
}

async fn create_namespace(t: &Target, name: &str) {
    let resp = t
        .client
        .post(t.url("/api/v1/namespaces"))
        .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}: create namespace {name}: {e}", t.base));
    assert_eq!(resp.status(), 201, "{}: create namespace {name}", t.base);
    resp.bytes().await.expect("namespace body");
}

async fn create_configmap(t: &Target, url: &str, body: Value) {
    let resp = t
        .client
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let status = resp.status();
    // Read to the end, as a client does: a body dropped unread is a reset
    // HTTP/2 stream, and h2 ends a connection after 1,024 of them.
    let body = resp
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    assert_eq!(
        status,
        201,
        "{url}: create answered {status}: {}",
        String::from_utf8_lossy(&body)
    );
}

async fn get_ok(t: &Target, url: &str) {
    let resp = t
        .client
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    assert_eq!(resp.status(), 200, "{url}");
    resp.bytes()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
}

/// Every measurement, the same requests in the same order, on one target.
async fn workload(t: &Target) -> Figures {
    for ns in ["peer-rate", "peer-big", "peer-watch"] {
        create_namespace(t, ns).await;
    }

    // creates/s, then gets/s of one of them
    let cms = t.url("/api/v1/namespaces/peer-rate/configmaps");
    create_configmap(
        t,
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fixed"}, "data": {"k": "v"}}),
    )
    .await;
    let fixed = format!("{cms}/fixed");
    let warm = t.client.get(&fixed).send().await.expect("warm-up");
    let protocol = format!("{:?}", warm.version());
    warm.bytes().await.expect("warm-up body");
    let creates = rate(REQUESTS, |i| {
        let (t, u) = (t.clone(), cms.clone());
        async move {
            create_configmap(
                &t,
                &u,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c-{i}")}, "data": {"k": "v"}}),
            )
            .await;
        }
    })
    .await;
    rate(WARM_GETS, |_| {
        let (t, u) = (t.clone(), fixed.clone());
        async move { get_ok(&t, &u).await }
    })
    .await;
    let gets = rate(REQUESTS, |_| {
        let (t, u) = (t.clone(), fixed.clone());
        async move { get_ok(&t, &u).await }
    })
    .await;

    // A list of 10,000 objects in their own namespace.
    let big = t.url("/api/v1/namespaces/peer-big/configmaps");
    rate(LIST_OBJECTS, |i| {
        let (t, u) = (t.clone(), big.clone());
        async move {
            create_configmap(
                &t,
                &u,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("b-{i:05}"), "labels": {"app": "bench"}}, "data": {"k": "v"}}),
            )
            .await;
        }
    })
    .await;
    let mut lists = Vec::new();
    let mut list_bytes = 0;
    let mut list_items = 0;
    for n in 0..LISTS {
        let start = SystemClock::instant();
        let resp = t.client.get(&big).send().await.expect("list");
        assert_eq!(resp.status(), 200, "{big}");
        let body = resp.bytes().await.expect("list body");
        lists.push(start.elapsed());
        list_bytes = body.len();
        if n == 0 {
            let list: Value = serde_json::from_slice(&body).expect("list JSON");
            // kemu's root-CA publisher adds kube-root-ca.crt to every
            // namespace; the upstream runs without a controller manager.
            list_items = list["items"].as_array().map_or(0, Vec::len);
            assert!(
                list_items >= LIST_OBJECTS,
                "{big}: {list_items} items in the list"
            );
        }
    }
    lists.sort();

    // Watch latency: 100 watchers on one namespace, 50 creates. Each watcher
    // is its own client (connection), as 100 informers would be: on one
    // HTTP/2 connection kube-apiserver allows 100 streams
    // (--http2-max-streams-per-connection), so 100 watches there would leave
    // the creates waiting for a stream.
    let wurl = t.url("/api/v1/namespaces/peer-watch/configmaps");
    let list: Value = t
        .client
        .get(&wurl)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("list JSON");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .to_owned();
    let received: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let resp = t
            .another_client()
            .get(format!("{wurl}?watch=true&resourceVersion={rv}"))
            .send()
            .await
            .expect("watch");
        assert_eq!(resp.status(), 200, "{wurl} watch");
        let received = received.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            let mut buf = Vec::new();
            let mut got = 0;
            while let Some(Ok(chunk)) = stream.next().await {
                buf.extend_from_slice(&chunk);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    let Ok(ev) = serde_json::from_slice::<Value>(&line) else {
                        continue;
                    };
                    if ev["type"] != "ADDED" {
                        continue;
                    }
                    let name = ev["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default();
                    if let Some(i) = name.strip_prefix("w-").and_then(|i| i.parse().ok()) {
                        received.lock().push((i, SystemClock::instant()));
                        got += 1;
                    }
                }
                if got == EVENTS {
                    return;
                }
            }
        }));
    }
    let mut sent = Vec::new();
    for i in 0..EVENTS {
        sent.push(SystemClock::instant());
        create_configmap(
            t,
            &wurl,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("w-{i}")}}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = SystemClock::instant() + Duration::from_secs(30);
    for w in &mut watchers {
        let left = deadline.saturating_duration_since(SystemClock::instant());
        let _ = tokio::time::timeout(left, w).await;
    }
    for w in &watchers {
        w.abort();
    }
    let got = received.lock().clone();
    let mut lat: Vec<Duration> = got
        .iter()
        .map(|(i, at)| at.duration_since(sent[*i]))
        .collect();
    lat.sort();
    assert!(!lat.is_empty(), "{wurl}: no watch event received");

    Figures {
        protocol,
        creates,
        gets,
        list_p50: pct(&lists, 0.5),
        list_p99: pct(&lists, 0.99),
        list_bytes,
        list_items,
        watch_p50: pct(&lat, 0.5),
        watch_p99: pct(&lat, 0.99),
        watch_received: lat.len(),
    }
}

// ---------------------------------------------------------------- processes

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A free loopback port (not 8080, as scripts/upstream).
fn free_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind a free port")
            .port();
        if port != 8080 {
            return port;
        }
    }
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("/proc/{pid}/status: no VmRSS"))
}

/// A child process of this bench, ended (SIGTERM, then SIGKILL) when dropped.
struct Spawned {
    name: &'static str,
    child: Child,
}

impl Spawned {
    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if !self.alive() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if !self.alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("peer: {} ignored SIGTERM, killing it", self.name);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The upstream `scripts/upstream start` started; stopped when dropped
/// (before its directory is removed).
struct Upstream {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    /// Launch of the script → its last line (kubeconfig) printed.
    script_time: Duration,
}

impl Upstream {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("kemu-peer-")
            .tempdir()
            .expect("tempdir");
        eprintln!(
            "peer: starting upstream in {} (if interrupted: scripts/upstream stop {0})",
            dir.path().display()
        );
        let start = SystemClock::instant();
        let out = Command::new(repo().join("scripts/upstream"))
            .arg("start")
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/upstream start");
        let script_time = start.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let upstream = Self {
            kubeconfig: PathBuf::from(stdout.lines().last().unwrap_or_default().trim()),
            dir,
            script_time,
        };
        assert!(
            out.status.success() && upstream.kubeconfig.is_file(),
            "scripts/upstream start failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        upstream
    }

    /// The script's processes' command lines: etcd's, then kube-apiserver's.
    fn command_lines(&self) -> (Vec<String>, Vec<String>) {
        let pids = std::fs::read_to_string(self.dir.path().join("pids")).expect("upstream pids");
        let lines: Vec<Vec<String>> = pids
            .split_whitespace()
            .map(|pid| {
                let raw = std::fs::read(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_else(|e| panic!("/proc/{pid}/cmdline: {e}"));
                raw.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .collect();
        let find = |name: &str| {
            lines
                .iter()
                .find(|l| l.first().is_some_and(|p| p.ends_with(name)))
                .cloned()
                .unwrap_or_else(|| panic!("no {name} among the upstream's processes: {lines:?}"))
        };
        (find("etcd"), find("kube-apiserver"))
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let status = Command::new(repo().join("scripts/upstream"))
            .arg("stop")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            eprintln!(
                "peer: scripts/upstream stop {} failed: {status:?}",
                self.dir.path().display()
            );
        }
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> &'a str {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .unwrap_or_else(|| panic!("no {name} in {args:?}"))
}

fn url_port(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// `args` with the loopback ports in `ports` (old → new) and the value of
/// each flag in `values` replaced.
fn rewrite(args: &[String], ports: &[(u16, u16)], values: &[(&str, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in args {
        if let Some((_, v)) = out
            .last()
            .and_then(|prev| values.iter().find(|(f, _)| f == prev))
        {
            out.push(v.clone());
            continue;
        }
        let mut a = a.clone();
        for (old, new) in ports {
            a = a.replace(&format!("127.0.0.1:{old}"), &format!("127.0.0.1:{new}"));
        }
        out.push(a);
    }
    out
}

fn spawn(name: &'static str, args: &[String], log: &Path) -> Spawned {
    let log = std::fs::File::create(log).expect("log file");
    let child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log file"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", args[0]));
    Spawned { name, child }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Polls `url` with `client` every 10 ms until it answers 200.
async fn wait_ok(client: &reqwest::Client, url: &str, process: &mut Spawned, log: &Path) {
    let start = SystemClock::instant();
    loop {
        let answer = client.get(url).timeout(Duration::from_secs(2)).send().await;
        if matches!(&answer, Ok(r) if r.status() == 200) {
            return;
        }
        assert!(
            process.alive(),
            "{} exited before {url} answered:\n{}",
            process.name,
            log_tail(log)
        );
        assert!(
            start.elapsed() < READY_TIMEOUT,
            "{url} not ready after {READY_TIMEOUT:?}:\n{}",
            log_tail(log)
        );
        tokio::time::sleep(POLL).await;
    }
}

/// One start of etcd + kube-apiserver with the script's command lines:
/// (etcd spawned → /health ok, etcd spawned → /readyz 200, RSS of both in KiB
/// after `SETTLE`).
async fn upstream_start(upstream: &Upstream) -> (Duration, Duration, u64) {
    let (etcd_args, api_args) = upstream.command_lines();
    let dir = tempfile::Builder::new()
        .prefix("kemu-peer-start-")
        .tempdir()
        .expect("tempdir");
    let (client, peer, port) = (
        url_port(flag(&etcd_args, "--listen-client-urls")),
        url_port(flag(&etcd_args, "--listen-peer-urls")),
        flag(&api_args, "--secure-port").to_owned(),
    );
    let (new_client, new_peer, new_port) = (free_port(), free_port(), free_port());
    let ports = [(client, new_client), (peer, new_peer)];
    let etcd_args = rewrite(
        &etcd_args,
        &ports,
        &[("--data-dir", dir.path().join("etcd").display().to_string())],
    );
    let api_args = rewrite(
        &api_args,
        &ports,
        &[
            ("--secure-port", new_port.to_string()),
            ("--cert-dir", dir.path().join("certs").display().to_string()),
        ],
    );
    assert!(!api_args.contains(&port), "{api_args:?}");
    let (_, ca, identity) = read_kubeconfig(&upstream.kubeconfig).expect("upstream kubeconfig");
    let base = format!("https://127.0.0.1:{new_port}");
    let target = Target::new(&base, &ca, &identity).expect("client");
    let plain = reqwest::Client::new();
    let (etcd_log, api_log) = (dir.path().join("etcd.log"), dir.path().join("api.log"));

    let start = SystemClock::instant();
    let mut etcd = spawn("etcd", &etcd_args, &etcd_log);
    wait_ok(
        &plain,
        &format!("http://127.0.0.1:{new_client}/health"),
        &mut etcd,
        &etcd_log,
    )
    .await;
    let etcd_ready = start.elapsed();
    let mut api = spawn("kube-apiserver", &api_args, &api_log);
    wait_ok(&target.client, &target.url("/readyz"), &mut api, &api_log).await;
    let ready = start.elapsed();
    tokio::time::sleep(SETTLE).await;
    let rss = rss_kib(api.child.id()) + rss_kib(etcd.child.id());
    drop(api);
    drop(etcd);
    (etcd_ready, ready, rss)
}

/// One start of the `kemu` binary with a one-EKS-cluster fixture: (spawn →
/// ready line, spawn → the cluster's first TLS /version, VmRSS in KiB after
/// `SETTLE`).
async fn kemu_process_start() -> (Duration, Duration, u64) {
    let dir = tempfile::Builder::new()
        .prefix("kemu-peer-bin-")
        .tempdir()
        .expect("tempdir");
    let fixture = dir.path().join("peer.yaml");
    std::fs::write(
        &fixture,
        "clusters:\n  - cloud: eks\n    name: peer\n    region: us-east-1\n    version: \"1.34\"\n",
    )
    .expect("fixture");
    let start = SystemClock::instant();
    let child = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .args(["--admin-port", "0", "--log", "warn"])
        .arg("--run-dir")
        .arg(dir.path().join("run"))
        .arg("--fixture")
        .arg(&fixture)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kemu");
    let mut kemu = Spawned {
        name: "kemu",
        child,
    };
    let mut line = String::new();
    std::io::BufReader::new(kemu.child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let ready_line = start.elapsed();
    let ready: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a ready line ({e}): {line}"));
    let kubeconfig = ready["clusters"][0]["kubeconfig"]
        .as_str()
        .unwrap_or_else(|| panic!("no cluster kubeconfig in the ready line: {line}"));
    let target = Target::from_kubeconfig(Path::new(kubeconfig)).expect("kemu kubeconfig");
    let resp = target
        .client
        .get(target.url("/version"))
        .send()
        .await
        .expect("/version");
    assert_eq!(resp.status(), 200, "kemu /version");
    let first = start.elapsed();
    tokio::time::sleep(SETTLE).await;
    let rss = rss_kib(kemu.child.id());
    drop(kemu);
    (ready_line, first, rss)
}

fn eks_spec(name: &str) -> ClusterSpec {
    ClusterSpec {
        scope: OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        },
        name: name.into(),
        version: "1.34".into(),
        node_pools: vec![],
        tags: Default::default(),
        provisioning: Duration::ZERO,
        extra: Value::Null,
    }
}

/// One in-process start: engine build + cluster create → first TLS /version.
async fn kemu_in_process_start(i: usize) -> Duration {
    let start = SystemClock::instant();
    let kemu = kemu::Kemu::builder().build().expect("kemu");
    let cluster = kemu
        .registry()
        .create(eks_spec(&format!("start-{i}")))
        .expect("cluster");
    let url = format!("{}/version", advertise(&cluster).server_url().expect("url"));
    let ca = reqwest::Certificate::from_pem(cluster.ca.cert_pem().as_bytes()).expect("CA");
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .build()
        .expect("client");
    let status = client.get(&url).send().await.expect("/version").status();
    assert_eq!(status, 200, "{url}");
    let elapsed = start.elapsed();
    kemu.shutdown().await;
    elapsed
}

// ------------------------------------------------------------------- table

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// `n` with thousands separated by commas.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn per_s(r: f64) -> String {
    format!("{}/s", thousands(r.round() as u64))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// kemu's advantage: how many times better kemu's figure is (below 1: worse).
fn times(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

fn lower(kemu: Duration, upstream: Duration) -> String {
    times(upstream.as_secs_f64() / kemu.as_secs_f64())
}

fn main() {
    kemu::shared::pki::install_crypto_provider();
    let apiserver = repo().join("target/tools/kube-apiserver");
    let etcd_ok = Command::new("etcd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !apiserver.is_file() || !etcd_ok {
        eprintln!(
            "peer: {} missing: run scripts/upstream build-apiserver",
            if etcd_ok {
                apiserver.display().to_string()
            } else {
                "etcd".to_string()
            }
        );
        std::process::exit(1);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let upstream = Upstream::start();
    let upstream_target = Target::from_kubeconfig(&upstream.kubeconfig).expect("upstream target");
    let version: Value = rt.block_on(async {
        let resp = upstream_target
            .client
            .get(upstream_target.url("/version"))
            .send()
            .await
            .expect("upstream /version");
        resp.json().await.expect("upstream /version JSON")
    });
    let etcd_version = Command::new("etcd")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let etcd_version = etcd_version
        .lines()
        .find_map(|l| l.strip_prefix("etcd Version: "))
        .unwrap_or("?")
        .to_owned();

    // Start-ups, alternating the two kinds of process.
    let mut up_etcd = Vec::new();
    let mut up_ready = Vec::new();
    let mut up_rss = Vec::new();
    let mut bin_line = Vec::new();
    let mut bin_first = Vec::new();
    let mut bin_rss = Vec::new();
    for _ in 0..PROCESS_STARTS {
        let (e, r, rss) = rt.block_on(upstream_start(&upstream));
        up_etcd.push(e);
        up_ready.push(r);
        up_rss.push(rss);
        let (l, f, rss) = rt.block_on(kemu_process_start());
        bin_line.push(l);
        bin_first.push(f);
        bin_rss.push(rss);
    }
    let in_process: Vec<Duration> = (0..IN_PROCESS_STARTS)
        .map(|i| rt.block_on(kemu_in_process_start(i)))
        .collect();

    // The workload: kemu's in-process cluster, then the upstream.
    let kemu = kemu::Kemu::builder().build().expect("kemu");
    let cluster = kemu.registry().create(eks_spec("peer")).expect("cluster");
    let cert = cluster
        .ca
        .client_cert("peer", &["system:masters".into()], kemu.clock().now())
        .expect("client cert");
    let kemu_target = Target::new(
        &advertise(&cluster).server_url().expect("url"),
        cluster.ca.cert_pem().as_bytes(),
        format!("{}{}", cert.cert_pem, cert.key_pem).as_bytes(),
    )
    .expect("kemu target");
    let k = rt.block_on(workload(&kemu_target));
    let u = rt.block_on(workload(&upstream_target));
    rt.block_on(kemu.shutdown());
    let script_time = upstream.script_time;
    drop(upstream);

    let kemu_start = median(&in_process);
    let up_start = median(&up_ready);
    let range = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        format!("{}–{}", ms(v[0]), ms(v[v.len() - 1]))
    };
    let rows: Vec<[String; 4]> = vec![
        [
            "start-up to first answer, in process".into(),
            format!("{} ({})", ms(kemu_start), range(&in_process)),
            format!("{} ({})", ms(up_start), range(&up_ready)),
            lower(kemu_start, up_start),
        ],
        [
            "start-up to first answer, as processes".into(),
            format!("{} ({})", ms(median(&bin_first)), range(&bin_first)),
            format!("{} ({})", ms(up_start), range(&up_ready)),
            lower(median(&bin_first), up_start),
        ],
        [
            format!(
                "creates/s, ConfigMaps ({}, {CONCURRENCY} in flight)",
                thousands(REQUESTS as u64)
            ),
            per_s(k.creates),
            per_s(u.creates),
            times(k.creates / u.creates),
        ],
        [
            format!(
                "gets/s, one ConfigMap ({}, {CONCURRENCY} in flight)",
                thousands(REQUESTS as u64)
            ),
            per_s(k.gets),
            per_s(u.gets),
            times(k.gets / u.gets),
        ],
        [
            format!(
                "LIST {} ConfigMaps, p50 ({LISTS} lists)",
                thousands(LIST_OBJECTS as u64)
            ),
            ms(k.list_p50),
            ms(u.list_p50),
            lower(k.list_p50, u.list_p50),
        ],
        [
            format!(
                "LIST {} ConfigMaps, p99 ({LISTS} lists)",
                thousands(LIST_OBJECTS as u64)
            ),
            ms(k.list_p99),
            ms(u.list_p99),
            lower(k.list_p99, u.list_p99),
        ],
        [
            format!("watch latency, {WATCHERS} watchers, p50"),
            ms(k.watch_p50),
            ms(u.watch_p50),
            lower(k.watch_p50, u.watch_p50),
        ],
        [
            format!("watch latency, {WATCHERS} watchers, p99"),
            ms(k.watch_p99),
            ms(u.watch_p99),
            lower(k.watch_p99, u.watch_p99),
        ],
        [
            "idle RSS after start-up".into(),
            format!("{} (kemu binary, 1 cluster)", mib(median(&bin_rss))),
            format!("{} (kube-apiserver + etcd)", mib(median(&up_rss))),
            times(median(&up_rss) as f64 / median(&bin_rss) as f64),
        ],
    ];

    println!(
        "\nkemu {} vs kube-apiserver {} + etcd {etcd_version}; {} CPUs\n",
        env!("CARGO_PKG_VERSION"),
        version["gitVersion"].as_str().unwrap_or("?"),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!("| metric | kemu | kube-apiserver+etcd | ratio |\n|---|---|---|---|");
    for [m, a, b, r] in &rows {
        println!("| {m} | {a} | {b} | {r} |");
    }
    println!(
        "\nratio: how many times better kemu's figure is (rates: kemu ÷ upstream; times and memory: upstream ÷ kemu); below 1× upstream is better."
    );
    println!(
        "start-up, in process: kemu engine build + cluster create → first TLS /version, median (min–max) of {IN_PROCESS_STARTS}; \
         upstream: etcd spawned → /health ok → kube-apiserver spawned → /readyz 200 (10 ms polls), median of {PROCESS_STARTS} \
         (etcd healthy after {}; `scripts/upstream start` itself, with openssl PKI and 0.5 s polls: {})",
        ms(median(&up_etcd)),
        ms(script_time),
    );
    println!(
        "start-up, as processes: the kemu binary spawned with a one-EKS-cluster fixture → that cluster's first TLS /version, median of {PROCESS_STARTS} (ready line after {})",
        ms(median(&bin_line)),
    );
    println!(
        "idle RSS: VmRSS {}s after the first answer, median of {PROCESS_STARTS} starts (kemu: {}; upstream: {})",
        SETTLE.as_secs(),
        bin_rss
            .iter()
            .map(|r| mib(*r))
            .collect::<Vec<_>>()
            .join(", "),
        up_rss
            .iter()
            .map(|r| mib(*r))
            .collect::<Vec<_>>()
            .join(", "),
    );
    println!(
        "protocol: kemu {}, upstream {}; list body: kemu {:.2} MB ({} items), upstream {:.2} MB ({} items); watch events received: kemu {}, upstream {} of {}",
        k.protocol,
        u.protocol,
        k.list_bytes as f64 / 1e6,
        k.list_items,
        u.list_bytes as f64 / 1e6,
        u.list_items,
        k.watch_received,
        u.watch_received,
        WATCHERS * EVENTS,
    );
}
