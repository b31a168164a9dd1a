//! A webhook's `matchConditions`: CEL expressions over `object`,
//! `oldObject` and `request` (the AdmissionReview's request), all of which
//! must be true for the webhook to be called, as upstream evaluates them.
//! The `authorizer` variable is not offered.

use cel_interpreter::{Context, Value as Cel};
use serde_json::Value;

use super::webhook::Webhook;

/// Whether every match condition of `webhook` holds for `request` (the
/// AdmissionReview's `request`); `Err` names the condition that failed to
/// compile or evaluate, or did not answer a boolean (the webhook's
/// `failurePolicy` then decides).
pub fn matches(webhook: &Webhook, request: &Value) -> Result<bool, String> {
    let Some(conditions) = webhook
        .spec
        .get("matchConditions")
        .and_then(Value::as_array)
    else {
        return Ok(true);
    };
    if conditions.is_empty() {
        return Ok(true);
    }
    let mut context = Context::default();
    for (name, value) in [
        ("object", &request["object"]),
        ("oldObject", &request["oldObject"]),
        ("request", request),
    ] {
        context.add_variable_from_value(name, super::to_cel(value));
    }
    for condition in conditions {
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        let failed = |why: String| format!("failed to evaluate match condition {name:?}: {why}");
        let program = super::compile_cel(expression).map_err(failed)?;
        match super::execute_cel(&program, &context) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(other) => {
                return Err(failed(format!(
                    "expression must evaluate to bool, got {:?}",
                    other.type_of()
                )));
            }
            Err(e) => return Err(failed(e)),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(conditions: Value) -> Webhook {
        Webhook {
            name: "w".into(),
            configuration: "c".into(),
            spec: json!({ "matchConditions": conditions }),
        }
    }

    fn request(labels: Value, user: &str) -> Value {
        json!({
            "operation": "CREATE",
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": {"metadata": {"name": "p", "labels": labels}},
            "oldObject": null,
        })
    }

    #[test]
    fn every_condition_must_hold() {
        let h = hook(json!([
            {"name": "not-admins", "expression": "request.userInfo.username != 'kemu-admin'"},
            {"name": "labelled", "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels"},
        ]));
        assert_eq!(
            matches(&h, &request(json!({"app": "web"}), "jane")),
            Ok(true)
        );
        assert_eq!(
            matches(&h, &request(json!({"app": "web"}), "kemu-admin")),
            Ok(false)
        );
        assert_eq!(
            matches(&h, &request(json!({"tier": "x"}), "jane")),
            Ok(false)
        );
        assert_eq!(
            matches(&hook(json!([])), &request(json!({}), "x")),
            Ok(true)
        );
        assert!(
            matches(&hook(json!({})), &request(json!({}), "x")).unwrap_or(false),
            "no list: no conditions"
        );
    }

    #[test]
    fn errors_name_the_condition() {
        let e = matches(
            &hook(json!([{"name": "bad", "expression": "object.metadata.name"}])),
            &request(json!({}), "x"),
        )
        .unwrap_err();
        assert!(
            e.starts_with(
                "failed to evaluate match condition \"bad\": expression must evaluate to bool"
            ),
            "{e}"
        );
        let e = matches(
            &hook(json!([{"name": "syntax", "expression": "object.("}])),
            &request(json!({}), "x"),
        )
        .unwrap_err();
        assert!(
            e.starts_with("failed to evaluate match condition \"syntax\": "),
            "{e}"
        );
    }
}
