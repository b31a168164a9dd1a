//! The CustomResourceDefinition controllers of apiextensions-apiserver, as one
//! reconciler: naming (`NamesAccepted`, `status.acceptedNames`, conflicts with
//! the other CRDs of the group), establishing (`Established`, once the
//! cluster serves the types), `status.storedVersions`, and finalization (a
//! CRD being deleted loses every custom resource, then its
//! `customresourcecleanup.apiextensions.k8s.io` finalizer).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::resources::custom::CLEANUP_FINALIZER;

/// What the controller changes beside CRD objects: which types the cluster
/// serves, and the custom resources of a CRD going away.
pub trait CustomTypes: Send + Sync + std::fmt::Debug {
    /// Serves the built-ins plus the types of these CRDs (those whose names
    /// were accepted).
    fn serve(&self, crds: &[Arc<Value>]);
    /// Deletes every custom resource of `crd`; answers how many remain
    /// (held by finalizers).
    fn delete_all(&self, crd: &Value) -> usize;
}

/// The CRD controller.
pub struct CrdController {
    rt: Arc<Runtime>,
    host: Arc<dyn CustomTypes>,
}

impl CrdController {
    /// Wires the controller to the CRD informer.
    pub fn register(rt: &Arc<Runtime>, host: Arc<dyn CustomTypes>) -> Registration {
        let queue = rt.queue("customresourcedefinition");
        let q = queue.clone();
        rt.informer(kinds::CRD)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        Registration {
            name: "customresourcedefinition",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                host,
            }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let inf = self.rt.informer(kinds::CRD);
        let Some(crd) = inf.get(key) else {
            // Gone: stop serving its types.
            self.host.serve(&inf.list());
            return Ok(Requeue::No);
        };
        if obj::deleting(&crd) {
            return self.finalize(&crd).await;
        }
        let now = obj::fmt_time(self.rt.clock.now());
        let others: Vec<Arc<Value>> = inf
            .list()
            .into_iter()
            .filter(|o| obj::name(o) != obj::name(&crd))
            .collect();
        let mut next = (*crd).clone();
        let mut conds: Vec<Value> = next["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names = requested_names(&crd);
        match conflict(&names, &crd["spec"]["group"], &others) {
            Some((reason, message)) => {
                obj::set_condition(
                    &mut conds,
                    json!({"type": "NamesAccepted", "status": "False", "reason": reason, "message": message}),
                    &now,
                    false,
                );
                if !crate::resources::custom::condition_true(&crd, "Established") {
                    obj::set_condition(
                        &mut conds,
                        json!({"type": "Established", "status": "False", "reason": "NotAccepted", "message": "not all names are accepted"}),
                        &now,
                        false,
                    );
                }
            }
            None => {
                next["status"]["acceptedNames"] = names;
                obj::set_condition(
                    &mut conds,
                    json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}),
                    &now,
                    false,
                );
                obj::set_condition(
                    &mut conds,
                    json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}),
                    &now,
                    false,
                );
            }
        }
        next["status"]["conditions"] = json!(conds);
        let mut stored: Vec<Value> = next["status"]["storedVersions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(storage) = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["storage"] == true)
            .map(|v| v["name"].clone())
            && !stored.contains(&storage)
        {
            stored.push(storage);
        }
        next["status"]["storedVersions"] = json!(stored);
        // Serve first, then report Established, so a client that saw the
        // condition finds the endpoints (as upstream's establishing controller).
        let mut all = others;
        all.push(Arc::new(next.clone()));
        self.host.serve(&all);
        if next.get("status") != crd.get("status") {
            let written = self.rt.client.update_status(kinds::CRD, next).await?;
            inf.observe(written);
        }
        Ok(Requeue::No)
    }

    async fn finalize(&self, crd: &Arc<Value>) -> Result<Requeue, ClientError> {
        let has_finalizer = crd["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == CLEANUP_FINALIZER));
        if !has_finalizer {
            return Ok(Requeue::No);
        }
        let now = obj::fmt_time(self.rt.clock.now());
        let remaining = self.host.delete_all(crd);
        let mut next = (**crd).clone();
        let mut conds: Vec<Value> = next["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (reason, message) = if remaining > 0 {
            (
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress".to_owned(),
            )
        } else {
            (
                "InstanceDeletionCompleted",
                "removed all instances".to_owned(),
            )
        };
        obj::set_condition(
            &mut conds,
            json!({"type": "Terminating", "status": "True", "reason": reason, "message": message}),
            &now,
            false,
        );
        next["status"]["conditions"] = json!(conds);
        if next.get("status") != crd.get("status") {
            next = Arc::unwrap_or_clone(self.rt.client.update_status(kinds::CRD, next).await?);
        }
        if remaining > 0 {
            return Ok(Requeue::After(Duration::from_secs(1)));
        }
        if let Some(f) = next["metadata"]["finalizers"].as_array_mut() {
            f.retain(|f| f != CLEANUP_FINALIZER);
        }
        self.rt.client.update(kinds::CRD, next).await?;
        Ok(Requeue::No)
    }
}

