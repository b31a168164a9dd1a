//! `metadata.managedFields`: one entry per manager, operation and
//! subresource, decoded to field sets and encoded back in upstream's order.

use serde_json::{Value, json};

use super::fieldset::FieldSet;

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a non-apply patch.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The field manager.
    pub manager: String,
    /// How it wrote.
    pub operation: Operation,
    /// The API version its fields are in.
    pub api_version: String,
    /// When it last changed something (RFC 3339).
    pub time: Option<String>,
    /// The subresource it wrote through, if any.
    pub subresource: Option<String>,
    /// The fields it owns.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this is the entry of `manager` writing by `operation`.
    pub fn is(&self, manager: &str, operation: Operation, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// How upstream names the manager in conflict messages.
    pub fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// The entries of an object's `metadata.managedFields` (entries that are
/// not valid are skipped, as a client that mangled them loses them).
pub fn decode(object: &Value) -> Vec<Entry> {
    let Some(list) = object["metadata"]["managedFields"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| {
            let operation = match e["operation"].as_str()? {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return None,
            };
            let fields = match e.get("fieldsV1") {
                Some(v) => FieldSet::from_fields_v1(v)?,
                None => FieldSet::new(),
            };
            Some(Entry {
                manager: e["manager"].as_str().unwrap_or_default().to_owned(),
                operation,
                api_version: e["apiVersion"].as_str().unwrap_or_default().to_owned(),
                time: e["time"].as_str().map(str::to_owned),
                subresource: e["subresource"].as_str().map(str::to_owned),
                fields,
            })
        })
        .collect()
}

/// Writes `entries` into `object`'s metadata (removing the field when there
/// are none), sorted as upstream sorts them: Apply before Update, then by
/// time, manager and subresource.
pub fn encode(object: &mut Value, mut entries: Vec<Entry>) {
    // Upstream's stripped paths include `metadata` itself: no manager owns
    // the object's metadata as a whole.
    for e in &mut entries {
        e.fields
            .remove_member(&[super::fieldset::field("metadata")]);
    }
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
        return;
    }
    let list: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation.as_str(),
                "apiVersion": e.api_version,
            });
            if let Some(t) = &e.time {
                v["time"] = json!(t);
            }
            v["fieldsType"] = json!("FieldsV1");
            v["fieldsV1"] = e.fields.to_fields_v1();
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    meta.insert("managedFields".into(), Value::Array(list));
}
