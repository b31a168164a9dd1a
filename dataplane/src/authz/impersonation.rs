//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`): the
//! `Impersonate-*` headers replace the caller with another user when the
//! caller may `impersonate` each requested user, group, uid and extra, as
//! upstream's impersonation filter decides.

use std::collections::BTreeMap;

use kemu_shared::UserInfo;

use super::attributes::{Attributes, percent_decode};
use super::authorizer::Authorizer;
use super::forbidden::Forbidden;
use super::rules::service_account_groups;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// Why impersonation is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 400: headers without `Impersonate-User`, e.g. `requested
    /// [{Group system:masters}] without impersonating a user`.
    BadRequest(String),
    /// 403: the caller may not impersonate one of them.
    Forbidden(Forbidden),
}

/// Applies the `Impersonate-*` headers (name, value; any case) of a request
/// made by `caller`. `Ok(None)` when there are none; `Ok(Some(user))` is the
/// user to serve the request as.
pub fn impersonate(
    authz: &Authorizer,
    caller: &UserInfo,
    headers: &[(String, String)],
) -> Result<Option<UserInfo>, Refusal> {
    let mut username = None;
    let mut groups = Vec::new();
    let mut uid = None;
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut any = false;
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if name == USER {
            username = Some(value.clone());
        } else if name == GROUP {
            groups.push(value.clone());
        } else if name == UID {
            uid = Some(value.clone());
        } else if let Some(key) = name.strip_prefix(EXTRA) {
            extra
                .entry(percent_decode(key))
                .or_default()
                .push(value.clone());
        } else {
            continue;
        }
        any = true;
    }
    if !any {
        return Ok(None);
    }
    let Some(requested) = username else {
        let mut asked: Vec<String> = groups.iter().map(|g| format!("{{Group {g}}}")).collect();
        asked.extend(
            extra
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{{Extra {k} {v}}}"))),
        );
        if let Some(u) = &uid {
            asked.push(format!("{{UID {u}}}"));
        }
        return Err(Refusal::BadRequest(format!(
            "requested [{}] without impersonating a user",
            asked.join(" ")
        )));
    };

    let check = |a: Attributes| -> Result<(), Refusal> {
        if authz.authorize(&a).allowed {
            Ok(())
        } else {
            Err(Refusal::Forbidden(Forbidden::of_request(&a, "")))
        }
    };
    let ask = |group: &str, resource: &str, namespace: &str, name: &str| {
        Attributes::resource(caller.clone(), "impersonate", group, resource, namespace)
            .with_name(name)
    };
    let groups_specified = !groups.is_empty();
    let mut out_groups = groups.clone();
    match requested
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((ns, sa)) if !ns.is_empty() && !sa.is_empty() => {
            check(ask("", "serviceaccounts", ns, sa))?;
            if !groups_specified {
                out_groups = service_account_groups(ns)
                    .into_iter()
                    .filter(|g| g != "system:authenticated")
                    .collect();
            }
        }
        _ => check(ask("", "users", "", &requested))?,
    }
    for g in &groups {
        check(ask("", "groups", "", g))?;
    }
    for (k, vs) in &extra {
        for v in vs {
            check(ask(AUTHENTICATION_GROUP, "userextras", "", v).with_subresource(k))?;
        }
    }
    if let Some(u) = &uid {
        check(ask(AUTHENTICATION_GROUP, "uids", "", u))?;
    }

    if requested == "system:anonymous" {
        if !out_groups.iter().any(|g| g == "system:unauthenticated") {
            out_groups.push("system:unauthenticated".into());
        }
    } else if !out_groups
        .iter()
        .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        out_groups.push("system:authenticated".into());
    }
    Ok(Some(UserInfo {
        username: requested,
        uid: uid.unwrap_or_default(),
        groups: out_groups,
        extra,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::authorizer::Mode;
    use crate::authz::source::MemorySource;
    use serde_json::json;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn bob() -> UserInfo {
        UserInfo {
            username: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    #[test]
    fn impersonation_as_upstream() {
        let src = MemorySource::new([
            json!({"kind":"ClusterRole","metadata":{"name":"imp"},
                   "rules":[{"apiGroups":[""],"resources":["serviceaccounts"],"verbs":["impersonate"]},
                            {"apiGroups":[""],"resources":["users"],"resourceNames":["alice"],"verbs":["impersonate"]}]}),
            json!({"kind":"ClusterRoleBinding","metadata":{"name":"imp"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"imp"},
                   "subjects":[{"kind":"User","name":"bob"}]}),
        ]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        assert_eq!(
            impersonate(&authz, &bob(), &h(&[("Accept", "x")])),
            Ok(None)
        );

        let u = impersonate(
            &authz,
            &bob(),
            &h(&[("Impersonate-User", "system:serviceaccount:dev:ci")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(u.username, "system:serviceaccount:dev:ci");
        assert_eq!(
            u.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:dev",
                "system:authenticated"
            ]
        );

        let u = impersonate(&authz, &bob(), &h(&[("Impersonate-User", "alice")]))
            .unwrap()
            .unwrap();
        assert_eq!(u.groups, vec!["system:authenticated"]);

        let Err(Refusal::Forbidden(f)) =
            impersonate(&authz, &bob(), &h(&[("Impersonate-User", "carol")]))
        else {
            panic!("expected forbidden");
        };
        assert_eq!(
            f.message,
            "users \"carol\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        let Err(Refusal::Forbidden(f)) = impersonate(
            &authz,
            &bob(),
            &h(&[
                ("Impersonate-User", "alice"),
                ("Impersonate-Group", "system:masters"),
            ]),
        ) else {
            panic!("expected forbidden");
        };
        assert!(
            f.message
                .starts_with("groups \"system:masters\" is forbidden")
        );
        assert_eq!(
            impersonate(&authz, &bob(), &h(&[("Impersonate-Group", "g")])),
            Err(Refusal::BadRequest(
                "requested [{Group g}] without impersonating a user".into()
            ))
        );
        // system:masters may impersonate anyone, with any groups.
        let root = UserInfo {
            username: "root".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        };
        let u = impersonate(
            &authz,
            &root,
            &h(&[
                ("Impersonate-User", "x"),
                ("Impersonate-Group", "devs"),
                ("Impersonate-Extra-Scopes", "a"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(u.groups, vec!["devs", "system:authenticated"]);
        assert_eq!(u.extra["scopes"], vec!["a"]);
    }
}
