//! The access reviews of `authorization.k8s.io/v1` (`kubectl auth can-i`,
//! `can-i --list`, webhooks' SubjectAccessReviews), answered by the cluster's
//! authorizer over its RBAC objects, as upstream's create-only REST storage
//! answers them: nothing is stored, the reply is HTTP 201.

use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use kemu_shared::UserInfo;

use crate::api::request::{decode_object, header, negotiate_plain, read_body};
use crate::api::wire;
use crate::authz::{Authorizer, Layered, StoreSource, review};
use crate::cloud_identity::CloudGrants;
use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;

/// One review operation (the router's variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// POST `selfsubjectaccessreviews`.
    SelfSubjectAccess,
    /// POST `selfsubjectrulesreviews`.
    SelfSubjectRules,
    /// POST `subjectaccessreviews`.
    SubjectAccess,
    /// POST `namespaces/{namespace}/localsubjectaccessreviews`.
    LocalSubjectAccess,
}

/// The group-version path the reviews live under.
pub const PREFIX: &str = "/apis/authorization.k8s.io/v1";

/// Mounts the four review routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for (path, review) in [
        ("/selfsubjectaccessreviews", Review::SelfSubjectAccess),
        ("/selfsubjectrulesreviews", Review::SelfSubjectRules),
        ("/subjectaccessreviews", Review::SubjectAccess),
        (
            "/namespaces/{namespace}/localsubjectaccessreviews",
            Review::LocalSubjectAccess,
        ),
    ] {
        cfg.route(
            &format!("{PREFIX}{path}"),
            web::post().to(move |req, payload| create(review, req, payload)),
        );
    }
}

async fn create(
    op: Review,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    negotiate_plain(&req)?;
    let body = read_body(payload).await?;
    let body = decode_object(header(&req, "content-type"), &body)?;
    let (Some(engine), Some(cluster)) = (
        req.app_data::<web::Data<Engine>>(),
        req.app_data::<web::Data<ClusterContext>>(),
    ) else {
        return Err(ApiError::Internal("engine not mounted".into()));
    };
    let store = engine
        .store(&cluster.id)
        .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
    // The cloud's virtual grants to the caller count too (`auth can-i`).
    let grants = req
        .extensions()
        .get::<CloudGrants>()
        .cloned()
        .unwrap_or_default();
    let own = StoreSource(store.as_ref());
    let source = Layered(vec![&own, &grants.0]);
    let authz = Authorizer::new(engine.authorization(), &source);
    let caller = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_default();
    let answer = match op {
        Review::SelfSubjectAccess => review::self_subject_access_review(&authz, &caller, &body),
        Review::SelfSubjectRules => review::self_subject_rules_review(&authz, &caller, &body),
        Review::SubjectAccess => review::subject_access_review(&authz, &body),
        Review::LocalSubjectAccess => {
            let namespace = req.match_info().get("namespace").unwrap_or_default();
            review::local_subject_access_review(&authz, namespace, &body)
        }
    }?;
    Ok(wire::respond(HttpResponse::Created(), &answer))
}
