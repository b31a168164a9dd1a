//! What the GKE facade keeps of a cluster beyond the shared record, stored in
//! [`ClusterRecord::extra`]: the full versions, zones, each node pool's
//! settings, and the request fields it echoes back. The shared record's
//! `node_pools` are derived from it, with the labels GKE puts on its Nodes.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kemu_shared::{ClusterRecord, NodePool, OwnerScope, Taint};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::server_config;
use crate::wire;

/// The facade's part of a cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterState {
    /// Full master version, e.g. `1.34.1-gke.1829001`.
    pub master_version: String,
    /// The version the cluster was created with.
    pub initial_version: String,
    /// The zones the cluster's nodes run in.
    pub locations: Vec<String>,
    /// Cluster fields from requests, echoed back (autopilot, networking…).
    pub fields: Map<String, Value>,
    /// Node pools, in creation order.
    pub pools: Vec<PoolState>,
    /// Whether a control-plane IP rotation was started and not completed.
    pub ip_rotation: bool,
}

/// One node pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolState {
    /// Pool name.
    pub name: String,
    /// Nodes per zone now.
    pub per_zone: u32,
    /// Nodes per zone at creation (`initialNodeCount` keeps it).
    pub initial: u32,
    /// Zones of the pool.
    pub locations: Vec<String>,
    /// Full node version.
    pub version: String,
    /// The version before the last upgrade, for `rollback`.
    pub previous_version: Option<String>,
    /// `PROVISIONING` until `ready_at`, then `RUNNING`.
    pub status: String,
    /// When a provisioning pool becomes ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// The pool's other fields: `config`, `management`, `autoscaling`…
    pub fields: Map<String, Value>,
}

/// OAuth scopes gcloud gives nodes by default.
const DEFAULT_SCOPES: &[&str] = &[
    "https://www.googleapis.com/auth/devstorage.read_only",
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring",
    "https://www.googleapis.com/auth/service.management.readonly",
    "https://www.googleapis.com/auth/servicecontrol",
    "https://www.googleapis.com/auth/trace.append",
];

/// Whether a location is a zone (`us-central1-a`) rather than a region.
pub fn is_zone(location: &str) -> bool {
    let parts: Vec<&str> = location.split('-').collect();
    parts.len() >= 3 && parts.last().is_some_and(|z| z.len() == 1)
}

/// The region of a zone or region.
pub fn region_of(location: &str) -> &str {
    if is_zone(location) {
        location.rsplit_once('-').map_or(location, |(r, _)| r)
    } else {
        location
    }
}

/// The zones nodes of a cluster at `location` run in when the request names
/// none: the zone itself, or three zones of a region.
pub fn default_zones(location: &str) -> Vec<String> {
    if is_zone(location) {
        vec![location.to_owned()]
    } else {
        ["a", "b", "c"]
            .iter()
            .map(|z| format!("{location}-{z}"))
            .collect()
    }
}

/// Zones a request names, checked against the cluster's region.
pub fn zones_from(
    value: Option<&Value>,
    location: &str,
    field: &str,
) -> Result<Option<Vec<String>>, Error> {
    let Some(list) = value.and_then(Value::as_array) else {
        return Ok(None);
    };
    let zones: Vec<String> = list
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if zones.is_empty() {
        return Ok(None);
    }
    let region = region_of(location);
    if let Some(bad) = zones.iter().find(|z| !is_zone(z) || region_of(z) != region) {
        return Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": \"{bad}\". Locations must be zones of region {region}."
        )));
    }
    Ok(Some(zones))
}

/// Project and location of a GKE record.
pub fn project_location(record: &ClusterRecord) -> (&str, &str) {
    match &record.scope {
        OwnerScope::Gke { project, location } => (project, location),
        _ => ("", ""),
    }
}

