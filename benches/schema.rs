//! Schema benchmark: prints a table, asserts nothing.
//!
//! What the schema half costs: the first use of each piece of generated data
//! (registry, OpenAPI definitions, protobuf layouts), building every OpenAPI
//! document, aggregated discovery, one protobuf body decoded, a Table of
//! 1,000 pods.
//!
//! Run with `cargo bench --bench schema` (builds in release).

use std::time::Duration;

use kemu::SystemClock;
use kemu_dataplane::api::{discovery, openapi, protobuf, table};
use kemu_dataplane::resources::ResourceRegistry;
use serde_json::json;

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = SystemClock::instant();
    let out = f();
    (out, start.elapsed())
}

fn per_op(runs: u32, mut f: impl FnMut()) -> Duration {
    let start = SystemClock::instant();
    for _ in 0..runs {
        f();
    }
    start.elapsed() / runs
}

fn main() {
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/protobuf/kubectl-1.32-create-deployment.pb"
    ))
    .expect("fixture");
    let mut rows: Vec<(&str, Duration)> = Vec::new();

    let (reg, d) = time(ResourceRegistry::builtin);
    rows.push(("registry: first use (parse 66 types)", d));
    rows.push((
        "registry: builtin() again (clone)",
        per_op(1000, || drop(ResourceRegistry::builtin())),
    ));
    let (_, d) = time(openapi::definitions);
    rows.push(("OpenAPI definitions: first use (gunzip + parse)", d));
    let (_, d) = time(|| protobuf::decode(&body).expect("decode"));
    rows.push(("protobuf: first decode (loads layouts)", d));
    rows.push((
        "protobuf: decode `create deployment` body",
        per_op(10_000, || drop(protobuf::decode(&body))),
    ));
    let (docs, d) = time(|| openapi::Documents::build(&reg));
    rows.push(("OpenAPI: root and hashes (what start-up pays)", d));
    let (_, d) = time(|| docs.v3("apis/apps/v1").map(|(_, b)| b.len()));
    rows.push(("OpenAPI: first /openapi/v3/apis/apps/v1", d));
    let (_, d) = time(|| docs.v3("api/v1").map(|(_, b)| b.len()));
    rows.push(("OpenAPI: first /openapi/v3/api/v1", d));
    let (_, d) = time(|| docs.v2_protobuf().len());
    rows.push(("OpenAPI: first /openapi/v2 (JSON + protobuf)", d));
    let paths: Vec<String> = docs.v3_paths().map(String::from).collect();
    let (_, d) = time(|| paths.iter().filter_map(|p| docs.v3(p)).count());
    rows.push(("OpenAPI: every other v3 document", d));
    drop(docs);
    let groups: Vec<_> = reg
        .groups()
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .collect();
    rows.push((
        "discovery: aggregated /apis document",
        per_op(200, || {
            drop(discovery::aggregated(
                discovery::Aggregated::V2,
                &reg,
                &groups,
            ))
        }),
    ));
    let pods: Vec<_> = (0..1000)
        .map(|i| {
            json!({
                "metadata": { "name": format!("pod-{i}"), "creationTimestamp": "2026-01-01T00:00:00Z" },
                "spec": { "containers": [{ "name": "c" }], "nodeName": "n1" },
                "status": { "phase": "Running", "podIP": "10.0.0.1",
                            "containerStatuses": [{ "name": "c", "ready": true, "restartCount": 0, "state": { "running": {} } }] },
            })
        })
        .collect();
    let rt = reg.lookup("", "v1", "pods").expect("pods");
    let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
        .expect("time")
        .with_timezone(&chrono::Utc);
    rows.push((
        "table: render 1,000 pods",
        per_op(20, || {
            drop(table::render(
                &rt,
                &pods,
                table::IncludeObject::Metadata,
                json!({}),
                now,
            ))
        }),
    ));

    println!("| {:<50} | {:>12} |", "schema operation", "time");
    println!("|{:-<52}|{:->14}|", "", "");
    for (name, d) in rows {
        println!("| {name:<50} | {:>10.3?} |", d);
    }
}
