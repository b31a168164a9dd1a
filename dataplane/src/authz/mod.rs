//! Authorization and admission, as pure functions over narrow interfaces
//! (the request path wires them in).
//!
//! # Layout
//!
//! - [`attributes`]: what a request asks (`authorizer.Attributes`) and the
//!   HTTP → attributes mapping of upstream's `RequestInfoFactory`.
//! - [`rules`]: PolicyRule and Subject with upstream's matching helpers.
//! - [`source`]: the [`RbacSource`] trait the store implements, an in-memory
//!   source and a layering of sources.
//! - [`store_source`]: a cluster's store as an [`RbacSource`], and the
//!   seeding of a new store with the bootstrap policy.
//! - [`rbac`]: the RBAC evaluator (bindings → roles → rules, aggregation).
//! - [`authorizer`]: the chain a request goes through: allow-all mode,
//!   `system:masters`, RBAC.
//! - [`forbidden`]: the 403 Status, worded as upstream.
//! - [`impersonation`]: `Impersonate-*` headers (`kubectl --as`).
//! - [`escalation`]: the escalation and bind checks on writing RBAC objects.
//! - [`bootstrap`]: upstream's bootstrap roles and bindings, from
//!   `fixtures/rbac/bootstrap.json`.
//! - [`cloud`]: each cloud's identities → users, groups and bindings (EKS
//!   access entries and `aws-auth`, GKE IAM, AKS credentials and Azure RBAC).
//! - [`review`]: SubjectAccessReview, SelfSubjectAccessReview,
//!   LocalSubjectAccessReview and SelfSubjectRulesReview.
//! - [`admission`]: NamespaceLifecycle, LimitRange, ServiceAccount and
//!   ResourceQuota admission.
//! - [`networkpolicy`]: whether traffic between two Pods would be allowed.
//!
//! # Wiring (what the request path calls, in order)
//!
//! 1. Authenticate ([`crate::auth`]) → [`UserInfo`]; then, with
//!    `Impersonate-*` headers, [`impersonation::impersonate`].
//! 2. [`check_request`] with the cluster's [`Mode`] and a [`Layered`] source:
//!    the store's RBAC objects (seeded at cluster creation with
//!    [`bootstrap::objects`], plus [`cloud::aks::bootstrap_objects`] on AKS)
//!    and the cloud's virtual grants ([`cloud::eks::access_policy_source`],
//!    [`cloud::gke::iam_source`], [`cloud::aks::azure_rbac_source`]). Its
//!    403 ends the request ([`crate::auth`] does steps 1 and 2).
//! 3. Writes go through admission: [`admission::namespace::admit`],
//!    [`admission::limitrange::mutate`], [`admission::serviceaccount::admit_pod`],
//!    mutating [`admission::webhook`]s, then (after the engine's validation)
//!    [`escalation::check_write`] for the four RBAC kinds,
//!    [`admission::limitrange::validate`], validating webhooks, and
//!    [`admission::quota::admit`] last (write back the quotas it returns).
//! 4. The reviews' routes answer with [`review`]'s functions (HTTP 201).
//! 5. Controllers: [`bootstrap::aggregated_rules`] is the ClusterRole
//!    aggregation controller's computation, [`admission::quota::status`] the
//!    ResourceQuota controller's.
//!
//! Where it is wired: steps 1 and 2 in [`crate::auth`], with the clouds'
//! mapping and virtual grants from [`crate::cloud_identity`]; step 3 in
//! [`crate::api::admission`] (webhook calls in [`crate::api::webhook_call`]);
//! the ResourceQuota controller in [`crate::controllers::quota`]; the
//! NetworkPolicy evaluation endpoint in [`crate::api::netpol`].

pub mod admission;
pub mod attributes;
pub mod authorizer;
pub mod bootstrap;
pub mod cloud;
pub mod escalation;
pub mod forbidden;
pub mod impersonation;
pub mod networkpolicy;
pub mod rbac;
pub mod review;
pub mod rules;
pub mod source;
pub mod store_source;

pub use attributes::{Attributes, from_request};
pub use authorizer::{Authorizer, Decision, Mode};
pub use forbidden::Forbidden;
pub use source::{Layered, MemorySource, RbacSource};
pub use store_source::StoreSource;

use kemu_shared::UserInfo;

/// The one call the request path makes before handling a request: maps the
/// HTTP request to attributes as kube-apiserver does and authorizes them
/// against `source` (the store's RBAC objects, layered with any
/// cloud-derived source). `Ok` carries the attributes (the handlers and
/// admission need the verb, namespace, resource and name); `Err` is the 403.
pub fn check_request(
    mode: Mode,
    source: &dyn RbacSource,
    user: UserInfo,
    method: &str,
    path: &str,
    query: &str,
) -> Result<Attributes, Forbidden> {
    let attributes = from_request(user, method, path, query);
    Authorizer::new(mode, source).check(&attributes)?;
    Ok(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa() -> UserInfo {
        UserInfo {
            username: "system:serviceaccount:dev:ci".into(),
            groups: rules::service_account_groups("dev"),
            ..Default::default()
        }
    }

    #[test]
    fn requests_are_authorized_end_to_end() {
        let boot = bootstrap::source();
        let mut own = MemorySource::default();
        own.put(
            serde_json::json!({"kind":"Role","metadata":{"name":"r","namespace":"dev"},
            "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}]}),
        );
        own.put(
            serde_json::json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"dev"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},
            "subjects":[{"kind":"ServiceAccount","name":"ci","namespace":"dev"}]}),
        );
        let src = Layered(vec![&boot, &own]);
        let ok = |m: &str, p: &str, q: &str| check_request(Mode::Rbac, &src, sa(), m, p, q);
        assert_eq!(
            ok("GET", "/api/v1/namespaces/dev/pods", "watch=1")
                .unwrap()
                .verb,
            "watch"
        );
        assert!(ok("GET", "/api/v1/namespaces/dev/pods/web", "").is_ok());
        assert!(ok("GET", "/apis/apps/v1", "").is_ok());
        assert!(
            ok(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                ""
            )
            .is_ok()
        );
        let e = ok("DELETE", "/api/v1/namespaces/dev/pods", "").unwrap_err();
        assert_eq!(
            e.message,
            "pods is forbidden: User \"system:serviceaccount:dev:ci\" cannot deletecollection resource \"pods\" in API group \"\" in the namespace \"dev\""
        );
        let e = ok("GET", "/api/v1/namespaces/prod/pods", "").unwrap_err();
        assert!(e.message.ends_with("in the namespace \"prod\""));
        let e = ok("GET", "/metrics", "").unwrap_err();
        assert_eq!(
            e.message,
            "forbidden: User \"system:serviceaccount:dev:ci\" cannot get path \"/metrics\""
        );
        let anon = UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        };
        assert!(check_request(Mode::Rbac, &src, anon.clone(), "GET", "/version", "").is_ok());
        assert!(check_request(Mode::Rbac, &src, anon.clone(), "GET", "/api", "").is_err());
        assert!(check_request(Mode::AllowAll, &src, anon, "DELETE", "/api/v1/nodes/n", "").is_ok());
    }
}