impl ClusterState {
    /// The state kept in `record`; a record made elsewhere (fixtures, other
    /// tools) gets one derived from its shared fields.
    pub fn load(record: &ClusterRecord) -> Result<Self, Error> {
        // Only this facade writes a GKE record's `extra` as a state; anything
        // else there (a fixture's own notes) is ignored and the state derived.
        if record.extra.get("masterVersion").is_some() {
            return serde_json::from_value(record.extra.clone())
                .map_err(|e| Error::Internal(format!("cluster state: {e}")));
        }
        let (_, location) = project_location(record);
        let version = server_config::resolve(&record.version, "version")
            .unwrap_or_else(|_| server_config::DEFAULT_VERSION.into());
        let locations = default_zones(location);
        let pools = record
            .node_pools
            .iter()
            .map(|p| {
                let per_zone = p.count / u32::try_from(locations.len()).unwrap_or(1).max(1);
                let mut fields = Map::new();
                fields.insert("config".into(), json!({ "machineType": p.machine_type }));
                PoolState {
                    name: p.name.clone(),
                    per_zone,
                    initial: per_zone,
                    locations: locations.clone(),
                    version: version.clone(),
                    previous_version: None,
                    status: "RUNNING".into(),
                    ready_at: None,
                    fields: with_pool_defaults(fields),
                }
            })
            .collect();
        Ok(Self {
            master_version: version.clone(),
            initial_version: version,
            locations,
            fields: Map::new(),
            pools,
            ip_rotation: false,
        })
    }

    /// Writes the state into `record`, deriving the shared node pools and
    /// version from it.
    pub fn store(&self, record: &mut ClusterRecord) {
        let (_, location) = project_location(record);
        let region = region_of(location).to_owned();
        record.node_pools = self.pools.iter().map(|p| p.shared(&region)).collect();
        record.version = server_config::minor(&self.master_version);
        record.extra = serde_json::to_value(self).unwrap_or(Value::Null);
    }

    /// The pool named `name`.
    pub fn pool_mut(&mut self, name: &str) -> Option<&mut PoolState> {
        self.pools.iter_mut().find(|p| p.name == name)
    }

    /// Marks pools whose provisioning is over as running; true if any changed.
    pub fn settle(&mut self, now: DateTime<Utc>) -> bool {
        let mut changed = false;
        for p in &mut self.pools {
            if p.ready_at.is_some_and(|at| at <= now) {
                p.ready_at = None;
                p.status = "RUNNING".into();
                changed = true;
            }
        }
        changed
    }

    /// Total nodes.
    pub fn node_count(&self) -> u32 {
        self.pools.iter().map(PoolState::count).sum()
    }
}

/// Fills a pool's fields with the defaults GKE applies.
fn with_pool_defaults(mut fields: Map<String, Value>) -> Map<String, Value> {
    let config = fields
        .entry("config")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut defaults = json!({
        "machineType": "e2-medium",
        "diskSizeGb": 100,
        "diskType": "pd-balanced",
        "imageType": "COS_CONTAINERD",
        "serviceAccount": "default",
        "oauthScopes": DEFAULT_SCOPES,
        "metadata": { "disable-legacy-endpoints": "true" },
        "shieldedInstanceConfig": { "enableIntegrityMonitoring": true },
    });
    if let Some(d) = defaults.as_object_mut() {
        for (k, v) in config {
            // An empty value (gcloud sends `"oauthScopes": []` at times) keeps the default.
            if !(v.is_null() || v.as_array().is_some_and(Vec::is_empty) || v.as_str() == Some("")) {
                d.insert(k, v);
            }
        }
    }
    fields.insert("config".into(), defaults);
    let defaults = [
        (
            "management",
            json!({ "autoRepair": true, "autoUpgrade": true }),
        ),
        (
            "upgradeSettings",
            json!({ "maxSurge": 1, "strategy": "SURGE" }),
        ),
        ("maxPodsConstraint", json!({ "maxPodsPerNode": "110" })),
        ("podIpv4CidrSize", json!(24)),
        ("autoscaling", json!({})),
    ];
    for (k, v) in defaults {
        fields.entry(k).or_insert(v);
    }
    fields
}

