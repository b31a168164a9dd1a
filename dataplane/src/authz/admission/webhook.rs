//! Admission webhooks (`MutatingWebhookConfiguration`,
//! `ValidatingWebhookConfiguration`), everything but the HTTPS call itself:
//! which webhooks a request reaches (rules, scope, namespaceSelector,
//! objectSelector), where to call them (`url`, or a `service` whose endpoint
//! is the URL in its `kemu.dev/endpoint-url` annotation, since no Pods run),
//! the `AdmissionReview` v1 request, and the reading of its response
//! (allowed, denied as upstream words it, JSON patch, warnings), with
//! `failurePolicy` and `sideEffects` on dry runs.

use base64::Engine as _;
use kemu_shared::UserInfo;
use serde_json::{Value, json};

use super::jsonpatch;
use crate::label_selector as selector;

/// The Service annotation giving the base URL a `service` reference resolves to.
pub const ENDPOINT_ANNOTATION: &str = "kemu.dev/endpoint-url";

/// One webhook of a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    /// The webhook's name (`webhooks[].name`).
    pub name: String,
    /// Its configuration's name (webhooks run ordered by it).
    pub configuration: String,
    /// The whole `webhooks[]` entry.
    pub spec: Value,
}

impl Webhook {
    /// Every webhook of the configurations, in the order upstream calls them
    /// (by configuration name, then as listed).
    pub fn all(configurations: &[Value]) -> Vec<Webhook> {
        let mut configs: Vec<&Value> = configurations.iter().collect();
        configs.sort_by_key(|c| {
            c.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        });
        configs
            .into_iter()
            .flat_map(|c| {
                let cname = c
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                c.get("webhooks")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |w| Webhook {
                        name: w
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        configuration: cname.clone(),
                        spec: w,
                    })
            })
            .collect()
    }

    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub fn ignores_failures(&self) -> bool {
        self.spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore")
    }

    /// `timeoutSeconds` (default 10).
    pub fn timeout_seconds(&self) -> u64 {
        self.spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10)
    }

    /// The PEM CA bundle to verify the webhook's certificate with, if given.
    pub fn ca_bundle(&self) -> Option<Vec<u8>> {
        let b = self
            .spec
            .pointer("/clientConfig/caBundle")
            .and_then(Value::as_str)?;
        base64::engine::general_purpose::STANDARD.decode(b).ok()
    }

    /// The URL to POST the AdmissionReview to (with upstream's `?timeout=`),
    /// resolving a `service` reference through `service(namespace, name)`.
    pub fn url(&self, service: impl Fn(&str, &str) -> Option<Value>) -> Result<String, String> {
        let timeout = format!("timeout={}s", self.timeout_seconds());
        let with_timeout = |u: String| {
            if u.contains('?') {
                format!("{u}&{timeout}")
            } else {
                format!("{u}?{timeout}")
            }
        };
        if let Some(u) = self
            .spec
            .pointer("/clientConfig/url")
            .and_then(Value::as_str)
        {
            return Ok(with_timeout(u.to_owned()));
        }
        let svc = self
            .spec
            .pointer("/clientConfig/service")
            .ok_or_else(|| "webhook has neither url nor service".to_owned())?;
        let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
        let (ns, name, path) = (s("namespace"), s("name"), s("path"));
        let object = service(ns, name).ok_or_else(|| format!("service \"{name}\" not found"))?;
        let base = object
            .pointer(&format!("/metadata/annotations/{}", ENDPOINT_ANNOTATION.replace('/', "~1")))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                format!("service {ns}/{name} has no {ENDPOINT_ANNOTATION} annotation: kemu runs no Pods to route to")
            })?;
        Ok(with_timeout(format!(
            "{}{path}",
            base.trim_end_matches('/')
        )))
    }
}

/// What is being admitted.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// API group of the resource.
    pub group: &'a str,
    /// Version of the resource.
    pub version: &'a str,
    /// Kind of the object, e.g. `Pod`.
    pub kind: &'a str,
    /// Resource (plural).
    pub resource: &'a str,
    /// Subresource, or "".
    pub subresource: &'a str,
    /// Object name ("" when generated later).
    pub name: &'a str,
    /// Namespace ("" for cluster-scoped).
    pub namespace: &'a str,
    /// The new object (create, update).
    pub object: Option<&'a Value>,
    /// The stored object (update, delete).
    pub old_object: Option<&'a Value>,
    /// Who asks.
    pub user: &'a UserInfo,
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// The operation's options (CreateOptions, UpdateOptions, …), if any.
    pub options: Option<&'a Value>,
}

