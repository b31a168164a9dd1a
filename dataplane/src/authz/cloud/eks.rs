//! EKS: who an IAM principal is inside the cluster, and what it may do.
//!
//! Authentication resolves the caller's IAM ARN (from the `k8s-aws-v1.`
//! token) through the cluster's access entries, then (in the `CONFIG_MAP`
//! modes) the `aws-auth` ConfigMap; a principal found in neither gets 401,
//! as EKS answers. Authorization adds the access policies associated with the
//! caller's entry, cluster-wide or per namespace.

use std::collections::BTreeMap;

use kemu_shared::UserInfo;
use serde_json::{Value, json};

use super::{all_rules, bind, cluster_role, read_all_rules, user_subject};
use crate::authz::source::MemorySource;

/// The cluster's `accessConfig.authenticationMode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthenticationMode {
    /// Only the `aws-auth` ConfigMap.
    ConfigMap,
    /// Access entries first, then `aws-auth` (EKS's default for new clusters).
    #[default]
    ApiAndConfigMap,
    /// Only access entries.
    Api,
}

impl AuthenticationMode {
    /// From the EKS API's string (`CONFIG_MAP`, `API_AND_CONFIG_MAP`, `API`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "CONFIG_MAP" => Some(AuthenticationMode::ConfigMap),
            "API_AND_CONFIG_MAP" => Some(AuthenticationMode::ApiAndConfigMap),
            "API" => Some(AuthenticationMode::Api),
            _ => None,
        }
    }

    fn entries(self) -> bool {
        self != AuthenticationMode::ConfigMap
    }

    fn config_map(self) -> bool {
        self != AuthenticationMode::Api
    }
}

/// The caller, as STS GetCallerIdentity would name it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// `arn:aws:iam::A:user/U`, `arn:aws:sts::A:assumed-role/R/S`,
    /// `arn:aws:iam::A:role/R` or `arn:aws:iam::A:root`.
    pub arn: String,
    /// The access key id the token was signed with.
    pub access_key_id: String,
}

/// The ARN access entries and `aws-auth` are matched on: an assumed role's
/// role ARN (`arn:aws:iam::A:role/R`), paths stripped from role ARNs.
pub fn canonical_arn(arn: &str) -> String {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    if parts.len() < 6 {
        return arn.to_owned();
    }
    let (partition, account, resource) = (parts[1], parts[4], parts[5]);
    if let Some(rest) = resource.strip_prefix("assumed-role/") {
        let role = rest.split('/').next().unwrap_or("");
        return format!("arn:{partition}:iam::{account}:role/{role}");
    }
    if let Some(rest) = resource.strip_prefix("role/") {
        let role = rest.rsplit('/').next().unwrap_or("");
        return format!("arn:{partition}:iam::{account}:role/{role}");
    }
    arn.to_owned()
}

fn account_of(arn: &str) -> &str {
    arn.split(':').nth(4).unwrap_or("")
}

fn session_of(arn: &str) -> &str {
    arn.split(':')
        .nth(5)
        .and_then(|r| r.strip_prefix("assumed-role/"))
        .and_then(|r| r.split_once('/'))
        .map(|(_, s)| s)
        .unwrap_or("")
}

/// One associated access policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    /// `arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy`, …
    pub policy_arn: String,
    /// Namespaces the policy applies in; `None` for cluster scope.
    pub namespaces: Option<Vec<String>>,
}

/// One access entry, with its associated policies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessEntry {
    /// The IAM principal.
    pub principal_arn: String,
    /// Username; empty for EKS's default.
    pub username: String,
    /// Kubernetes groups.
    pub kubernetes_groups: Vec<String>,
    /// `STANDARD`, `EC2_LINUX`, `EC2_WINDOWS`, `FARGATE_LINUX`, …
    pub entry_type: String,
    /// Associated access policies.
    pub policies: Vec<AccessPolicy>,
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

