//! The Azure AKS facade: Azure Resource Manager's `Microsoft.ContainerService`
//! over the shared cluster registry, with the cloud metadata and Azure AD
//! endpoints `az`, the Python SDK and terraform call first. Serve it over
//! HTTPS: `az`, azure-identity and terraform refuse plain HTTP.
//!
//! With kemu's CA trusted (`REQUESTS_CA_BUNDLE`) and MSAL's instance
//! discovery off (`AZURE_CORE_INSTANCE_DISCOVERY=false`), `az cloud register
//! -n kemu --endpoint-resource-manager https://HOST:PORT/`, `az cloud set -n
//! kemu` and `az login --service-principal -u ID -p SECRET --tenant T` log in;
//! `az aks create/get-credentials/…` then work as against Azure. The Python
//! SDK takes `ClientSecretCredential(T, ID, SECRET, authority=URL,
//! disable_instance_discovery=True)` and `base_url=URL`.
//!
//! # Layout
//!
//! - [`router`]: one [`router::Endpoint`] variant per operation; paths match
//!   without case, as ARM's do.
//! - [`error`]: the facade's error enum, mapped in one `match` to ARM's
//!   `{"error":{code,message}}` or Azure AD's OAuth error body.
//! - [`identity`]: cloud metadata, OpenID configuration, the token endpoint
//!   (JWT access tokens), subscriptions and tenants.
//! - [`group`]: resource groups.
//! - [`location`]: Azure's regions, which every `location` must name.
//! - [`cluster`]: managed clusters, credentials, power state, upgrade profile.
//! - [`agentpool`]: agent pools, one source of truth with `agentPoolProfiles`.
//! - [`operation`]: long-running operations (`Azure-AsyncOperation`, `Location`).
//! - [`authorization`]: Microsoft.Authorization at any scope: the built-in
//!   AKS RBAC role definitions and role assignments (Azure RBAC for
//!   Kubernetes on clusters with `aadProfile.enableAzureRBAC`).
//! - [`auth`]: bearer tokens for the clusters' API servers (the data plane
//!   asks through the registry).
//! - [`render`]: the shared record in AKS vocabulary.
//! - [`versions`]: the Kubernetes versions offered.
//! - [`state`]: configuration, resource groups, operations.

pub mod agentpool;
pub mod auth;
pub mod authorization;
pub mod cluster;
pub mod error;
pub mod group;
pub mod identity;
pub mod location;
pub mod operation;
pub mod persist;
pub mod render;
pub mod router;
pub mod state;
pub mod versions;

use std::sync::Arc;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use kemu_shared::{ApiHandler, ClusterRegistry};
use serde_json::Value;

pub use error::Error;
pub use router::Endpoint;
pub use state::AksConfig;

use cluster::CredentialKind;

/// The AKS facade, cheap to clone into every worker; clones share state.
#[derive(Debug, Clone)]
pub struct Aks {
    registry: ClusterRegistry,
    config: Arc<AksConfig>,
    state: Arc<state::State>,
}

/// What every handler needs to know of its request.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// `https://host:port` as the client addressed kemu, for absolute URLs.
    pub base: String,
    /// The request's `api-version`, echoed in operation URLs.
    pub api_version: String,
}