/// The most nodes a node pool may have in one zone (GKE's quota).
pub const MAX_NODES_PER_POOL_ZONE: i64 = 1000;

/// A pool's nodes per zone from a request's count at `field`: at least 0 and
/// at most [`MAX_NODES_PER_POOL_ZONE`].
pub fn per_zone_count(count: i64, field: &str) -> Result<u32, Error> {
    if count < 0 {
        return Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": \"{count}\". Must be non-negative."
        )));
    }
    if count > MAX_NODES_PER_POOL_ZONE {
        return Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": \"{count}\". A node pool may have at most {MAX_NODES_PER_POOL_ZONE} nodes per zone."
        )));
    }
    u32::try_from(count).map_err(|_| Error::Internal(format!("{field}: {count}")))
}

impl PoolState {
    /// A pool from a `NodePool` request object, found at `at` in the request
    /// (`node_pool`, `cluster.node_pools[1]`).
    pub fn from_request(
        at: &str,
        np: &Map<String, Value>,
        cluster_locations: &[String],
        cluster_location: &str,
        master_version: &str,
        now: DateTime<Utc>,
        delay: Duration,
    ) -> Result<Self, Error> {
        let name = np.get("name").and_then(Value::as_str).unwrap_or_default();
        wire::check_name("node_pool.name", name)?;
        let field = format!("{at}.initial_node_count");
        let count = wire::int32(np.get("initialNodeCount"), &field)?.unwrap_or(3);
        let per_zone = per_zone_count(count, &field)?;
        let locations = zones_from(np.get("locations"), cluster_location, "node_pool.locations")?
            .unwrap_or_else(|| cluster_locations.to_vec());
        let version = match np.get("version").and_then(Value::as_str) {
            Some(v) => server_config::resolve(v, "node_pool.version")?,
            None => master_version.to_owned(),
        };
        let mut fields = np.clone();
        for k in [
            "name",
            "initialNodeCount",
            "locations",
            "version",
            "status",
            "selfLink",
            "instanceGroupUrls",
            "etag",
        ] {
            fields.remove(k);
        }
        let (status, ready_at) = if delay.is_zero() {
            ("RUNNING", None)
        } else {
            (
                "PROVISIONING",
                Some(now + chrono::Duration::from_std(delay).unwrap_or_default()),
            )
        };
        Ok(Self {
            name: name.to_owned(),
            per_zone,
            initial: per_zone,
            locations,
            version,
            previous_version: None,
            status: status.into(),
            ready_at,
            fields: with_pool_defaults(fields),
        })
    }

    /// Nodes in every zone of the pool.
    pub fn count(&self) -> u32 {
        self.per_zone
            .saturating_mul(u32::try_from(self.locations.len()).unwrap_or(u32::MAX))
    }

    /// The pool's `config` (NodeConfig).
    pub fn config(&self) -> Map<String, Value> {
        wire::object(&self.fields, "config")
            .cloned()
            .unwrap_or_default()
    }

    /// Sets one field of the pool's `config`.
    pub fn set_config(&mut self, key: &str, value: Value) {
        let mut config = self.config();
        config.insert(key.to_owned(), value);
        self.fields.insert("config".into(), Value::Object(config));
    }

    /// The machine type of the pool's nodes.
    pub fn machine_type(&self) -> String {
        self.config()
            .get("machineType")
            .and_then(Value::as_str)
            .unwrap_or("e2-medium")
            .to_owned()
    }

