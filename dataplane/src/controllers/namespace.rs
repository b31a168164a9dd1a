//! Namespace lifecycle and per-namespace defaults.
//!
//! - A Namespace being deleted shows `Terminating` with upstream's deletion
//!   conditions; its contents are deleted; once nothing remains, the
//!   `kubernetes` finalizer is removed from `spec.finalizers` and the store
//!   removes the Namespace.
//! - Every live Namespace gets the `default` ServiceAccount (the
//!   serviceaccounts-controller) and, when the cluster CA is known, the
//!   `kube-root-ca.crt` ConfigMap (the root-ca-cert-publisher).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, EventType, kinds};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

/// The Namespace controller.
pub struct NamespaceController {
    rt: Arc<Runtime>,
    root_ca: Option<Arc<str>>,
}

impl NamespaceController {
    /// Wires the controller to the Namespace and ServiceAccount informers;
    /// `root_ca` is the PEM published as `kube-root-ca.crt`.
    pub fn register(rt: &Arc<Runtime>, root_ca: Option<Arc<str>>) -> Registration {
        let queue = rt.queue("namespace");
        let q = queue.clone();
        rt.informer(kinds::NAMESPACE)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        let q = queue.clone();
        rt.informer(kinds::SERVICE_ACCOUNT).on_change(move |c| {
            // `default` deleted: put it back.
            if c.kind == EventType::Deleted && obj::name(&c.new) == "default" {
                q.add(ObjKey::new("", obj::namespace(&c.new)));
            }
        });
        Registration {
            name: "namespace",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                root_ca,
            }),
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(ns) = self.rt.informer(kinds::NAMESPACE).get(key) else {
            return Ok(Requeue::No);
        };
        let name = obj::name(&ns).to_owned();
        if !obj::deleting(&ns) {
            if ns["status"]["phase"].is_null() {
                let mut n = (*ns).clone();
                n["status"]["phase"] = json!("Active");
                let w = self.rt.client.update_status(kinds::NAMESPACE, n).await?;
                self.rt.informer(kinds::NAMESPACE).observe(w);
            }
            self.ensure_defaults(&name).await?;
            return Ok(Requeue::No);
        }
        let remaining = self.rt.client.delete_namespace_contents(&name).await?;
        let now = obj::fmt_time(self.rt.clock.now());
        let mut n = (*ns).clone();
        let mut conds: Vec<Value> = n["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (t, reason, msg) in [
            (
                "NamespaceDeletionDiscoveryFailure",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
        ] {
            obj::set_condition(
                &mut conds,
                json!({"type": t, "status": "False", "reason": reason, "message": msg}),
                &now,
                false,
            );
        }
        if remaining > 0 {
            obj::set_condition(
                &mut conds,
                json!({"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain",
                       "message": format!("Some resources are remaining: {remaining} objects")}),
                &now,
                false,
            );
        } else {
            obj::set_condition(
                &mut conds,
                json!({"type": "NamespaceContentRemaining", "status": "False", "reason": "ContentRemoved", "message": "All content successfully removed"}),
                &now,
                false,
            );
        }
        n["status"]["phase"] = json!("Terminating");
        n["status"]["conditions"] = json!(conds);
        if ns.get("status") != n.get("status") {
            let w = self.rt.client.update_status(kinds::NAMESPACE, n).await?;
            self.rt.informer(kinds::NAMESPACE).observe(w.clone());
            n = Arc::unwrap_or_clone(w);
        }
        if remaining > 0 {
            return Ok(Requeue::After(Duration::from_secs(1)));
        }
        if n["spec"]["finalizers"]
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f == "kubernetes"))
        {
            if let Some(a) = n["spec"]["finalizers"].as_array_mut() {
                a.retain(|f| f != "kubernetes");
            }
            match self.rt.client.update(kinds::NAMESPACE, n).await {
                Ok(w) => self.rt.informer(kinds::NAMESPACE).observe(w),
                Err(ClientError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Requeue::No)
    }

    async fn ensure_defaults(&self, ns: &str) -> Result<(), ClientError> {
        if self
            .rt
            .informer(kinds::SERVICE_ACCOUNT)
            .get_by(ns, "default")
            .is_none()
        {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
            match self.rt.client.create(kinds::SERVICE_ACCOUNT, sa).await {
                Ok(w) => self.rt.informer(kinds::SERVICE_ACCOUNT).observe(w),
                Err(ClientError::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(ca) = &self.root_ca {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
                    "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": &**ca}});
            match self.rt.client.create(kinds::CONFIG_MAP, cm).await {
                Ok(_) | Err(ClientError::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Reconciler for NamespaceController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
