//! `kemu bench`: starts kemu as its own process, drives one of its clusters
//! with HTTPS clients, and prints a table; beside it, in the same run, nginx
//! serving the very bytes kemu answered and any real cluster named by a
//! kubeconfig (`scripts/bench` passes the oracle's kube-apiserver + etcd).
//!
//! # Layout
//! - [`target`]: a server and its admin credential, clients with a
//!   connection each.
//! - [`process`]: the processes a run starts, and their memory.
//! - [`cases`]: the measurements, the same requests on every target.
//! - this file: the runs, in order, and the table.
//!
//! Every case runs `runs` times; the table shows each run and the ratios of
//! the medians. It asserts nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use kemu_shared::Clock as _;

pub mod cases;
pub mod process;
pub mod target;

use self::target::{Target, expect};

/// What `kemu bench` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `kemu` binary to start (this one, normally).
    pub kemu: PathBuf,
    /// Runs of each case.
    pub runs: usize,
    /// Replicas of the scale case's Deployment (over `pods / 100` Nodes); 0
    /// skips it.
    pub pods: usize,
    /// ConfigMaps created per run of the memory case.
    pub objects: usize,
    /// nginx, for the column of the same bytes served statically; `None`
    /// looks for it on the PATH.
    pub nginx: Option<PathBuf>,
    /// A kubeconfig of a real cluster to measure beside kemu.
    pub peer_kubeconfig: Option<PathBuf>,
    /// The peer's process ids (for its memory), one per line.
    pub peer_pids: Option<PathBuf>,
    /// What to call the peer in the table.
    pub peer_name: String,
    /// The cases to run (of [`CASES`]); empty runs them all.
    pub cases: Vec<String>,
}

/// The cases, as `--cases` names them.
pub const CASES: [&str; 7] = ["get", "list", "token", "create", "watch", "memory", "pods"];

impl Options {
    /// Runs of `case`: none when it was not asked for.
    fn runs_of(&self, case: &str) -> usize {
        if self.cases.is_empty() || self.cases.iter().any(|c| c == case) {
            self.runs
        } else {
            0
        }
    }
}

/// ConfigMaps in the listed namespace, beside the one kemu's root-CA
/// publisher adds.
const LISTED: usize = 1_000;
const CONNECTIONS: usize = 16;
const GETS: usize = 4_000;
const LISTS: usize = 160;
const CREATES: usize = 4_000;
const WATCHERS: usize = 100;
const WATCH_WRITES: usize = 1_000;
const WRITES_PER_SECOND: u32 = 500;
/// Pods per Node in the scale case.
const PODS_PER_NODE: usize = 100;

/// One row: a figure per run for each column.
struct Row {
    case: String,
    unit: &'static str,
    /// Whether a larger figure is better (rates) or a smaller (times, bytes).
    higher_is_better: bool,
    kemu: Vec<f64>,
    nginx: Vec<f64>,
    peer: Vec<f64>,
}

impl Row {
    fn new(case: impl Into<String>, unit: &'static str, higher_is_better: bool) -> Self {
        Self {
            case: case.into(),
            unit,
            higher_is_better,
            kemu: Vec::new(),
            nginx: Vec::new(),
            peer: Vec::new(),
        }
    }
}

