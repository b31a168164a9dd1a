//! GKE facade benchmark: prints a table, asserts nothing.
//!
//! Each row is one container/v1 call served in-process through the facade's
//! actix service (no socket), with a bearer token and the body gcloud sends:
//! clusters.create (with the data plane, which binds the cluster's listener and
//! makes its CA and serving certificate; and without it), clusters.get,
//! nodePools.setSize, operations.get, clusters.list over all clusters, and
//! clusters.delete.
//!
//! Run with `cargo bench --bench gke_facade` (builds in release).

use std::time::Duration;

use actix_web::{App, test};
use kemu::{Kemu, SystemClock};
use serde_json::{Value, json};

const CLUSTERS: usize = 100;
const LOC: &str = "/v1/projects/bench-proj/locations/us-central1-a";

fn main() {
    actix_web::rt::System::new().block_on(async {
        println!("| call ({CLUSTERS} clusters, release) | min | median | p95 | max |");
        println!("|---|---|---|---|---|");
        for dataplane in [true, false] {
            run(dataplane).await;
        }
    });
}

async fn run(dataplane: bool) {
    let kemu = Kemu::builder().dataplane(dataplane).build().expect("kemu");
    let app = test::init_service(App::new().configure(kemu.gke())).await;
    let call = |method: &str, path: String, body: Option<Value>| {
        let mut req = test::TestRequest::default()
            .method(method.parse().expect("method"))
            .uri(&path)
            .insert_header(("authorization", "Bearer bench"));
        if let Some(b) = body {
            req = req.set_json(b);
        }
        req.to_request()
    };
    let mut timed: Vec<(&str, Vec<Duration>)> = [
        "create",
        "get",
        "setSize",
        "operations.get",
        "list",
        "delete",
    ]
    .iter()
    .map(|n| (*n, Vec::new()))
    .collect();
    let mut time = async |row: usize, req| -> Value {
        let start = SystemClock::instant();
        let resp = test::call_service(&app, req).await;
        let body: Value = test::read_body_json(resp).await;
        timed[row].1.push(start.elapsed());
        body
    };
    for i in 0..CLUSTERS {
        let name = format!("b{i}");
        let create = json!({"cluster": {"name": name, "nodePools": [{"name": "default-pool",
            "initialNodeCount": 3, "config": {"machineType": "e2-standard-4"}}]}});
        time(0, call("POST", format!("{LOC}/clusters"), Some(create))).await;
        time(1, call("GET", format!("{LOC}/clusters/{name}"), None)).await;
        let op = time(
            2,
            call(
                "POST",
                format!("{LOC}/clusters/{name}/nodePools/default-pool:setSize"),
                Some(json!({"nodeCount": 5})),
            ),
        )
        .await;
        let id = op["name"].as_str().unwrap_or_default().to_owned();
        time(3, call("GET", format!("{LOC}/operations/{id}"), None)).await;
    }
    for _ in 0..10 {
        time(
            4,
            call(
                "GET",
                "/v1/projects/bench-proj/locations/-/clusters".into(),
                None,
            ),
        )
        .await;
    }
    for i in 0..CLUSTERS {
        time(5, call("DELETE", format!("{LOC}/clusters/b{i}"), None)).await;
    }
    let label = if dataplane {
        "data plane"
    } else {
        "no data plane"
    };
    for (name, samples) in &mut timed {
        row(&format!("{name} ({label})"), samples);
    }
    kemu.shutdown().await;
}

fn row(name: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "| {name} | {:.2?} | {:.2?} | {:.2?} | {:.2?} |",
        samples[0],
        at(0.5),
        at(0.95),
        samples[samples.len() - 1]
    );
}
