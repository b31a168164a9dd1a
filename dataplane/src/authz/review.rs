//! The access reviews, answered from the same authorizer as requests:
//! SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview
//! (`kubectl auth can-i`) and SelfSubjectRulesReview (`kubectl auth can-i
//! --list`). Each is a pure function from the request body (+ caller) to the
//! response body (HTTP 201) or the error upstream answers.

use kemu_shared::UserInfo;
use serde_json::{Value, json};

use super::attributes::Attributes;
use super::authorizer::Authorizer;
use crate::error::{ApiError, Cause, Target};
use crate::strategy::validate::errors::Errors;
use crate::strategy::validate::meta;

const GROUP: &str = "authorization.k8s.io";

fn s(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Upstream names no kind in these errors (the internal object's empty
/// `Kind`): `.authorization.k8s.io "" is invalid`.
fn invalid(causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: String::new(),
            group: GROUP.into(),
            kind: String::new(),
        },
        kind: format!(".{GROUP}"),
        causes,
    }
}

/// A `NonResourceAttributes` as upstream prints the internal struct: Go's
/// field names, no tags.
fn show_non_resource(v: &Value) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    json!({"Path": v["path"].as_str().unwrap_or_default(), "Verb": v["verb"].as_str().unwrap_or_default()})
}

/// Upstream's `ValidateSubjectAccessReviewSpec` (and its self-review form,
/// without the user check).
fn spec_causes(e: &mut Errors, spec: &Value, user_needed: bool) {
    let res = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let non_shown = show_non_resource(non.unwrap_or(&Value::Null));
    match (res, non) {
        (Some(_), Some(_)) => e.invalid(
            "spec.nonResourceAttributes",
            &non_shown,
            "cannot be specified in combination with resourceAttributes",
        ),
        (None, None) => e.invalid(
            "spec.resourceAttributes",
            &Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ),
        _ => {}
    }
    if user_needed {
        let user = spec["user"].as_str().unwrap_or_default();
        let no_groups = spec["groups"].as_array().is_none_or(Vec::is_empty);
        if user.is_empty() && no_groups {
            e.invalid(
                "spec.user",
                &json!(user),
                "at least one of user or group must be specified",
            );
        }
    }
    if let Some(res) = res {
        selector_causes(
            e,
            &res["fieldSelector"],
            "spec.resourceAttributes.fieldSelector",
            false,
        );
        selector_causes(
            e,
            &res["labelSelector"],
            "spec.resourceAttributes.labelSelector",
            true,
        );
    }
}

