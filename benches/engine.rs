//! Engine benchmark: prints a table, asserts nothing.
//!
//! Over HTTPS with a client certificate, as kubectl talks to a cluster (one
//! worker per core on each cluster listener, as kemu serves them):
//! - gets/s and creates/s (16 requests in flight),
//! - a list of 10,000 ConfigMaps (p50/p99 of 30 lists),
//! - watch event latency with 100 watchers (create → event received),
//! - beside them, a bare actix-web handler returning a fixed JSON body over the
//!   same TLS setup: the ceiling.
//!
//! Run with `cargo bench --bench engine` (builds in release).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use kemu::SystemClock;
use kemu::shared::{ClusterSpec, OwnerScope, advertise};
use parking_lot::Mutex;
use serde_json::json;

const CONCURRENCY: usize = 16;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
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

fn main() {
    kemu::shared::pki::install_crypto_provider();
    let kemu = kemu::Kemu::builder().build().unwrap();
    let now = kemu.clock().now();
    let cluster = kemu
        .registry()
        .create(ClusterSpec {
            scope: OwnerScope::Eks {
                account: "000000000000".into(),
                region: "us-east-1".into(),
            },
            name: "bench".into(),
            version: "1.34".into(),
            node_pools: vec![],
            tags: Default::default(),
            provisioning: Duration::ZERO,
            extra: serde_json::Value::Null,
        })
        .unwrap();
    let server = advertise(&cluster).server_url().unwrap();
    let cert = cluster
        .ca
        .client_cert("bench", &["system:masters".into()], now)
        .unwrap();
    let identity =
        reqwest::Identity::from_pem(format!("{}{}", cert.cert_pem, cert.key_pem).as_bytes())
            .unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(cluster.ca.cert_pem().as_bytes()).unwrap()])
        .identity(identity)
        .build()
        .unwrap();

    // The ceiling: a bare handler on its own TLS listener, as many workers.
    let serving = cluster
        .ca
        .serving_cert(&["127.0.0.1".into(), "localhost".into()], now)
        .unwrap();
    let tls = cluster.ca.rustls_server_config(&serving, true).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bare_port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            HttpServer::new(|| {
                App::new().route(
                    "/api/v1/namespaces/default/configmaps/fixed",
                    web::get().to(|| async {
                        HttpResponse::Ok().json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fixed", "namespace": "default", "resourceVersion": "5"}, "data": {"k": "v"}}))
                    }),
                )
            })
            .workers(std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
            .disable_signals()
            .listen_rustls_0_23(listener, tls)
            .unwrap()
            .run()
            .await
        })
    });
    let bare = format!("https://127.0.0.1:{bare_port}");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows: Vec<(String, String)> = Vec::new();
    rt.block_on(async {
        let cms = format!("{server}/api/v1/namespaces/default/configmaps");
        client
            .post(&cms)
            .json(&json!({"metadata": {"name": "fixed"}, "data": {"k": "v"}}))
            .send()
            .await
            .unwrap();
        // Warm both connections.
        for url in [format!("{cms}/fixed"), format!("{bare}/api/v1/namespaces/default/configmaps/fixed")] {
            assert!(client.get(&url).send().await.unwrap().status().is_success(), "{url}");
        }
        let n = 5000;
        let url = format!("{bare}/api/v1/namespaces/default/configmaps/fixed");
        let r = rate(n, |_| {
            let (c, u) = (client.clone(), url.clone());
            async move {
                c.get(&u).send().await.unwrap().bytes().await.unwrap();
            }
        })
        .await;
        rows.push(("ceiling: bare actix-web GET (fixed JSON)".into(), format!("{r:.0} req/s")));
        let url = format!("{cms}/fixed");
        let r = rate(n, |_| {
            let (c, u) = (client.clone(), url.clone());
            async move {
                c.get(&u).send().await.unwrap().bytes().await.unwrap();
            }
        })
        .await;
        rows.push(("engine GET one ConfigMap".into(), format!("{r:.0} req/s")));
        let cert_rate = r;

        // The same GET with a ServiceAccount token (TokenRequest), bound to
        // cluster-admin, on a client without a certificate.
        client
            .post(format!("{server}/api/v1/namespaces/default/serviceaccounts"))
            .json(&json!({"metadata": {"name": "bench"}}))
            .send()
            .await
            .unwrap();
        client
            .post(format!("{server}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"))
            .json(&json!({"metadata": {"name": "bench"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]}))
            .send()
            .await
            .unwrap();
        let issued: serde_json::Value = client
            .post(format!("{server}/api/v1/namespaces/default/serviceaccounts/bench/token"))
            .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = issued["status"]["token"].as_str().unwrap().to_owned();
        let bearer = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(cluster.ca.cert_pem().as_bytes()).unwrap()])
            .build()
            .unwrap();
        let got = bearer.get(&url).bearer_auth(&token).send().await.unwrap();
        assert!(got.status().is_success(), "{:?}", got.text().await);
        let r = rate(n, |_| {
            let (c, u, t) = (bearer.clone(), url.clone(), token.clone());
            async move {
                c.get(&u).bearer_auth(t).send().await.unwrap().bytes().await.unwrap();
            }
        })
        .await;
        rows.push((
            "engine GET one ConfigMap, ServiceAccount token".into(),
            format!("{r:.0} req/s ({:.2}x the certificate's)", r / cert_rate),
        ));
        let r = rate(n, |i| {
            let (c, u) = (client.clone(), cms.clone());
            async move {
                let resp = c
                    .post(&u)
                    .json(&json!({"metadata": {"name": format!("c-{i}")}, "data": {"k": "v"}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 201);
                // Read every body: a dropped one is reset, and hyper's client
                // closes a connection that resets too many (GOAWAY).
                resp.bytes().await.unwrap();
            }
        })
        .await;
        rows.push(("engine POST create ConfigMap".into(), format!("{r:.0} req/s")));

        // A list of 10,000 objects in its own namespace.
        client
            .post(format!("{server}/api/v1/namespaces"))
            .json(&json!({"metadata": {"name": "big"}}))
            .send()
            .await
            .unwrap();
        let big = format!("{server}/api/v1/namespaces/big/configmaps");
        rate(10_000, |i| {
            let (c, u) = (client.clone(), big.clone());
            async move {
                c.post(&u)
                    .json(&json!({"metadata": {"name": format!("b-{i:05}"), "labels": {"app": "bench"}}, "data": {"k": "v"}}))
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
            }
        })
        .await;
        let mut lists = Vec::new();
        let mut bytes = 0;
        for _ in 0..30 {
            let start = SystemClock::instant();
            let body = client.get(&big).send().await.unwrap().bytes().await.unwrap();
            lists.push(start.elapsed());
            bytes = body.len();
        }
        lists.sort();
        rows.push((
            format!("engine LIST 10,000 ConfigMaps ({:.1} MB)", bytes as f64 / 1e6),
            format!("p50 {:.1} ms, p99 {:.1} ms", pct(&lists, 0.5).as_secs_f64() * 1e3, pct(&lists, 0.99).as_secs_f64() * 1e3),
        ));

        // Watch latency: 100 watchers on one namespace, 50 creates.
        client
            .post(format!("{server}/api/v1/namespaces"))
            .json(&json!({"metadata": {"name": "w"}}))
            .send()
            .await
            .unwrap();
        let wurl = format!("{server}/api/v1/namespaces/w/configmaps");
        let rv = client.get(&wurl).send().await.unwrap().json::<serde_json::Value>().await.unwrap()
            ["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let received: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
        let events = 50;
        let mut watchers = Vec::new();
        for _ in 0..100 {
            let resp = client
                .get(format!("{wurl}?watch=true&resourceVersion={rv}"))
                .send()
                .await
                .unwrap();
            let received = received.clone();
            watchers.push(tokio::spawn(async move {
                let mut stream = resp.bytes_stream();
                let mut buf = Vec::new();
                let mut got = 0;
                while let Some(Ok(chunk)) = stream.next().await {
                    buf.extend_from_slice(&chunk);
                    while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=nl).collect();
                        let ev: serde_json::Value = serde_json::from_slice(&line).unwrap();
                        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default();
                        if let Some(i) = name.strip_prefix("w-").and_then(|i| i.parse().ok()) {
                            received.lock().push((i, SystemClock::instant()));
                            got += 1;
                        }
                    }
                    if got == events {
                        return;
                    }
                }
            }));
        }
        let mut sent = Vec::new();
        for i in 0..events {
            sent.push(SystemClock::instant());
            client
                .post(&wurl)
                .json(&json!({"metadata": {"name": format!("w-{i}")}}))
                .send()
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for w in watchers {
            let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
        }
        let got = received.lock().clone();
        let mut lat: Vec<Duration> = got.iter().map(|(i, at)| at.duration_since(sent[*i])).collect();
        lat.sort();
        rows.push((
            format!("watch latency, 100 watchers ({} of {} events)", lat.len(), 100 * events),
            format!("p50 {:.2} ms, p99 {:.2} ms", pct(&lat, 0.5).as_secs_f64() * 1e3, pct(&lat, 0.99).as_secs_f64() * 1e3),
        ));
    });

    println!("\n| measurement | result |\n|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
}
