//! `apiextensions.k8s.io/v1` CustomResourceDefinition defaulting and
//! validation, worded as apiextensions-apiserver words them: names, group,
//! scope, versions (exactly one storage version), subresources, printer
//! columns, and the structural-schema rules (`type` everywhere, `object` at
//! the root, `metadata` restricted to name and generateName, …).

use std::collections::HashSet;

use serde_json::{Value, json};

use super::schema::show;
use crate::error::Cause;

const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns1035(s: &str) -> bool {
    is_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

fn required(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: if detail.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {detail}")
        },
        field: field.into(),
    }
}

fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {detail}", show(value)),
        field: field.into(),
    }
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {detail}"),
        field: field.into(),
    }
}

/// Upstream's defaulting: singular and listKind from kind, conversion `None`.
pub fn apply_defaults(crd: &mut Value) {
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let names = &mut crd["spec"]["names"];
    if names.is_object() && !kind.is_empty() {
        if names["singular"].as_str().is_none_or(str::is_empty) {
            names["singular"] = json!(kind.to_ascii_lowercase());
        }
        if names["listKind"].as_str().is_none_or(str::is_empty) {
            names["listKind"] = json!(format!("{kind}List"));
        }
    }
    if crd["spec"].is_object() && crd["spec"]["conversion"].is_null() {
        crd["spec"]["conversion"] = json!({ "strategy": "None" });
    }
}

/// Every invalid field of a CRD (`old` on update: storage versions in
/// `status.storedVersions` must stay listed).
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    if name != format!("{plural}.{group}") {
        out.push(invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        out.push(required("spec.group", ""));
    } else if !is_subdomain(group) {
        out.push(invalid("spec.group", &json!(group), SUBDOMAIN));
    } else if !group.contains('.') {
        out.push(invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    match spec["scope"].as_str() {
        None | Some("") => out.push(required("spec.scope", "")),
        Some("Cluster" | "Namespaced") => {}
        Some(other) => out.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ),
            field: "spec.scope".into(),
        }),
    }
    validate_names(names, "spec.names", &mut out);
    validate_versions(spec, &mut out);
    if let Some(strategy) = spec["conversion"]["strategy"].as_str()
        && !matches!(strategy, "None" | "Webhook")
    {
        out.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {strategy:?}: supported values: \"None\", \"Webhook\""
            ),
            field: "spec.conversion.strategy".into(),
        });
    }
    if let Some(old) = old {
        let served: HashSet<&str> = spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .collect();
        for (i, stored) in old["status"]["storedVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(s) = stored.as_str()
                && !served.contains(s)
            {
                out.push(invalid(
                    &format!("status.storedVersions[{i}]"),
                    &json!(s),
                    "must appear in spec.versions",
                ));
            }
        }
    }
    out
}

fn validate_names(names: &Value, path: &str, out: &mut Vec<Cause>) {
    let field = |f: &str| format!("{path}.{f}");
    let plural = names["plural"].as_str().unwrap_or_default();
    if plural.is_empty() {
        out.push(required(&field("plural"), ""));
    } else if !is_label(plural) {
        out.push(invalid(&field("plural"), &json!(plural), LABEL));
    }
    let singular = names["singular"].as_str().unwrap_or_default();
    if !singular.is_empty() && !is_label(singular) {
        out.push(invalid(&field("singular"), &json!(singular), LABEL));
    }
    let kind = names["kind"].as_str().unwrap_or_default();
    if kind.is_empty() {
        out.push(required(&field("kind"), ""));
    } else if !is_dns1035(&kind.to_ascii_lowercase()) {
        out.push(invalid(&field("kind"), &json!(kind), DNS1035));
    }
    let list_kind = names["listKind"].as_str().unwrap_or_default();
    if !list_kind.is_empty() && list_kind == kind {
        out.push(invalid(
            &field("listKind"),
            &json!(list_kind),
            "kind and listKind may not be the same or empty",
        ));
    }
    for (i, s) in names["shortNames"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let s = s.as_str().unwrap_or_default();
        if !is_label(s) {
            out.push(invalid(
                &format!("{path}.shortNames[{i}]"),
                &json!(s),
                LABEL,
            ));
        }
    }
    for (i, c) in names["categories"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let c = c.as_str().unwrap_or_default();
        if !is_label(c) {
            out.push(invalid(
                &format!("{path}.categories[{i}]"),
                &json!(c),
                LABEL,
            ));
        }
    }
}

