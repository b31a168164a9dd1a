//! The 403 a denied request gets, worded exactly as kube-apiserver's
//! `responsewriters.Forbidden` + `apierrors.NewForbidden` word it.

use serde_json::{Value, json};

use super::attributes::Attributes;
use super::rules::go_quote;
use crate::error::Cause;

/// A denial, ready to render as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    /// The whole message, e.g. `pods is forbidden: User "x" cannot list
    /// resource "pods" in API group "" in the namespace "default"`.
    pub message: String,
    /// `details.group`.
    pub group: String,
    /// `details.kind` (upstream puts the resource there).
    pub kind: String,
    /// `details.name`.
    pub name: String,
    /// `details.causes` (e.g. `NamespaceTerminating`).
    pub causes: Vec<Cause>,
}

/// Upstream `forbiddenMessage`: the part after `… is forbidden: `.
pub fn forbidden_message(a: &Attributes) -> String {
    let user = go_quote(&a.user.username);
    if !a.resource_request {
        return format!("User {user} cannot {} path {}", a.verb, go_quote(&a.path));
    }
    let mut resource = a.resource.clone();
    if !a.subresource.is_empty() {
        resource = format!("{resource}/{}", a.subresource);
    }
    if !a.namespace.is_empty() {
        format!(
            "User {user} cannot {} resource {} in API group {} in the namespace {}",
            a.verb,
            go_quote(&resource),
            go_quote(&a.api_group),
            go_quote(&a.namespace)
        )
    } else {
        format!(
            "User {user} cannot {} resource {} in API group {} at the cluster scope",
            a.verb,
            go_quote(&resource),
            go_quote(&a.api_group)
        )
    }
}

/// `NewForbidden(groupResource, name, err)`'s message prefix.
pub fn qualified_prefix(group: &str, resource: &str, name: &str) -> String {
    let gr = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    if gr.is_empty() {
        "forbidden".to_owned()
    } else if name.is_empty() {
        format!("{gr} is forbidden")
    } else {
        format!("{gr} {} is forbidden", go_quote(name))
    }
}

impl Forbidden {
    /// The denial of request `a`; `reason` is the authorizer's (appended
    /// after `: ` when not empty, as upstream does).
    pub fn of_request(a: &Attributes, reason: &str) -> Self {
        let mut msg = forbidden_message(a);
        if !reason.is_empty() {
            msg = format!("{msg}: {reason}");
        }
        Forbidden {
            message: format!(
                "{}: {msg}",
                qualified_prefix(&a.api_group, &a.resource, &a.name)
            ),
            group: a.api_group.clone(),
            kind: a.resource.clone(),
            name: a.name.clone(),
            causes: Vec::new(),
        }
    }

    /// A denial of writing an object (escalation, bind, quota):
    /// `<resource>[.<group>] "<name>" is forbidden: <why>`.
    pub fn of_object(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Forbidden {
            message: format!("{}: {why}", qualified_prefix(group, resource, name)),
            group: group.into(),
            kind: resource.into(),
            name: name.into(),
            causes: Vec::new(),
        }
    }

    /// The `metav1.Status` body (HTTP 403).
    pub fn status(&self) -> Value {
        let mut details = json!({});
        if !self.name.is_empty() {
            details["name"] = json!(self.name);
        }
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        if !self.kind.is_empty() {
            details["kind"] = json!(self.kind);
        }
        if !self.causes.is_empty() {
            details["causes"] = self
                .causes
                .iter()
                .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
                .collect();
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": "Forbidden",
            "details": details,
            "code": 403,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::UserInfo;

    fn u(name: &str) -> UserInfo {
        UserInfo {
            username: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn messages_read_as_upstream() {
        let a = Attributes::resource(u("x"), "list", "", "pods", "default");
        assert_eq!(
            Forbidden::of_request(&a, "").message,
            "pods is forbidden: User \"x\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        );
        let a = Attributes::resource(u("x"), "get", "apps", "deployments", "dev")
            .with_name("web")
            .with_subresource("scale");
        assert_eq!(
            Forbidden::of_request(&a, "").message,
            "deployments.apps \"web\" is forbidden: User \"x\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"dev\""
        );
        let a = Attributes::resource(u("system:serviceaccount:dev:ci"), "list", "", "nodes", "");
        assert_eq!(
            Forbidden::of_request(&a, "").message,
            "nodes is forbidden: User \"system:serviceaccount:dev:ci\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
        );
        let a = Attributes::non_resource(u("system:anonymous"), "get", "/metrics");
        let f = Forbidden::of_request(&a, "");
        assert_eq!(
            f.message,
            "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
        );
        assert_eq!(f.status()["details"], json!({}));
        let a = Attributes::resource(u("x"), "get", "", "secrets", "dev").with_name("s");
        let f = Forbidden::of_request(&a, "RBAC: role.rbac.authorization.k8s.io \"r\" not found");
        assert!(f.message.ends_with(
            "in the namespace \"dev\": RBAC: role.rbac.authorization.k8s.io \"r\" not found"
        ));
        assert_eq!(f.status()["details"], json!({"name":"s","kind":"secrets"}));
        assert_eq!(f.status()["code"], 403);
    }
}
