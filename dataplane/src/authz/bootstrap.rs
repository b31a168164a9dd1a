//! Upstream's bootstrap RBAC policy, present in every cluster from the start:
//! `cluster-admin`, `admin`, `edit`, `view` (aggregated), `system:discovery`,
//! `system:basic-user`, `system:public-info-viewer`, the `system:*` roles and
//! their bindings. The data is `fixtures/rbac/bootstrap.json`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::rbac::Rbac;
use super::source::{MemorySource, RbacSource};

const DATA: &str = include_str!("../../../fixtures/rbac/bootstrap.json");
const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

fn metadata(entry: &Value) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    if let Some(extra) = entry.get("labels").and_then(Value::as_object) {
        labels.extend(extra.clone());
    }
    let mut m = json!({
        "name": entry["name"],
        "labels": labels,
        "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
    });
    if let Some(ns) = entry.get("namespace") {
        m["namespace"] = ns.clone();
    }
    m
}

fn subjects(entry: &Value) -> Option<Value> {
    let list = entry.get("subjects").and_then(Value::as_array)?;
    if list.is_empty() {
        return None;
    }
    Some(
        list.iter()
            .map(|s| {
                let mut s = s.clone();
                if s["kind"] != "ServiceAccount" {
                    s["apiGroup"] = json!("rbac.authorization.k8s.io");
                }
                s
            })
            .collect(),
    )
}

fn binding(kind: &str, role_kind: &str, entry: &Value) -> Value {
    let mut b = json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata(entry),
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": entry["role"] },
    });
    if let Some(s) = subjects(entry) {
        b["subjects"] = s;
    }
    b
}

fn build() -> Vec<Value> {
    // The fixture is part of the build; a broken one fails the tests below.
    let data: Value = serde_json::from_str(DATA).unwrap_or(Value::Null);
    let list = |k: &str| {
        data.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for e in list("clusterRoles") {
        let mut r = json!({
            "apiVersion": API_VERSION,
            "kind": "ClusterRole",
            "metadata": metadata(&e),
            "rules": e.get("rules").cloned().unwrap_or(json!([])),
        });
        if let Some(a) = e.get("aggregationRule") {
            r["aggregationRule"] = a.clone();
        }
        out.push(r);
    }
    for e in list("clusterRoleBindings") {
        out.push(binding("ClusterRoleBinding", "ClusterRole", &e));
    }
    for e in list("roles") {
        out.push(json!({
            "apiVersion": API_VERSION,
            "kind": "Role",
            "metadata": metadata(&e),
            "rules": e.get("rules").cloned().unwrap_or(json!([])),
        }));
    }
    for e in list("roleBindings") {
        out.push(binding("RoleBinding", "Role", &e));
    }
    // Aggregated roles show their gathered rules, as the aggregation
    // controller writes them in a real cluster.
    let src = MemorySource::new(out.clone());
    let rbac = Rbac::new(&src);
    for o in out.iter_mut() {
        if o.get("aggregationRule").is_some() {
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_owned();
            let rules = rbac.cluster_role_rules(&name).unwrap_or_default();
            o["rules"] = rules.iter().map(|r| r.to_json()).collect();
        }
    }
    out
}

/// Every bootstrap object (ClusterRoles, ClusterRoleBindings, Roles and
/// RoleBindings in `kube-system` / `kube-public`), as the store should hold
/// them when a cluster is created.
pub fn objects() -> &'static [Value] {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(build)
}

/// The bootstrap policy as a source (for tests and for a store not yet seeded).
pub fn source() -> MemorySource {
    MemorySource::new(objects().iter().cloned())
}

