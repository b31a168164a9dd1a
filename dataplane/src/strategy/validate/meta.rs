//! Object metadata, as upstream's `ValidateObjectMeta` checks it for every
//! kind, and the name formats of `k8s.io/apimachinery/pkg/util/validation`
//! with their messages.

use serde_json::{Value, json};

use super::errors::Errors;

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
/// A lowercase RFC 1123 subdomain's rule.
pub const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// A lowercase RFC 1123 label's rule.
pub const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// Upstream's annotation size limit, keys and values together.
const ANNOTATIONS_MAX: usize = 256 * 1024;

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the name part of a qualified
/// name and a non-empty label value.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`: one lowercase RFC 1123 label.
pub fn is_label(x: &str) -> bool {
    let b = x.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `IsDNS1123Label`: its problems.
pub fn dns_label(s: &str) -> Vec<String> {
    let mut p = Vec::new();
    if s.len() > 63 {
        p.push("must be no more than 63 characters".into());
    }
    if !is_label(s) {
        if s.split('.').all(is_label) {
            p.push("must not contain dots".into());
        } else {
            p.push(LABEL_MSG.into());
        }
    }
    p
}

/// `IsDNS1123Subdomain`: its problems.
pub fn dns_subdomain(s: &str) -> Vec<String> {
    let mut p = Vec::new();
    if s.len() > 253 {
        p.push("must be no more than 253 characters".into());
    }
    if !s.split('.').all(is_label) {
        p.push(SUBDOMAIN_MSG.into());
    }
    p
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name
/// part of at most 63 characters.
pub fn qualified_name(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('/').collect();
    let mut p = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                p.push("prefix part must be non-empty".into());
            } else {
                p.extend(
                    dns_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        p.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        p.push("name part must be no more than 63 characters".into());
    }
    if !is_name_part(name) {
        p.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    p
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut p = Vec::new();
    if s.len() > 63 {
        p.push("must be no more than 63 characters".into());
    }
    if !s.is_empty() && !is_name_part(s) {
        p.push(LABEL_VALUE_MSG.into());
    }
    p
}

/// `IsConfigMapKey`.
pub fn config_key(s: &str) -> Vec<String> {
    let mut p = Vec::new();
    if s.len() > 253 {
        p.push("must be no more than 253 characters".into());
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
    {
        p.push(CONFIG_KEY_MSG.into());
    }
    match s {
        "." => p.push("must not be '.'".into()),
        ".." => p.push("must not be '..'".into()),
        _ if s.starts_with("..") => p.push("must not start with '..'".into()),
        _ => {}
    }
    p
}

/// `ValidateLabels` of the map at `field`.
pub fn labels(e: &mut Errors, field: &str, labels: &Value) {
    for (k, v) in labels.as_object().into_iter().flatten() {
        e.invalid_each(field, &json!(k), qualified_name(k));
        if let Some(v) = v.as_str() {
            e.invalid_each(field, &json!(v), label_value(v));
        }
    }
}

/// The checks of `ValidateObjectMeta` that the generic path does not make
/// already (names are checked before): labels, annotations, finalizers;
/// `builtin` kinds' finalizers without a prefix are the standard ones.
pub fn object_meta(e: &mut Errors, meta: &Value, builtin: bool) {
    labels(e, "metadata.labels", &meta["labels"]);
    let mut size = 0;
    for (k, v) in meta["annotations"].as_object().into_iter().flatten() {
        e.invalid_each(
            "metadata.annotations",
            &json!(k),
            qualified_name(&k.to_lowercase()),
        );
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_MAX {
        e.too_long("metadata.annotations", ANNOTATIONS_MAX);
    }
    let finalizers = meta["finalizers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, f) in finalizers.iter().enumerate() {
        let Some(name) = f.as_str() else { continue };
        e.invalid_each("metadata.finalizers", f, qualified_name(name));
        // `validateKubeFinalizerName`: a name without a prefix is one of
        // the standard ones.
        if builtin
            && !name.contains('/')
            && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion")
        {
            e.invalid(
                &format!("metadata.finalizers[{i}]"),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            );
        }
    }
    let has = |n: &str| finalizers.iter().any(|f| f == n);
    if has("orphan") && has("foregroundDeletion") {
        e.invalid(
            "metadata.finalizers",
            &meta["finalizers"],
            "finalizer orphan and foregroundDeletion cannot be both set",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_upstreams() {
        assert!(qualified_name("example.com/My_name.1").is_empty());
        assert_eq!(qualified_name("bad key").len(), 1);
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert_eq!(qualified_name("/x"), ["prefix part must be non-empty"]);
        assert!(label_value("").is_empty());
        assert_eq!(label_value("-x").len(), 1);
        assert_eq!(dns_label("a.b"), ["must not contain dots"]);
        assert_eq!(dns_label("Bad_Handler"), [LABEL_MSG]);
        assert!(dns_subdomain("a.b-c").is_empty());
        assert_eq!(config_key("bad key!"), [CONFIG_KEY_MSG]);
        assert_eq!(config_key(".."), ["must not be '..'"]);
    }

    #[test]
    fn object_meta_finds_bad_labels_annotations_and_finalizers() {
        let mut e = Errors::default();
        object_meta(
            &mut e,
            &json!({"labels": {"ok": "v", "bad key": "v"}, "annotations": {"A/b": "x"},
                "finalizers": ["not a finalizer", "kubernetes", "example.com/f"]}),
            true,
        );
        let fields: Vec<&str> = e.0.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.labels",
                "metadata.finalizers",
                "metadata.finalizers[0]"
            ]
        );
    }
}
