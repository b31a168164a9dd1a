//! Types of the APIs kemu serves in place of an aggregated API server:
//! `metrics.k8s.io/v1beta1` (metrics-server's `nodes` and `pods`).

use super::ResourceType;

fn metrics(kind: &str, plural: &str, namespaced: bool) -> ResourceType {
    ResourceType {
        group: "metrics.k8s.io".into(),
        version: "v1beta1".into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        namespaced,
        short_names: vec![],
        categories: vec![],
        verbs: vec!["get".into(), "list".into()],
        subresources: vec![],
        definition: format!("io.k8s.metrics.pkg.apis.metrics.v1beta1.{kind}"),
        custom: None,
    }
}

/// The aggregated types.
pub(super) fn types() -> Vec<ResourceType> {
    vec![
        metrics("NodeMetrics", "nodes", false),
        metrics("PodMetrics", "pods", true),
    ]
}
