//! The controllers of one cluster, as kube-controller-manager, kube-scheduler
//! and the kubelets run them: level-triggered reconcilers fed by the store's own
//! watch events, writing back through the same store, paced by the clock.
//!
//! # Layout
//!
//! - [`client`]: the narrow [`Client`] trait controllers reach the store
//!   through (the adapter contract), and [`MemClient`] for tests.
//! - [`store_client`]: the adapter from a cluster's store to [`Client`];
//!   [`store_admission`]: the admission of what controllers create.
//! - [`runtime`]: shared informers, work queues, clock timers, the
//!   [`Reconciler`](runtime::Reconciler) trait.
//! - [`obj`]: reading JSON objects.
//! - [`events`]: core/v1 Events with upstream reasons.
//! - [`deployment`], [`replicaset`]: Deployment → ReplicaSet → Pod.
//! - [`scheduler`]: binds Pods to Nodes.
//! - [`kubelet`]: the simulated kubelet (Pod phases, conditions, failures);
//!   [`heartbeat`]: its Node Lease renewals and status heartbeats;
//!   [`container_logs`]: the lines its containers write.
//! - [`statefulset`], [`daemonset`]: ordinal and per-Node workloads.
//! - [`job`], [`cronjob`]: batch workloads.
//! - [`service`]: Service → EndpointSlices and Endpoints of ready Pods.
//! - [`loadbalancer`]: `type: LoadBalancer` status in the cloud's shape.
//! - [`volume`]: PersistentVolume binding, provisioning and reclaim;
//!   [`volume_binding`]: the scheduler's view of a Pod's claims.
//! - [`storage_protection`]: the `pvc-protection`, `pv-protection` and
//!   `vac-protection` finalizers, released once a claim, volume or class is
//!   no longer in use.
//! - [`node_taints`]: Nodes' not-ready and unreachable taints follow their
//!   `Ready` condition.
//! - [`quota`]: ResourceQuota `status.used`.
//! - [`disruption`]: PodDisruptionBudget status, which evictions honour.
//! - [`sa_tokens`]: legacy ServiceAccount token Secrets.
//! - [`event_ttl`]: Events expire an hour after they were last recorded.
//! - [`hpa`]: HorizontalPodAutoscalers scaling `/scale` targets from the
//!   synthetic metrics.
//! - [`gc`]: garbage collection by ownerReferences; [`namespace`]: Namespace
//!   lifecycle.
//! - [`crd`]: CustomResourceDefinition naming, establishing and cleanup.

pub mod client;
pub mod container_logs;
pub mod crd;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod event_ttl;
pub mod events;
pub mod gc;
pub mod heartbeat;
pub mod history;
pub mod hpa;
pub mod job;
pub mod kubelet;
pub mod loadbalancer;
pub mod namespace;
pub mod node_taints;
pub mod obj;
pub mod quota;
pub mod replicaset;
pub mod runtime;
pub mod sa_tokens;
pub mod scheduler;
pub mod service;
pub mod statefulset;
pub mod storage_protection;
pub mod store_admission;
pub mod store_client;
#[cfg(test)]
mod tests;
pub mod volume;
pub mod volume_binding;

use std::sync::Arc;
use std::time::Duration;

use kemu_shared::SharedClock;

use crate::network::ClusterNetwork;
use crate::volumes::Provisioner;

pub use client::{Client, ClientError, Kind, MemClient, kinds};
pub use kubelet::KubeletConfig;
pub use runtime::Runtime;

/// Settings of a cluster's controllers.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// The simulated kubelet's pacing.
    pub kubelet: KubeletConfig,
    /// Workers per controller.
    pub workers: usize,
    /// The cluster CA (PEM), published in every namespace as `kube-root-ca.crt`.
    pub root_ca: Option<Arc<str>>,
    /// The cluster's networking (load balancer style), when known.
    pub network: Option<Arc<ClusterNetwork>>,
    /// How provisioned volumes are named in the cluster's cloud.
    pub provisioner: Provisioner,
    /// The cluster's service-account key: with it, the tokens controller
    /// fills legacy token Secrets.
    pub sa_key: Option<kemu_shared::ServiceAccountKey>,
    /// The cluster's custom types, changed by the CRD controller (it runs
    /// only when set).
    pub custom_types: Option<Arc<dyn crd::CustomTypes>>,
    /// How long an Event lives after it was last recorded (kube-apiserver's
    /// `--event-ttl`).
    pub event_ttl: Duration,
    /// The cluster's simulated containers, whose servers answer the
    /// kubelet's HTTP probes once exec has changed their files.
    pub sandboxes: Option<Arc<crate::exec::Sandboxes>>,
    /// Opens the cluster's containers: the kubelet runs their shell scripts.
    pub opener: Option<crate::exec::Opener>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            kubelet: KubeletConfig::default(),
            workers: 1,
            root_ca: None,
            network: None,
            provisioner: Provisioner::generic(),
            sa_key: None,
            custom_types: None,
            event_ttl: event_ttl::DEFAULT_TTL,
            sandboxes: None,
            opener: None,
        }
    }
}

