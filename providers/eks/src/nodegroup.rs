//! Managed node groups. Each one is a [`NodePool`] of the shared record, so a
//! group of N is N Nodes in the cluster, labelled as EKS labels its nodes.

use std::collections::BTreeMap;

use kemu_shared::{ClusterRecord, Lifecycle, NodePool, Taint};
use serde_json::{Map, Value, json};

use crate::error::Error;
use crate::render;
use crate::resources::{get, insert};
use crate::state::{ClusterState, Kind, UpdateTarget};
use crate::wire::{epoch, string_map};
use crate::{Call, Eks, catalog, update};

/// The instance type of a group that names none.
pub const DEFAULT_INSTANCE_TYPE: &str = "t3.medium";

/// Refuses to add to a cluster that is not `ACTIVE` or `UPDATING`.
pub fn require_cluster_active(record: &ClusterRecord) -> Result<(), Error> {
    match record.lifecycle {
        Lifecycle::Running | Lifecycle::Updating => Ok(()),
        l => Err(Error::InvalidRequest(format!(
            "Cluster '{}' is not in ACTIVE status (it is {})",
            record.name,
            render::status(l)
        ))),
    }
}

/// EKS taint effects to Kubernetes ones.
fn effect(eks: &str) -> &'static str {
    match eks {
        "NO_EXECUTE" => "NoExecute",
        "PREFER_NO_SCHEDULE" => "PreferNoSchedule",
        _ => "NoSchedule",
    }
}

/// The node pools the node groups of `cs` stand for, with the labels EKS puts
/// on their nodes (the group's own labels last, as EKS lets them override
/// nothing of its own).
pub fn node_pools(cs: &ClusterState, region: &str) -> Vec<NodePool> {
    cs.list(Kind::Nodegroup)
        .map(|(name, item)| {
            let o = &item.obj;
            let instance = o
                .get("instanceTypes")
                .and_then(|v| v.get(0))
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_INSTANCE_TYPE);
            let capacity = o
                .get("capacityType")
                .and_then(Value::as_str)
                .unwrap_or("ON_DEMAND");
            let mut labels: BTreeMap<String, String> =
                o.get("labels").and_then(string_map).unwrap_or_default();
            for (k, v) in [
                ("eks.amazonaws.com/nodegroup", name.as_str()),
                ("eks.amazonaws.com/capacityType", capacity),
                ("eks.amazonaws.com/nodegroup-image", "ami-0kemu0000000000"),
                ("node.kubernetes.io/instance-type", instance),
                ("beta.kubernetes.io/instance-type", instance),
                ("topology.kubernetes.io/region", region),
                ("failure-domain.beta.kubernetes.io/region", region),
            ] {
                labels.insert(k.to_owned(), v.to_owned());
            }
            // Nodes of one pool share its labels, so the pool sits in the
            // region's first zone.
            let zone = format!("{region}a");
            labels.insert("topology.kubernetes.io/zone".into(), zone.clone());
            labels.insert("failure-domain.beta.kubernetes.io/zone".into(), zone);
            let taints = o
                .get("taints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| Taint {
                    key: t
                        .get("key")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    value: t
                        .get("value")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    effect: effect(t.get("effect").and_then(Value::as_str).unwrap_or_default())
                        .to_owned(),
                })
                .collect();
            let count = o
                .get("scalingConfig")
                .and_then(|s| s.get("desiredSize"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            NodePool {
                name: name.clone(),
                count: u32::try_from(count).unwrap_or(u32::MAX),
                machine_type: instance.to_owned(),
                labels,
                taints,
            }
        })
        .collect()
}

fn release_version(version: &str) -> String {
    format!("{version}.0-20260101")
}

/// EKS's quota of nodes in one managed node group.
pub const MAX_NODES_PER_NODEGROUP: i64 = 450;
/// EKS's quota of managed node groups in one cluster.
pub const MAX_NODEGROUPS_PER_CLUSTER: usize = 30;

