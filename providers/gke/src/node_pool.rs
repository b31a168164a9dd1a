//! Node pool operations. A pool of N nodes per zone is N Nodes per zone in the
//! shared record (see [`crate::state::PoolState::shared`]).

use serde_json::{Value, json};

use crate::cluster::{Body, edit, find};
use crate::error::Error;
use crate::operation::OpType;
use crate::router::{ClusterRef, PoolRef};
use crate::state::{ClusterState, PoolState, zones_from};
use crate::{Gke, render, server_config, wire};

fn not_found(r: &PoolRef) -> Error {
    Error::NotFound(format!("Not found: {}.", r.path()))
}

/// nodePools.list.
pub fn list(gke: &Gke, r: &ClusterRef) -> Result<Value, Error> {
    let record = find(gke, r)?;
    let state = ClusterState::load(&record)?;
    let pools: Vec<Value> = state
        .pools
        .iter()
        .map(|p| render::node_pool(&record, p))
        .collect();
    Ok(json!({ "nodePools": pools }))
}

/// nodePools.get.
pub fn get(gke: &Gke, r: &PoolRef) -> Result<Value, Error> {
    let record = find(gke, &r.cluster)?;
    let state = ClusterState::load(&record)?;
    let pool = state
        .pools
        .iter()
        .find(|p| p.name == r.name)
        .ok_or_else(|| not_found(r))?;
    Ok(render::node_pool(&record, pool))
}

/// nodePools.create.
pub fn create(gke: &Gke, r: &ClusterRef, body: &Body) -> Result<Value, Error> {
    let np = wire::object(body, "nodePool")
        .ok_or_else(|| Error::InvalidArgument("Missing required field: node_pool.".into()))?
        .clone();
    let name = np
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    wire::check_name("node_pool.name", &name)?;
    let pool_ref = PoolRef {
        cluster: r.clone(),
        name: name.clone(),
    };
    let now = gke.registry.clock().now();
    let delay = gke.options.provisioning;
    edit(gke, r, OpType::CreateNodePool, Some(&name), |st, _| {
        if st.pools.iter().any(|p| p.name == name) {
            return Err(Error::AlreadyExists(format!(
                "Already exists: {}.",
                pool_ref.path()
            )));
        }
        let pool = PoolState::from_request(
            "node_pool",
            &np,
            &st.locations,
            &r.location,
            &st.master_version,
            now,
            delay,
        )?;
        st.pools.push(pool);
        Ok(())
    })
}

/// nodePools.delete.
pub fn delete(gke: &Gke, r: &PoolRef) -> Result<Value, Error> {
    edit(
        gke,
        &r.cluster,
        OpType::DeleteNodePool,
        Some(&r.name),
        |st, _| {
            let before = st.pools.len();
            st.pools.retain(|p| p.name != r.name);
            if st.pools.len() == before {
                return Err(not_found(r));
            }
            Ok(())
        },
    )
}

/// Which node pool custom method a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setter {
    /// `:setSize`.
    Size,
    /// `:setAutoscaling`.
    Autoscaling,
    /// `:setManagement`.
    Management,
    /// `:rollback`.
    Rollback,
    /// `PUT` (legacy `/update`): versions, labels, taints, machine shape.
    Update,
}

/// The node pool custom methods and update.
pub fn set(gke: &Gke, r: &PoolRef, setter: Setter, body: &Body) -> Result<Value, Error> {
    let kind = match setter {
        Setter::Size => OpType::SetNodePoolSize,
        Setter::Management => OpType::SetNodePoolManagement,
        Setter::Rollback | Setter::Update => OpType::UpgradeNodes,
        Setter::Autoscaling => OpType::UpdateCluster,
    };
    let location = r.cluster.location.clone();
    edit(gke, &r.cluster, kind, Some(&r.name), |st, _| {
        let master = st.master_version.clone();
        let pool = st.pool_mut(&r.name).ok_or_else(|| not_found(r))?;
        match setter {
            Setter::Size => {
                let n = wire::int32(body.get("nodeCount"), "node_count")?.ok_or_else(|| {
                    Error::InvalidArgument("Missing required field: node_count.".into())
                })?;
                pool.per_zone = crate::state::per_zone_count(n, "node_count")?;
            }
            Setter::Autoscaling => {
                let a = body
                    .get("autoscaling")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                pool.fields.insert("autoscaling".into(), a);
            }
            Setter::Management => {
                let m = body.get("management").cloned().unwrap_or_else(|| json!({}));
                pool.fields.insert("management".into(), m);
            }
            Setter::Rollback => {
                let previous = pool.previous_version.take().ok_or_else(|| {
                    Error::FailedPrecondition(format!(
                        "Node pool {} has no upgrade to roll back.",
                        r.name
                    ))
                })?;
                pool.version = previous;
            }
            Setter::Update => update(pool, body, &master, &location)?,
        }
        Ok(())
    })
}

/// nodePools.update: the fields an `UpdateNodePoolRequest` may carry.
fn update(pool: &mut PoolState, body: &Body, master: &str, location: &str) -> Result<(), Error> {
    for (key, value) in body {
        match key.as_str() {
            "nodeVersion" => {
                let v = match value.as_str().unwrap_or_default() {
                    "-" | "" => master.to_owned(),
                    v => server_config::resolve(v, "node_version")?,
                };
                pool.previous_version = Some(std::mem::replace(&mut pool.version, v));
            }
            "locations" => {
                if let Some(zones) = zones_from(Some(value), location, "locations")? {
                    pool.locations = zones;
                }
            }
            // Wrapped lists: `{"labels":{"labels":{…}}}`, `{"taints":{"taints":[…]}}`.
            "labels" | "taints" | "tags" | "resourceLabels" => {
                let inner = match key.as_str() {
                    "resourceLabels" => "labels",
                    k => k,
                };
                let v = value
                    .get(inner)
                    .cloned()
                    .unwrap_or_else(|| match key.as_str() {
                        "taints" | "tags" => json!([]),
                        _ => json!({}),
                    });
                pool.set_config(key, v);
            }
            "imageType"
            | "machineType"
            | "diskSizeGb"
            | "diskType"
            | "workloadMetadataConfig"
            | "kubeletConfig"
            | "linuxNodeConfig"
            | "gcfsConfig"
            | "gvnic"
            | "loggingConfig"
            | "resourceManagerTags"
            | "confidentialNodes"
            | "fastSocket"
            | "windowsNodeConfig"
            | "accelerators"
            | "storagePools" => {
                pool.set_config(key, value.clone());
            }
            "upgradeSettings" | "networkConfig" | "queuedProvisioning" => {
                pool.fields.insert(key.clone(), value.clone());
            }
            // Names repeated from the URL, and fields kemu does not model.
            _ => {}
        }
    }
    Ok(())
}
