//! Field management benchmark: prints a table, asserts nothing.
//!
//! The cost field management adds to one write of a Deployment with N
//! containers: recording an Update (create, and an update changing one
//! image), a server-side apply that creates, a re-apply (no-op) and an apply
//! that changes one field. Reads never pay anything.
//!
//! Run with `cargo bench -p kemu-dataplane --bench managedfields`.

use kemu_dataplane::api::managedfields::{Writer, apply, track_update, typed};
use kemu_dataplane::api::openapi;
use kemu_shared::SystemClock;
use serde_json::{Value, json};

fn deployment(containers: usize, image: &str) -> Value {
    let list: Vec<Value> = (0..containers)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": image,
                "ports": [{"containerPort": 8000 + i, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "resources": {"limits": {"cpu": "1"}}})
        })
        .collect();
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list}}}})
}

fn writer() -> Writer<'static> {
    Writer {
        manager: "bench",
        api_version: "apps/v1".into(),
        now: "2026-01-01T00:00:00Z".into(),
        schema: openapi::definitions().get("io.k8s.api.apps.v1.Deployment"),
        status_subresource: true,
        subresource: None,
        reset: &[],
    }
}

fn time(iters: u32, mut f: impl FnMut()) -> f64 {
    let start = SystemClock::instant();
    for _ in 0..iters {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
}

fn main() {
    let w = writer();
    println!("| containers | operation | µs/op |");
    println!("|---:|---|---:|");
    for n in [1usize, 10, 50] {
        let iters = 2000 / n as u32;
        let v1 = deployment(n, "app:1");
        let v2 = deployment(n, "app:2");
        let mut created = v1.clone();
        track_update(None, &mut created, &w);
        let rows = [
            (
                "track create (Update)",
                time(iters, || {
                    let mut o = v1.clone();
                    track_update(None, &mut o, &w);
                }),
            ),
            (
                "track update (Update)",
                time(iters, || {
                    let mut o = v2.clone();
                    track_update(Some(&created), &mut o, &w);
                }),
            ),
            (
                "clone only (baseline)",
                time(iters, || {
                    std::hint::black_box(v2.clone());
                }),
            ),
            (
                "field set of the object",
                time(iters, || {
                    std::hint::black_box(typed::to_field_set(&v1, w.schema));
                }),
            ),
            (
                "compare two versions",
                time(iters, || {
                    std::hint::black_box(typed::compare(&v1, &v2, w.schema));
                }),
            ),
        ];
        let applied = apply(None, &v1, &w, false).unwrap_or_default();
        let more = [
            (
                "apply create",
                time(iters, || {
                    std::hint::black_box(apply(None, &v1, &w, false).ok());
                }),
            ),
            (
                "apply again (no-op)",
                time(iters, || {
                    std::hint::black_box(apply(Some(&applied), &v1, &w, false).ok());
                }),
            ),
            (
                "apply a change",
                time(iters, || {
                    std::hint::black_box(apply(Some(&applied), &v2, &w, false).ok());
                }),
            ),
        ];
        for (op, us) in rows.iter().chain(more.iter()) {
            println!("| {n} | {op} | {us:.1} |");
        }
    }
}
