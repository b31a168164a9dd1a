//! The admission chain every write goes through before it is stored, in
//! kube-apiserver's order: NamespaceLifecycle, LimitRanger (mutating),
//! ServiceAccount, mutating webhooks (with their `matchConditions` in CEL);
//! then (after the engine's own checks)
//! the RBAC escalation check, LimitRanger (validating), validating webhooks
//! and ResourceQuota last. The plugins are the pure functions of
//! [`crate::authz::admission`]; this file reads what they need from the
//! cluster's store and calls the webhooks ([`super::webhook_call`]).
//!
//! Objects the workload controllers create (Pods, ReplicaSets, Jobs, PVCs)
//! are admitted too, as their controller's ServiceAccount
//! ([`crate::controllers::store_admission`]); their other writes go straight
//! to the store, as privileged writes.

use std::sync::Arc;

use kemu_shared::UserInfo;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::webhook_call;
use crate::authz::admission::webhook::{self, Webhook};
use crate::authz::admission::{
    Operation, limitrange, match_conditions, namespace, object_name, pod_security, policy, quota,
    serviceaccount, storage_protection,
};
use crate::authz::{Forbidden, Mode, StoreSource, escalation};
use crate::error::ApiError;
use crate::resources::{ResourceRegistry, ResourceType};
use crate::store::{NAMESPACES, ObjectKey, Preconditions, Store};

const POLICIES: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";
const POLICY_BINDINGS: &str = "validatingadmissionpolicybindings.admissionregistration.k8s.io";
const CRDS: &str = "customresourcedefinitions.apiextensions.k8s.io";
const MUTATING: &str = "mutatingwebhookconfigurations.admissionregistration.k8s.io";
const VALIDATING: &str = "validatingwebhookconfigurations.admissionregistration.k8s.io";
const QUOTAS: &str = "resourcequotas";
const LIMIT_RANGES: &str = "limitranges";
const SERVICE_ACCOUNTS: &str = "serviceaccounts";
const SERVICES: &str = "services";

/// How often the quota charge is retried when a concurrent write moved the
/// quota's `status.used` under it.
const QUOTA_RETRIES: usize = 8;

/// One request's admission: who writes what, where.
pub struct Admission<'a> {
    /// The authorization mode (the RBAC escalation check follows it).
    pub authorization: Mode,
    /// The cluster's store (a dry-run view on `dryRun=All`).
    pub store: &'a Arc<dyn Store>,
    /// The type written.
    pub rt: &'a ResourceType,
    /// The subresource written (`status`, `scale`), or "".
    pub subresource: &'a str,
    /// The request's namespace ("" when cluster-scoped).
    pub namespace: &'a str,
    /// Who writes (after impersonation).
    pub user: &'a UserInfo,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// Where the webhooks' warnings go (the response's `Warning` headers).
    pub warnings: &'a Mutex<Vec<String>>,
    /// A workload controller's create: the ServiceAccount plugin is left
    /// out here, having run already without waiting for a missing account
    /// (`controllers::store_admission::admit_service_account`).
    pub from_controller: bool,
}

impl From<Forbidden> for ApiError {
    fn from(f: Forbidden) -> Self {
        ApiError::Refused(Box::new(f.status()))
    }
}

/// TaintNodesByCondition: a new Node is not ready until its `Ready`
/// condition says so (the node lifecycle controller,
/// [`crate::controllers::node_taints`], takes the taint off then).
fn taint_not_ready(node: &mut Value) {
    use crate::controllers::node_taints::NOT_READY;
    if !node["spec"].is_object() {
        node["spec"] = json!({});
    }
    let taints = &mut node["spec"]["taints"];
    if !taints.is_array() {
        *taints = json!([]);
    }
    if let Some(list) = taints.as_array_mut()
        && !list
            .iter()
            .any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule")
    {
        list.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
    }
}

