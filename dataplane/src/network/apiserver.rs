//! The `kubernetes` Service in `default`, as kube-apiserver maintains it: the
//! first IP of the service CIDR, port 443 (`https`), and an Endpoints object
//! and EndpointSlice pointing at the cluster's API listener.

use std::net::Ipv4Addr;

use kemu_shared::{ClusterRecord, Serving};
use serde_json::{Value, json};

use super::ClusterNetwork;
use crate::store::{ObjectKey, Preconditions, Store};

const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";

fn upsert(store: &dyn Store, resource: &str, object: Value, fields: &[&str]) {
    let key = ObjectKey::new(resource, NAMESPACE, NAME);
    let result = match store.get(&key) {
        None => store.create(&key, object).map(|_| ()),
        Some(current) => {
            let mut next = (*current).clone();
            for f in fields {
                next[*f] = object[*f].clone();
            }
            if next == *current {
                return;
            }
            store
                .update(&key, next, &Preconditions::default())
                .map(|_| ())
        }
    };
    if let Err(e) = result {
        tracing::warn!(resource, error = %e, "kubernetes service reconcile");
    }
}

/// Where a cluster's API listener is, once it is bound: the record's
/// `serving`, or what the listener just bound (the record learns it after).
pub fn listener(record: &ClusterRecord) -> Option<(&str, u16)> {
    match &record.serving {
        Serving::Live { host, port } => Some((host, *port)),
        _ => None,
    }
}

/// Creates the `kubernetes` Service if missing and points its Endpoints and
/// EndpointSlice at `listener` (host, port) once the cluster is served.
pub fn reconcile(store: &dyn Store, listener: Option<(&str, u16)>, network: &ClusterNetwork) {
    let ip = network.allocator.cidr().nth(0).to_string();
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let key = ObjectKey::new("services", NAMESPACE, NAME);
    if store.get(&key).is_none() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": ip, "clusterIPs": [ip],
                "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster",
                "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}],
            },
            "status": {"loadBalancer": {}},
        });
        if let Err(e) = store.create(&key, svc) {
            tracing::warn!(error = %e, "kubernetes service not stored");
        }
    }
    let Some((host, port)) = listener else {
        return;
    };
    // Endpoints carry IPs; a listener advertised by name is reached on loopback.
    let addr = host
        .parse::<Ipv4Addr>()
        .unwrap_or(Ipv4Addr::LOCALHOST)
        .to_string();
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": addr}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    });
    upsert(store, "endpoints", endpoints, &["subsets"]);
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [addr], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    upsert(
        store,
        "endpointslices.discovery.k8s.io",
        slice,
        &["endpoints", "ports"],
    );
}
