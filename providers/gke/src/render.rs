//! The shared cluster record in GKE vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].

use kemu_shared::{Advertised, ClusterRecord, Lifecycle, advertise};
use serde_json::{Map, Value, json};

use crate::state::{ClusterState, PoolState, project_location, region_of};
use crate::wire;

/// GKE `status` for a lifecycle state.
pub fn status(lifecycle: Lifecycle) -> &'static str {
    match lifecycle {
        Lifecycle::Provisioning => "PROVISIONING",
        Lifecycle::Running => "RUNNING",
        Lifecycle::Updating => "RECONCILING",
        Lifecycle::Deleting => "STOPPING",
        Lifecycle::Failed => "ERROR",
    }
}

/// The `endpoint` and `masterAuth` members of a GKE cluster: `endpoint` is
/// `host:port` (gcloud writes `https://{endpoint}` into the kubeconfig),
/// `masterAuth.clusterCaCertificate` base64 of the CA PEM.
pub fn endpoint_fields(record: &ClusterRecord) -> Map<String, Value> {
    let advertised = advertise(record);
    let mut out = Map::new();
    if let Some(endpoint) = advertised.host_port() {
        out.insert("endpoint".into(), json!(endpoint));
    }
    out.insert(
        "masterAuth".into(),
        match advertised.ca_base64() {
            Some(ca) => json!({ "clusterCaCertificate": ca }),
            None => json!({}),
        },
    );
    out
}

/// Whether `get-credentials` can lead anywhere.
pub fn credentials_available(record: &ClusterRecord) -> bool {
    matches!(advertise(record), Advertised::Live { .. })
}

/// `https://container.googleapis.com/v1/projects/P/{zones|locations}/L/clusters/N`:
/// GKE spells zonal clusters' links with `zones`.
fn cluster_link(project: &str, location: &str, name: &str) -> String {
    let kind = if crate::state::is_zone(location) {
        "zones"
    } else {
        "locations"
    };
    format!(
        "https://container.googleapis.com/v1/projects/{project}/{kind}/{location}/clusters/{name}"
    )
}

/// The fingerprint GKE hands out for a set of resource labels.
pub fn label_fingerprint(record: &ClusterRecord) -> String {
    let flat: Vec<String> = record
        .tags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let parts: Vec<&str> = flat.iter().map(String::as_str).collect();
    format!("{:08x}", wire::fnv(&parts) & 0xffff_ffff)
}

/// The instance group manager name of one zone of a pool.
pub fn igm_name(record: &ClusterRecord, pool: &str, zone: &str) -> String {
    let hash = wire::fnv(&[&record.id, pool, zone]) & 0xffff_ffff;
    let mut base = format!("gke-{}-{pool}", record.name);
    base.truncate(40);
    format!("{base}-{hash:08x}-grp")
}

/// `instanceGroupUrls` of a pool: one manager per zone.
pub fn instance_group_urls(record: &ClusterRecord, pool: &PoolState) -> Vec<String> {
    let (project, _) = project_location(record);
    pool.locations
        .iter()
        .map(|zone| {
            format!(
                "https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instanceGroupManagers/{}",
                igm_name(record, &pool.name, zone)
            )
        })
        .collect()
}

/// The NodePool resource.
pub fn node_pool(record: &ClusterRecord, pool: &PoolState) -> Value {
    let (project, location) = project_location(record);
    let mut p = pool.fields.clone();
    let status = if record.lifecycle == Lifecycle::Deleting {
        "STOPPING"
    } else {
        pool.status.as_str()
    };
    let set = [
        ("name", json!(pool.name)),
        ("initialNodeCount", json!(pool.initial)),
        ("locations", json!(pool.locations)),
        ("version", json!(pool.version)),
        ("status", json!(status)),
        (
            "selfLink",
            json!(format!(
                "{}/nodePools/{}",
                cluster_link(project, location, &record.name),
                pool.name
            )),
        ),
        (
            "instanceGroupUrls",
            json!(instance_group_urls(record, pool)),
        ),
        (
            "etag",
            json!(format!(
                "{:016x}",
                wire::fnv(&[&pool.name, &pool.version, &pool.per_zone.to_string()])
            )),
        ),
    ];
    for (k, v) in set {
        p.insert(k.into(), v);
    }
    p.entry("networkConfig")
        .or_insert_with(|| json!({ "podRange": "gke-pods", "podIpv4CidrBlock": "10.4.0.0/14" }));
    Value::Object(p)
}

/// Cluster fields GKE fills in when a request leaves them out.
fn defaults(location: &str) -> Map<String, Value> {
    let v = json!({
        "network": "default",
        "subnetwork": "default",
        "clusterIpv4Cidr": "10.4.0.0/14",
        "servicesIpv4Cidr": "34.118.224.0/20",
        "loggingService": "logging.googleapis.com/kubernetes",
        "monitoringService": "monitoring.googleapis.com/kubernetes",
        "releaseChannel": { "channel": "REGULAR" },
        "addonsConfig": {
            "httpLoadBalancing": {},
            "horizontalPodAutoscaling": {},
            "kubernetesDashboard": { "disabled": true },
            "networkPolicyConfig": { "disabled": true },
            "gcePersistentDiskCsiDriverConfig": { "enabled": true },
        },
        "legacyAbac": {},
        "networkPolicy": {},
        "ipAllocationPolicy": {
            "useIpAliases": true,
            "clusterIpv4CidrBlock": "10.4.0.0/14",
            "servicesIpv4CidrBlock": "34.118.224.0/20",
            "stackType": "IPV4",
        },
        "networkConfig": {
            "network": "projects/-/global/networks/default",
            "subnetwork": format!("projects/-/regions/{}/subnetworks/default", region_of(location)),
            "datapathProvider": "LEGACY_DATAPATH",
        },
        "databaseEncryption": { "state": "DECRYPTED" },
        "shieldedNodes": { "enabled": true },
        "nodeIpv4CidrSize": 24,
        "maintenancePolicy": { "resourceVersion": "e3b0c442" },
    });
    v.as_object().cloned().unwrap_or_default()
}

