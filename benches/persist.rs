//! Persistence benchmark: prints a table, asserts nothing.
//!
//! - write cost per object: `Store::create` of small ConfigMaps in memory,
//!   with the write-ahead log (group commit), and with `--fsync always`.
//! - start-up with a state directory holding 100,000 objects: the release
//!   `kemu` binary from spawn to ready line, replaying the log only, then
//!   from a compacted snapshot.
//! - reset (`POST /kemu/reset`) of a running kemu holding 100,000 objects,
//!   with and without a state directory, after a few writes.
//!
//! Run with `cargo bench --bench persist` (builds in release).

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kemu::SystemClock;
use kemu::persist::{Persistence, SyncPolicy};
use kemu::shared::{ClusterSpec, OwnerScope};
use kemu_dataplane::store::ObjectKey;
use serde_json::json;

const STARTUP_OBJECTS: usize = 100_000;
const WRITE_OBJECTS: usize = 20_000;
const FSYNC_OBJECTS: usize = 500;

fn spec(name: &str) -> ClusterSpec {
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
        extra: serde_json::Value::Null,
    }
}

fn config_map(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"labels": {"app": "bench", "shard": (i % 16).to_string()}},
        "data": {"index": i.to_string(), "payload": "x".repeat(200)},
    })
}

/// Creates `count` ConfigMaps in a new cluster of `kemu`; returns the time per object.
fn fill(kemu: &kemu::Kemu, cluster: &str, count: usize) -> Duration {
    let record = kemu.registry().create(spec(cluster)).expect("cluster");
    let store = kemu
        .dataplane()
        .and_then(|dp| dp.engine().store(&record.id))
        .expect("store");
    let start = SystemClock::instant();
    for i in 0..count {
        let key = ObjectKey::new("configmaps", "default", &format!("cm-{i}"));
        store.create(&key, config_map(i)).expect("create");
    }
    start.elapsed() / count as u32
}

fn persisted(dir: &Path, policy: SyncPolicy, compact_after: u64) -> (kemu::Kemu, Persistence) {
    let kemu = kemu::Kemu::builder().build().expect("kemu");
    let (p, image) = Persistence::open_with(dir, policy, compact_after).expect("open");
    p.attach(&kemu, &image, false).expect("attach");
    (kemu, p)
}

fn spawn(extra: &[&str]) -> (Child, kemu::server::ReadyLine, Duration) {
    let start = SystemClock::instant();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .args(extra)
        .env("KEMU_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kemu");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let took = start.elapsed();
    let ready = serde_json::from_str(&line).expect("ready line");
    (child, ready, took)
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// How big the running kemu's state is: lines of its snapshot (one per
/// object or kept event), so a load that lost the objects shows.
fn objects(admin: &str) -> String {
    let body = kemu::admin::call(admin, "GET", "/kemu/snapshot").expect("snapshot");
    let lines = body.iter().filter(|b| **b == b'\n').count();
    format!("{lines} lines")
}

fn reset_time(admin: &str) -> Duration {
    let start = SystemClock::instant();
    kemu::admin::call(admin, "POST", "/kemu/reset").expect("reset");
    start.elapsed()
}

fn row(what: &str, value: String) {
    println!("| {what:<62} | {value:>14} |");
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    kemu::shared::pki::install_crypto_provider();
    println!("| {:<62} | {:>14} |", "measure", "value");
    println!("|{:-<64}|{:->16}|", "", "");

    // Write cost per object.
    let memory = kemu::Kemu::builder().build().expect("kemu");
    row(
        &format!("create, in memory ({WRITE_OBJECTS} ConfigMaps)"),
        micros(fill(&memory, "mem", WRITE_OBJECTS)),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, p) = persisted(dir.path(), SyncPolicy::Group, u64::MAX);
    row(
        &format!("create, --data-dir, group fdatasync ({WRITE_OBJECTS})"),
        micros(fill(&wal, "wal", WRITE_OBJECTS)),
    );
    p.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    let (always, p) = persisted(dir.path(), SyncPolicy::Always, u64::MAX);
    row(
        &format!("create, --data-dir --fsync always ({FSYNC_OBJECTS})"),
        micros(fill(&always, "always", FSYNC_OBJECTS)),
    );
    p.stop();

    // A state directory with 100,000 objects, as a log only.
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    {
        let (kemu, p) = persisted(dir.path(), SyncPolicy::Group, u64::MAX);
        fill(&kemu, "big", STARTUP_OBJECTS);
        // The cluster was made in-process, not through a facade call.
        p.record_cloud(&kemu);
        p.stop();
    }
    let size = |dir: &Path| -> u64 {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    row(
        "state directory size, 100,000 objects (log)",
        format!("{:.1} MiB", size(dir.path()) as f64 / f64::from(1 << 20)),
    );
    let (child, _, took) = spawn(&[]);
    row("start-up to ready line, no state", millis(took));
    stop(child);
    let (child, ready, took) = spawn(&["--data-dir", &data]);
    row(
        "start-up to ready line, 100,000 objects in the log",
        millis(took),
    );
    row(
        "state lines served after start-up (snapshot)",
        objects(&ready.admin),
    );
    row(
        "reset, 100,000 objects, --data-dir (store image logged)",
        millis(reset_time(&ready.admin)),
    );
    stop(child);
    {
        let (kemu, p) = persisted(dir.path(), SyncPolicy::Group, u64::MAX);
        p.compact(&kemu).expect("compact");
        p.stop();
    }
    let (child, _, took) = spawn(&["--data-dir", &data]);
    row(
        "start-up to ready line, 100,000 objects in a snapshot",
        millis(took),
    );
    stop(child);

    // Snapshot file → --restore, and reset without a state directory.
    let file = dir.path().join("snapshot.jsonl");
    let file = file.to_str().expect("utf-8 path");
    let (child, ready, took) = spawn(&["--restore", file]);
    row(
        "start-up to ready line, --restore of 100,000 objects",
        millis(took),
    );
    row(
        "reset, 100,000 objects, in memory",
        millis(reset_time(&ready.admin)),
    );
    stop(child);
}
