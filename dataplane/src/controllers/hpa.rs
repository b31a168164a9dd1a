//! The HorizontalPodAutoscaler controller (autoscaling/v2, and v1's
//! `targetCPUUtilizationPercentage`), on the clock: every 15 s (upstream's
//! `--horizontal-pod-autoscaler-sync-period`) it reads the target's `/scale`
//! (any served type with one: Deployment, StatefulSet, ReplicaSet, a custom
//! resource whose CRD declares `subresources.scale`), the synthetic usage of
//! the running Pods its `status.selector` picks ([`metrics::usage`](crate::metrics::usage)) and computes the replica
//! count as upstream does: `ceil(current × usage / target)` per metric, the
//! largest wins, within a 10 % tolerance; scale-up limited to the default
//! policies (double, or +4 Pods, per period), scale-down held by the
//! stabilization window (300 s by default); clamped to min/max. Status and
//! conditions (`AbleToScale`, `ScalingActive`, `ScalingLimited`) and the
//! `SuccessfulRescale` Event read as upstream's.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, ScaleTarget, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector::LabelSelector;
use crate::metrics::usage::{self, Overrides};

const COMPONENT: &str = "horizontal-pod-autoscaler";
/// How often every HPA is evaluated.
pub const SYNC_PERIOD: Duration = Duration::from_secs(15);
const TOLERANCE: f64 = 0.1;
const DEFAULT_DOWN_WINDOW: i64 = 300;

/// The HPA controller.
pub struct HpaController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    // HPA → recent (time, recommendation), for the stabilization windows.
    recommendations: Mutex<HashMap<ObjKey, Recommendations>>,
}

/// Recent (time, recommended replicas) of one HPA.
type Recommendations = Vec<(DateTime<Utc>, i64)>;

/// One metric's outcome.
struct Computed {
    proposal: i64,
    status: Value,
    description: String,
}

/// The metrics of an HPA in v2 form (v1's CPU target, or upstream's default
/// of 80 % CPU).
fn metric_specs(hpa: &Value) -> Vec<Value> {
    if let Some(m) = hpa["spec"]["metrics"].as_array().filter(|m| !m.is_empty()) {
        return m.clone();
    }
    let pct = hpa["spec"]["targetCPUUtilizationPercentage"]
        .as_i64()
        .unwrap_or(80);
    vec![json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": pct}}})]
}

fn request_milli(pod: &Value, container: &str, resource: &str) -> Option<i128> {
    pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == container)
        .and_then(|c| obj::quantity_milli(&c["resources"]["requests"][resource]))
}

fn fmt_quantity(resource: &str, milli: i128) -> String {
    if resource == "cpu" {
        format!("{milli}m")
    } else {
        // Bytes; upstream prints e.g. `12Mi` or plain bytes.
        let bytes = milli / 1000;
        if bytes % (1024 * 1024) == 0 {
            format!("{}Mi", bytes / (1024 * 1024))
        } else {
            format!("{bytes}")
        }
    }
}

