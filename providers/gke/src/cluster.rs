//! Cluster operations: create, get, list, update, delete and the cluster
//! custom methods. Every mutation goes through [`edit`], which checks the
//! cluster can change, applies the change to a draft (nothing is written if it
//! fails) and starts the Operation.

use kemu_shared::{ClusterRecord, ClusterSpec, Lifecycle, OwnerScope, RegistryError};
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::operation::OpType;
use crate::router::{ClusterRef, LocationRef};
use crate::state::{ClusterState, PoolState, default_zones, is_zone, region_of, zones_from};
use crate::{Gke, render, server_config, wire};

/// A JSON request body.
pub type Body = Map<String, Value>;

/// The cluster `r` names, with its node pools settled to the clock; NOT_FOUND
/// with the GKE path otherwise.
pub fn find(gke: &Gke, r: &ClusterRef) -> Result<ClusterRecord, Error> {
    let record = gke
        .registry
        .find(&r.scope(), &r.name)
        .map_err(|_| Error::NotFound(format!("Not found: {}.", r.path())))?;
    settled(gke, record)
}

/// `record` with node pools whose provisioning is over marked RUNNING.
fn settled(gke: &Gke, record: ClusterRecord) -> Result<ClusterRecord, Error> {
    let now = gke.registry.clock().now();
    let mut state = ClusterState::load(&record)?;
    if !state.settle(now) {
        return Ok(record);
    }
    let (_, record) = gke.registry.update(&record.id, |rec| {
        let mut st = ClusterState::load(rec).map_err(|_| wrong_state(rec))?;
        st.settle(now);
        st.store(rec);
        Ok(())
    })?;
    Ok(record)
}

fn wrong_state(rec: &ClusterRecord) -> RegistryError {
    RegistryError::WrongState {
        name: rec.name.clone(),
        state: "unreadable".into(),
    }
}

/// Applies `change` to the cluster `r` names and starts an Operation of
/// `kind` (on `pool`, if given). Refused while the cluster is being created or
/// deleted, or while another operation runs on it, as GKE does.
pub fn edit(
    gke: &Gke,
    r: &ClusterRef,
    kind: OpType,
    pool: Option<&str>,
    change: impl FnOnce(&mut ClusterState, &mut ClusterRecord) -> Result<(), Error>,
) -> Result<Value, Error> {
    let _serial = gke.operations.serialize();
    let record = find(gke, r)?;
    let now = gke.registry.clock().now();
    check_idle(gke, r, &record)?;
    let delay = gke.options.provisioning;
    let mut failed = None;
    let result = gke.registry.update(&record.id, |rec| {
        let applied = ClusterState::load(rec).and_then(|mut st| {
            change(&mut st, rec)?;
            st.store(rec);
            Ok(())
        });
        if let Err(e) = applied {
            // Abort the registry update: the draft is dropped, nothing changes.
            failed = Some(e);
            return Err(wrong_state(rec));
        }
        if !delay.is_zero() {
            rec.lifecycle = Lifecycle::Updating;
            rec.pending = Some((
                now + chrono::Duration::from_std(delay).unwrap_or_default(),
                Some(Lifecycle::Running),
            ));
        }
        Ok(())
    });
    if let Some(e) = failed {
        return Err(e);
    }
    result?;
    Ok(gke.start_operation(r, kind, pool, String::new()))
}

fn check_idle(gke: &Gke, r: &ClusterRef, record: &ClusterRecord) -> Result<(), Error> {
    let now = gke.registry.clock().now();
    if let Some(op) = gke.operations.busy(&r.project, &r.location, &r.name, now) {
        return Err(Error::FailedPrecondition(format!(
            "Cluster is running incompatible operation {op}."
        )));
    }
    match record.lifecycle {
        Lifecycle::Provisioning | Lifecycle::Deleting => Err(Error::FailedPrecondition(format!(
            "Cluster {} is currently being created, deleted, updated or repaired and cannot be updated.",
            r.name
        ))),
        _ => Ok(()),
    }
}