/// The rules an aggregated ClusterRole should hold now (what upstream's
/// ClusterRole aggregation controller writes into `rules`); `None` when the
/// role does not exist or has no `aggregationRule`.
pub fn aggregated_rules(source: &dyn RbacSource, name: &str) -> Option<Vec<Value>> {
    let roles = source.cluster_roles();
    let role = roles
        .iter()
        .find(|r| r.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?;
    role.get("aggregationRule").filter(|a| !a.is_null())?;
    let rules = Rbac::new(source).cluster_role_rules(name)?;
    Some(rules.iter().map(|r| r.to_json()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::attributes::Attributes;
    use crate::authz::authorizer::{Authorizer, Mode};
    use crate::authz::source::Layered;
    use kemu_shared::UserInfo;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn fixture_parses_and_holds_the_key_objects() {
        let objs = objects();
        let names: Vec<(&str, &str)> = objs
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        for n in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
            "system:kube-controller-manager",
            "system:kube-scheduler",
            "system:node",
        ] {
            assert!(names.contains(&("ClusterRole", n)), "{n}");
        }
        for n in [
            "cluster-admin",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(names.contains(&("ClusterRoleBinding", n)), "{n}");
        }
        assert!(objs.len() > 50);
        let admin = objs
            .iter()
            .find(|o| o["metadata"]["name"] == "admin")
            .unwrap();
        assert!(admin["rules"].as_array().unwrap().len() > 20);
        assert_eq!(
            admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }

    #[test]
    fn default_roles_grant_what_upstream_grants() {
        let src = source();
        let mut extra = MemorySource::default();
        for (role, who) in [("view", "viewer"), ("edit", "editor"), ("admin", "nsadmin")] {
            extra.put(
                json!({"kind":"RoleBinding","metadata":{"name":who,"namespace":"dev"},
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":role},
                "subjects":[{"kind":"User","name":who}]}),
            );
        }
        let layered = Layered(vec![&src, &extra]);
        let authz = Authorizer::new(Mode::Rbac, &layered);
        let can = |who: &str, verb: &str, group: &str, res: &str| {
            authz
                .authorize(&Attributes::resource(
                    user(who, &["system:authenticated"]),
                    verb,
                    group,
                    res,
                    "dev",
                ))
                .allowed
        };
        // view: reads, but not secrets; no writes.
        assert!(can("viewer", "list", "", "pods"));
        assert!(can("viewer", "watch", "apps", "deployments"));
        assert!(!can("viewer", "get", "", "secrets"));
        assert!(!can("viewer", "create", "", "pods"));
        // edit: view + writes + secrets, but no RBAC.
        assert!(can("editor", "list", "", "pods"));
        assert!(can("editor", "get", "", "secrets"));
        assert!(can("editor", "create", "apps", "deployments"));
        assert!(!can(
            "editor",
            "create",
            "rbac.authorization.k8s.io",
            "roles"
        ));
        // admin: edit + roles and bindings.
        assert!(can(
            "nsadmin",
            "create",
            "rbac.authorization.k8s.io",
            "rolebindings"
        ));
        assert!(can("nsadmin", "delete", "", "pods"));
        assert!(!can("nsadmin", "delete", "", "namespaces"));
        // Nothing outside the namespace.
        let other = Attributes::resource(
            user("editor", &["system:authenticated"]),
            "list",
            "",
            "pods",
            "prod",
        );
        assert!(!authz.authorize(&other).allowed);
        // Everyone authenticated: discovery and self reviews; anonymous: public info only.
        let get = |groups: &[&str], path: &str| {
            authz
                .authorize(&Attributes::non_resource(user("x", groups), "get", path))
                .allowed
        };
        assert!(get(&["system:authenticated"], "/apis/apps/v1"));
        assert!(get(&["system:authenticated"], "/openapi/v3"));
        assert!(get(&["system:unauthenticated"], "/version"));
        assert!(get(&["system:unauthenticated"], "/healthz"));
        assert!(!get(&["system:unauthenticated"], "/apis"));
        assert!(!get(&["system:authenticated"], "/metrics"));
        let ssar = Attributes::resource(
            user("x", &["system:authenticated"]),
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
        );
        assert!(authz.authorize(&ssar).allowed);
        // system:masters via the cluster-admin binding too.
        let reason = Authorizer::new(Mode::Rbac, &src);
        let rbac = Rbac::new(&src);
        let a = Attributes::resource(user("root", &["system:masters"]), "delete", "", "nodes", "");
        assert!(reason.authorize(&a).allowed);
        assert_eq!(
            rbac.authorize(&a),
            Ok("RBAC: allowed by ClusterRoleBinding \"cluster-admin\" of ClusterRole \"cluster-admin\" to Group \"system:masters\"".into())
        );
    }

    #[test]
    fn aggregated_rules_follow_new_roles() {
        let mut src = source();
        src.put(json!({"kind":"ClusterRole","metadata":{"name":"crd-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
            "rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","list","watch"]}]}));
        let admin = aggregated_rules(&src, "admin").unwrap();
        assert!(
            admin
                .iter()
                .any(|r| r["apiGroups"] == json!(["example.com"]))
        );
        assert!(aggregated_rules(&src, "cluster-admin").is_none());
    }
}
