//! Start-up benchmark: prints a table, asserts nothing.
//!
//! - `process → ready line`: spawn the release `kemu` binary on free ports and
//!   read its ready line from stdout.
//! - `… with the example fixture`: the same with `--fixture
//!   fixtures/examples/multi-cloud.yaml` (three clusters, seven nodes, eleven
//!   objects, checked in a throwaway kemu, then created through the facades,
//!   applied and reconciled before the ready line).
//! - `build → first /version`: in one process, start the engine, register a
//!   cluster (its CA, listener and serving certificate are made on the way) and
//!   get `/version` over TLS verified against the cluster CA.
//!
//! Run with `cargo bench --bench startup` (builds in release).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use kemu::SystemClock;

const RUNS: usize = 30;
/// Runs of the start-up with the example fixture (each takes longer).
const FIXTURE_RUNS: usize = 10;

fn main() {
    kemu::shared::pki::install_crypto_provider();
    let binary = release_binary();
    let mut ready: Vec<Duration> = (0..RUNS).map(|_| time_to_ready(&binary, &[])).collect();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/examples/multi-cloud.yaml");
    let example = example.to_str().unwrap().to_owned();
    let mut fixture: Vec<Duration> = (0..FIXTURE_RUNS)
        .map(|_| time_to_ready(&binary, &["--fixture", &example]))
        .collect();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut first_version = Vec::new();
    let mut create_only = Vec::new();
    for i in 0..RUNS {
        let start = SystemClock::instant();
        let kemu = kemu::Kemu::builder().build().unwrap();
        let created_at = SystemClock::instant();
        let cluster = kemu
            .registry()
            .create(kemu::shared::ClusterSpec {
                scope: kemu::shared::OwnerScope::Eks {
                    account: "000000000000".into(),
                    region: "us-east-1".into(),
                },
                name: format!("bench-{i}"),
                version: "1.34".into(),
                node_pools: vec![],
                tags: Default::default(),
                provisioning: Duration::ZERO,
                extra: serde_json::Value::Null,
            })
            .unwrap();
        create_only.push(created_at.elapsed());
        let url = format!("https://127.0.0.1:{}/version", cluster.port.unwrap());
        let ca = reqwest::Certificate::from_pem(cluster.ca.cert_pem().as_bytes()).unwrap();
        let client = reqwest::Client::builder()
            .tls_certs_only([ca])
            .build()
            .unwrap();
        let status = runtime.block_on(async { client.get(&url).send().await.unwrap().status() });
        assert_eq!(status, 200);
        first_version.push(start.elapsed());
        runtime.block_on(kemu.shutdown());
    }

    println!("| figure (release) | runs | min | median | max |");
    println!("|---|---|---|---|---|");
    row("process start → ready line", &mut ready);
    row(
        "process start → ready line, example fixture (3 clouds, reconciled)",
        &mut fixture,
    );
    row("engine build → first TLS /version", &mut first_version);
    row("cluster create (CA + listener)", &mut create_only);
}

/// Spawns the binary on free ports with `extra` arguments and times its ready
/// line; its run dir is a temporary one, removed after.
fn time_to_ready(binary: &std::path::Path, extra: &[&str]) -> Duration {
    let run_dir = tempfile::tempdir().expect("tempdir");
    let start = SystemClock::instant();
    let mut child = Command::new(binary)
        .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .arg("--run-dir")
        .arg(run_dir.path())
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kemu");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let elapsed = start.elapsed();
    assert!(line.contains("\"ready\""), "no ready line: {line}");
    let _ = child.kill();
    let _ = child.wait();
    elapsed
}

fn row(name: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| {name} | {} | {} | {} | {} |",
        samples.len(),
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
}

fn release_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let bin = dir.join("kemu");
    assert!(
        bin.is_file(),
        "{} missing: run `cargo build --release` first (cargo bench does)",
        bin.display()
    );
    bin
}
