//! The service controller of the cloud-controller-manager: a `type:
//! LoadBalancer` Service gets its cloud's load balancer ingress in
//! `status.loadBalancer` (an ELB hostname on EKS, an IP on GKE and AKS), with
//! the `EnsuringLoadBalancer`/`EnsuredLoadBalancer` Events; a Service that stops
//! being one loses it (`DeletingLoadBalancer`/`DeletedLoadBalancer`). Services
//! of a `loadBalancerClass` the cloud does not own are left alone.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::network::LoadBalancerStyle;

const COMPONENT: &str = "service-controller";

/// The load balancer controller.
pub struct LoadBalancerController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    style: LoadBalancerStyle,
}

impl LoadBalancerController {
    /// Wires the controller to the Service informer.
    pub fn register(
        rt: &Arc<Runtime>,
        recorder: Recorder,
        style: LoadBalancerStyle,
    ) -> Registration {
        let queue = rt.queue("service-lb");
        let q = queue.clone();
        rt.informer(kinds::SERVICE).on_change(move |c| {
            if c.new["spec"]["type"] == "LoadBalancer"
                || !c.new["status"]["loadBalancer"]["ingress"].is_null()
            {
                q.add(ObjKey::of(&c.new));
            }
        });
        Registration {
            name: "service-lb",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                style,
            }),
        }
    }

    async fn event(&self, svc: &Value, reason: &str, message: &str) {
        self.recorder
            .record(
                COMPONENT,
                None,
                svc,
                EventKind::Normal,
                reason,
                message.to_owned(),
            )
            .await;
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(svc) = self.rt.informer(kinds::SERVICE).get(key) else {
            return Ok(Requeue::No);
        };
        let is_lb = svc["spec"]["type"] == "LoadBalancer" && !obj::deleting(&svc);
        if is_lb && !self.style.handles(&svc) {
            return Ok(Requeue::No);
        }
        let current = &svc["status"]["loadBalancer"]["ingress"];
        let want = if is_lb {
            self.style.ingress(&svc)
        } else {
            Value::Null
        };
        if *current == want || (want.is_null() && current.as_array().is_some_and(Vec::is_empty)) {
            return Ok(Requeue::No);
        }
        let (before, after) = if is_lb {
            (
                ("EnsuringLoadBalancer", "Ensuring load balancer"),
                ("EnsuredLoadBalancer", "Ensured load balancer"),
            )
        } else {
            (
                ("DeletingLoadBalancer", "Deleting load balancer"),
                ("DeletedLoadBalancer", "Deleted load balancer"),
            )
        };
        self.event(&svc, before.0, before.1).await;
        let mut next = (*svc).clone();
        next["status"]["loadBalancer"] = if is_lb {
            json!({ "ingress": want })
        } else {
            json!({})
        };
        let written = self.rt.client.update_status(kinds::SERVICE, next).await?;
        self.rt.informer(kinds::SERVICE).observe(written);
        self.event(&svc, after.0, after.1).await;
        Ok(Requeue::No)
    }
}

impl Reconciler for LoadBalancerController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
