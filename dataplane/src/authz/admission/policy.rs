//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): CEL
//! `validations` of a policy, applied through its bindings, as upstream's
//! `ValidatingAdmissionPolicy` plugin evaluates them (it runs after the
//! mutating webhooks, before the validating ones).
//!
//! A binding applies its policy to a request its `matchResources` and the
//! policy's `matchConstraints` both match (resource rules, exclusions,
//! `resourceNames`, namespace and object selectors) and whose
//! `matchConditions` hold. Each validation is a CEL expression over
//! `object`, `oldObject`, `request`, `params` (the binding's `paramRef`,
//! by name or selector, of the policy's `paramKind`), `namespaceObject` and
//! `variables`. A false one is a failure worded by `messageExpression`,
//! else `message`, else `failed expression: …`; an error follows the
//! policy's `failurePolicy`. The binding's `validationActions` decide:
//! `Deny` refuses with upstream's Status (reason `Invalid` unless the
//! validation names one), `Warn` adds a warning, `Audit` has nowhere to go
//! and is dropped. The `authorizer` variable is not offered.

use std::collections::HashMap;

use cel_interpreter::{Context, Value as Cel};
use serde_json::{Value, json};

use super::object_name;
use super::webhook::{self, Webhook};
use crate::authz::forbidden::Forbidden;

/// How the policies decided one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The first denial, as the Status to answer with.
    pub denied: Option<Value>,
    /// `Warning` texts (bindings with the `Warn` action).
    pub warnings: Vec<String>,
}

/// What the evaluation reads beyond the request: the params objects.
pub trait Params {
    /// Every object of the `paramKind` (`{apiVersion, kind}`) in
    /// `namespace` ("" for a cluster-scoped kind), or `None` when that kind
    /// is not served; the bool says whether the kind is namespaced.
    fn list(&self, param_kind: &Value, namespace: &str) -> Option<(bool, Vec<Value>)>;
}

/// One failed validation (or an error the failure policy turned into one).
struct Failure {
    message: String,
    reason: String,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether `constraints` (a policy's `matchConstraints` or a binding's
/// `matchResources`) match the request; `all_if_no_rules` is the binding's
/// reading of an empty `resourceRules` (every resource its policy matches).
fn constraints_match(
    constraints: &Value,
    req: &webhook::Request,
    ns_object: Option<&Value>,
    all_if_no_rules: bool,
) -> bool {
    let rules = constraints
        .get("resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut spec = json!({
        "namespaceSelector": constraints.get("namespaceSelector").cloned().unwrap_or(json!({})),
        "objectSelector": constraints.get("objectSelector").cloned().unwrap_or(json!({})),
    });
    spec["rules"] = if rules.is_empty() && all_if_no_rules {
        json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "operations": ["*"]}])
    } else {
        json!(rules)
    };
    let named = |rule: &Value| {
        rule.get("resourceNames")
            .and_then(Value::as_array)
            .is_none_or(|names| names.is_empty() || names.iter().any(|n| n == req.name))
    };
    // resourceNames narrows a rule: keep only the rules naming this object.
    spec["rules"] = json!(
        spec["rules"]
            .as_array()
            .map(|rs| rs.iter().filter(|r| named(r)).cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    );
    let hook = |spec: Value| Webhook {
        name: String::new(),
        configuration: String::new(),
        spec,
    };
    if !webhook::matches(&hook(spec), req, ns_object) {
        return false;
    }
    let excluded = constraints
        .get("excludeResourceRules")
        .and_then(Value::as_array)
        .map(|rs| rs.iter().filter(|r| named(r)).cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    excluded.is_empty() || !webhook::matches(&hook(json!({ "rules": excluded })), req, ns_object)
}

/// The CEL context of one evaluation.
fn context(
    request: &Value,
    params: &Value,
    ns_object: Option<&Value>,
) -> Result<Context<'static>, String> {
    let mut ctx = Context::default();
    let ns = ns_object.cloned().unwrap_or(Value::Null);
    for (name, value) in [
        ("object", &request["object"]),
        ("oldObject", &request["oldObject"]),
        ("request", request),
        ("params", params),
        ("namespaceObject", &ns),
    ] {
        ctx.add_variable_from_value(name, super::to_cel(value));
    }
    ctx.add_variable_from_value("variables", HashMap::<String, Cel>::new());
    Ok(ctx)
}

