//! Property tests: server-side apply on generated Deployments agrees with
//! upstream's semantics: a first apply sets exactly the configuration, a
//! re-apply is a no-op, an item left out of the next configuration
//! (container by name, port by containerPort+protocol, env by name) is gone.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::api::openapi;

fn writer(now: &str) -> Writer<'static> {
    Writer {
        manager: "deployer",
        api_version: "apps/v1".into(),
        now: now.into(),
        schema: openapi::definitions().get("io.k8s.api.apps.v1.Deployment"),
        status_subresource: true,
        subresource: None,
        reset: &[],
    }
}

#[derive(Debug, Clone)]
struct Container {
    name: String,
    ports: Vec<(i64, &'static str)>,
    env: Vec<String>,
}

fn containers() -> impl Strategy<Value = Vec<Container>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["a", "b", "c", "d"]),
        (
            prop::collection::btree_set(
                (
                    prop::sample::select(vec![80i64, 443]),
                    prop::sample::select(vec!["TCP", "UDP"]),
                ),
                0..4,
            ),
            prop::collection::btree_set(prop::sample::select(vec!["X", "Y", "Z"]), 0..3),
        ),
        1..4,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(name, (ports, env))| Container {
                name: name.to_owned(),
                ports: ports.into_iter().collect(),
                env: env.into_iter().map(str::to_owned).collect(),
            })
            .collect()
    })
}

fn config(cs: &[Container]) -> Value {
    let list: Vec<Value> = cs
        .iter()
        .map(|c| {
            let mut v = json!({"name": c.name, "image": format!("{}:1", c.name)});
            if !c.ports.is_empty() {
                v["ports"] = c
                    .ports
                    .iter()
                    .map(|(p, proto)| json!({"containerPort": p, "protocol": proto}))
                    .collect();
            }
            if !c.env.is_empty() {
                v["env"] = c
                    .env
                    .iter()
                    .map(|n| json!({"name": n, "value": n}))
                    .collect();
            }
            v
        })
        .collect();
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list}}}})
}

fn without_managed(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    v
}

/// One item less: a container, a port or an env entry (by `pick`).
fn drop_one(cs: &[Container], pick: usize) -> Vec<Container> {
    let mut out = cs.to_vec();
    let i = pick % out.len();
    match pick % 3 {
        0 if out.len() > 1 => {
            out.remove(i);
        }
        1 if !out[i].ports.is_empty() => {
            let j = pick % out[i].ports.len();
            out[i].ports.remove(j);
        }
        _ if !out[i].env.is_empty() => {
            let j = pick % out[i].env.len();
            out[i].env.remove(j);
        }
        _ if out.len() > 1 => {
            out.remove(i);
        }
        _ => {}
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn apply_is_exact_idempotent_and_prunes(first in containers(), next in containers(), pick in 0usize..64) {
        let cfg = config(&first);
        let created = apply(None, &cfg, &writer("t0"), false).unwrap();
        prop_assert_eq!(without_managed(&created), cfg.clone());
        let again = apply(Some(&created), &cfg, &writer("t1"), false).unwrap();
        prop_assert_eq!(&again, &created);

        // An item left out of the configuration goes.
        let fewer = config(&drop_one(&first, pick));
        let pruned = apply(Some(&created), &fewer, &writer("t2"), false).unwrap();
        prop_assert_eq!(without_managed(&pruned), fewer);

        // Any next configuration, applied by the same sole manager, is what remains.
        let moved = config(&next);
        let after = apply(Some(&created), &moved, &writer("t3"), false).unwrap();
        prop_assert_eq!(without_managed(&after), moved);
    }
}
