//! Controllers at scale on a cluster's real store (the [`MemoryStore`] and
//! [`StoreClient`] kemu serves clusters from): time from creating a Deployment
//! of N replicas to `availableReplicas = N`, Pods per second, and resident
//! memory per 1,000 Pods. Prints a table; asserts nothing.
//!
//! `cargo bench -p kemu-dataplane --bench controllers` runs 1,000 and 10,000
//! replicas (10,000 also with two workers per controller);
//! `KEMU_BENCH_PODS=100000 KEMU_BENCH_NODES=1000` adds a larger run, and
//! `KEMU_BENCH_ONLY=1` runs that one alone; `KEMU_BENCH_HISTORY=N` sets the
//! store's watch history. Each case runs in a process of its own. The image
//! is pinned, so each Node pulls it once (a `:latest` image would add a
//! `Pulling` Event per Pod).

use std::sync::Arc;

use kemu_dataplane::controllers::client::{Client, kinds};
use kemu_dataplane::controllers::store_client::StoreClient;
use kemu_dataplane::controllers::{ControllerConfig, Controllers};
use kemu_dataplane::resources::ClusterResources;
use kemu_dataplane::store::{MemoryStore, Store, StoreLimits};
use kemu_shared::{SharedClock, SystemClock};
use serde_json::json;

// As the kemu binary: the allocator users run controllers under.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

struct Row {
    pods: usize,
    nodes: usize,
    workers: usize,
    secs: f64,
    rss_per_1000: f64,
    objects: usize,
    writes: u64,
}

async fn run(pods: usize, nodes: usize, workers: usize) -> Row {
    let clock: SharedClock = SystemClock::shared();
    let mut limits = StoreLimits::default();
    if let Some(h) = std::env::var("KEMU_BENCH_HISTORY")
        .ok()
        .and_then(|h| h.parse().ok())
    {
        limits.history = h;
    }
    let store = Arc::new(MemoryStore::new(clock.clone(), limits));
    let client = StoreClient::new(store.clone(), Arc::new(ClusterResources::default()));
    let controllers = Controllers::start(
        client.clone(),
        clock,
        ControllerConfig {
            workers,
            ..ControllerConfig::default()
        },
    );
    let per_node = pods.div_ceil(nodes) + 10;
    for i in 0..nodes {
        client
            .create(
                kinds::NODE,
                json!({"metadata": {"name": format!("node-{i}")},
                       "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": per_node.to_string()},
                                  "conditions": [{"type": "Ready", "status": "True"}],
                                  "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250 + 1)}]}}),
            )
            .await
            .unwrap_or_default();
    }
    let mut watch = client
        .watch(kinds::DEPLOYMENT)
        .await
        .unwrap_or_else(|_| unreachable!());
    let before = rss_bytes();
    let start = SystemClock::instant();
    client
        .create(
            kinds::DEPLOYMENT,
            json!({"metadata": {"name": "big", "namespace": "default"},
                   "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "big"}},
                            "template": {"metadata": {"labels": {"app": "big"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                  "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}),
        )
        .await
        .unwrap_or_default();
    while let Some(ev) = watch.recv().await {
        if ev.object["status"]["availableReplicas"].as_u64() == Some(pods as u64) {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let after = rss_bytes();
    let objects = ["pods", "events", "replicasets.apps"]
        .iter()
        .map(|r| store.snapshot(r).objects.len())
        .sum();
    let writes = store.resource_version();
    drop(controllers);
    Row {
        pods,
        nodes,
        workers,
        secs,
        rss_per_1000: (after.saturating_sub(before)) as f64
            / (pods as f64 / 1000.0)
            / (1024.0 * 1024.0),
        objects,
        writes,
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs one case in this process and prints its row.
fn run_case(pods: usize, nodes: usize, workers: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let row = rt.block_on(run(pods, nodes, workers));
    println!(
        "| {} | {} | {} | {:.2} | {:.0} | {:.2} | {:.0} | {} | {} |",
        row.pods,
        row.nodes,
        row.workers,
        row.secs,
        row.pods as f64 / row.secs,
        row.rss_per_1000,
        peak_rss_mib(),
        row.objects,
        row.writes
    );
}

fn main() {
    // Each case runs in a process of its own, so one case's memory and
    // leftover work never count against the next.
    if let Ok(case) = std::env::var("KEMU_BENCH_CASE") {
        let n: Vec<usize> = case.split(',').filter_map(|x| x.parse().ok()).collect();
        if let [pods, nodes, workers] = n[..] {
            run_case(pods, nodes, workers);
        }
        return;
    }
    let mut cases = vec![(1_000, 10, 1), (10_000, 100, 1), (10_000, 100, 2)];
    if std::env::var_os("KEMU_BENCH_ONLY").is_some() {
        cases.clear();
    }
    if let (Ok(p), Ok(n)) = (
        std::env::var("KEMU_BENCH_PODS"),
        std::env::var("KEMU_BENCH_NODES"),
    ) && let (Ok(p), Ok(n)) = (p.parse(), n.parse())
    {
        cases.push((p, n, 1));
    }
    println!(
        "| replicas | nodes | workers/controller | to availableReplicas=N (s) | pods/s | RSS growth per 1,000 pods (MiB) | peak RSS (MiB) | objects stored | writes |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("bench binary: {e}"));
    for (pods, nodes, workers) in cases {
        let out = std::process::Command::new(&exe)
            .env("KEMU_BENCH_CASE", format!("{pods},{nodes},{workers}"))
            .output()
            .unwrap_or_else(|e| panic!("bench case: {e}"));
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}
