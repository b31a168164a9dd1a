//! The shared cluster record in EKS vocabulary. The endpoint and CA come only
//! from [`kemu_shared::advertise`].
//!
//! When the data plane does not serve a cluster, `endpoint` is the sentinel and
//! `certificateAuthority` carries no `data`. The status stays `ACTIVE`, because
//! waiters and terraform need it; `aws eks update-kubeconfig` checks nothing but
//! the status client-side, so the kubeconfig it writes points at the sentinel
//! host, which never resolves, and kubectl fails at once naming it.

use kemu_shared::{Advertised, ClusterRecord, Lifecycle, OwnerScope, advertise};
use serde_json::{Map, Value, json};

use crate::wire::epoch;

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
pub fn endpoint_fields(record: &ClusterRecord) -> Map<String, Value> {
    let advertised = advertise(record);
    let mut out = Map::new();
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

/// Whether a kubeconfig for the cluster can lead anywhere.
pub fn credentials_available(record: &ClusterRecord) -> bool {
    matches!(advertise(record), Advertised::Live { .. })
}

/// The cluster ARN.
pub fn cluster_arn(record: &ClusterRecord) -> String {
    match &record.scope {
        OwnerScope::Eks { account, region } => {
            format!("arn:aws:eks:{region}:{account}:cluster/{}", record.name)
        }
        _ => String::new(),
    }
}

/// Whether the cluster was registered (RegisterCluster) rather than created.
pub fn is_registered(record: &ClusterRecord) -> bool {
    record.extra.get("connectorConfig").is_some()
}

/// The `cluster` object of DescribeCluster and CreateCluster: the EKS fields
/// the facade keeps in `extra`, then what the shared record decides.
pub fn cluster(record: &ClusterRecord) -> Value {
    let mut c = match &record.extra {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    c.insert("name".into(), json!(record.name));
    c.insert("arn".into(), json!(cluster_arn(record)));
    c.insert("createdAt".into(), epoch(record.created_at));
    c.insert("version".into(), json!(record.version));
    let status = match (is_registered(record), record.lifecycle) {
        // A registered cluster waits for a connector agent that never comes.
        (true, Lifecycle::Running) => "PENDING",
        (_, l) => status(l),
    };
    c.insert("status".into(), json!(status));
    c.insert("tags".into(), json!(record.tags));
    if !is_registered(record) {
        c.extend(endpoint_fields(record));
    }
    Value::Object(c)
}