impl AccessEntry {
    /// From the EKS API's `accessEntry` shape, plus the
    /// `associatedAccessPolicies` list of ListAssociatedAccessPolicies.
    pub fn from_json(entry: &Value, associated: &[Value]) -> Self {
        let s = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        AccessEntry {
            principal_arn: s("principalArn"),
            username: s("username"),
            kubernetes_groups: strings(entry, "kubernetesGroups"),
            entry_type: s("type"),
            policies: associated
                .iter()
                .map(|p| AccessPolicy {
                    policy_arn: p
                        .get("policyArn")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    namespaces: (p.pointer("/accessScope/type").and_then(Value::as_str)
                        == Some("namespace"))
                    .then(|| strings(p.get("accessScope").unwrap_or(&Value::Null), "namespaces")),
                })
                .collect(),
        }
    }

    /// The entry EKS creates for the cluster creator when
    /// `bootstrapClusterCreatorAdminPermissions` is true (the default):
    /// AmazonEKSClusterAdminPolicy, cluster scope.
    pub fn cluster_creator(creator_arn: &str) -> Self {
        AccessEntry {
            principal_arn: canonical_arn(creator_arn),
            entry_type: "STANDARD".into(),
            policies: vec![AccessPolicy {
                policy_arn: format!("{POLICY_PREFIX}AmazonEKSClusterAdminPolicy"),
                namespaces: None,
            }],
            ..Default::default()
        }
    }

    /// The username EKS reports for an entry without one.
    pub fn default_username(&self) -> String {
        let arn = &self.principal_arn;
        match self.entry_type.as_str() {
            "EC2_LINUX" | "EC2_WINDOWS" => "system:node:{{EC2PrivateDNSName}}".into(),
            "FARGATE_LINUX" => "system:node:{{SessionName}}".into(),
            _ if arn.contains(":role/") => format!(
                "arn:aws:sts::{}:assumed-role/{}/{{{{SessionName}}}}",
                account_of(arn),
                arn.rsplit('/').next().unwrap_or("")
            ),
            _ => arn.clone(),
        }
    }
}

/// The prefix of every AWS-managed access policy ARN.
pub const POLICY_PREFIX: &str = "arn:aws:eks::aws:cluster-access-policy/";

/// The access policies kemu grants (what ListAccessPolicies can list):
/// names; the ARN is [`POLICY_PREFIX`] + name.
pub const KNOWN_POLICIES: [&str; 5] = [
    "AmazonEKSAdminPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
];

/// The name of the virtual ClusterRole an access policy grants, if kemu
/// knows the policy.
fn policy_role(policy_arn: &str) -> Option<(&'static str, Value, Option<&'static str>)> {
    let name = policy_arn.strip_prefix(POLICY_PREFIX)?;
    Some(match name {
        "AmazonEKSClusterAdminPolicy" => ("eks:AmazonEKSClusterAdminPolicy", all_rules(), None),
        "AmazonEKSAdminPolicy" => (
            "eks:AmazonEKSAdminPolicy",
            json!([]),
            Some("rbac.authorization.k8s.io/aggregate-to-admin"),
        ),
        "AmazonEKSEditPolicy" => (
            "eks:AmazonEKSEditPolicy",
            json!([]),
            Some("rbac.authorization.k8s.io/aggregate-to-edit"),
        ),
        "AmazonEKSViewPolicy" => (
            "eks:AmazonEKSViewPolicy",
            json!([]),
            Some("rbac.authorization.k8s.io/aggregate-to-view"),
        ),
        "AmazonEKSAdminViewPolicy" => ("eks:AmazonEKSAdminViewPolicy", read_all_rules(), None),
        _ => return None,
    })
}

fn expand(template: &str, caller: &Caller) -> String {
    let session = session_of(&caller.arn);
    template
        .replace("{{SessionNameRaw}}", session)
        .replace("{{SessionName}}", &session.replace('@', "-"))
        .replace("{{AccountID}}", account_of(&caller.arn))
        .replace("{{AccessKeyID}}", &caller.access_key_id)
}

