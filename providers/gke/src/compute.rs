//! Compute `instanceGroupManagers` of the GKE node pools: terraform derives a
//! pool's `node_count` from the `targetSize` of the managers its
//! `instanceGroupUrls` name.

use kemu_shared::{ClusterRecord, OwnerScope};
use serde_json::{Value, json};

use crate::error::Error;
use crate::state::ClusterState;
use crate::{Gke, render};

/// Every manager of `project` in `zone`: one per zone of each node pool.
fn managers(gke: &Gke, project: &str, zone: &str) -> Vec<Value> {
    let clusters = gke
        .registry
        .list(|c| matches!(&c.scope, OwnerScope::Gke { project: p, .. } if p == project));
    clusters
        .iter()
        .flat_map(|c| managers_of(c, project, zone))
        .collect()
}

fn managers_of(record: &ClusterRecord, project: &str, zone: &str) -> Vec<Value> {
    let Ok(state) = ClusterState::load(record) else {
        return Vec::new();
    };
    let base = format!("https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}");
    state
        .pools
        .iter()
        .filter(|p| p.locations.iter().any(|z| z == zone))
        .map(|p| {
            let name = render::igm_name(record, &p.name, zone);
            let instance_base = name.trim_end_matches("-grp").to_owned();
            json!({
                "kind": "compute#instanceGroupManager",
                "id": format!("{}", crate::wire::fnv(&[&name]) % 10_000_000_000_000_000_000),
                "name": name,
                "zone": base,
                "baseInstanceName": instance_base,
                "instanceGroup": format!("{base}/instanceGroups/{name}"),
                "instanceTemplate": format!(
                    "https://www.googleapis.com/compute/v1/projects/{project}/global/instanceTemplates/{instance_base}"
                ),
                "targetSize": p.per_zone,
                "currentActions": { "none": p.per_zone },
                "status": { "isStable": true },
                "selfLink": format!("{base}/instanceGroupManagers/{name}"),
            })
        })
        .collect()
}

/// `instanceGroupManagers.list`.
pub fn list(gke: &Gke, project: &str, zone: &str) -> Value {
    let base = format!("https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}");
    json!({
        "kind": "compute#instanceGroupManagerList",
        "id": format!("projects/{project}/zones/{zone}/instanceGroupManagers"),
        "items": managers(gke, project, zone),
        "selfLink": format!("{base}/instanceGroupManagers"),
    })
}

/// `instanceGroupManagers.get`.
pub fn get(gke: &Gke, project: &str, zone: &str, name: &str) -> Result<Value, Error> {
    managers(gke, project, zone)
        .into_iter()
        .find(|m| m["name"] == name)
        .ok_or_else(|| {
            Error::NotFound(format!(
                "The resource 'projects/{project}/zones/{zone}/instanceGroupManagers/{name}' was not found"
            ))
        })
}
