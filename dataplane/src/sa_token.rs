//! ServiceAccount JWTs, as kube-apiserver issues and checks them: TokenRequest
//! tokens (bound, audience-scoped, expiring on the clock) and legacy Secret
//! tokens (issuer `kubernetes/serviceaccount`, valid while their Secret is),
//! both signed with the cluster's [`ServiceAccountKey`](kemu_shared::ServiceAccountKey).

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use dashmap::DashMap;
use kemu_shared::sentinel::advertise;
use kemu_shared::{Cloud, ClusterRecord, OwnerScope, ServiceAccountKey, UserInfo};
use serde_json::{Value, json};
use thiserror::Error;

use crate::store::{ObjectKey, Store};

/// The issuer of legacy Secret tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The Secret type the tokens controller fills.
pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// How far past `exp` (and before `nbf`) a token is still accepted, as
/// upstream's JWT validation allows.
const LEEWAY_SECONDS: i64 = 60;

/// How long a verified signature is remembered: kube-apiserver's
/// `TokenSuccessCacheTTL`.
const VERIFIED_FOR: TimeDelta = TimeDelta::seconds(10);
/// Tokens remembered before expired ones are swept (upstream's cache holds
/// 32 stripes for 5,000 nodes and 10,000 namespaces).
const VERIFIED_MAX: usize = 32_768;

/// The tokens whose signatures verified in the last 10 s on the clock, so a
/// token used again costs a hash instead of an ECDSA verification, as
/// kube-apiserver caches successful token authentications that long. Unlike
/// upstream's, only the signature is remembered: expiry, audiences and the
/// objects a token names are checked on every request, so a deleted
/// ServiceAccount or Pod ends its tokens at once.
#[derive(Debug, Default)]
pub struct VerifiedTokens {
    /// SHA-256 of (key id, token) → the claims and until when they are kept.
    entries: DashMap<[u8; 32], (Arc<Value>, DateTime<Utc>)>,
}

impl VerifiedTokens {
    /// The claims of `token` if `key` signed it, from memory when it was
    /// verified in the last 10 s.
    pub fn verify(
        &self,
        key: &ServiceAccountKey,
        token: &str,
        now: DateTime<Utc>,
    ) -> Option<Arc<Value>> {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(key.kid().as_bytes());
        ctx.update(&[0]);
        ctx.update(token.as_bytes());
        let mut id = [0u8; 32];
        id.copy_from_slice(ctx.finish().as_ref());
        if let Some(hit) = self.entries.get(&id)
            && hit.1 > now
        {
            return Some(hit.0.clone());
        }
        let claims = Arc::new(key.verify_jwt(token)?);
        if self.entries.len() >= VERIFIED_MAX {
            self.entries.retain(|_, (_, until)| *until > now);
            if self.entries.len() >= VERIFIED_MAX {
                self.entries.clear();
            }
        }
        self.entries
            .insert(id, (claims.clone(), now + VERIFIED_FOR));
        Some(claims)
    }

    /// How many tokens are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why a ServiceAccount token was refused (logged; the caller sees 401).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TokenError {
    /// The signature does not verify with the cluster's key.
    #[error("invalid signature")]
    Signature,
    /// `exp` is past (beyond the leeway).
    #[error("service account token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("service account token is not valid yet")]
    NotYetValid,
    /// No audience of the token is one the API server accepts.
    #[error("token audiences {0:?} is invalid for the target audiences {1:?}")]
    Audience(Vec<String>, Vec<String>),
    /// A claim is missing or malformed.
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    /// The ServiceAccount, or the object the token is bound to, is gone or
    /// was recreated.
    #[error("{0}")]
    Invalidated(String),
}

