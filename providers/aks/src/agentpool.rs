//! Agent pools: the cluster's `agentPoolProfiles` and the `agentPools` child
//! resource are one source of truth, the record's node pools (count, VM size,
//! Node labels and taints) plus each pool's other properties in `extra`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use kemu_shared::{ClusterRecord, Lifecycle, NodePool, Taint};
use serde_json::{Map, Value, json};

use crate::render::{self, Extra};
use crate::router::ClusterPath;
use crate::{Aks, Ctx, Error, cluster, operation, versions};

/// The VM size a pool gets when the request leaves `vmSize` empty.
pub const DEFAULT_VM_SIZE: &str = "Standard_DS2_v2";

/// Where a pool's own power state is kept among its stored properties.
pub const POOL_POWER: &str = "kemuPowerState";

/// Properties kemu computes; never stored from a request.
const SERVER_OWNED: [&str; 8] = [
    "name",
    "count",
    "vmSize",
    "provisioningState",
    "powerState",
    "currentOrchestratorVersion",
    "nodeImageVersion",
    "nodeTaints",
];

/// Where a cluster's pools live: what [`apply`] edits and reads.
pub struct PoolSet<'a> {
    /// The record's node pools.
    pub pools: &'a mut Vec<NodePool>,
    /// The record's `extra[agentPools]`.
    pub extra: &'a mut Value,
    /// Cluster location (a Node label).
    pub location: &'a str,
    /// Node resource group (a Node label).
    pub node_resource_group: &'a str,
    /// The control plane's minor: no pool may be newer.
    pub version: &'a str,
}

