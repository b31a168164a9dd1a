//! Start-up benchmark: prints a table, asserts nothing.
//!
//! - `process → ready line`: spawn the release `kemu` binary on free ports and
//!   read its ready line from stdout.
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

fn main() {
    kemu::shared::pki::install_crypto_provider();
    let binary = release_binary();
    let mut ready = Vec::new();
    for _ in 0..RUNS {
        let start = SystemClock::instant();
        let mut child = Command::new(&binary)
            .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kemu");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        ready.push(start.elapsed());
        let _ = child.kill();
        let _ = child.wait();
    }

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

    println!("| figure ({RUNS} runs, release) | min | median | max |");
    println!("|---|---|---|---|");
    row("process start → ready line", &mut ready);
    row("engine build → first TLS /version", &mut first_version);
    row("cluster create (CA + listener)", &mut create_only);
}

fn row(name: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| {name} | {} | {} | {} |",
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