impl Aks {
    /// A facade over `registry` with the default configuration: any service
    /// principal logs in, operations finish on their first poll.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self::with_config(registry, AksConfig::default())
    }

    /// A facade over `registry` with `config`.
    pub fn with_config(registry: ClusterRegistry, config: AksConfig) -> Self {
        Self {
            registry,
            config: Arc::new(config),
            state: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AksConfig {
        &self.config
    }

    /// The data plane's check of AKS bearer tokens, to register for
    /// `Cloud::Aks` with the registry.
    pub fn token_authenticator(&self) -> auth::AksTokenAuthenticator {
        auth::AksTokenAuthenticator {
            state: self.state.clone(),
            clock: self.registry.clock().clone(),
        }
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }

    /// The tenant a path names; `common` and `organizations` mean kemu's own.
    fn tenant_for(&self, tenant: &str) -> String {
        match tenant.to_ascii_lowercase().as_str() {
            "common" | "organizations" | "consumers" => self.config.tenant.clone(),
            _ => tenant.to_owned(),
        }
    }

    /// The object id of a client id's service principal, stable for kemu's life.
    fn object_id(&self, client_id: &str) -> String {
        self.state
            .object_ids
            .lock()
            .entry(client_id.to_owned())
            .or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone()
    }

    async fn run(
        &self,
        req: &HttpRequest,
        body: &Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        let ctx = Ctx {
            base: format!("https://{}", req.connection_info().host()),
            api_version: router::require_api_version(req.query_string()).unwrap_or_default(),
        };
        let json = || -> Result<Value, Error> {
            if body.is_empty() {
                return Ok(Value::Object(Default::default()));
            }
            match serde_json::from_slice(body) {
                Ok(v @ Value::Object(_)) => Ok(v),
                // Every ARM body is an object; ARM's deserializer says so.
                Ok(v) => Err(Error::InvalidRequestContent(format!(
                    "Error converting value {v} to type 'Resource'. Path '', line 1, position {}.",
                    body.len()
                ))),
                Err(e) => Err(Error::InvalidRequestContent(e.to_string())),
            }
        };
        use Endpoint as E;
        match endpoint {
            E::MetadataEndpoints => Ok(identity::metadata(&ctx.base, &ctx.api_version)),
            E::ListRoleDefinitions { scope } => {
                Ok(authorization::list_definitions(&scope, req.query_string()))
            }
            E::GetRoleDefinition { scope, id } => authorization::get_definition(&scope, &id),
            E::ListRoleAssignments { scope } => Ok(authorization::list_assignments(self, &scope)),
            E::PutRoleAssignment { scope, name } => {
                authorization::put_assignment(self, &scope, &name, &json()?)
            }
            E::DeleteRoleAssignment { scope, name } => {
                Ok(authorization::delete_assignment(self, &scope, &name))
            }
            E::OpenIdConfiguration { tenant } => {
                Ok(identity::openid_configuration(self, &ctx.base, &tenant))
            }
            E::Token { tenant } => identity::token(self, &ctx.base, &tenant, body),
            E::SigningKeys => Ok(identity::signing_keys()),
            E::ListTenants => Ok(identity::tenants(self)),
            E::ListSubscriptions => Ok(identity::subscriptions(self)),
            E::GetSubscription { subscription } => {
                Ok(identity::get_subscription(self, &subscription))
            }
            E::ListProviders { subscription } => Ok(identity::providers(&subscription)),
            E::GetProvider {
                subscription,
                namespace,
            }
            | E::RegisterProvider {
                subscription,
                namespace,
            } => Ok(identity::provider(&subscription, &namespace)),
            E::ListResourceGroups { subscription } => Ok(group::list(self, &subscription)),
            E::PutResourceGroup(path) => group::put(self, &path, &json()?),
            E::GetResourceGroup(path) => group::get(self, &path),
            E::CheckResourceGroup(path) => Ok(group::check(self, &path)),
            E::DeleteResourceGroup(path) => group::delete(self, &ctx, &path),
            E::GetGroupOperationResult { id } | E::GetOperationResult { id } => {
                let again = format!("{}{}", ctx.base, kemu_shared::facade::path_and_query(req));
                operation::result(self, &id, &again)
            }
            E::GetOperationStatus { id } => operation::status(self, &id),
            E::ListKubernetesVersions => Ok(HttpResponse::Ok().json(versions::list())),
            E::ListClusters { subscription } => Ok(cluster::list(self, &subscription)),
            E::ListClustersInGroup(path) => cluster::list_in_group(self, &path),
            E::PutCluster(path) => cluster::put(self, &ctx, &path, &json()?),
            E::GetCluster(path) => cluster::get(self, &path),
            E::DeleteCluster(path) => cluster::delete(self, &ctx, &path),
            E::ListUserCredential(path) => cluster::credentials(self, &path, CredentialKind::User),
            E::ListAdminCredential(path) => {
                cluster::credentials(self, &path, CredentialKind::Admin)
            }
            E::ListMonitoringCredential(path) => {
                cluster::credentials(self, &path, CredentialKind::Monitoring)
            }
            E::GetUpgradeProfile(path) => cluster::upgrade_profile(self, &path),
            E::StartCluster(path) => cluster::set_power(self, &ctx, &path, true),
            E::StopCluster(path) => cluster::set_power(self, &ctx, &path, false),
            E::ResetServicePrincipalProfile(path) => {
                cluster::reset_profile(self, &ctx, &path, "servicePrincipalProfile", &json()?)
            }
            E::ResetAadProfile(path) => {
                cluster::reset_profile(self, &ctx, &path, "aadProfile", &json()?)
            }
            E::ListMaintenanceConfigurations(path) => {
                cluster::maintenance_configurations(self, &path)
            }
            E::GetMaintenanceConfiguration(path, name) => {
                cluster::maintenance_configuration(self, &path, &name)
            }
            E::ListAgentPools(path) => agentpool::list(self, &path),
            E::PutAgentPool(path, pool) => agentpool::put(self, &ctx, &path, &pool, &json()?),
            E::GetAgentPool(path, pool) => agentpool::get(self, &path, &pool),
            E::DeleteAgentPool(path, pool) => agentpool::delete(self, &ctx, &path, &pool),
            E::GetAgentPoolUpgradeProfile(path, pool) => {
                agentpool::upgrade_profile(self, &path, &pool)
            }
        }
    }
}

impl ApiHandler for Aks {
    const API_NAME: &'static str = "aks";

    fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }
    type Endpoint = Endpoint;
    type Error = Error;

    fn panicked() -> Error {
        Error::Internal("An internal server error occurred.".into())
    }

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        let endpoint = Endpoint::parse(req.method(), req.path())?;
        if endpoint.is_arm() && endpoint != Endpoint::MetadataEndpoints {
            router::require_api_version(req.query_string())?;
            let auth = req
                .headers()
                .get("authorization")
                .and_then(|h| h.to_str().ok());
            identity::check_bearer(auth, self.registry.clock().now())?;
        }
        Ok(endpoint)
    }

    async fn handle(
        &self,
        req: HttpRequest,
        body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        let mut resp = self.run(&req, &body, endpoint).await?;
        // ARM stamps every answer with a request id and echoes the caller's ids.
        let request_id = uuid::Uuid::new_v4().to_string();
        let correlation = req
            .headers()
            .get("x-ms-correlation-request-id")
            .and_then(|v| v.to_str().ok())
            .map_or_else(|| request_id.clone(), str::to_owned);
        let headers = resp.headers_mut();
        for (name, value) in [
            ("x-ms-request-id", request_id.as_str()),
            ("x-ms-correlation-request-id", correlation.as_str()),
        ] {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), v);
            }
        }
        if let Some(client) = req.headers().get("x-ms-client-request-id").cloned() {
            headers.insert(HeaderName::from_static("x-ms-client-request-id"), client);
        }
        Ok(resp)
    }
}
