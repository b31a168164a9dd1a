//! The checks on writing RBAC objects (`pkg/registry/rbac`): a user may write
//! a Role or ClusterRole only with rules they already hold (or the `escalate`
//! verb), and a binding only to a role whose rules they hold (or the `bind`
//! verb on it). `system:masters` may do both.

use std::collections::BTreeSet;

use kemu_shared::UserInfo;
use serde_json::Value;

use super::attributes::Attributes;
use super::authorizer::{Authorizer, Mode, is_master};
use super::forbidden::Forbidden;
use super::rbac::Rbac;
use super::rules::{PolicyRule, go_quote, go_quote_list};
use super::source::RbacSource;

/// The API group of the RBAC objects.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Upstream `BreakdownRule`: one rule per group × resource × verb (× name),
/// and per non-resource URL × verb.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for g in &rule.api_groups {
        for r in &rule.resources {
            for v in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(g),
                        resources: one(r),
                        verbs: one(v),
                        ..Default::default()
                    });
                } else {
                    for n in &rule.resource_names {
                        out.push(PolicyRule {
                            api_groups: one(g),
                            resources: one(r),
                            verbs: one(v),
                            resource_names: one(n),
                            ..Default::default()
                        });
                    }
                }
            }
        }
    }
    for u in &rule.non_resource_urls {
        for v in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(u),
                verbs: one(v),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], of: &[String]) -> bool {
    of.iter().all(|s| has(set, s))
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, "*") || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

/// Upstream `ruleCovers`.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|p| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, p))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Upstream `Covers`: whether `owner` holds every permission of `servant`,
/// and the atomic rules it lacks.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Upstream `CompactRules`: merges the verbs of simple rules on the same
/// group, resource and (at most one) name.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for r in rules {
        let is_simple = r.resource_names.len() <= 1
            && r.non_resource_urls.is_empty()
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r.clone());
            continue;
        }
        match simple.iter_mut().find(|s| {
            s.api_groups == r.api_groups
                && s.resources == r.resources
                && s.resource_names == r.resource_names
        }) {
            Some(s) => s.verbs.extend(r.verbs.iter().cloned()),
            None => simple.push(r.clone()),
        }
    }
    out.extend(simple);
    out
}

/// Upstream `ConfirmNoEscalation`: `Err(message)` when `user`, by the
/// bindings of `namespace`, does not hold every permission of `rules`.
pub fn confirm_no_escalation(
    source: &dyn RbacSource,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let set = Rbac::new(source).rules_for(user, namespace);
    let owner: Vec<PolicyRule> = set.rules.into_iter().map(|r| r.rule).collect();
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let lines: BTreeSet<String> = compact(&missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.username),
        go_quote_list(&user.groups),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !set.errors.is_empty() {
        let errs: Vec<String> = set.errors.iter().map(|e| registry_wording(e)).collect();
        msg = format!("{msg}; resolution errors: [{}]", errs.join(" "));
    }
    Err(msg)
}

/// The registry's NotFound names the plural resource, the authorizer's
/// listers the singular one.
fn registry_wording(e: &str) -> String {
    e.replacen("clusterrole.rbac", "clusterroles.rbac", 1)
        .replacen("role.rbac", "roles.rbac", 1)
}

/// Whether an update changes only what the garbage collector may change
/// (upstream `IsOnlyMutatingGCFields`), which needs no escalation check.
fn only_gc_fields(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
                "generation",
                "creationTimestamp",
                "uid",
            ] {
                m.remove(k);
            }
        }
        v
    };
    strip(new) == strip(old)
}

fn full_authority() -> Vec<PolicyRule> {
    let s = || vec!["*".to_owned()];
    vec![
        PolicyRule {
            verbs: s(),
            api_groups: s(),
            resources: s(),
            ..Default::default()
        },
        PolicyRule {
            verbs: s(),
            non_resource_urls: s(),
            ..Default::default()
        },
    ]
}

