//! Checks on a written object that do not depend on its kind's schema: type
//! meta against the URL, names (DNS-1123), namespace agreement.

use serde_json::Value;

use crate::error::{ApiError, Cause, Target};
use crate::resources::{ResourceRegistry, ResourceType};
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

/// Kinds served only as subresource bodies, by group-version.
const SUBRESOURCE_KINDS: [(&str, &str); 5] = [
    ("autoscaling/v1", "Scale"),
    ("policy/v1", "Eviction"),
    ("policy/v1beta1", "Eviction"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("v1", "Binding"),
];

/// Whether upstream's scheme knows `kind` in `api_version`.
fn registered(api_version: &str, kind: &str) -> bool {
    SUBRESOURCE_KINDS.contains(&(api_version, kind))
        || ResourceRegistry::builtin_ref()
            .by_kind(api_version, kind)
            .is_some()
}

/// The decoder's refusal of a body of `kind` in `api_version` where a
/// built-in `expect_kind` of `expect_group` is wanted: it cannot convert
/// one into the other, or does not know the body's type at all.
pub fn wrong_type(
    api_version: &str,
    kind: &str,
    expect_kind: &str,
    expect_group: &str,
) -> ApiError {
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let why = if registered(api_version, kind) {
        // The internal package of the wanted type: `core`, `apps`, `rbac`…
        let internal = match expect_group {
            "" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        format!("converting ({version}.{kind}) to ({internal}.{expect_kind}): unknown conversion")
    } else {
        format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        )
    };
    ApiError::BadRequest(format!(
        "{kind} in version \"{version}\" cannot be handled as a {expect_kind}: {why}"
    ))
}

/// A subresource body's type meta: absent, or the wanted kind in one of
/// `versions`.
pub fn check_sub_type_meta(
    body: &Value,
    expect_kind: &str,
    expect_group: &str,
    versions: &[&str],
) -> Result<(), ApiError> {
    let kind = body["kind"].as_str().unwrap_or_default();
    let api = body["apiVersion"].as_str().unwrap_or_default();
    if kind.is_empty() || (kind == expect_kind && (api.is_empty() || versions.contains(&api))) {
        return Ok(());
    }
    let api = if api.is_empty() { versions[0] } else { api };
    Err(wrong_type(api, kind, expect_kind, expect_group))
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
        Some(kind) if kind != expect_kind && rt.custom.is_none() => {
            let api = map
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or(expect_api);
            return Err(wrong_type(api, kind, expect_kind, &rt.group));
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
        Some(api)
            if api != expect_api
                && rt.custom.is_none()
                && api.rsplit_once('/').map_or("", |(g, _)| g) != rt.group
                && !registered(api, expect_kind) =>
        {
            return Err(wrong_type(api, expect_kind, expect_kind, &rt.group));
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
