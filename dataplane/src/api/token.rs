//! `serviceaccounts/token` (TokenRequest): a JWT for the ServiceAccount,
//! signed with the cluster's key ([`crate::sa_token`]), for the audiences
//! asked (the API audiences by default), expiring `expirationSeconds` after
//! now on the clock, optionally bound to a Pod or Secret of its namespace.

use actix_web::HttpResponse;
use serde_json::{Value, json};

use crate::api::subresources::{self, Ctx, SubresourceError};
use crate::api::wire;
use crate::controllers::obj;
use crate::error::{ApiError, Cause, Target};
use crate::sa_token;
use crate::store::ObjectKey;

/// `expirationSeconds` when the request leaves it out.
const DEFAULT_EXPIRATION: i64 = 3600;
/// The shortest token upstream issues.
const MIN_EXPIRATION: i64 = 600;

fn invalid(name: &str, message: String) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: name.to_owned(),
            group: "authentication.k8s.io".into(),
            kind: "serviceaccounts/token".into(),
        },
        kind: "TokenRequest.authentication.k8s.io".into(),
        causes: vec![Cause {
            reason: "FieldValueInvalid".into(),
            message,
            field: "spec.expirationSeconds".into(),
        }],
    }
}

/// POST `serviceaccounts/{name}/token`.
pub fn serve(
    ctx: &Ctx,
    method: &str,
    body: Result<Value, ApiError>,
) -> Result<HttpResponse, SubresourceError> {
    let mut req = subresources::post_body(method, body)?;
    crate::api::validation::check_sub_type_meta(
        &req,
        "TokenRequest",
        "authentication.k8s.io",
        &["authentication.k8s.io/v1"],
    )?;
    let name = ctx.scope.name.clone().unwrap_or_default();
    let ns = ctx.scope.namespace.clone().unwrap_or_default();
    let expiration = match &req["spec"]["expirationSeconds"] {
        Value::Null => DEFAULT_EXPIRATION,
        v => v.as_i64().ok_or_else(|| {
            ApiError::BadRequest("spec.expirationSeconds must be an integer".into())
        })?,
    };
    if expiration < MIN_EXPIRATION {
        return Err(invalid(
            &name,
            format!("Invalid value: {expiration}: may not specify a duration less than 10 minutes"),
        )
        .into());
    }
    if expiration > 1 << 32 {
        return Err(invalid(
            &name,
            format!(
                "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
            ),
        )
        .into());
    }
    let sa = ctx.object()?;
    let bound_ref = req["spec"]["boundObjectRef"].clone();
    let bound = if bound_ref.is_null() {
        None
    } else {
        let kind = bound_ref["kind"].as_str().unwrap_or_default().to_owned();
        let api_version = bound_ref["apiVersion"].as_str().unwrap_or("v1");
        let resource = match (api_version, kind.as_str()) {
            ("v1", "Pod") => "pods",
            ("v1", "Secret") => "secrets",
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "cannot bind token for serviceaccount \"{name}\" to object of type {}, Kind={kind}",
                    if api_version == "v1" { "/v1".to_owned() } else { api_version.to_owned() }
                ))
                .into());
            }
        };
        let bname = bound_ref["name"].as_str().unwrap_or_default();
        let object = ctx
            .store
            .get(&ObjectKey::new(resource, &ns, bname))
            .ok_or_else(|| {
                ApiError::ObjectNotFound(Target {
                    name: bname.to_owned(),
                    group: String::new(),
                    kind: resource.to_owned(),
                })
            })?;
        if let Some(uid) = bound_ref["uid"].as_str().filter(|u| !u.is_empty())
            && uid != obj::uid(&object)
        {
            return Err(ApiError::Conflict {
                target: Target {
                    name: bname.to_owned(),
                    group: String::new(),
                    kind: kind.clone(),
                },
                message: format!("the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"),
            }
            .into());
        }
        Some((kind, object))
    };
    let audiences: Vec<String> = req["spec"]["audiences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let audiences = if audiences.is_empty() {
        sa_token::api_audiences(&ctx.record)
    } else {
        audiences
    };
    let now = ctx.now();
    let request = sa_token::Request {
        service_account: &sa,
        audiences: audiences.clone(),
        expiration_seconds: expiration,
        bound: bound.as_ref().map(|(k, o)| (k.as_str(), &**o)),
    };
    let claims = sa_token::claims(&ctx.record, &request, now);
    let token = ctx
        .record
        .sa_key
        .sign_jwt(&claims)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some((_, object)) = &bound {
        req["spec"]["boundObjectRef"]["uid"] = object["metadata"]["uid"].clone();
    }
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    req["metadata"] = json!({ "name": name, "namespace": ns, "creationTimestamp": null });
    req["spec"]["audiences"] = json!(audiences);
    req["spec"]["expirationSeconds"] = json!(expiration);
    req["status"] = json!({
        "token": token,
        "expirationTimestamp": obj::fmt_time(obj::after_secs(now, expiration)),
    });
    Ok(wire::respond(HttpResponse::Created(), &req))
}