/// Checks `minSize ≤ desiredSize ≤ maxSize`, `maxSize ≥ 1`, each an integer
/// and `maxSize` within the per-group quota.
fn check_scaling(s: &Map<String, Value>) -> Result<(), Error> {
    let n = |k: &str| match s.get(k) {
        None => Ok(0),
        Some(v) => v
            .as_i64()
            .filter(|n| i32::try_from(*n).is_ok())
            .ok_or_else(|| {
                Error::InvalidParameter(format!("scalingConfig.{k} must be an integer, not {v}."))
            }),
    };
    let (min, max, desired) = (n("minSize")?, n("maxSize")?, n("desiredSize")?);
    if min < 0 || max < 1 || desired < min || desired > max {
        return Err(Error::InvalidParameter(format!(
            "Invalid scaling config: minSize {min}, maxSize {max}, desiredSize {desired} (need 0 <= minSize <= desiredSize <= maxSize, maxSize >= 1)."
        )));
    }
    if max > MAX_NODES_PER_NODEGROUP {
        return Err(Error::InvalidParameter(format!(
            "Invalid scaling config: maxSize {max} exceeds the limit of {MAX_NODES_PER_NODEGROUP} nodes per managed node group."
        )));
    }
    Ok(())
}

fn check_taints(v: &Value) -> Result<(), Error> {
    let ok = v.as_array().is_some_and(|ts| {
        ts.iter().all(|t| {
            t.get("key").is_some_and(Value::is_string)
                && t.get("effect").and_then(Value::as_str).is_some_and(|e| {
                    ["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"].contains(&e)
                })
        })
    });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidParameter(
            "Each taint needs a key and an effect of NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE.".into(),
        ))
    }
}

/// CreateNodegroup.
pub fn create(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("nodegroupName")?.to_owned();
    let role = b.required("nodeRole")?;
    let subnets = b.string_list("subnets")?;
    if subnets.is_empty() {
        return Err(Error::InvalidParameter("subnets is required.".into()));
    }
    let mut scaling = json!({ "minSize": 1, "maxSize": 2, "desiredSize": 2 });
    if let Some(s) = b.get("scalingConfig").and_then(Value::as_object) {
        for (k, v) in s {
            scaling[k] = v.clone();
        }
    }
    check_scaling(scaling.as_object().unwrap_or(&Map::new()))?;
    if let Some(t) = b.get("taints") {
        check_taints(t)?;
    }
    let instance_types = b.string_list("instanceTypes")?;
    let instance_types = if instance_types.is_empty() {
        vec![DEFAULT_INSTANCE_TYPE.to_owned()]
    } else {
        instance_types
    };
    eks.with_cluster(call, cluster, |rec, cs| {
        require_cluster_active(rec)?;
        let version = b.str("version").unwrap_or(&rec.version).to_owned();
        if catalog::minor(&version) > catalog::minor(&rec.version) {
            return Err(Error::InvalidParameter(format!(
                "Requested Nodegroup version {version} is newer than the cluster version {}.",
                rec.version
            )));
        }
        if cs.of(Kind::Nodegroup).contains_key(&name) {
            return Err(Error::ResourceInUse(format!(
                "NodeGroup already exists with name {name} and cluster name {cluster}"
            )));
        }
        if cs.of(Kind::Nodegroup).len() >= MAX_NODEGROUPS_PER_CLUSTER {
            return Err(Error::ResourceLimitExceeded(format!(
                "Cluster {cluster} already has the maximum of {MAX_NODEGROUPS_PER_CLUSTER} managed node groups."
            )));
        }
        let id = uuid::Uuid::new_v4();
        let mut obj = json!({
            "nodegroupName": name,
            "nodegroupArn": call.arn(&format!("nodegroup/{cluster}/{name}/{id}")),
            "clusterName": cluster,
            "version": version,
            "releaseVersion": b.str("releaseVersion").map(str::to_owned).unwrap_or_else(|| release_version(&version)),
            "createdAt": epoch(call.now),
            "modifiedAt": epoch(call.now),
            "capacityType": b.str("capacityType").unwrap_or("ON_DEMAND"),
            "scalingConfig": scaling,
            "instanceTypes": instance_types,
            "subnets": subnets,
            "amiType": b.str("amiType").unwrap_or("AL2023_x86_64_STANDARD"),
            "nodeRole": role,
            "labels": b.string_map("labels")?,
            "taints": b.get("taints").cloned().unwrap_or(json!([])),
            "diskSize": b.get("diskSize").cloned().unwrap_or(json!(20)),
            "resources": { "autoScalingGroups": [{ "name": format!("eks-{name}-{id}") }] },
            "health": { "issues": [] },
            "updateConfig": b.get("updateConfig").cloned().unwrap_or(json!({ "maxUnavailable": 1 })),
            "tags": b.string_map("tags")?,
        });
        for k in ["launchTemplate", "remoteAccess", "nodeRepairConfig"] {
            if let Some(v) = b.get(k) {
                obj[k] = v.clone();
            }
        }
        let out = insert(eks, call, cs, Kind::Nodegroup, &name, obj, ("CREATING", "ACTIVE"))?;
        tracing::info!(cluster, nodegroup = %name, "EKS node group created");
        Ok(json!({ "nodegroup": out }))
    })
}

