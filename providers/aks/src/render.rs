//! The shared cluster record in AKS vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].
//!
//! What only AKS knows lives in the record's `extra` (see [`Extra`]): the
//! request's properties echoed back, SKU, identity, power state and each
//! agent pool's own properties. Count, VM size, labels and taints of a pool
//! live once, in the record's node pools.

use kemu_shared::kubeconfig::{self, UserAuth};
use kemu_shared::{ClusterRecord, Lifecycle, NodePool, OwnerScope, advertise};
use serde_json::{Map, Value, json};

use crate::versions;

/// Keys of the AKS-owned part of [`ClusterRecord::extra`].
pub struct Extra;

impl Extra {
    /// The request's `properties`, without agent pools, echoed back.
    pub const PROPERTIES: &'static str = "properties";
    /// The requested `kubernetesVersion` as written (`1.33` or `1.33.5`).
    pub const VERSION: &'static str = "kubernetesVersion";
    /// `sku`.
    pub const SKU: &'static str = "sku";
    /// `identity`, with the principal kemu assigned.
    pub const IDENTITY: &'static str = "identity";
    /// `Running` or `Stopped`.
    pub const POWER: &'static str = "powerState";
    /// Agent pool name → its properties besides count and VM size.
    pub const POOLS: &'static str = "agentPools";
    /// `identityProfile`: the kubelet identity AKS creates with the cluster.
    pub const IDENTITY_PROFILE: &'static str = "identityProfile";
}

/// ARM `provisioningState` for a lifecycle state.
pub fn provisioning_state(lifecycle: Lifecycle) -> &'static str {
    match lifecycle {
        Lifecycle::Provisioning => "Creating",
        Lifecycle::Running => "Succeeded",
        Lifecycle::Updating => "Updating",
        Lifecycle::Deleting => "Deleting",
        Lifecycle::Failed => "Failed",
    }
}

/// `properties.fqdn`: the host of the cluster's endpoint (the port lives in the
/// kubeconfig's server URL).
pub fn fqdn(record: &ClusterRecord) -> Option<String> {
    advertise(record).host().map(str::to_owned)
}

/// The kubeconfig `listClusterUserCredential` / `listClusterAdminCredential`
/// return, or `None` when the data plane does not serve the cluster.
pub fn kubeconfig(record: &ClusterRecord, user: &str, auth: &UserAuth) -> Option<String> {
    let advertised = advertise(record);
    let (server, ca) = (advertised.server_url()?, advertised.ca_pem()?);
    Some(kubeconfig::render(&record.name, &server, ca, user, auth))
}

/// Subscription, resource group and location of an AKS record.
pub fn scope_of(record: &ClusterRecord) -> (&str, &str, &str) {
    match &record.scope {
        OwnerScope::Aks {
            subscription,
            resource_group,
            location,
        } => (subscription, resource_group, location),
        _ => ("", "", ""),
    }
}

/// The ARM resource id of a managed cluster (AKS writes `resourcegroups` in
/// lower case).
pub fn resource_id(record: &ClusterRecord) -> String {
    let (subscription, resource_group, _) = scope_of(record);
    format!(
        "/subscriptions/{subscription}/resourcegroups/{resource_group}/providers/Microsoft.ContainerService/managedClusters/{}",
        record.name
    )
}

/// The node resource group AKS would create: `MC_{rg}_{cluster}_{location}`.
pub fn node_resource_group(record: &ClusterRecord) -> String {
    let (_, rg, location) = scope_of(record);
    format!("MC_{rg}_{}_{location}", record.name)
}

/// `Running` or `Stopped`.
pub fn power_state(record: &ClusterRecord) -> &str {
    record.extra[Extra::POWER].as_str().unwrap_or("Running")
}

