//! Node objects from a cluster's node pools: each pool of N nodes is N `Node`
//! objects, named and labelled as the pool's cloud names and labels them, with
//! a Ready condition and capacity from the machine type. Reconciled whenever
//! the cluster is served or its record's pools change.

use std::collections::BTreeMap;

use kemu_shared::{Cloud, ClusterRecord, NodePool, OwnerScope};
use serde_json::{Value, json};

use crate::store::{ObjectKey, Preconditions, Store};

/// The annotation marking a Node as made from a node pool (and which).
pub const POOL_ANNOTATION: &str = "kemu.io/node-pool";
const NODES: &str = "nodes";

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

/// (cpus, memory in GiB) of a machine type, roughly, from its name.
fn machine_size(machine: &str) -> (u64, u64) {
    let m = machine.to_ascii_lowercase();
    // AWS: family.size
    if let Some((_, size)) = m.split_once('.') {
        let cpus = match size {
            "nano" | "micro" | "small" | "medium" | "large" => 2,
            "xlarge" => 4,
            s => s
                .strip_suffix("xlarge")
                .and_then(|n| n.parse::<u64>().ok())
                .map_or(2, |n| n * 4),
        };
        let per_cpu = match m.chars().next() {
            Some('r') | Some('x') => 8,
            Some('c') => 2,
            _ => 4,
        };
        let mem = match size {
            "nano" => 1,
            "micro" => 1,
            "small" => 2,
            "medium" => 4,
            _ => cpus * per_cpu,
        };
        return (cpus, mem);
    }
    // GCP: e2-standard-4 (the last part is cpus); Azure: Standard_D2s_v3
    // (the digits after the series letters are cpus).
    let cpus = if m.contains('_') {
        m.split('_')
            .nth(1)
            .map(|part| {
                part.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse::<u64>().ok())
    } else {
        m.rsplit('-').next().and_then(|d| d.parse::<u64>().ok())
    }
    .filter(|n| *n > 0)
    .unwrap_or(2);
    let per_cpu = if m.contains("highmem") || m.contains("_e") {
        8
    } else if m.contains("highcpu") || m.contains("_f") {
        2
    } else {
        4
    };
    (cpus, cpus * per_cpu)
}

fn region_and_zones(scope: &OwnerScope) -> (String, Vec<String>) {
    match scope {
        OwnerScope::Eks { region, .. } => (
            region.clone(),
            ["a", "b", "c"]
                .iter()
                .map(|z| format!("{region}{z}"))
                .collect(),
        ),
        OwnerScope::Gke { location, .. } => {
            let parts: Vec<&str> = location.split('-').collect();
            if parts.len() == 3 {
                (parts[..2].join("-"), vec![location.clone()])
            } else {
                (
                    location.clone(),
                    ["a", "b", "c"]
                        .iter()
                        .map(|z| format!("{location}-{z}"))
                        .collect(),
                )
            }
        }
        OwnerScope::Aks { location, .. } => (
            location.clone(),
            (1..=3).map(|z| format!("{location}-{z}")).collect(),
        ),
    }
}

fn node_name(record: &ClusterRecord, pool: &NodePool, pool_index: usize, i: u32) -> String {
    let h = fnv(&format!("{}/{}", record.id, pool.name));
    match &record.scope {
        OwnerScope::Eks { region, .. } => {
            let domain = if region == "us-east-1" {
                "ec2.internal".to_owned()
            } else {
                format!("{region}.compute.internal")
            };
            format!("ip-10-0-{}-{}.{domain}", pool_index % 256, 10 + i)
        }
        OwnerScope::Gke { .. } => format!(
            "gke-{}-{}-{:08x}-{:04x}",
            record.name,
            pool.name,
            h as u32,
            fnv(&format!("{h}/{i}")) as u16
        ),
        OwnerScope::Aks { .. } => format!("aks-{}-{:08}-vmss{:06}", pool.name, h % 100_000_000, i),
    }
}

/// The Node objects `record`'s node pools call for, by name.
pub fn desired(record: &ClusterRecord) -> BTreeMap<String, Value> {
    let (region, zones) = region_and_zones(&record.scope);
    let mut out = BTreeMap::new();
    for (p, pool) in record.node_pools.iter().enumerate() {
        let (cpus, mem_gib) = machine_size(&pool.machine_type);
        for i in 0..pool.count {
            let name = node_name(record, pool, p, i);
            let zone = &zones[i as usize % zones.len()];
            let mut labels: BTreeMap<String, String> = [
                ("kubernetes.io/hostname", name.as_str()),
                ("kubernetes.io/os", "linux"),
                ("kubernetes.io/arch", "amd64"),
                ("beta.kubernetes.io/os", "linux"),
                ("beta.kubernetes.io/arch", "amd64"),
                (
                    "node.kubernetes.io/instance-type",
                    pool.machine_type.as_str(),
                ),
                (
                    "beta.kubernetes.io/instance-type",
                    pool.machine_type.as_str(),
                ),
                ("topology.kubernetes.io/region", region.as_str()),
                ("topology.kubernetes.io/zone", zone.as_str()),
                ("failure-domain.beta.kubernetes.io/region", region.as_str()),
                ("failure-domain.beta.kubernetes.io/zone", zone.as_str()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
            let cloud_labels: &[(&str, &str)] = match record.cloud() {
                Cloud::Eks => &[
                    ("eks.amazonaws.com/nodegroup", pool.name.as_str()),
                    ("eks.amazonaws.com/capacityType", "ON_DEMAND"),
                ],
                Cloud::Gke => &[("cloud.google.com/gke-nodepool", pool.name.as_str())],
                Cloud::Aks => &[
                    ("agentpool", pool.name.as_str()),
                    ("kubernetes.azure.com/agentpool", pool.name.as_str()),
                ],
            };
            labels.extend(
                cloud_labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
            labels.extend(pool.labels.clone());
            let ip = format!("10.0.{}.{}", p % 256, 10 + i % 240);
            let taints: Vec<Value> = pool
                .taints
                .iter()
                .map(|t| {
                    let mut v = json!({ "key": t.key, "effect": t.effect });
                    if !t.value.is_empty() {
                        v["value"] = json!(t.value);
                    }
                    v
                })
                .collect();
            let resources = json!({
                "cpu": cpus.to_string(),
                "memory": format!("{}Ki", mem_gib * 1024 * 1024),
                "pods": "110",
                "ephemeral-storage": "104845292Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
            });
            let mut allocatable = resources.clone();
            allocatable["cpu"] = json!(format!("{}m", cpus * 1000 - 80));
            allocatable["memory"] = json!(format!("{}Ki", mem_gib * 1024 * 1024 * 9 / 10));
            let machine_id = format!("{:016x}{:016x}", fnv(&name), fnv(&record.id));
            let mut spec = json!({
                "providerID": format!("kemu://{}/{}", record.cloud(), name),
                "podCIDR": format!("10.244.{}.0/24", (p * 16 + i as usize) % 256),
                "podCIDRs": [format!("10.244.{}.0/24", (p * 16 + i as usize) % 256)],
            });
            if !taints.is_empty() {
                spec["taints"] = json!(taints);
            }
            let since = record
                .created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let condition = |type_: &str, status: &str, reason: &str, message: &str| {
                json!({
                    "type": type_, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": since, "lastTransitionTime": since,
                })
            };
            let node = json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {
                        POOL_ANNOTATION: pool.name,
                        "node.alpha.kubernetes.io/ttl": "0",
                        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                    },
                },
                "spec": spec,
                "status": {
                    "capacity": resources,
                    "allocatable": allocatable,
                    "conditions": [
                        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                    ],
                    "addresses": [
                        { "type": "InternalIP", "address": ip },
                        { "type": "Hostname", "address": name },
                    ],
                    "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
                    "nodeInfo": {
                        "machineID": machine_id,
                        "systemUUID": uuid::Uuid::from_u64_pair(fnv(&name), fnv(&record.id)).to_string(),
                        "bootID": uuid::Uuid::from_u64_pair(fnv(&record.id), fnv(&name)).to_string(),
                        "kernelVersion": "6.1.0-kemu",
                        "osImage": "kemu Linux",
                        "containerRuntimeVersion": "containerd://1.7.27",
                        "kubeletVersion": format!("v{}.0", record.version),
                        "kubeProxyVersion": format!("v{}.0", record.version),
                        "operatingSystem": "linux",
                        "architecture": "amd64",
                    },
                },
            });
            out.insert(name, node);
        }
    }
    out
}

/// Creates, updates and deletes pool Nodes in `store` to match `record`.
pub fn reconcile(store: &dyn Store, record: &ClusterRecord) {
    let want = desired(record);
    let snapshot = store.snapshot(NODES);
    for ((_, name), current) in snapshot.iter(None, None) {
        if current["metadata"]["annotations"][POOL_ANNOTATION].is_string()
            && !want.contains_key(name)
        {
            let _ = store.delete(&ObjectKey::new(NODES, "", name), &Preconditions::default());
        }
    }
    for (name, node) in want {
        let key = ObjectKey::new(NODES, "", &name);
        let result = match store.get(&key) {
            None => store.create(&key, node).map(|_| ()),
            Some(current) => {
                let mut next = (*current).clone();
                for field in ["labels", "annotations"] {
                    if let (Some(cur), Some(add)) = (
                        next["metadata"][field].as_object_mut(),
                        node["metadata"][field].as_object(),
                    ) {
                        cur.extend(add.clone());
                    }
                }
                next["spec"]["taints"] = node["spec"]["taints"].clone();
                if next["spec"]["taints"].is_null()
                    && let Some(s) = next["spec"].as_object_mut()
                {
                    s.remove("taints");
                }
                next["status"]["capacity"] = node["status"]["capacity"].clone();
                next["status"]["allocatable"] = node["status"]["allocatable"].clone();
                store
                    .update(&key, next, &Preconditions::default())
                    .map(|_| ())
            }
        };
        if let Err(e) = result {
            tracing::warn!(cluster = %record.name, node = %name, error = %e, "node reconcile");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_sizes() {
        assert_eq!(machine_size("m5.large"), (2, 8));
        assert_eq!(machine_size("m5.2xlarge"), (8, 32));
        assert_eq!(machine_size("t3.medium"), (2, 4));
        assert_eq!(machine_size("e2-standard-4"), (4, 16));
        assert_eq!(machine_size("Standard_D2s_v3"), (2, 8));
    }
}
