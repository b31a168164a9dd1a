//! Reading and writing the fields controllers need on JSON objects: metadata,
//! owner references, conditions, times and quantities.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::client::Kind;

static EMPTY: Value = Value::Null;

/// `metadata.name`.
pub fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or("")
}

/// `metadata.namespace` (`""` for cluster-scoped objects).
pub fn namespace(v: &Value) -> &str {
    v["metadata"]["namespace"].as_str().unwrap_or("")
}

/// `metadata.uid`.
pub fn uid(v: &Value) -> &str {
    v["metadata"]["uid"].as_str().unwrap_or("")
}

/// `metadata.resourceVersion` as the number the store guarantees it is.
pub fn resource_version(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// `metadata.generation`.
pub fn generation(v: &Value) -> i64 {
    v["metadata"]["generation"].as_i64().unwrap_or(0)
}

/// `metadata.labels` (an empty map when absent).
pub fn labels(v: &Value) -> &Value {
    match v["metadata"].get("labels") {
        Some(l) => l,
        None => &EMPTY,
    }
}

/// One annotation.
pub fn annotation<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v["metadata"]["annotations"][key].as_str()
}

/// The metadata map, created when missing.
pub fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v["metadata"].is_object() {
        v["metadata"] = json!({});
    }
    match v["metadata"].as_object_mut() {
        Some(m) => m,
        None => unreachable!("metadata was just made an object"),
    }
}

/// Sets one annotation.
pub fn set_annotation(v: &mut Value, key: &str, value: &str) {
    let m = meta_mut(v);
    let a = m.entry("annotations").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    a[key] = json!(value);
}

/// A string at `path`.
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