/// clusters.get. `get-credentials` (told apart by gcloud's user agent, as
/// GKE has no separate credentials call) fails with a clear message when the
/// data plane does not serve the cluster, instead of letting gcloud write a
/// kubeconfig that points at the sentinel endpoint.
pub fn get(gke: &Gke, r: &ClusterRef, user_agent: &str) -> Result<Value, Error> {
    let record = find(gke, r)?;
    if user_agent.contains("command/gcloud.container.clusters.get-credentials")
        && !render::credentials_available(&record)
        && record.lifecycle != Lifecycle::Provisioning
    {
        return Err(Error::FailedPrecondition(format!(
            "kemu: the data plane is not serving cluster {} (kemu runs with --no-dataplane, or the \
             cluster's listener is not bound yet), so no kubeconfig can reach it. Start kemu with \
             the data plane and run get-credentials again.",
            r.path()
        )));
    }
    Ok(render::cluster(&record))
}

/// clusters.list; location `-` lists every location of the project.
pub fn list(gke: &Gke, at: &LocationRef) -> Result<Value, Error> {
    let clusters: Vec<Value> = gke
        .registry
        .list(|c| match &c.scope {
            OwnerScope::Gke { project, location } => {
                *project == at.project && (at.location == "-" || *location == at.location)
            }
            _ => false,
        })
        .into_iter()
        .map(|c| settled(gke, c).map(|c| render::cluster(&c)))
        .collect::<Result<_, _>>()?;
    Ok(json!({ "clusters": clusters }))
}

/// clusters.create: zonal or regional, Standard or Autopilot. The request
/// names node pools, or (legacy) an `initialNodeCount` and `nodeConfig` that
/// make `default-pool`.
pub fn create(gke: &Gke, at: &LocationRef, body: &Body) -> Result<Value, Error> {
    if at.location == "-" {
        return Err(Error::InvalidArgument(
            "Location \"-\" is not valid for creating a cluster.".into(),
        ));
    }
    let cluster = wire::object(body, "cluster")
        .ok_or_else(|| Error::InvalidArgument("Missing required field: cluster.".into()))?;
    let name = cluster
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    wire::check_name("cluster.name", name)?;
    let autopilot = cluster
        .get("autopilot")
        .and_then(|a| a.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true);
    if autopilot && is_zone(&at.location) {
        return Err(Error::InvalidArgument(
            "Autopilot clusters must be regional clusters.".into(),
        ));
    }
    let version = server_config::resolve(
        cluster
            .get("initialClusterVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        "cluster.initial_cluster_version",
    )?;
    let locations = zones_from(cluster.get("locations"), &at.location, "cluster.locations")?
        .unwrap_or_else(|| default_zones(&at.location));
    let now = gke.registry.clock().now();
    let delay = gke.options.provisioning;

    let mut requested: Vec<Map<String, Value>> = cluster
        .get("nodePools")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(|p| p.as_object().cloned()).collect())
        .unwrap_or_default();
    if requested.is_empty() {
        let mut np = Map::new();
        np.insert("name".into(), json!("default-pool"));
        let count = wire::int32(
            cluster.get("initialNodeCount"),
            "cluster.initial_node_count",
        )?
        .unwrap_or(if autopilot { 1 } else { 3 });
        np.insert("initialNodeCount".into(), json!(count));
        if let Some(config) = cluster.get("nodeConfig") {
            np.insert("config".into(), config.clone());
        }
        requested.push(np);
    }
    let mut pools: Vec<PoolState> = Vec::new();
    for (i, np) in requested.iter().enumerate() {
        // The legacy count is the cluster's own field.
        let field = if cluster.contains_key("nodePools") {
            format!("cluster.node_pools[{i}]")
        } else {
            "cluster".to_owned()
        };
        let pool =
            PoolState::from_request(&field, np, &locations, &at.location, &version, now, delay)?;
        if pools.iter().any(|p| p.name == pool.name) {
            return Err(Error::InvalidArgument(format!(
                "Node pool names must be unique; \"{}\" is used twice.",
                pool.name
            )));
        }
        pools.push(pool);
    }

    let mut fields = cluster.clone();
    for k in [
        "name",
        "nodePools",
        "initialNodeCount",
        "nodeConfig",
        "locations",
        "initialClusterVersion",
        "resourceLabels",
        "status",
        "statusMessage",
        "endpoint",
        "masterAuth",
        "selfLink",
        "zone",
        "location",
        "currentMasterVersion",
        "currentNodeVersion",
        "currentNodeCount",
        "createTime",
        "instanceGroupUrls",
        "labelFingerprint",
        "id",
        "etag",
    ] {
        fields.remove(k);
    }
    normalize_networking(&mut fields);
    if autopilot {
        fields
            .entry("autopilot")
            .or_insert(json!({ "enabled": true }));
        fields.insert("verticalPodAutoscaling".into(), json!({ "enabled": true }));
    }
    let tags = string_map(cluster.get("resourceLabels"));
    let state = ClusterState {
        master_version: version.clone(),
        initial_version: version.clone(),
        locations,
        fields,
        pools,
        ip_rotation: false,
    };
    let region = region_of(&at.location).to_owned();
    let spec = ClusterSpec {
        scope: OwnerScope::Gke {
            project: at.project.clone(),
            location: at.location.clone(),
        },
        name: name.to_owned(),
        version: server_config::minor(&version),
        node_pools: state.pools.iter().map(|p| p.shared(&region)).collect(),
        tags,
        provisioning: delay,
        extra: serde_json::to_value(&state).map_err(|e| Error::Internal(e.to_string()))?,
    };
    let r = ClusterRef {
        project: at.project.clone(),
        location: at.location.clone(),
        name: name.to_owned(),
    };
    gke.registry.create(spec).map_err(|e| match e {
        RegistryError::AlreadyExists(_) => {
            Error::AlreadyExists(format!("Already exists: {}.", r.path()))
        }
        other => other.into(),
    })?;
    let detail = if gke.registry.dataplane_attached() {
        String::new()
    } else {
        "kemu runs without its data plane: the cluster shows a placeholder endpoint and kubectl \
         cannot reach it."
            .to_owned()
    };
    Ok(gke.start_operation(&r, OpType::CreateCluster, None, detail))
}

