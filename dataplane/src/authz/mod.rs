//! Authorization and admission, as pure functions over narrow interfaces
//! (the request path wires them in).
//!
//! # Layout
//!
//! - [`attributes`]: what a request asks (`authorizer.Attributes`) and the
//!   HTTP → attributes mapping of upstream's `RequestInfoFactory`.
//! - [`rules`]: PolicyRule and Subject with upstream's matching helpers.
//! - [`selector`]: label selectors (ClusterRole aggregation).
//! - [`source`]: the [`RbacSource`] trait the store implements, an in-memory
//!   source and a layering of sources.
//! - [`rbac`]: the RBAC evaluator (bindings → roles → rules, aggregation).
//! - [`authorizer`]: the chain a request goes through: allow-all mode,
//!   `system:masters`, RBAC.
//! - [`forbidden`]: the 403 Status, worded as upstream.
//! - [`escalation`]: the escalation and bind checks on writing RBAC objects.
//! - [`bootstrap`]: upstream's bootstrap roles and bindings, from
//!   `fixtures/rbac/bootstrap.json`.
//! - [`cloud`]: each cloud's identities → users, groups and bindings (EKS
//!   access entries and `aws-auth`, GKE IAM, AKS credentials and Azure RBAC).
//! - [`review`]: SubjectAccessReview, SelfSubjectAccessReview,
//!   LocalSubjectAccessReview and SelfSubjectRulesReview.
//! - [`admission`]: ResourceQuota and LimitRange admission.

pub mod admission;
pub mod attributes;
pub mod authorizer;
pub mod bootstrap;
pub mod cloud;
pub mod escalation;
pub mod forbidden;
pub mod rbac;
pub mod review;
pub mod rules;
pub mod selector;
pub mod source;

pub use attributes::{Attributes, from_request};
pub use authorizer::{Authorizer, Decision, Mode};
pub use forbidden::Forbidden;
pub use source::{Layered, MemorySource, RbacSource};