fn user(caller: &Caller, username: String, mut groups: Vec<String>) -> UserInfo {
    if !groups.iter().any(|g| g == "system:authenticated") {
        groups.push("system:authenticated".into());
    }
    let mut extra = BTreeMap::new();
    extra.insert("accessKeyId".into(), vec![caller.access_key_id.clone()]);
    extra.insert("arn".into(), vec![caller.arn.clone()]);
    extra.insert("canonicalArn".into(), vec![canonical_arn(&caller.arn)]);
    let session = session_of(&caller.arn);
    if !session.is_empty() {
        extra.insert("sessionName".into(), vec![session.to_owned()]);
    }
    UserInfo {
        username,
        uid: format!("aws-iam-authenticator:{}", canonical_arn(&caller.arn)),
        groups,
        extra,
    }
}

/// Who `caller` is in the cluster, or `None` (401) when neither an access
/// entry nor `aws-auth` maps it. `aws_auth` is the `kube-system/aws-auth`
/// ConfigMap object, if it exists. `creator_arn` is the cluster creator,
/// implicitly `system:masters` in the `CONFIG_MAP` mode (as EKS did before
/// access entries; the API modes give it an access entry instead).
pub fn resolve(
    caller: &Caller,
    mode: AuthenticationMode,
    entries: &[AccessEntry],
    aws_auth: Option<&Value>,
    creator_arn: Option<&str>,
) -> Option<UserInfo> {
    let canonical = canonical_arn(&caller.arn);
    if mode.entries()
        && let Some(e) = entries
            .iter()
            .find(|e| canonical_arn(&e.principal_arn) == canonical)
    {
        let template = if e.username.is_empty() {
            e.default_username()
        } else {
            e.username.clone()
        };
        let mut groups = e.kubernetes_groups.clone();
        if e.entry_type.starts_with("EC2_") || e.entry_type == "FARGATE_LINUX" {
            groups.extend(["system:bootstrappers".into(), "system:nodes".into()]);
        }
        return Some(user(caller, expand(&template, caller), groups));
    }
    if !mode.config_map() {
        return None;
    }
    if mode == AuthenticationMode::ConfigMap
        && creator_arn.is_some_and(|c| canonical_arn(c) == canonical)
    {
        return Some(user(
            caller,
            "kubernetes-admin".into(),
            vec!["system:masters".into()],
        ));
    }
    let map = aws_auth.map(AwsAuth::from_config_map).unwrap_or_default();
    map.lookup(caller)
}

/// The `aws-auth` ConfigMap's mappings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwsAuth {
    /// `mapRoles`: (role ARN, username, groups).
    pub roles: Vec<(String, String, Vec<String>)>,
    /// `mapUsers`: (user ARN, username, groups).
    pub users: Vec<(String, String, Vec<String>)>,
    /// `mapAccounts`: account ids whose principals map to their own ARN.
    pub accounts: Vec<String>,
}