/// Private nodes and authorized networks each have a current and a legacy
/// spelling; keep one of each so both render the same.
fn normalize_networking(fields: &mut Map<String, Value>) {
    if !fields.contains_key("masterAuthorizedNetworksConfig")
        && let Some(n) = fields
            .get("controlPlaneEndpointsConfig")
            .and_then(|v| v.pointer("/ipEndpointsConfig/authorizedNetworksConfig"))
            .cloned()
    {
        fields.insert("masterAuthorizedNetworksConfig".into(), n);
    }
    let private = fields
        .get("privateClusterConfig")
        .and_then(|p| p.get("enablePrivateNodes"))
        .or_else(|| {
            fields
                .get("networkConfig")
                .and_then(|n| n.get("defaultEnablePrivateNodes"))
        })
        .and_then(Value::as_bool);
    if let Some(private) = private {
        let mut pcc = wire::object(fields, "privateClusterConfig")
            .cloned()
            .unwrap_or_default();
        pcc.insert("enablePrivateNodes".into(), json!(private));
        fields.insert("privateClusterConfig".into(), Value::Object(pcc));
        let mut nc = wire::object(fields, "networkConfig")
            .cloned()
            .unwrap_or_default();
        nc.insert("defaultEnablePrivateNodes".into(), json!(private));
        fields.insert("networkConfig".into(), Value::Object(nc));
    }
}

fn string_map(v: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
        .collect()
}

/// clusters.delete: the cluster shows STOPPING for the provisioning delay,
/// then disappears and its listener closes.
pub fn delete(gke: &Gke, r: &ClusterRef) -> Result<Value, Error> {
    let _serial = gke.operations.serialize();
    let record = find(gke, r)?;
    check_idle(gke, r, &record)?;
    gke.registry.delete(&record.id, gke.options.provisioning)?;
    Ok(gke.start_operation(r, OpType::DeleteCluster, None, String::new()))
}

