//! Field management and server-side apply, as kube-apiserver does them with
//! structured-merge-diff: every write records which manager owns which
//! fields in `metadata.managedFields` (`FieldsV1`), apply merges a
//! manager's configuration with ownership, conflicts and pruning.
//!
//! - [`fieldset`]: path sets and their `FieldsV1` form;
//! - [`typed`]: objects walked with their schema (shapes, field sets,
//!   compare, merge, removal);
//! - [`entries`]: the `managedFields` entries;
//! - this file: the two operations, [`track_update`] and [`apply`].
//!
//! Everything here runs on the API write path only; controllers writing the
//! store directly are not tracked, and reads never compute anything.

use serde_json::{Value, json};
use thiserror::Error;

use crate::api::patch::Schema;
use crate::error::{ApiError, Cause};

pub mod entries;
pub mod fieldset;
pub mod typed;

use entries::{Entry, Operation};
use fieldset::{FieldSet, Path};

/// The manager upstream assigns the fields of an object that had no
/// managed fields when it was first applied.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// kubectl's client-side apply manager, whose ownership `kubectl apply
/// --server-side` takes over.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The only manager upstream migrates client-side apply for.
const KUBECTL: &str = "kubectl";

/// Who writes, and the context of the write.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// The field manager (`fieldManager`, else from the user agent).
    pub manager: &'a str,
    /// The API version written (`apps/v1`).
    pub api_version: String,
    /// Now, RFC 3339, from the clock.
    pub now: String,
    /// The type's schema.
    pub schema: Schema,
    /// Whether `status` is written only through the status subresource, so
    /// managers of the main resource never own it.
    pub status_subresource: bool,
    /// The subresource written through (`status`, `scale`), if any: its
    /// managers own only what it shows of the object.
    pub subresource: Option<&'a str>,
    /// Top-level fields the kind's strategy resets on the main resource
    /// beyond `status` ([`reset_fields`]): no manager owns them.
    pub reset: &'static [&'static str],
}

/// Upstream's `GetResetFields` of a kind's main resource where it names more
/// than `status`: a CertificateSigningRequest's spec is set by the registry
/// (the requester) and immutable after.
pub fn reset_fields(definition: &str) -> &'static [&'static str] {
    match definition {
        "io.k8s.api.certificates.v1.CertificateSigningRequest"
        | "io.k8s.api.certificates.v1beta1.CertificateSigningRequest" => &["spec", "status"],
        _ => &[],
    }
}

/// Removes null members, at any depth: upstream tracks the typed object,
/// where a null is an unset field.
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// One field another manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager, as upstream prints it (`"kubectl" using apps/v1`).
    pub manager: String,
    /// The field, as upstream prints it (`.spec.replicas`).
    pub field: String,
}

/// What field management can fail with.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ManagedFieldsError {
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// Apply touched fields other managers own.
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager, one.field
        );
    }
    let mut lines = Vec::new();
    let mut last: Option<&str> = None;
    for c in conflicts {
        if last != Some(c.manager.as_str()) {
            lines.push(format!("conflicts with {}:", c.manager));
            last = Some(&c.manager);
        }
        lines.push(format!("- {}", c.field));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

impl From<ManagedFieldsError> for ApiError {
    fn from(e: ManagedFieldsError) -> Self {
        match e {
            ManagedFieldsError::BadRequest(m) => ApiError::BadRequest(m),
            ManagedFieldsError::Conflicts(ref c) => ApiError::ApplyConflict {
                message: e.to_string(),
                causes: c
                    .iter()
                    .map(|c| Cause {
                        reason: "FieldManagerConflict".into(),
                        message: format!("conflict with {}", c.manager),
                        field: c.field.clone(),
                    })
                    .collect(),
            },
        }
    }
}

/// The part of an object whose fields are tracked: upstream strips type
/// meta and the metadata the server owns (and `status` when a subresource
/// writes it).
fn tracked(object: &Value, w: &Writer) -> Value {
    match w.subresource {
        Some("status") => {
            return json!({ "status": object.get("status").cloned().unwrap_or(Value::Null) });
        }
        Some("scale") => return json!({ "spec": { "replicas": object["spec"]["replicas"] } }),
        _ => {}
    }
    let mut v = object.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        if w.status_subresource {
            m.remove("status");
        }
        for f in w.reset {
            m.remove(*f);
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "generation",
                "managedFields",
                "resourceVersion",
            ] {
                meta.remove(f);
            }
            if meta.is_empty() {
                m.remove("metadata");
            }
        }
    }
    strip_nulls(&mut v);
    v
}

