//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`).
//!
//! PLACEHOLDER columns: NAME and AGE for every kind, until the per-kind printer
//! columns kubectl shows for a real cluster are built.

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
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
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
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].clone();
            let age = o["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| human_duration(now - t.with_timezone(&Utc)))
                .unwrap_or_else(|| "<unknown>".into());
            let object = match include {
                IncludeObject::None => Value::Null,
                IncludeObject::Object => o.clone(),
                IncludeObject::Metadata => json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"],
                }),
            };
            json!({ "cells": [name, age], "object": object })
        })
        .collect();
    let _ = rt;
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            { "name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0 },
            { "name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0 },
        ],
        "rows": rows,
    })
}

/// Ages as kubectl prints them (`5s`, `3m12s`, `4h`, `2d3h`, `400d`).
pub fn human_duration(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..120 => format!("{s}s"),
        120..600 => format!("{}m{}s", s / 60, s % 60),
        600..10800 => format!("{}m", s / 60),
        10800..28800 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        28800..172800 => format!("{}h", s / 3600),
        172800..2592000 => format!("{}d{}h", s / 86400, (s % 86400) / 3600),
        _ => format!("{}d", s / 86400),
    }
}