/// clusters.update: `update.desired*`. Known fields act on versions, zones
/// and node pools; any other `desiredFoo` sets the cluster's `foo`.
pub fn update(gke: &Gke, r: &ClusterRef, body: &Body) -> Result<Value, Error> {
    let update = wire::object(body, "update").cloned().unwrap_or_default();
    if !update
        .keys()
        .any(|k| k.starts_with("desired") && k != "desiredNodePoolId")
    {
        return Err(Error::InvalidArgument(
            "Must specify a field to update.".into(),
        ));
    }
    let pool_id = update
        .get("desiredNodePoolId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = if update.contains_key("desiredMasterVersion") {
        OpType::UpgradeMaster
    } else if update.contains_key("desiredNodeVersion") {
        OpType::UpgradeNodes
    } else {
        OpType::UpdateCluster
    };
    let location = r.location.clone();
    let pool_path = |p: &str| format!("{}/nodePools/{p}", r.path());
    edit(gke, r, kind, pool_id.as_deref(), |st, rec| {
        for (key, value) in &update {
            match key.as_str() {
                "desiredNodePoolId" => {}
                "desiredMasterVersion" => {
                    st.master_version = server_config::resolve(
                        value.as_str().unwrap_or_default(),
                        "update.desired_master_version",
                    )?;
                }
                "desiredNodeVersion" => {
                    let v = match value.as_str().unwrap_or_default() {
                        "-" | "" => st.master_version.clone(),
                        v => server_config::resolve(v, "update.desired_node_version")?,
                    };
                    for p in pools_named(st, pool_id.as_deref(), &pool_path)? {
                        p.previous_version = Some(std::mem::replace(&mut p.version, v.clone()));
                    }
                }
                "desiredNodePoolAutoscaling" => {
                    let Some(id) = pool_id.as_deref() else {
                        return Err(Error::InvalidArgument(
                            "update.desired_node_pool_id must be set with desired_node_pool_autoscaling.".into(),
                        ));
                    };
                    for p in pools_named(st, Some(id), &pool_path)? {
                        p.fields.insert("autoscaling".into(), value.clone());
                    }
                }
                "desiredImageType" => {
                    for p in pools_named(st, pool_id.as_deref(), &pool_path)? {
                        p.set_config("imageType", value.clone());
                    }
                }
                "desiredLocations" => {
                    set_locations(st, value, &location, "update.desired_locations")?
                }
                "desiredResourceLabels" => {
                    rec.tags = string_map(value.get("labels"));
                }
                "desiredControlPlaneEndpointsConfig" => {
                    st.fields
                        .insert("controlPlaneEndpointsConfig".into(), value.clone());
                    if let Some(n) = value.pointer("/ipEndpointsConfig/authorizedNetworksConfig") {
                        st.fields
                            .insert("masterAuthorizedNetworksConfig".into(), n.clone());
                    }
                }
                other => {
                    if let Some(field) = other.strip_prefix("desired") {
                        let mut chars = field.chars();
                        if let Some(first) = chars.next() {
                            let name = format!("{}{}", first.to_ascii_lowercase(), chars.as_str());
                            st.fields.insert(name, value.clone());
                        }
                    }
                }
            }
        }
        normalize_networking(&mut st.fields);
        Ok(())
    })
}

/// The pools an update names: one by id, or all of them.
fn pools_named<'a>(
    st: &'a mut ClusterState,
    id: Option<&str>,
    path: &dyn Fn(&str) -> String,
) -> Result<Vec<&'a mut PoolState>, Error> {
    match id {
        None => Ok(st.pools.iter_mut().collect()),
        Some(id) => st
            .pool_mut(id)
            .map(|p| vec![p])
            .ok_or_else(|| Error::NotFound(format!("Not found: {}.", path(id)))),
    }
}

fn set_locations(
    st: &mut ClusterState,
    value: &Value,
    location: &str,
    field: &str,
) -> Result<(), Error> {
    let zones = zones_from(Some(value), location, field)?.ok_or_else(|| {
        Error::InvalidArgument(format!("Invalid value for field \"{field}\": empty."))
    })?;
    if is_zone(location) && !zones.iter().any(|z| z == location) {
        return Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": the cluster's own zone {location} must be included."
        )));
    }
    for p in &mut st.pools {
        if p.locations == st.locations {
            p.locations = zones.clone();
        }
    }
    st.locations = zones;
    Ok(())
}

/// Which cluster custom method a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setter {
    /// `:setResourceLabels`.
    ResourceLabels,
    /// `:setLegacyAbac`.
    LegacyAbac,
    /// `:setNetworkPolicy`.
    NetworkPolicy,
    /// `:setMaintenancePolicy`.
    MaintenancePolicy,
    /// `:setMasterAuth`.
    MasterAuth,
    /// `:startIpRotation`.
    StartIpRotation,
    /// `:completeIpRotation`.
    CompleteIpRotation,
    /// `:updateMaster`.
    UpdateMaster,
    /// `:setLogging`.
    Logging,
    /// `:setMonitoring`.
    Monitoring,
    /// `:setAddons`.
    Addons,
    /// `:setLocations`.
    Locations,
}