fn wire_operation(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

impl Admission<'_> {
    fn objects(&self, resource: &str, namespace: &str) -> Vec<Value> {
        self.store
            .snapshot(resource)
            .iter(Some(namespace), None)
            .map(|(_, o)| (*o).clone())
            .collect()
    }

    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        self.store
            .get(&ObjectKey::new(resource, namespace, name))
            .map(|o| (*o).clone())
    }

    fn is_main(&self) -> bool {
        self.subresource.is_empty()
    }

    fn is(&self, group: &str, resource: &str) -> bool {
        self.rt.group == group && self.rt.plural == resource
    }

    /// Admits a create or update of `object` (`old` as stored, on update):
    /// the object to store, or the refusal.
    pub async fn admit(
        &self,
        op: Operation,
        mut object: Value,
        old: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let (group, resource) = (self.rt.group.as_str(), self.rt.plural.as_str());
        let ns = self.namespace;
        let name = object_name(&object).to_owned();
        // Read once: NamespaceLifecycle and PodSecurity both look at it.
        let ns_object = (self.is_main() && !ns.is_empty())
            .then(|| self.get(NAMESPACES, "", ns))
            .flatten();
        if self.is_main() {
            namespace::admit(op, group, resource, &name, ns, ns_object.as_ref()).map_err(|r| {
                match r {
                    namespace::Refusal::NotFound(e) => e,
                    namespace::Refusal::Forbidden(f) => f.into(),
                }
            })?;
        }
        let limit_ranges = if self.is_main() && !ns.is_empty() {
            self.objects(LIMIT_RANGES, ns)
        } else {
            Vec::new()
        };
        if self.is_main() {
            if op == Operation::Create && self.is("", "pods") {
                crate::strategy::pods::init_status(&mut object);
            }
            limitrange::mutate(op, group, resource, &mut object, &limit_ranges);
            if op == Operation::Create && self.is("", "pods") {
                if !self.from_controller {
                    self.admit_service_account(&mut object).await?;
                }
                crate::strategy::pods::admit_pod(&mut object);
            }
            storage_protection::mutate(op, group, resource, &mut object);
            if op == Operation::Create && self.is("", "nodes") {
                taint_not_ready(&mut object);
            }
        }
        let options = json!({"kind": if op == Operation::Create { "CreateOptions" } else { "UpdateOptions" }, "apiVersion": "meta.k8s.io/v1"});
        object = self
            .call_webhooks(true, op, Some(object), old, &options)
            .await?
            .unwrap_or(Value::Null);
        if group == escalation::RBAC_GROUP {
            let mut typed = object.clone();
            typed["kind"] = json!(self.rt.kind);
            escalation::check_write(
                self.authorization,
                &StoreSource(self.store.as_ref()),
                self.user,
                ns,
                &typed,
                old,
            )?;
        }
        if self.is_main() {
            limitrange::validate(op, group, resource, &object, &limit_ranges)?;
            self.check_pod_security(op, &object, old, ns_object.as_ref())?;
        }
        self.check_policies(op, Some(&object), old, &options)?;
        self.call_webhooks(false, op, Some(object.clone()), old, &options)
            .await?;
        if self.is_main() && !ns.is_empty() {
            self.charge_quota(op, &object, old)?;
        }
        Ok(object)
    }

    /// PodSecurity: a Namespace's labels are checked (and raising its
    /// enforce level warns of the Pods it would refuse); a Pod is refused
    /// or warned of as its namespace's levels say; a workload's template is
    /// warned of.
    fn check_pod_security(
        &self,
        op: Operation,
        object: &Value,
        old: Option<&Value>,
        ns: Option<&Value>,
    ) -> Result<(), ApiError> {
        let labels = |o: &Value| o["metadata"]["labels"].clone();
        if self.is("", "namespaces") {
            let before = old.map(labels);
            let causes = pod_security::namespace_errors(&labels(object), before.as_ref());
            if !causes.is_empty() {
                return Err(ApiError::Invalid {
                    target: crate::error::Target {
                        name: object_name(object).to_owned(),
                        group: String::new(),
                        kind: "Namespace".into(),
                    },
                    kind: "Namespace".into(),
                    causes,
                });
            }
            if let Some(before) = before {
                let name = object_name(object);
                let pods = self.objects("pods", name);
                let warnings =
                    pod_security::existing_pod_warnings(name, &labels(object), &before, &pods);
                self.warnings.lock().extend(warnings);
            }
            return Ok(());
        }
        let pod = self.is("", "pods");
        if pod && op != Operation::Create {
            return Ok(());
        }
        let Some(ns) = ns else {
            return Ok(());
        };
        let ns_labels = labels(ns);
        if !pod_security::labelled(&ns_labels) {
            return Ok(());
        }
        if pod {
            let warnings = pod_security::review_pod(&ns_labels, object).map_err(|why| {
                let name = object_name(object).to_owned();
                ApiError::from(Forbidden {
                    message: format!("pods \"{name}\" is forbidden: {why}"),
                    group: String::new(),
                    kind: "pods".into(),
                    name,
                    causes: Vec::new(),
                })
            })?;
            self.warnings.lock().extend(warnings);
        } else {
            let warnings =
                pod_security::review_template(&ns_labels, &self.rt.group, &self.rt.kind, object);
            self.warnings.lock().extend(warnings);
        }
        Ok(())
    }

    /// Admits the delete of `old`: NamespaceLifecycle (the system
    /// namespaces stay) and the webhooks registered for `DELETE`.
    pub async fn admit_delete(&self, old: &Value, options: &Value) -> Result<(), ApiError> {
        let (group, resource) = (self.rt.group.as_str(), self.rt.plural.as_str());
        let name = object_name(old).to_owned();
        namespace::admit(
            Operation::Delete,
            group,
            resource,
            &name,
            self.namespace,
            None,
        )
        .map_err(|r| match r {
            namespace::Refusal::NotFound(e) => e,
            namespace::Refusal::Forbidden(f) => f.into(),
        })?;
        let mut options = options.clone();
        if !options.is_object() {
            options = json!({});
        }
        options["kind"] = json!("DeleteOptions");
        options["apiVersion"] = json!("meta.k8s.io/v1");
        self.call_webhooks(true, Operation::Delete, None, Some(old), &options)
            .await?;
        self.check_policies(Operation::Delete, None, Some(old), &options)?;
        self.call_webhooks(false, Operation::Delete, None, Some(old), &options)
            .await?;
        Ok(())
    }

    /// ServiceAccount admission. The `default` account is looked up a few
    /// times, as upstream does, since its controller creates it just after
    /// the Namespace.
    async fn admit_service_account(&self, pod: &mut Value) -> Result<(), ApiError> {
        let wanted = pod
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_owned();
        let attempts = if wanted == "default" { 10 } else { 1 };
        let mut account = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                // Upstream's retry interval; a pause, not a reading of time.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            account = self.get(SERVICE_ACCOUNTS, self.namespace, &wanted);
            if account.is_some() {
                break;
            }
        }
        let suffix = super::resource::random_suffix();
        serviceaccount::admit_pod(pod, self.namespace, |_| account, &suffix)?;
        Ok(())
    }

    /// ResourceQuota admission, last: charges the write to every quota of
    /// the namespace and writes their `status.used` back (as upstream's
    /// admission does), retrying when a concurrent write moved a quota.
    fn charge_quota(
        &self,
        op: Operation,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (group, resource) = (self.rt.group.as_str(), self.rt.plural.as_str());
        for _ in 0..QUOTA_RETRIES {
            let quotas = self.objects(QUOTAS, self.namespace);
            if quotas.is_empty() {
                return Ok(());
            }
            let charged = quota::admit(op, group, resource, object, old, &quotas)?;
            let mut conflict = false;
            for q in charged {
                let name = q["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let pre = Preconditions {
                    resource_version: q["metadata"]["resourceVersion"].as_str().map(str::to_owned),
                    uid: None,
                };
                match self
                    .store
                    .update(&ObjectKey::new(QUOTAS, self.namespace, &name), q, &pre)
                {
                    Ok(_) => {}
                    Err(ApiError::Conflict { .. }) => {
                        conflict = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if !conflict {
                return Ok(());
            }
        }
        Err(ApiError::Internal(
            "Internal error occurred: resource quota evaluation timed out".into(),
        ))
    }

    /// The ValidatingAdmissionPolicies bound to the request: a `Deny`
    /// binding's refusal, `Warn` bindings' warnings.
    fn check_policies(
        &self,
        op: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        options: &Value,
    ) -> Result<(), ApiError> {
        if self.rt.group == "admissionregistration.k8s.io" {
            // Upstream never applies policies to admission configuration.
            return Ok(());
        }
        let bindings = self.objects(POLICY_BINDINGS, "");
        if bindings.is_empty() {
            return Ok(());
        }
        let policies = self.objects(POLICIES, "");
        let ns_object = self.namespace_object(object.or(old));
        let name = object
            .or(old)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let req = webhook::Request {
            operation: wire_operation(op),
            group: &self.rt.group,
            version: &self.rt.version,
            kind: &self.rt.kind,
            resource: &self.rt.plural,
            subresource: self.subresource,
            name: &name,
            namespace: self.namespace,
            object,
            old_object: old,
            user: self.user,
            dry_run: self.dry_run,
            options: Some(options),
        };
        let request = webhook::review(&req, &uuid::Uuid::new_v4().to_string())["request"].take();
        let outcome = policy::evaluate(
            &policies,
            &bindings,
            &req,
            &request,
            ns_object.as_ref(),
            &StoreParams(self),
        );
        self.warnings.lock().extend(outcome.warnings);
        match outcome.denied {
            Some(status) => Err(ApiError::Refused(Box::new(status))),
            None => Ok(()),
        }
    }

    /// The Namespace object the selectors and `namespaceObject` see: the
    /// request's, or the Namespace itself when one is written.
    fn namespace_object(&self, object: Option<&Value>) -> Option<Value> {
        if self.rt.group.is_empty() && self.rt.plural == NAMESPACES {
            object.cloned()
        } else if self.namespace.is_empty() {
            None
        } else {
            self.get(NAMESPACES, "", self.namespace)
        }
    }

    /// Calls the mutating (or validating) webhooks the request reaches, in
    /// upstream's order. Answers the object after the mutating webhooks'
    /// patches; `Err` is the refusal (a webhook's denial, a failed call
    /// under `failurePolicy: Fail`, a dry run a webhook cannot take).
    async fn call_webhooks(
        &self,
        mutating: bool,
        op: Operation,
        mut object: Option<Value>,
        old: Option<&Value>,
        options: &Value,
    ) -> Result<Option<Value>, ApiError> {
        if self.rt.group == "admissionregistration.k8s.io"
            && self.rt.plural.ends_with("webhookconfigurations")
        {
            // Upstream never calls webhooks on webhook configurations.
            return Ok(object);
        }
        let configurations = self.objects(if mutating { MUTATING } else { VALIDATING }, "");
        if configurations.is_empty() {
            return Ok(object);
        }
        let ns_object = if self.rt.group.is_empty() && self.rt.plural == NAMESPACES {
            object.clone().or_else(|| old.cloned())
        } else if self.namespace.is_empty() {
            None
        } else {
            self.get(NAMESPACES, "", self.namespace)
        };
        let name = object
            .as_ref()
            .or(old)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for hook in Webhook::all(&configurations) {
            let req = webhook::Request {
                operation: wire_operation(op),
                group: &self.rt.group,
                version: &self.rt.version,
                kind: &self.rt.kind,
                resource: &self.rt.plural,
                subresource: self.subresource,
                name: &name,
                namespace: self.namespace,
                object: object.as_ref(),
                old_object: old,
                user: self.user,
                dry_run: self.dry_run,
                options: Some(options),
            };
            if !webhook::matches(&hook, &req, ns_object.as_ref()) {
                continue;
            }
            let uid = uuid::Uuid::new_v4().to_string();
            let body = webhook::review(&req, &uid);
            match match_conditions::matches(&hook, &body["request"]) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(cause) => match webhook::call_failed(&hook, &cause) {
                    Some(status) => return Err(ApiError::Refused(Box::new(status))),
                    None => continue,
                },
            }
            if let Some(message) = webhook::dry_run_refusal(&hook, &req) {
                return Err(ApiError::BadRequest(message));
            }
            let answer = match hook.url(|ns, n| self.get(SERVICES, ns, n)) {
                Ok(url) => webhook_call::post(&hook, &url, &body).await,
                Err(cause) => Err(cause),
            };
            let outcome = answer.and_then(|response| {
                webhook::interpret(&hook, &response, &uid, object.as_ref(), mutating)
            });
            match outcome {
                Ok(webhook::Outcome::Allowed {
                    object: patched,
                    warnings,
                }) => {
                    self.warnings.lock().extend(warnings);
                    if mutating && object.is_some() {
                        object = patched;
                    }
                }
                Ok(webhook::Outcome::Denied(status)) => {
                    return Err(ApiError::Refused(Box::new(status)));
                }
                Err(cause) => {
                    if let Some(status) = webhook::call_failed(&hook, &cause) {
                        return Err(ApiError::Refused(Box::new(status)));
                    }
                }
            }
        }
        Ok(object)
    }
}

/// The params of admission policies, read from the store: built-in kinds
/// by the registry, custom ones by their CustomResourceDefinition.
struct StoreParams<'a, 'b>(&'a Admission<'b>);

impl policy::Params for StoreParams<'_, '_> {
    fn list(&self, param_kind: &Value, namespace: &str) -> Option<(bool, Vec<Value>)> {
        let api_version = param_kind.get("apiVersion")?.as_str()?;
        let kind = param_kind.get("kind")?.as_str()?;
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let (resource, namespaced) =
            match ResourceRegistry::builtin_ref().by_kind(api_version, kind) {
                Some(rt) if rt.group.is_empty() => (rt.plural.clone(), rt.namespaced),
                Some(rt) => (format!("{}.{}", rt.plural, rt.group), rt.namespaced),
                None => {
                    let crd = self.0.objects(CRDS, "").into_iter().find(|c| {
                        c.pointer("/spec/group") == Some(&json!(group))
                            && c.pointer("/spec/names/kind") == Some(&json!(kind))
                    })?;
                    let plural = crd.pointer("/spec/names/plural")?.as_str()?;
                    let namespaced = crd.pointer("/spec/scope") == Some(&json!("Namespaced"));
                    (format!("{plural}.{group}"), namespaced)
                }
            };
        let ns = if namespaced { namespace } else { "" };
        Some((namespaced, self.0.objects(&resource, ns)))
    }
}