/// Every kind the built-in controllers watch and read from their caches.
pub const WATCHED: [Kind; 23] = [
    kinds::POD,
    kinds::NODE,
    kinds::NAMESPACE,
    kinds::DEPLOYMENT,
    kinds::REPLICA_SET,
    kinds::REPLICATION_CONTROLLER,
    kinds::STATEFUL_SET,
    kinds::DAEMON_SET,
    kinds::JOB,
    kinds::CRON_JOB,
    kinds::SERVICE_ACCOUNT,
    kinds::SERVICE,
    kinds::ENDPOINT_SLICE,
    kinds::PVC,
    kinds::PV,
    kinds::STORAGE_CLASS,
    kinds::VOLUME_ATTRIBUTES_CLASS,
    kinds::RESOURCE_QUOTA,
    kinds::CONFIG_MAP,
    kinds::SECRET,
    kinds::POD_DISRUPTION_BUDGET,
    kinds::CRD,
    kinds::HPA,
];

/// Kinds the built-in controllers watch without caching: the event TTL only
/// needs to hear of each write, and a cache of every Event would hold them
/// all decoded.
pub const NOTIFYING: [Kind; 1] = [kinds::EVENT];

/// The running controllers of one cluster; dropping it stops them.
#[derive(Debug)]
pub struct Controllers {
    runtime: Arc<Runtime>,
}

impl Controllers {
    /// Starts every controller of a cluster on `client`, paced by `clock`.
    /// Must be called inside a tokio runtime.
    pub fn start(client: Arc<dyn Client>, clock: SharedClock, config: ControllerConfig) -> Self {
        let rt = Runtime::new(client.clone(), clock.clone(), &WATCHED, &NOTIFYING);
        let recorder = events::Recorder::new(client, clock);
        let mut regs = vec![
            deployment::DeploymentController::register(&rt, recorder.clone()),
            replicaset::ReplicaSetController::register(
                &rt,
                recorder.clone(),
                replicaset::REPLICA_SETS,
            ),
            replicaset::ReplicaSetController::register(
                &rt,
                recorder.clone(),
                replicaset::REPLICATION_CONTROLLERS,
            ),
            scheduler::Scheduler::register(&rt, recorder.clone()),
            kubelet::Kubelet::register(
                &rt,
                recorder.clone(),
                config.kubelet,
                config.sandboxes.clone(),
                config.opener.clone(),
            ),
            heartbeat::Heartbeat::register(&rt),
            statefulset::StatefulSetController::register(&rt, recorder.clone()),
            daemonset::DaemonSetController::register(&rt, recorder.clone()),
            job::JobController::register(&rt, recorder.clone()),
            cronjob::CronJobController::register(&rt, recorder.clone()),
            service::EndpointSliceController::register(&rt),
            namespace::NamespaceController::register(&rt, config.root_ca.clone()),
            quota::QuotaController::register(&rt),
            disruption::DisruptionController::register(&rt),
        ];
        if let Some(net) = &config.network {
            regs.push(loadbalancer::LoadBalancerController::register(
                &rt,
                recorder.clone(),
                net.load_balancer.clone(),
            ));
        }
        regs.push(hpa::HpaController::register(&rt, recorder.clone()));
        regs.push(volume::VolumeController::register(
            &rt,
            recorder.clone(),
            config.provisioner.clone(),
        ));
        regs.extend(storage_protection::StorageProtection::register(&rt));
        regs.push(node_taints::NodeTaints::register(&rt));
        if let Some(key) = config.sa_key.clone() {
            regs.push(sa_tokens::TokensController::register(
                &rt,
                key,
                config.root_ca.clone(),
            ));
        }
        if let Some(host) = config.custom_types.clone() {
            regs.push(crd::CrdController::register(&rt, host));
        }
        regs.push(event_ttl::EventTtl::register(&rt, config.event_ttl));
        regs.extend(gc::GarbageCollector::register(&rt));
        rt.start(regs, config.workers);
        Self { runtime: rt }
    }

    /// The runtime (informers, settle).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Waits until every controller is done with what the clock allows now
    /// (current-thread tokio runtimes; see [`Runtime::settle`]).
    pub async fn settle(&self) {
        self.runtime.settle().await;
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        self.runtime.shutdown();
    }
}