impl Reconciler for CrdController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

/// `spec.names` with upstream's defaults (singular, listKind).
fn requested_names(crd: &Value) -> Value {
    let mut names = crd["spec"]["names"].clone();
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    if names["singular"].as_str().is_none_or(str::is_empty) {
        names["singular"] = json!(kind.to_ascii_lowercase());
    }
    if names["listKind"].as_str().is_none_or(str::is_empty) {
        names["listKind"] = json!(format!("{kind}List"));
    }
    names
}

/// The first name of `names` another CRD of the group already holds, as
/// upstream's naming controller reports it.
fn conflict(names: &Value, group: &Value, others: &[Arc<Value>]) -> Option<(String, String)> {
    let mut resources: HashSet<String> = HashSet::new();
    let mut kinds: HashSet<String> = HashSet::new();
    for o in others.iter().filter(|o| &o["spec"]["group"] == group) {
        let a = &o["status"]["acceptedNames"];
        for f in ["plural", "singular"] {
            if let Some(s) = a[f].as_str().filter(|s| !s.is_empty()) {
                resources.insert(s.to_owned());
            }
        }
        for s in a["shortNames"].as_array().into_iter().flatten() {
            if let Some(s) = s.as_str() {
                resources.insert(s.to_owned());
            }
        }
        for f in ["kind", "listKind"] {
            if let Some(s) = a[f].as_str().filter(|s| !s.is_empty()) {
                kinds.insert(s.to_owned());
            }
        }
    }
    let used = |s: &str| format!("{s:?} is already in use");
    for (field, reason) in [
        ("plural", "PluralConflict"),
        ("singular", "SingularConflict"),
    ] {
        if let Some(s) = names[field].as_str()
            && resources.contains(s)
        {
            return Some((reason.into(), used(s)));
        }
    }
    for s in names["shortNames"].as_array().into_iter().flatten() {
        if let Some(s) = s.as_str()
            && resources.contains(s)
        {
            return Some(("ShortNamesConflict".into(), used(s)));
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        if let Some(s) = names[field].as_str()
            && kinds.contains(s)
        {
            return Some((reason.into(), used(s)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_taken_by_another_crd_of_the_group_conflict() {
        let other = Arc::new(json!({
            "spec": { "group": "stable.example.com" },
            "status": { "acceptedNames": { "plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"] } }
        }));
        let group = json!("stable.example.com");
        let mine = json!({ "plural": "crontabs", "singular": "crontab2", "kind": "CronTab2", "listKind": "CronTab2List" });
        assert_eq!(
            conflict(&mine, &group, std::slice::from_ref(&other)),
            Some((
                "PluralConflict".into(),
                "\"crontabs\" is already in use".into()
            ))
        );
        let mine = json!({ "plural": "others", "singular": "other", "kind": "CronTab", "listKind": "OtherList" });
        assert_eq!(
            conflict(&mine, &group, std::slice::from_ref(&other))
                .unwrap()
                .0,
            "KindConflict"
        );
        assert!(conflict(&mine, &json!("other.example.com"), &[other]).is_none());
    }
}