    /// The shared pool: one Node per zone and count, with GKE's node labels
    /// and the pool's taints.
    pub fn shared(&self, region: &str) -> NodePool {
        let config = self.config();
        let machine = self.machine_type();
        let mut labels = BTreeMap::new();
        let family = machine.split('-').next().unwrap_or(&machine).to_owned();
        let provisioning = if config.get("spot").and_then(Value::as_bool) == Some(true) {
            "spot"
        } else if config.get("preemptible").and_then(Value::as_bool) == Some(true) {
            "preemptible"
        } else {
            "standard"
        };
        let disk = config
            .get("diskType")
            .and_then(Value::as_str)
            .unwrap_or("pd-balanced");
        for (k, v) in [
            ("cloud.google.com/gke-nodepool", self.name.as_str()),
            ("cloud.google.com/machine-family", family.as_str()),
            ("node.kubernetes.io/instance-type", machine.as_str()),
            ("beta.kubernetes.io/instance-type", machine.as_str()),
            ("cloud.google.com/gke-os-distribution", "cos"),
            ("cloud.google.com/gke-container-runtime", "containerd"),
            ("cloud.google.com/gke-boot-disk", disk),
            ("cloud.google.com/gke-provisioning", provisioning),
            ("cloud.google.com/gke-stack-type", "IPV4"),
            ("cloud.google.com/gke-logging-variant", "DEFAULT"),
            ("cloud.google.com/private-node", "false"),
            ("topology.kubernetes.io/region", region),
            ("failure-domain.beta.kubernetes.io/region", region),
        ] {
            labels.insert(k.to_owned(), v.to_owned());
        }
        // The zone label is per Node; a pool in one zone carries it whole.
        if let [zone] = self.locations.as_slice() {
            labels.insert("topology.kubernetes.io/zone".into(), zone.clone());
            labels.insert(
                "failure-domain.beta.kubernetes.io/zone".into(),
                zone.clone(),
            );
        }
        if let Some(user) = wire::object(&config, "labels") {
            for (k, v) in user {
                if let Some(v) = v.as_str() {
                    labels.insert(k.clone(), v.to_owned());
                }
            }
        }
        let taints = config
            .get("taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| {
                let effect = match t.get("effect").and_then(Value::as_str)? {
                    "NO_SCHEDULE" => "NoSchedule",
                    "PREFER_NO_SCHEDULE" => "PreferNoSchedule",
                    "NO_EXECUTE" => "NoExecute",
                    _ => return None,
                };
                Some(Taint {
                    key: t.get("key").and_then(Value::as_str)?.to_owned(),
                    value: t
                        .get("value")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    effect: effect.to_owned(),
                })
            })
            .collect();
        NodePool {
            name: self.name.clone(),
            count: self.count(),
            machine_type: machine,
            labels,
            taints,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_and_regions() {
        assert!(is_zone("us-central1-a"));
        assert!(!is_zone("us-central1"));
        assert_eq!(region_of("europe-west1-b"), "europe-west1");
        assert_eq!(default_zones("us-central1").len(), 3);
        assert!(zones_from(Some(&json!(["us-east1-b"])), "us-central1", "f").is_err());
    }

    #[test]
    fn a_pool_carries_gke_node_labels() {
        let np = json!({"name":"np","initialNodeCount":2,"config":{"machineType":"n2-standard-4",
            "labels":{"team":"a"},"taints":[{"key":"k","value":"v","effect":"NO_SCHEDULE"}]}});
        let pool = PoolState::from_request(
            "node_pool",
            np.as_object().unwrap(),
            &["us-central1-a".into()],
            "us-central1-a",
            server_config::DEFAULT_VERSION,
            DateTime::default(),
            Duration::ZERO,
        )
        .unwrap();
        let shared = pool.shared("us-central1");
        assert_eq!(shared.count, 2);
        assert_eq!(shared.labels["cloud.google.com/gke-nodepool"], "np");
        assert_eq!(shared.labels["cloud.google.com/machine-family"], "n2");
        assert_eq!(
            shared.labels["topology.kubernetes.io/zone"],
            "us-central1-a"
        );
        assert_eq!(shared.labels["team"], "a");
        assert_eq!(shared.taints[0].effect, "NoSchedule");
    }
}
