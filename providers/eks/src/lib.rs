//! The Amazon EKS facade: the EKS REST-JSON API over the shared cluster
//! registry, and the authenticator for the `k8s-aws-v1.` tokens that
//! `aws eks get-token` mints.
//!
//! # Layout
//!
//! - [`router`]: one [`Endpoint`] variant per EKS operation (the 64 of
//!   botocore's model), parsed from method and raw path.
//! - [`wire`]: percent-decoding, repeated query keys, JSON bodies, epoch-second
//!   timestamps, `maxResults`/`nextToken` pagination.
//! - [`error`]: the facade's error enum, mapped to `x-amzn-ErrorType` + `{"message"}`.
//! - [`sigv4`]: the signature every EKS call must carry, checked in shape.
//! - [`state`]: what EKS keeps beside the shared record (node groups, add-ons,
//!   access entries, updates, …), per cluster id.
//! - [`render`]: the shared record in EKS vocabulary (status, endpoint, CA).
//! - [`catalog`]: what the service offers: Kubernetes versions, add-ons and
//!   their versions, access policies, instance types.
//! - Operations, one file per resource: [`cluster`], [`nodegroup`], [`addon`],
//!   [`access`], [`resources`] (Fargate profiles, identity provider configs, pod
//!   identity associations, capabilities), [`update`], [`tags`] and
//!   [`extras`] (insights, EKS Anywhere subscriptions, STS GetCallerIdentity).
//! - [`token`]: verifies `k8s-aws-v1.` tokens for the data plane.

pub mod access;
pub mod addon;
pub mod catalog;
pub mod cluster;
pub mod error;
pub mod extras;
pub mod nodegroup;
pub mod persist;
pub mod render;
pub mod resources;
pub mod router;
pub mod sigv4;
pub mod state;
pub mod tags;
pub mod token;
pub mod update;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use kemu_shared::{ApiHandler, ClusterRecord, ClusterRegistry, OwnerScope};
use serde_json::Value;

pub use error::Error;
pub use router::Endpoint;
pub use token::EksTokenAuthenticator;

use state::{ClusterState, Kind, State};
use wire::{Body, Query};

/// The account every request acts as, unless configured otherwise.
pub const DEFAULT_ACCOUNT: &str = "000000000000";
/// The region assumed when a request names none.
pub const DEFAULT_REGION: &str = "us-east-1";

/// A dummy AWS credential kemu accepts, and who it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The secret access key (to verify `get-token` signatures).
    pub secret: String,
    /// The IAM principal ARN the key belongs to.
    pub principal_arn: String,
}

