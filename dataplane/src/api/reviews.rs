//! The reviews: the access reviews of `authorization.k8s.io/v1` (`kubectl
//! auth can-i`, `can-i --list`, webhooks' SubjectAccessReviews), answered by
//! the cluster's authorizer over its RBAC objects, and the TokenReviews of
//! `authentication.k8s.io/v1`, answered by its authenticators, as upstream's
//! create-only REST storage answers them: nothing is stored, the reply is
//! HTTP 201, its metadata the request's with the field manager's entry.

use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use chrono::{DateTime, SecondsFormat, Utc};
use kemu_shared::UserInfo;
use serde_json::{Value, json};

use crate::api::go_types;
use crate::api::managedfields::{self, Writer};
use crate::api::openapi;
use crate::api::request::{Params, decode_object, header, negotiate_plain, read_body};
use crate::api::resource::field_manager;
use crate::api::wire;
use crate::auth;
use crate::authz::{Authorizer, Layered, StoreSource, review};
use crate::cloud_identity::CloudGrants;
use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;
use crate::sa_token::{self, TokenError};

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
    /// POST `authentication.k8s.io/v1` `tokenreviews`.
    Token,
}

/// The group-version path the reviews live under.
pub const PREFIX: &str = "/apis/authorization.k8s.io/v1";

/// Where TokenReviews are posted.
const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";

/// Mounts the five review routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        TOKEN_REVIEWS,
        web::post().to(|req, payload| create(Review::Token, req, payload)),
    );
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
    let mut body = decode_object(header(&req, "content-type"), &body)?;
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
    let (kind, group) = match op {
        Review::SelfSubjectAccess => ("SelfSubjectAccessReview", "authorization"),
        Review::SelfSubjectRules => ("SelfSubjectRulesReview", "authorization"),
        Review::SubjectAccess => ("SubjectAccessReview", "authorization"),
        Review::LocalSubjectAccess => ("LocalSubjectAccessReview", "authorization"),
        Review::Token => ("TokenReview", "authentication"),
    };
    let api_group = format!("{group}.k8s.io");
    crate::api::validation::check_sub_type_meta(
        &body,
        kind,
        &api_group,
        &[&format!("{api_group}/v1")],
    )?;
    // A rules review is answered as a new object: nothing of the request's
    // metadata, its field manager's entry included, comes back.
    if op != Review::SelfSubjectRules {
        track(
            &req,
            &mut body,
            kind,
            group,
            engine.registry().clock().now(),
        )?;
    }
    let mut answer = match op {
        Review::Token => token_review(engine, &cluster.id, &body),
        Review::SelfSubjectAccess => review::self_subject_access_review(&authz, &caller, &body),
        Review::SelfSubjectRules => review::self_subject_rules_review(&authz, &caller, &body),
        Review::SubjectAccess => review::subject_access_review(&authz, &body),
        Review::LocalSubjectAccess => {
            let namespace = req.match_info().get("namespace").unwrap_or_default();
            review::local_subject_access_review(&authz, namespace, &body)
        }
    }?;
    answer["metadata"] = match op {
        Review::SelfSubjectRules => json!({}),
        _ => body["metadata"].take(),
    };
    Ok(wire::respond(HttpResponse::Created(), &answer))
}

/// The request's field manager entry, as upstream's create handler writes
/// one for every object it is given, stored or not.
fn track(
    req: &HttpRequest,
    body: &mut Value,
    kind: &str,
    group: &str,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let params = Params::parse(req.query_string())?;
    let manager = field_manager(&params, header(req, "user-agent"));
    let definition = format!("io.k8s.api.{group}.v1.{kind}");
    go_types::strip(&definition, body);
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    let w = Writer {
        manager: &manager,
        api_version: format!("{group}.k8s.io/v1"),
        now: now.to_rfc3339_opts(SecondsFormat::Secs, true),
        schema: openapi::definitions().get(&definition),
        status_subresource: false,
        subresource: None,
        reset: &["status"],
    };
    managedfields::track_update(None, body, &w);
    Ok(())
}

/// Go's `%q` of a list of strings: `["a" "b"]`.
fn go_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// A TokenReview: the token checked as a request's bearer token is, for the
/// audiences asked (the API server's own when none are).
fn token_review(engine: &Engine, cluster: &str, body: &Value) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    let token = spec["token"].as_str().unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::BadRequest(
            "token is required for TokenReview in authentication".into(),
        ));
    }
    let gone = || ApiError::ClusterGone(cluster.to_owned());
    let record = engine.registry().get(cluster).map_err(|_| gone())?;
    let store = engine.store(cluster).ok_or_else(gone)?;
    let asked: Vec<String> = spec["audiences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let audiences = if asked.is_empty() {
        sa_token::api_audiences(&record)
    } else {
        asked
    };
    let now = engine.registry().clock().now();
    let invalid = || "invalid bearer token".to_owned();
    let outcome = match sa_token::authenticate_for(
        &record,
        store.as_ref(),
        engine.verified_tokens(),
        token,
        now,
        &audiences,
    ) {
        Some(Ok(user)) => Ok(user),
        Some(Err(TokenError::Audience(theirs, ours))) => Err(format!(
            "[{}, token audiences {} is invalid for the target audiences {}]",
            invalid(),
            go_list(&theirs),
            go_list(&ours)
        )),
        Some(Err(_)) => Err(invalid()),
        None => match engine.registry().authenticate_token(&record, token) {
            Ok(Some(principal)) => {
                auth::cloud_user(engine, &record, store.as_ref(), principal).ok_or_else(invalid)
            }
            _ => Err(invalid()),
        },
    };
    let status = match outcome {
        Ok(user) => {
            // The audiences both the token and the review name.
            let claims = kemu_shared::sa_key::peek_claims(token).unwrap_or_default();
            let theirs: Vec<&str> = match &claims["aud"] {
                Value::String(a) => vec![a.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let both: Vec<&String> = audiences
                .iter()
                .filter(|a| theirs.is_empty() || theirs.contains(&a.as_str()))
                .collect();
            let shown = auth::user_info_json(&user);
            json!({"authenticated": true, "user": shown, "audiences": both})
        }
        Err(error) => json!({"user": {}, "error": error}),
    };
    Ok(json!({
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": body.get("metadata").cloned().unwrap_or_else(|| json!({})),
        "spec": spec,
        "status": status,
    }))
}
