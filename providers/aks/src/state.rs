//! What the facade keeps besides the shared cluster records: its configuration,
//! resource groups, long-running operations and service principal object ids.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

/// The tenant kemu's subscription belongs to, unless configured otherwise.
pub const DEFAULT_TENANT: &str = "00000000-0000-0000-0000-00000000a1a1";
/// The subscription `az login` lists, unless configured otherwise.
pub const DEFAULT_SUBSCRIPTION: &str = "00000000-0000-0000-0000-00000000b2b2";

/// How the facade behaves: identity and timing.
#[derive(Debug, Clone)]
pub struct AksConfig {
    /// The tenant listed by `/tenants` and put in tokens minted for `organizations`/`common`.
    pub tenant: String,
    /// The subscription listed by `/subscriptions`.
    pub subscription: String,
    /// Its display name.
    pub subscription_name: String,
    /// Service principals (client id → secret). Empty: any id and secret log in.
    pub service_principals: BTreeMap<String, String>,
    /// How long a create, update or delete stays in progress, on the clock.
    /// Zero: every operation succeeds on its first poll.
    pub provisioning_delay: Duration,
    /// Lifetime of the access tokens the token endpoint mints.
    pub token_lifetime: Duration,
}

impl Default for AksConfig {
    fn default() -> Self {
        Self {
            tenant: DEFAULT_TENANT.into(),
            subscription: DEFAULT_SUBSCRIPTION.into(),
            subscription_name: "kemu".into(),
            service_principals: BTreeMap::new(),
            provisioning_delay: Duration::ZERO,
            token_lifetime: Duration::from_secs(3599),
        }
    }
}

/// A resource group.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResourceGroup {
    /// Subscription id, as first written.
    pub subscription: String,
    /// Name, as first written (ARM keeps the first casing).
    pub name: String,
    /// Location.
    pub location: String,
    /// Tags.
    pub tags: serde_json::Value,
    /// `managedBy`, if any.
    pub managed_by: Option<String>,
}

/// What a long-running operation was started for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Operation {
    /// Operation id (a GUID).
    pub id: String,
    /// When it started.
    pub start: DateTime<Utc>,
    /// When it is done, on the clock.
    pub done_at: DateTime<Utc>,
    /// `Some((code, message))` if it fails.
    pub failure: Option<(String, String)>,
}

impl Operation {
    /// ARM status at `now`: `InProgress`, `Succeeded` or `Failed`.
    pub fn status(&self, now: DateTime<Utc>) -> &'static str {
        match (&self.failure, now >= self.done_at) {
            (_, false) => "InProgress",
            (None, true) => "Succeeded",
            (Some(_), true) => "Failed",
        }
    }
}

/// The facade's mutable state, shared by every worker.
#[derive(Debug, Default)]
pub struct State {
    /// Resource groups by `(subscription, name)`, both lower-cased.
    pub groups: Mutex<BTreeMap<(String, String), ResourceGroup>>,
    /// Operations by id.
    pub operations: Mutex<HashMap<String, Operation>>,
    /// Object id of each client id seen, so `oid` is stable per principal.
    pub object_ids: Mutex<HashMap<String, String>>,
    /// The `uti` of every access token minted, so the data plane accepts only
    /// kemu's own tokens.
    pub issued: Mutex<HashSet<String>>,
    /// Azure role assignments by lower-cased ARM id.
    pub role_assignments: Mutex<BTreeMap<String, serde_json::Value>>,
}

/// The key of a resource group in [`State::groups`].
pub fn group_key(subscription: &str, name: &str) -> (String, String) {
    (subscription.to_ascii_lowercase(), name.to_ascii_lowercase())
}