/// How the facade behaves; every delay runs on the registry's clock.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The account clusters are created in.
    pub account: String,
    /// How long a new cluster stays `CREATING`. Zero (the default) makes it
    /// `ACTIVE` at once, so `aws eks wait cluster-active` returns on its first
    /// poll instead of sleeping 30 s.
    pub provisioning: Duration,
    /// How long node groups, add-ons, profiles and updates stay in their
    /// transitional status (`CREATING`, `UPDATING`, `InProgress`).
    pub transition: Duration,
    /// How long a deleted resource shows `DELETING` before it is gone.
    pub deletion_grace: Duration,
    /// Access key id → credential. Tokens signed with other keys are refused.
    pub credentials: BTreeMap<String, Credential>,
    /// Hosts besides AWS's own STS endpoints that a token may be presigned
    /// for (any port, `http` too): where `AWS_ENDPOINT_URL_STS` points a
    /// client at kemu. Loopback by default; kemu adds its advertise host.
    pub sts_hosts: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let account = DEFAULT_ACCOUNT.to_owned();
        // The dummy keys people use with local AWS emulators.
        let credentials = [
            ("test", "test"),
            ("testing", "testing"),
            (
                "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
        ]
        .into_iter()
        .map(|(akid, secret)| {
            (
                akid.to_owned(),
                Credential {
                    secret: secret.to_owned(),
                    principal_arn: format!("arn:aws:iam::{account}:user/{akid}"),
                },
            )
        })
        .collect();
        Self {
            account,
            provisioning: Duration::ZERO,
            transition: Duration::ZERO,
            deletion_grace: Duration::ZERO,
            credentials,
            sts_hosts: ["127.0.0.1", "localhost", "[::1]"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// The EKS facade, cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Eks {
    registry: ClusterRegistry,
    settings: Arc<Settings>,
    state: Arc<State>,
}

/// One request, parsed: who and where it acts, its query and body, and the
/// instant it is served at.
#[derive(Debug)]
pub struct Call {
    /// Account and region.
    pub scope: OwnerScope,
    /// The query string.
    pub query: Query,
    /// The JSON body (`{}` when empty).
    pub body: Body,
    /// The instant, from the clock.
    pub now: DateTime<Utc>,
    /// The caller's IAM principal ARN, from its access key.
    pub caller: String,
    /// The caller's access key id.
    pub access_key: String,
}

impl Call {
    /// The account.
    pub fn account(&self) -> &str {
        match &self.scope {
            OwnerScope::Eks { account, .. } => account,
            _ => DEFAULT_ACCOUNT,
        }
    }

    /// The region.
    pub fn region(&self) -> &str {
        match &self.scope {
            OwnerScope::Eks { region, .. } => region,
            _ => DEFAULT_REGION,
        }
    }

    /// An ARN of this account and region: `arn:aws:eks:R:A:<resource>`.
    pub fn arn(&self, resource: &str) -> String {
        format!(
            "arn:aws:eks:{}:{}:{resource}",
            self.region(),
            self.account()
        )
    }
}

impl Eks {
    /// A facade over `registry` with default settings.
    pub fn new(registry: ClusterRegistry) -> Self {
        Self::with_settings(registry, Settings::default())
    }

    /// A facade over `registry` with `settings`.
    pub fn with_settings(registry: ClusterRegistry, settings: Settings) -> Self {
        Self {
            registry,
            settings: Arc::new(settings),
            state: Arc::new(State::default()),
        }
    }

    /// The authenticator for this facade's clusters; register it with
    /// `registry.set_authenticator(Cloud::Eks, …)`.
    pub fn authenticator(&self) -> EksTokenAuthenticator {
        EksTokenAuthenticator::new(
            self.registry.clock().clone(),
            self.settings.clone(),
            self.state.clone(),
        )
    }

    /// The access entries of a cluster, each in the EKS `accessEntry` wire
    /// shape with its `associatedAccessPolicies` (as
    /// ListAssociatedAccessPolicies returns them): what the data plane's
    /// authorizer maps a caller through.
    pub fn access_entries(&self, cluster_id: &str) -> Vec<(Value, Vec<Value>)> {
        let clusters = self.state.clusters.lock();
        let Some(cs) = clusters.get(cluster_id) else {
            return Vec::new();
        };
        cs.list(Kind::AccessEntry)
            .map(|(principal, item)| {
                let policies = cs
                    .policies
                    .get(principal)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default();
                (item.value(), policies)
            })
            .collect()
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Mounts the facade on an actix-web service config.
    pub fn configure(self, cfg: &mut web::ServiceConfig) {
        kemu_shared::facade::mount(cfg, self);
    }

    /// The access key id of a SigV4-signed request
    /// (`Credential=AKID/date/REGION/eks/aws4_request`).
    fn credential_scope(req: &HttpRequest) -> (Option<String>, Option<String>) {
        let cred = req
            .headers()
            .get("authorization")
            .and_then(|h| h.to_str().ok())
            .and_then(|auth| auth.split("Credential=").nth(1))
            .map(|c| c.split([',', ' ']).next().unwrap_or_default().to_owned());
        let Some(cred) = cred else {
            return (None, None);
        };
        let mut parts = cred.split('/');
        let akid = parts.next().filter(|a| !a.is_empty()).map(str::to_owned);
        let region = parts.nth(1).filter(|r| !r.is_empty()).map(str::to_owned);
        (akid, region)
    }

    /// The account and region a request acts in: the region from the SigV4
    /// credential scope.
    pub fn scope_of(&self, req: &HttpRequest) -> OwnerScope {
        let (_, region) = Self::credential_scope(req);
        OwnerScope::Eks {
            account: self.settings.account.clone(),
            region: region.unwrap_or_else(|| DEFAULT_REGION.to_owned()),
        }
    }

    /// The principal ARN an access key stands for.
    pub fn principal_of(&self, access_key: &str) -> String {
        self.settings
            .credentials
            .get(access_key)
            .map(|c| c.principal_arn.clone())
            .unwrap_or_else(|| format!("arn:aws:iam::{}:user/{access_key}", self.settings.account))
    }

    fn call(&self, req: &HttpRequest, body: &[u8], endpoint: &Endpoint) -> Result<Call, Error> {
        let (akid, _) = Self::credential_scope(req);
        let access_key = akid.unwrap_or_else(|| "anonymous".to_owned());
        // STS takes a form body; every EKS operation a JSON one.
        let body = match endpoint {
            Endpoint::StsGetCallerIdentity => Body::default(),
            _ => Body::parse(body)?,
        };
        Ok(Call {
            scope: self.scope_of(req),
            query: Query::parse(req.query_string()),
            body,
            now: self.registry.clock().now(),
            caller: self.principal_of(&access_key),
            access_key,
        })
    }

    /// Runs `f` on the cluster named `name` and its EKS state, settled at the
    /// call's instant. `f` validates before it mutates: an error changes
    /// nothing. Node pools are re-derived from the node groups afterwards.
    pub fn with_cluster<T>(
        &self,
        call: &Call,
        name: &str,
        f: impl FnOnce(&ClusterRecord, &mut ClusterState) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let record = self.registry.find(&call.scope, name)?;
        let mut clusters = self.state.clusters.lock();
        let cs = clusters.entry(record.id.clone()).or_default();
        cs.settle(call.now);
        let out = f(&record, cs);
        let pools = nodegroup::node_pools(cs, call.region());
        drop(clusters);
        if pools != record.node_pools {
            self.registry.update(&record.id, |c| {
                c.node_pools = pools;
                Ok(())
            })?;
        }
        out
    }

    /// Forgets the EKS state of a cluster that is gone.
    fn forget(&self, id: &str) {
        self.state.clusters.lock().remove(id);
    }

    /// Forgets the EKS state of every cluster that finished deleting after a
    /// grace (those deleted at once are forgotten on the spot).
    fn prune(&self) {
        let live: std::collections::HashSet<String> = self
            .registry
            .list_cloud(kemu_shared::Cloud::Eks)
            .into_iter()
            .map(|c| c.id)
            .collect();
        self.state.clusters.lock().retain(|id, _| live.contains(id));
    }

    fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }

    /// A pending transition `transition` from now, or none when it is zero.
    fn after(
        &self,
        now: DateTime<Utc>,
        d: Duration,
        to: Option<&'static str>,
    ) -> Option<(DateTime<Utc>, Option<&'static str>)> {
        let at = now + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
        (!d.is_zero() || to.is_none()).then_some((at, to))
    }
}

impl ApiHandler for Eks {
    const API_NAME: &'static str = "eks";
    type Endpoint = Endpoint;
    type Error = Error;

    fn registry(&self) -> &ClusterRegistry {
        &self.registry
    }

    fn panicked() -> Error {
        Error::Server("An internal error occurred. Please try again.".into())
    }

    fn parse_endpoint(&self, req: &HttpRequest) -> Result<Endpoint, Error> {
        let endpoint = Endpoint::parse(req.method(), req.uri().path());
        // STS answers in its own (query protocol) format; every EKS call,
        // and a call to no operation, is checked as AWS's front end does.
        if !matches!(endpoint, Ok(Endpoint::StsGetCallerIdentity)) {
            sigv4::check(req)?;
        }
        endpoint
    }

    async fn handle(
        &self,
        req: HttpRequest,
        body: Bytes,
        endpoint: Endpoint,
    ) -> Result<HttpResponse, Error> {
        let call = self.call(&req, &body, &endpoint)?;
        if let Endpoint::StsGetCallerIdentity = endpoint {
            return extras::get_caller_identity(self, &call, &body);
        }
        let out = self.run(&call, endpoint)?;
        Ok(HttpResponse::Ok().json(out))
    }
}

impl Eks {
    /// Runs one EKS operation, returning its JSON output.
    pub fn run(&self, call: &Call, endpoint: Endpoint) -> Result<Value, Error> {
        use Endpoint as E;
        match endpoint {
            E::CreateCluster => cluster::create(self, call),
            E::DescribeCluster { name } => cluster::describe(self, call, &name),
            E::ListClusters => cluster::list(self, call),
            E::DeleteCluster { name } => cluster::delete(self, call, &name),
            E::UpdateClusterConfig { name } => cluster::update_config(self, call, &name),
            E::UpdateClusterVersion { name } => cluster::update_version(self, call, &name),
            E::AssociateEncryptionConfig { name } => {
                cluster::associate_encryption(self, call, &name)
            }
            E::RegisterCluster => cluster::register(self, call),
            E::DeregisterCluster { name } => cluster::deregister(self, call, &name),
            E::DescribeClusterVersions => catalog::describe_cluster_versions(call),
            E::DescribeUpdate { name, id } => update::describe(self, call, &name, &id),
            E::ListUpdates { name } => update::list(self, call, &name),
            E::CreateNodegroup { name } => nodegroup::create(self, call, &name),
            E::DescribeNodegroup { name, nodegroup } => {
                resources::describe(self, call, &name, Kind::Nodegroup, &nodegroup)
            }
            E::ListNodegroups { name } => resources::list_names(self, call, &name, Kind::Nodegroup),
            E::UpdateNodegroupConfig { name, nodegroup } => {
                nodegroup::update_config(self, call, &name, &nodegroup)
            }
            E::UpdateNodegroupVersion { name, nodegroup } => {
                nodegroup::update_version(self, call, &name, &nodegroup)
            }
            E::DeleteNodegroup { name, nodegroup } => {
                resources::delete(self, call, &name, Kind::Nodegroup, &nodegroup)
            }
            E::CreateAddon { name } => addon::create(self, call, &name),
            E::DescribeAddon { name, addon } => {
                resources::describe(self, call, &name, Kind::Addon, &addon)
            }
            E::ListAddons { name } => resources::list_names(self, call, &name, Kind::Addon),
            E::UpdateAddon { name, addon } => addon::update(self, call, &name, &addon),
            E::DeleteAddon { name, addon } => {
                resources::delete(self, call, &name, Kind::Addon, &addon)
            }
            E::DescribeAddonVersions => catalog::describe_addon_versions(call),
            E::DescribeAddonConfiguration => catalog::describe_addon_configuration(call),
            E::CreateAccessEntry { name } => access::create(self, call, &name),
            E::DescribeAccessEntry { name, principal } => {
                resources::describe(self, call, &name, Kind::AccessEntry, &principal)
            }
            E::ListAccessEntries { name } => access::list(self, call, &name),
            E::UpdateAccessEntry { name, principal } => {
                access::update(self, call, &name, &principal)
            }
            E::DeleteAccessEntry { name, principal } => {
                access::delete(self, call, &name, &principal)
            }
            E::AssociateAccessPolicy { name, principal } => {
                access::associate(self, call, &name, &principal)
            }
            E::DisassociateAccessPolicy {
                name,
                principal,
                policy,
            } => access::disassociate(self, call, &name, &principal, &policy),
            E::ListAssociatedAccessPolicies { name, principal } => {
                access::list_associated(self, call, &name, &principal)
            }
            E::ListAccessPolicies => catalog::list_access_policies(call),
            E::CreateFargateProfile { name } => {
                resources::create_fargate_profile(self, call, &name)
            }
            E::DescribeFargateProfile { name, profile } => {
                resources::describe(self, call, &name, Kind::FargateProfile, &profile)
            }
            E::ListFargateProfiles { name } => {
                resources::list_names(self, call, &name, Kind::FargateProfile)
            }
            E::DeleteFargateProfile { name, profile } => {
                resources::delete(self, call, &name, Kind::FargateProfile, &profile)
            }
            E::AssociateIdentityProviderConfig { name } => {
                resources::associate_idp(self, call, &name)
            }
            E::DescribeIdentityProviderConfig { name } => {
                resources::describe_idp(self, call, &name)
            }
            E::ListIdentityProviderConfigs { name } => resources::list_idps(self, call, &name),
            E::DisassociateIdentityProviderConfig { name } => {
                resources::disassociate_idp(self, call, &name)
            }
            E::CreatePodIdentityAssociation { name } => {
                resources::create_pod_identity(self, call, &name)
            }
            E::DescribePodIdentityAssociation { name, id } => {
                resources::describe(self, call, &name, Kind::PodIdentityAssociation, &id)
            }
            E::ListPodIdentityAssociations { name } => {
                resources::list_pod_identities(self, call, &name)
            }
            E::UpdatePodIdentityAssociation { name, id } => {
                resources::update_pod_identity(self, call, &name, &id)
            }
            E::DeletePodIdentityAssociation { name, id } => {
                resources::delete(self, call, &name, Kind::PodIdentityAssociation, &id)
            }
            E::CreateCapability { name } => resources::create_capability(self, call, &name),
            E::DescribeCapability { name, capability } => {
                resources::describe(self, call, &name, Kind::Capability, &capability)
            }
            E::ListCapabilities { name } => resources::list_capabilities(self, call, &name),
            E::UpdateCapability { name, capability } => {
                resources::update_capability(self, call, &name, &capability)
            }
            E::DeleteCapability { name, capability } => {
                resources::delete(self, call, &name, Kind::Capability, &capability)
            }
            E::ListInsights { name } => extras::list_insights(self, call, &name),
            E::DescribeInsight { name, id } => extras::describe_insight(self, call, &name, &id),
            E::StartInsightsRefresh { name } => extras::start_insights_refresh(self, call, &name),
            E::DescribeInsightsRefresh { name } => {
                extras::describe_insights_refresh(self, call, &name)
            }
            E::CreateEksAnywhereSubscription => extras::create_subscription(self, call),
            E::DescribeEksAnywhereSubscription { id } => {
                extras::describe_subscription(self, call, &id)
            }
            E::ListEksAnywhereSubscriptions => extras::list_subscriptions(self, call),
            E::UpdateEksAnywhereSubscription { id } => extras::update_subscription(self, call, &id),
            E::DeleteEksAnywhereSubscription { id } => extras::delete_subscription(self, call, &id),
            E::TagResource { arn } => tags::tag(self, call, &arn),
            E::UntagResource { arn } => tags::untag(self, call, &arn),
            E::ListTagsForResource { arn } => tags::list(self, call, &arn),
            E::StsGetCallerIdentity => Err(Error::UnknownOperation("POST /".into())),
        }
    }
}
