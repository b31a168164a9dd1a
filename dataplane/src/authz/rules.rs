//! RBAC's PolicyRule and Subject, read from JSON objects, with upstream's
//! matching helpers (`pkg/apis/rbac/v1/evaluation_helpers.go`).

use serde_json::{Value, json};

use super::attributes::Attributes;

/// One PolicyRule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PolicyRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// API groups, `*` for all.
    pub api_groups: Vec<String>,
    /// Resources, `*`, `res/sub` or `*/sub`.
    pub resources: Vec<String>,
    /// Names the rule is limited to; empty = all.
    pub resource_names: Vec<String>,
    /// Non-resource URLs, with a trailing `*` as a prefix match.
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

impl PolicyRule {
    /// Reads a rule from its JSON form (missing fields are empty).
    pub fn from_json(v: &Value) -> Self {
        PolicyRule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// All `rules` of a Role or ClusterRole object.
    pub fn all_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as JSON, omitting empty lists as the API does.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "verbs": self.verbs });
        let put = |v: &mut Value, k: &str, l: &Vec<String>| {
            if !l.is_empty() {
                v[k] = json!(l);
            }
        };
        put(&mut v, "apiGroups", &self.api_groups);
        put(&mut v, "resources", &self.resources);
        put(&mut v, "resourceNames", &self.resource_names);
        put(&mut v, "nonResourceURLs", &self.non_resource_urls);
        v
    }

    /// Whether the rule allows the request (upstream `RuleAllows`).
    pub fn allows(&self, a: &Attributes) -> bool {
        if a.resource_request {
            let combined = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            self.verb_matches(&a.verb)
                && self.api_group_matches(&a.api_group)
                && self.resource_matches(&combined, &a.subresource)
                && self.resource_name_matches(&a.name)
        } else {
            self.verb_matches(&a.verb) && self.non_resource_url_matches(&a.path)
        }
    }

    /// Upstream `VerbMatches`.
    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    /// Upstream `APIGroupMatches`.
    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    /// Upstream `ResourceMatches`: `*`, exact `res[/sub]`, or `*/sub`.
    pub fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == "*"
                || r == combined
                || (!subresource.is_empty()
                    && r.len() == subresource.len() + 2
                    && r.starts_with("*/")
                    && r.ends_with(subresource))
        })
    }

    /// Upstream `ResourceNameMatches`.
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// Upstream `NonResourceURLMatches`.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// Upstream `CompactString`, as escalation errors print rules:
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let q = |l: &Vec<String>| {
            let items: Vec<String> = l.iter().map(|s| go_quote(s)).collect();
            format!("[{}]", items.join(" "))
        };
        let mut parts = Vec::new();
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:{}", q(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:{}", q(&self.resources)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!("NonResourceURLs:{}", q(&self.non_resource_urls)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:{}", q(&self.resource_names)));
        }
        if !self.verbs.is_empty() {
            parts.push(format!("Verbs:{}", q(&self.verbs)));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

pub use crate::api::options::go_quote;

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quote_list(l: &[String]) -> String {
    let items: Vec<String> = l.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", items.join(" "))
}

/// A binding's subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (ServiceAccount only).
    pub namespace: String,
}

impl Subject {
    /// Reads a subject from JSON.
    pub fn from_json(v: &Value) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        Subject {
            kind: s("kind"),
            name: s("name"),
            namespace: s("namespace"),
        }
    }

    /// Whether the subject names `user` (upstream `appliesToUser`);
    /// `binding_namespace` defaults a ServiceAccount's namespace.
    pub fn applies_to(&self, username: &str, groups: &[String], binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => username == self.name,
            "Group" => groups.iter().any(|g| g == &self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty() && username == service_account_username(ns, &self.name)
            }
            _ => false,
        }
    }

    /// How upstream's allow reasons name a subject (`describeSubject`).
    pub fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!(
                "{} {}",
                self.kind,
                go_quote(&format!("{}/{}", self.name, ns))
            )
        } else {
            format!("{} {}", self.kind, go_quote(&self.name))
        }
    }
}