/// Upstream's `update`: fields that changed leave the other managers (a
/// conflict unless `force`), fields removed leave every manager.
fn update(
    managers: &mut [Entry],
    skip: Option<usize>,
    c: &typed::Comparison,
    force: bool,
) -> Result<(), Vec<Conflict>> {
    let changed = c.modified.union(&c.added);
    let mut conflicts = Vec::new();
    let mut taken: Vec<(usize, FieldSet)> = Vec::new();
    for (i, e) in managers.iter().enumerate() {
        if Some(i) == skip {
            continue;
        }
        let owned = e.fields.intersection(&changed);
        if !owned.is_empty() {
            for p in owned.members() {
                conflicts.push(Conflict {
                    manager: e.printed(),
                    field: fieldset::display(&p),
                });
            }
            taken.push((i, owned));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by(|a, b| (&a.manager, &a.field).cmp(&(&b.manager, &b.field)));
        return Err(conflicts);
    }
    for (i, owned) in taken {
        managers[i].fields = managers[i].fields.difference(&owned);
    }
    for (i, e) in managers.iter_mut().enumerate() {
        if Some(i) != skip && !c.removed.is_empty() {
            e.fields = e.fields.difference(&c.removed);
        }
    }
    Ok(())
}

/// Records a create, update or non-apply patch by `w.manager` on `new`
/// (`old` is the live object, `None` on create): the manager's `Update`
/// entry gains what changed, other managers lose it.
pub fn track_update(old: Option<&Value>, new: &mut Value, w: &Writer) {
    // The entries the request carries win (clients may edit them; `[{}]`
    // resets them); absent or empty, the live object's stay.
    let sent = new["metadata"]["managedFields"].as_array();
    let reset =
        sent.is_some_and(|l| l.len() == 1 && l[0].as_object().is_some_and(|m| m.is_empty()));
    let mut managers = if reset {
        Vec::new()
    } else {
        let mine = entries::decode(new);
        if mine.is_empty() {
            old.map(entries::decode).unwrap_or_default()
        } else {
            mine
        }
    };
    let empty = json!({});
    let old_view = old.map_or(empty, |o| tracked(o, w));
    let new_view = tracked(new, w);
    // A write that changes no tracked field (a status-only or no-op write)
    // skips the walk.
    let c = if old_view == new_view {
        typed::Comparison::default()
    } else {
        typed::compare(&old_view, &new_view, w.schema)
    };
    // Forced: an update never conflicts.
    let _ = update(&mut managers, None, &c, true);
    let took = c.modified.union(&c.added);
    if !took.is_empty() {
        let at = managers
            .iter()
            .position(|e| e.is(w.manager, Operation::Update, w.subresource));
        let entry = match at {
            Some(i) => &mut managers[i],
            None => {
                managers.push(Entry {
                    manager: w.manager.to_owned(),
                    operation: Operation::Update,
                    api_version: w.api_version.clone(),
                    time: None,
                    subresource: w.subresource.map(str::to_owned),
                    fields: FieldSet::new(),
                });
                let last = managers.len() - 1;
                &mut managers[last]
            }
        };
        entry.fields = entry.fields.union(&took).difference(&c.removed);
        entry.time = Some(w.now.clone());
        entry.api_version = w.api_version.clone();
    }
    entries::encode(new, managers);
}

/// The fields of the client-side apply annotation: what `kubectl apply
/// --server-side` may take over from client-side apply without a conflict.
fn last_applied_fields(live: &Value, w: &Writer) -> FieldSet {
    live["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .map(|v| typed::to_field_set(&tracked(&v, w), w.schema))
        .unwrap_or_default()
}

/// Server-side apply of `config` by `w.manager` onto `live` (`None`: the
/// object does not exist and is created). Returns the object to store.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    w: &Writer,
    force: bool,
) -> Result<Value, ManagedFieldsError> {
    if config["metadata"]
        .get("managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ManagedFieldsError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let live_obj = live.cloned().unwrap_or_else(|| json!({}));
    let mut managers = entries::decode(&live_obj);
    if live.is_some() && managers.is_empty() {
        // Fields set before anyone applied belong to one Update manager.
        let fields = typed::to_field_set(&tracked(&live_obj, w), w.schema);
        managers.push(Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: Operation::Update,
            api_version: w.api_version.clone(),
            time: Some(w.now.clone()),
            subresource: None,
            fields,
        });
    }
    let mut merged = typed::merge(&live_obj, config, w.schema);
    let applied = typed::to_field_set(&tracked(config, w), w.schema);
    let me = match managers
        .iter()
        .position(|e| e.is(w.manager, Operation::Apply, w.subresource))
    {
        Some(i) => i,
        None => {
            managers.push(Entry {
                manager: w.manager.to_owned(),
                operation: Operation::Apply,
                api_version: w.api_version.clone(),
                time: None,
                subresource: w.subresource.map(str::to_owned),
                fields: FieldSet::new(),
            });
            managers.len() - 1
        }
    };
    let last = std::mem::replace(&mut managers[me].fields, applied);
    // Prune what this manager stopped applying, unless someone else owns it.
    let owned = managers
        .iter()
        .fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
    let dropped = last.difference(&owned);
    if !dropped.is_empty() {
        typed::remove(&mut merged, &dropped, &owned, w.schema);
    }
    let live_view = tracked(&live_obj, w);
    let merged_view = tracked(&merged, w);
    let c = typed::compare(&live_view, &merged_view, w.schema);
    let before = managers.clone();
    if let Err(conflicts) = update(&mut managers, Some(me), &c, force) {
        // kubectl's migration from client-side apply: conflicts only on
        // fields its last-applied annotation holds are taken over.
        let allowed = last_applied_fields(&live_obj, w);
        let migrate = w.manager == KUBECTL
            && !allowed.is_empty()
            && conflicts_within(&before, Some(me), &c, &allowed);
        if !migrate {
            return Err(ManagedFieldsError::Conflicts(conflicts));
        }
        managers = before;
        let _ = update(&mut managers, Some(me), &c, true);
    }
    let entry = &mut managers[me];
    entry.api_version = w.api_version.clone();
    // The entry's time moves only when the object changes: a re-apply of
    // the same configuration is a no-op.
    if !c.is_empty() || entry.time.is_none() {
        entry.time = Some(w.now.clone());
    }
    if w.manager == KUBECTL && live_obj["metadata"]["annotations"][LAST_APPLIED].is_string() {
        // Keep the client-side apply annotation in step with what kubectl applies.
        let mut la = config.clone();
        if let Some(a) = la["metadata"]["annotations"].as_object_mut() {
            a.remove(LAST_APPLIED);
        }
        let text = serde_json::to_string(&la).unwrap_or_default();
        merged["metadata"]["annotations"][LAST_APPLIED] = Value::String(text + "\n");
    }
    entries::encode(&mut merged, managers);
    Ok(merged)
}

/// Whether every conflict of `c` lies within `allowed`.
fn conflicts_within(
    managers: &[Entry],
    skip: Option<usize>,
    c: &typed::Comparison,
    allowed: &FieldSet,
) -> bool {
    let changed = c.modified.union(&c.added);
    managers.iter().enumerate().all(|(i, e)| {
        Some(i) == skip
            || e.fields
                .intersection(&changed)
                .members()
                .iter()
                .all(|p: &Path| allowed.contains(p))
    })
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