/// The check on creating (`old` = None) or updating a Role, ClusterRole,
/// RoleBinding or ClusterRoleBinding, run after authorization of the write
/// itself and before storing. `namespace` is the request's ("" for the
/// cluster-scoped kinds). `Err` is the 403 to answer with.
pub fn check_write(
    mode: Mode,
    source: &dyn RbacSource,
    user: &UserInfo,
    namespace: &str,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), Forbidden> {
    if mode == Mode::AllowAll || is_master(user) {
        return Ok(());
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let authorizer = Authorizer::new(mode, source);
    let resource = match kind {
        "Role" => "roles",
        "ClusterRole" => "clusterroles",
        "RoleBinding" => "rolebindings",
        "ClusterRoleBinding" => "clusterrolebindings",
        _ => return Ok(()),
    };
    let forbid = |why: String| Forbidden::of_object(RBAC_GROUP, resource, name, &why);
    if old.is_some_and(|o| only_gc_fields(object, o)) {
        return Ok(());
    }
    match kind {
        "Role" | "ClusterRole" => {
            let escalate =
                Attributes::resource(user.clone(), "escalate", RBAC_GROUP, resource, namespace)
                    .with_name(name);
            if authorizer.authorize(&escalate).allowed {
                return Ok(());
            }
            confirm_no_escalation(source, user, namespace, &PolicyRule::all_of(object))
                .map_err(forbid)?;
            if kind == "ClusterRole" && object.get("aggregationRule").is_some_and(|a| !a.is_null())
            {
                confirm_no_escalation(source, user, namespace, &full_authority()).map_err(
                    |_| {
                        forbid(
                            "must have cluster-admin privileges to use the aggregationRule".into(),
                        )
                    },
                )?;
            }
            Ok(())
        }
        _ => {
            let role_ref = object.get("roleRef").cloned().unwrap_or_default();
            let ref_kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
            let ref_resource = match ref_kind {
                "ClusterRole" => "clusterroles",
                "Role" => "roles",
                _ => "",
            };
            if !ref_resource.is_empty() {
                let bind = Attributes::resource(
                    user.clone(),
                    "bind",
                    role_ref
                        .get("apiGroup")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    ref_resource,
                    namespace,
                )
                .with_name(role_ref.get("name").and_then(Value::as_str).unwrap_or(""));
                if authorizer.authorize(&bind).allowed {
                    return Ok(());
                }
            }
            let rules = Rbac::new(source)
                .role_ref_rules(&role_ref, namespace)
                .map_err(|e| forbid(registry_wording(&e)))?;
            confirm_no_escalation(source, user, namespace, &rules).map_err(forbid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::source::MemorySource;
    use serde_json::json;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v)
    }

    #[test]
    fn covers_as_upstream() {
        // Cases from upstream policy_comparator_test.go.
        let owner = [rule(
            json!({"verbs":["*"],"apiGroups":["*"],"resources":["*"]}),
        )];
        assert!(
            covers(
                &owner,
                &[rule(
                    json!({"verbs":["get"],"apiGroups":["a"],"resources":["b"]})
                )]
            )
            .0
        );
        // Resource rules do not cover non-resource URLs.
        assert!(
            !covers(
                &owner,
                &[rule(json!({"verbs":["get"],"nonResourceURLs":["/api"]}))]
            )
            .0
        );

        let owner = [rule(
            json!({"verbs":["get"],"apiGroups":[""],"resources":["*/scale"]}),
        )];
        assert!(
            covers(
                &owner,
                &[rule(
                    json!({"verbs":["get"],"apiGroups":[""],"resources":["deployments/scale"]})
                )]
            )
            .0
        );
        assert!(
            !covers(
                &owner,
                &[rule(
                    json!({"verbs":["get"],"apiGroups":[""],"resources":["deployments"]})
                )]
            )
            .0
        );

        let owner = [rule(
            json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":["a"]}),
        )];
        assert!(
            !covers(
                &owner,
                &[rule(
                    json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"]})
                )]
            )
            .0
        );
        assert!(covers(&owner, &[rule(json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":["a"]}))]).0);

        let owner = [rule(json!({"verbs":["get"],"nonResourceURLs":["/apis/*"]}))];
        assert!(
            covers(
                &owner,
                &[rule(
                    json!({"verbs":["get"],"nonResourceURLs":["/apis/foo"]})
                )]
            )
            .0
        );
        assert!(
            !covers(
                &owner,
                &[rule(json!({"verbs":["get"],"nonResourceURLs":["/api"]}))]
            )
            .0
        );

        let owner = [
            rule(json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"]})),
            rule(json!({"verbs":["list"],"apiGroups":[""],"resources":["pods"]})),
        ];
        let (ok, missing) = covers(
            &owner,
            &[rule(
                json!({"verbs":["get","list","delete"],"apiGroups":[""],"resources":["pods"]}),
            )],
        );
        assert!(!ok);
        assert_eq!(
            missing,
            vec![rule(
                json!({"verbs":["delete"],"apiGroups":[""],"resources":["pods"]})
            )]
        );
    }

    fn cluster() -> MemorySource {
        MemorySource::new([
            json!({"kind":"Role","metadata":{"name":"pod-reader","namespace":"dev"},
                   "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}),
            json!({"kind":"Role","metadata":{"name":"rbac-writer","namespace":"dev"},
                   "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","rolebindings"],"verbs":["create","update","get","list"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"secret-reader"},
                   "rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"bob","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"},
                   "subjects":[{"kind":"User","name":"bob"}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"bob-rbac","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"rbac-writer"},
                   "subjects":[{"kind":"User","name":"bob"}]}),
        ])
    }

    fn bob() -> UserInfo {
        UserInfo {
            username: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    #[test]
    fn role_writes_cannot_escalate() {
        let src = cluster();
        let ok = json!({"kind":"Role","metadata":{"name":"r","namespace":"dev"},
                        "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]});
        assert!(check_write(Mode::Rbac, &src, &bob(), "dev", &ok, None).is_ok());
        let bad = json!({"kind":"Role","metadata":{"name":"r","namespace":"dev"},
                         "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","delete","patch"]}]});
        let f = check_write(Mode::Rbac, &src, &bob(), "dev", &bad, None).unwrap_err();
        assert_eq!(
            f.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"patch\"]}"
        );
        // The same rules elsewhere are not held.
        assert!(check_write(Mode::Rbac, &src, &bob(), "prod", &ok, None).is_err());
        // Masters and allow-all skip the check.
        let mut admin = bob();
        admin.groups.push("system:masters".into());
        assert!(check_write(Mode::Rbac, &src, &admin, "dev", &bad, None).is_ok());
        assert!(check_write(Mode::AllowAll, &src, &bob(), "dev", &bad, None).is_ok());
        // With the `escalate` verb on roles, any rules may be written.
        let mut esc = src.clone();
        esc.put(json!({"kind":"Role","metadata":{"name":"escalator","namespace":"dev"},
            "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["escalate"]}]}));
        esc.put(
            json!({"kind":"RoleBinding","metadata":{"name":"bob-esc","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"escalator"},
            "subjects":[{"kind":"User","name":"bob"}]}),
        );
        assert!(check_write(Mode::Rbac, &esc, &bob(), "dev", &bad, None).is_ok());
        // An update touching only GC fields is not checked.
        let mut gc = bad.clone();
        gc["metadata"]["finalizers"] = json!(["x"]);
        assert!(check_write(Mode::Rbac, &src, &bob(), "dev", &gc, Some(&bad)).is_ok());
    }

    #[test]
    fn binding_writes_need_the_rules_or_bind() {
        let src = cluster();
        let ok = json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"},
            "subjects":[{"kind":"User","name":"carol"}]});
        assert!(check_write(Mode::Rbac, &src, &bob(), "dev", &ok, None).is_ok());
        let bad = json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"secret-reader"},
            "subjects":[{"kind":"User","name":"carol"}]});
        let f = check_write(Mode::Rbac, &src, &bob(), "dev", &bad, None).unwrap_err();
        assert!(
            f.message.starts_with(
                "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\""
            ),
            "{}",
            f.message
        );
        assert!(
            f.message
                .ends_with("{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}")
        );
        let missing = json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"nope"},
            "subjects":[{"kind":"User","name":"carol"}]});
        let f = check_write(Mode::Rbac, &src, &bob(), "dev", &missing, None).unwrap_err();
        assert_eq!(
            f.message,
            "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: clusterroles.rbac.authorization.k8s.io \"nope\" not found"
        );
        // With `bind` on that ClusterRole, it may.
        let mut src = src;
        src.put(json!({"kind":"Role","metadata":{"name":"binder","namespace":"dev"},
            "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"resourceNames":["secret-reader"],"verbs":["bind"]}]}));
        src.put(
            json!({"kind":"RoleBinding","metadata":{"name":"bob-binder","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"binder"},
            "subjects":[{"kind":"User","name":"bob"}]}),
        );
        assert!(check_write(Mode::Rbac, &src, &bob(), "dev", &bad, None).is_ok());
    }

    #[test]
    fn aggregation_rules_need_full_authority() {
        let src = MemorySource::new([
            json!({"kind":"ClusterRole","metadata":{"name":"w"},
                   "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"verbs":["create"]}]}),
            json!({"kind":"ClusterRoleBinding","metadata":{"name":"w"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"w"},
                   "subjects":[{"kind":"User","name":"bob"}]}),
        ]);
        let agg = json!({"kind":"ClusterRole","metadata":{"name":"agg"},
            "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"x":"y"}}]}});
        let f = check_write(Mode::Rbac, &src, &bob(), "", &agg, None).unwrap_err();
        assert_eq!(
            f.message,
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
        );
    }

    #[test]
    fn compact_merges_verbs() {
        let c = compact(&[
            rule(json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"]})),
            rule(json!({"verbs":["list"],"apiGroups":[""],"resources":["pods"]})),
            rule(json!({"verbs":["get"],"nonResourceURLs":["/x"]})),
        ]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].verbs, vec!["get", "list"]);
    }
}
