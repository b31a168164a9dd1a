//! Authentication and authorization of every request to a cluster, as
//! kube-apiserver's filters do it: a verified client certificate (CN user, O
//! groups), else a bearer token: a ServiceAccount JWT of the cluster
//! ([`crate::sa_token`]), or one checked by the cluster's cloud
//! ([`kemu_shared::TokenAuthenticator`]), else `system:anonymous`; then the
//! `Impersonate-*` headers; then the engine's authorizer ([`crate::authz`])
//! over the cluster's RBAC objects, whose 403 ends the request.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError, web};
use kemu_shared::UserInfo;

use crate::authz::impersonation::{self, Refusal};
use crate::authz::{self, Authorizer, Forbidden, Layered, StoreSource};
use crate::cloud_identity::{self, CloudGrants};
use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;
use crate::identity::PeerIdentity;

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";

/// Authenticates and authorizes the request, and records the [`UserInfo`] it
/// is served as (after impersonation) in its extensions.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match identify(&req).and_then(|user| authorize(&req, user)) {
        Ok(Ok((user, grants))) => {
            req.extensions_mut().insert(user);
            req.extensions_mut().insert(grants);
            next.call(req)
                .await
                .map(ServiceResponse::map_into_left_body)
        }
        Ok(Err(forbidden)) => {
            let status = forbidden.status();
            let mut res = crate::api::wire::respond(HttpResponse::Forbidden(), &status);
            crate::error::mark(&mut res, &status);
            Ok(req.into_response(res).map_into_right_body())
        }
        Err(err) => Ok(req
            .into_response(err.error_response())
            .map_into_right_body()),
    }
}

/// Impersonation, then the authorizer over the store's RBAC objects and the
/// cloud's virtual grants to the caller: the user to serve the request as
/// (with those grants), or the 403 to answer.
fn authorize(
    req: &ServiceRequest,
    caller: UserInfo,
) -> Result<Result<(UserInfo, CloudGrants), Forbidden>, ApiError> {
    let (engine, cluster) = mounted(req)?;
    let store = engine
        .store(&cluster.id)
        .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
    let record = engine.registry().get(&cluster.id).ok();
    let grants = match &record {
        Some(record) => cloud_identity::grants(engine.registry(), record, &caller),
        None => CloudGrants::default(),
    };
    let own = StoreSource(store.as_ref());
    let source = Layered(vec![&own, &grants.0]);
    let mode = engine.authorization();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("impersonate-"))
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let user = match impersonation::impersonate(&Authorizer::new(mode, &source), &caller, &headers)
    {
        Ok(Some(user)) => user,
        Ok(None) => caller,
        Err(Refusal::BadRequest(message)) => return Err(ApiError::BadRequest(message)),
        Err(Refusal::Forbidden(forbidden)) => return Ok(Err(forbidden)),
    };
    let (method, path, query) = (req.method().as_str(), req.path(), req.query_string());
    // A WebSocket stream is a GET, but it creates as much as the POST a
    // SPDY client sends: upstream (AuthorizePodWebsocketUpgradeCreatePermission,
    // on since 1.31) asks for `create` as well.
    let websocket =
        crate::api::request::header(req.request(), "upgrade").eq_ignore_ascii_case("websocket");
    Ok(
        authz::check_request(mode, &source, user.clone(), method, path, query)
            .and_then(|a| {
                let stream = a.verb == "get"
                    && a.api_group.is_empty()
                    && a.resource == "pods"
                    && matches!(a.subresource.as_str(), "exec" | "attach" | "portforward");
                match websocket && stream {
                    true => authz::check_request(mode, &source, user.clone(), "POST", path, query),
                    false => Ok(a),
                }
            })
            .map(|_| (user.clone(), grants))
            .map_err(|rbac| match &record {
                Some(record) => {
                    let attributes = authz::from_request(user, method, path, query);
                    cloud_identity::denial(record, &attributes, rbac)
                }
                None => rbac,
            }),
    )
}

/// The cluster user a principal the cluster's cloud authenticated maps to
/// (in `system:authenticated`), or no one.
pub fn cloud_user(
    engine: &Engine,
    record: &kemu_shared::ClusterRecord,
    store: &dyn crate::store::Store,
    mut principal: UserInfo,
) -> Option<UserInfo> {
    if !principal.groups.iter().any(|g| g == AUTHENTICATED) {
        principal.groups.push(AUTHENTICATED.to_owned());
    }
    cloud_identity::map_user(engine.registry(), record, store, principal)
}

