//! DELETE of one object and of a collection, as kube-apiserver answers them:
//! `DeleteOptions` from the body (or, without one, the query), validated;
//! graceful deletion, finalizers and propagation applied by the store
//! ([`crate::store::deletion`]); the answer kind by kind — the object while it
//! is terminating (202 when `orphanDependents: false` asked for a cascade that
//! is not done), and once gone either the object (kinds that return it) or a
//! `Success` Status.

use std::sync::Arc;

use actix_web::http::StatusCode;
use kemu_shared::SharedClock;
use serde_json::{Value, json};

use crate::api::options::{self, OptionsKind, cause, go_quote};
use crate::api::request::{self, Params};
use crate::error::{ApiError, Cause};
use crate::resources::ResourceType;
use crate::store::deletion::{self, Propagation};
use crate::store::{DeleteOptions, Deleted, DryRun, ObjectKey, Preconditions, Snapshot, Store};

/// A parsed, validated `DeleteOptions`.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// What the store applies.
    pub options: DeleteOptions,
    /// `dryRun: [All]`.
    pub dry_run: bool,
    /// The DeleteOptions as sent (what admission webhooks are shown).
    pub raw: Value,
}

/// What a DELETE answers.
#[derive(Debug)]
pub struct Answer {
    /// 200, or 202 for a deferred cascade asked for with `orphanDependents: false`.
    pub status: StatusCode,
    /// The object or a Status.
    pub body: Value,
    /// `Warning` headers to send.
    pub warnings: Vec<String>,
}

fn bad(msg: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(msg.to_string())
}

fn propagation(v: &str) -> Result<Propagation, Cause> {
    match v {
        "Orphan" => Ok(Propagation::Orphan),
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        other => Err(options::unsupported(
            "propagationPolicy",
            other,
            &["Foreground", "Background", "Orphan", "nil"],
        )),
    }
}

/// Raw options before validation.
#[derive(Default)]
struct Raw {
    grace: Option<i64>,
    orphan: Option<bool>,
    policy: Option<String>,
    dry_run: Vec<String>,
    pre: Preconditions,
}

fn from_body(v: &Value) -> Result<Raw, ApiError> {
    let Some(m) = v.as_object() else {
        return Err(bad(
            "json: cannot unmarshal into Go value of type v1.DeleteOptions",
        ));
    };
    let mut raw = Raw::default();
    let field_err = |name: &str, want: &str| {
        bad(format!(
            "json: cannot unmarshal into Go struct field DeleteOptions.{name} of type {want}"
        ))
    };
    for (k, val) in m {
        if val.is_null() {
            continue;
        }
        match k.as_str() {
            "gracePeriodSeconds" => {
                raw.grace = Some(val.as_i64().ok_or_else(|| field_err(k, "int64"))?)
            }
            "orphanDependents" => {
                raw.orphan = Some(val.as_bool().ok_or_else(|| field_err(k, "bool"))?)
            }
            "propagationPolicy" => {
                raw.policy = Some(val.as_str().ok_or_else(|| field_err(k, "string"))?.into())
            }
            "dryRun" => {
                raw.dry_run = val
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .map(|x| x.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| field_err(k, "[]string"))?
            }
            "preconditions" => {
                let p = &val;
                raw.pre.uid = p["uid"].as_str().map(str::to_owned);
                raw.pre.resource_version = p["resourceVersion"].as_str().map(str::to_owned);
            }
            // Type meta and options kemu has nothing to do with.
            _ => {}
        }
    }
    Ok(raw)
}

fn from_query(params: &Params) -> Result<Raw, ApiError> {
    let mut raw = Raw::default();
    if let Some(g) = params.get("gracePeriodSeconds") {
        raw.grace = Some(options::parse_int(g).map_err(bad)?);
    }
    if let Some(o) = params.get("orphanDependents") {
        raw.orphan = Some(match o {
            "true" | "1" => true,
            "false" | "0" => false,
            other => {
                return Err(bad(format!(
                    "strconv.ParseBool: parsing {}: invalid syntax",
                    go_quote(other)
                )));
            }
        });
    }
    raw.policy = params.get("propagationPolicy").map(str::to_owned);
    raw.dry_run = params
        .get("dryRun")
        .map(str::to_owned)
        .into_iter()
        .collect();
    Ok(raw)
}

/// Reads `DeleteOptions`: from the body when there is one, else the query
/// (as upstream: never both), then validates them (422 `DeleteOptions`).
pub fn parse(params: &Params, content_type: &str, body: &[u8]) -> Result<Request, ApiError> {
    let (raw, sent) = if body.iter().all(u8::is_ascii_whitespace) {
        (from_query(params)?, json!({}))
    } else {
        // client-go's typed clients (helm's release storage) send protobuf.
        let sent = request::decode_object(content_type, body)?;
        (from_body(&sent)?, sent)
    };
    let mut causes = Vec::new();
    if let (Some(_), Some(p)) = (raw.orphan, &raw.policy) {
        causes.push(cause(
            "FieldValueInvalid",
            "propagationPolicy",
            format!(
                "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                go_quote(p)
            ),
        ));
    }
    let policy = match raw.policy.as_deref().map(propagation) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(c)) => {
            causes.push(c);
            None
        }
    };
    let dry_run = match options::check_dry_run(&raw.dry_run) {
        Ok(d) => d,
        Err(c) => {
            causes.push(c);
            false
        }
    };
    if !causes.is_empty() {
        return Err(options::invalid(OptionsKind::Delete, causes));
    }
    Ok(Request {
        options: DeleteOptions {
            preconditions: raw.pre,
            grace_period_seconds: raw.grace,
            propagation: policy,
            orphan_dependents: raw.orphan,
        },
        dry_run,
        raw: sent,
    })
}

