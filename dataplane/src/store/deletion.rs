//! What a DELETE does to one stored object, as kube-apiserver's generic
//! registry decides it (`rest.BeforeDelete`, `deletionFinalizersForGarbageCollection`,
//! `markAsDeleting`): a pure plan computed from the current object under the
//! store's lock, so every [`Store`](super::Store) applies it atomically.
//!
//! - Graceful kinds (Pods) get `deletionTimestamp = now + grace` and
//!   `deletionGracePeriodSeconds`; someone else (the kubelet) finishes them.
//! - The garbage collector's finalizers (`orphan`, `foregroundDeletion`) are
//!   set from `propagationPolicy` / `orphanDependents`, the object's own
//!   finalizers, then the kind's default policy.
//! - Objects with finalizers are marked (`deletionTimestamp = now`, grace 0)
//!   and stay until the last finalizer goes; others are removed.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{Object, Preconditions};
use crate::controllers::obj;
use crate::error::{ApiError, Target};
use crate::resources::custom::CLEANUP_FINALIZER;

/// The garbage collector's finalizer for `Orphan` propagation.
pub const ORPHAN: &str = "orphan";
/// The garbage collector's finalizer for `Foreground` propagation.
pub const FOREGROUND: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents lose their ownerReference to the owner first.
    Orphan,
    /// The owner goes now; the garbage collector removes dependents after.
    Background,
    /// Dependents go first; the owner waits with `foregroundDeletion`.
    Foreground,
}

/// A kind's default garbage-collection policy (upstream
/// `rest.GarbageCollectionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted (in the background) unless told otherwise.
    DeleteDependents,
    /// Dependents are orphaned unless told otherwise (legacy kinds).
    OrphanDependents,
    /// The kind never gets the collector's finalizers (Events).
    Unsupported,
}

/// How a kind is deleted: the per-kind part of upstream's delete strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteStrategy {
    /// Kind, e.g. `Pod` (upstream names it in precondition conflicts).
    pub kind: String,
    /// API group, empty for core.
    pub group: String,
    /// Pod-style graceful deletion (`CheckGracefulDelete`).
    pub graceful: bool,
    /// Namespace-style deletion: the first DELETE marks it `Terminating`;
    /// it goes once `spec.finalizers` (the namespace controller's) and
    /// `metadata.finalizers` are empty.
    pub namespace: bool,
    /// CustomResourceDefinition-style deletion: the first DELETE only marks
    /// it (its deletion stamped, the cleanup finalizer, a `Terminating`
    /// condition; no grace period, generation bump or collector finalizer);
    /// later ones delete as any object.
    pub crd: bool,
    /// The default garbage-collection policy; `None` when the garbage
    /// collector does not look after this kind (no finalizers are set).
    pub gc: Option<GcPolicy>,
}

impl DeleteStrategy {
    /// No grace period and no collector finalizers: what internal deletes
    /// without a strategy get.
    pub fn plain(kind: &str, group: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            group: group.to_owned(),
            graceful: false,
            namespace: false,
            crd: false,
            gc: None,
        }
    }
}

