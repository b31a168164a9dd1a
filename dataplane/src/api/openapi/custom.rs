//! The OpenAPI definitions of a cluster's custom kinds, as upstream's CRD
//! OpenAPI builder makes them: the version's structural schema with
//! `apiVersion`, `kind` and `metadata` (ObjectMeta) filled in, tagged with
//! `x-kubernetes-group-version-kind` (what `kubectl explain` looks up), and
//! a `…List` definition beside it.

use serde_json::{Map, Value, json};

use crate::resources::ResourceRegistry;

const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Every custom kind's definition and list definition, by name.
pub fn definitions(registry: &ResourceRegistry) -> Map<String, Value> {
    let mut out = Map::new();
    for rt in registry.all() {
        let Some(spec) = &rt.custom else { continue };
        let mut def = if spec.schema.is_object() {
            spec.schema.clone()
        } else {
            json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
        };
        if !def["properties"].is_object() {
            def["properties"] = json!({});
        }
        def["properties"]["apiVersion"] = json!({ "type": "string", "description": API_VERSION });
        def["properties"]["kind"] = json!({ "type": "string", "description": KIND });
        def["properties"]["metadata"] = json!({
            "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "description": METADATA,
        });
        def["x-kubernetes-group-version-kind"] =
            json!([{ "group": rt.group, "version": rt.version, "kind": rt.kind }]);
        let list = json!({
            "description": format!("{} is a list of {}", rt.list_kind, rt.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": { "type": "string", "description": API_VERSION },
                "items": {
                    "type": "array",
                    "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", rt.plural),
                    "items": { "$ref": format!("#/definitions/{}", rt.definition) },
                },
                "kind": { "type": "string", "description": KIND },
                "metadata": {
                    "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
                    "description": METADATA,
                },
            },
            "x-kubernetes-group-version-kind": [{ "group": rt.group, "version": rt.version, "kind": rt.list_kind }],
        });
        out.insert(rt.definition.clone(), def);
        out.insert(format!("{}List", rt.definition), list);
    }
    out
}

/// A definition in OpenAPI v2's vocabulary: upstream drops what swagger 2.0
/// cannot say (`nullable`, the junctors) from the v2 document.
pub fn to_v2(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "nullable" | "anyOf" | "oneOf" | "not"))
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("enum" | "default" | "example" | "required", _)
                        | ("x-kubernetes-group-version-kind", _) => v.clone(),
                        // Field names, not keywords: keep every one.
                        ("properties" | "patternProperties", Value::Object(props)) => {
                            Value::Object(
                                props.iter().map(|(n, s)| (n.clone(), to_v2(s))).collect(),
                            )
                        }
                        _ => to_v2(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(to_v2).collect()),
        other => other.clone(),
    }
}