/// The issuer (`iss`) of a cluster's TokenRequest tokens, as its cloud
/// names it: EKS's OIDC issuer, GKE's cluster URL, else the in-cluster name.
pub fn issuer(record: &ClusterRecord) -> String {
    if let Some(iss) = record.extra["identity"]["oidc"]["issuer"].as_str() {
        return iss.to_owned();
    }
    if let Some(iss) = record.extra["properties"]["oidcIssuerProfile"]["issuerURL"].as_str() {
        return iss.to_owned();
    }
    match (&record.scope, record.cloud()) {
        (OwnerScope::Gke { project, location }, Cloud::Gke) => format!(
            "https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{}",
            record.name
        ),
        _ => "https://kubernetes.default.svc.cluster.local".into(),
    }
}

/// The audiences the API server accepts (`--api-audiences`, which defaults to
/// the issuer).
pub fn api_audiences(record: &ClusterRecord) -> Vec<String> {
    vec![issuer(record)]
}

/// Where the cluster publishes its keys: its API endpoint's `/openid/v1/jwks`.
pub fn jwks_uri(record: &ClusterRecord) -> String {
    let server = advertise(record).server_url().unwrap_or_default();
    format!("{server}/openid/v1/jwks")
}

/// What a TokenRequest asks for.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The ServiceAccount.
    pub service_account: &'a Value,
    /// `spec.audiences` (the API audiences when empty).
    pub audiences: Vec<String>,
    /// `spec.expirationSeconds`.
    pub expiration_seconds: i64,
    /// The bound object (kind and the object itself), if any.
    pub bound: Option<(&'a str, &'a Value)>,
}