/// Creates or updates the pool `name` from request properties (an
/// `agentPoolProfiles[]` entry or an agentPool's `properties`).
pub fn apply(set: &mut PoolSet<'_>, name: &str, props: &Map<String, Value>) -> Result<(), Error> {
    let valid_name = name.len() <= 12
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !valid_name {
        return Err(Error::InvalidParameter(format!(
            "Agent pool name '{name}' is invalid: it must start with a lowercase letter, contain only lowercase letters and numbers, and be at most 12 characters long."
        )));
    }
    let existing = set.pools.iter().position(|p| p.name == name);
    let old_props = set.extra[name].as_object().cloned();
    let str_of = |k: &str| {
        props
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };

    let mode = str_of("mode")
        .or_else(|| old_props.as_ref()?.get("mode")?.as_str())
        .unwrap_or("User")
        .to_owned();
    if mode != "System" && mode != "User" {
        return Err(Error::InvalidParameter(format!(
            "The value of parameter agentPoolProfile.mode is invalid: '{mode}'. Allowed values are System and User."
        )));
    }
    let count = match props.get("count") {
        None | Some(Value::Null) => existing.map_or(1, |i| u64::from(set.pools[i].count)),
        Some(v) => v.as_u64().filter(|c| *c <= 1000).ok_or_else(|| {
            Error::InvalidParameter(format!(
                "The value of parameter agentPoolProfile.count is invalid: {v}. It must be between 0 and 1000."
            ))
        })?,
    };
    if mode == "System" && count == 0 {
        return Err(Error::InvalidParameter(format!(
            "Agent pool '{name}' is in System mode and must have at least one node."
        )));
    }
    let vm_size = match (str_of("vmSize"), existing) {
        (Some(v), Some(i)) if !v.eq_ignore_ascii_case(&set.pools[i].machine_type) => {
            return Err(Error::InvalidParameter(format!(
                "Changing property 'vmSize' of agent pool '{name}' is not allowed."
            )));
        }
        (_, Some(i)) => set.pools[i].machine_type.clone(),
        (Some(v), None) => v.to_owned(),
        (None, None) => DEFAULT_VM_SIZE.to_owned(),
    };
    if let Some(v) = str_of("orchestratorVersion") {
        let minor = versions::resolve(v)?;
        if versions::key(minor) > versions::key(set.version) {
            return Err(Error::InvalidParameter(format!(
                "Agent pool version {v} cannot be newer than the control plane version {}.",
                set.version
            )));
        }
    }
    let taints = match props.get("nodeTaints") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|t| parse_taint(t.as_str().unwrap_or_default()))
            .collect::<Result<Vec<_>, _>>()?,
        _ => existing.map_or_else(Vec::new, |i| set.pools[i].taints.clone()),
    };

    let mut stored = old_props.unwrap_or_default();
    for (k, v) in props {
        if !SERVER_OWNED.contains(&k.as_str()) {
            stored.insert(k.clone(), v.clone());
        }
    }
    stored.insert("mode".into(), json!(mode));
    // A pool's own power state (`az aks nodepool stop/start`); the cluster's
    // overrides it when the cluster is stopped.
    match props.get("powerState").and_then(|p| p["code"].as_str()) {
        Some(code @ ("Running" | "Stopped")) => {
            stored.insert(POOL_POWER.into(), json!(code));
        }
        Some(other) => {
            return Err(Error::InvalidParameter(format!(
                "The value of parameter agentPoolProfile.powerState.code is invalid: '{other}'. Allowed values are Running and Stopped."
            )));
        }
        None => {}
    }
    let user_labels = stored
        .get("nodeLabels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut labels: std::collections::BTreeMap<String, String> =
        render::node_labels(name, &mode, &vm_size, set.location, set.node_resource_group)
            .into_iter()
            .collect();
    for (k, v) in user_labels {
        labels.insert(k, v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    }
    let pool = NodePool {
        name: name.to_owned(),
        count: u32::try_from(count).unwrap_or(0),
        machine_type: vm_size,
        labels,
        taints,
    };
    match existing {
        Some(i) => set.pools[i] = pool,
        None => set.pools.push(pool),
    }
    if !set.extra.is_object() {
        *set.extra = json!({});
    }
    set.extra[name] = Value::Object(stored);
    Ok(())
}

/// The pools of `record`, for [`apply`].
pub fn pool_set<'a>(record: &'a mut ClusterRecord, node_resource_group: &'a str) -> PoolSet<'a> {
    let location = match &record.scope {
        kemu_shared::OwnerScope::Aks { location, .. } => location.as_str(),
        _ => "",
    };
    if !record.extra.is_object() {
        record.extra = json!({});
    }
    PoolSet {
        pools: &mut record.node_pools,
        extra: &mut record.extra[Extra::POOLS],
        location,
        node_resource_group,
        version: &record.version,
    }
}

/// `key=value:Effect` (value optional).
fn parse_taint(text: &str) -> Result<Taint, Error> {
    let invalid = || {
        Error::InvalidParameter(format!(
            "Taint '{text}' is invalid: expected key=value:Effect."
        ))
    };
    let (kv, effect) = text.rsplit_once(':').ok_or_else(invalid)?;
    if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
        return Err(invalid());
    }
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    if key.is_empty() {
        return Err(invalid());
    }
    Ok(Taint {
        key: key.to_owned(),
        value: value.to_owned(),
        effect: effect.to_owned(),
    })
}

fn pool_not_found(path: &ClusterPath, pool: &str) -> Error {
    Error::ResourceNotFound {
        kind: format!(
            "Microsoft.ContainerService/managedClusters/{}/agentPools",
            path.name
        ),
        name: pool.to_owned(),
        resource_group: path.resource_group.clone(),
    }
}

/// `GET …/agentPools`.
pub fn list(aks: &Aks, path: &ClusterPath) -> Result<HttpResponse, Error> {
    let record = cluster::find(aks, path)?;
    let value: Vec<Value> = record
        .node_pools
        .iter()
        .map(|p| render::agent_pool(&record, p))
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "value": value })))
}

/// `GET …/agentPools/{p}`.
pub fn get(aks: &Aks, path: &ClusterPath, pool: &str) -> Result<HttpResponse, Error> {
    let record = cluster::find(aks, path)?;
    let p = record
        .node_pools
        .iter()
        .find(|p| p.name == pool)
        .ok_or_else(|| pool_not_found(path, pool))?;
    Ok(HttpResponse::Ok().json(render::agent_pool(&record, p)))
}