/// The labels AKS puts on every Node of a pool, besides the pool's own
/// `nodeLabels`.
pub fn node_labels(
    pool: &str,
    mode: &str,
    vm_size: &str,
    location: &str,
    node_resource_group: &str,
) -> Vec<(String, String)> {
    [
        ("agentpool", pool),
        ("kubernetes.azure.com/agentpool", pool),
        ("kubernetes.azure.com/mode", &mode.to_ascii_lowercase()),
        ("kubernetes.azure.com/role", "agent"),
        ("kubernetes.azure.com/cluster", node_resource_group),
        ("kubernetes.azure.com/os-sku", "Ubuntu"),
        ("kubernetes.azure.com/node-image-version", NODE_IMAGE),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("node.kubernetes.io/instance-type", vm_size),
        ("beta.kubernetes.io/instance-type", vm_size),
        ("topology.kubernetes.io/region", location),
        ("topology.kubernetes.io/zone", "0"),
        ("failure-domain.beta.kubernetes.io/zone", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The node image AKS reports for Ubuntu pools.
pub const NODE_IMAGE: &str = "AKSUbuntu-2204gen2containerd-202601.07.0";

/// An agent pool's properties, as in `agentPoolProfiles[]` (without `name`)
/// and in the `agentPools` child resource.
pub fn pool_properties(record: &ClusterRecord, pool: &NodePool) -> Value {
    let mut props = record.extra[Extra::POOLS][&pool.name]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let version = props
        .get("orchestratorVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .and_then(|v| versions::resolve(v).ok())
        .unwrap_or(record.version.as_str())
        .to_owned();
    let user_labels: Map<String, Value> = props
        .get("nodeLabels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let defaults = [
        ("mode", json!("User")),
        ("osType", json!("Linux")),
        ("osSKU", json!("Ubuntu")),
        ("type", json!("VirtualMachineScaleSets")),
        ("maxPods", json!(250)),
        ("osDiskSizeGB", json!(128)),
        ("osDiskType", json!("Managed")),
        ("kubeletDiskType", json!("OS")),
        ("enableAutoScaling", json!(false)),
        ("enableNodePublicIP", json!(false)),
        ("enableFIPS", json!(false)),
        ("scaleSetPriority", json!("Regular")),
        ("nodeImageVersion", json!(NODE_IMAGE)),
        ("orchestratorVersion", json!(version)),
    ];
    for (k, v) in defaults {
        let empty = props.get(k).is_none_or(|x| x.is_null() || x == "");
        if empty {
            props.insert(k.into(), v);
        }
    }
    props.insert("count".into(), json!(pool.count));
    props.insert("vmSize".into(), json!(pool.machine_type));
    props.insert(
        "currentOrchestratorVersion".into(),
        json!(versions::patch(&version)),
    );
    props.insert("nodeLabels".into(), Value::Object(user_labels));
    props.insert(
        "nodeTaints".into(),
        json!(
            pool.taints
                .iter()
                .map(|t| format!("{}={}:{}", t.key, t.value, t.effect))
                .collect::<Vec<_>>()
        ),
    );
    props.insert(
        "provisioningState".into(),
        json!(provisioning_state(record.lifecycle)),
    );
    let own = props
        .remove(crate::agentpool::POOL_POWER)
        .and_then(|v| v.as_str().map(str::to_owned));
    let power = match (power_state(record), own.as_deref()) {
        ("Stopped", _) => "Stopped",
        (_, Some("Stopped")) => "Stopped",
        _ => "Running",
    };
    props.insert("powerState".into(), json!({ "code": power }));
    Value::Object(props)
}

/// The `agentPools/{name}` child resource.
pub fn agent_pool(record: &ClusterRecord, pool: &NodePool) -> Value {
    json!({
        "id": format!("{}/agentPools/{}", resource_id(record), pool.name),
        "name": pool.name,
        "type": "Microsoft.ContainerService/managedClusters/agentPools",
        "properties": pool_properties(record, pool),
    })
}

/// The managed cluster resource.
pub fn managed_cluster(record: &ClusterRecord) -> Value {
    let (subscription, resource_group, location) = scope_of(record);
    let mut props = record.extra[Extra::PROPERTIES]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let dns_prefix = props
        .get("dnsPrefix")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| default_dns_prefix(&record.name, resource_group, subscription));
    let requested_version = record.extra[Extra::VERSION]
        .as_str()
        .filter(|v| !v.is_empty())
        .unwrap_or(&record.version);
    let mut network = json!({
        "networkPlugin": "azure",
        "networkPluginMode": "overlay",
        "networkPolicy": "none",
        "podCidr": "10.244.0.0/16",
        "serviceCidr": "10.0.0.0/16",
        "dnsServiceIP": "10.0.0.10",
        "outboundType": "loadBalancer",
        "loadBalancerSku": "standard",
        "podCidrs": ["10.244.0.0/16"],
        "serviceCidrs": ["10.0.0.0/16"],
        "ipFamilies": ["IPv4"],
    });
    if let (Some(net), Some(given)) = (
        network.as_object_mut(),
        props.get("networkProfile").and_then(Value::as_object),
    ) {
        for (k, v) in given {
            if !v.is_null() && v != "" {
                net.insert(k.clone(), v.clone());
            }
        }
    }
    let set = [
        (
            "provisioningState",
            json!(provisioning_state(record.lifecycle)),
        ),
        ("powerState", json!({ "code": power_state(record) })),
        ("kubernetesVersion", json!(requested_version)),
        (
            "currentKubernetesVersion",
            json!(versions::patch(&record.version)),
        ),
        ("dnsPrefix", json!(dns_prefix)),
        ("nodeResourceGroup", json!(node_resource_group(record))),
        ("maxAgentPools", json!(100)),
        ("networkProfile", network),
        (
            "agentPoolProfiles",
            json!(
                record
                    .node_pools
                    .iter()
                    .map(|p| {
                        let mut v = pool_properties(record, p);
                        if let Some(o) = v.as_object_mut() {
                            o.insert("name".into(), json!(p.name));
                        }
                        v
                    })
                    .collect::<Vec<_>>()
            ),
        ),
    ];
    for (k, v) in set {
        props.insert(k.into(), v);
    }
    if let Some(profile) = record
        .extra
        .get(Extra::IDENTITY_PROFILE)
        .filter(|v| v.is_object())
    {
        props.insert("identityProfile".into(), profile.clone());
    }
    for (k, v) in [
        ("enableRBAC", json!(true)),
        ("disableLocalAccounts", json!(false)),
    ] {
        props.entry(k).or_insert(v);
    }
    props.remove("fqdn");
    props.remove("azurePortalFQDN");
    if let Some(fqdn) = fqdn(record) {
        props.insert("fqdn".into(), json!(fqdn));
        props.insert("azurePortalFQDN".into(), json!(fqdn));
    }
    let mut out = json!({
        "id": resource_id(record),
        "name": record.name,
        "type": "Microsoft.ContainerService/ManagedClusters",
        "location": location,
        "tags": record.tags,
        "sku": record.extra.get(Extra::SKU).filter(|v| !v.is_null()).cloned()
            .unwrap_or_else(|| json!({ "name": "Base", "tier": "Free" })),
        "properties": props,
    });
    if let Some(identity) = record.extra.get(Extra::IDENTITY).filter(|v| !v.is_null()) {
        out["identity"] = identity.clone();
    }
    out
}

/// The kubelet's user-assigned identity AKS creates in the node resource group.
pub fn kubelet_identity(subscription: &str, node_resource_group: &str, cluster: &str) -> Value {
    json!({ "kubeletidentity": {
        "resourceId": format!(
            "/subscriptions/{subscription}/resourcegroups/{node_resource_group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{cluster}-agentpool"
        ),
        "clientId": uuid::Uuid::new_v4().to_string(),
        "objectId": uuid::Uuid::new_v4().to_string(),
    }})
}

/// `{name}-{rg}-{first six of the subscription}`, as az computes it.
pub fn default_dns_prefix(name: &str, resource_group: &str, subscription: &str) -> String {
    let clean = |s: &str, n: usize| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(n)
            .collect()
    };
    format!(
        "{}-{}-{}",
        clean(name, 10),
        clean(resource_group, 16),
        clean(subscription, 6)
    )
}