/// Marks a node group `UPDATING` until the update completes (if it takes time).
fn mark_updating(eks: &Eks, call: &Call, cs: &mut ClusterState, name: &str) {
    let pending = eks.after(call.now, eks.settings.transition, Some("ACTIVE"));
    if let Some(item) = cs.of(Kind::Nodegroup).get_mut(name) {
        item.obj.insert("modifiedAt".into(), epoch(call.now));
        if pending.is_some() {
            item.obj.insert("status".into(), json!("UPDATING"));
            item.pending = pending;
        }
    }
}

fn require_group_active(
    cs: &mut ClusterState,
    cluster: &str,
    name: &str,
) -> Result<Map<String, Value>, Error> {
    let item = get(cs, Kind::Nodegroup, cluster, name)?;
    if item.status() != "ACTIVE" {
        return Err(Error::ResourceInUse(format!(
            "Nodegroup {name} is in {} status; the update is not allowed now.",
            item.status()
        )));
    }
    Ok(item.obj.clone())
}

/// UpdateNodegroupConfig: scaling (merged), labels, taints, update and repair
/// config. Scaling changes the Nodes of the pool.
pub fn update_config(eks: &Eks, call: &Call, cluster: &str, name: &str) -> Result<Value, Error> {
    let b = &call.body;
    eks.with_cluster(call, cluster, |_, cs| {
        let mut obj = require_group_active(cs, cluster, name)?;
        let mut params: Vec<(&str, String)> = Vec::new();
        if let Some(s) = b.get("scalingConfig").and_then(Value::as_object) {
            let mut scaling = obj
                .get("scalingConfig")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, p) in [
                ("desiredSize", "DesiredSize"),
                ("minSize", "MinSize"),
                ("maxSize", "MaxSize"),
            ] {
                if let Some(v) = s.get(k).filter(|v| scaling.get(k) != Some(*v)) {
                    scaling.insert(k.into(), v.clone());
                    params.push((p, v.to_string()));
                }
            }
            check_scaling(&scaling)?;
            obj.insert("scalingConfig".into(), Value::Object(scaling));
        }
        if let Some(l) = b.get("labels") {
            let add = l
                .get("addOrUpdateLabels")
                .and_then(string_map)
                .unwrap_or_default();
            let remove: Vec<String> = l
                .get("removeLabels")
                .and_then(crate::wire::string_list)
                .unwrap_or_default();
            let mut labels = obj.get("labels").and_then(string_map).unwrap_or_default();
            if !add.is_empty() {
                labels.extend(add.clone());
                params.push(("LabelsToAdd", json!(add).to_string()));
            }
            if !remove.is_empty() {
                labels.retain(|k, _| !remove.contains(k));
                params.push(("LabelsToRemove", json!(remove).to_string()));
            }
            obj.insert("labels".into(), json!(labels));
        }
        if let Some(t) = b.get("taints") {
            let add = t.get("addOrUpdateTaints").cloned().unwrap_or(json!([]));
            check_taints(&add)?;
            let remove = t.get("removeTaints").cloned().unwrap_or(json!([]));
            let key = |v: &Value| v.get("key").and_then(Value::as_str).map(str::to_owned);
            let mut taints: Vec<Value> = obj
                .get("taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let drop: Vec<Option<String>> = remove
                .as_array()
                .into_iter()
                .flatten()
                .chain(add.as_array().into_iter().flatten())
                .map(key)
                .collect();
            taints.retain(|t| !drop.contains(&key(t)));
            taints.extend(add.as_array().cloned().unwrap_or_default());
            if add.as_array().is_some_and(|a| !a.is_empty()) {
                params.push(("TaintsToAdd", add.to_string()));
            }
            if remove.as_array().is_some_and(|a| !a.is_empty()) {
                params.push(("TaintsToRemove", remove.to_string()));
            }
            obj.insert("taints".into(), Value::Array(taints));
        }
        if let Some(u) = b.get("updateConfig") {
            for (k, p) in [
                ("maxUnavailable", "MaxUnavailable"),
                ("maxUnavailablePercentage", "MaxUnavailablePercentage"),
            ] {
                if let Some(v) = u.get(k) {
                    params.push((p, v.to_string()));
                }
            }
            obj.insert("updateConfig".into(), u.clone());
        }
        if let Some(r) = b.get("nodeRepairConfig") {
            params.push((
                "NodeRepairEnabled",
                r.get("enabled").map(Value::to_string).unwrap_or_default(),
            ));
            obj.insert("nodeRepairConfig".into(), r.clone());
        }
        if params.is_empty() {
            return Err(Error::InvalidParameter("No changes needed".into()));
        }
        if let Ok(item) = get(cs, Kind::Nodegroup, cluster, name) {
            item.obj = obj;
        }
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Nodegroup(name.to_owned()),
            "ConfigUpdate",
            params,
        );
        mark_updating(eks, call, cs, name);
        Ok(json!({ "update": out }))
    })
}

