//! Synthetic resource metrics, as metrics-server would report them, so
//! `kubectl top` and HorizontalPodAutoscalers work without containers.
//!
//! # Layout
//!
//! - [`usage`]: a running Pod's per-container usage, derived from its requests
//!   and adjustable per workload by annotation; a Node's usage.
//! - [`api`]: the `metrics.k8s.io/v1beta1` API (PodMetrics, NodeMetrics),
//!   served by the engine as metrics-server serves it through aggregation.
//! - [`openapi`]: its OpenAPI definitions.

pub mod api;
pub mod openapi;
pub mod usage;