fn eval(ctx: &Context<'_>, expression: &str) -> Result<Cel, String> {
    let program = super::compile_cel(expression).map_err(|e| format!("compilation failed: {e}"))?;
    super::execute_cel(&program, ctx)
        .map_err(|e| format!("expression '{expression}' resulted in error: {e}"))
}

/// Evaluates the policy's `variables` into `ctx`, in order (each may use
/// the ones before it).
fn add_variables(ctx: &mut Context<'_>, policy: &Value) -> Result<(), String> {
    let mut values: HashMap<String, Cel> = HashMap::new();
    for v in policy
        .pointer("/spec/variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let value = eval(ctx, str_of(v, "expression"))?;
        values.insert(str_of(v, "name").to_owned(), value);
        ctx.add_variable_from_value("variables", values.clone());
    }
    Ok(())
}

/// The policy's `matchConditions`: all must hold.
fn conditions_hold(ctx: &Context<'_>, policy: &Value) -> Result<bool, String> {
    for c in policy
        .pointer("/spec/matchConditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match eval(ctx, str_of(c, "expression")) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(other) => {
                return Err(format!(
                    "failed to evaluate match condition {:?}: expression must evaluate to bool, got {:?}",
                    str_of(c, "name"),
                    other.type_of()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "failed to evaluate match condition {:?}: {e}",
                    str_of(c, "name")
                ));
            }
        }
    }
    Ok(true)
}

/// The failures of the policy's validations under `ctx`; `Err` is an
/// evaluation error (the failure policy decides).
fn validate(ctx: &Context<'_>, policy: &Value) -> Result<Vec<Failure>, String> {
    let mut failures = Vec::new();
    for v in policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let expression = str_of(v, "expression");
        match eval(ctx, expression)? {
            Cel::Bool(true) => continue,
            Cel::Bool(false) => {}
            other => {
                return Err(format!(
                    "expression '{expression}' resulted in error: expected boolean, got {:?}",
                    other.type_of()
                ));
            }
        }
        // messageExpression first; an empty, multi-line or failed one
        // falls back to message, then to the expression itself.
        let from_expression = v
            .get("messageExpression")
            .and_then(Value::as_str)
            .and_then(|m| match eval(ctx, m) {
                Ok(Cel::String(s)) => Some(s.trim().to_owned()),
                _ => None,
            })
            .filter(|s| !s.is_empty() && !s.contains('\n'));
        let message = from_expression
            .or_else(|| {
                v.get("message")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
        failures.push(Failure {
            message,
            reason: str_of(v, "reason").to_owned(),
        });
    }
    Ok(failures)
}

/// The params objects a binding's `paramRef` selects; `Ok(None)` when the
/// policy takes none. `Err` is the failure when none is found and the
/// binding says `Deny` (or the kind is not served).
fn params_of(
    policy: &Value,
    binding: &Value,
    req: &webhook::Request,
    params: &dyn Params,
) -> Result<Option<Vec<Value>>, String> {
    let Some(kind) = policy.pointer("/spec/paramKind") else {
        return Ok(None);
    };
    let Some(reference) = binding.pointer("/spec/paramRef") else {
        return Err(format!(
            "paramKind kind `{}` is defined but paramRef is not set",
            str_of(kind, "kind")
        ));
    };
    let explicit_ns = str_of(reference, "namespace");
    let ns = if explicit_ns.is_empty() {
        req.namespace
    } else {
        explicit_ns
    };
    let Some((namespaced, mut objects)) = params.list(kind, ns) else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{}, Kind={}'",
            str_of(kind, "apiVersion"),
            str_of(kind, "kind")
        ));
    };
    if namespaced && ns.is_empty() {
        objects.clear();
    }
    let name = str_of(reference, "name");
    if !name.is_empty() {
        objects.retain(|o| object_name(o) == name);
    } else {
        let selector = reference.get("selector").cloned().unwrap_or(json!({}));
        objects.retain(|o| {
            crate::label_selector::matches(
                &selector,
                o.pointer("/metadata/labels").unwrap_or(&json!({})),
            )
        });
    }
    if objects.is_empty() {
        return match str_of(reference, "parameterNotFoundAction") {
            "Deny" => {
                Err("no params found for policy binding with `Deny` parameterNotFoundAction".into())
            }
            _ => Ok(Some(Vec::new())),
        };
    }
    Ok(Some(objects))
}

