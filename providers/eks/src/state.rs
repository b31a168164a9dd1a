//! What EKS keeps beside the shared cluster record: node groups, add-ons,
//! Fargate profiles, access entries and their policies, identity provider
//! configs, pod identity associations, capabilities and updates, per cluster
//! id; and the account-wide EKS Anywhere subscriptions.
//!
//! Every sub-resource is kept as the EKS wire object it renders as, with at
//! most one pending transition (a status to reach, or removal) that the clock
//! applies on the next read, as the registry does for clusters.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use kemu_shared::ClusterId;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The kinds of cluster sub-resources, each a name-keyed collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Managed node groups, keyed by name.
    Nodegroup,
    /// Add-ons, keyed by name.
    Addon,
    /// Fargate profiles, keyed by name.
    FargateProfile,
    /// Access entries, keyed by principal ARN.
    AccessEntry,
    /// OIDC identity provider configs, keyed by name.
    IdentityProviderConfig,
    /// Pod identity associations, keyed by id.
    PodIdentityAssociation,
    /// Capabilities, keyed by name.
    Capability,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 7] = [
        Kind::Nodegroup,
        Kind::Addon,
        Kind::FargateProfile,
        Kind::AccessEntry,
        Kind::IdentityProviderConfig,
        Kind::PodIdentityAssociation,
        Kind::Capability,
    ];

    /// The member holding the resource's ARN.
    pub fn arn_field(self) -> &'static str {
        match self {
            Kind::Nodegroup => "nodegroupArn",
            Kind::Addon => "addonArn",
            Kind::FargateProfile => "fargateProfileArn",
            Kind::AccessEntry => "accessEntryArn",
            Kind::IdentityProviderConfig => "identityProviderConfigArn",
            Kind::PodIdentityAssociation => "associationArn",
            Kind::Capability => "arn",
        }
    }

    /// The resource as EKS names it in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Nodegroup => "Nodegroup",
            Kind::Addon => "Addon",
            Kind::FargateProfile => "Fargate Profile",
            Kind::AccessEntry => "Access entry",
            Kind::IdentityProviderConfig => "Identity provider config",
            Kind::PodIdentityAssociation => "Pod identity association",
            Kind::Capability => "Capability",
        }
    }
}

/// One sub-resource: its wire object and the transition the clock will apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Item {
    /// The EKS wire object, as describe returns it.
    pub obj: Map<String, Value>,
    /// `(when, Some(status))` to reach a status, `(when, None)` to disappear.
    #[serde(deserialize_with = "crate::persist::pending_status")]
    pub pending: Option<(DateTime<Utc>, Option<&'static str>)>,
}

impl Item {
    /// An item showing `obj` until `pending`.
    pub fn new(obj: Value, pending: Option<(DateTime<Utc>, Option<&'static str>)>) -> Self {
        let obj = match obj {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Self { obj, pending }
    }

    /// The wire object.
    pub fn value(&self) -> Value {
        Value::Object(self.obj.clone())
    }

    /// The `status` member.
    pub fn status(&self) -> &str {
        self.obj.get("status").and_then(Value::as_str).unwrap_or("")
    }

    /// The `tags` member as a map.
    pub fn tags(&self) -> BTreeMap<String, String> {
        self.obj
            .get("tags")
            .and_then(crate::wire::string_map)
            .unwrap_or_default()
    }

    /// Replaces the `tags` member.
    pub fn set_tags(&mut self, tags: &BTreeMap<String, String>) {
        self.obj.insert("tags".into(), json!(tags));
    }
}

/// What an update applies to, for DescribeUpdate/ListUpdates filters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdateTarget {
    /// The cluster itself.
    Cluster,
    /// A node group.
    Nodegroup(String),
    /// An add-on.
    Addon(String),
    /// A capability.
    Capability(String),
}

/// One update: `InProgress` until `done_at` on the clock, then `Successful`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Update {
    /// Its id.
    pub id: String,
    /// What it applies to.
    pub target: UpdateTarget,
    /// `type`, `params`, `createdAt`, `errors`.
    pub obj: Map<String, Value>,
    /// When it completes.
    pub done_at: DateTime<Utc>,
}

impl Update {
    /// The wire object at `now`.
    pub fn render(&self, now: DateTime<Utc>) -> Value {
        let mut obj = self.obj.clone();
        obj.insert("id".into(), json!(self.id));
        let status = if now >= self.done_at {
            "Successful"
        } else {
            "InProgress"
        };
        obj.insert("status".into(), json!(status));
        Value::Object(obj)
    }
}

/// Everything EKS keeps for one cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClusterState {
    /// Sub-resources by kind, then key.
    pub items: BTreeMap<Kind, BTreeMap<String, Item>>,
    /// Access policies associated with each principal: policy ARN → association.
    pub policies: BTreeMap<String, BTreeMap<String, Value>>,
    /// Updates, oldest first.
    pub updates: Vec<Update>,
    /// When insights were last refreshed.
    pub insights_refreshed: Option<DateTime<Utc>>,
    /// The IAM principal that created the cluster, kept when
    /// `bootstrapClusterCreatorAdminPermissions` made it admin: in the
    /// `CONFIG_MAP` mode it is admin implicitly (not in `aws-auth`), as on
    /// EKS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creator_arn: Option<String>,
}

impl ClusterState {
    /// The collection of `kind`.
    pub fn of(&mut self, kind: Kind) -> &mut BTreeMap<String, Item> {
        self.items.entry(kind).or_default()
    }

    /// The collection of `kind`, read-only.
    pub fn list(&self, kind: Kind) -> impl Iterator<Item = (&String, &Item)> {
        self.items.get(&kind).into_iter().flatten()
    }

    /// Applies every pending transition due at `now`; true if any was.
    pub fn settle(&mut self, now: DateTime<Utc>) -> bool {
        let mut changed = false;
        for items in self.items.values_mut() {
            items.retain(|_, item| match item.pending {
                Some((at, to)) if at <= now => {
                    changed = true;
                    match to {
                        Some(status) => {
                            item.obj.insert("status".into(), json!(status));
                            item.pending = None;
                            true
                        }
                        None => false,
                    }
                }
                _ => true,
            });
        }
        changed
    }
}

/// All EKS-only state, shared by the facade and the token authenticator.
#[derive(Debug, Default)]
pub struct State {
    /// Per-cluster state, by cluster id.
    pub clusters: Mutex<HashMap<ClusterId, ClusterState>>,
    /// EKS Anywhere subscriptions by id (account-wide).
    pub subscriptions: Mutex<BTreeMap<String, Item>>,
}
