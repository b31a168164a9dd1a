//! Property tests: strategic merge patch of Deployment containers agrees
//! with an independent model of upstream's semantics (containers merge by
//! name, env by name, ports by containerPort; `$patch: delete` removes by
//! key; the merged list is ordered as upstream's `normalizeElementOrder`:
//! the items the patch names in its order, the others in the server's,
//! interleaved so that an item new to the server comes before the server's).

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::strategic;
use crate::api::openapi;

/// A container as the model sees it: ordered maps keyed as upstream merges.
#[derive(Debug, Clone, PartialEq)]
struct Model {
    image: Option<String>,
    /// containerPort → protocol.
    ports: Vec<(i64, String)>,
    /// name → value.
    env: Vec<(String, String)>,
}

fn to_json(list: &[(String, Model)]) -> Value {
    Value::Array(
        list.iter()
            .map(|(name, m)| {
                let mut c = json!({"name": name});
                if let Some(i) = &m.image {
                    c["image"] = json!(i);
                }
                if !m.ports.is_empty() {
                    c["ports"] = m
                        .ports
                        .iter()
                        .map(|(p, proto)| json!({"containerPort": p, "protocol": proto}))
                        .collect();
                }
                if !m.env.is_empty() {
                    c["env"] = m
                        .env
                        .iter()
                        .map(|(n, v)| json!({"name": n, "value": v}))
                        .collect();
                }
                c
            })
            .collect(),
    )
}

fn upsert<K: PartialEq + Clone, V: Clone>(
    list: &mut Vec<(K, V)>,
    k: &K,
    f: impl FnOnce(Option<&V>) -> V,
) {
    match list.iter_mut().find(|(x, _)| x == k) {
        Some((_, v)) => *v = f(Some(v)),
        None => list.push((k.clone(), f(None))),
    }
}

/// Upstream's order of a merged list: `named` (the patch's keys) and the
/// rest from `server`, merged as two sorted runs compared by server
/// position; an item the server lacks wins its comparison.
fn upstream_order<K: PartialEq + Clone, V>(
    merged: Vec<(K, V)>,
    server: &[K],
    named: &[K],
) -> Vec<(K, V)> {
    let at = |list: &[K], k: &K| list.iter().position(|x| x == k);
    let (mut patched, mut kept): (Vec<_>, Vec<_>) = merged
        .into_iter()
        .partition(|(k, _)| at(named, k).is_some());
    patched.sort_by_key(|(k, _)| at(named, k));
    kept.sort_by_key(|(k, _)| at(server, k));
    let mut out = Vec::new();
    let mut patched = patched.into_iter().peekable();
    let mut kept = kept.into_iter().peekable();
    loop {
        let from_kept = match (kept.peek(), patched.peek()) {
            (None, None) => return out,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((a, _)), Some((b, _))) => match (at(server, a), at(server, b)) {
                (Some(x), Some(y)) => x < y,
                _ => false,
            },
        };
        out.extend(if from_kept {
            kept.next()
        } else {
            patched.next()
        });
    }
}

/// The model of upstream's strategic merge for these lists.
fn model_patch(
    live: &[(String, Model)],
    patch: &[(String, Option<Model>)],
) -> Vec<(String, Model)> {
    let mut out = live.to_vec();
    for (name, item) in patch {
        if item.is_none() {
            out.retain(|(n, _)| n != name);
        }
    }
    let server: Vec<String> = out.iter().map(|(n, _)| n.clone()).collect();
    let named: Vec<String> = patch
        .iter()
        .filter(|(_, m)| m.is_some())
        .map(|(n, _)| n.clone())
        .collect();
    for (name, item) in patch {
        match item {
            None => out.retain(|(n, _)| n != name),
            Some(p) => upsert(&mut out, name, |cur| {
                let mut m = cur.cloned().unwrap_or(Model {
                    image: None,
                    ports: vec![],
                    env: vec![],
                });
                if p.image.is_some() {
                    m.image = p.image.clone();
                }
                let ports: Vec<i64> = m.ports.iter().map(|(k, _)| *k).collect();
                for (port, proto) in &p.ports {
                    upsert(&mut m.ports, port, |_| proto.clone());
                }
                let named: Vec<i64> = p.ports.iter().map(|(k, _)| *k).collect();
                if !named.is_empty() {
                    m.ports = upstream_order(m.ports, &ports, &named);
                }
                let env: Vec<String> = m.env.iter().map(|(k, _)| k.clone()).collect();
                for (n, v) in &p.env {
                    upsert(&mut m.env, n, |_| v.clone());
                }
                let named: Vec<String> = p.env.iter().map(|(k, _)| k.clone()).collect();
                if !named.is_empty() {
                    m.env = upstream_order(m.env, &env, &named);
                }
                m
            }),
        }
    }
    upstream_order(out, &server, &named)
}

fn unique<K: Ord + Clone, V>(items: Vec<(K, V)>) -> Vec<(K, V)> {
    let mut seen = BTreeMap::new();
    items
        .into_iter()
        .filter(|(k, _)| seen.insert(k.clone(), ()).is_none())
        .collect()
}

fn container() -> impl Strategy<Value = Model> {
    (
        prop::option::of(prop::sample::select(vec!["nginx:1", "nginx:2", "busybox"])),
        prop::collection::vec(
            (
                prop::sample::select(vec![80i64, 443, 8080]),
                prop::sample::select(vec!["TCP", "UDP"]),
            ),
            0..3,
        ),
        prop::collection::vec(
            (
                prop::sample::select(vec!["A", "B", "C"]),
                prop::sample::select(vec!["1", "2"]),
            ),
            0..3,
        ),
    )
        .prop_map(|(image, ports, env)| Model {
            image: image.map(str::to_owned),
            ports: unique(ports.into_iter().map(|(p, s)| (p, s.to_owned())).collect()),
            env: unique(
                env.into_iter()
                    .map(|(n, v)| (n.to_owned(), v.to_owned()))
                    .collect(),
            ),
        })
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(str::to_owned)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn strategic_merge_agrees_with_the_model(
        live in prop::collection::vec((name(), container()), 0..4),
        patch in prop::collection::vec((name(), prop::option::of(container())), 0..4),
    ) {
        let live = unique(live);
        let patch = unique(patch);
        let patch_items: Vec<Value> = patch
            .iter()
            .map(|(n, m)| match m {
                None => json!({"name": n, "$patch": "delete"}),
                Some(m) => to_json(&[(n.clone(), m.clone())])[0].clone(),
            })
            .collect();
        let mut doc = json!({"spec": {"template": {"spec": {"containers": to_json(&live)}}}});
        let p = json!({"spec": {"template": {"spec": {"containers": patch_items}}}});
        let schema = openapi::definitions().get("io.k8s.api.apps.v1.Deployment");
        strategic::apply(&mut doc, &p, schema).unwrap();
        let want = to_json(&model_patch(&live, &patch));
        prop_assert_eq!(&doc["spec"]["template"]["spec"]["containers"], &want);
    }
}
