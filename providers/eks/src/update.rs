//! Updates: every change to a cluster, node group, add-on or capability is an
//! Update, `InProgress` until the clock passes its end, then `Successful`.
//! There is no waiter for them; callers (terraform) poll DescribeUpdate.

use serde_json::{Value, json};

use crate::error::Error;
use crate::state::{ClusterState, Update, UpdateTarget};
use crate::wire::{epoch, page_response, paginate};
use crate::{Call, Eks};

/// Records a new update and returns its wire object. `params` are
/// `(type, value)` pairs; EKS sends every value as a string.
pub fn record(
    eks: &Eks,
    call: &Call,
    cs: &mut ClusterState,
    target: UpdateTarget,
    kind: &str,
    params: Vec<(&str, String)>,
) -> Value {
    let done_at = call.now
        + chrono::Duration::from_std(eks.settings.transition).unwrap_or(chrono::Duration::MAX);
    let params: Vec<Value> = params
        .into_iter()
        .map(|(t, v)| json!({ "type": t, "value": v }))
        .collect();
    let update = Update {
        id: uuid::Uuid::new_v4().to_string(),
        target,
        obj: json!({ "type": kind, "params": params, "createdAt": epoch(call.now), "errors": [] })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        done_at,
    };
    let out = update.render(call.now);
    cs.updates.push(update);
    out
}

/// The target the `nodegroupName` / `addonName` / `capabilityName` query names.
fn target(call: &Call) -> UpdateTarget {
    let q = &call.query;
    match (
        q.get("nodegroupName"),
        q.get("addonName"),
        q.get("capabilityName"),
    ) {
        (Some(n), _, _) => UpdateTarget::Nodegroup(n.to_owned()),
        (_, Some(a), _) => UpdateTarget::Addon(a.to_owned()),
        (_, _, Some(c)) => UpdateTarget::Capability(c.to_owned()),
        _ => UpdateTarget::Cluster,
    }
}

/// DescribeUpdate.
pub fn describe(eks: &Eks, call: &Call, name: &str, id: &str) -> Result<Value, Error> {
    let want = target(call);
    eks.with_cluster(call, name, |_, cs| {
        cs.updates
            .iter()
            .find(|u| u.id == id && u.target == want)
            .map(|u| json!({ "update": u.render(call.now) }))
            .ok_or_else(|| Error::ResourceNotFound(format!("No update found for ID: {id}.")))
    })
}

/// ListUpdates.
pub fn list(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let want = target(call);
    eks.with_cluster(call, name, |_, cs| {
        let ids: Vec<Value> = cs
            .updates
            .iter()
            .filter(|u| u.target == want)
            .map(|u| json!(u.id))
            .collect();
        let (page, next) = paginate(&ids, &call.query, 100)?;
        Ok(page_response("updateIds", page, next))
    })
}
