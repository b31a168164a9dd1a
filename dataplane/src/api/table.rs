//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`).
//!
//! The columns are data: `fixtures/k8s/printers.json` lists, per resource,
//! the columns kube-apiserver prints (name, type, priority and a cell
//! expression: a field path, or one of the named cells below for the few
//! that upstream computes, such as a pod's READY, STATUS and RESTARTS). Types
//! not listed get NAME and AGE.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::resources::ResourceType;
/// What each row carries in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter.
    pub fn parse(value: Option<&str>) -> Result<Self, crate::error::ApiError> {
        match value {
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            None | Some("" | "Metadata") => Ok(IncludeObject::Metadata),
            Some(other) => Err(crate::error::ApiError::BadRequest(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                serde_json::Value::from(other)
            ))),
        }
    }
}

/// Whether an Accept header asks for a `meta.k8s.io/v1` Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"as=Table")
            && params.contains(&"g=meta.k8s.io")
            && params.contains(&"v=v1")
    })
}

/// Renders `objects` of type `rt` as a Table; `list_meta` is the list's
/// `metadata` (resourceVersion, continue).
pub fn render(
    rt: &ResourceType,
    objects: &[Value],
    include: IncludeObject,
    list_meta: Value,
    now: DateTime<Utc>,
) -> Value {
    let columns = columns_of(rt);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = columns.iter().map(|c| cell(&c.cell, o, now)).collect();
            let object = match include {
                IncludeObject::None => Value::Null,
                IncludeObject::Object => o.clone(),
                IncludeObject::Metadata => json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"],
                }),
            };
            json!({ "cells": cells, "object": object })
        })
        .collect();
    let definitions: Vec<Value> = columns
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.ty,
                "format": if c.cell == "name" || c.cell == "defaultClassName" { "name" } else { "" },
                "description": c.description(),
                "priority": c.priority,
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// One column of a printer.
#[derive(Debug, Clone)]
pub struct Column {
    /// Header, e.g. `Ready`.
    pub name: String,
    /// `string`, `integer`, `boolean` or `date`.
    pub ty: String,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: u8,
    /// The cell expression.
    pub cell: String,
    /// Upstream's description of the column, where the printers file has it.
    pub description: Option<String>,
}

impl Column {
    fn description(&self) -> String {
        if let Some(d) = &self.description {
            return d.clone();
        }
        match self.cell.as_str() {
            "name" | "defaultClassName" => "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names".into(),
            "age" => "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata".into(),
            _ => self.name.clone(),
        }
    }
}

const PRINTERS: &str = include_str!("../../../fixtures/k8s/printers.json");

fn printers() -> &'static HashMap<String, Vec<Column>> {
    static P: OnceLock<HashMap<String, Vec<Column>>> = OnceLock::new();
    P.get_or_init(|| {
        // Compiled-in data checked by the tests: failure is a build defect.
        let raw: HashMap<String, Value> =
            serde_json::from_str(PRINTERS).expect("fixtures/k8s/printers.json is JSON");
        raw.into_iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .map(|(k, v)| {
                let cols = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| {
                        Some(Column {
                            name: c[0].as_str()?.to_owned(),
                            ty: c[1].as_str()?.to_owned(),
                            priority: c[2].as_u64()? as u8,
                            cell: c[3].as_str()?.to_owned(),
                            description: c.get(4).and_then(Value::as_str).map(str::to_owned),
                        })
                    })
                    .collect();
                (k, cols)
            })
            .collect()
    })
}