/// A user as `authentication.k8s.io/v1` `UserInfo` writes it (what
/// SelfSubjectReview and TokenReview answer): uid and extra only when set.
pub fn user_info_json(user: &UserInfo) -> serde_json::Value {
    let mut info = serde_json::json!({ "username": user.username, "groups": user.groups });
    if !user.uid.is_empty() {
        info["uid"] = serde_json::json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = serde_json::json!(user.extra);
    }
    info
}

fn mounted(
    req: &ServiceRequest,
) -> Result<(&web::Data<Engine>, &web::Data<ClusterContext>), ApiError> {
    match (
        req.app_data::<web::Data<Engine>>(),
        req.app_data::<web::Data<ClusterContext>>(),
    ) {
        (Some(engine), Some(cluster)) => Ok((engine, cluster)),
        _ => Err(ApiError::Internal("engine not mounted".into())),
    }
}

fn identify(req: &ServiceRequest) -> Result<UserInfo, ApiError> {
    // The cluster whose CA refused the client certificate, if one did.
    let mut refused_by = None;
    if let Some(peer) = req.conn_data::<PeerIdentity>()
        && let Some(user) = &peer.user
    {
        let (engine, cluster) = mounted(req)?;
        let record = engine
            .registry()
            .get(&cluster.id)
            .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))?;
        let now = engine.registry().clock().now();
        if !record.ca.verifies_client_cert(&peer.certificate, now) {
            // Not this cluster's: a bearer token may still authenticate,
            // but the caller is never anonymous.
            tracing::info!(cluster = %record.name, %user, "client certificate rejected");
            refused_by = Some(record);
        }
    }
    if let Some(peer) = req.conn_data::<PeerIdentity>()
        && let Some(user) = &peer.user
        && refused_by.is_none()
    {
        let mut groups = peer.groups.clone();
        groups.push(AUTHENTICATED.to_owned());
        // As upstream's x509 authenticator: the certificate's fingerprint.
        let digest = ring::digest::digest(&ring::digest::SHA256, &peer.certificate);
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let extra = [(
            "authentication.kubernetes.io/credential-id".to_owned(),
            vec![format!("X509SHA256={hex}")],
        )]
        .into();
        return Ok(UserInfo {
            username: user.clone(),
            groups,
            extra,
            ..UserInfo::default()
        });
    }
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(token) = bearer else {
        if let Some(record) = refused_by {
            return Err(ApiError::UnauthorizedBecause(format!(
                "the client certificate was not issued by cluster {}'s CA (a kubeconfig from before a reset, or for another cluster?): get a fresh one with {}",
                record.name,
                kemu_shared::kubeconfig::refresh_command(&record)
            )));
        }
        return Ok(UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..UserInfo::default()
        });
    };
    let (engine, cluster) = mounted(req)?;
    let record = engine
        .registry()
        .get(&cluster.id)
        .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))?;
    if let Some(store) = engine.store(&cluster.id) {
        let now = engine.registry().clock().now();
        match crate::sa_token::authenticate(
            &record,
            store.as_ref(),
            engine.verified_tokens(),
            token,
            now,
        ) {
            Some(Ok(user)) => return Ok(user),
            Some(Err(reason)) => {
                tracing::info!(cluster = %record.name, %reason, "service account token rejected");
                return Err(match issuing_cluster(engine, &record, token, now) {
                    Some(other) => ApiError::UnauthorizedBecause(format!(
                        "this ServiceAccount token was issued by cluster {other}, not {}: use a token of this cluster's (kubectl create token)",
                        record.name
                    )),
                    None => ApiError::Unauthorized,
                });
            }
            None => {}
        }
    }
    match engine.registry().authenticate_token(&record, token) {
        Ok(Some(principal)) => {
            let store = engine
                .store(&cluster.id)
                .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
            cloud_user(engine, &record, store.as_ref(), principal).ok_or(ApiError::Unauthorized)
        }
        Ok(None) => Err(ApiError::Unauthorized),
        Err(reason) => {
            tracing::info!(cluster = %record.name, %reason, "token rejected");
            Err(ApiError::UnauthorizedBecause(reason))
        }
    }
}

/// The name of the other cluster whose ServiceAccount issued `token`, if one
/// did (looked for only once the token failed here).
fn issuing_cluster(
    engine: &crate::engine::Engine,
    record: &kemu_shared::ClusterRecord,
    token: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    engine
        .registry()
        .list(|c| c.id != record.id)
        .into_iter()
        .find(|c| {
            engine.store(&c.id).is_some_and(|store| {
                matches!(
                    crate::sa_token::authenticate(
                        c,
                        store.as_ref(),
                        engine.verified_tokens(),
                        token,
                        now,
                    ),
                    Some(Ok(_))
                )
            })
        })
        .map(|c| c.name)
}