/// The cluster custom methods: each sets one part of the cluster.
pub fn set(gke: &Gke, r: &ClusterRef, setter: Setter, body: &Body) -> Result<Value, Error> {
    let kind = match setter {
        Setter::ResourceLabels => OpType::SetLabels,
        Setter::NetworkPolicy => OpType::SetNetworkPolicy,
        Setter::MaintenancePolicy => OpType::SetMaintenancePolicy,
        Setter::MasterAuth => OpType::SetMasterAuth,
        Setter::UpdateMaster => OpType::UpgradeMaster,
        _ => OpType::UpdateCluster,
    };
    let location = r.location.clone();
    let field = |key: &str| -> Result<Value, Error> {
        body.get(key)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("Missing required field: {key}.")))
    };
    edit(gke, r, kind, None, |st, rec| {
        match setter {
            Setter::ResourceLabels => {
                let fingerprint = body
                    .get("labelFingerprint")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !fingerprint.is_empty() && fingerprint != render::label_fingerprint(rec) {
                    return Err(Error::FailedPrecondition(
                        "Labels could not be set due to fingerprint mismatch.".into(),
                    ));
                }
                rec.tags = string_map(body.get("resourceLabels"));
            }
            Setter::LegacyAbac => {
                let enabled = body
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                st.fields
                    .insert("legacyAbac".into(), json!({ "enabled": enabled }));
            }
            Setter::NetworkPolicy => {
                st.fields
                    .insert("networkPolicy".into(), field("networkPolicy")?);
            }
            Setter::MaintenancePolicy => {
                let mut policy = field("maintenancePolicy")?;
                let version = format!("{:08x}", wire::fnv(&[&policy.to_string()]) & 0xffff_ffff);
                if let Some(p) = policy.as_object_mut() {
                    p.insert("resourceVersion".into(), json!(version));
                }
                st.fields.insert("maintenancePolicy".into(), policy);
            }
            Setter::MasterAuth => {
                let action = body.get("action").cloned().unwrap_or(Value::Null);
                let known = ["SET_PASSWORD", "GENERATE_PASSWORD", "SET_USERNAME"];
                let ok = action.as_str().is_some_and(|a| known.contains(&a))
                    || action.as_i64().is_some_and(|n| (1..=3).contains(&n));
                if !ok {
                    return Err(Error::InvalidArgument(format!(
                        "Invalid value for field \"action\": {action}."
                    )));
                }
            }
            Setter::StartIpRotation => st.ip_rotation = true,
            Setter::CompleteIpRotation => {
                if !st.ip_rotation {
                    return Err(Error::FailedPrecondition(
                        "Cluster is not undergoing IP rotation; start one with startIpRotation."
                            .into(),
                    ));
                }
                st.ip_rotation = false;
            }
            Setter::UpdateMaster => {
                st.master_version = server_config::resolve(
                    field("masterVersion")?.as_str().unwrap_or_default(),
                    "master_version",
                )?;
            }
            Setter::Logging => {
                st.fields
                    .insert("loggingService".into(), field("loggingService")?);
            }
            Setter::Monitoring => {
                st.fields
                    .insert("monitoringService".into(), field("monitoringService")?);
            }
            Setter::Addons => {
                st.fields
                    .insert("addonsConfig".into(), field("addonsConfig")?);
            }
            Setter::Locations => set_locations(st, &field("locations")?, &location, "locations")?,
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorized_networks_and_private_nodes_mirror() {
        let mut f = json!({
            "controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"authorizedNetworksConfig":
                {"enabled": true, "cidrBlocks": [{"cidrBlock": "10.0.0.0/8"}]}}},
            "privateClusterConfig": {"enablePrivateNodes": true, "masterIpv4CidrBlock": "172.16.0.0/28"},
        })
        .as_object()
        .cloned()
        .unwrap();
        normalize_networking(&mut f);
        assert_eq!(
            f["masterAuthorizedNetworksConfig"]["cidrBlocks"][0]["cidrBlock"],
            "10.0.0.0/8"
        );
        assert_eq!(f["networkConfig"]["defaultEnablePrivateNodes"], true);
    }
}
