//! CertificateSigningRequests, as upstream's `csrStrategy` prepares them:
//! the requester's identity is the registry's to write, from the request's
//! user, whatever the body says; on update the spec stays as created.

use serde_json::{Value, json};

use super::{Context, Strategy};
use crate::error::ApiError;
use crate::resources::ResourceType;

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