/// `system:serviceaccount:<ns>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The groups a ServiceAccount's tokens carry: `system:serviceaccounts` and
/// `system:serviceaccounts:<ns>` (plus `system:authenticated`).
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{namespace}"),
        "system:authenticated".to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::UserInfo;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v)
    }

    fn res(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::resource(UserInfo::default(), verb, group, resource, "ns")
            .with_subresource(sub)
            .with_name(name)
    }

    #[test]
    fn resource_rules_match_as_upstream() {
        let pods = rule(json!({"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}));
        assert!(pods.allows(&res("get", "", "pods", "", "a")));
        assert!(pods.allows(&res("list", "", "pods", "", "")));
        assert!(!pods.allows(&res("delete", "", "pods", "", "a")));
        assert!(!pods.allows(&res("get", "apps", "pods", "", "a")));
        // A subresource needs its own entry.
        assert!(!pods.allows(&res("get", "", "pods", "log", "a")));

        let scale = rule(json!({"apiGroups":["*"],"resources":["*/scale"],"verbs":["*"]}));
        assert!(scale.allows(&res("update", "apps", "deployments", "scale", "w")));
        assert!(!scale.allows(&res("update", "apps", "deployments", "", "w")));
        assert!(!scale.allows(&res("update", "apps", "deployments", "status", "w")));

        let log = rule(json!({"apiGroups":[""],"resources":["pods/log"],"verbs":["get"]}));
        assert!(log.allows(&res("get", "", "pods", "log", "a")));
        assert!(!log.allows(&res("get", "", "pods", "", "a")));

        let named = rule(
            json!({"apiGroups":[""],"resources":["configmaps"],"resourceNames":["x"],"verbs":["get","list"]}),
        );
        assert!(named.allows(&res("get", "", "configmaps", "", "x")));
        assert!(!named.allows(&res("get", "", "configmaps", "", "y")));
        // A list names nothing, so resourceNames cannot allow it.
        assert!(!named.allows(&res("list", "", "configmaps", "", "")));

        let all = rule(json!({"apiGroups":["*"],"resources":["*"],"verbs":["*"]}));
        assert!(all.allows(&res(
            "escalate",
            "rbac.authorization.k8s.io",
            "roles",
            "",
            "r"
        )));
        assert!(all.allows(&res("get", "", "pods", "exec", "p")));
        // Resource rules never match non-resource requests.
        assert!(!all.allows(&Attributes::non_resource(
            UserInfo::default(),
            "get",
            "/healthz"
        )));
    }

    #[test]
    fn non_resource_rules_match_as_upstream() {
        let r = rule(json!({"nonResourceURLs":["/healthz","/apis/*"],"verbs":["get"]}));
        let get = |p: &str| Attributes::non_resource(UserInfo::default(), "get", p);
        assert!(r.allows(&get("/healthz")));
        assert!(!r.allows(&get("/healthz/etcd")));
        assert!(r.allows(&get("/apis/apps/v1")));
        assert!(r.allows(&get("/apis/")));
        assert!(!r.allows(&get("/apis")));
        assert!(!r.allows(&Attributes::non_resource(
            UserInfo::default(),
            "post",
            "/healthz"
        )));
        let star = rule(json!({"nonResourceURLs":["*"],"verbs":["*"]}));
        assert!(star.allows(&get("/anything")));
    }

    #[test]
    fn subjects() {
        let sa = Subject::from_json(&json!({"kind":"ServiceAccount","name":"ci"}));
        assert!(sa.applies_to("system:serviceaccount:dev:ci", &[], "dev"));
        assert!(!sa.applies_to("system:serviceaccount:dev:ci", &[], "prod"));
        assert!(!sa.applies_to("system:serviceaccount:dev:ci", &[], ""));
        let g = Subject::from_json(&json!({"kind":"Group","name":"system:serviceaccounts:dev"}));
        assert!(g.applies_to("x", &service_account_groups("dev"), ""));
        let u = Subject::from_json(&json!({"kind":"User","name":"alice"}));
        assert!(u.applies_to("alice", &[], ""));
        assert!(!u.applies_to("bob", &["alice".into()], ""));
        assert_eq!(sa.describe("dev"), "ServiceAccount \"ci/dev\"");
    }

    #[test]
    fn compact_string_reads_as_go() {
        let r = rule(json!({"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}));
        assert_eq!(
            r.compact_string(),
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}"
        );
    }
}