/// The columns printed for `rt`: a custom type's `additionalPrinterColumns`
/// after NAME, its printer, or NAME and AGE.
pub fn columns_of(rt: &ResourceType) -> Vec<Column> {
    if let Some(custom) = &rt.custom {
        let mut cols = vec![Column {
            name: "Name".into(),
            ty: "string".into(),
            priority: 0,
            cell: "name".into(),
            description: None,
        }];
        cols.extend(custom.columns.iter().map(|c| Column {
            name: c.name.clone(),
            ty: c.ty.clone(),
            priority: c.priority,
            cell: format!("column:{}:{}", c.ty, c.json_path),
            description: Some(c.description.clone()),
        }));
        return cols;
    }
    printers()
        .get(&format!("{}/{}", rt.group, rt.plural))
        .cloned()
        .unwrap_or_else(|| {
            vec![
                Column {
                    name: "Name".into(),
                    ty: "string".into(),
                    priority: 0,
                    cell: "name".into(),
                    description: None,
                },
                Column {
                    name: "Age".into(),
                    ty: "string".into(),
                    priority: 0,
                    cell: "age".into(),
                    description: None,
                },
            ]
        })
}

// ---- cells -------------------------------------------------------------------

const NONE: &str = "<none>";

/// The value at a path such as `.spec.template.spec.containers[*].name`;
/// `[*]` fans out over an array.
fn lookup<'a>(o: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut current = vec![o];
    for seg in path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
    {
        let (key, fan) = match seg.strip_suffix("[*]") {
            Some(k) => (k, true),
            None => (seg, false),
        };
        current = current
            .into_iter()
            .filter_map(|v| v.get(key))
            .flat_map(|v| match (fan, v) {
                (true, Value::Array(a)) => a.iter().collect::<Vec<_>>(),
                (true, _) => vec![],
                (false, v) => vec![v],
            })
            .filter(|v| !v.is_null())
            .collect();
    }
    current
}

fn one<'a>(o: &'a Value, path: &str) -> Option<&'a Value> {
    lookup(o, path).into_iter().next()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn int(o: &Value, path: &str) -> i64 {
    one(o, path).and_then(Value::as_i64).unwrap_or(0)
}

fn age_of(t: Option<&Value>, now: DateTime<Utc>) -> String {
    t.and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| human_duration(now - t.with_timezone(&Utc)))
        .unwrap_or_else(|| "<unknown>".into())
}

fn or_none(s: String) -> Value {
    json!(if s.is_empty() { NONE.to_owned() } else { s })
}

fn labels(v: Option<&Value>) -> String {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", text(v)))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// A `metav1.LabelSelector` as `kubectl` prints it.
fn selector(v: Option<&Value>) -> String {
    let Some(v) = v else { return NONE.into() };
    let mut parts: Vec<String> = labels(v.get("matchLabels"))
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    for e in v["matchExpressions"].as_array().into_iter().flatten() {
        let key = text(&e["key"]);
        let values: Vec<String> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key,
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op}"),
        });
    }
    if parts.is_empty() {
        // An empty selector matches everything.
        return if v.is_object() {
            "<none>".into()
        } else {
            NONE.into()
        };
    }
    parts.join(",")
}