/// A field or label selector's attributes: a raw selector or requirements,
/// each requirement well formed (any operator allowed).
fn selector_causes(e: &mut Errors, selector: &Value, path: &str, labels: bool) {
    if !selector.is_object() {
        return;
    }
    let raw = selector["rawSelector"].as_str().unwrap_or_default();
    let requirements = selector["requirements"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !raw.is_empty() && !requirements.is_empty() {
        e.invalid(
            &format!("{path}.rawSelector"),
            &json!(raw),
            "may not specified at the same time as requirements",
        );
    }
    if raw.is_empty() && requirements.is_empty() {
        e.required(
            &format!("{path}.requirements"),
            &format!("when {path} is specified, requirements or rawSelector is required"),
        );
    }
    for (i, r) in requirements.iter().enumerate() {
        let at = format!("{path}.requirements[{i}]");
        let key = r["key"].as_str().unwrap_or_default();
        if !labels && key.is_empty() {
            e.required(&format!("{at}.key"), "must be specified");
        }
        let values = r["values"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        match r["operator"].as_str().unwrap_or_default() {
            "In" | "NotIn" if values.is_empty() => e.required(
                &format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => e.forbidden(
                &format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            _ => {}
        }
        if labels {
            e.invalid_each(&format!("{at}.key"), &json!(key), meta::qualified_name(key));
            for (j, v) in values.iter().enumerate() {
                let text = v.as_str().unwrap_or_default();
                e.invalid_each(&format!("{at}.values[{j}]"), v, meta::label_value(text));
            }
        }
    }
}

/// The attributes a review's spec asks about, for `user`.
fn attributes(spec: &Value, user: UserInfo) -> Attributes {
    if spec.get("resourceAttributes").is_some_and(|v| !v.is_null()) {
        let r = |k: &str| s(spec, &format!("/resourceAttributes/{k}"));
        Attributes {
            user,
            verb: r("verb"),
            api_group: r("group"),
            api_version: r("version"),
            resource: r("resource"),
            subresource: r("subresource"),
            namespace: r("namespace"),
            name: r("name"),
            resource_request: true,
            path: String::new(),
        }
    } else {
        Attributes::non_resource(
            user,
            &s(spec, "/nonResourceAttributes/verb"),
            &s(spec, "/nonResourceAttributes/path"),
        )
    }
}

fn respond(kind: &str, body: &Value, authz: &Authorizer, a: &Attributes) -> Value {
    let d = authz.authorize(a);
    let mut status = json!({ "allowed": d.allowed });
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    let metadata = body.get("metadata").cloned().unwrap_or(json!({}));
    json!({
        "kind": kind,
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": metadata,
        "spec": body.get("spec").cloned().unwrap_or(json!({})),
        "status": status,
    })
}

fn user_of_spec(spec: &Value) -> UserInfo {
    let list = |k: &str| -> Vec<String> {
        spec.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let extra = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let vals = v
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), vals)
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        username: s(spec, "/user"),
        uid: s(spec, "/uid"),
        groups: list("groups"),
        extra,
    }
}

/// POST `/apis/authorization.k8s.io/v1/subjectaccessreviews`: may the user
/// named in `spec` do what `spec` asks?
pub fn subject_access_review(authz: &Authorizer, body: &Value) -> Result<Value, ApiError> {
    const KIND: &str = "SubjectAccessReview";
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let mut e = Errors::default();
    spec_causes(&mut e, &spec, true);
    if !e.0.is_empty() {
        return Err(invalid(e.0));
    }
    let user = user_of_spec(&spec);
    Ok(respond(KIND, body, authz, &attributes(&spec, user)))
}

/// POST `/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews`.
pub fn local_subject_access_review(
    authz: &Authorizer,
    namespace: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    const KIND: &str = "LocalSubjectAccessReview";
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let mut e = Errors::default();
    spec_causes(&mut e, &spec, true);
    if let Some(asked) = spec
        .get("resourceAttributes")
        .filter(|v| !v.is_null())
        .map(|r| r["namespace"].as_str().unwrap_or_default())
        .filter(|asked| *asked != namespace)
    {
        e.invalid(
            "spec.resourceAttributes.namespace",
            &json!(asked),
            "must match metadata.namespace",
        );
    }
    if let Some(non) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
        e.invalid(
            "spec.nonResourceAttributes",
            &show_non_resource(non),
            "disallowed on this kind of request",
        );
    }
    if !e.0.is_empty() {
        return Err(invalid(e.0));
    }
    let user = user_of_spec(&spec);
    Ok(respond(KIND, body, authz, &attributes(&spec, user)))
}

/// POST `/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`
/// (`kubectl auth can-i VERB RESOURCE`): may the caller do it?
pub fn self_subject_access_review(
    authz: &Authorizer,
    caller: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    const KIND: &str = "SelfSubjectAccessReview";
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let mut e = Errors::default();
    spec_causes(&mut e, &spec, false);
    if !e.0.is_empty() {
        return Err(invalid(e.0));
    }
    Ok(respond(
        KIND,
        body,
        authz,
        &attributes(&spec, caller.clone()),
    ))
}

/// POST `/apis/authorization.k8s.io/v1/selfsubjectrulesreviews`
/// (`kubectl auth can-i --list`): every rule the caller holds in `spec.namespace`.
pub fn self_subject_rules_review(
    authz: &Authorizer,
    caller: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    let namespace = s(body, "/spec/namespace");
    if namespace.is_empty() {
        return Err(ApiError::BadRequest("no namespace on request".into()));
    }
    let rules = authz.rules_for(caller, &namespace);
    let resource_rules: Vec<Value> = rules
        .resource_rules
        .iter()
        .map(|r| {
            let mut v =
                json!({ "verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources });
            if !r.resource_names.is_empty() {
                v["resourceNames"] = json!(r.resource_names);
            }
            v
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .non_resource_rules
        .iter()
        .map(|r| json!({ "verbs": r.verbs, "nonResourceURLs": r.non_resource_urls }))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !rules.evaluation_error.is_empty() {
        status["evaluationError"] = json!(rules.evaluation_error);
    }
    let metadata = body.get("metadata").cloned().unwrap_or(json!({}));
    Ok(json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": metadata,
        "spec": {},
        "status": status,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::authorizer::Mode;
    use crate::authz::bootstrap;
    use crate::authz::source::{Layered, MemorySource};
    use actix_web::ResponseError;

    fn ci() -> UserInfo {
        UserInfo {
            username: "system:serviceaccount:dev:ci".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:dev".into(),
                "system:authenticated".into(),
            ],
            ..Default::default()
        }
    }

    fn extra() -> MemorySource {
        MemorySource::new([
            json!({"kind":"Role","metadata":{"name":"deployer","namespace":"dev"},
                   "rules":[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["get","list","create"]},
                            {"apiGroups":[""],"resources":["configmaps"],"resourceNames":["cfg"],"verbs":["get"]}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"ci","namespace":"dev"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"deployer"},
                   "subjects":[{"kind":"ServiceAccount","name":"ci","namespace":"dev"}]}),
        ])
    }

    #[test]
    fn self_subject_access_review_answers_can_i() {
        let (b, e) = (bootstrap::source(), extra());
        let src = Layered(vec![&b, &e]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        // What `kubectl auth can-i create deployments -n dev` sends.
        let body = json!({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},
            "spec":{"resourceAttributes":{"namespace":"dev","verb":"create","group":"apps","resource":"deployments"}},"status":{"allowed":false}});
        let r = self_subject_access_review(&authz, &ci(), &body).unwrap();
        assert_eq!(r["status"]["allowed"], true);
        assert_eq!(
            r["status"]["reason"],
            "RBAC: allowed by RoleBinding \"ci/dev\" of Role \"deployer\" to ServiceAccount \"ci/dev\""
        );
        assert_eq!(r["spec"], body["spec"]);
        let mut no = body.clone();
        no["spec"]["resourceAttributes"]["verb"] = json!("delete");
        let r = self_subject_access_review(&authz, &ci(), &no).unwrap();
        assert_eq!(r["status"], json!({"allowed": false}));
        let bad = json!({"spec":{}});
        let e = self_subject_access_review(&authz, &ci(), &bad).unwrap_err();
        assert_eq!(e.status_code().as_u16(), 422);
        assert_eq!(
            e.to_string(),
            ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
    }

    #[test]
    fn subject_access_review_asks_about_others() {
        let (b, e) = (bootstrap::source(), extra());
        let src = Layered(vec![&b, &e]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        let u = ci();
        let body = json!({"spec":{"user":u.username,"groups":u.groups,
            "resourceAttributes":{"namespace":"dev","verb":"get","resource":"configmaps","name":"cfg"}}});
        assert_eq!(
            subject_access_review(&authz, &body).unwrap()["status"]["allowed"],
            true
        );
        let body = json!({"spec":{"user":"nobody","nonResourceAttributes":{"path":"/healthz","verb":"get"}}});
        assert_eq!(
            subject_access_review(&authz, &body).unwrap()["status"]["allowed"],
            false
        );
        let body = json!({"spec":{"groups":["system:unauthenticated"],"nonResourceAttributes":{"path":"/healthz","verb":"get"}}});
        assert_eq!(
            subject_access_review(&authz, &body).unwrap()["status"]["allowed"],
            true
        );
        let body = json!({"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}});
        let e = subject_access_review(&authz, &body).unwrap_err();
        assert!(e.to_string().contains(
            "spec.user: Invalid value: \"\": at least one of user or group must be specified"
        ));
        let body = json!({"spec":{"user":"x","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}});
        let e = local_subject_access_review(&authz, "dev", &body).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"
            ),
            "{e}"
        );
        let body = json!({"spec":{"user":"x","resourceAttributes":{"verb":"list","resource":"pods",
            "labelSelector":{"rawSelector":"a in (b","requirements":[{"key":"x","operator":"Exists"}]}}}});
        assert!(
            subject_access_review(&authz, &body).unwrap_err().to_string().ends_with(
                "spec.resourceAttributes.labelSelector.rawSelector: Invalid value: \"a in (b\": may not specified at the same time as requirements"
            )
        );
    }

    #[test]
    fn rules_review_lists_what_can_i_list_shows() {
        let (b, e) = (bootstrap::source(), extra());
        let src = Layered(vec![&b, &e]);
        let authz = Authorizer::new(Mode::Rbac, &src);
        let body = json!({"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"namespace":"dev"}});
        let r = self_subject_rules_review(&authz, &ci(), &body).unwrap();
        let rr = r["status"]["resourceRules"].as_array().unwrap();
        assert!(rr.contains(&json!({"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews","selfsubjectrulesreviews"]})));
        assert!(rr.contains(&json!({"verbs":["get","list","create"],"apiGroups":["apps"],"resources":["deployments"]})));
        assert!(rr.contains(&json!({"verbs":["get"],"apiGroups":[""],"resources":["configmaps"],"resourceNames":["cfg"]})));
        let nr = r["status"]["nonResourceRules"].as_array().unwrap();
        assert!(nr.iter().any(|n| {
            n["nonResourceURLs"]
                .as_array()
                .unwrap()
                .contains(&json!("/version"))
        }));
        assert_eq!(r["status"]["incomplete"], false);
        // In another namespace, the Role does not apply.
        let other = json!({"spec":{"namespace":"prod"}});
        let r = self_subject_rules_review(&authz, &ci(), &other).unwrap();
        assert!(
            !r["status"]["resourceRules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["apiGroups"] == json!(["apps"]))
        );
        assert!(matches!(
            self_subject_rules_review(&authz, &ci(), &json!({"spec":{}})),
            Err(ApiError::BadRequest(_))
        ));
    }
}
