//! Cloud metadata and Azure AD: the endpoints `az cloud register`, `az login`,
//! MSAL, azure-identity and terraform call before any ARM request, and the
//! subscription and tenant lists.
//!
//! Access tokens are JWTs with the claims terraform parses (`aud`, `iss`,
//! `tid`, `oid`, `appid`, `exp`). They are not signed with a published key:
//! no client of kemu verifies ARM tokens, and ARM only reads their expiry.

use std::collections::HashMap;

use actix_web::HttpResponse;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::{Aks, Error};

/// The audience ARM tokens are asked for (`az` asks `…windows.net//.default`).
pub const ARM_AUDIENCE: &str = "https://management.core.windows.net/";
/// The Microsoft Graph resource terraform asks a token for.
pub const GRAPH_RESOURCE: &str = "https://graph.microsoft.com/";

/// `GET /metadata/endpoints`. API versions before 2022-09-01 (e.g. the
/// 2019-05-01 of `ARM_CLOUD_METADATA_URL`) answer the list of clouds; later
/// ones, or none, the one cloud object (`az cloud register`, terraform's
/// `metadata_host`).
pub fn metadata(base: &str, api_version: &str) -> HttpResponse {
    let cloud = json!({
        "name": "kemu",
        "portal": base,
        "authentication": {
            "loginEndpoint": format!("{base}/"),
            "audiences": [ARM_AUDIENCE, "https://management.azure.com/"],
            "tenant": "common",
            "identityProvider": "AAD",
        },
        "media": format!("{base}/"),
        "graphAudience": "https://graph.windows.net/",
        "graph": format!("{base}/"),
        "resourceManager": format!("{base}/"),
        "microsoftGraphResourceId": GRAPH_RESOURCE,
        "appInsightsResourceId": "https://api.applicationinsights.io",
        "appInsightsTelemetryChannelResourceId": "https://dc.applicationinsights.azure.com/v2/track",
        "attestationResourceId": "https://attest.azure.net",
        "synapseAnalyticsResourceId": "https://dev.azuresynapse.net",
        "logAnalyticsResourceId": "https://api.loganalytics.io",
        "ossrDbmsResourceId": "https://ossrdbms-aad.database.windows.net",
        "batch": "https://batch.core.windows.net/",
        "gallery": format!("{base}/"),
        "sqlManagement": format!("{base}/"),
        "activeDirectoryDataLake": "https://datalake.azure.net/",
        "vmImageAliasDoc": format!("{base}/vmimagealiases"),
        "suffixes": {
            "acrLoginServer": "azurecr.io",
            "keyVaultDns": "vault.azure.net",
            "storage": "core.windows.net",
            "sqlServerHostname": "database.windows.net",
            "azureDataLakeStoreFileSystem": "azuredatalakestore.net",
            "azureDataLakeAnalyticsCatalogAndJob": "azuredatalakeanalytics.net",
            "mhsmDns": "managedhsm.azure.net",
            "azureFrontDoorEndpointSuffix": "azurefd.net",
            "attestationEndpoint": "attest.azure.net",
            "synapseAnalytics": "dev.azuresynapse.net",
        },
    });
    if !api_version.is_empty() && api_version < "2022-09-01" {
        HttpResponse::Ok().json(json!([cloud]))
    } else {
        HttpResponse::Ok().json(cloud)
    }
}

