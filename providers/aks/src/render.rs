//! The shared cluster record in AKS vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].

use kemu_shared::kubeconfig::{self, UserAuth};
use kemu_shared::{ClusterRecord, Lifecycle, OwnerScope, advertise};
use serde_json::{Value, json};

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

/// The ARM resource id of a managed cluster.
pub fn resource_id(record: &ClusterRecord) -> String {
    match &record.scope {
        OwnerScope::Aks {
            subscription,
            resource_group,
            ..
        } => format!(
            "/subscriptions/{subscription}/resourcegroups/{resource_group}/providers/Microsoft.ContainerService/managedClusters/{}",
            record.name
        ),
        _ => String::new(),
    }
}

/// The managed cluster resource.
pub fn managed_cluster(record: &ClusterRecord) -> Value {
    let location = match &record.scope {
        OwnerScope::Aks { location, .. } => location.as_str(),
        _ => "",
    };
    let mut props = serde_json::Map::new();
    props.insert(
        "provisioningState".into(),
        json!(provisioning_state(record.lifecycle)),
    );
    props.insert("powerState".into(), json!({ "code": "Running" }));
    props.insert("kubernetesVersion".into(), json!(record.version));
    props.insert("currentKubernetesVersion".into(), json!(record.version));
    if let Some(fqdn) = fqdn(record) {
        props.insert("fqdn".into(), json!(fqdn));
    }
    json!({
        "id": resource_id(record),
        "name": record.name,
        "type": "Microsoft.ContainerService/ManagedClusters",
        "location": location,
        "tags": record.tags,
        "properties": props,
    })
}
