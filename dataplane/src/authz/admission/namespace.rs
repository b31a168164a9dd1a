//! NamespaceLifecycle admission: nothing is created in a namespace that does
//! not exist or is being terminated, and the system namespaces cannot be
//! deleted, worded as upstream.

use serde_json::Value;

use super::Operation;
use crate::authz::forbidden::Forbidden;
use crate::error::{ApiError, Cause, Target};

/// Namespaces upstream refuses to delete.
pub const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Access reviews may name namespaces that do not exist.
const ACCESS_REVIEWS: [&str; 1] = ["localsubjectaccessreviews"];

/// Why a write is refused.
#[derive(Debug)]
pub enum Refusal {
    /// 404: the namespace does not exist.
    NotFound(ApiError),
    /// 403: terminating namespace, or an immortal one being deleted.
    Forbidden(Forbidden),
}

/// Admits a write of `group`/`resource` named `name` in `namespace` ("" for
/// cluster-scoped); `ns_object` is that Namespace as stored, if it exists.
pub fn admit(
    op: Operation,
    group: &str,
    resource: &str,
    name: &str,
    namespace: &str,
    ns_object: Option<&Value>,
) -> Result<(), Refusal> {
    if group.is_empty() && resource == "namespaces" {
        if op == Operation::Delete && IMMORTAL.contains(&name) {
            return Err(Refusal::Forbidden(Forbidden::of_object(
                "",
                "namespaces",
                name,
                "this namespace may not be deleted",
            )));
        }
        return Ok(());
    }
    if namespace.is_empty() || op != Operation::Create {
        return Ok(());
    }
    if group == "authorization.k8s.io" && ACCESS_REVIEWS.contains(&resource) {
        return Ok(());
    }
    let Some(ns) = ns_object else {
        return Err(Refusal::NotFound(ApiError::ObjectNotFound(Target {
            name: namespace.into(),
            group: String::new(),
            kind: "namespaces".into(),
        })));
    };
    let terminating = ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        || ns
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null());
    if terminating {
        let mut f = Forbidden::of_object(
            group,
            resource,
            name,
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        );
        f.causes.push(Cause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {namespace} is being terminated"),
            field: "metadata.namespace".into(),
        });
        return Err(Refusal::Forbidden(f));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifecycle_as_upstream() {
        let Err(Refusal::NotFound(e)) = admit(Operation::Create, "", "pods", "p", "nope", None)
        else {
            panic!("expected not found");
        };
        assert_eq!(e.to_string(), "namespaces \"nope\" not found");
        let term = json!({"metadata":{"name":"old"},"status":{"phase":"Terminating"}});
        let Err(Refusal::Forbidden(f)) = admit(
            Operation::Create,
            "apps",
            "deployments",
            "d",
            "old",
            Some(&term),
        ) else {
            panic!("expected forbidden");
        };
        assert_eq!(
            f.message,
            "deployments.apps \"d\" is forbidden: unable to create new content in namespace old because it is being terminated"
        );
        assert_eq!(
            f.status()["details"]["causes"][0]["reason"],
            "NamespaceTerminating"
        );
        assert!(admit(Operation::Update, "", "pods", "p", "old", Some(&term)).is_ok());
        let Err(Refusal::Forbidden(f)) =
            admit(Operation::Delete, "", "namespaces", "kube-system", "", None)
        else {
            panic!("expected forbidden");
        };
        assert_eq!(
            f.message,
            "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
        );
        assert!(admit(Operation::Delete, "", "namespaces", "dev", "", None).is_ok());
        assert!(admit(Operation::Create, "", "nodes", "n", "", None).is_ok());
        let live = json!({"status":{"phase":"Active"}});
        assert!(admit(Operation::Create, "", "pods", "p", "dev", Some(&live)).is_ok());
    }
}