fn cell(expr: &str, o: &Value, now: DateTime<Utc>) -> Value {
    let (f, arg) = expr.split_once(':').unwrap_or((expr, ""));
    match f {
        "name" => o["metadata"]["name"].clone(),
        // upstream's StorageClass printer marks the default class.
        "defaultClassName" => {
            let a = &o["metadata"]["annotations"];
            let default = [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|k| a[*k] == "true");
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            json!(if default {
                format!("{name} (default)")
            } else {
                name.to_owned()
            })
        }
        "age" => json!(age_of(one(o, ".metadata.creationTimestamp"), now)),
        "createdAt" => o["metadata"]["creationTimestamp"].clone(),
        "column" => {
            let (ty, path) = arg.split_once(':').unwrap_or((arg, ""));
            column_cell(ty, path, o, now)
        }
        "ageOf" => match one(o, arg) {
            Some(t) => json!(age_of(Some(t), now)),
            None => json!(NONE),
        },
        "int" => json!(int(o, arg)),
        "bool" => json!(one(o, arg).and_then(Value::as_bool).unwrap_or(false)),
        "count" => json!(
            arg.split(',')
                .filter_map(|p| one(o, p))
                .map(|v| match v {
                    Value::Object(m) => m.len(),
                    Value::Array(a) => a.len(),
                    _ => 0,
                })
                .sum::<usize>()
        ),
        "ratio" => {
            let (a, b) = arg.split_once('/').unwrap_or((arg, arg));
            json!(format!("{}/{}", int(o, a), int(o, b)))
        }
        "labels" => or_none(labels(one(o, arg))),
        "selector" => json!(selector(one(o, arg))),
        "orEmpty" => json!(one(o, arg).map(text).unwrap_or_default()),
        "orNone" => or_none(one(o, arg).map(text).unwrap_or_default()),
        "orNA" => json!(one(o, arg).map(text).unwrap_or_else(|| "N/A".into())),
        "unset" => json!(one(o, arg).map(text).unwrap_or_else(|| "<unset>".into())),
        "orDefault" => {
            let (p, d) = arg.split_once(':').unwrap_or((arg, ""));
            json!(one(o, p).map(text).unwrap_or_else(|| d.into()))
        }
        "accessModes" => json!(
            lookup(o, &format!("{arg}[*]"))
                .iter()
                .map(|m| match m.as_str().unwrap_or("") {
                    "ReadWriteOnce" => "RWO",
                    "ReadOnlyMany" => "ROX",
                    "ReadWriteMany" => "RWX",
                    "ReadWriteOncePod" => "RWOP",
                    other => other,
                }
                .to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        "loadBalancer" => or_none(
            lookup(o, &format!("{arg}[*]"))
                .iter()
                .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).map(text))
                .collect::<Vec<_>>()
                .join(","),
        ),
        "nodeAddress" => or_none(
            lookup(o, ".status.addresses[*]")
                .iter()
                .filter(|a| a["type"] == arg)
                .map(|a| text(&a["address"]))
                .collect::<Vec<_>>()
                .join(","),
        ),
        "subjects" => json!(
            lookup(o, ".subjects[*]")
                .iter()
                .filter(|s| s["kind"] == arg)
                .map(|s| match s["namespace"].as_str() {
                    Some(ns) if arg == "ServiceAccount" => format!("{ns}/{}", text(&s["name"])),
                    _ => text(&s["name"]),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "podReady" => pod_ready(o),
        "podStatus" => json!(pod_status(o)),
        // upstream's PV and PVC printers: a volume being deleted is `Terminating`.
        "volumePhase" => json!(if o["metadata"]["deletionTimestamp"].is_string() {
            "Terminating"
        } else {
            o["status"]["phase"].as_str().unwrap_or_default()
        }),
        "podRestarts" => pod_restarts(o, now),
        "podReadinessGates" => {
            let gates = lookup(o, ".spec.readinessGates[*]");
            if gates.is_empty() {
                json!(NONE)
            } else {
                let ok = gates
                    .iter()
                    .filter(|g| {
                        lookup(o, ".status.conditions[*]")
                            .iter()
                            .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
                    })
                    .count();
                json!(format!("{ok}/{}", gates.len()))
            }
        }
        "serviceExternalIP" => service_external_ip(o),
        "servicePorts" => or_none(
            lookup(o, ".spec.ports[*]")
                .iter()
                .map(|p| {
                    let proto = p["protocol"].as_str().unwrap_or("TCP");
                    match p["nodePort"].as_i64() {
                        Some(n) if n != 0 => format!("{}:{n}/{proto}", text(&p["port"])),
                        _ => format!("{}/{proto}", text(&p["port"])),
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
        "endpoints" => or_none(endpoints(o)),
        "nodeStatus" => json!(node_status(o)),
        "nodeRoles" => or_none(
            o["metadata"]["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        "involvedObject" => json!(format!(
            "{}/{}",
            text(&o["involvedObject"]["kind"]).to_ascii_lowercase(),
            text(&o["involvedObject"]["name"])
        )),
        "regarding" => json!(format!(
            "{}/{}",
            text(&o["regarding"]["kind"]).to_ascii_lowercase(),
            text(&o["regarding"]["name"])
        )),
        "eventSource" => json!(match (
            o["source"]["component"].as_str(),
            o["source"]["host"].as_str()
        ) {
            (Some(c), Some(h)) => format!("{c}, {h}"),
            (Some(c), None) => c.to_owned(),
            _ => o["reportingComponent"].as_str().unwrap_or("").to_owned(),
        }),
        "eventLastSeen" => {
            let t = [
                "lastTimestamp",
                "eventTime",
                "deprecatedLastTimestamp",
                "firstTimestamp",
            ]
            .iter()
            .find_map(|k| o.get(*k).filter(|v| !v.is_null()))
            .or_else(|| o["series"].get("lastObservedTime"));
            json!(age_of(t, now))
        }
        "claimRef" => json!(match one(o, ".spec.claimRef") {
            Some(c) => format!("{}/{}", text(&c["namespace"]), text(&c["name"])),
            None => String::new(),
        }),
        "roleRef" => json!(format!(
            "{}/{}",
            text(&o["roleRef"]["kind"]),
            text(&o["roleRef"]["name"])
        )),
        "controller" => or_none(
            lookup(o, ".metadata.ownerReferences[*]")
                .iter()
                .find(|r| r["controller"] == true)
                .map(|r| {
                    format!(
                        "{}/{}",
                        text(&r["kind"]).to_ascii_lowercase(),
                        text(&r["name"])
                    )
                })
                .unwrap_or_default(),
        ),
        "jobStatus" => json!(job_status(o)),
        "jobCompletions" => {
            let ok = int(o, ".status.succeeded");
            json!(
                match (one(o, ".spec.completions"), int(o, ".spec.parallelism")) {
                    (Some(c), _) => format!("{ok}/{}", text(c)),
                    (None, p) if p > 1 => format!("{ok}/1 of {p}"),
                    _ => format!("{ok}/1"),
                }
            )
        }
        "jobDuration" => {
            let parse = |p: &str| {
                one(o, p)
                    .and_then(Value::as_str)
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&Utc))
            };
            json!(
                match (parse(".status.startTime"), parse(".status.completionTime")) {
                    (Some(s), Some(e)) => human_duration(e - s),
                    (Some(s), None) => human_duration(now - s),
                    _ => String::new(),
                }
            )
        }
        "hpaReference" => json!(format!(
            "{}/{}",
            text(&o["spec"]["scaleTargetRef"]["kind"]),
            text(&o["spec"]["scaleTargetRef"]["name"])
        )),
        "hpaTargets" => {
            // As upstream's printer: `<resource>: <current>/<target>` per
            // metric, the current value from status.currentMetrics.
            let current = |name: &Value, field: &str| {
                lookup(o, ".status.currentMetrics[*]")
                    .into_iter()
                    .find(|c| {
                        c["resource"]["name"] == *name || c["containerResource"]["name"] == *name
                    })
                    .and_then(|c| {
                        let cur = if c["resource"].is_object() {
                            &c["resource"]["current"]
                        } else {
                            &c["containerResource"]["current"]
                        };
                        match &cur[field] {
                            Value::Null => None,
                            Value::Number(n) => Some(format!("{n}%")),
                            v => Some(text(v)),
                        }
                    })
                    .unwrap_or_else(|| "<unknown>".into())
            };
            let mut targets: Vec<String> = lookup(o, ".spec.metrics[*]")
                .iter()
                .filter_map(|m| {
                    let r = if m["resource"].is_object() {
                        &m["resource"]
                    } else {
                        &m["containerResource"]
                    };
                    let t = &r["target"];
                    if let Some(u) = t["averageUtilization"].as_i64() {
                        Some(format!(
                            "{}: {}/{u}%",
                            text(&r["name"]),
                            current(&r["name"], "averageUtilization")
                        ))
                    } else {
                        t["averageValue"].as_str().map(|v| {
                            format!(
                                "{}: {}/{v}",
                                text(&r["name"]),
                                current(&r["name"], "averageValue")
                            )
                        })
                    }
                })
                .collect();
            if let Some(pct) =
                one(o, ".spec.targetCPUUtilizationPercentage").and_then(Value::as_i64)
            {
                let cur = one(o, ".status.currentCPUUtilizationPercentage")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<unknown>".to_owned(), |c| format!("{c}%"));
                targets.push(format!("cpu: {cur}/{pct}%"));
            }
            or_none(targets.join(", "))
        }
        "minPods" => json!(
            one(o, ".spec.minReplicas")
                .map(text)
                .unwrap_or_else(|| "<unset>".into())
        ),
        "ingressClass" => json!(
            one(o, ".spec.ingressClassName")
                .map(text)
                .unwrap_or_else(|| NONE.into())
        ),
        "ingressHosts" => {
            let hosts: Vec<String> = lookup(o, ".spec.rules[*]")
                .iter()
                .map(|r| r["host"].as_str().unwrap_or("*").to_owned())
                .collect();
            json!(if hosts.is_empty() {
                "*".into()
            } else {
                hosts.join(",")
            })
        }
        "ingressPorts" => json!(if lookup(o, ".spec.tls[*]").is_empty() {
            "80"
        } else {
            "80, 443"
        }),
        "slicePorts" => or_none(
            lookup(o, ".ports[*].port")
                .iter()
                .map(|p| text(p))
                .collect::<Vec<_>>()
                .join(","),
        ),
        "sliceEndpoints" => or_none(
            lookup(o, ".endpoints[*].addresses[*]")
                .iter()
                .map(|p| text(p))
                .collect::<Vec<_>>()
                .join(","),
        ),
        "csrCondition" => {
            let c: Vec<String> = lookup(o, ".status.conditions[*].type")
                .iter()
                .map(|t| text(t))
                .collect();
            json!(if c.is_empty() {
                "Pending".into()
            } else {
                c.join(",")
            })
        }
        _ if expr.starts_with('.') => {
            let values = lookup(o, expr);
            match values.as_slice() {
                [] => json!(NONE),
                [one] if !expr.contains("[*]") => match one {
                    Value::String(s) if s.is_empty() => json!(NONE),
                    v => (*v).clone(),
                },
                many => json!(many.iter().map(|v| text(v)).collect::<Vec<_>>().join(",")),
            }
        }
        _ => json!(NONE),
    }
}

/// A custom type's `additionalPrinterColumns` cell, as upstream's CRD table
/// convertor fills it: null where the path finds nothing or a value of
/// another type than the column's; `date` columns as an age.
fn column_cell(ty: &str, path: &str, o: &Value, now: DateTime<Utc>) -> Value {
    let Some(v) = lookup(o, path).into_iter().next() else {
        return Value::Null;
    };
    match (ty, v) {
        ("string", Value::String(_)) => v.clone(),
        ("string", Value::Null) => Value::Null,
        ("string", other) => json!(text(other)),
        ("integer", Value::Number(n)) => n
            .as_i64()
            // Go converts a float64 to int64 by truncation.
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => v.clone(),
        ("date", Value::String(_)) => json!(age_of(Some(v), now)),
        _ => Value::Null,
    }
}

fn pod_ready(o: &Value) -> Value {
    let total = lookup(o, ".spec.containers[*]").len();
    let ready = lookup(o, ".status.containerStatuses[*]")
        .iter()
        .filter(|c| c["ready"] == true)
        .count();
    json!(format!("{ready}/{total}"))
}

/// The STATUS column: upstream's reason for the pod's state.
fn pod_status(o: &Value) -> String {
    let mut reason = o["status"]["reason"]
        .as_str()
        .or(o["status"]["phase"].as_str())
        .unwrap_or("")
        .to_owned();
    let gated = lookup(o, ".status.conditions[*]")
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".into();
    }
    let total_init = lookup(o, ".spec.initContainers[*]").len();
    let mut initializing = false;
    for (i, c) in lookup(o, ".status.initContainerStatuses[*]")
        .iter()
        .enumerate()
    {
        let state = &c["state"];
        if state["terminated"]["exitCode"].as_i64() == Some(0) {
            continue;
        }
        if let Some(t) = state.get("terminated") {
            reason = match t["reason"].as_str() {
                Some(r) if !r.is_empty() => format!("Init:{r}"),
                _ => format!("Init:ExitCode:{}", text(&t["exitCode"])),
            };
        } else if let Some(r) = state["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{r}");
        } else {
            reason = format!("Init:{i}/{total_init}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        for c in lookup(o, ".status.containerStatuses[*]").iter().rev() {
            let state = &c["state"];
            if let Some(r) = state["waiting"]["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
            {
                reason = r.to_owned();
            } else if let Some(t) = state.get("terminated") {
                reason = match t["reason"].as_str() {
                    Some(r) if !r.is_empty() => r.to_owned(),
                    _ => format!("ExitCode:{}", text(&t["exitCode"])),
                };
            } else if state.get("running").is_some() && c["ready"] == true {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            let ready = lookup(o, ".status.conditions[*]")
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if ready { "Running" } else { "NotReady" }.into();
        }
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        reason = if o["status"]["reason"] == "NodeLost" {
            "Unknown"
        } else {
            "Terminating"
        }
        .into();
    }
    reason
}

fn pod_restarts(o: &Value, now: DateTime<Utc>) -> Value {
    let statuses = lookup(o, ".status.containerStatuses[*]");
    let restarts: i64 = statuses
        .iter()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum();
    let last = statuses
        .iter()
        .filter_map(|c| c["lastState"]["terminated"]["finishedAt"].as_str())
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .max();
    json!(match last {
        Some(t) if restarts > 0 => {
            format!(
                "{restarts} ({} ago)",
                human_duration(now - t.with_timezone(&Utc))
            )
        }
        _ => restarts.to_string(),
    })
}

fn service_external_ip(o: &Value) -> Value {
    let external: Vec<String> = lookup(o, ".spec.externalIPs[*]")
        .iter()
        .map(|v| text(v))
        .collect();
    let lb: Vec<String> = lookup(o, ".status.loadBalancer.ingress[*]")
        .iter()
        .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).map(text))
        .collect();
    let all: Vec<String> = lb.into_iter().chain(external.clone()).collect();
    json!(match o["spec"]["type"].as_str().unwrap_or("ClusterIP") {
        "ExternalName" => text(&o["spec"]["externalName"]),
        "LoadBalancer" if all.is_empty() => "<pending>".into(),
        _ if all.is_empty() => NONE.into(),
        _ => all.join(","),
    })
}

fn endpoints(o: &Value) -> String {
    let mut out = Vec::new();
    for s in lookup(o, ".subsets[*]") {
        let ports: Vec<String> = lookup(s, ".ports[*].port")
            .iter()
            .map(|p| text(p))
            .collect();
        for a in lookup(s, ".addresses[*].ip") {
            if ports.is_empty() {
                out.push(text(a));
            } else {
                out.extend(ports.iter().map(|p| format!("{}:{p}", text(a))));
            }
        }
    }
    if out.len() > 3 {
        let more = out.len() - 3;
        out.truncate(3);
        return format!("{} + {more} more...", out.join(","));
    }
    out.join(",")
}

fn node_status(o: &Value) -> String {
    let ready = lookup(o, ".status.conditions[*]")
        .into_iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| match c["status"].as_str() {
            Some("True") => "Ready",
            Some("False") => "NotReady",
            _ => "Unknown",
        })
        .unwrap_or("Unknown");
    if o["spec"]["unschedulable"] == true {
        format!("{ready},SchedulingDisabled")
    } else {
        ready.into()
    }
}

fn job_status(o: &Value) -> String {
    let has = |t: &str| {
        lookup(o, ".status.conditions[*]")
            .iter()
            .any(|c| c["type"] == t && c["status"] == "True")
    };
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else if has("Suspended") {
        "Suspended"
    } else {
        "Running"
    }
    .into()
}

/// Ages as kubectl prints them (apimachinery's `duration.HumanDuration`:
/// `5s`, `3m12s`, `5m`, `4h`, `2d3h`, `400d`, `2y10d`).
pub fn human_duration(d: chrono::Duration) -> String {
    let s = d.num_seconds();
    if s < -1 {
        return "<invalid>".into();
    }
    let s = s.max(0);
    let (m, h) = (s / 60, s / 3600);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            sec => format!("{m}m{sec}s"),
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            min => format!("{h}h{min}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        match h % 24 {
            0 => format!("{}d", h / 24),
            hr => format!("{}d{hr}h", h / 24),
        }
    } else if h < 24 * 365 * 2 {
        format!("{}d", h / 24)
    } else if h < 24 * 365 * 8 {
        match (h / 24) % 365 {
            0 => format!("{}y", h / 24 / 365),
            dy => format!("{}y{dy}d", h / 24 / 365),
        }
    } else {
        format!("{}y", h / 24 / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceRegistry;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn table(group: &str, version: &str, plural: &str, obj: Value) -> Value {
        let reg = ResourceRegistry::builtin();
        let rt = reg.lookup(group, version, plural).unwrap();
        render(
            &rt,
            &[obj],
            IncludeObject::Metadata,
            json!({ "resourceVersion": "7" }),
            now(),
        )
    }

    fn headers(t: &Value) -> Vec<(String, u64)> {
        t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["priority"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn every_printer_names_a_served_resource() {
        let reg = ResourceRegistry::builtin();
        for key in printers().keys() {
            let (group, plural) = key.split_once('/').unwrap();
            assert!(
                reg.all()
                    .iter()
                    .any(|t| t.group == group && t.plural == plural),
                "{key}"
            );
        }
    }

    #[test]
    fn pods_print_ready_status_restarts() {
        let pod = json!({
            "metadata": { "name": "web-1", "creationTimestamp": "2026-01-01T00:00:00Z" },
            "spec": { "containers": [{ "name": "a" }, { "name": "b" }], "nodeName": "node-1" },
            "status": {
                "phase": "Running", "podIP": "10.0.0.5",
                "conditions": [{ "type": "Ready", "status": "True" }],
                "containerStatuses": [
                    { "name": "a", "ready": true, "restartCount": 2, "state": { "running": {} },
                      "lastState": { "terminated": { "exitCode": 1, "finishedAt": "2026-01-01T00:55:00Z" } } },
                    { "name": "b", "ready": false, "restartCount": 0, "state": { "waiting": { "reason": "CrashLoopBackOff" } } },
                ],
            },
        });
        let t = table("", "v1", "pods", pod);
        let names: Vec<String> = headers(&t)
            .into_iter()
            .filter(|h| h.1 == 0)
            .map(|h| h.0)
            .collect();
        assert_eq!(names, ["Name", "Ready", "Status", "Restarts", "Age"]);
        let wide: Vec<String> = headers(&t)
            .into_iter()
            .filter(|h| h.1 == 1)
            .map(|h| h.0)
            .collect();
        assert_eq!(wide, ["IP", "Node", "Nominated Node", "Readiness Gates"]);
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "web-1",
                "1/2",
                "CrashLoopBackOff",
                "2 (5m ago)",
                "60m",
                "10.0.0.5",
                "node-1",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
    }

    #[test]
    fn workloads_and_config_print_their_columns() {
        let d = json!({
            "metadata": { "name": "web", "creationTimestamp": "2026-01-01T00:59:30Z" },
            "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "web" } },
                      "template": { "spec": { "containers": [{ "name": "nginx", "image": "nginx:1" }] } } },
            "status": { "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2 },
        });
        let t = table("apps", "v1", "deployments", d);
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["web", "2/3", 3, 2, "30s", "nginx", "nginx:1", "app=web"])
        );
        let cm = json!({ "metadata": { "name": "c" }, "data": { "a": "1", "b": "2" }, "binaryData": { "c": "" } });
        let t = table("", "v1", "configmaps", cm);
        assert_eq!(t["rows"][0]["cells"], json!(["c", 3, "<unknown>"]));
        let s = json!({ "metadata": { "name": "s", "creationTimestamp": "2026-01-01T00:00:00Z" }, "type": "Opaque", "data": { "p": "eA==" } });
        assert_eq!(
            table("", "v1", "secrets", s)["rows"][0]["cells"],
            json!(["s", "Opaque", 1, "60m"])
        );
        let svc = json!({ "metadata": { "name": "svc" }, "spec": { "type": "NodePort", "clusterIP": "10.96.0.10",
            "ports": [{ "port": 80, "nodePort": 30080, "protocol": "TCP" }, { "port": 53, "protocol": "UDP" }], "selector": { "app": "x" } } });
        assert_eq!(
            table("", "v1", "services", svc)["rows"][0]["cells"],
            json!([
                "svc",
                "NodePort",
                "10.96.0.10",
                "<none>",
                "80:30080/TCP,53/UDP",
                "<unknown>",
                "app=x"
            ])
        );
        let ns = json!({ "metadata": { "name": "default" }, "status": { "phase": "Active" } });
        assert_eq!(
            table("", "v1", "namespaces", ns)["rows"][0]["cells"],
            json!(["default", "Active", "<unknown>"])
        );
        let node = json!({ "metadata": { "name": "n1", "labels": { "node-role.kubernetes.io/control-plane": "" } },
            "spec": { "unschedulable": true },
            "status": { "conditions": [{ "type": "Ready", "status": "True" }], "nodeInfo": { "kubeletVersion": "v1.34.0" } } });
        let cells = &table("", "v1", "nodes", node)["rows"][0]["cells"];
        assert_eq!(cells[1], "Ready,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane");
        assert_eq!(cells[4], "v1.34.0");
        let job = json!({ "metadata": { "name": "j" }, "spec": { "completions": 1 },
            "status": { "succeeded": 1, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:05Z",
                        "conditions": [{ "type": "Complete", "status": "True" }] } });
        let cells = &table("batch", "v1", "jobs", job)["rows"][0]["cells"];
        assert_eq!(
            (cells[1].as_str(), cells[2].as_str(), cells[3].as_str()),
            (Some("Complete"), Some("1/1"), Some("5s"))
        );
        let other = table(
            "",
            "v1",
            "limitranges",
            json!({ "metadata": { "name": "l" } }),
        );
        assert_eq!(headers(&other)[1].0, "Created At");
        let default = table(
            "coordination.k8s.io",
            "v1",
            "leases",
            json!({ "metadata": { "name": "l" } }),
        );
        assert_eq!(default["rows"][0]["cells"][0], "l");
    }

    #[test]
    fn include_object_and_accept() {
        assert_eq!(
            IncludeObject::parse(Some("None")).ok(),
            Some(IncludeObject::None)
        );
        assert_eq!(
            IncludeObject::parse(None).ok(),
            Some(IncludeObject::Metadata)
        );
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
        let h = |s| human_duration(chrono::Duration::seconds(s));
        assert_eq!(h(3700), "61m");
        assert_eq!(h(300), "5m");
        assert_eq!(h(192), "3m12s");
        assert_eq!(h(4 * 3600), "4h");
        assert_eq!(h(3 * 3600 + 120), "3h2m");
        assert_eq!(h(51 * 3600), "2d3h");
        assert_eq!(h(400 * 86400), "400d");
        assert_eq!(h(740 * 86400), "2y10d");
    }
}