fn list_has(v: Option<&Value>, want: &str) -> bool {
    v.and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x == "*" || x == want))
}

fn resource_matches(v: Option<&Value>, resource: &str, subresource: &str) -> bool {
    let Some(list) = v.and_then(Value::as_array) else {
        return false;
    };
    list.iter().filter_map(Value::as_str).any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == resource;
        let sub_ok = if r.contains('/') {
            sub == "*" || sub == subresource
        } else {
            subresource.is_empty()
        };
        res_ok && sub_ok
    })
}

/// Whether the request reaches `webhook`. `namespace` is the request's
/// Namespace object (for a Namespace itself, that object), if any.
pub fn matches(webhook: &Webhook, req: &Request, namespace: Option<&Value>) -> bool {
    let rules = webhook
        .spec
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let rule_ok = rules.iter().any(|r| {
        let scope = r.get("scope").and_then(Value::as_str).unwrap_or("*");
        let scope_ok = match scope {
            "Cluster" => req.namespace.is_empty(),
            "Namespaced" => !req.namespace.is_empty(),
            _ => true,
        };
        list_has(r.get("operations"), req.operation)
            && list_has(r.get("apiGroups"), req.group)
            && list_has(r.get("apiVersions"), req.version)
            && resource_matches(r.get("resources"), req.resource, req.subresource)
            && scope_ok
    });
    if !rule_ok {
        return false;
    }
    let empty = json!({});
    let labels = |o: Option<&Value>| {
        o.and_then(|o| o.pointer("/metadata/labels"))
            .cloned()
            .unwrap_or(json!({}))
    };
    let is_namespace = req.group.is_empty() && req.resource == "namespaces";
    if let Some(sel) = webhook.spec.get("namespaceSelector")
        && (!req.namespace.is_empty() || is_namespace)
    {
        let mut ns_labels = labels(namespace);
        let ns_name = if is_namespace {
            req.name
        } else {
            req.namespace
        };
        ns_labels["kubernetes.io/metadata.name"] = json!(ns_name);
        if !selector::matches(sel, &ns_labels) {
            return false;
        }
    }
    if let Some(sel) = webhook.spec.get("objectSelector").filter(|s| **s != empty) {
        let new_ok = req.object.is_some() && selector::matches(sel, &labels(req.object));
        let old_ok = req.old_object.is_some() && selector::matches(sel, &labels(req.old_object));
        if !new_ok && !old_ok {
            return false;
        }
    }
    true
}

/// Refused outright on a dry run when the webhook may have side effects
/// (400, `admission webhook "x" does not support dry run`).
pub fn dry_run_refusal(webhook: &Webhook, req: &Request) -> Option<String> {
    let effects = webhook
        .spec
        .get("sideEffects")
        .and_then(Value::as_str)
        .unwrap_or("Unknown");
    (req.dry_run && !matches!(effects, "None" | "NoneOnDryRun")).then(|| {
        format!(
            "admission webhook \"{}\" does not support dry run",
            webhook.name
        )
    })
}

/// The AdmissionReview v1 body to POST; `uid` identifies the request.
pub fn review(req: &Request, uid: &str) -> Value {
    let mut user = json!({ "username": req.user.username, "groups": req.user.groups });
    if !req.user.uid.is_empty() {
        user["uid"] = json!(req.user.uid);
    }
    if !req.user.extra.is_empty() {
        user["extra"] = json!(req.user.extra);
    }
    let kind = json!({ "group": req.group, "version": req.version, "kind": req.kind });
    let resource = json!({ "group": req.group, "version": req.version, "resource": req.resource });
    let mut r = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": req.operation,
        "userInfo": user,
        "object": req.object.cloned().unwrap_or(Value::Null),
        "oldObject": req.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": req.dry_run,
        "options": req.options.cloned().unwrap_or(Value::Null),
    });
    if !req.subresource.is_empty() {
        r["subResource"] = json!(req.subresource);
        r["requestSubResource"] = json!(req.subresource);
    }
    if !req.name.is_empty() {
        r["name"] = json!(req.name);
    }
    if !req.namespace.is_empty() {
        r["namespace"] = json!(req.namespace);
    }
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": r })
}

