//! Authorization benchmark: prints a table, asserts nothing.
//!
//! The cost of one `authz::check_request` (HTTP request → attributes → RBAC
//! decision) over the bootstrap policy plus N namespaces, each with a Role and
//! a RoleBinding for its own ServiceAccount, read from a `MemorySource` (which
//! clones the objects it returns, as a store read would).
//!
//! Run with `cargo bench -p kemu-dataplane --bench authz`.

use kemu_dataplane::authz::{self, Layered, MemorySource, Mode, bootstrap};
use kemu_shared::{SystemClock, UserInfo};
use serde_json::json;

fn sa(ns: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{ns}:ci"),
        groups: authz::rules::service_account_groups(ns),
        ..Default::default()
    }
}

fn main() {
    println!("| namespaces | request | decision | µs/op |");
    println!("|---:|---|---|---:|");
    for n in [10usize, 100, 1000] {
        let boot = bootstrap::source();
        let mut own = MemorySource::default();
        for i in 0..n {
            let ns = format!("ns{i}");
            own.put(json!({"kind":"Role","metadata":{"name":"r","namespace":ns},
                "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}]}));
            own.put(
                json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":ns},
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},
                "subjects":[{"kind":"ServiceAccount","name":"ci","namespace":ns}]}),
            );
        }
        let src = Layered(vec![&boot, &own]);
        let user = sa("ns0");
        let cases = [
            (
                "GET /api/v1/namespaces/ns0/pods",
                "GET",
                "/api/v1/namespaces/ns0/pods",
                "",
            ),
            (
                "GET /api/v1/namespaces/ns0/secrets",
                "GET",
                "/api/v1/namespaces/ns0/secrets",
                "",
            ),
            ("GET /apis/apps/v1", "GET", "/apis/apps/v1", ""),
        ];
        for (label, method, path, query) in cases {
            let runs = 2000;
            let mut allowed = false;
            let start = SystemClock::instant();
            for _ in 0..runs {
                allowed = authz::check_request(Mode::Rbac, &src, user.clone(), method, path, query)
                    .is_ok();
            }
            let per = start.elapsed().as_secs_f64() * 1e6 / runs as f64;
            let decision = if allowed { "allowed" } else { "denied" };
            println!("| {n} | {label} | {decision} | {per:.1} |");
        }
    }
}
