//! The authorizer chain a request goes through, as kube-apiserver's: the
//! privileged group `system:masters` first, then RBAC; or everything allowed
//! in the permissive `allow-all` mode.

use std::str::FromStr;

use kemu_shared::UserInfo;

use super::attributes::Attributes;
use super::forbidden::Forbidden;
use super::rbac::{Rbac, aggregate};
use super::rules::PolicyRule;
use super::source::RbacSource;

/// The group upstream lets do anything (`user.SystemPrivilegedGroup`).
pub const MASTERS: &str = "system:masters";

/// How a cluster authorizes (`--authorization=rbac|allow-all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// RBAC, as a real cluster (the default).
    #[default]
    Rbac,
    /// Every authenticated or anonymous request is allowed.
    AllowAll,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "rbac" => Ok(Mode::Rbac),
            "allow-all" | "alwaysallow" => Ok(Mode::AllowAll),
            other => Err(format!(
                "unknown authorization mode {other:?}: expected rbac or allow-all"
            )),
        }
    }
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Why (`RBAC: allowed by …`), or, when denied, resolution errors; may be empty.
    pub reason: String,
}

/// Every rule a user holds in a namespace, as SelfSubjectRulesReview reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserRules {
    /// Rules with resources.
    pub resource_rules: Vec<PolicyRule>,
    /// Rules with non-resource URLs.
    pub non_resource_rules: Vec<PolicyRule>,
    /// Resolution errors, aggregated; empty when none.
    pub evaluation_error: String,
}

/// The authorizer of one cluster.
pub struct Authorizer<'a> {
    mode: Mode,
    source: &'a dyn RbacSource,
}

fn star_rules() -> (PolicyRule, PolicyRule) {
    let s = || vec!["*".to_owned()];
    (
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
    )
}

impl<'a> Authorizer<'a> {
    /// An authorizer in `mode` reading RBAC objects from `source` (the
    /// store's objects, layered with any cloud-derived bindings).
    pub fn new(mode: Mode, source: &'a dyn RbacSource) -> Self {
        Authorizer { mode, source }
    }

    /// Decides a request.
    pub fn authorize(&self, a: &Attributes) -> Decision {
        if self.mode == Mode::AllowAll || is_master(&a.user) {
            return Decision {
                allowed: true,
                reason: String::new(),
            };
        }
        match Rbac::new(self.source).authorize(a) {
            Ok(reason) => Decision {
                allowed: true,
                reason,
            },
            Err(reason) => Decision {
                allowed: false,
                reason,
            },
        }
    }

    /// `Ok` when allowed, else the 403 to answer with.
    pub fn check(&self, a: &Attributes) -> Result<(), Forbidden> {
        let d = self.authorize(a);
        if d.allowed {
            Ok(())
        } else {
            tracing::debug!(user = %a.user.username, verb = %a.verb, resource = %a.resource, "denied");
            Err(Forbidden::of_request(a, &d.reason))
        }
    }

    /// Every rule `user` holds in `namespace` (upstream `RulesFor` over the chain).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut out = UserRules::default();
        if self.mode == Mode::AllowAll || is_master(user) {
            let (r, n) = star_rules();
            out.resource_rules.push(r);
            out.non_resource_rules.push(n);
            if self.mode == Mode::AllowAll {
                return out;
            }
        }
        let set = Rbac::new(self.source).rules_for(user, namespace);
        for sr in set.rules {
            if !sr.rule.resources.is_empty() {
                out.resource_rules.push(sr.rule.clone());
            }
            if !sr.rule.non_resource_urls.is_empty() {
                out.non_resource_rules.push(sr.rule);
            }
        }
        out.evaluation_error = aggregate(&set.errors);
        out
    }
}

/// Whether the user is in `system:masters`.
pub fn is_master(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == MASTERS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::source::MemorySource;

    fn u(groups: &[&str]) -> UserInfo {
        UserInfo {
            username: "u".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn masters_and_allow_all_bypass_rbac() {
        let empty = MemorySource::default();
        let a = Attributes::resource(u(&[MASTERS]), "delete", "", "nodes", "");
        assert!(Authorizer::new(Mode::Rbac, &empty).authorize(&a).allowed);
        let a = Attributes::resource(u(&[]), "delete", "", "nodes", "");
        assert!(!Authorizer::new(Mode::Rbac, &empty).authorize(&a).allowed);
        assert!(
            Authorizer::new(Mode::AllowAll, &empty)
                .authorize(&a)
                .allowed
        );
        let f = Authorizer::new(Mode::Rbac, &empty).check(&a).unwrap_err();
        assert_eq!(
            f.message,
            "nodes is forbidden: User \"u\" cannot delete resource \"nodes\" in API group \"\" at the cluster scope"
        );
        let rules = Authorizer::new(Mode::Rbac, &empty).rules_for(&u(&[MASTERS]), "x");
        assert_eq!(rules.resource_rules[0].resources, vec!["*"]);
        assert_eq!(rules.non_resource_rules[0].non_resource_urls, vec!["*"]);
    }

    #[test]
    fn modes_parse() {
        assert_eq!("allow-all".parse::<Mode>(), Ok(Mode::AllowAll));
        assert_eq!("RBAC".parse::<Mode>(), Ok(Mode::Rbac));
        assert!("open".parse::<Mode>().is_err());
    }
}