/// `GET /{tenant}[/v2.0]/.well-known/openid-configuration`: what MSAL needs to
/// find the token endpoint (it parses the tenant back out of it).
pub fn openid_configuration(aks: &Aks, base: &str, tenant: &str) -> HttpResponse {
    let tenant = aks.tenant_for(tenant);
    HttpResponse::Ok().json(json!({
        "issuer": format!("{base}/{tenant}/v2.0"),
        "authorization_endpoint": format!("{base}/{tenant}/oauth2/v2.0/authorize"),
        "token_endpoint": format!("{base}/{tenant}/oauth2/v2.0/token"),
        "device_authorization_endpoint": format!("{base}/{tenant}/oauth2/v2.0/devicecode"),
        "end_session_endpoint": format!("{base}/{tenant}/oauth2/v2.0/logout"),
        "jwks_uri": format!("{base}/{tenant}/discovery/v2.0/keys"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        "scopes_supported": ["openid", "profile", "email", "offline_access"],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "grant_types_supported": ["client_credentials"],
        "tenant_region_scope": "WW",
        "cloud_instance_name": "kemu",
    }))
}

/// `GET /{tenant}/discovery/v2.0/keys`: kemu publishes no signing keys.
pub fn signing_keys() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "keys": [] }))
}

/// `POST /{tenant}/oauth2[/v2.0]/token`: the client-credentials grant.
pub fn token(aks: &Aks, base: &str, tenant: &str, body: &[u8]) -> Result<HttpResponse, Error> {
    let form = parse_form(body);
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    let grant = field("grant_type");
    if grant != "client_credentials" {
        return Err(Error::UnsupportedGrantType(grant.to_owned()));
    }
    let tenant = aks.tenant_for(tenant);
    let client_id = field("client_id");
    let principals = &aks.config.service_principals;
    if !principals.is_empty() {
        match principals.get(client_id) {
            None => {
                return Err(Error::UnknownClient {
                    client_id: client_id.to_owned(),
                    tenant,
                });
            }
            Some(secret) if secret != field("client_secret") => {
                return Err(Error::InvalidClientSecret(client_id.to_owned()));
            }
            Some(_) => {}
        }
    }
    // v2 asks for `scope=<resource>/.default`, v1 for `resource=<resource>`.
    let audience = match (field("scope"), field("resource")) {
        (scope, _) if !scope.is_empty() => scope
            .split(' ')
            .find(|s| s.ends_with("/.default"))
            .map(|s| s.trim_end_matches(".default").to_owned())
            .unwrap_or_else(|| ARM_AUDIENCE.to_owned()),
        (_, resource) if !resource.is_empty() => resource.to_owned(),
        _ => ARM_AUDIENCE.to_owned(),
    };
    // `az` asks for `…windows.net//.default`: the audience keeps one slash;
    // an application id audience has none.
    let audience = audience.replace("//", "/").replacen(":/", "://", 1);
    let audience = match audience.strip_suffix('/') {
        Some(app_id) if !app_id.contains('/') => app_id.to_owned(),
        _ => audience,
    };
    let now = aks.registry.clock().now();
    let lifetime = aks.config.token_lifetime.as_secs() as i64;
    let oid = aks.object_id(client_id);
    let uti = uuid::Uuid::new_v4().simple().to_string();
    aks.state.issued.lock().insert(uti.clone());
    let claims = json!({
        "aud": audience,
        "iss": format!("{base}/{tenant}/v2.0"),
        "iat": now.timestamp(),
        "nbf": now.timestamp() - 300,
        "exp": now.timestamp() + lifetime,
        "appid": client_id,
        "azp": client_id,
        "appidacr": "1",
        "idp": format!("{base}/{tenant}/"),
        "idtyp": "app",
        "oid": oid,
        "sub": oid,
        "tid": tenant,
        "ver": "1.0",
        "uti": uti,
    });
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store, no-cache"))
        .json(json!({
            "token_type": "Bearer",
            "expires_in": lifetime,
            "ext_expires_in": lifetime,
            "access_token": jwt(&claims),
        })))
}

/// As ARM's front door: a call needs `Authorization: Bearer <token>` (401
/// `AuthenticationFailed` without one), and a kemu token must not have
/// expired on the clock. A token kemu cannot read passes: any AAD token
/// works offline.
pub fn check_bearer(authorization: Option<&str>, now: DateTime<Utc>) -> Result<(), Error> {
    let header = authorization.ok_or(Error::MissingAuthorization)?;
    let token = header
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(Error::InvalidAuthorizationHeader)?;
    let exp = claims(token).and_then(|c| c["exp"].as_i64());
    match exp.and_then(|e| DateTime::<Utc>::from_timestamp(e, 0)) {
        Some(exp) if exp <= now => Err(Error::ExpiredToken(
            exp.format("%m/%d/%Y %H:%M:%S").to_string(),
        )),
        _ => Ok(()),
    }
}

