//! The shared cluster record in EKS vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].

use kemu_shared::{Advertised, ClusterRecord, Lifecycle, advertise};
use serde_json::{Value, json};

/// EKS `status` for a lifecycle state.
pub fn status(lifecycle: Lifecycle) -> &'static str {
    match lifecycle {
        Lifecycle::Provisioning => "CREATING",
        Lifecycle::Running => "ACTIVE",
        Lifecycle::Updating => "UPDATING",
        Lifecycle::Deleting => "DELETING",
        Lifecycle::Failed => "FAILED",
    }
}

/// The `endpoint` and `certificateAuthority` members of an EKS cluster:
/// `endpoint` is an https URL, `certificateAuthority.data` base64 of the CA PEM.
pub fn endpoint_fields(record: &ClusterRecord) -> serde_json::Map<String, Value> {
    let advertised = advertise(record);
    let mut out = serde_json::Map::new();
    if let Some(url) = advertised.server_url() {
        out.insert("endpoint".into(), json!(url));
    }
    out.insert(
        "certificateAuthority".into(),
        match advertised.ca_base64() {
            Some(data) => json!({ "data": data }),
            None => json!({}),
        },
    );
    out
}

/// Whether `update-kubeconfig` and `get-token` can lead anywhere.
pub fn credentials_available(record: &ClusterRecord) -> bool {
    matches!(advertise(record), Advertised::Live { .. })
}

/// The cluster ARN.
pub fn cluster_arn(record: &ClusterRecord) -> String {
    match &record.scope {
        kemu_shared::OwnerScope::Eks { account, region } => {
            format!("arn:aws:eks:{region}:{account}:cluster/{}", record.name)
        }
        _ => String::new(),
    }
}

/// The `cluster` object of DescribeCluster and CreateCluster.
pub fn cluster(record: &ClusterRecord) -> Value {
    let mut c = serde_json::Map::new();
    c.insert("name".into(), json!(record.name));
    c.insert("arn".into(), json!(cluster_arn(record)));
    c.insert(
        "createdAt".into(),
        json!(record.created_at.timestamp_millis() as f64 / 1000.0),
    );
    c.insert("version".into(), json!(record.version));
    c.insert("status".into(), json!(status(record.lifecycle)));
    c.insert("tags".into(), json!(record.tags));
    c.extend(endpoint_fields(record));
    Value::Object(c)
}