/// UpdateNodegroupVersion: to the cluster's version (or the one given, never
/// newer), with a new release version.
pub fn update_version(eks: &Eks, call: &Call, cluster: &str, name: &str) -> Result<Value, Error> {
    let b = &call.body;
    eks.with_cluster(call, cluster, |rec, cs| {
        let mut obj = require_group_active(cs, cluster, name)?;
        let version = b.str("version").unwrap_or(&rec.version).to_owned();
        if catalog::minor(&version) > catalog::minor(&rec.version) {
            return Err(Error::InvalidParameter(format!(
                "Requested Nodegroup version {version} is newer than the cluster version {}.",
                rec.version
            )));
        }
        let release = b
            .str("releaseVersion")
            .map(str::to_owned)
            .unwrap_or_else(|| release_version(&version));
        let mut params = vec![
            ("Version", version.clone()),
            ("ReleaseVersion", release.clone()),
        ];
        if let Some(lt) = b.get("launchTemplate") {
            for (k, p) in [
                ("name", "LaunchTemplateName"),
                ("version", "LaunchTemplateVersion"),
            ] {
                if let Some(v) = lt.get(k).and_then(Value::as_str) {
                    params.push((p, v.to_owned()));
                }
            }
            obj.insert("launchTemplate".into(), lt.clone());
        }
        obj.insert("version".into(), json!(version));
        obj.insert("releaseVersion".into(), json!(release));
        if let Ok(item) = get(cs, Kind::Nodegroup, cluster, name) {
            item.obj = obj;
        }
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Nodegroup(name.to_owned()),
            "VersionUpdate",
            params,
        );
        mark_updating(eks, call, cs, name);
        Ok(json!({ "update": out }))
    })
}
