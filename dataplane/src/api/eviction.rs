//! `pods/eviction` (a policy/v1 Eviction POST): deletes the Pod unless the
//! PodDisruptionBudget covering it allows no disruption now, as upstream's
//! eviction REST does: Pods that are not running (or are already being
//! deleted) go at once; more than one covering budget is a 500; a budget
//! whose status is stale or at zero disruptions answers 429 with the
//! `DisruptionBudget` cause; otherwise the budget's `disruptionsAllowed` is
//! decremented (the Pod recorded in `disruptedPods`) before the delete.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::{Value, json};

use crate::api::subresources::{self, Ctx, SubresourceError};
use crate::api::validation;
use crate::controllers::disruption::selects;
use crate::controllers::obj;
use crate::error::ApiError;
use crate::store::{ObjectKey, Preconditions};

const PDBS: &str = "poddisruptionbudgets.policy";

/// POST `pods/{name}/eviction`.
pub fn serve(
    ctx: &Ctx,
    method: &str,
    body: Result<Value, ApiError>,
) -> Result<HttpResponse, SubresourceError> {
    let body = subresources::post_body(method, body)?;
    let name = ctx.scope.name.clone().unwrap_or_default();
    validation::check_sub_type_meta(
        &body,
        "Eviction",
        "policy",
        &["policy/v1", "policy/v1beta1"],
    )?;
    subresources::check_body_name(&body, &name, "Eviction")?;
    let pod = ctx.object()?;
    let opts = &body["deleteOptions"];
    let mut pre = Preconditions {
        uid: opts["preconditions"]["uid"].as_str().map(str::to_owned),
        resource_version: opts["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
    };
    let dry_run = opts["dryRun"]
        .as_array()
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    // Upstream's canIgnorePDB: terminal, pending or deleting Pods go at once.
    let ignore_budget =
        matches!(obj::pod_phase(&pod), "Succeeded" | "Failed" | "Pending") || obj::deleting(&pod);
    if !ignore_budget {
        let ns = obj::namespace(&pod);
        let labels = obj::labels(&pod);
        let snapshot = ctx.store.snapshot(PDBS);
        let budgets: Vec<std::sync::Arc<Value>> = snapshot
            .iter(Some(ns), None)
            .map(|(_, b)| b)
            .filter(|b| selects(b, labels))
            .collect();
        match budgets.as_slice() {
            [] => {}
            [budget] => {
                if !unhealthy_may_go(budget, &pod) {
                    take_disruption(ctx, budget, &pod, dry_run)?;
                }
                // Delete only the Pod the budget was checked against.
                pre.resource_version = pre.resource_version.or_else(|| {
                    pod["metadata"]["resourceVersion"]
                        .as_str()
                        .map(str::to_owned)
                });
            }
            _ => {
                return Err(ApiError::Internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.".into(),
                )
                .into());
            }
        }
    }
    if !dry_run {
        ctx.store.delete(&ctx.key(), &pre)?;
    }
    Ok(subresources::success(StatusCode::CREATED))
}

/// `unhealthyPodEvictionPolicy`: a Pod that is not Ready may go without
/// using the budget when the policy is `AlwaysAllow`, or (`IfHealthyBudget`,
/// the default) when the budget is met.
fn unhealthy_may_go(budget: &Value, pod: &Value) -> bool {
    if obj::pod_ready(pod) {
        return false;
    }
    let status = &budget["status"];
    let current = status["currentHealthy"].as_i64().unwrap_or(0);
    let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
    budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        || (current >= desired && desired > 0)
}

/// Why a budget at zero disruptions refuses, as upstream words it.
fn denied(budget: &Value) -> String {
    let name = obj::name(budget);
    let status = &budget["status"];
    let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
    let current = status["currentHealthy"].as_i64().unwrap_or(0);
    let cond = obj::condition(budget, "DisruptionAllowed")
        .filter(|c| c["status"] == "False" && c["message"].as_str().is_some_and(|m| !m.is_empty()));
    let reason = cond.and_then(|c| c["reason"].as_str()).unwrap_or_default();
    let message = cond.and_then(|c| c["message"].as_str()).unwrap_or_default();
    if cond.is_some() && reason == "SyncFailed" {
        format!(
            "The disruption budget {name} does not allow evicting pods currently because it failed sync: {message}"
        )
    } else if current <= desired {
        format!(
            "The disruption budget {name} needs {desired} healthy pods and has {current} currently"
        )
    } else if cond.is_some() {
        format!(
            "The disruption budget {name} does not allow evicting pods currently ({reason}): {message}"
        )
    } else {
        format!("The disruption budget {name} does not allow evicting pods currently")
    }
}

/// Upstream's `checkAndDecrement`: refuses, or records the disruption.
fn take_disruption(
    ctx: &Ctx,
    budget: &Value,
    pod: &Value,
    dry_run: bool,
) -> Result<(), SubresourceError> {
    let name = obj::name(budget);
    let status = &budget["status"];
    if status["observedGeneration"].as_i64().unwrap_or(0) < obj::generation(budget) {
        return Err(SubresourceError::DisruptionBudget {
            cause: format!("The disruption budget {name} is still being processed by the server."),
            retry_after: 10,
        });
    }
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
    if allowed < 0 {
        return Err(ApiError::Forbidden(format!(
            "poddisruptionbudgets.policy \"{name}\" is forbidden: pdb disruptions allowed is negative"
        ))
        .into());
    }
    if allowed == 0 {
        return Err(SubresourceError::DisruptionBudget {
            cause: denied(budget),
            retry_after: 0,
        });
    }
    if dry_run {
        return Ok(());
    }
    let mut next = budget.clone();
    next["status"]["disruptionsAllowed"] = json!(allowed - 1);
    next["status"]["disruptedPods"][obj::name(pod)] = json!(obj::fmt_time(ctx.now()));
    if allowed == 1 {
        let now = obj::fmt_time(ctx.now());
        let mut conds: Vec<Value> = next["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        obj::set_condition(
            &mut conds,
            json!({"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                   "message": "", "observedGeneration": obj::generation(budget)}),
            &now,
            false,
        );
        next["status"]["conditions"] = json!(conds);
    }
    let key = ObjectKey::new(PDBS, obj::namespace(budget), name);
    let pre = Preconditions {
        resource_version: budget["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        uid: None,
    };
    // A lost race is a 409, which kubectl drain retries, as upstream.
    ctx.store.update(&key, next, &pre)?;
    Ok(())
}