impl HpaController {
    /// Wires the controller to the HPA informer.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("horizontalpodautoscaler");
        let q = queue.clone();
        rt.informer(kinds::HPA)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        Registration {
            name: "horizontalpodautoscaler",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                recommendations: Mutex::default(),
            }),
        }
    }

    fn overrides(&self, pod: &Value) -> Overrides {
        let lookup = |kind: &str, ns: &str, name: &str| {
            let k = match kind {
                "ReplicaSet" => kinds::REPLICA_SET,
                "Deployment" => kinds::DEPLOYMENT,
                "StatefulSet" => kinds::STATEFUL_SET,
                "DaemonSet" => kinds::DAEMON_SET,
                "Job" => kinds::JOB,
                _ => return None,
            };
            self.rt.informer(k).get_by(ns, name).map(|o| (*o).clone())
        };
        Overrides::of(pod, &lookup)
    }

    /// One Resource (or ContainerResource) metric over `pods`.
    fn compute(
        &self,
        metric: &Value,
        pods: &[Arc<Value>],
        current: i64,
    ) -> Result<Computed, String> {
        let ty = metric["type"].as_str().unwrap_or("Resource");
        let (spec, container) = match ty {
            "Resource" => (&metric["resource"], None),
            "ContainerResource" => (
                &metric["containerResource"],
                metric["containerResource"]["container"].as_str(),
            ),
            other => {
                return Err(format!(
                    "the HPA was unable to compute the replica count: unable to get metric of type {other}: kemu serves resource metrics only"
                ));
            }
        };
        let resource = spec["name"].as_str().unwrap_or("cpu");
        let target = &spec["target"];
        let mut used: i128 = 0;
        let mut requested: i128 = 0;
        let ready: Vec<&Arc<Value>> = pods.iter().filter(|p| usage::reported(p)).collect();
        if ready.is_empty() {
            return Err(format!(
                "the HPA was unable to compute the replica count: failed to get {resource} utilization: did not receive metrics for targeted pods (pods might be unready)"
            ));
        }
        for p in &ready {
            let o = self.overrides(p);
            for c in usage::containers(p, &o) {
                if container.is_some_and(|want| want != c.name) {
                    continue;
                }
                used += if resource == "cpu" {
                    c.cpu_milli
                } else {
                    c.memory_bytes * 1000
                };
                if target["type"] == "Utilization" {
                    match request_milli(p, &c.name, resource) {
                        Some(r) => requested += r,
                        None => {
                            return Err(format!(
                                "the HPA was unable to compute the replica count: failed to get {resource} utilization: missing request for {resource} in container {} of Pod {}",
                                c.name,
                                obj::name(p)
                            ));
                        }
                    }
                }
            }
        }
        let n = ready.len() as i128;
        let within = |ratio: f64| (ratio - 1.0).abs() <= TOLERANCE;
        let what = if ty == "ContainerResource" {
            format!("{resource} container resource")
        } else {
            format!("{resource} resource")
        };
        let status_key = if ty == "ContainerResource" {
            "containerResource"
        } else {
            "resource"
        };
        match target["type"].as_str().unwrap_or("Utilization") {
            "Utilization" => {
                let want = target["averageUtilization"].as_i64().unwrap_or(80).max(1);
                let util = if requested > 0 {
                    (used * 100 / requested) as i64
                } else {
                    0
                };
                let ratio = util as f64 / want as f64;
                let proposal = if within(ratio) {
                    current
                } else {
                    (ratio * ready.len() as f64).ceil() as i64
                };
                let mut cur = json!({"name": resource, "current": {
                    "averageUtilization": util, "averageValue": fmt_quantity(resource, used / n)}});
                if let Some(c) = container {
                    cur["container"] = json!(c);
                }
                Ok(Computed {
                    proposal,
                    status: json!({"type": ty, status_key: cur}),
                    description: format!("{what} utilization (percentage of request)"),
                })
            }
            _ => {
                let want = obj::quantity_milli(&target["averageValue"])
                    .or_else(|| obj::quantity_milli(&target["value"]))
                    .unwrap_or(1)
                    .max(1);
                let avg = used / n;
                let ratio = avg as f64 / want as f64;
                let proposal = if within(ratio) {
                    current
                } else {
                    (used as f64 / want as f64).ceil() as i64
                };
                let mut cur = json!({"name": resource, "current": {"averageValue": fmt_quantity(resource, avg)}});
                if let Some(c) = container {
                    cur["container"] = json!(c);
                }
                Ok(Computed {
                    proposal,
                    status: json!({"type": ty, status_key: cur}),
                    description: what,
                })
            }
        }
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(hpa) = self.rt.informer(kinds::HPA).get(key) else {
            self.recommendations.lock().remove(key);
            return Ok(Requeue::No);
        };
        if obj::deleting(&hpa) {
            return Ok(Requeue::No);
        }
        let now = self.rt.clock.now();
        let ts = obj::fmt_time(now);
        let r = &hpa["spec"]["scaleTargetRef"];
        let (t_kind, t_name) = (
            r["kind"].as_str().unwrap_or(""),
            r["name"].as_str().unwrap_or(""),
        );
        let mut conds: Vec<Value> = hpa["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let target = ScaleTarget {
            api_version: r["apiVersion"].as_str().unwrap_or("").to_owned(),
            kind: t_kind.to_owned(),
            namespace: key.namespace.clone(),
            name: t_name.to_owned(),
        };
        let scale = match self.rt.client.get_scale(&target).await {
            Ok(scale) => scale,
            Err(e @ (ClientError::NotFound(_) | ClientError::Invalid(_))) => {
                let msg =
                    format!("the HPA controller was unable to get the target's current scale: {e}");
                obj::set_condition(
                    &mut conds,
                    json!({"type": "AbleToScale", "status": "False", "reason": "FailedGetScale", "message": msg}),
                    &ts,
                    false,
                );
                self.write_status(&hpa, json!({"currentReplicas": hpa["status"]["currentReplicas"].as_i64().unwrap_or(0), "desiredReplicas": hpa["status"]["desiredReplicas"].as_i64().unwrap_or(0), "conditions": conds}), Some(("FailedGetScale", msg))).await?;
                return Ok(Requeue::After(SYNC_PERIOD));
            }
            Err(e) => return Err(e),
        };
        let current = scale["spec"]["replicas"].as_i64().unwrap_or(0);
        let min = hpa["spec"]["minReplicas"].as_i64().unwrap_or(1);
        let max = hpa["spec"]["maxReplicas"].as_i64().unwrap_or(min).max(min);
        let mut status =
            json!({"currentReplicas": scale["status"]["replicas"].as_i64().unwrap_or(0)});
        if let Some(t) = hpa["status"].get("lastScaleTime") {
            status["lastScaleTime"] = t.clone();
        }
        if current == 0 && min > 0 {
            obj::set_condition(
                &mut conds,
                json!({"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled", "message": "scaling is disabled since the replica count of the target is zero"}),
                &ts,
                false,
            );
            status["desiredReplicas"] = json!(0);
            status["conditions"] = json!(conds);
            self.write_status(&hpa, status, None).await?;
            return Ok(Requeue::After(SYNC_PERIOD));
        }
        // Upstream reads the Pods through the selector the scale reports.
        let selector = scale["status"]["selector"]
            .as_str()
            .filter(|s| !s.is_empty())
            .and_then(|s| LabelSelector::parse(s).ok());
        let Some(selector) = selector else {
            let msg = "the HPA target's scale is missing a selector".to_owned();
            obj::set_condition(
                &mut conds,
                json!({"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale", "message": "the HPA controller was able to get the target's current scale"}),
                &ts,
                false,
            );
            obj::set_condition(
                &mut conds,
                json!({"type": "ScalingActive", "status": "False", "reason": "InvalidSelector", "message": msg}),
                &ts,
                false,
            );
            status["desiredReplicas"] = json!(current);
            status["conditions"] = json!(conds);
            let event = ("SelectorRequired", "selector is required".to_owned());
            self.write_status(&hpa, status, Some(event)).await?;
            return Ok(Requeue::After(SYNC_PERIOD));
        };
        let pods: Vec<Arc<Value>> = self
            .rt
            .informer(kinds::POD)
            .list_namespace(&key.namespace)
            .into_iter()
            .filter(|p| selector.selects(p) && !obj::deleting(p) && !obj::pod_terminal(p))
            .collect();
        let mut proposal: Option<(i64, String)> = None;
        let mut current_metrics = Vec::new();
        let mut failure = None;
        for m in metric_specs(&hpa) {
            match self.compute(&m, &pods, current) {
                Ok(c) => {
                    current_metrics.push(c.status);
                    if proposal.as_ref().is_none_or(|(p, _)| c.proposal > *p) {
                        proposal = Some((c.proposal, c.description));
                    }
                }
                Err(e) => failure = Some(e),
            }
        }
        let Some((raw, metric)) = proposal else {
            let msg = failure.unwrap_or_default();
            obj::set_condition(
                &mut conds,
                json!({"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale", "message": "the HPA controller was able to get the target's current scale"}),
                &ts,
                false,
            );
            obj::set_condition(
                &mut conds,
                json!({"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric", "message": msg}),
                &ts,
                false,
            );
            status["desiredReplicas"] = json!(current);
            status["conditions"] = json!(conds);
            self.write_status(&hpa, status, Some(("FailedGetResourceMetric", msg)))
                .await?;
            return Ok(Requeue::After(SYNC_PERIOD));
        };
        // Stabilization: scale-down follows the highest recommendation of the window.
        let window = hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
            .as_i64()
            .unwrap_or(DEFAULT_DOWN_WINDOW);
        let up_window = hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"]
            .as_i64()
            .unwrap_or(0);
        let (stabilized, held) = {
            let mut recs = self.recommendations.lock();
            let list = recs.entry(key.clone()).or_default();
            list.push((now, raw));
            let keep = obj::secs(window.max(up_window));
            list.retain(|(t, _)| obj::shift(*t, keep) >= now);
            let down_floor = list
                .iter()
                .filter(|(t, _)| obj::after_secs(*t, window) >= now)
                .map(|(_, r)| *r)
                .max()
                .unwrap_or(raw);
            let up_ceiling = list
                .iter()
                .filter(|(t, _)| obj::after_secs(*t, up_window) >= now)
                .map(|(_, r)| *r)
                .min()
                .unwrap_or(raw);
            let mut s = raw;
            if raw < current {
                s = down_floor.min(current);
            } else if raw > current {
                s = up_ceiling.max(current);
            }
            (s, s != raw)
        };
        // Default scale-up policies: 100 % or 4 Pods per period, the larger.
        let up_limit = (current * 2).max(current + 4);
        let mut desired = stabilized.min(up_limit);
        let (limited, limit_reason, limit_msg) = if desired > max {
            desired = max;
            (
                true,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        } else if desired < min {
            desired = min;
            (
                true,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        } else if stabilized > up_limit {
            (
                true,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        } else {
            (
                false,
                "DesiredWithinRange",
                "the desired count is within the acceptable range",
            )
        };
        let mut event = None;
        if desired != current {
            self.rt.client.update_scale(&target, desired).await?;
            let reason = if desired > current {
                format!("{metric} above target")
            } else {
                "All metrics below target".to_owned()
            };
            let msg = format!("New size: {desired}; reason: {reason}");
            self.recorder
                .record(
                    COMPONENT,
                    None,
                    &hpa,
                    EventKind::Normal,
                    "SuccessfulRescale",
                    msg,
                )
                .await;
            status["lastScaleTime"] = json!(ts);
            obj::set_condition(
                &mut conds,
                json!({"type": "AbleToScale", "status": "True", "reason": "SucceededRescale", "message": format!("the HPA controller was able to update the target scale to {desired}")}),
                &ts,
                false,
            );
        } else if held {
            obj::set_condition(
                &mut conds,
                json!({"type": "AbleToScale", "status": "True", "reason": "ScaleDownStabilized", "message": "recent recommendations were higher than current one, applying the highest recent recommendation"}),
                &ts,
                false,
            );
        } else {
            obj::set_condition(
                &mut conds,
                json!({"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "message": "recommended size matches current size"}),
                &ts,
                false,
            );
        }
        obj::set_condition(
            &mut conds,
            json!({"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound", "message": format!("the HPA was able to successfully calculate a replica count from {metric}")}),
            &ts,
            false,
        );
        obj::set_condition(
            &mut conds,
            json!({"type": "ScalingLimited", "status": if limited { "True" } else { "False" }, "reason": limit_reason, "message": limit_msg}),
            &ts,
            false,
        );
        status["desiredReplicas"] = json!(desired);
        status["currentMetrics"] = json!(current_metrics);
        status["conditions"] = json!(conds);
        if failure.is_some() {
            event = failure.map(|m| ("FailedGetResourceMetric", m));
        }
        self.write_status(&hpa, status, event).await?;
        Ok(Requeue::After(SYNC_PERIOD))
    }

    /// Writes the status in the HPA's own version (v1 has only the CPU
    /// figure), with a Warning Event for a failure not reported before.
    async fn write_status(
        &self,
        hpa: &Value,
        mut status: Value,
        warning: Option<(&str, String)>,
    ) -> Result<(), ClientError> {
        if hpa["apiVersion"] == "autoscaling/v1" {
            let util =
                status["currentMetrics"][0]["resource"]["current"]["averageUtilization"].clone();
            let mut v1 = json!({"currentReplicas": status["currentReplicas"], "desiredReplicas": status["desiredReplicas"]});
            if !util.is_null() {
                v1["currentCPUUtilizationPercentage"] = util;
            }
            if !status["lastScaleTime"].is_null() {
                v1["lastScaleTime"] = status["lastScaleTime"].clone();
            }
            status = v1;
        }
        if let Some(g) = hpa["metadata"]["generation"].as_i64() {
            status["observedGeneration"] = json!(g);
        }
        if let Some((reason, msg)) = warning {
            let seen = hpa["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["reason"] == reason && c["message"] == msg.as_str());
            if !seen {
                self.recorder
                    .record(COMPONENT, None, hpa, EventKind::Warning, reason, msg)
                    .await;
            }
        }
        if hpa["status"] == status {
            return Ok(());
        }
        let mut next = hpa.clone();
        next["status"] = status;
        let w = self.rt.client.update_status(kinds::HPA, next).await?;
        self.rt.informer(kinds::HPA).observe(w);
        Ok(())
    }
}

impl Reconciler for HpaController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}