fn reason_code(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// Upstream's denial: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
/// 'P' with binding 'B' denied request: M`, reason `Invalid` (422) unless
/// the validation names another, the text again as the one cause.
fn denial(req: &webhook::Request, policy: &str, binding: &str, failure: &Failure) -> Value {
    let text = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
        failure.message
    );
    let name = req
        .object
        .or(req.old_object)
        .map(object_name)
        .filter(|n| *n != "Unknown")
        .unwrap_or(req.name);
    let mut status = Forbidden::of_object(req.group, req.resource, name, &text).status();
    let reason = if failure.reason.is_empty() {
        "Invalid"
    } else {
        failure.reason.as_str()
    };
    status["reason"] = json!(reason);
    status["code"] = json!(reason_code(reason));
    status["details"]["causes"] = json!([{ "message": text }]);
    status
}

/// Evaluates every binding of `bindings` whose policy (of `policies`)
/// applies to the request. `request` is the AdmissionReview's `request`
/// (the CEL `request` variable).
pub fn evaluate(
    policies: &[Value],
    bindings: &[Value],
    req: &webhook::Request,
    request: &Value,
    ns_object: Option<&Value>,
    params: &dyn Params,
) -> Outcome {
    let mut outcome = Outcome::default();
    for binding in bindings {
        let binding_name = object_name(binding);
        let policy_name = binding
            .pointer("/spec/policyName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(policy) = policies.iter().find(|p| object_name(p) == policy_name) else {
            continue;
        };
        let empty = json!({});
        let constraints = policy.pointer("/spec/matchConstraints").unwrap_or(&empty);
        if !constraints_match(constraints, req, ns_object, false) {
            continue;
        }
        if let Some(resources) = binding.pointer("/spec/matchResources")
            && !constraints_match(resources, req, ns_object, true)
        {
            continue;
        }
        let ignore = policy.pointer("/spec/failurePolicy") == Some(&json!("Ignore"));
        let failures = match params_of(policy, binding, req, params).and_then(|sets| {
            let sets = match sets {
                Some(sets) => sets,
                None => vec![Value::Null],
            };
            let mut failures = Vec::new();
            for p in &sets {
                let mut ctx = context(request, p, ns_object)?;
                add_variables(&mut ctx, policy)?;
                if !conditions_hold(&ctx, policy)? {
                    continue;
                }
                failures.extend(validate(&ctx, policy)?);
            }
            Ok(failures)
        }) {
            Ok(f) => f,
            Err(_) if ignore => continue,
            Err(message) => vec![Failure {
                message,
                reason: String::new(),
            }],
        };
        let actions: Vec<&str> = binding
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for failure in &failures {
            if actions.contains(&"Warn") {
                outcome.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
                    failure.message
                ));
            }
            if actions.contains(&"Deny") && outcome.denied.is_none() {
                outcome.denied = Some(denial(req, policy_name, binding_name, failure));
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::UserInfo;

    struct NoParams(Vec<Value>);

    impl Params for NoParams {
        fn list(&self, _: &Value, _: &str) -> Option<(bool, Vec<Value>)> {
            Some((true, self.0.clone()))
        }
    }

    fn policy(extra: Value) -> Value {
        let mut p = json!({
            "metadata": {"name": "max-replicas"},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
                }]},
                "validations": [{"expression": "object.spec.replicas <= 5"}]
            }
        });
        if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        p
    }

    fn binding(actions: Value, extra: Value) -> Value {
        let mut b = json!({
            "metadata": {"name": "b"},
            "spec": {"policyName": "max-replicas", "validationActions": actions}
        });
        if let (Some(spec), Some(extra)) = (b["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        b
    }

    fn run(policy: Value, binding: Value, replicas: i64, params: Vec<Value>) -> Outcome {
        let user = UserInfo::default();
        let object = json!({"metadata": {"name": "web", "namespace": "team", "labels": {"app": "web"}}, "spec": {"replicas": replicas}});
        let req = webhook::Request {
            operation: "CREATE",
            group: "apps",
            version: "v1",
            kind: "Deployment",
            resource: "deployments",
            subresource: "",
            name: "web",
            namespace: "team",
            object: Some(&object),
            old_object: None,
            user: &user,
            dry_run: false,
            options: None,
        };
        let request = webhook::review(&req, "uid")["request"].clone();
        let ns = json!({"metadata": {"name": "team", "labels": {"env": "test"}}});
        evaluate(
            &[policy],
            &[binding],
            &req,
            &request,
            Some(&ns),
            &NoParams(params),
        )
    }

    #[test]
    fn a_false_validation_denies_as_upstream_words_it() {
        let out = run(
            policy(json!({})),
            binding(json!(["Deny"]), json!({})),
            6,
            vec![],
        );
        let status = out.denied.unwrap();
        let text = "ValidatingAdmissionPolicy 'max-replicas' with binding 'b' denied request: failed expression: object.spec.replicas <= 5";
        assert_eq!(
            status["message"],
            format!("deployments.apps \"web\" is forbidden: {text}")
        );
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["code"], 422);
        assert_eq!(status["details"]["causes"], json!([{"message": text}]));
        assert_eq!(
            run(
                policy(json!({})),
                binding(json!(["Deny"]), json!({})),
                5,
                vec![]
            ),
            Outcome::default()
        );
    }

    #[test]
    fn warn_messages_reasons_and_selectors() {
        let out = run(
            policy(json!({})),
            binding(json!(["Warn"]), json!({})),
            6,
            vec![],
        );
        assert_eq!(out.denied, None);
        assert_eq!(
            out.warnings,
            [
                "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'b': failed expression: object.spec.replicas <= 5"
            ]
        );
        let p = policy(json!({
            "variables": [{"name": "max", "expression": "5"}],
            "validations": [{
                "expression": "object.spec.replicas <= variables.max",
                "messageExpression": "'too many: ' + string(object.spec.replicas)",
                "reason": "Forbidden"
            }]
        }));
        let status = run(p, binding(json!(["Deny"]), json!({})), 7, vec![])
            .denied
            .unwrap();
        assert_eq!(status["code"], 403);
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .ends_with("denied request: too many: 7")
        );
        // A binding for another namespace label does not apply.
        let other = binding(
            json!(["Deny"]),
            json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
        );
        assert_eq!(run(policy(json!({})), other, 6, vec![]), Outcome::default());
        // matchConditions that do not hold skip the policy.
        let p = policy(json!({"matchConditions": [{"name": "never", "expression": "false"}]}));
        assert_eq!(
            run(p, binding(json!(["Deny"]), json!({})), 6, vec![]),
            Outcome::default()
        );
    }

    #[test]
    fn params_are_found_by_name_or_refused() {
        let p = policy(json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}]
        }));
        let by_name = binding(
            json!(["Deny"]),
            json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
        );
        let cm = json!({"metadata": {"name": "limits"}, "data": {"max": "3"}});
        assert!(
            run(p.clone(), by_name.clone(), 4, vec![cm.clone()])
                .denied
                .is_some()
        );
        assert_eq!(
            run(p.clone(), by_name.clone(), 3, vec![cm]),
            Outcome::default()
        );
        let status = run(p, by_name, 1, vec![]).denied.unwrap();
        assert!(
            status["message"].as_str().unwrap().ends_with(
                "no params found for policy binding with `Deny` parameterNotFoundAction"
            ),
            "{status}"
        );
    }
}
