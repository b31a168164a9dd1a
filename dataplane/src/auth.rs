//! Authentication of every request to a cluster, as kube-apiserver does it:
//! a verified client certificate (CN user, O groups), else a bearer token
//! checked by the cluster's cloud ([`kemu_shared::TokenAuthenticator`]), else
//! `system:anonymous`. Anonymous callers reach only what upstream's
//! `system:public-info-viewer` role allows; authorization proper (RBAC) comes
//! later and will replace [`anonymous_allowed`].

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use kemu_shared::UserInfo;

use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;
use crate::identity::PeerIdentity;

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";

/// Authenticates the request and records the [`UserInfo`] in its extensions.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match identify(&req) {
        Ok(user) => {
            if is_anonymous(&user) && !anonymous_allowed(req.path()) {
                let err = ApiError::Forbidden(format!(
                    "forbidden: User \"system:anonymous\" cannot {} path \"{}\"",
                    req.method().as_str().to_ascii_lowercase(),
                    req.path()
                ));
                return Ok(req
                    .into_response(err.error_response())
                    .map_into_right_body());
            }
            req.extensions_mut().insert(user);
            next.call(req)
                .await
                .map(ServiceResponse::map_into_left_body)
        }
        Err(err) => Ok(req
            .into_response(err.error_response())
            .map_into_right_body()),
    }
}

fn identify(req: &ServiceRequest) -> Result<UserInfo, ApiError> {
    if let Some(peer) = req.conn_data::<PeerIdentity>()
        && let Some(user) = &peer.user
    {
        let mut groups = peer.groups.clone();
        groups.push(AUTHENTICATED.to_owned());
        return Ok(UserInfo {
            username: user.clone(),
            groups,
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
        return Ok(UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..UserInfo::default()
        });
    };
    let (engine, cluster) = (
        req.app_data::<web::Data<Engine>>(),
        req.app_data::<web::Data<ClusterContext>>(),
    );
    let (Some(engine), Some(cluster)) = (engine, cluster) else {
        return Err(ApiError::Internal("engine not mounted".into()));
    };
    let record = engine
        .registry()
        .get(&cluster.id)
        .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))?;
    match engine.registry().authenticate_token(&record, token) {
        Ok(Some(mut user)) => {
            if !user.groups.iter().any(|g| g == AUTHENTICATED) {
                user.groups.push(AUTHENTICATED.to_owned());
            }
            Ok(user)
        }
        Ok(None) => Err(ApiError::Unauthorized),
        Err(reason) => {
            tracing::info!(cluster = %record.name, %reason, "token rejected");
            Err(ApiError::Unauthorized)
        }
    }
}

fn is_anonymous(user: &UserInfo) -> bool {
    user.username == "system:anonymous"
}

/// What upstream's `system:public-info-viewer` grants to anyone.
pub fn anonymous_allowed(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
    ) || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}
