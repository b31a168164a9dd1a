//! A concurrency soak on one cluster: writers racing on one object with
//! optimistic concurrency lose no update, and 100 watchers opened before
//! 10,000 writes each see every write once, in resourceVersion order, the
//! same sequence as every other watcher. All of it multiplexed over one
//! HTTP/2 connection, as client-go and kube-rs send it.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::eks_spec;
use futures_util::StreamExt as _;
use serde::Deserialize;

const WATCHERS: usize = 100;
/// Creates, spread over the writers.
const CREATES: usize = 9_000;
const WRITERS: usize = 8;
/// Successful read-modify-write increments per writer on the shared object.
const INCREMENTS: usize = 125;

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    object: Object,
}

#[derive(Deserialize)]
struct Object {
    metadata: Meta,
}

#[derive(Deserialize)]
struct Meta {
    name: String,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

struct Cluster {
    http: reqwest::Client,
    base: String,
    _kemu: kemu::Kemu,
}

fn cluster() -> Cluster {
    let kemu = kemu::Kemu::builder().build().unwrap();
    let record = kemu.registry().create(eks_spec("soak")).unwrap();
    let cert = record
        .ca
        .client_cert("kemu-admin", &["system:masters".into()], kemu.clock().now())
        .unwrap();
    let identity = format!("{}{}", cert.cert_pem, cert.key_pem);
    kemu::shared::pki::install_crypto_provider();
    let http = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(record.ca.cert_pem().as_bytes()).unwrap()])
        .identity(reqwest::Identity::from_pem(identity.as_bytes()).unwrap())
        .build()
        .unwrap();
    let server = kemu::shared::sentinel::advertise(&record)
        .server_url()
        .unwrap();
    Cluster {
        http,
        base: format!("{server}/api/v1/namespaces/default/configmaps"),
        _kemu: kemu,
    }
}

/// One watcher: the (name, resourceVersion) of each event until `total`
/// have arrived.
async fn watch(http: reqwest::Client, url: String, total: usize) -> Vec<(String, u64)> {
    let resp = http.get(&url).send().await.unwrap();
    assert!(resp.status().is_success(), "watch: {}", resp.status());
    let mut body = resp.bytes_stream();
    let mut buf = Vec::new();
    let mut seen = Vec::with_capacity(total);
    while seen.len() < total {
        let Some(chunk) = body.next().await else {
            panic!("watch ended after {} of {total} events", seen.len());
        };
        buf.extend_from_slice(&chunk.unwrap());
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let e: Event = serde_json::from_slice(&line).unwrap();
            // The root-CA publisher adds its ConfigMap to the namespace
            // whenever it gets to it, possibly after the watch starts.
            if e.kind == "BOOKMARK" || e.object.metadata.name == "kube-root-ca.crt" {
                continue;
            }
            assert!(
                e.kind == "ADDED" || e.kind == "MODIFIED",
                "unexpected {}",
                e.kind
            );
            let rv = e.object.metadata.resource_version.parse().unwrap();
            seen.push((e.object.metadata.name, rv));
        }
    }
    seen
}

async fn increment(c: &Cluster) {
    let url = format!("{}/counter", c.base);
    let mut done = 0;
    while done < INCREMENTS {
        let mut cm: serde_json::Value =
            c.http.get(&url).send().await.unwrap().json().await.unwrap();
        let n: u64 = cm["data"]["n"].as_str().unwrap().parse().unwrap();
        cm["data"]["n"] = serde_json::json!((n + 1).to_string());
        let resp = c.http.put(&url).json(&cm).send().await.unwrap();
        let status = resp.status().as_u16();
        // Every body is read: over HTTP/2 a dropped one is a RST_STREAM, and
        // hyper's client answers the server's DATA that crossed it with
        // resets of its own until, past 1024, it sends GOAWAY itself.
        let body = resp.text().await.unwrap();
        match status {
            200 => done += 1,
            409 => {}
            s => panic!("update: {s} {body}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_see_every_write_once_in_order_and_no_update_is_lost() {
    let c = cluster();
    let created = c
        .http
        .post(&c.base)
        .json(&serde_json::json!({"metadata": {"name": "counter"}, "data": {"n": "0"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let from: serde_json::Value = created.json().await.unwrap();
    let from = from["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let total = CREATES + WRITERS * INCREMENTS;
    let url = format!("{}?watch=1&resourceVersion={from}", c.base);
    let watchers: Vec<_> = (0..WATCHERS)
        .map(|_| tokio::spawn(watch(c.http.clone(), url.clone(), total)))
        .collect();

    let c = std::sync::Arc::new(c);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let c = c.clone();
            tokio::spawn(async move {
                for i in (w..CREATES).step_by(WRITERS) {
                    let resp = c
                        .http
                        .post(&c.base)
                        .json(&serde_json::json!({"metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status(), 201);
                    resp.bytes().await.unwrap();
                }
                increment(&c).await;
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let counter: serde_json::Value = c
        .http
        .get(format!("{}/counter", c.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        counter["data"]["n"],
        (WRITERS * INCREMENTS).to_string(),
        "an update was lost"
    );

    let mut first: Option<Vec<(String, u64)>> = None;
    for w in watchers {
        // A guard against a hang: every event is already written.
        let seen = tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("a watcher stalled")
            .unwrap();
        assert!(
            seen.windows(2).all(|p| p[0].1 < p[1].1),
            "events out of order or repeated"
        );
        let created: HashSet<&str> = seen
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| *n != "counter")
            .collect();
        assert_eq!(created.len(), CREATES, "a create was missed");
        match &first {
            None => first = Some(seen),
            Some(f) => assert!(f == &seen, "watchers saw different sequences"),
        }
    }
}