/// A webhook's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Allowed; the object after the webhook's patch (mutating webhooks),
    /// and the warnings to pass on in `Warning` headers.
    Allowed {
        /// The (possibly patched) object.
        object: Option<Value>,
        /// Warnings from the webhook.
        warnings: Vec<String>,
    },
    /// Denied: the `metav1.Status` to answer with, as upstream words it.
    Denied(Value),
}

fn status(code: u16, reason: &str, message: String) -> Value {
    json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":message,"reason":reason,"code":code})
}

/// The Status for a call that failed (connection refused, timeout, bad
/// response), or `None` when `failurePolicy: Ignore` lets the request pass.
pub fn call_failed(webhook: &Webhook, cause: &str) -> Option<Value> {
    if webhook.ignores_failures() {
        tracing::info!(webhook = %webhook.name, %cause, "webhook failed; ignored by failurePolicy");
        return None;
    }
    Some(status(
        500,
        "InternalError",
        format!(
            "Internal error occurred: failed calling webhook \"{}\": {cause}",
            webhook.name
        ),
    ))
}

/// Reads the webhook's AdmissionReview response for the request `uid`;
/// `object` is what was sent (patched by a mutating webhook's JSON patch).
/// `Err(cause)` is a malformed response (pass it to [`call_failed`]).
pub fn interpret(
    webhook: &Webhook,
    response: &Value,
    uid: &str,
    object: Option<&Value>,
    mutating: bool,
) -> Result<Outcome, String> {
    let r = response
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
    }
    let warnings: Vec<String> = r
        .get("warnings")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if !r.get("allowed").and_then(Value::as_bool).unwrap_or(false) {
        let st = r.get("status").cloned().unwrap_or(json!({}));
        let denied_by = format!("admission webhook \"{}\" denied the request", webhook.name);
        let message = st.get("message").and_then(Value::as_str).unwrap_or("");
        let reason = st.get("reason").and_then(Value::as_str).unwrap_or("");
        let text = if !message.is_empty() {
            format!("{denied_by}: {message}")
        } else if !reason.is_empty() {
            format!("{denied_by}: {reason}")
        } else {
            format!("{denied_by} without explanation")
        };
        let code = st
            .get("code")
            .and_then(Value::as_u64)
            .filter(|c| *c >= 400)
            .unwrap_or(400);
        let mut out = status(code as u16, reason, text);
        if reason.is_empty() {
            out.as_object_mut().map(|m| m.remove("reason"));
        }
        if let Some(d) = st.get("details") {
            out["details"] = d.clone();
        }
        return Ok(Outcome::Denied(out));
    }
    let mut obj = object.cloned();
    if let Some(p) = r.get("patch").and_then(Value::as_str) {
        if !mutating {
            return Err("validating webhooks may not return a patch".into());
        }
        let kind = r.get("patchType").and_then(Value::as_str).unwrap_or("");
        if kind != "JSONPatch" {
            return Err(format!("unsupported patch type {kind:?}"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(p)
            .map_err(|e| format!("patch is not base64: {e}"))?;
        let patch: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("patch is not JSON: {e}"))?;
        let current = obj.ok_or("nothing to patch")?;
        obj = Some(jsonpatch::apply(&current, &patch)?);
    }
    Ok(Outcome::Allowed {
        object: obj,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Value {
        json!({"kind":"MutatingWebhookConfiguration","metadata":{"name":"add-label"},"webhooks":[{
            "name":"label.example.com","admissionReviewVersions":["v1"],"sideEffects":"None",
            "clientConfig":{"service":{"namespace":"hooks","name":"labeler","path":"/mutate"}},
            "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"scope":"Namespaced"}],
            "namespaceSelector":{"matchLabels":{"hooks":"on"}},
            "objectSelector":{"matchExpressions":[{"key":"skip","operator":"DoesNotExist"}]}}]})
    }

    fn pod(labels: Value) -> Value {
        json!({"kind":"Pod","metadata":{"name":"p","namespace":"dev","labels":labels}})
    }

    fn user() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    fn request<'a>(obj: &'a Value, user: &'a UserInfo, op: &'a str, sub: &'a str) -> Request<'a> {
        Request {
            operation: op,
            group: "",
            version: "v1",
            kind: "Pod",
            resource: "pods",
            subresource: sub,
            name: "p",
            namespace: "dev",
            object: Some(obj),
            old_object: None,
            user,
            dry_run: false,
            options: None,
        }
    }

    #[test]
    fn matching_and_urls() {
        let hooks = Webhook::all(&[config()]);
        let h = &hooks[0];
        let u = user();
        let ns_on = json!({"metadata":{"name":"dev","labels":{"hooks":"on"}}});
        let ns_off = json!({"metadata":{"name":"dev"}});
        let p = pod(json!({"app":"x"}));
        assert!(matches(h, &request(&p, &u, "CREATE", ""), Some(&ns_on)));
        assert!(!matches(h, &request(&p, &u, "CREATE", ""), Some(&ns_off)));
        assert!(!matches(h, &request(&p, &u, "UPDATE", ""), Some(&ns_on)));
        assert!(!matches(
            h,
            &request(&p, &u, "CREATE", "status"),
            Some(&ns_on)
        ));
        let skip = pod(json!({"skip":"1"}));
        assert!(!matches(h, &request(&skip, &u, "CREATE", ""), Some(&ns_on)));

        let svc =
            json!({"metadata":{"annotations":{ENDPOINT_ANNOTATION:"https://127.0.0.1:9443/"}}});
        assert_eq!(
            h.url(|_, _| Some(svc.clone())).unwrap(),
            "https://127.0.0.1:9443/mutate?timeout=10s"
        );
        assert!(
            h.url(|_, _| Some(json!({})))
                .unwrap_err()
                .contains("kemu.dev/endpoint-url")
        );
        let mut dry = request(&p, &u, "CREATE", "");
        assert!(dry_run_refusal(h, &dry).is_none());
        dry.dry_run = true;
        assert!(
            dry_run_refusal(h, &dry).is_none(),
            "sideEffects None supports dry run"
        );
    }

    #[test]
    fn reviews_and_responses() {
        let hooks = Webhook::all(&[config()]);
        let h = &hooks[0];
        let u = user();
        let p = pod(json!({}));
        let body = review(&request(&p, &u, "CREATE", ""), "uid-1");
        assert_eq!(body["request"]["uid"], "uid-1");
        assert_eq!(
            body["request"]["resource"],
            json!({"group":"","version":"v1","resource":"pods"})
        );
        assert_eq!(body["request"]["userInfo"]["username"], "alice");
        assert_eq!(body["request"]["namespace"], "dev");

        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]"#);
        let resp = json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "response":{"uid":"uid-1","allowed":true,"patchType":"JSONPatch","patch":patch,"warnings":["careful"]}});
        let Outcome::Allowed { object, warnings } =
            interpret(h, &resp, "uid-1", Some(&p), true).unwrap()
        else {
            panic!("expected allowed");
        };
        assert_eq!(object.unwrap()["metadata"]["labels"]["mutated"], "yes");
        assert_eq!(warnings, vec!["careful"]);

        let deny = json!({"response":{"uid":"uid-1","allowed":false,"status":{"code":403,"message":"pods must have an owner label"}}});
        let Outcome::Denied(s) = interpret(h, &deny, "uid-1", Some(&p), false).unwrap() else {
            panic!("expected denied");
        };
        assert_eq!(
            s["message"],
            "admission webhook \"label.example.com\" denied the request: pods must have an owner label"
        );
        assert_eq!(s["code"], 403);
        let bare = json!({"response":{"uid":"uid-1","allowed":false}});
        let Outcome::Denied(s) = interpret(h, &bare, "uid-1", None, false).unwrap() else {
            panic!("expected denied");
        };
        assert_eq!(
            s["message"],
            "admission webhook \"label.example.com\" denied the request without explanation"
        );
        assert_eq!(s["code"], 400);
        assert_eq!(
            interpret(
                h,
                &json!({"response":{"uid":"other","allowed":true}}),
                "uid-1",
                None,
                false
            ),
            Err("expected response.uid=\"uid-1\", got \"other\"".into())
        );
        let failed = call_failed(h, "failed to call webhook: connection refused").unwrap();
        assert_eq!(failed["code"], 500);
        assert_eq!(
            failed["message"],
            "Internal error occurred: failed calling webhook \"label.example.com\": failed to call webhook: connection refused"
        );
        let mut ignore = h.clone();
        ignore.spec["failurePolicy"] = json!("Ignore");
        assert!(call_failed(&ignore, "x").is_none());
    }
}