fn validate_versions(spec: &Value, out: &mut Vec<Cause>) {
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        out.push(required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let storage = versions.iter().filter(|v| v["storage"] == true).count();
    if storage != 1 {
        out.push(invalid(
            "spec.versions",
            &json!(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.iter().any(|v| v["served"] == true) {
        out.push(invalid(
            "spec.versions",
            &json!(versions),
            "must have at least one version marked as served",
        ));
    }
    let mut seen = HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = v["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            out.push(required(&format!("{path}.name"), ""));
        } else if !is_dns1035(name) {
            out.push(invalid(&format!("{path}.name"), &json!(name), DNS1035));
        } else if !seen.insert(name) {
            out.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: {name:?}"),
                field: format!("{path}.name"),
            });
        }
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            out.push(required(
                &format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            ));
        } else {
            let mut errs = Vec::new();
            structural(
                schema,
                Level::Root,
                &format!("{path}.schema.openAPIV3Schema"),
                &mut errs,
            );
            // Upstream sorts these by message.
            errs.sort_by_key(|c| format!("{}: {}", c.field, c.message));
            out.extend(errs);
        }
        validate_subresources(&v["subresources"], &path, out);
        for (j, c) in v["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let cp = format!("{path}.additionalPrinterColumns[{j}]");
            if c["name"].as_str().is_none_or(str::is_empty) {
                out.push(required(&format!("{cp}.name"), ""));
            }
            match c["type"].as_str() {
                None | Some("") => out.push(required(&format!("{cp}.type"), "")),
                Some("integer" | "number" | "string" | "boolean" | "date") => {}
                Some(t) => out.push(Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!("Unsupported value: {t:?}: supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\""),
                    field: format!("{cp}.type"),
                }),
            }
            if c["jsonPath"].as_str().is_none_or(str::is_empty) {
                out.push(required(&format!("{cp}.jsonPath"), ""));
            }
        }
    }
}

