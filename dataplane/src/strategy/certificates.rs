//! CertificateSigningRequests, as upstream's `csrStrategy` prepares them:
//! the requester's identity is the registry's to write, from the request's
//! user, whatever the body says; on update the spec stays as created. Its
//! `approval` subresource writes only the conditions, its `status` all but
//! them ([`approval`], [`status`]).

use serde_json::{Value, json};

use super::validate::errors::Errors;
use super::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::resources::ResourceType;

/// The condition types a request can hold only one of, and never lose.
const DECISIONS: [&str; 2] = ["Approved", "Denied"];

fn conditions(o: &Value) -> &[Value] {
    o["status"]["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The approval subresource's write: `view`'s conditions onto `current`,
/// each stamped as upstream's strategy stamps it, checked as its
/// validation checks them.
pub fn approval(current: &Value, view: &Value, now: &str) -> Result<Value, Vec<Cause>> {
    let mut next = current.clone();
    let mut list: Vec<Value> = conditions(view).to_vec();
    for c in &mut list {
        if c["status"].as_str().is_none_or(str::is_empty) {
            c["status"] = json!("True");
        }
        if c["lastUpdateTime"].is_null() {
            c["lastUpdateTime"] = json!(now);
        }
        if c["lastTransitionTime"].is_null() {
            let before = conditions(current)
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"]);
            c["lastTransitionTime"] = before
                .map(|o| o["lastTransitionTime"].clone())
                .filter(|t| !t.is_null())
                .unwrap_or_else(|| json!(now));
        }
    }
    let mut e = Errors::default();
    let has = |t: &str| list.iter().any(|c| c["type"] == t);
    if has("Approved") && has("Denied") {
        e.invalid(
            "status.conditions",
            &json!("Denied"),
            "Approved and Denied conditions are mutually exclusive",
        );
    }
    for t in DECISIONS {
        if conditions(current).iter().any(|c| c["type"] == t) && !has(t) {
            e.forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type \"{t}\""),
            );
        }
    }
    if !e.0.is_empty() {
        return Err(e.0);
    }
    next["status"]["conditions"] = json!(list);
    Ok(next)
}

/// The status subresource's check: an issued certificate holds a PEM
/// certificate (the conditions stay the approval's to write).
pub fn status(current: &Value, next: &mut Value) -> Vec<Cause> {
    next["status"]["conditions"] = current["status"]["conditions"].clone();
    if next["status"]["conditions"].is_null()
        && let Some(s) = next["status"].as_object_mut()
    {
        s.remove("conditions");
    }
    let mut e = Errors::default();
    if let Some(cert) = next["status"]["certificate"].as_str()
        && !cert.is_empty()
    {
        let pem = base64_decode(cert);
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            e.invalid(
                "status.certificate",
                &json!("<certificate data>"),
                "must contain at least one CERTIFICATE PEM block",
            );
        }
    }
    e.0
}

/// `spec.request` holds a PEM certificate request.
pub fn check_request(e: &mut Errors, spec: &Value) {
    let Some(request) = spec["request"].as_str() else {
        return;
    };
    let pem = base64_decode(request);
    if !pem.contains("-----BEGIN CERTIFICATE REQUEST-----") {
        e.invalid(
            "spec.request",
            &spec["request"],
            "PEM block type must be CERTIFICATE REQUEST",
        );
    }
}

fn base64_decode(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The CertificateSigningRequest strategy.
#[derive(Debug)]
pub struct CsrStrategy;

impl Strategy for CsrStrategy {
    fn prepare_create(
        &self,
        ctx: &Context<'_>,
        _rt: &ResourceType,
        _name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        for f in ["username", "uid", "groups", "extra"] {
            spec.remove(f);
        }
        if let Some(user) = ctx.user {
            // Go's omitempty: empty values are not written.
            if !user.username.is_empty() {
                spec.insert("username".into(), json!(user.username));
            }
            if !user.uid.is_empty() {
                spec.insert("uid".into(), json!(user.uid));
            }
            if !user.groups.is_empty() {
                spec.insert("groups".into(), json!(user.groups));
            }
            if !user.extra.is_empty() {
                spec.insert("extra".into(), json!(user.extra));
            }
        }
        Ok(())
    }

    fn prepare_update(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if new.is_object() {
            new["spec"] = old["spec"].clone();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_stamps_conditions_and_keeps_decisions() {
        let csr = json!({"spec": {"request": "x"}, "status": {}});
        let view = json!({"spec": {"request": "changed"},
            "status": {"conditions": [{"type": "Approved", "reason": "R"}]}});
        let approved = approval(&csr, &view, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(approved["spec"]["request"], "x");
        assert_eq!(
            approved["status"]["conditions"][0],
            json!({"type": "Approved", "reason": "R", "status": "True",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z"})
        );
        let removed = approval(&approved, &json!({"status": {}}), "t").unwrap_err();
        assert_eq!(
            removed[0].message,
            "Forbidden: updates may not remove a condition of type \"Approved\""
        );
        let both = json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}]}});
        assert_eq!(approval(&csr, &both, "t").unwrap_err().len(), 1);
    }
    use crate::resources::ResourceRegistry;
    use crate::store::{MemoryStore, StoreLimits};

    #[test]
    fn the_requester_is_the_requests_user_and_the_spec_is_kept_on_update() {
        let store = MemoryStore::new(kemu_shared::FakeClock::at_epoch(), StoreLimits::default());
        let rt = ResourceRegistry::builtin_ref()
            .lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
            .unwrap();
        let user = kemu_shared::UserInfo {
            username: "alice".into(),
            groups: vec!["dev".into()],
            ..Default::default()
        };
        let ctx = Context {
            store: &store,
            network: None,
            namespace: "",
            user: Some(&user),
            now: chrono::DateTime::UNIX_EPOCH,
        };
        let mut csr = json!({"spec": {"request": "x", "username": "mallory", "uid": "1"}});
        CsrStrategy
            .prepare_create(&ctx, &rt, "c", &mut csr)
            .unwrap();
        assert_eq!(
            csr["spec"],
            json!({"request": "x", "username": "alice", "groups": ["dev"]})
        );
        let mut changed = json!({"spec": {"request": "y"}});
        CsrStrategy
            .prepare_update(&ctx, &rt, &csr, &mut changed)
            .unwrap();
        assert_eq!(changed["spec"], csr["spec"]);
    }
}