/// The claims of a TokenRequest token, as upstream's `claims.go` builds them.
pub fn claims(record: &ClusterRecord, req: &Request<'_>, now: DateTime<Utc>) -> Value {
    let sa = req.service_account;
    let ns = sa["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = sa["metadata"]["name"].as_str().unwrap_or_default();
    let audiences = if req.audiences.is_empty() {
        api_audiences(record)
    } else {
        req.audiences.clone()
    };
    let mut k8s = json!({
        "namespace": ns,
        "serviceaccount": { "name": name, "uid": sa["metadata"]["uid"] },
    });
    if let Some((kind, object)) = req.bound {
        let field = kind.to_ascii_lowercase();
        k8s[field.as_str()] =
            json!({ "name": object["metadata"]["name"], "uid": object["metadata"]["uid"] });
    }
    let iat = now.timestamp();
    json!({
        "aud": audiences,
        "exp": iat + req.expiration_seconds,
        "iat": iat,
        "iss": issuer(record),
        "jti": uuid::Uuid::new_v4().to_string(),
        "kubernetes.io": k8s,
        "nbf": iat,
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    })
}

/// The claims of a legacy Secret token (no expiry, no audience).
pub fn legacy_claims(sa: &Value, secret: &Value) -> Value {
    let ns = sa["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = sa["metadata"]["name"].as_str().unwrap_or_default();
    json!({
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": ns,
        "kubernetes.io/serviceaccount/secret.name": secret["metadata"]["name"],
        "kubernetes.io/serviceaccount/service-account.name": name,
        "kubernetes.io/serviceaccount/service-account.uid": sa["metadata"]["uid"],
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    })
}

/// Checks a bearer token that may be a ServiceAccount JWT of this cluster:
/// `None` when it is not one (another authenticator may know it), else the
/// user or why it is refused.
pub fn authenticate(
    record: &ClusterRecord,
    store: &dyn Store,
    verified: &VerifiedTokens,
    token: &str,
    now: DateTime<Utc>,
) -> Option<Result<UserInfo, TokenError>> {
    authenticate_for(record, store, verified, token, now, &api_audiences(record))
}

/// [`authenticate`] for the audiences a TokenReview asks about: a bound
/// token must name one of `audiences`.
pub fn authenticate_for(
    record: &ClusterRecord,
    store: &dyn Store,
    verified: &VerifiedTokens,
    token: &str,
    now: DateTime<Utc>,
    audiences: &[String],
) -> Option<Result<UserInfo, TokenError>> {
    let peeked = kemu_shared::sa_key::peek_claims(token)?;
    let iss = peeked["iss"].as_str()?;
    let ours = issuer(record);
    if iss != ours && iss != LEGACY_ISSUER {
        return None;
    }
    let Some(claims) = verified.verify(&record.sa_key, token, now) else {
        return Some(Err(TokenError::Signature));
    };
    Some(if iss == LEGACY_ISSUER {
        check_legacy(store, &claims, token)
    } else {
        check_bound(store, &claims, now, audiences)
    })
}

fn str_claim<'a>(v: &'a Value, what: &'static str) -> Result<&'a str, TokenError> {
    v.as_str()
        .filter(|s| !s.is_empty())
        .ok_or(TokenError::Malformed(what))
}

fn check_bound(
    store: &dyn Store,
    claims: &Value,
    now: DateTime<Utc>,
    accepted: &[String],
) -> Result<UserInfo, TokenError> {
    let now = now.timestamp();
    let exp = claims["exp"].as_i64().ok_or(TokenError::Malformed("exp"))?;
    if now > exp + LEEWAY_SECONDS {
        return Err(TokenError::Expired);
    }
    if claims["nbf"]
        .as_i64()
        .is_some_and(|nbf| now + LEEWAY_SECONDS < nbf)
    {
        return Err(TokenError::NotYetValid);
    }
    let token_auds: Vec<String> = match &claims["aud"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if !token_auds.iter().any(|a| accepted.contains(a)) {
        return Err(TokenError::Audience(token_auds, accepted.to_vec()));
    }
    let k8s = &claims["kubernetes.io"];
    let ns = str_claim(&k8s["namespace"], "namespace")?;
    let sa_name = str_claim(&k8s["serviceaccount"]["name"], "serviceaccount name")?;
    let sa_uid = str_claim(&k8s["serviceaccount"]["uid"], "serviceaccount uid")?;
    live(store, "serviceaccounts", ns, sa_name, sa_uid)?;
    let mut extra = std::collections::BTreeMap::new();
    for (kind, resource) in [("pod", "pods"), ("secret", "secrets")] {
        let bound = &k8s[kind];
        if bound.is_null() {
            continue;
        }
        let name = str_claim(&bound["name"], "bound object name")?;
        let uid = str_claim(&bound["uid"], "bound object uid")?;
        let object = live(store, resource, ns, name, uid)?;
        if kind == "pod" {
            if object["metadata"]["deletionTimestamp"].is_string() {
                return Err(TokenError::Invalidated(format!(
                    "pod \"{name}\" is being deleted"
                )));
            }
            extra.insert(
                "authentication.kubernetes.io/pod-name".to_owned(),
                vec![name.to_owned()],
            );
            extra.insert(
                "authentication.kubernetes.io/pod-uid".to_owned(),
                vec![uid.to_owned()],
            );
            if let Some(node) = object["spec"]["nodeName"].as_str() {
                extra.insert(
                    "authentication.kubernetes.io/node-name".to_owned(),
                    vec![node.to_owned()],
                );
            }
        }
    }
    if let Some(jti) = claims["jti"].as_str() {
        extra.insert(
            "authentication.kubernetes.io/credential-id".to_owned(),
            vec![format!("JTI={jti}")],
        );
    }
    Ok(user(ns, sa_name, sa_uid, extra))
}

fn check_legacy(store: &dyn Store, claims: &Value, token: &str) -> Result<UserInfo, TokenError> {
    let ns = str_claim(
        &claims["kubernetes.io/serviceaccount/namespace"],
        "namespace",
    )?;
    let secret_name = str_claim(
        &claims["kubernetes.io/serviceaccount/secret.name"],
        "secret name",
    )?;
    let sa_name = str_claim(
        &claims["kubernetes.io/serviceaccount/service-account.name"],
        "serviceaccount name",
    )?;
    let sa_uid = str_claim(
        &claims["kubernetes.io/serviceaccount/service-account.uid"],
        "serviceaccount uid",
    )?;
    let secret = store
        .get(&ObjectKey::new("secrets", ns, secret_name))
        .ok_or_else(|| {
            TokenError::Invalidated(format!("secret \"{ns}/{secret_name}\" not found"))
        })?;
    if secret["metadata"]["deletionTimestamp"].is_string() {
        return Err(TokenError::Invalidated(format!(
            "secret \"{ns}/{secret_name}\" is being deleted"
        )));
    }
    // The Secret must still hold this very token (upstream: "token does not
    // match the secret", e.g. after it was regenerated).
    use base64::Engine as _;
    let held = secret["data"]["token"]
        .as_str()
        .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
    if held.as_deref() != Some(token.as_bytes()) {
        return Err(TokenError::Invalidated(format!(
            "token does not match secret \"{ns}/{secret_name}\""
        )));
    }
    if secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] != sa_uid {
        return Err(TokenError::Invalidated(format!(
            "secret \"{ns}/{secret_name}\" belongs to another service account"
        )));
    }
    live(store, "serviceaccounts", ns, sa_name, sa_uid)?;
    let extra = std::iter::once((
        "authentication.kubernetes.io/credential-id".to_owned(),
        vec![format!("secret:{secret_name}")],
    ))
    .collect();
    Ok(user(ns, sa_name, sa_uid, extra))
}

/// The object, if it still exists with `uid` and is not being deleted.
fn live(
    store: &dyn Store,
    resource: &str,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<std::sync::Arc<Value>, TokenError> {
    let object = store
        .get(&ObjectKey::new(resource, ns, name))
        .ok_or_else(|| TokenError::Invalidated(format!("{resource} \"{ns}/{name}\" not found")))?;
    if object["metadata"]["uid"] != uid {
        return Err(TokenError::Invalidated(format!(
            "{resource} \"{ns}/{name}\" has been recreated (uid {} is not {uid})",
            object["metadata"]["uid"].as_str().unwrap_or_default()
        )));
    }
    if resource == "serviceaccounts" && object["metadata"]["deletionTimestamp"].is_string() {
        return Err(TokenError::Invalidated(format!(
            "service account \"{ns}/{name}\" is being deleted"
        )));
    }
    Ok(object)
}

/// The user a ServiceAccount authenticates as, with upstream's groups.
fn user(
    ns: &str,
    name: &str,
    uid: &str,
    extra: std::collections::BTreeMap<String, Vec<String>>,
) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{ns}:{name}"),
        uid: uid.to_owned(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            crate::auth::AUTHENTICATED.into(),
        ],
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use kemu_shared::{Clock, ClusterRegistry, ClusterSpec, FakeClock};

    fn new_record(clock: &std::sync::Arc<FakeClock>) -> ClusterRecord {
        ClusterRegistry::new(clock.clone())
            .create(ClusterSpec {
                scope: OwnerScope::Gke {
                    project: "p".into(),
                    location: "l".into(),
                },
                name: "c".into(),
                version: "1.34".into(),
                node_pools: vec![],
                tags: Default::default(),
                provisioning: std::time::Duration::ZERO,
                extra: Value::Null,
            })
            .unwrap()
    }

    #[test]
    fn the_issuer_is_the_clouds() {
        let clock = FakeClock::at_epoch();
        let mut record = new_record(&clock);
        assert_eq!(
            issuer(&record),
            "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c"
        );
        record.extra = json!({"identity": {"oidc": {"issuer": "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"}}});
        assert_eq!(
            issuer(&record),
            "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
        );
        assert_eq!(api_audiences(&record), vec![issuer(&record)]);
    }

    #[test]
    fn bound_tokens_check_audience_expiry_and_the_service_account() {
        let clock = FakeClock::at_epoch();
        let record = new_record(&clock);
        let store = MemoryStore::new(clock.clone(), Default::default());
        let sa = store
            .create(
                &ObjectKey::new("serviceaccounts", "default", "ci"),
                json!({"metadata": {"name": "ci", "namespace": "default"}}),
            )
            .unwrap();
        let req = Request {
            service_account: &sa,
            audiences: vec![],
            expiration_seconds: 600,
            bound: None,
        };
        let token = record
            .sa_key
            .sign_jwt(&claims(&record, &req, clock.now()))
            .unwrap();
        let verified = VerifiedTokens::default();
        let user = authenticate(&record, &store, &verified, &token, clock.now())
            .unwrap()
            .unwrap();
        assert_eq!(user.username, "system:serviceaccount:default:ci");
        assert!(
            user.groups
                .contains(&"system:serviceaccounts:default".to_owned())
        );
        // A foreign audience is refused.
        let other = Request {
            audiences: vec!["vault".into()],
            ..req.clone()
        };
        let t = record
            .sa_key
            .sign_jwt(&claims(&record, &other, clock.now()))
            .unwrap();
        assert!(matches!(
            authenticate(&record, &store, &verified, &t, clock.now()),
            Some(Err(TokenError::Audience(..)))
        ));
        // Expired once the clock passes exp plus the leeway.
        clock.advance(std::time::Duration::from_secs(661));
        assert_eq!(
            authenticate(&record, &store, &verified, &token, clock.now()),
            Some(Err(TokenError::Expired))
        );
        // Signed by another cluster's key for the same issuer: refused.
        let foreign = new_record(&clock);
        let t = foreign
            .sa_key
            .sign_jwt(&claims(&foreign, &req, clock.now()))
            .unwrap();
        assert_eq!(
            authenticate(&record, &store, &verified, &t, clock.now()),
            Some(Err(TokenError::Signature))
        );
        // Not a JWT at all: someone else's token.
        assert!(authenticate(&record, &store, &verified, "k8s-aws-v1.abc", clock.now()).is_none());
    }

    #[test]
    fn a_remembered_signature_still_needs_its_service_account() {
        let clock = FakeClock::at_epoch();
        let record = new_record(&clock);
        let store = MemoryStore::new(clock.clone(), Default::default());
        let key = ObjectKey::new("serviceaccounts", "default", "ci");
        let sa = store
            .create(
                &key,
                json!({"metadata": {"name": "ci", "namespace": "default"}}),
            )
            .unwrap();
        let req = Request {
            service_account: &sa,
            audiences: vec![],
            expiration_seconds: 3600,
            bound: None,
        };
        let token = record
            .sa_key
            .sign_jwt(&claims(&record, &req, clock.now()))
            .unwrap();
        let verified = VerifiedTokens::default();
        for _ in 0..3 {
            assert!(matches!(
                authenticate(&record, &store, &verified, &token, clock.now()),
                Some(Ok(_))
            ));
        }
        assert_eq!(verified.len(), 1, "one verification remembered");
        // Kept 10 s on the clock, then verified again.
        clock.advance(std::time::Duration::from_secs(11));
        assert!(
            verified
                .verify(&record.sa_key, &token, clock.now())
                .is_some()
        );
        assert_eq!(verified.len(), 1);
        // A wrong signature is never remembered.
        let forged = format!("{}x", &token[..token.len() - 1]);
        assert!(
            verified
                .verify(&record.sa_key, &forged, clock.now())
                .is_none()
        );
        assert_eq!(verified.len(), 1);
        // The ServiceAccount deleted: refused at once, remembered or not.
        store
            .delete(&key, &crate::store::Preconditions::default())
            .unwrap();
        assert!(matches!(
            authenticate(&record, &store, &verified, &token, clock.now()),
            Some(Err(TokenError::Invalidated(_)))
        ));
    }
}
