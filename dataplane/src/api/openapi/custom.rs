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

/// A definition in OpenAPI v2's vocabulary, as upstream's CRD builder
/// publishes it: a kind whose root keeps unknown fields is just an object
/// (kubectl would refuse any field not listed), and each schema loses what
/// swagger 2.0 or kubectl cannot take (`ToStructuralOpenAPIV2`).
pub fn to_v2(def: &Value) -> Value {
    if def["x-kubernetes-preserve-unknown-fields"] == true {
        let mut out = json!({ "type": "object" });
        if let Some(gvk) = def.get("x-kubernetes-group-version-kind") {
            out["x-kubernetes-group-version-kind"] = gvk.clone();
        }
        return out;
    }
    schema_v2(def)
}

/// One schema (and those under it) for v2: no junctors; a nullable value or
/// one keeping unknown fields loses its properties and items (and then an
/// object or array its type); nullable properties are not required.
fn schema_v2(v: &Value) -> Value {
    let Value::Object(src) = v else {
        return v.clone();
    };
    let mut m = src.clone();
    for k in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(k);
    }
    let keeps_unknown = m.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    if m.remove("nullable") == Some(json!(true)) {
        for k in ["type", "items", "properties"] {
            m.remove(k);
        }
    }
    if keeps_unknown {
        m.remove("items");
        m.remove("properties");
    }
    let ty = m.get("type").and_then(Value::as_str).unwrap_or_default();
    if (ty == "array" && !m.contains_key("items")) || (ty == "object" && keeps_unknown) {
        m.remove("type");
    }
    let nullable = |s: &Value| s.get("nullable") == Some(&json!(true));
    if m.get("additionalProperties").is_some_and(nullable) {
        m.remove("required");
    }
    if let (Some(Value::Object(props)), Some(Value::Array(required))) =
        (m.get("properties"), m.get("required"))
    {
        let kept: Vec<Value> = required
            .iter()
            .filter(|r| !r.as_str().and_then(|r| props.get(r)).is_some_and(nullable))
            .cloned()
            .collect();
        m.insert("required".into(), Value::Array(kept));
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for s in props.values_mut() {
            *s = schema_v2(s);
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(s) = m.get_mut(k).filter(|s| s.is_object()) {
            *s = schema_v2(s);
        }
    }
    Value::Object(m)
}