/// An integer at `path`.
pub fn i64_at(v: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_i64()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn deleting(v: &Value) -> bool {
    v["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether `metadata.finalizers` is empty.
pub fn finalizers_empty(v: &Value) -> bool {
    v["metadata"]["finalizers"]
        .as_array()
        .is_none_or(|a| a.is_empty())
}

/// Whether the object carries finalizer `f`.
pub fn has_finalizer(v: &Value, f: &str) -> bool {
    v["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == f))
}

/// Removes finalizer `f`.
pub fn remove_finalizer(v: &mut Value, f: &str) {
    if let Some(a) = v["metadata"]["finalizers"].as_array_mut() {
        a.retain(|x| x != f);
    }
}

/// The ownerReference with `controller: true`, if any.
pub fn controller_ref(v: &Value) -> Option<&Value> {
    v["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
}

/// The uid of the controlling owner, if any.
pub fn controller_uid(v: &Value) -> Option<&str> {
    controller_ref(v)?.get("uid")?.as_str()
}

/// Every ownerReference.
pub fn owner_refs(v: &Value) -> &[Value] {
    v["metadata"]["ownerReferences"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A controlling ownerReference to `owner`, as controllers set on what they create.
pub fn controller_ref_to(kind: Kind, owner: &Value) -> Value {
    json!({
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// `pod` adopted by `owner` (of `kind`): its controller reference added.
pub fn adopted(pod: &Value, kind: Kind, owner: &Value) -> Value {
    let mut next = pod.clone();
    let mut refs = owner_refs(&next).to_vec();
    refs.push(controller_ref_to(kind, owner));
    next["metadata"]["ownerReferences"] = json!(refs);
    next
}

/// `pod` released by the owner of `uid`: its reference to it removed.
pub fn released(pod: &Value, uid: &str) -> Value {
    let mut next = pod.clone();
    let refs: Vec<Value> = owner_refs(&next)
        .iter()
        .filter(|r| r["uid"] != uid)
        .cloned()
        .collect();
    next["metadata"]["ownerReferences"] = json!(refs);
    next
}

/// A timestamp as the API writes it (`2026-01-01T00:00:00Z`).
pub fn fmt_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A timestamp with microseconds (`MicroTime`, Events and Leases).
pub fn fmt_micro_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses an API timestamp.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The timestamp at `path`.
pub fn time_at(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    parse_time(str_at(v, path)?)
}

/// `seconds` as a chrono duration.
pub fn secs(seconds: i64) -> chrono::Duration {
    // Counts of seconds come from objects and requests: saturate, never panic.
    chrono::Duration::try_seconds(seconds).unwrap_or(if seconds < 0 {
        chrono::Duration::MIN
    } else {
        chrono::Duration::MAX
    })
}

/// `t` moved by `d`, saturating at the first and last instants chrono holds.
pub fn shift(t: DateTime<Utc>, d: chrono::Duration) -> DateTime<Utc> {
    t.checked_add_signed(d)
        .unwrap_or(if d < chrono::Duration::zero() {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
}

/// `t` plus `seconds` (which may be any number an object holds), saturating.
pub fn after_secs(t: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    shift(t, secs(seconds))
}

/// A non-negative chrono duration as a std one.
pub fn to_std(d: chrono::Duration) -> Duration {
    d.to_std().unwrap_or_default()
}

/// The condition of `type_` in `status.conditions`.
pub fn condition<'a>(v: &'a Value, type_: &str) -> Option<&'a Value> {
    v["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether condition `type_` has status `True`.
pub fn condition_true(v: &Value, type_: &str) -> bool {
    condition(v, type_).is_some_and(|c| c["status"] == "True")
}

/// Pod phase.
pub fn pod_phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("Pending")
}

/// Whether a Pod has finished (Succeeded or Failed).
pub fn pod_terminal(p: &Value) -> bool {
    matches!(pod_phase(p), "Succeeded" | "Failed")
}

/// Whether a Pod counts as active for its controller: not finished, not deleting.
pub fn pod_active(p: &Value) -> bool {
    !pod_terminal(p) && !deleting(p)
}

/// Whether a Pod is Ready.
pub fn pod_ready(p: &Value) -> bool {
    condition_true(p, "Ready")
}

/// Whether a Pod has been Ready for `min_ready` seconds at `now`; when not yet,
/// how long until it will be.
pub fn pod_available(p: &Value, min_ready: i64, now: DateTime<Utc>) -> (bool, Option<Duration>) {
    let Some(ready) = condition(p, "Ready").filter(|c| c["status"] == "True") else {
        return (false, None);
    };
    if min_ready <= 0 {
        return (true, None);
    }
    let since = str_at(ready, &["lastTransitionTime"])
        .and_then(parse_time)
        .unwrap_or(now);
    let at = since + secs(min_ready);
    if at <= now {
        (true, None)
    } else {
        (false, Some(to_std(at - now)))
    }
}

/// Sets condition `new` (with `type`, `status`, `reason`, `message`) in
/// `conditions` as upstream's helpers do: unchanged when status and reason are
/// the same; the transition time kept when only reason or message changed; the
/// changed condition moved last. Answers whether anything changed.
pub fn set_condition(
    conditions: &mut Vec<Value>,
    mut new: Value,
    now: &str,
    with_update_time: bool,
) -> bool {
    let pos = conditions.iter().position(|c| c["type"] == new["type"]);
    if let Some(i) = pos {
        let old = &conditions[i];
        if old["status"] == new["status"]
            && old["reason"] == new["reason"]
            && old["message"] == new["message"]
        {
            return false;
        }
        if old["status"] == new["status"] {
            new["lastTransitionTime"] = old["lastTransitionTime"].clone();
        }
        conditions.remove(i);
    }
    if new.get("lastTransitionTime").is_none_or(Value::is_null) {
        new["lastTransitionTime"] = json!(now);
    }
    if with_update_time {
        new["lastUpdateTime"] = json!(now);
    }
    conditions.push(new);
    true
}

/// Parses a Kubernetes quantity (`100m`, `1.5`, `128Mi`, `1G`) to milli-units.
pub fn quantity_milli(q: &Value) -> Option<i128> {
    if let Some(n) = q.as_i64() {
        return Some(i128::from(n) * 1000);
    }
    if let Some(f) = q.as_f64() {
        return Some((f * 1000.0) as i128);
    }
    let s = q.as_str()?.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult: f64 = match suffix {
        "" => 1.0,
        "m" => 0.001,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some((num * mult * 1000.0).round() as i128)
}

/// Parses a duration such as `30s`, `2m`, `1h30m`, `500ms` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(n) = s.parse::<f64>() {
        return (n >= 0.0).then_some(n).and_then(secs_f64);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (num, tail) = rest.split_at(split);
        let num: f64 = num.parse().ok()?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        total += num
            * match unit {
                "ms" => 0.001,
                "s" => 1.0,
                "m" => 60.0,
                "h" => 3600.0,
                _ => return None,
            };
        rest = tail;
    }
    secs_f64(total)
}

/// A finite number of seconds as a duration, saturating at the longest one;
/// `inf` and `NaN` are no duration.
fn secs_f64(n: f64) -> Option<Duration> {
    n.is_finite()
        .then(|| Duration::try_from_secs_f64(n).unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_and_durations() {
        assert_eq!(quantity_milli(&json!("100m")), Some(100));
        assert_eq!(quantity_milli(&json!("2")), Some(2000));
        assert_eq!(quantity_milli(&json!(2)), Some(2000));
        assert_eq!(quantity_milli(&json!("1Ki")), Some(1_024_000));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("5"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("inf"), None);
        assert_eq!(parse_duration("NaN"), None);
        assert_eq!(parse_duration("99999999999999999999h"), Some(Duration::MAX));
        assert_eq!(parse_duration("1e300"), Some(Duration::MAX));
    }

    #[test]
    fn time_arithmetic_saturates() {
        let t = DateTime::<Utc>::UNIX_EPOCH;
        assert_eq!(secs(i64::MAX), chrono::Duration::MAX);
        assert_eq!(secs(i64::MIN), chrono::Duration::MIN);
        assert_eq!(after_secs(t, 1 << 62), DateTime::<Utc>::MAX_UTC);
        assert_eq!(after_secs(t, -(1 << 62)), DateTime::<Utc>::MIN_UTC);
        assert_eq!(after_secs(t, 10), t + chrono::Duration::seconds(10));
        assert_eq!(shift(t, -secs(i64::MAX)), DateTime::<Utc>::MIN_UTC);
    }

    #[test]
    fn conditions_keep_transition_time() {
        let mut c = vec![];
        assert!(set_condition(
            &mut c,
            json!({"type":"Available","status":"False","reason":"A","message":"m"}),
            "t1",
            true
        ));
        assert!(!set_condition(
            &mut c,
            json!({"type":"Available","status":"False","reason":"A","message":"m"}),
            "t2",
            true
        ));
        assert!(set_condition(
            &mut c,
            json!({"type":"Available","status":"False","reason":"B","message":"m"}),
            "t3",
            true
        ));
        assert_eq!(c[0]["lastTransitionTime"], "t1");
        assert_eq!(c[0]["lastUpdateTime"], "t3");
    }
}