impl AwsAuth {
    /// Reads `data.mapRoles`, `data.mapUsers` and `data.mapAccounts` (YAML
    /// strings). Malformed entries are skipped, as the authenticator logs and
    /// ignores them.
    pub fn from_config_map(cm: &Value) -> Self {
        let yaml = |k: &str| -> Value {
            cm.pointer(&format!("/data/{k}"))
                .and_then(Value::as_str)
                .and_then(|s| serde_norway::from_str::<Value>(s).ok())
                .unwrap_or(Value::Null)
        };
        let mappings = |k: &str, arn_key: &str| -> Vec<(String, String, Vec<String>)> {
            yaml(k)
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|m| {
                            let arn = m.get(arn_key)?.as_str()?.to_owned();
                            let username = m
                                .get("username")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned();
                            Some((arn, username, strings(m, "groups")))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let accounts = yaml("mapAccounts")
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        AwsAuth {
            roles: mappings("mapRoles", "rolearn"),
            users: mappings("mapUsers", "userarn"),
            accounts,
        }
    }

    /// The mapping for `caller`, if any.
    pub fn lookup(&self, caller: &Caller) -> Option<UserInfo> {
        let canonical = canonical_arn(&caller.arn);
        let found = self
            .roles
            .iter()
            .find(|(arn, ..)| canonical_arn(arn) == canonical)
            .or_else(|| self.users.iter().find(|(arn, ..)| *arn == canonical));
        if let Some((arn, username, groups)) = found {
            let name = if username.is_empty() {
                arn.clone()
            } else {
                expand(username, caller)
            };
            return Some(user(caller, name, groups.clone()));
        }
        self.accounts
            .iter()
            .any(|a| a == account_of(&caller.arn))
            .then(|| user(caller, canonical, Vec::new()))
    }
}

/// The virtual RBAC objects granting the access policies of the entry that
/// authenticated `user` (matched by its `canonicalArn` extra), bound to its
/// username. Empty when the user came from `aws-auth` or has no policies.
pub fn access_policy_source(entries: &[AccessEntry], user: &UserInfo) -> MemorySource {
    let mut src = super::empty();
    let Some(canonical) = user.extra.get("canonicalArn").and_then(|v| v.first()) else {
        return src;
    };
    let Some(entry) = entries
        .iter()
        .find(|e| canonical_arn(&e.principal_arn) == *canonical)
    else {
        return src;
    };
    for (i, p) in entry.policies.iter().enumerate() {
        let Some((role, rules, label)) = policy_role(&p.policy_arn) else {
            tracing::debug!(policy = %p.policy_arn, "unknown access policy ignored");
            continue;
        };
        src.put(cluster_role(role, rules, label));
        let name = format!("eks:access-policy:{i}");
        match &p.namespaces {
            None => src.put(bind(&name, role, user_subject(&user.username), None)),
            Some(nss) => {
                for ns in nss {
                    src.put(bind(&name, role, user_subject(&user.username), Some(ns)));
                }
            }
        }
    }
    src
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::attributes::Attributes;
    use crate::authz::authorizer::{Authorizer, Mode};
    use crate::authz::bootstrap;
    use crate::authz::source::Layered;

    fn caller(arn: &str) -> Caller {
        Caller {
            arn: arn.into(),
            access_key_id: "AKIATEST".into(),
        }
    }

    #[test]
    fn every_known_policy_grants_something() {
        for p in KNOWN_POLICIES {
            assert!(policy_role(&format!("{POLICY_PREFIX}{p}")).is_some(), "{p}");
        }
        assert!(policy_role("arn:aws:eks::aws:cluster-access-policy/Nope").is_none());
    }

    #[test]
    fn canonical_arns() {
        assert_eq!(
            canonical_arn("arn:aws:sts::111122223333:assumed-role/dev/alice@example.com"),
            "arn:aws:iam::111122223333:role/dev"
        );
        assert_eq!(
            canonical_arn("arn:aws:iam::111122223333:role/team/dev"),
            "arn:aws:iam::111122223333:role/dev"
        );
        assert_eq!(
            canonical_arn("arn:aws:iam::111122223333:user/bob"),
            "arn:aws:iam::111122223333:user/bob"
        );
    }

    fn view_in_dev() -> AccessEntry {
        AccessEntry::from_json(
            &json!({"principalArn":"arn:aws:iam::111122223333:role/dev","kubernetesGroups":[],"type":"STANDARD"}),
            &[
                json!({"policyArn":"arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
                     "accessScope":{"type":"namespace","namespaces":["dev"]}}),
            ],
        )
    }

    #[test]
    fn access_entries_resolve_and_grant_their_policies() {
        let entries = vec![view_in_dev()];
        let c = caller("arn:aws:sts::111122223333:assumed-role/dev/alice@example.com");
        let u = resolve(&c, AuthenticationMode::Api, &entries, None, None).unwrap();
        assert_eq!(
            u.username,
            "arn:aws:sts::111122223333:assumed-role/dev/alice-example.com"
        );
        assert_eq!(u.groups, vec!["system:authenticated"]);
        assert_eq!(
            u.extra["canonicalArn"],
            vec!["arn:aws:iam::111122223333:role/dev"]
        );
        assert_eq!(u.extra["sessionName"], vec!["alice@example.com"]);

        let boot = bootstrap::source();
        let cloud = access_policy_source(&entries, &u);
        let src = Layered(vec![&boot, &cloud]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        let list = |ns: &str| Attributes::resource(u.clone(), "list", "", "pods", ns);
        assert!(authz.authorize(&list("dev")).allowed);
        assert!(!authz.authorize(&list("prod")).allowed);
        assert!(
            !authz
                .authorize(
                    &Attributes::resource(u.clone(), "get", "", "secrets", "dev").with_name("s")
                )
                .allowed
        );
        assert!(
            !authz
                .authorize(&Attributes::resource(
                    u.clone(),
                    "create",
                    "",
                    "pods",
                    "dev"
                ))
                .allowed
        );
        // No entry: 401.
        let stranger = caller("arn:aws:iam::111122223333:user/eve");
        assert!(resolve(&stranger, AuthenticationMode::Api, &entries, None, None).is_none());
    }

    #[test]
    fn the_creator_is_cluster_admin() {
        let creator = "arn:aws:iam::111122223333:user/admin";
        let entries = vec![AccessEntry::cluster_creator(creator)];
        let u = resolve(
            &caller(creator),
            AuthenticationMode::ApiAndConfigMap,
            &entries,
            None,
            None,
        )
        .unwrap();
        assert_eq!(u.username, creator);
        let cloud = access_policy_source(&entries, &u);
        let authz = Authorizer::new(Mode::Rbac, &cloud);
        assert!(
            authz
                .authorize(&Attributes::resource(u.clone(), "delete", "", "nodes", ""))
                .allowed
        );
        assert!(
            authz
                .authorize(&Attributes::non_resource(u, "get", "/metrics"))
                .allowed
        );
        // CONFIG_MAP mode: the creator is system:masters, as kubernetes-admin.
        let u = resolve(
            &caller(creator),
            AuthenticationMode::ConfigMap,
            &[],
            None,
            Some(creator),
        )
        .unwrap();
        assert_eq!(u.username, "kubernetes-admin");
        assert!(u.groups.contains(&"system:masters".to_string()));
    }

    #[test]
    fn aws_auth_maps_roles_users_and_accounts() {
        let cm = json!({"kind":"ConfigMap","metadata":{"name":"aws-auth","namespace":"kube-system"},"data":{
            "mapRoles":"- rolearn: arn:aws:iam::111122223333:role/nodes\n  username: system:node:{{EC2PrivateDNSName}}\n  groups:\n    - system:bootstrappers\n    - system:nodes\n- rolearn: arn:aws:iam::111122223333:role/ops\n  username: ops:{{SessionName}}\n  groups:\n    - ops-team\n",
            "mapUsers":"- userarn: arn:aws:iam::111122223333:user/bob\n  username: bob\n  groups: [\"system:masters\"]\n",
            "mapAccounts":"- \"444455556666\"\n"}});
        let u = resolve(
            &caller("arn:aws:sts::111122223333:assumed-role/ops/carol"),
            AuthenticationMode::ConfigMap,
            &[],
            Some(&cm),
            None,
        )
        .unwrap();
        assert_eq!(u.username, "ops:carol");
        assert_eq!(u.groups, vec!["ops-team", "system:authenticated"]);
        let u = resolve(
            &caller("arn:aws:iam::111122223333:user/bob"),
            AuthenticationMode::ApiAndConfigMap,
            &[],
            Some(&cm),
            None,
        )
        .unwrap();
        assert_eq!(u.username, "bob");
        assert!(u.groups.contains(&"system:masters".to_string()));
        let u = resolve(
            &caller("arn:aws:iam::444455556666:user/x"),
            AuthenticationMode::ConfigMap,
            &[],
            Some(&cm),
            None,
        )
        .unwrap();
        assert_eq!(u.username, "arn:aws:iam::444455556666:user/x");
        // aws-auth is not read in API mode.
        assert!(
            resolve(
                &caller("arn:aws:iam::111122223333:user/bob"),
                AuthenticationMode::Api,
                &[],
                Some(&cm),
                None
            )
            .is_none()
        );
        assert_eq!(
            AuthenticationMode::parse("API_AND_CONFIG_MAP"),
            Some(AuthenticationMode::ApiAndConfigMap)
        );
    }
}
