//! The RBAC evaluator, with upstream's semantics
//! (`plugin/pkg/auth/authorizer/rbac` and `pkg/registry/rbac/validation`):
//! ClusterRoleBindings first, then the RoleBindings of the request's
//! namespace; a binding applies when one of its subjects names the user; its
//! roleRef's rules (a ClusterRole's aggregated live from its
//! `aggregationRule`) are checked one by one; the first that allows wins.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, HashSet};

use kemu_shared::UserInfo;
use serde_json::Value;

use super::attributes::Attributes;
use super::rules::{PolicyRule, Subject, go_quote};
use super::source::RbacSource;
use crate::label_selector as selector;

/// A rule and the binding it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedRule {
    /// The rule.
    pub rule: PolicyRule,
    /// `ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`, as upstream
    /// describes where an allow came from.
    pub source: String,
}

/// Every rule that applies to a user in a namespace, and the errors met
/// resolving them (a binding to a role that does not exist).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Rules, in evaluation order.
    pub rules: Vec<SourcedRule>,
    /// Resolution errors, worded as upstream.
    pub errors: Vec<String>,
}

/// An RBAC evaluator over one cluster's objects.
pub struct Rbac<'a> {
    source: &'a dyn RbacSource,
    /// Every ClusterRole by name, read only when an aggregation needs it.
    all_cluster_roles: OnceCell<BTreeMap<String, Value>>,
    /// Effective rules of ClusterRoles resolved so far (`None`: not found).
    memo: RefCell<BTreeMap<String, Option<Vec<PolicyRule>>>>,
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn str_at<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's aggregate of resolution errors: one error as is, more as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors.len() {
        0 => String::new(),
        1 => errors[0].clone(),
        _ => format!("[{}]", errors.join(", ")),
    }
}

impl<'a> Rbac<'a> {
    /// An evaluator reading from `source`.
    pub fn new(source: &'a dyn RbacSource) -> Self {
        Rbac {
            source,
            all_cluster_roles: OnceCell::new(),
            memo: RefCell::new(BTreeMap::new()),
        }
    }

    fn all_cluster_roles(&self) -> &BTreeMap<String, Value> {
        // The first layer holding a name wins, as point reads find it.
        self.all_cluster_roles.get_or_init(|| {
            let mut all = BTreeMap::new();
            for r in self.source.cluster_roles() {
                all.entry(name_of(&r).to_owned()).or_insert(r);
            }
            all
        })
    }

    /// The effective rules of a ClusterRole: its `rules`, or, with an
    /// `aggregationRule`, the union of the rules of every ClusterRole its
    /// selectors match (recursively, as the aggregation controller converges).
    pub fn cluster_role_rules(&self, name: &str) -> Option<Vec<PolicyRule>> {
        let mut visiting = HashSet::new();
        self.cluster_role_rules_inner(name, &mut visiting)
    }

    fn cluster_role_rules_inner(
        &self,
        name: &str,
        visiting: &mut HashSet<String>,
    ) -> Option<Vec<PolicyRule>> {
        if let Some(r) = self.memo.borrow().get(name) {
            return r.clone();
        }
        let role = match self.all_cluster_roles.get() {
            Some(all) => all.get(name).cloned(),
            None => self.source.cluster_role(name),
        };
        let Some(role) = role else {
            self.memo.borrow_mut().insert(name.to_owned(), None);
            return None;
        };
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            let rules = PolicyRule::all_of(&role);
            self.memo
                .borrow_mut()
                .insert(name.to_owned(), Some(rules.clone()));
            return Some(rules);
        };
        visiting.insert(name.to_owned());
        let empty = Value::Object(Default::default());
        let mut rules: Vec<PolicyRule> = Vec::new();
        // BTreeMap: matched roles in name order, as the controller sorts them.
        for (other, obj) in self.all_cluster_roles() {
            if other == name || visiting.contains(other) {
                continue;
            }
            let labels = obj.pointer("/metadata/labels").unwrap_or(&empty);
            if !selectors.iter().any(|s| selector::matches(s, labels)) {
                continue;
            }
            for rule in self
                .cluster_role_rules_inner(other, visiting)
                .unwrap_or_default()
            {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        visiting.remove(name);
        self.memo
            .borrow_mut()
            .insert(name.to_owned(), Some(rules.clone()));
        Some(rules)
    }

    /// The rules a roleRef points at, from a binding in `namespace` ("" for a
    /// ClusterRoleBinding). Errors are worded as upstream's RBAC authorizer
    /// words them (its listers' NotFound).
    pub fn role_ref_rules(
        &self,
        role_ref: &Value,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        let kind = str_at(role_ref, "/kind");
        let name = str_at(role_ref, "/name");
        match kind {
            "ClusterRole" => self.cluster_role_rules(name).ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io {} not found",
                    go_quote(name)
                )
            }),
            "Role" => self
                .source
                .role(namespace, name)
                .as_ref()
                .map(PolicyRule::all_of)
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        go_quote(name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }

    /// Visits every rule that applies to `user` in `namespace` in upstream's
    /// order; `visit` returns false to stop.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(Option<&SourcedRule>, Option<String>) -> bool,
    ) {
        for b in self.source.cluster_role_bindings() {
            let Some(subject) = applying_subject(&b, user, "") else {
                continue;
            };
            let role_ref = b.get("roleRef").cloned().unwrap_or_default();
            match self.role_ref_rules(&role_ref, "") {
                Err(e) => {
                    if !visit(None, Some(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = format!(
                        "ClusterRoleBinding {} of {} {} to {}",
                        go_quote(name_of(&b)),
                        str_at(&role_ref, "/kind"),
                        go_quote(str_at(&role_ref, "/name")),
                        subject.describe("")
                    );
                    for rule in rules {
                        let sr = SourcedRule {
                            rule,
                            source: source.clone(),
                        };
                        if !visit(Some(&sr), None) {
                            return;
                        }
                    }
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        for b in self.source.role_bindings(namespace) {
            let Some(subject) = applying_subject(&b, user, namespace) else {
                continue;
            };
            let role_ref = b.get("roleRef").cloned().unwrap_or_default();
            match self.role_ref_rules(&role_ref, namespace) {
                Err(e) => {
                    if !visit(None, Some(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    // Upstream prints the binding as name/namespace.
                    let source = format!(
                        "RoleBinding {} of {} {} to {}",
                        go_quote(&format!("{}/{}", name_of(&b), namespace)),
                        str_at(&role_ref, "/kind"),
                        go_quote(str_at(&role_ref, "/name")),
                        subject.describe(namespace)
                    );
                    for rule in rules {
                        let sr = SourcedRule {
                            rule,
                            source: source.clone(),
                        };
                        if !visit(Some(&sr), None) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Decides a request: `Ok(reason)` when allowed (`RBAC: allowed by …`),
    /// `Err(reason)` when not (empty, or `RBAC: <resolution errors>`).
    pub fn authorize(&self, a: &Attributes) -> Result<String, String> {
        let mut allowed = None;
        let mut errors = Vec::new();
        self.visit(&a.user, &a.namespace, &mut |rule, err| {
            if let Some(r) = rule
                && r.rule.allows(a)
            {
                allowed = Some(format!("RBAC: allowed by {}", r.source));
                return false;
            }
            if let Some(e) = err {
                errors.push(e);
            }
            true
        });
        match allowed {
            Some(reason) => Ok(reason),
            None if errors.is_empty() => Err(String::new()),
            None => Err(format!("RBAC: {}", aggregate(&errors))),
        }
    }

    /// Every rule that applies to `user` in `namespace` (upstream `RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let mut set = RuleSet::default();
        self.visit(user, namespace, &mut |rule, err| {
            if let Some(r) = rule {
                set.rules.push(r.clone());
            }
            if let Some(e) = err {
                set.errors.push(e);
            }
            true
        });
        set
    }
}

/// The first subject of `binding` that names the user, if any.
fn applying_subject(binding: &Value, user: &UserInfo, namespace: &str) -> Option<Subject> {
    binding
        .get("subjects")
        .and_then(Value::as_array)?
        .iter()
        .map(Subject::from_json)
        .find(|s| s.applies_to(&user.username, &user.groups, namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::source::MemorySource;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn fixture() -> MemorySource {
        MemorySource::new([
            json!({"kind":"ClusterRole","metadata":{"name":"agg","labels":{}},
                   "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"to-agg":"true"}}]}}),
            json!({"kind":"ClusterRole","metadata":{"name":"piece1","labels":{"to-agg":"true"}},
                   "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"piece2","labels":{"to-agg":"true"}},
                   "rules":[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["list"]},
                            {"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"reader"},
                   "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}),
            json!({"kind":"Role","metadata":{"name":"pods","namespace":"dev"},
                   "rules":[{"apiGroups":[""],"resources":["pods","pods/log"],"verbs":["get","list"]}]}),
            json!({"kind":"ClusterRoleBinding","metadata":{"name":"agg-alice"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"agg"},
                   "subjects":[{"kind":"User","name":"alice"}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"ci-pods","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pods"},
                   "subjects":[{"kind":"ServiceAccount","name":"ci"}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"team-reader","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"},
                   "subjects":[{"kind":"Group","name":"team"}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"dangling","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"gone"},
                   "subjects":[{"kind":"Group","name":"team"}]}),
        ])
    }

    #[test]
    fn aggregation_unions_matching_roles() {
        let src = fixture();
        let rbac = Rbac::new(&src);
        let rules = rbac.cluster_role_rules("agg").unwrap();
        assert_eq!(rules.len(), 2, "duplicates removed: {rules:?}");
        let a = Attributes::resource(user("alice", &[]), "list", "apps", "deployments", "x");
        assert_eq!(
            rbac.authorize(&a),
            Ok("RBAC: allowed by ClusterRoleBinding \"agg-alice\" of ClusterRole \"agg\" to User \"alice\"".into())
        );
    }

    #[test]
    fn role_bindings_apply_only_in_their_namespace() {
        let src = fixture();
        let rbac = Rbac::new(&src);
        let ci = user(
            "system:serviceaccount:dev:ci",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:dev",
                "system:authenticated",
            ],
        );
        let a = Attributes::resource(ci.clone(), "list", "", "pods", "dev");
        assert_eq!(
            rbac.authorize(&a),
            Ok("RBAC: allowed by RoleBinding \"ci-pods/dev\" of Role \"pods\" to ServiceAccount \"ci/dev\"".into())
        );
        let log = Attributes::resource(ci.clone(), "get", "", "pods", "dev")
            .with_subresource("log")
            .with_name("p");
        assert!(rbac.authorize(&log).is_ok());
        let del = Attributes::resource(ci.clone(), "delete", "", "pods", "dev").with_name("p");
        assert_eq!(rbac.authorize(&del), Err(String::new()));
        let other_ns = Attributes::resource(ci, "list", "", "pods", "prod");
        assert!(rbac.authorize(&other_ns).is_err());
    }

    #[test]
    fn dangling_bindings_give_the_upstream_reason() {
        let src = fixture();
        let rbac = Rbac::new(&src);
        let bob = user("bob", &["team"]);
        let ok = Attributes::resource(bob.clone(), "get", "", "configmaps", "dev").with_name("c");
        assert!(rbac.authorize(&ok).is_ok());
        let no = Attributes::resource(bob, "get", "", "secrets", "dev").with_name("s");
        assert_eq!(
            rbac.authorize(&no),
            Err("RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found".into())
        );
    }

    #[test]
    fn rules_for_lists_cluster_then_namespace_rules() {
        let src = fixture();
        let rbac = Rbac::new(&src);
        let set = rbac.rules_for(&user("alice", &["team"]), "dev");
        assert_eq!(set.rules.len(), 3);
        assert_eq!(set.errors.len(), 1);
        assert!(set.rules[0].source.starts_with("ClusterRoleBinding"));
        assert!(set.rules[2].source.starts_with("RoleBinding"));
    }
}