fn validate_subresources(subs: &Value, path: &str, out: &mut Vec<Cause>) {
    let scale = &subs["scale"];
    if !scale.is_object() {
        return;
    }
    let sp = format!("{path}.subresources.scale");
    match scale["specReplicasPath"].as_str() {
        None | Some("") => out.push(required(&format!("{sp}.specReplicasPath"), "")),
        Some(p) if !p.starts_with(".spec.") => out.push(invalid(
            &format!("{sp}.specReplicasPath"),
            &json!(p),
            "should be a json path under .spec",
        )),
        _ => {}
    }
    match scale["statusReplicasPath"].as_str() {
        None | Some("") => out.push(required(&format!("{sp}.statusReplicasPath"), "")),
        Some(p) if !p.starts_with(".status.") => out.push(invalid(
            &format!("{sp}.statusReplicasPath"),
            &json!(p),
            "should be a json path under .status",
        )),
        _ => {}
    }
    if let Some(p) = scale["labelSelectorPath"].as_str()
        && !(p.starts_with(".spec.") || p.starts_with(".status."))
    {
        out.push(invalid(
            &format!("{sp}.labelSelectorPath"),
            &json!(p),
            "should be a json path under either .spec or .status",
        ));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Upstream's structural-schema invariants, on the schema as written.
fn structural(s: &Value, level: Level, path: &str, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else { return };
    let ty = m.get("type").and_then(Value::as_str).unwrap_or_default();
    let flag = |k: &str| m.get(k) == Some(&Value::Bool(true));
    let int_or_string = flag("x-kubernetes-int-or-string");
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    let embedded = flag("x-kubernetes-embedded-resource");
    if ty == "array" && !m.contains_key("items") {
        out.push(required(&format!("{path}.items"), "must be specified"));
    }
    if let Some(items) = m.get("items") {
        structural(items, Level::Item, &format!("{path}.items"), out);
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            structural(v, Level::Field, &format!("{path}.properties[{k}]"), out);
        }
    }
    if let Some(ap) = m.get("additionalProperties") {
        if level == Level::Root {
            out.push(forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if m.contains_key("properties") {
            out.push(forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if ap.is_object() {
            structural(
                ap,
                Level::Field,
                &format!("{path}.additionalProperties"),
                out,
            );
        }
    }
    if int_or_string && preserve {
        out.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &json!(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        out.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &json!(false),
            "must be true or undefined",
        ));
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in m
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            nested(
                sub,
                &format!("{path}.{junctor}[{i}]"),
                int_or_string && junctor == "anyOf",
                out,
            );
        }
    }
    if let Some(not) = m.get("not") {
        nested(not, &format!("{path}.not"), false, out);
    }
    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(required(
                &format!("{path}.type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(invalid(
                &format!("{path}.type"),
                &json!(ty),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(required(&format!("{path}.type"), detail));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(invalid(
            &format!("{path}.type"),
            &json!(ty),
            "must be object at the root",
        ));
    }
    if level == Level::Root
        && let Some(meta) = m.get("properties").and_then(|p| p.get("metadata"))
    {
        let extra = meta
            .as_object()
            .into_iter()
            .flatten()
            .any(|(k, v)| match k.as_str() {
                "type" => v != "object",
                "properties" => v
                    .as_object()
                    .is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName")),
                _ => true,
            });
        if extra {
            out.push(forbidden(
                &format!("{path}.properties[metadata]"),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

/// The rules under a logical junctor: no types, defaults or descriptions.
fn nested(s: &Value, path: &str, int_or_string_pattern: bool, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else { return };
    if m.contains_key("type") && !int_or_string_pattern {
        out.push(forbidden(
            &format!("{path}.type"),
            "must be empty to be structural",
        ));
    }
    for (k, detail) in [
        ("default", "must be undefined to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
    ] {
        if m.contains_key(k) {
            out.push(forbidden(&format!("{path}.{k}"), detail));
        }
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            nested(v, &format!("{path}.properties[{k}]"), false, out);
        }
    }
    if let Some(items) = m.get("items") {
        nested(items, &format!("{path}.items"), false, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": { "name": "crontabs.stable.example.com" },
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": { "plural": "crontabs", "kind": "CronTab" },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                        "spec": { "type": "object", "properties": { "replicas": { "type": "integer" } } } } } } }]
            }
        })
    }

    fn messages(c: &Value) -> Vec<String> {
        validate(c, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_good_crd_passes_and_gets_defaults() {
        let mut c = crd();
        apply_defaults(&mut c);
        assert!(messages(&c).is_empty(), "{:?}", messages(&c));
        assert_eq!(c["spec"]["names"]["singular"], "crontab");
        assert_eq!(c["spec"]["names"]["listKind"], "CronTabList");
    }

    #[test]
    fn non_structural_schemas_and_bad_versions_are_refused() {
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
            json!({ "properties": { "replicas": { "type": "integer" } } });
        assert_eq!(
            messages(&c),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
        let mut c = crd();
        c["spec"]["versions"][0]["storage"] = json!(false);
        assert!(
            messages(&c)[0].contains("must have exactly one version marked as storage version")
        );
        let mut c = crd();
        c["spec"]["versions"][0]["schema"] = Value::Null;
        assert_eq!(
            messages(&c),
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
        );
        let mut c = crd();
        c["metadata"]["name"] = json!("wrong.stable.example.com");
        assert!(
            messages(&c)[0]
                .starts_with("metadata.name: Invalid value: \"wrong.stable.example.com\"")
        );
    }
}