/// The `Success` Status a finished delete answers for kinds that do not
/// return the object.
fn success(rt: &ResourceType, name: &str, object: &Value) -> Value {
    let mut details = json!({ "name": name, "kind": rt.plural, "uid": object["metadata"]["uid"] });
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

fn store_for(store: &Arc<dyn Store>, clock: &SharedClock, dry_run: bool) -> Arc<dyn Store> {
    if dry_run {
        Arc::new(DryRun(store.clone(), clock.clone()))
    } else {
        store.clone()
    }
}

/// Deletes one object.
pub fn delete_one(
    store: &Arc<dyn Store>,
    clock: &SharedClock,
    rt: &ResourceType,
    key: &ObjectKey,
    req: &Request,
) -> Result<Answer, ApiError> {
    let store = store_for(store, clock, req.dry_run);
    let mut warnings = Vec::new();
    if req.options.propagation.is_none() && req.options.orphan_dependents.is_none() {
        warnings.extend(rt.delete_default_warning().map(str::to_owned));
    }
    let outcome = store.delete_with(key, &rt.delete_strategy(), &req.options)?;
    let deferred_cascade = req.options.orphan_dependents == Some(false);
    let outcome_now = matches!(outcome, Deleted::Now(_));
    let (status, body) = match outcome {
        Deleted::Pending(o) => {
            let status = if deferred_cascade {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            (status, (*o).clone())
        }
        Deleted::Now(o) | Deleted::AlreadyPending(o) => {
            // The collector's finalizer, which kemu's collector lifts at once
            // for a kind it does not watch: answered as upstream answers it.
            let pending = match outcome_now {
                true => rt.uncollected_policy().and_then(|s| {
                    deletion::pending_for_collector(&s, &o, &req.options, clock.now())
                }),
                false => None,
            };
            let body = if let Some(pending) = pending {
                pending
            } else if rt.returns_deleted_object() {
                (*o).clone()
            } else {
                success(rt, &key.name, &o)
            };
            (StatusCode::OK, body)
        }
    };
    Ok(Answer {
        status,
        body,
        warnings,
    })
}

/// Deletes every object of `snapshot` that `matches`, each with the same
/// options; answers the list of what was matched, as upstream does.
pub fn delete_collection(
    store: &Arc<dyn Store>,
    clock: &SharedClock,
    rt: &ResourceType,
    snapshot: &Snapshot,
    namespace: Option<&str>,
    matches: impl Fn(&Value) -> bool,
    req: &Request,
) -> Result<Value, ApiError> {
    let store = store_for(store, clock, req.dry_run);
    let strategy = rt.delete_strategy();
    let resource = request::group_resource(rt);
    let mut items = Vec::new();
    for ((ns, name), object) in snapshot.iter(namespace, None) {
        if !matches(&object) {
            continue;
        }
        let key = ObjectKey::new(&resource, ns, name);
        match store.delete_with(&key, &strategy, &req.options) {
            Ok(_) | Err(ApiError::ObjectNotFound(_)) => {
                // In the request's version (events.k8s.io Events, custom resources).
                items.push(crate::resources::strategy::present(rt, &object).into_owned());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(json!({
        "kind": rt.list_kind,
        "apiVersion": rt.api_version(),
        "metadata": { "resourceVersion": snapshot.rv.to_string() },
        "items": items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_from_the_body_or_the_query() {
        let q = Params::parse("propagationPolicy=Foreground&gracePeriodSeconds=5").unwrap();
        let r = parse(&q, "", b"").unwrap();
        assert_eq!(r.options.propagation, Some(Propagation::Foreground));
        assert_eq!(r.options.grace_period_seconds, Some(5));
        // A body wins over the query, as upstream reads only one of them.
        let r = parse(
            &q,
            "application/json",
            br#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"],"preconditions":{"uid":"u"}}"#,
        )
        .unwrap();
        assert!(r.dry_run);
        assert_eq!(r.options.propagation, None);
        assert_eq!(r.options.preconditions.uid.as_deref(), Some("u"));
    }

    #[test]
    fn bad_options_are_invalid_delete_options() {
        let q = Params::parse("").unwrap();
        let err = parse(
            &q,
            "application/json",
            br#"{"propagationPolicy":"Sideways","orphanDependents":true}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "DeleteOptions.meta.k8s.io \"\" is invalid: [propagationPolicy: Invalid value: \"Sideways\": orphanDependents and deletionPropagation cannot be both set, propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"]"
        );
        let err = parse(&q, "application/json", br#"{"dryRun":["Yes"]}"#).unwrap_err();
        assert_eq!(err.status()["code"], 422);
    }
}
