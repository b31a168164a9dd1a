//! Project IAM policies, as Resource Manager v1 serves them
//! (`POST /v1/projects/P:getIamPolicy`, `:setIamPolicy`, what `gcloud
//! projects get-iam-policy` and `add-iam-policy-binding` call through
//! `api_endpoint_overrides/cloudresourcemanager`). GKE grants Kubernetes
//! access from these roles; the data plane reads them through the
//! clusters' token authenticator ([`crate::AccessTokens`]).
//!
//! A project nobody wrote yet has one binding: `roles/owner` for the
//! project owner every unmapped token acts as. Writes are read-modify-write
//! guarded by the `etag`, as on GCP.

use std::collections::BTreeMap;

use base64::Engine as _;
use parking_lot::RwLock;
use serde_json::{Value, json};

use crate::auth::owner;
use crate::error::Error;
use crate::wire;

/// Every project's IAM policy.
#[derive(Debug, Default)]
pub struct IamPolicies {
    policies: RwLock<BTreeMap<String, Value>>,
}

/// The etag of a policy's content: 8 bytes, base64, as GCP's look.
fn etag(project: &str, bindings: &Value, version: u64) -> String {
    let hash = wire::fnv(&[project, &bindings.to_string(), &version.to_string()]);
    base64::engine::general_purpose::STANDARD.encode(hash.to_be_bytes())
}

fn initial(project: &str) -> Value {
    let bindings = json!([{
        "role": "roles/owner",
        "members": [format!("serviceAccount:{}", owner(project))],
    }]);
    json!({ "version": 1, "etag": etag(project, &bindings, 0), "bindings": bindings })
}

const MEMBER_KINDS: [&str; 6] = [
    "user",
    "serviceAccount",
    "group",
    "domain",
    "principal",
    "principalSet",
];

/// Checks one binding as Resource Manager does.
fn check_binding(b: &Value) -> Result<(), Error> {
    let role = b.get("role").and_then(Value::as_str).unwrap_or_default();
    if !(role.starts_with("roles/") || role.starts_with("projects/")) {
        return Err(Error::InvalidArgument(format!(
            "Role ({role}) does not exist in the resource's hierarchy."
        )));
    }
    for m in b
        .get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let m = m.as_str().unwrap_or_default();
        let known = matches!(m, "allUsers" | "allAuthenticatedUsers")
            || m.split_once(':')
                .is_some_and(|(kind, id)| MEMBER_KINDS.contains(&kind) && !id.is_empty());
        if !known {
            return Err(Error::InvalidArgument(format!(
                "Invalid member type for member: {m}."
            )));
        }
    }
    Ok(())
}

impl IamPolicies {
    /// The project's policy (getIamPolicy).
    pub fn get(&self, project: &str) -> Value {
        self.policies
            .read()
            .get(project)
            .cloned()
            .unwrap_or_else(|| initial(project))
    }

    /// setIamPolicy: `body.policy` replaces the project's policy when its
    /// etag (if any) is the current one; answers the stored policy.
    pub fn set(&self, project: &str, body: &Value) -> Result<Value, Error> {
        let Some(policy) = body.get("policy").filter(|p| p.is_object()) else {
            return Err(Error::InvalidArgument(
                "Invalid JSON payload received. Missing required field: policy.".into(),
            ));
        };
        let bindings = policy.get("bindings").cloned().unwrap_or(json!([]));
        for b in bindings.as_array().into_iter().flatten() {
            check_binding(b)?;
        }
        let mut policies = self.policies.write();
        let current = policies
            .get(project)
            .cloned()
            .unwrap_or_else(|| initial(project));
        if let Some(tag) = policy.get("etag").and_then(Value::as_str)
            && Some(tag) != current["etag"].as_str()
        {
            return Err(Error::Aborted(
                "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.".into(),
            ));
        }
        let serial = policies.len() as u64 + wire::fnv(&[&current["etag"].to_string()]);
        let version = policy.get("version").and_then(Value::as_u64).unwrap_or(1);
        let stored = json!({
            "version": version,
            "etag": etag(project, &bindings, serial),
            "bindings": bindings,
        });
        policies.insert(project.to_owned(), stored.clone());
        Ok(stored)
    }

    /// Every written policy, for the facade's persisted state.
    pub fn snapshot(&self) -> Value {
        json!(*self.policies.read())
    }

    /// Replaces every policy with `saved` (a [`IamPolicies::snapshot`]).
    pub fn restore(&self, saved: BTreeMap<String, Value>) {
        *self.policies.write() = saved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_modify_write_with_etags() {
        let iam = IamPolicies::default();
        let first = iam.get("p");
        assert_eq!(
            first["bindings"][0]["members"][0],
            "serviceAccount:owner@p.iam.gserviceaccount.com"
        );
        let mut next = first.clone();
        next["bindings"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "roles/container.viewer", "members": ["user:dev@example.com"]}));
        let stored = iam.set("p", &json!({ "policy": next })).unwrap();
        assert_ne!(stored["etag"], first["etag"]);
        assert_eq!(iam.get("p"), stored);
        // A write from the stale read is refused.
        assert!(matches!(
            iam.set("p", &json!({ "policy": next })),
            Err(Error::Aborted(_))
        ));
        let bad = json!({"policy": {"bindings": [{"role": "roles/viewer", "members": ["bob"]}]}});
        assert!(matches!(iam.set("p", &bad), Err(Error::InvalidArgument(_))));
        let saved: BTreeMap<String, Value> = serde_json::from_value(iam.snapshot()).unwrap();
        let other = IamPolicies::default();
        other.restore(saved);
        assert_eq!(other.get("p"), stored);
    }
}
