//! Checks on a written object that do not depend on its kind's schema: type
//! meta against the URL, names (DNS-1123), namespace agreement.

use serde_json::Value;

use crate::error::{ApiError, Cause, Target};
use crate::resources::ResourceType;
use crate::strategy::validate::meta::{self, LABEL_MSG as LABEL, SUBDOMAIN_MSG as SUBDOMAIN};

/// A name's label: at most 63 characters of RFC 1123.
fn is_label(s: &str) -> bool {
    s.len() <= 63 && meta::is_label(s)
}

fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// Kinds whose names must be DNS-1123 labels rather than subdomains.
fn needs_label(rt: &ResourceType) -> bool {
    rt.group.is_empty() && matches!(rt.kind.as_str(), "Namespace" | "Service")
}

/// An Invalid error for one field of `rt`'s object `name`.
pub fn invalid(
    rt: &ResourceType,
    name: &str,
    field: &str,
    reason: &str,
    message: String,
) -> ApiError {
    invalid_object(
        rt,
        name,
        vec![Cause {
            reason: reason.to_owned(),
            message,
            field: field.to_owned(),
        }],
    )
}

/// The Invalid error of `rt`'s object `name`, with its causes; the message
/// names the kind qualified by its group (`Deployment.apps`), as upstream's
/// `NewInvalid` does.
pub fn invalid_object(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> ApiError {
    let qualified = if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    ApiError::Invalid {
        target: Target {
            name: name.to_owned(),
            group: rt.group.clone(),
            kind: rt.kind.clone(),
        },
        kind: qualified,
        causes,
    }
}

/// Checks `name` is valid for `rt`.
pub fn check_name(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    let problems: Vec<String> = if is_rbac(rt) {
        path_segment_problems(name)
    } else if needs_label(rt) {
        (!is_label(name))
            .then(|| LABEL.to_owned())
            .into_iter()
            .collect()
    } else {
        (!is_subdomain(name))
            .then(|| SUBDOMAIN.to_owned())
            .into_iter()
            .collect()
    };
    if problems.is_empty() {
        return Ok(());
    }
    let causes = problems
        .into_iter()
        .map(|rule| Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: \"{name}\": {rule}"),
            field: "metadata.name".into(),
        })
        .collect();
    Err(invalid_object(rt, name, causes))
}

/// RBAC objects are named as path segments (`ValidateRBACName`), so
/// `system:controller:x` is a valid name.
fn is_rbac(rt: &ResourceType) -> bool {
    rt.group == "rbac.authorization.k8s.io"
}

/// Upstream's `path.IsValidPathSegmentName`: its messages, in its order.
fn path_segment_problems(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// Checks the body is an object whose `apiVersion` and `kind` name `rt`,
/// filling them in when absent.
pub fn check_type_meta(
    rt: &ResourceType,
    body: &mut Value,
    expect_kind: &str,
    expect_api: &str,
) -> Result<(), ApiError> {
    // `null` decodes as an empty object.
    if body.is_null() {
        *body = Value::Object(serde_json::Map::new());
    }
    // Type meta of another JSON type fails the decoder's first look.
    for field in ["apiVersion", "kind"] {
        let what = match body.get(field) {
            Some(Value::Number(_)) => "number",
            Some(Value::Bool(_)) => "bool",
            Some(Value::Array(_)) => "array",
            Some(Value::Object(_)) => "object",
            _ => continue,
        };
        let text = serde_json::to_string(body).unwrap_or_default();
        // Upstream shows the body's first 30 bytes.
        let shown = match text.char_indices().nth(30) {
            Some((at, _)) => format!("{} ...", &text[..at]),
            None => text.clone(),
        };
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {expect_kind}): couldn't get version/kind; json parse error: json: cannot unmarshal {what} into Go struct field .{field} of type string ({shown})"
        )));
    }
    let Some(map) = body.as_object_mut() else {
        return Err(ApiError::BadRequest(format!(
            "Object 'Kind' is missing in '{}'",
            body.to_string().chars().take(200).collect::<String>()
        )));
    };
    // As upstream's decoder: type meta absent from the body defaults to the
    // URL's; present, it must agree.
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(expect_kind.to_owned()));
        }
        Some(kind) if kind != expect_kind => {
            return Err(ApiError::BadRequest(format!(
                "the object provided is unrecognized (must be of type {expect_kind}): kind {kind} in the body"
            )));
        }
        _ => {}
    }
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(expect_api.to_owned()));
        }
        Some(api) if api != expect_api => {
            return Err(ApiError::BadRequest(format!(
                "the API version in the data ({api}) does not match the expected API version ({expect_api})"
            )));
        }
        _ => {}
    }
    // A built-in type's decoder refuses a metadata of another shape itself
    // (`go_types::type_error`); a custom resource's is checked here.
    if rt.custom.is_some() && !map.get("metadata").is_none_or(Value::is_object) {
        return Err(invalid(
            rt,
            "",
            "metadata",
            "FieldValueInvalid",
            "Invalid value: must be an object".into(),
        ));
    }
    Ok(())
}

/// Checks the body's namespace agrees with the URL's.
pub fn check_namespace(body: &Value, namespace: Option<&str>) -> Result<(), ApiError> {
    match (body["metadata"]["namespace"].as_str(), namespace) {
        (Some(b), Some(u)) if !b.is_empty() && b != u => Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_subdomain("web-1.example"));
        assert!(!is_subdomain("Web"));
        assert!(!is_subdomain("-a"));
        assert!(!is_subdomain("a_b"));
        assert!(is_label("default"));
        assert!(!is_label("a.b"));
    }
}
