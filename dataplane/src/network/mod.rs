//! Cluster networking as each cloud sets it up: the service CIDR, ClusterIP
//! and NodePort allocation, the `kubernetes` Service of the API listener, and
//! the shape of a `type: LoadBalancer` Service's ingress.
//!
//! # Layout
//!
//! - [`cidr`]: IPv4 CIDR blocks.
//! - [`allocator`]: ClusterIP and NodePort allocation (the registry's).
//! - [`apiserver`]: the `kubernetes` Service, Endpoints and EndpointSlice.
//! - [`loadbalancer`]: the cloud's load balancer ingress for a Service.

pub mod allocator;
pub mod apiserver;
pub mod cidr;
pub mod loadbalancer;

use std::ops::RangeInclusive;

use kemu_shared::{ClusterRecord, OwnerScope};
use serde_json::Value;

pub use allocator::Allocator;
pub use cidr::Cidr;
pub use loadbalancer::LoadBalancerStyle;

/// The NodePort range every cloud keeps (the kube-apiserver default).
pub const NODE_PORTS: RangeInclusive<u16> = 30000..=32767;

/// One cluster's networking.
#[derive(Debug)]
pub struct ClusterNetwork {
    /// ClusterIP and NodePort allocation.
    pub allocator: Allocator,
    /// How the cloud answers a `type: LoadBalancer` Service.
    pub load_balancer: LoadBalancerStyle,
}

/// The service CIDR a cluster uses: the one its facade recorded (EKS
/// `kubernetesNetworkConfig.serviceIpv4Cidr`, GKE
/// `ipAllocationPolicy.servicesIpv4CidrBlock`, AKS `networkProfile.serviceCidr`),
/// else the cloud's documented default: EKS `10.100.0.0/16`, GKE's managed
/// `34.118.224.0/20`, AKS `10.0.0.0/16`.
pub fn service_cidr(record: &ClusterRecord) -> Cidr {
    let e = &record.extra;
    let recorded = [
        &e["kubernetesNetworkConfig"]["serviceIpv4Cidr"],
        &e["ipAllocationPolicy"]["servicesIpv4CidrBlock"],
        &e["servicesIpv4Cidr"],
        &e["networkProfile"]["serviceCidr"],
        &e["properties"]["networkProfile"]["serviceCidr"],
    ]
    .into_iter()
    .find_map(|v: &Value| v.as_str().and_then(Cidr::parse));
    recorded.unwrap_or(match record.scope {
        OwnerScope::Eks { .. } => Cidr::new([10, 100, 0, 0], 16),
        OwnerScope::Gke { .. } => Cidr::new([34, 118, 224, 0], 20),
        OwnerScope::Aks { .. } => Cidr::new([10, 0, 0, 0], 16),
    })
}

impl ClusterNetwork {
    /// The networking of `record`'s cluster.
    pub fn for_record(record: &ClusterRecord) -> Self {
        Self {
            allocator: Allocator::new(service_cidr(record), NODE_PORTS),
            load_balancer: LoadBalancerStyle::for_scope(&record.scope),
        }
    }
}