/// Lays `over` onto `base`: objects merge member by member (a request's
/// `networkConfig` keeps the default network beside its own settings), any
/// other value replaces.
fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The cluster resource.
pub fn cluster(record: &ClusterRecord) -> Value {
    let (project, location) = project_location(record);
    let state = ClusterState::load(record).unwrap_or_default();
    let mut c = defaults(location);
    merge(&mut c, &state.fields);
    let pools: Vec<Value> = state.pools.iter().map(|p| node_pool(record, p)).collect();
    let node_version = state
        .pools
        .iter()
        .map(|p| p.version.as_str())
        .min()
        .unwrap_or(&state.master_version);
    let igms: Vec<String> = state
        .pools
        .iter()
        .flat_map(|p| instance_group_urls(record, p))
        .collect();
    let set = [
        ("name", json!(record.name)),
        (
            "id",
            json!(format!(
                "{:016x}{:016x}",
                wire::fnv(&[&record.id]),
                wire::fnv(&[&record.name, &record.id])
            )),
        ),
        ("location", json!(location)),
        ("zone", json!(location)),
        ("locations", json!(state.locations)),
        (
            "selfLink",
            json!(cluster_link(project, location, &record.name)),
        ),
        ("status", json!(status(record.lifecycle))),
        ("initialClusterVersion", json!(state.initial_version)),
        ("currentMasterVersion", json!(state.master_version)),
        ("currentNodeVersion", json!(node_version)),
        ("currentNodeCount", json!(state.node_count())),
        ("nodePools", json!(pools)),
        ("instanceGroupUrls", json!(igms)),
        ("resourceLabels", json!(record.tags)),
        ("labelFingerprint", json!(label_fingerprint(record))),
        (
            "createTime",
            json!(
                record
                    .created_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        ),
        (
            "etag",
            json!(format!(
                "{:016x}",
                wire::fnv(&[&record.id, &record.updated_at.to_rfc3339()])
            )),
        ),
    ];
    for (k, v) in set {
        c.insert(k.into(), v);
    }
    if let Some(first) = state.pools.first() {
        c.entry("nodeConfig")
            .or_insert_with(|| json!(first.config()));
    }
    if state.ip_rotation {
        c.insert(
            "statusMessage".into(),
            json!("IP rotation started; complete it with completeIpRotation."),
        );
    }
    let advertised = advertise(record);
    private_endpoints(&mut c, &advertised);
    mirror_endpoint_configs(&mut c, &advertised);
    c.extend(endpoint_fields(record));
    Value::Object(c)
}

/// A private cluster shows its control plane's address in the master range
/// (`x.y.z.2` of a /28, as GKE picks it) beside the public one.
fn private_endpoints(c: &mut Map<String, Value>, advertised: &Advertised) {
    let Some(Value::Object(pcc)) = c.get_mut("privateClusterConfig") else {
        return;
    };
    let private = pcc
        .get("masterIpv4CidrBlock")
        .and_then(Value::as_str)
        .and_then(|cidr| cidr.split('/').next())
        .and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok())
        .map(|ip| std::net::Ipv4Addr::from(u32::from(ip).wrapping_add(2)).to_string());
    if let Some(private) = private {
        pcc.insert("privateEndpoint".into(), json!(private));
    }
    if let Some(host) = advertised.host() {
        pcc.insert("publicEndpoint".into(), json!(host));
    }
}

/// Authorized networks live in `controlPlaneEndpointsConfig` today and in
/// `masterAuthorizedNetworksConfig` before; both are shown. The IP endpoint
/// is always `enabled` (without it gcloud looks for a DNS endpoint and fails).
fn mirror_endpoint_configs(c: &mut Map<String, Value>, advertised: &Advertised) {
    let networks = c
        .get("masterAuthorizedNetworksConfig")
        .cloned()
        .or_else(|| {
            c.get("controlPlaneEndpointsConfig")
                .and_then(|v| v.pointer("/ipEndpointsConfig/authorizedNetworksConfig"))
                .cloned()
        })
        .unwrap_or_else(|| json!({}));
    let mut cpe = c
        .get("controlPlaneEndpointsConfig")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut ip = wire::object(&cpe, "ipEndpointsConfig")
        .cloned()
        .unwrap_or_default();
    ip.insert("enabled".into(), json!(true));
    ip.entry("enablePublicEndpoint").or_insert(json!(true));
    ip.insert("authorizedNetworksConfig".into(), networks.clone());
    if let Some(host) = advertised.host() {
        ip.insert("publicEndpoint".into(), json!(host));
    }
    cpe.insert("ipEndpointsConfig".into(), Value::Object(ip));
    c.insert("controlPlaneEndpointsConfig".into(), Value::Object(cpe));
    c.insert("masterAuthorizedNetworksConfig".into(), networks);
}
