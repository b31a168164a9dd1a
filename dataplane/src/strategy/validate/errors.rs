//! The error list a kind's validation builds, worded as upstream's
//! `field.Error` writes each kind of error (`Required value`, `Invalid value:
//! "x": …`, `Unsupported value: "x": supported values: "a", "b"`).

use serde_json::Value;

use crate::error::Cause;

/// The causes found so far, in upstream's order.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<Cause>);

/// A bad value as `field.Error` prints it: strings quoted, numbers and
/// booleans bare, anything else as its JSON.
pub fn show(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

impl Errors {
    fn push(&mut self, reason: &str, field: &str, message: String) {
        self.0.push(Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        });
    }

    /// `Required value`, with `detail` when there is one.
    pub fn required(&mut self, field: &str, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_owned()
        } else {
            format!("Required value: {detail}")
        };
        self.push("FieldValueRequired", field, message);
    }

    /// `Invalid value: <value>: detail`.
    pub fn invalid(&mut self, field: &str, value: &Value, detail: &str) {
        self.push(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {detail}", show(value)),
        );
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn unsupported(&mut self, field: &str, value: &Value, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        self.push(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                show(value),
                list.join(", ")
            ),
        );
    }

    /// `Forbidden: detail`.
    pub fn forbidden(&mut self, field: &str, detail: &str) {
        self.push("FieldValueForbidden", field, format!("Forbidden: {detail}"));
    }

    /// `Duplicate value: <value>`.
    pub fn duplicate(&mut self, field: &str, value: &Value) {
        self.push(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", show(value)),
        );
    }

    /// `Too long: may not be more than N bytes`.
    pub fn too_long(&mut self, field: &str, max: usize) {
        self.push(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {max} bytes"),
        );
    }

    /// `Too many: N: must have at most M items`.
    pub fn too_many(&mut self, field: &str, actual: usize, max: usize) {
        self.push(
            "FieldValueTooMany",
            field,
            format!("Too many: {actual}: must have at most {max} items"),
        );
    }

    /// `Invalid value: detail`, for a rule about the field as a whole
    /// (upstream's `field.OmitValueType`).
    pub fn invalid_whole(&mut self, field: &str, detail: &str) {
        self.push(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {detail}"),
        );
    }

    /// Each of `problems` as an Invalid `value` of `field`.
    pub fn invalid_each(&mut self, field: &str, value: &Value, problems: Vec<String>) {
        for p in problems {
            self.invalid(field, value, &p);
        }
    }

    /// An integer field below `min`: `must be greater than or equal to N`.
    pub fn at_least(&mut self, field: &str, v: &Value, min: i64) {
        if v.as_i64().is_some_and(|n| n < min) {
            self.invalid(field, v, &format!("must be greater than or equal to {min}"));
        }
    }

    /// A required string field: `Required value` when absent or empty.
    pub fn require_str(&mut self, field: &str, v: &Value, detail: &str) -> bool {
        if v.as_str().is_none_or(str::is_empty) {
            self.required(field, detail);
            return false;
        }
        true
    }

    /// A field of `old` that may not change: `Invalid value: <new>: field is
    /// immutable` when it did.
    pub fn immutable(&mut self, field: &str, new: &Value, old: &Value) {
        if new != old {
            self.invalid(field, new, "field is immutable");
        }
    }

    /// An enum field: `Unsupported value` when set to another value.
    pub fn one_of(&mut self, field: &str, v: &Value, supported: &[&str]) {
        if let Some(s) = v.as_str()
            && !supported.contains(&s)
        {
            self.unsupported(field, v, supported);
        }
    }
}

/// A kind's rules run on `o` (replacing `old`): each cause as
/// `field: message`, for the tests of the rules.
#[cfg(test)]
pub fn messages(
    check: fn(&mut Errors, &Value, Option<&Value>),
    o: Value,
    old: Option<Value>,
) -> Vec<String> {
    let mut e = Errors::default();
    check(&mut e, &o, old.as_ref());
    e.0.into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_are_worded_as_upstreams() {
        let mut e = Errors::default();
        e.required("spec.containers", "");
        e.invalid(
            "spec.replicas",
            &json!(-1),
            "must be greater than or equal to 0",
        );
        e.unsupported("spec.type", &json!("X"), &["A", "B"]);
        e.invalid("l", &json!({"app": "two"}), "d");
        let m: Vec<&str> = e.0.iter().map(|c| c.message.as_str()).collect();
        assert_eq!(
            m,
            [
                "Required value",
                "Invalid value: -1: must be greater than or equal to 0",
                "Unsupported value: \"X\": supported values: \"A\", \"B\"",
                "Invalid value: {\"app\":\"two\"}: d"
            ]
        );
    }
}
