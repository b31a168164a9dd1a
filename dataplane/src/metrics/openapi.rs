//! The OpenAPI definitions of `metrics.k8s.io/v1beta1`, as metrics-server
//! publishes them through aggregation, so `kubectl explain` and clients that
//! read the schema find NodeMetrics and PodMetrics like any other kind.

use serde_json::{Map, Value, json};

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
const PREFIX: &str = "io.k8s.metrics.pkg.apis.metrics.v1beta1";

fn usage() -> Value {
    json!({"type": "object", "description": "The memory and CPU usage.",
        "additionalProperties": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}})
}

fn type_meta(kind: &str) -> (Value, Value) {
    (
        json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
        json!({"type": "string", "description": format!("Kind is a string value representing the REST resource this object represents ({kind}).")}),
    )
}

fn gvk(kind: &str) -> Value {
    json!([{"group": "metrics.k8s.io", "kind": kind, "version": "v1beta1"}])
}

fn object(kind: &str, description: &str, extra: Value, required: &[&str]) -> Value {
    let (api_version, k) = type_meta(kind);
    let mut props = json!({
        "apiVersion": api_version, "kind": k,
        "metadata": {"$ref": format!("#/definitions/{META}.ObjectMeta"), "description": "Standard object's metadata."},
        "timestamp": {"$ref": format!("#/definitions/{META}.Time"), "description": "The following fields define time interval from which metrics were collected from the interval [Timestamp-Window, Timestamp]."},
        "window": {"type": "string", "description": "The time window over which the usage was measured."},
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"description": description, "type": "object", "properties": props,
        "required": required, "x-kubernetes-group-version-kind": gvk(kind)})
}

fn list(kind: &str, item: &str) -> Value {
    let (api_version, k) = type_meta(kind);
    json!({"description": format!("{kind} is a list of {item}."), "type": "object", "required": ["items"],
        "properties": {"apiVersion": api_version, "kind": k,
            "metadata": {"$ref": format!("#/definitions/{META}.ListMeta"), "description": "Standard list metadata."},
            "items": {"type": "array", "description": format!("List of {item}."),
                "items": {"$ref": format!("#/definitions/{PREFIX}.{item}")}}},
        "x-kubernetes-group-version-kind": gvk(kind)})
}

/// The definitions, by name, in OpenAPI v2 form.
pub fn definitions() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        format!("{PREFIX}.NodeMetrics"),
        object(
            "NodeMetrics",
            "NodeMetrics sets resource usage metrics of a node.",
            json!({"usage": usage()}),
            &["timestamp", "window", "usage"],
        ),
    );
    m.insert(
        format!("{PREFIX}.PodMetrics"),
        object(
            "PodMetrics",
            "PodMetrics sets resource usage metrics of a pod.",
            json!({"containers": {"type": "array", "description": "Metrics for all containers are collected within the same time window.",
                "items": {"$ref": format!("#/definitions/{PREFIX}.ContainerMetrics")}, "x-kubernetes-list-type": "atomic"}}),
            &["timestamp", "window", "containers"],
        ),
    );
    m.insert(
        format!("{PREFIX}.ContainerMetrics"),
        json!({"description": "ContainerMetrics sets resource usage metrics of a container.", "type": "object",
            "required": ["name", "usage"],
            "properties": {"name": {"type": "string", "description": "Container name corresponding to the one from pod.spec.containers."},
                "usage": usage()}}),
    );
    m.insert(
        format!("{PREFIX}.NodeMetricsList"),
        list("NodeMetricsList", "NodeMetrics"),
    );
    m.insert(
        format!("{PREFIX}.PodMetricsList"),
        list("PodMetricsList", "PodMetrics"),
    );
    m
}
