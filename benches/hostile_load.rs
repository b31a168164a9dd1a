//! A well-behaved client's GET and LIST latency on one cluster, alone and
//! while another client sends hostile bodies to the same cluster: prints a
//! table, asserts nothing.
//!
//! For 1, 8, 32 and 128 connections the well-behaved client sends GETs of
//! one ConfigMap and LISTs of 100, half each, and the table gives its
//! throughput and p50/p99 latency unloaded, then loaded. The hostile client
//! loops over three bodies on connections of its own: a 3 MiB JSON
//! ConfigMap (parsed, then refused for its size), YAML nested 9,000 levels
//! (under go-yaml's bound, so parsed), and a body trickled in slowly. The
//! issue's bar: loaded p99 within 2× of unloaded.
//!
//! Run with `cargo bench --bench hostile_load` (builds in release).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use kemu::SystemClock;

const REQUESTS: usize = 4000;
const CONNECTIONS: [usize; 4] = [1, 8, 32, 128];

fn main() {
    kemu::shared::pki::install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The hostile client has threads of its own: on the measured client's, its
    // encrypting 3 MiB would stall the very requests being timed.
    let hostile_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let kemu = kemu::Kemu::builder().build().unwrap();
    let cluster = kemu
        .registry()
        .create(kemu::shared::ClusterSpec {
            scope: kemu::shared::OwnerScope::Eks {
                account: "000000000000".into(),
                region: "us-east-1".into(),
            },
            name: "load".into(),
            version: "1.34".into(),
            node_pools: vec![],
            tags: Default::default(),
            provisioning: Duration::ZERO,
            extra: serde_json::Value::Null,
        })
        .unwrap();
    let base = format!("https://127.0.0.1:{}", cluster.port.unwrap());
    let now = kemu.clock().now();
    let cert = cluster
        .ca
        .client_cert("bench", &["system:masters".into()], now)
        .unwrap();
    let identity = format!("{}{}", cert.cert_pem, cert.key_pem);
    let client = |pool: usize| {
        reqwest::Client::builder()
            .tls_certs_only([
                reqwest::Certificate::from_pem(cluster.ca.cert_pem().as_bytes()).unwrap(),
            ])
            .identity(reqwest::Identity::from_pem(identity.as_bytes()).unwrap())
            .http1_only()
            .pool_max_idle_per_host(pool)
            .build()
            .unwrap()
    };
    let cms = format!("{base}/api/v1/namespaces/default/configmaps");
    runtime.block_on(async {
        let c = client(1);
        for i in 0..100 {
            let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}")}, "data": {"k": "v".repeat(200)}});
            let s = c.post(&cms).json(&body).send().await.unwrap().status();
            assert!(s.is_success(), "{s}");
        }
    });

    println!("| connections | load | requests/s | p50 | p99 |");
    println!("|---|---|---|---|---|");
    for conns in CONNECTIONS {
        let calm = runtime.block_on(measure(client(conns), &cms, conns));
        let stop = Arc::new(AtomicBool::new(false));
        let hostile = hostile_runtime.spawn(hostile(client(4), cms.clone(), stop.clone()));
        let loaded = runtime.block_on(measure(client(conns), &cms, conns));
        stop.store(true, Ordering::SeqCst);
        let sent = hostile_runtime.block_on(hostile).unwrap();
        row(conns, "alone", &calm);
        row(conns, &format!("hostile bodies ({sent} sent)"), &loaded);
    }
    runtime.block_on(kemu.shutdown());
}

/// Latencies of [`REQUESTS`] GETs and LISTs over `conns` concurrent
/// connections, and the wall time they took.
async fn measure(client: reqwest::Client, cms: &str, conns: usize) -> (Vec<Duration>, Duration) {
    let start = SystemClock::instant();
    let mut tasks = Vec::new();
    for t in 0..conns {
        let (client, cms) = (client.clone(), cms.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            for i in (t..REQUESTS).step_by(conns) {
                let url = if i % 2 == 0 {
                    format!("{cms}/cm-{}", i % 100)
                } else {
                    cms.clone()
                };
                let at = SystemClock::instant();
                let resp = client.get(&url).send().await.unwrap();
                assert!(resp.status().is_success());
                resp.bytes().await.unwrap();
                lat.push(at.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    (all, start.elapsed())
}

/// Sends hostile bodies until `stop`; how many it sent.
async fn hostile(client: reqwest::Client, cms: String, stop: Arc<AtomicBool>) -> usize {
    let large = serde_json::to_vec(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "large"}, "data": {"k": "x".repeat(3 * 1024 * 1024 - 200)}}))
    .unwrap();
    let nested = format!("{}1{}", "[".repeat(9000), "]".repeat(9000)).into_bytes();
    let mut sent = 0;
    while !stop.load(Ordering::SeqCst) {
        let (body, ct): (Vec<u8>, &str) = match sent % 3 {
            0 => (large.clone(), "application/json"),
            1 => (nested.clone(), "application/yaml"),
            _ => {
                // A slow body: 64 KiB in 16 pieces, 10 ms apart.
                let chunks = (0..16).map(|_| Ok::<_, std::io::Error>(bytes_of(4096)));
                let stream = futures_util::stream::iter(chunks).then(|c| async {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    c
                });
                let _ = client
                    .post(&cms)
                    .header("content-type", "application/json")
                    .body(reqwest::Body::wrap_stream(stream))
                    .send()
                    .await;
                sent += 1;
                continue;
            }
        };
        let _ = client
            .post(&cms)
            .header("content-type", ct)
            .body(body)
            .send()
            .await;
        sent += 1;
    }
    sent
}

fn bytes_of(n: usize) -> Vec<u8> {
    vec![b' '; n]
}

fn row(conns: usize, load: &str, (lat, wall): &(Vec<Duration>, Duration)) {
    let mut lat = lat.clone();
    lat.sort();
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "| {conns} | {load} | {:.0} | {} | {} |",
        lat.len() as f64 / wall.as_secs_f64(),
        ms(p(0.5)),
        ms(p(0.99))
    );
}