/// `PUT …/agentPools/{p}`: add a pool (201) or change one (200).
pub fn put(
    aks: &Aks,
    ctx: &Ctx,
    path: &ClusterPath,
    pool: &str,
    body: &Value,
) -> Result<HttpResponse, Error> {
    let record = cluster::find(aks, path)?;
    cluster::require_idle(&record)?;
    let props = body["properties"].as_object().cloned().unwrap_or_default();
    let created = !record.node_pools.iter().any(|p| p.name == pool);
    let mut draft = record.clone();
    let node_rg = render::node_resource_group(&record);
    apply(&mut pool_set(&mut draft, &node_rg), pool, &props)?;
    cluster::begin_update(aks, &mut draft);
    let record = cluster::commit(aks, draft)?;
    let op = operation::start(aks);
    let p = record
        .node_pools
        .iter()
        .find(|p| p.name == pool)
        .ok_or_else(|| pool_not_found(path, pool))?;
    let state = if created { "Creating" } else { "Updating" };
    let mut out = render::agent_pool(&record, p);
    out["properties"]["provisioningState"] = json!(state);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, status, sub, location, &op, false).json(out))
}

/// `DELETE …/agentPools/{p}`: 202, or 204 when absent. The last System pool
/// cannot go.
pub fn delete(aks: &Aks, ctx: &Ctx, path: &ClusterPath, pool: &str) -> Result<HttpResponse, Error> {
    let record = cluster::find(aks, path)?;
    let Some(target) = record.node_pools.iter().find(|p| p.name == pool) else {
        return Ok(HttpResponse::NoContent().finish());
    };
    cluster::require_idle(&record)?;
    let is_system = |p: &NodePool| {
        p.labels
            .get("kubernetes.azure.com/mode")
            .map(String::as_str)
            == Some("system")
    };
    if is_system(target) && record.node_pools.iter().filter(|p| is_system(p)).count() == 1 {
        return Err(Error::OperationNotAllowed(format!(
            "Cannot delete agent pool '{pool}': it is the last System mode pool of cluster '{}'.",
            record.name
        )));
    }
    let mut draft = record.clone();
    draft.node_pools.retain(|p| p.name != pool);
    if let Some(pools) = draft.extra[Extra::POOLS].as_object_mut() {
        pools.remove(pool);
    }
    cluster::begin_update(aks, &mut draft);
    let record = cluster::commit(aks, draft)?;
    let op = operation::start(aks);
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, StatusCode::ACCEPTED, sub, location, &op, true).finish())
}

/// `GET …/agentPools/{p}/upgradeProfiles/default`: a pool may go up to the
/// control plane's version.
pub fn upgrade_profile(aks: &Aks, path: &ClusterPath, pool: &str) -> Result<HttpResponse, Error> {
    let record = cluster::find(aks, path)?;
    let p = record
        .node_pools
        .iter()
        .find(|p| p.name == pool)
        .ok_or_else(|| pool_not_found(path, pool))?;
    let props = render::pool_properties(&record, p);
    let version = props["orchestratorVersion"]
        .as_str()
        .and_then(|v| versions::resolve(v).ok())
        .unwrap_or(&record.version)
        .to_owned();
    let upgrades: Vec<Value> = versions::SUPPORTED
        .iter()
        .filter(|(m, _)| {
            versions::key(m) > versions::key(&version)
                && versions::key(m) <= versions::key(&record.version)
        })
        .map(|(_, patch)| json!({ "kubernetesVersion": patch, "isPreview": false }))
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "id": format!("{}/agentPools/{pool}/upgradeProfiles/default", render::resource_id(&record)),
        "name": "default",
        "type": "Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles",
        "properties": {
            "kubernetesVersion": versions::patch(&version),
            "osType": "Linux",
            "upgrades": upgrades,
            "latestNodeImageVersion": render::NODE_IMAGE,
        },
    })))
}

/// Whether the record is busy with a write.
pub fn busy(lifecycle: Lifecycle) -> bool {
    matches!(
        lifecycle,
        Lifecycle::Provisioning | Lifecycle::Updating | Lifecycle::Deleting
    )
}