/// The options of one delete (`metav1.DeleteOptions`, validated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `preconditions.uid` / `preconditions.resourceVersion`.
    pub preconditions: Preconditions,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`.
    pub propagation: Option<Propagation>,
    /// The legacy `orphanDependents`.
    pub orphan_dependents: Option<bool>,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// Removed from the store; the object as last stored.
    Now(Object),
    /// Kept, terminating (graceful period or finalizers); the object as stored.
    Pending(Object),
    /// A graceful deletion was already under way and is left as it is.
    AlreadyPending(Object),
}

impl Deleted {
    /// The object the outcome carries.
    pub fn object(&self) -> &Object {
        match self {
            Deleted::Now(o) | Deleted::Pending(o) | Deleted::AlreadyPending(o) => o,
        }
    }

    /// The object, by value.
    pub fn into_object(self) -> Object {
        match self {
            Deleted::Now(o) | Deleted::Pending(o) | Deleted::AlreadyPending(o) => o,
        }
    }
}

/// The writes a store makes for one delete.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing is written; the object stays as it is.
    Keep {
        /// Whether a graceful deletion was already pending.
        already_pending: bool,
    },
    /// The object is rewritten (terminating) and stays.
    Write(Value),
    /// The object is removed, after first writing `update` if set (a Pod
    /// deleted with grace 0: watchers see it terminating, then gone).
    Remove {
        /// A terminating state written before the removal.
        update: Option<Value>,
    },
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn conflict(strategy: &DeleteStrategy, name: &str, message: String) -> ApiError {
    // Upstream names the kind, not the resource, in these conflicts.
    ApiError::Conflict {
        target: Target {
            name: name.to_owned(),
            group: strategy.group.clone(),
            kind: strategy.kind.clone(),
        },
        message,
    }
}

/// Checks the delete's preconditions against the stored object.
pub fn check_preconditions(
    strategy: &DeleteStrategy,
    current: &Value,
    pre: &Preconditions,
) -> Result<(), ApiError> {
    let meta = &current["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let uid = meta["uid"].as_str().unwrap_or_default();
    let rv = meta["resourceVersion"].as_str().unwrap_or_default();
    if let Some(want) = &pre.uid
        && want != uid
    {
        return Err(conflict(
            strategy,
            name,
            format!(
                "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
        ));
    }
    if let Some(want) = &pre.resource_version
        && want != rv
    {
        return Err(conflict(
            strategy,
            name,
            format!(
                "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
            ),
        ));
    }
    Ok(())
}

fn finalizers(v: &Value) -> Vec<String> {
    v["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn set_finalizers(v: &mut Value, list: Vec<String>) {
    match v["metadata"].as_object_mut() {
        Some(m) if list.is_empty() => {
            m.remove("finalizers");
        }
        Some(m) => {
            m.insert("finalizers".into(), json!(list));
        }
        None => {}
    }
}

fn bump_generation(v: &mut Value) {
    if let Some(g) = v["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
        v["metadata"]["generation"] = json!(g + 1);
    }
}

/// The Pod strategy's grace period (`CheckGracefulDelete`): the request's,
/// else the spec's (30 s by default); 0 for unscheduled or finished Pods.
fn pod_grace(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested.unwrap_or_else(|| {
        pod["spec"]["terminationGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(30)
    });
    if pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        period = 0;
    }
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Failed" | "Succeeded")
    ) {
        period = 0;
    }
    if period < 0 { 1 } else { period }
}

/// `rest.BeforeDelete`: (graceful, already pending), marking `obj` for a
/// graceful deletion when it is one.
fn before_delete(
    strategy: &DeleteStrategy,
    obj: &mut Value,
    grace: Option<i64>,
    now: DateTime<Utc>,
) -> (bool, bool, Option<i64>) {
    if !strategy.graceful {
        return (false, false, grace);
    }
    let meta = &obj["metadata"];
    if let Some(ts) = meta["deletionTimestamp"].as_str() {
        let existing = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
        if existing == 0 {
            return (false, false, grace);
        }
        let Some(mut period) = grace else {
            // Graceful deletion is pending: leave it as it is.
            return (false, true, Some(existing));
        };
        if period >= existing {
            return (false, true, grace);
        }
        // Only a shorter grace period may be given: move the timestamp back.
        let ts = DateTime::parse_from_rfc3339(ts)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or(now);
        let mut at = obj::after_secs(obj::shift(ts, -obj::secs(existing)), period);
        if at < now {
            at = now;
            if period != 0 {
                period = 1;
            }
        }
        obj["metadata"]["deletionTimestamp"] = json!(stamp(at));
        obj["metadata"]["deletionGracePeriodSeconds"] = json!(period);
        return (true, false, Some(period));
    }
    let period = pod_grace(obj, grace);
    obj["metadata"]["deletionTimestamp"] = json!(stamp(obj::after_secs(now, period)));
    obj["metadata"]["deletionGracePeriodSeconds"] = json!(period);
    bump_generation(obj);
    (true, false, Some(period))
}

/// `deletionFinalizersForGarbageCollection`: the finalizers the object
/// should carry, if they differ from its own.
fn gc_finalizers(
    strategy: &DeleteStrategy,
    obj: &Value,
    opts: &DeleteOptions,
) -> Option<Vec<String>> {
    let policy = strategy.gc?;
    if policy == GcPolicy::Unsupported {
        return None;
    }
    let own = finalizers(obj);
    let has = |f: &str| own.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) if has(ORPHAN) => true,
        (None, None) if has(FOREGROUND) => false,
        (None, None) => policy == GcPolicy::OrphanDependents,
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(_), _) => false,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) if has(FOREGROUND) => true,
        (None, None) => false,
    };
    let mut next: Vec<String> = own
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN.into());
    }
    if foreground {
        next.push(FOREGROUND.into());
    }
    let same = {
        let mut a = own.clone();
        let mut b = next.clone();
        a.sort();
        a.dedup();
        b.sort();
        b.dedup();
        a == b
    };
    (!same).then_some(next)
}

/// `markAsDeleting`: deletion now, grace 0, generation bumped on the first mark.
fn mark_as_deleting(obj: &mut Value, now: DateTime<Utc>) {
    let existing = obj["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    if existing.is_none() {
        bump_generation(obj);
    }
    if existing.is_none_or(|t| t > now) {
        obj["metadata"]["deletionTimestamp"] = json!(stamp(now));
    }
    obj["metadata"]["deletionGracePeriodSeconds"] = json!(0);
}

fn spec_finalizers(v: &Value) -> bool {
    v["spec"]["finalizers"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
}

/// The namespace registry's own DELETE: the first one marks the Namespace
/// `Terminating` (with the collector's finalizers the options ask for); later
/// ones wait for `spec.finalizers`, then delete as any object.
fn plan_namespace(
    current: &Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> Result<Option<Plan>, ApiError> {
    let meta = &current["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let uid = meta["uid"].as_str().unwrap_or_default();
    let rv = meta["resourceVersion"].as_str().unwrap_or_default();
    let conflict = |message: String| ApiError::Conflict {
        target: Target {
            name: name.to_owned(),
            group: String::new(),
            kind: "namespaces".into(),
        },
        message,
    };
    let pre = &opts.preconditions;
    if let Some(want) = pre.uid.as_deref().filter(|w| *w != uid) {
        return Err(conflict(format!(
            "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
        )));
    }
    if let Some(want) = pre.resource_version.as_deref().filter(|w| *w != rv) {
        return Err(conflict(format!(
            "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
        )));
    }
    if meta["deletionTimestamp"].is_string() {
        if spec_finalizers(current) {
            return Ok(Some(Plan::Keep {
                already_pending: false,
            }));
        }
        return Ok(None);
    }
    let mut next = current.clone();
    next["metadata"]["deletionTimestamp"] = json!(stamp(now));
    if !next["status"].is_object() {
        next["status"] = json!({});
    }
    next["status"]["phase"] = json!("Terminating");
    let own = finalizers(current);
    let has = |f: &str| own.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) => has(ORPHAN),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => !o,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(FOREGROUND),
    };
    let mut list: Vec<String> = own
        .into_iter()
        .filter(|f| f != ORPHAN && f != FOREGROUND)
        .collect();
    if orphan {
        list.push(ORPHAN.into());
    }
    if foreground {
        list.push(FOREGROUND.into());
    }
    set_finalizers(&mut next, list);
    Ok(Some(Plan::Write(next)))
}

/// The CRD registry's own first DELETE: a write marking it deleted, which
/// the CRD controller acts on (it removes the instances, then the
/// finalizer); `None` once marked.
fn plan_crd(
    strategy: &DeleteStrategy,
    current: &Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> Result<Option<Plan>, ApiError> {
    if current["metadata"]["deletionTimestamp"].is_string() {
        return Ok(None);
    }
    check_preconditions(strategy, current, &opts.preconditions)?;
    let mut next = current.clone();
    next["metadata"]["deletionTimestamp"] = json!(stamp(now));
    let mut list = finalizers(current);
    if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
        list.push(CLEANUP_FINALIZER.into());
    }
    set_finalizers(&mut next, list);
    if !next["status"].is_object() {
        next["status"] = json!({});
    }
    let mut conditions: Vec<Value> = next["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "Terminating");
    conditions.push(json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": stamp(now),
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    }));
    next["status"]["conditions"] = json!(conditions);
    Ok(Some(Plan::Write(next)))
}

/// Decides what deleting `current` does. Preconditions are checked first
/// (409 Conflict as upstream words it).
pub fn plan(
    strategy: &DeleteStrategy,
    current: &Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> Result<Plan, ApiError> {
    if strategy.namespace
        && let Some(plan) = plan_namespace(current, opts, now)?
    {
        return Ok(plan);
    }
    if strategy.crd
        && let Some(plan) = plan_crd(strategy, current, opts, now)?
    {
        return Ok(plan);
    }
    check_preconditions(strategy, current, &opts.preconditions)?;
    // Negative grace periods count as 1 s on the delete path.
    let grace = opts.grace_period_seconds.map(|g| if g < 0 { 1 } else { g });
    let mut next = current.clone();
    let (graceful, pending, grace) = before_delete(strategy, &mut next, grace, now);
    if pending {
        // Finalizers cannot change through DeleteOptions once deletion started.
        return Ok(Plan::Keep {
            already_pending: true,
        });
    }
    let gc = gc_finalizers(strategy, &next, opts);
    if !graceful && finalizers(current).is_empty() && gc.is_none() {
        return Ok(Plan::Remove { update: None });
    }
    if let Some(list) = gc {
        set_finalizers(&mut next, list);
    }
    let pending_finalizers = !finalizers(&next).is_empty();
    if !graceful {
        if !pending_finalizers {
            return Ok(Plan::Remove { update: None });
        }
        mark_as_deleting(&mut next, now);
    } else if !pending_finalizers && grace.unwrap_or(0) == 0 {
        return Ok(Plan::Remove {
            update: (next != *current).then_some(next),
        });
    }
    if next == *current {
        return Ok(Plan::Keep {
            already_pending: false,
        });
    }
    Ok(Plan::Write(next))
}

/// What a DELETE of `current` with `opts` leaves while the garbage
/// collector works under `strategy`'s policy: the object with the
/// collector's finalizer and its deletion stamped; `None` when the policy
/// adds no finalizer (a plain delete). For kinds whose collection kemu
/// finishes at once, this is the answer upstream gives.
pub fn pending_for_collector(
    strategy: &DeleteStrategy,
    current: &Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> Option<Value> {
    let list = gc_finalizers(strategy, current, opts)?;
    if list.is_empty() {
        return None;
    }
    let mut next = current.clone();
    set_finalizers(&mut next, list);
    mark_as_deleting(&mut next, now);
    Some(next)
}

/// `ShouldDeleteDuringUpdate`: an update that leaves no finalizers on an
/// object being deleted without a pending grace period removes it (a
/// Namespace also needs its `spec.finalizers` empty).
pub fn removes_on_update(next: &Value, current: &Value, namespace: bool) -> bool {
    !(namespace && spec_finalizers(next))
        && finalizers(next).is_empty()
        && current["metadata"]["deletionTimestamp"].is_string()
        && current["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0)
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn deploy(finalizers: &[&str]) -> Value {
        json!({"metadata": {"name": "web", "uid": "u1", "resourceVersion": "7", "generation": 2,
            "finalizers": finalizers}, "spec": {}})
    }

    fn apps() -> DeleteStrategy {
        DeleteStrategy {
            kind: "Deployment".into(),
            group: "apps".into(),
            graceful: false,
            namespace: false,
            crd: false,
            gc: Some(GcPolicy::DeleteDependents),
        }
    }

    #[test]
    fn propagation_sets_the_collectors_finalizers() {
        let now = at("2026-01-01T00:00:00Z");
        let bg = plan(&apps(), &deploy(&[]), &DeleteOptions::default(), now).unwrap();
        assert_eq!(bg, Plan::Remove { update: None });
        let opts = DeleteOptions {
            propagation: Some(Propagation::Foreground),
            ..Default::default()
        };
        let Plan::Write(fg) = plan(&apps(), &deploy(&[]), &opts, now).unwrap() else {
            panic!("foreground keeps the owner");
        };
        assert_eq!(fg["metadata"]["finalizers"], json!(["foregroundDeletion"]));
        assert_eq!(fg["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(fg["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(fg["metadata"]["generation"], 3);
        let legacy = DeleteOptions {
            orphan_dependents: Some(true),
            ..Default::default()
        };
        let Plan::Write(o) = plan(&apps(), &deploy(&["a/b"]), &legacy, now).unwrap() else {
            panic!("orphan keeps the owner");
        };
        assert_eq!(o["metadata"]["finalizers"], json!(["a/b", "orphan"]));
        // Already terminating with the same finalizers: nothing to write.
        assert_eq!(
            plan(&apps(), &o, &legacy, now).unwrap(),
            Plan::Keep {
                already_pending: false
            }
        );
        // An explicit Background drops a pending orphan finalizer.
        let bg = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        assert_eq!(
            plan(&apps(), &deploy(&["orphan"]), &bg, now).unwrap(),
            Plan::Remove { update: None }
        );
        // Legacy kinds orphan by default; Events never get finalizers.
        let mut job = apps();
        job.gc = Some(GcPolicy::OrphanDependents);
        assert!(matches!(
            plan(&job, &deploy(&[]), &DeleteOptions::default(), now).unwrap(),
            Plan::Write(_)
        ));
        let mut ev = apps();
        ev.gc = Some(GcPolicy::Unsupported);
        assert_eq!(
            plan(&ev, &deploy(&[]), &opts, now).unwrap(),
            Plan::Remove { update: None }
        );
    }

    #[test]
    fn pods_are_deleted_gracefully() {
        let now = at("2026-01-01T00:00:00Z");
        let pods = DeleteStrategy {
            kind: "Pod".into(),
            group: String::new(),
            graceful: true,
            namespace: false,
            crd: false,
            gc: Some(GcPolicy::DeleteDependents),
        };
        let pod = json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "3"},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let Plan::Write(p) = plan(&pods, &pod, &DeleteOptions::default(), now).unwrap() else {
            panic!("a running pod is deleted gracefully");
        };
        assert_eq!(p["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30);
        // Deleting again without a grace period leaves it pending.
        assert_eq!(
            plan(&pods, &p, &DeleteOptions::default(), now).unwrap(),
            Plan::Keep {
                already_pending: true
            }
        );
        // The kubelet's grace-0 delete finishes it: terminating, then removed.
        let force = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        let Plan::Remove { update: Some(u) } = plan(&pods, &p, &force, now).unwrap() else {
            panic!("grace 0 removes");
        };
        assert_eq!(u["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(u["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
        // Unscheduled pods go at once.
        let mut idle = pod.clone();
        idle["spec"]["nodeName"] = json!("");
        assert!(matches!(
            plan(&pods, &idle, &DeleteOptions::default(), now).unwrap(),
            Plan::Remove { update: Some(_) }
        ));
    }

    #[test]
    fn preconditions_conflict_as_upstream() {
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: Some("other".into()),
                resource_version: None,
            },
            ..Default::default()
        };
        let err = plan(&apps(), &deploy(&[]), &opts, at("2026-01-01T00:00:00Z")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Operation cannot be fulfilled on Deployment.apps \"web\": the UID in the precondition (other) does not match the UID in record (u1). The object might have been deleted and then recreated"
        );
    }

    #[test]
    fn namespaces_terminate_until_their_finalizers_go() {
        let now = at("2026-01-01T00:00:00Z");
        let mut ns = DeleteStrategy::plain("Namespace", "");
        ns.namespace = true;
        let team = json!({"metadata": {"name": "team", "uid": "n1", "resourceVersion": "4"},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let Plan::Write(t) = plan(&ns, &team, &DeleteOptions::default(), now).unwrap() else {
            panic!("the first delete marks it");
        };
        assert_eq!(t["status"]["phase"], "Terminating");
        assert_eq!(t["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(
            plan(&ns, &t, &DeleteOptions::default(), now).unwrap(),
            Plan::Keep {
                already_pending: false
            }
        );
        let mut finalized = t.clone();
        finalized["spec"]["finalizers"] = json!([]);
        assert!(removes_on_update(&finalized, &t, true));
        assert!(!removes_on_update(&t, &t, true));
        assert_eq!(
            plan(&ns, &finalized, &DeleteOptions::default(), now).unwrap(),
            Plan::Remove { update: None }
        );
    }
}
