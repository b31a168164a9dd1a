//! Admission webhook configurations: their defaults, and each webhook's
//! `matchConditions` checked as upstream's `validateMatchCondition` does
//! (an expression that does not compile is a 422, not a webhook that
//! fails at every call).

use serde_json::Value;

use super::{Context, Defaults, Strategy, defaults};
use crate::api::validation::invalid_object;
use crate::authz::admission::compile_cel;
use crate::error::{ApiError, Cause};
use crate::resources::ResourceType;

/// Validating and mutating webhook configurations.
#[derive(Debug)]
pub struct WebhookConfigurationStrategy;

impl Strategy for WebhookConfigurationStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        Defaults(defaults::default_object).defaults(rt, object);
    }

    fn prepare_create(
        &self,
        _ctx: &Context<'_>,
        rt: &ResourceType,
        _name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        check(rt, object)
    }

    fn prepare_update(
        &self,
        _ctx: &Context<'_>,
        rt: &ResourceType,
        _old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        check(rt, new)
    }
}

fn check(rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let causes = match_condition_causes(object);
    if causes.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    Err(invalid_object(rt, name, causes))
}

/// What is wrong with the webhooks' match conditions, in upstream's order
/// (expression, then name, per condition).
fn match_condition_causes(object: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let hooks = object["webhooks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, hook) in hooks.iter().enumerate() {
        let conditions = hook["matchConditions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, c) in conditions.iter().enumerate() {
            let at = format!("webhooks[{i}].matchConditions[{j}]");
            let expression = c["expression"].as_str().unwrap_or_default().trim();
            if expression.is_empty() {
                causes.push(required(format!("{at}.expression")));
            } else if let Err(e) = compile_cel(expression) {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {}: compilation failed: {e}",
                        Value::from(expression)
                    ),
                    field: format!("{at}.expression"),
                });
            }
            if c["name"].as_str().unwrap_or_default().is_empty() {
                causes.push(required(format!("{at}.name")));
            }
        }
    }
    causes
}

fn required(field: String) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_that_do_not_compile_are_refused() {
        let config = json!({"webhooks": [{"name": "a.example.com", "matchConditions": [
            {"name": "ok", "expression": "object != null"},
            {"name": "bad", "expression": "object.x [] bad expression"},
            {"name": "", "expression": " "},
            // The parser panics on this one; it is refused all the same.
            {"name": "upstream-e2e", "expression": "... [] bad expression"},
        ]}]});
        let causes = match_condition_causes(&config);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "webhooks[0].matchConditions[1].expression",
                "webhooks[0].matchConditions[2].expression",
                "webhooks[0].matchConditions[2].name",
                "webhooks[0].matchConditions[3].expression",
            ]
        );
        assert!(
            causes[0]
                .message
                .starts_with("Invalid value: \"object.x [] bad expression\": compilation failed: ")
        );
    }
}