/// Runs every case and prints the table to stdout (progress to stderr).
pub async fn run(options: &Options) -> anyhow::Result<()> {
    kemu_shared::pki::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kemu-bench-{}", std::process::id()));
    let result = run_in(options, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run_in(options: &Options, dir: &std::path::Path) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let (kemu_process, kemu) = process::start_kemu(&options.kemu, &dir.join("kemu"), 0)?;
    let peer = options
        .peer_kubeconfig
        .as_deref()
        .map(Target::from_kubeconfig)
        .transpose()?;
    let peer_pids = options
        .peer_pids
        .as_deref()
        .map(process::read_pids)
        .transpose()?;

    // The bytes nginx serves are kemu's own answers.
    let admin = kemu.client()?;
    cases::namespace(&kemu, &admin, "bench").await?;
    let clients = kemu.clients(CONNECTIONS)?;
    note("creating the listed ConfigMaps");
    cases::create_config_maps(&kemu, &clients, "bench", "list-", LISTED).await?;
    let one = "/api/v1/namespaces/bench/configmaps/list-000000";
    let all = "/api/v1/namespaces/bench/configmaps";
    let get_bytes = expect(admin.get(kemu.url(one)), 200, one).await?;
    let list_bytes = expect(admin.get(kemu.url(all)), 200, all).await?;
    let nginx_bin = process::find_nginx(options.nginx.as_deref());
    let nginx = match &nginx_bin {
        Some(bin) => Some(process::start_nginx(
            bin,
            &dir.join("nginx"),
            &[("get.json", &get_bytes), ("list.json", &list_bytes)],
        )?),
        None => {
            note("nginx not found: its column stays empty");
            None
        }
    };
    if let Some(peer) = &peer {
        let c = peer.client()?;
        cases::namespace(peer, &c, "bench").await?;
        cases::create_config_maps(peer, &peer.clients(CONNECTIONS)?, "bench", "list-", LISTED)
            .await?;
    }
    let listed = serde_json::from_slice::<serde_json::Value>(&list_bytes)?["items"]
        .as_array()
        .map_or(0, Vec::len);

    for (label, conns, path, nginx_path, per_conn_total) in [
        ("GET one ConfigMap, 1 connection", 1, one, "/get.json", GETS),
        (
            "GET one ConfigMap, 16 connections",
            CONNECTIONS,
            one,
            "/get.json",
            GETS,
        ),
        (
            "LIST of that namespace, 1 connection",
            1,
            all,
            "/list.json",
            LISTS,
        ),
        (
            "LIST of that namespace, 16 connections",
            CONNECTIONS,
            all,
            "/list.json",
            LISTS,
        ),
    ] {
        let mut row = Row::new(label, "req/s", true);
        let per_client = (per_conn_total / conns).max(1);
        let case = if path == one { "get" } else { "list" };
        for run in 0..options.runs_of(case) {
            note(&format!("{label}: run {}", run + 1));
            row.kemu
                .push(cases::get_rate(&kemu.clients(conns)?, &kemu.url(path), per_client).await?);
            if let Some((_, n)) = &nginx {
                row.nginx.push(
                    cases::get_rate(&n.clients(conns)?, &n.url(nginx_path), per_client).await?,
                );
            }
            if let Some(p) = &peer {
                row.peer
                    .push(cases::get_rate(&p.clients(conns)?, &p.url(path), per_client).await?);
            }
        }
        rows.push(row);
    }

    let mut token_row = Row::new(
        "GET with a ServiceAccount token, 16 connections",
        "req/s",
        true,
    );
    let token = options.runs_of("token") > 0;
    let kemu_token = match token {
        true => kemu.with_token(&cases::service_account_token(&kemu, &admin, "bench").await?),
        false => kemu.clone(),
    };
    let peer_token = match peer.as_ref().filter(|_| token) {
        Some(p) => {
            Some(p.with_token(&cases::service_account_token(p, &p.client()?, "bench").await?))
        }
        None => None,
    };
    for run in 0..options.runs_of("token") {
        note(&format!("token GET: run {}", run + 1));
        let per_client = GETS / CONNECTIONS;
        token_row.kemu.push(
            cases::get_rate(
                &kemu_token.clients(CONNECTIONS)?,
                &kemu.url(one),
                per_client,
            )
            .await?,
        );
        if let Some(p) = &peer_token {
            token_row
                .peer
                .push(cases::get_rate(&p.clients(CONNECTIONS)?, &p.url(one), per_client).await?);
        }
    }
    rows.push(token_row);

    let mut create_row = Row::new("create ConfigMaps, 16 connections", "req/s", true);
    for run in 0..options.runs_of("create") {
        note(&format!("creates: run {}", run + 1));
        let prefix = format!("create-{run}-");
        create_row.kemu.push(
            cases::create_config_maps(
                &kemu,
                &kemu.clients(CONNECTIONS)?,
                "bench",
                &prefix,
                CREATES,
            )
            .await?,
        );
        if let Some(p) = &peer {
            create_row.peer.push(
                cases::create_config_maps(p, &p.clients(CONNECTIONS)?, "bench", &prefix, CREATES)
                    .await?,
            );
        }
    }
    rows.push(create_row);

    let watch = format!("watch: {WATCHERS} watchers, {WRITES_PER_SECOND} creates/s");
    let mut p50 = Row::new(format!("{watch}, p50"), "ms", false);
    let mut p99 = Row::new(format!("{watch}, p99"), "ms", false);
    let mut lost = Vec::new();
    for run in 0..options.runs_of("watch") {
        note(&format!("watch: run {}", run + 1));
        let ns = format!("watch-{run}");
        let mut targets = vec![(&kemu, &mut p50.kemu, &mut p99.kemu)];
        if let Some(p) = &peer {
            targets.push((p, &mut p50.peer, &mut p99.peer));
        }
        for (t, a, b) in targets {
            let w = cases::watch_latency(t, &ns, WATCHERS, WATCH_WRITES, WRITES_PER_SECOND).await?;
            a.push(ms(w.p50));
            b.push(ms(w.p99));
            if w.received < WATCHERS * WATCH_WRITES {
                lost.push(format!(
                    "{}: {} of {} events read",
                    t.base,
                    w.received,
                    WATCHERS * WATCH_WRITES
                ));
            }
        }
    }
    rows.extend([p50, p99]);

    let mut memory = Row::new(
        format!(
            "RSS per small ConfigMap ({} per run)",
            figure(options.objects as f64)
        ),
        "bytes",
        false,
    );
    drop(nginx);
    drop(kemu_process);
    for run in 0..options.runs_of("memory") {
        note(&format!("memory: run {}", run + 1));
        let ns = format!("memory-{run}");
        // A fresh process each run: memory the cases before freed would be
        // reused by the allocator and hide the objects' cost.
        let (process, fresh) =
            process::start_kemu(&options.kemu, &dir.join(format!("memory-{run}")), 0)?;
        memory
            .kemu
            .push(bytes_per_object(&fresh, &[process.pid()], &ns, options.objects).await?);
        if let (Some(p), Some(pids)) = (&peer, &peer_pids) {
            memory
                .peer
                .push(bytes_per_object(p, pids, &ns, options.objects).await?);
        }
    }
    rows.push(memory);

    if options.pods > 0 && options.runs_of("pods") > 0 {
        let pods = options.pods;
        let mut up = Row::new(
            format!(
                "{} Pods Available (Deployment created → available)",
                figure(pods as f64)
            ),
            "s",
            false,
        );
        let mut down = Row::new(
            format!(
                "{} Pods gone (scaled to 0 → none left)",
                figure(pods as f64)
            ),
            "s",
            false,
        );
        let mut peak = Row::new("peak RSS over that run", "MiB", false);
        for run in 0..options.runs {
            note(&format!("{pods} Pods: run {}", run + 1));
            let nodes = pods.div_ceil(PODS_PER_NODE);
            let (process, cluster) =
                process::start_kemu(&options.kemu, &dir.join(format!("scale-{run}")), nodes)?;
            let times = cases::scale_up_and_down(&cluster, pods).await?;
            up.kemu.push(times.up.as_secs_f64());
            down.kemu.push(times.down.as_secs_f64());
            let hwm = process::status_kib(process.pid(), "VmHWM").unwrap_or(0);
            peak.kemu.push(hwm as f64 / 1024.0);
        }
        rows.extend([up, down, peak]);
    }

    print_table(options, &rows, nginx_bin.is_some(), peer.is_some());
    println!();
    println!(
        "The namespace listed holds {listed} ConfigMaps ({} bytes as kemu answers it); nginx serves those bytes and kemu's GET answer as files.",
        list_bytes.len()
    );
    println!(
        "Watch latency: from just before each create is sent to its event being read, over every watcher."
    );
    for l in lost {
        println!("Lost: {l}");
    }
    Ok(())
}

/// RSS of `pids` grown per ConfigMap while `n` small ones are created.
async fn bytes_per_object(t: &Target, pids: &[u32], ns: &str, n: usize) -> anyhow::Result<f64> {
    let client = t.client()?;
    cases::namespace(t, &client, ns).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = process::rss_kib(pids);
    cases::create_config_maps(t, &t.clients(CONNECTIONS)?, ns, "m-", n)
        .await
        .context("memory case")?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = process::rss_kib(pids);
    Ok(after.saturating_sub(before) as f64 * 1024.0 / n as f64)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn note(what: &str) {
    eprintln!("kemu bench: {what}");
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

fn figure(x: f64) -> String {
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{x:.digits$}");
    // Thousands separated, as the README's tables are.
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

fn runs(v: &[f64]) -> String {
    if v.is_empty() {
        return "—".into();
    }
    v.iter().map(|x| figure(*x)).collect::<Vec<_>>().join(" / ")
}

/// kemu's median against another's, as "N×" (above 1: kemu is better).
fn ratio(row: &Row, other: &[f64]) -> String {
    match (median(&row.kemu), median(other)) {
        (Some(k), Some(o)) if k > 0.0 && o > 0.0 => {
            let r = if row.higher_is_better { k / o } else { o / k };
            format!("{r:.2}×")
        }
        _ => "—".into(),
    }
}

fn print_table(options: &Options, rows: &[Row], nginx: bool, peer: bool) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = process::proc_kib("/proc/meminfo", "MemTotal")
        .map_or_else(String::new, |kib| format!(", {} GiB", kib / 1024 / 1024));
    println!(
        "kemu {} bench, {} ({cores} cores{memory}), {} runs of each case",
        env!("CARGO_PKG_VERSION"),
        kemu_shared::SystemClock.now().format("%Y-%m-%d"),
        options.runs
    );
    println!();
    let peer_name = &options.peer_name;
    println!(
        "| case | unit | kemu | nginx, same bytes{} | {peer_name}{} | kemu vs nginx | kemu vs {peer_name} |",
        if nginx { "" } else { " (not found)" },
        if peer { "" } else { " (not given)" },
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for row in rows.iter().filter(|r| !r.kemu.is_empty()) {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.case,
            row.unit,
            runs(&row.kemu),
            runs(&row.nginx),
            runs(&row.peer),
            ratio(row, &row.nginx),
            ratio(row, &row.peer),
        );
    }
    println!();
    println!("Ratios compare medians; above 1× kemu is faster (or smaller) than the other.");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_the_tables_write_them() {
        assert_eq!(figure(28401.4), "28,401");
        assert_eq!(figure(91.63), "91.6");
        assert_eq!(figure(3.321), "3.32");
        assert_eq!(figure(1234567.0), "1,234,567");
        assert_eq!(runs(&[1.0, 2.5]), "1.00 / 2.50");
    }

    #[test]
    fn ratios_say_how_many_times_better() {
        let mut rate = Row::new("r", "req/s", true);
        rate.kemu = vec![10.0, 30.0, 20.0];
        assert_eq!(ratio(&rate, &[10.0]), "2.00×");
        let mut latency = Row::new("l", "ms", false);
        latency.kemu = vec![2.0];
        assert_eq!(ratio(&latency, &[4.0]), "2.00×");
        assert_eq!(ratio(&latency, &[]), "—");
    }
}