/// The claims of a JWT, if `token` is one.
pub fn claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

fn jwt(claims: &Value) -> String {
    let header = json!({ "typ": "JWT", "alg": "RS256", "kid": "kemu" });
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let signature = URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes());
    format!("{}.{}.{signature}", part(&header), part(claims))
}

/// `GET /tenants`.
pub fn tenants(aks: &Aks) -> HttpResponse {
    let t = &aks.config.tenant;
    HttpResponse::Ok().json(json!({ "value": [{
        "id": format!("/tenants/{t}"),
        "tenantId": t,
        "countryCode": "US",
        "displayName": "kemu",
        "domains": ["kemu.invalid"],
        "tenantCategory": "Home",
        "defaultDomain": "kemu.invalid",
        "tenantType": "AAD",
    }]}))
}

/// One subscription resource.
fn subscription(aks: &Aks, id: &str) -> Value {
    json!({
        "id": format!("/subscriptions/{id}"),
        "subscriptionId": id,
        "tenantId": aks.config.tenant,
        "displayName": aks.config.subscription_name,
        "state": "Enabled",
        "subscriptionPolicies": {
            "locationPlacementId": "Public_2014-09-01",
            "quotaId": "PayAsYouGo_2014-09-01",
            "spendingLimit": "Off",
        },
        "authorizationSource": "RoleBased",
        "managedByTenants": [],
    })
}

/// `GET /subscriptions`.
pub fn subscriptions(aks: &Aks) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "value": [subscription(aks, &aks.config.subscription)] }))
}

/// `GET /subscriptions/{id}`: any id is served, so SDK users may pick their own.
pub fn get_subscription(aks: &Aks, id: &str) -> HttpResponse {
    HttpResponse::Ok().json(subscription(aks, id))
}

/// `GET /subscriptions/{s}/providers/{ns}` and its `register`: every provider
/// is registered.
pub fn provider(subscription: &str, namespace: &str) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "id": format!("/subscriptions/{subscription}/providers/{namespace}"),
        "namespace": namespace,
        "registrationState": "Registered",
        "registrationPolicy": "RegistrationRequired",
        "resourceTypes": [],
    }))
}

/// The providers `GET /subscriptions/{s}/providers` lists as registered; any
/// other namespace registers at once when asked.
const REGISTERED: [&str; 6] = [
    "Microsoft.ContainerService",
    "Microsoft.Resources",
    "Microsoft.Compute",
    "Microsoft.Network",
    "Microsoft.ManagedIdentity",
    "Microsoft.Authorization",
];

/// `GET /subscriptions/{s}/providers`.
pub fn providers(subscription: &str) -> HttpResponse {
    let value: Vec<Value> = REGISTERED
        .iter()
        .map(|ns| {
            json!({
                "id": format!("/subscriptions/{subscription}/providers/{ns}"),
                "namespace": ns,
                "registrationState": "Registered",
                "registrationPolicy": "RegistrationRequired",
                "resourceTypes": [],
            })
        })
        .collect();
    HttpResponse::Ok().json(json!({ "value": value }))
}

/// `application/x-www-form-urlencoded` into a map.
fn parse_form(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (percent_decode(k), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_decoded() {
        let f = parse_form(
            b"scope=https%3A%2F%2Fmanagement.core.windows.net%2F%2F.default&a=b+c&bad=%zz&end=%4",
        );
        assert_eq!(f["scope"], "https://management.core.windows.net//.default");
        assert_eq!(f["a"], "b c");
        assert_eq!(f["bad"], "%zz");
        assert_eq!(f["end"], "%4");
    }
}
