//! The tokens controller, as upstream's: every Secret of type
//! `kubernetes.io/service-account-token` naming a ServiceAccount (annotation
//! `kubernetes.io/service-account.name`) gets `data.token` (a legacy JWT
//! signed with the cluster's key, see [`crate::sa_token`]), `data.ca.crt`
//! and `data.namespace`, and the ServiceAccount's uid as annotation; a token
//! Secret whose ServiceAccount is gone (or was recreated) is deleted.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kemu_shared::ServiceAccountKey;
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::sa_token::{SECRET_TYPE, legacy_claims};

const SA_NAME: &str = "kubernetes.io/service-account.name";
const SA_UID: &str = "kubernetes.io/service-account.uid";

/// The tokens controller.
pub struct TokensController {
    rt: Arc<Runtime>,
    key: ServiceAccountKey,
    root_ca: Option<Arc<str>>,
}

fn is_token_secret(s: &Value) -> bool {
    s["type"] == SECRET_TYPE
}

impl TokensController {
    /// Wires the controller to the Secret and ServiceAccount informers.
    pub fn register(
        rt: &Arc<Runtime>,
        key: ServiceAccountKey,
        root_ca: Option<Arc<str>>,
    ) -> Registration {
        let queue = rt.queue("serviceaccount-tokens");
        let q = queue.clone();
        rt.informer(kinds::SECRET).on_change(move |c| {
            if c.kind != EventType::Deleted && is_token_secret(&c.new) {
                q.add(ObjKey::of(&c.new));
            }
        });
        let q = queue.clone();
        let secrets = rt.informer(kinds::SECRET).clone();
        rt.informer(kinds::SERVICE_ACCOUNT).on_change(move |c| {
            for s in secrets.list_namespace(obj::namespace(&c.new)) {
                if is_token_secret(&s) && obj::annotation(&s, SA_NAME) == Some(obj::name(&c.new)) {
                    q.add(ObjKey::of(&s));
                }
            }
        });
        Registration {
            name: "serviceaccount-tokens",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                key,
                root_ca,
            }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(secret) = self.rt.informer(kinds::SECRET).get(key) else {
            return Ok(Requeue::No);
        };
        if !is_token_secret(&secret) || obj::deleting(&secret) {
            return Ok(Requeue::No);
        }
        let Some(sa_name) = obj::annotation(&secret, SA_NAME) else {
            return Ok(Requeue::No);
        };
        let sa = self
            .rt
            .informer(kinds::SERVICE_ACCOUNT)
            .get_by(&key.namespace, sa_name);
        let wanted_uid = obj::annotation(&secret, SA_UID);
        let sa = match sa {
            Some(sa) if wanted_uid.is_none_or(|u| u == obj::uid(&sa)) => sa,
            _ => {
                let opts = DeleteOptions {
                    uid: Some(obj::uid(&secret).to_owned()),
                    ..DeleteOptions::default()
                };
                return match self
                    .rt
                    .client
                    .delete(kinds::SECRET, &key.namespace, &key.name, opts)
                    .await
                {
                    Ok(_) | Err(ClientError::NotFound(_)) => Ok(Requeue::No),
                    Err(e) => Err(e),
                };
            }
        };
        if secret["data"]["token"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
            && wanted_uid.is_some()
        {
            return Ok(Requeue::No);
        }
        let token = self
            .key
            .sign_jwt(&legacy_claims(&sa, &secret))
            .map_err(|e| ClientError::Invalid(e.to_string()))?;
        let mut next = (*secret).clone();
        obj::set_annotation(&mut next, SA_UID, obj::uid(&sa));
        if !next["data"].is_object() {
            next["data"] = json!({});
        }
        next["data"]["token"] = json!(STANDARD.encode(token));
        next["data"]["namespace"] = json!(STANDARD.encode(&key.namespace));
        if let Some(ca) = &self.root_ca {
            next["data"]["ca.crt"] = json!(STANDARD.encode(ca.as_bytes()));
        }
        match self.rt.client.update(kinds::SECRET, next).await {
            Ok(w) => self.rt.informer(kinds::SECRET).observe(w),
            Err(ClientError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for TokensController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
