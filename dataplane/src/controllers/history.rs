//! ControllerRevisions, as upstream's `controller/history` keeps them for
//! DaemonSets and StatefulSets: one per distinct Pod template, named
//! `<owner>-<hash>`, controlled by its owner (so the collector removes it
//! with the owner), labelled as the template plus the hash (under
//! `controller-revision-hash` for a DaemonSet, `controller.kubernetes.io/hash`
//! for a StatefulSet, as each controller names it),
//! holding the template as the strategic-merge patch `kubectl rollout undo`
//! applies, and numbered one above the highest revision of the owner.
//!
//! A template already recorded (a rollback) gets the next number instead of
//! a copy. Revisions are looked at when the owner's template hash changes
//! (and once per owner after a start), not on every resync: upstream's
//! controllers only look on the owner's own events, so a revision a client
//! deletes stays deleted until the template changes.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::{Client, ClientError, Kind, kinds};
use super::obj;

/// The hash each owner's revisions were last brought up to date for.
#[derive(Debug, Default)]
pub struct History {
    ensured: Mutex<HashMap<String, String>>,
}

impl History {
    /// Makes sure `owner`'s current template (whose hash is `hash`) is its
    /// newest revision, the hash labelled `hash_label`.
    pub async fn record(
        &self,
        client: &dyn Client,
        owner_kind: Kind,
        owner: &Value,
        hash: &str,
        hash_label: &str,
    ) -> Result<(), ClientError> {
        let uid = obj::uid(owner).to_owned();
        if self.ensured.lock().get(&uid).is_some_and(|h| h == hash) {
            return Ok(());
        }
        let data = json!({"spec": {"template": with_replace(&owner["spec"]["template"])}});
        let mine: Vec<_> = client
            .list(
                kinds::CONTROLLER_REVISION,
                Some(obj::namespace(owner)),
                None,
            )
            .await?
            .into_iter()
            .filter(|r| obj::controller_uid(r) == Some(uid.as_str()))
            .collect();
        let newest = mine
            .iter()
            .filter_map(|r| r["revision"].as_i64())
            .max()
            .unwrap_or(0);
        let same = mine.iter().find(|r| r["data"] == data);
        match same {
            Some(r) if r["revision"].as_i64() == Some(newest) => {}
            Some(r) => {
                // A rollback: the recorded template becomes the newest.
                let mut r = (**r).clone();
                r["revision"] = json!(newest.saturating_add(1));
                Self::settle(client.update(kinds::CONTROLLER_REVISION, r).await)?;
            }
            None => {
                let mut labels = owner["spec"]["template"]["metadata"]["labels"].clone();
                if !labels.is_object() {
                    labels = json!({});
                }
                labels[hash_label] = json!(hash);
                let r = json!({
                    "apiVersion": "apps/v1",
                    "kind": "ControllerRevision",
                    "metadata": {
                        "name": format!("{}-{hash}", obj::name(owner)),
                        "namespace": obj::namespace(owner),
                        "labels": labels,
                        "ownerReferences": [obj::controller_ref_to(owner_kind, owner)],
                    },
                    "data": data,
                    "revision": newest.saturating_add(1),
                });
                Self::settle(client.create(kinds::CONTROLLER_REVISION, r).await)?;
            }
        }
        self.ensured.lock().insert(uid, hash.to_owned());
        Ok(())
    }

    /// The template a revision holds (`None` when it is gone).
    pub async fn template(
        client: &dyn Client,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ClientError> {
        match client
            .get(kinds::CONTROLLER_REVISION, namespace, name)
            .await
        {
            Ok(r) => {
                let mut t = r["data"]["spec"]["template"].clone();
                if let Some(m) = t.as_object_mut() {
                    m.remove("$patch");
                }
                Ok(t.is_object().then_some(t))
            }
            Err(ClientError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Forgets an owner that is gone.
    pub fn forget(&self, owner_uid: &str) {
        self.ensured.lock().remove(owner_uid);
    }

    fn settle(written: Result<std::sync::Arc<Value>, ClientError>) -> Result<(), ClientError> {
        match written {
            // Written meanwhile by another sync or a client: looked at again
            // when the template next changes.
            Ok(_) | Err(ClientError::AlreadyExists(_) | ClientError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The template with `$patch: replace`, as upstream's `getPatch` writes it.
fn with_replace(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(m) = t.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    t
}
