//! The shared cluster record in GKE vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].

use kemu_shared::{Advertised, ClusterRecord, Lifecycle, OwnerScope, advertise};
use serde_json::{Value, json};

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
pub fn endpoint_fields(record: &ClusterRecord) -> serde_json::Map<String, Value> {
    let advertised = advertise(record);
    let mut out = serde_json::Map::new();
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

/// The cluster resource.
pub fn cluster(record: &ClusterRecord) -> Value {
    let (project, location) = match &record.scope {
        OwnerScope::Gke { project, location } => (project.as_str(), location.as_str()),
        _ => ("", ""),
    };
    let mut c = serde_json::Map::new();
    c.insert("name".into(), json!(record.name));
    c.insert("location".into(), json!(location));
    c.insert(
        "selfLink".into(),
        json!(format!(
            "https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{}",
            record.name
        )),
    );
    c.insert("currentMasterVersion".into(), json!(record.version));
    c.insert("status".into(), json!(status(record.lifecycle)));
    c.insert("resourceLabels".into(), json!(record.tags));
    c.insert(
        "createTime".into(),
        json!(
            record
                .created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
    );
    c.extend(endpoint_fields(record));
    Value::Object(c)
}
