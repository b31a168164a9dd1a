//! JSON on the wire: request bodies (unknown fields tolerated, enums as names
//! or integers), responses (enums as names, or integers when the client asks
//! with `$alt=json;enum-encoding=int`, as the Python client does).

use actix_web::HttpRequest;
use serde_json::{Map, Value};

use crate::error::Error;

/// An enum of the container API: (name, number) pairs.
type EnumTable = &'static [(&'static str, i64)];

/// `Cluster.Status`.
pub const CLUSTER_STATUS: EnumTable = &[
    ("STATUS_UNSPECIFIED", 0),
    ("PROVISIONING", 1),
    ("RUNNING", 2),
    ("RECONCILING", 3),
    ("STOPPING", 4),
    ("ERROR", 5),
    ("DEGRADED", 6),
];

/// `NodePool.Status`.
pub const POOL_STATUS: EnumTable = &[
    ("STATUS_UNSPECIFIED", 0),
    ("PROVISIONING", 1),
    ("RUNNING", 2),
    ("RUNNING_WITH_ERROR", 3),
    ("RECONCILING", 4),
    ("STOPPING", 5),
    ("ERROR", 6),
];

/// `Operation.Status`.
pub const OPERATION_STATUS: EnumTable = &[
    ("STATUS_UNSPECIFIED", 0),
    ("PENDING", 1),
    ("RUNNING", 2),
    ("DONE", 3),
    ("ABORTING", 4),
];

/// `Operation.Type`.
pub const OPERATION_TYPE: EnumTable = &[
    ("TYPE_UNSPECIFIED", 0),
    ("CREATE_CLUSTER", 1),
    ("DELETE_CLUSTER", 2),
    ("UPGRADE_MASTER", 3),
    ("UPGRADE_NODES", 4),
    ("REPAIR_CLUSTER", 5),
    ("UPDATE_CLUSTER", 6),
    ("CREATE_NODE_POOL", 7),
    ("DELETE_NODE_POOL", 8),
    ("SET_NODE_POOL_MANAGEMENT", 9),
    ("AUTO_REPAIR_NODES", 10),
    ("AUTO_UPGRADE_NODES", 11),
    ("SET_LABELS", 12),
    ("SET_MASTER_AUTH", 13),
    ("SET_NODE_POOL_SIZE", 14),
    ("SET_NETWORK_POLICY", 15),
    ("SET_MAINTENANCE_POLICY", 16),
    ("RESIZE_CLUSTER", 18),
    ("FLEET_FEATURE_UPGRADE", 19),
];

/// Enums that may appear anywhere in a request or an echoed field, by their
/// member name: `ReleaseChannel.channel`, `NodeTaint.effect`,
/// `NetworkPolicy.provider`.
const FIELD_ENUMS: &[(&str, EnumTable)] = &[
    (
        "channel",
        &[
            ("UNSPECIFIED", 0),
            ("RAPID", 1),
            ("REGULAR", 2),
            ("STABLE", 3),
            ("EXTENDED", 4),
        ],
    ),
    (
        "effect",
        &[
            ("EFFECT_UNSPECIFIED", 0),
            ("NO_SCHEDULE", 1),
            ("PREFER_NO_SCHEDULE", 2),
            ("NO_EXECUTE", 3),
        ],
    ),
    ("provider", &[("PROVIDER_UNSPECIFIED", 0), ("CALICO", 1)]),
];

/// The JSON object of a request body: empty bodies are `{}`, anything that is
/// not a JSON object is INVALID_ARGUMENT. Enum numbers are turned into names so
/// the rest of the facade sees one spelling.
pub fn body(bytes: &[u8]) -> Result<Map<String, Value>, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let mut value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidArgument(format!("Invalid JSON payload received. {e}")))?;
    names_for_numbers(&mut value);
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(Error::InvalidArgument(
            "Invalid JSON payload received. Expected an object.".into(),
        )),
    }
}

fn names_for_numbers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if let Some((_, table)) = FIELD_ENUMS.iter().find(|(k, _)| k == key)
                    && let Some(n) = field.as_i64()
                    && let Some((name, _)) = table.iter().find(|(_, num)| *num == n)
                {
                    *field = Value::String((*name).to_owned());
                } else {
                    names_for_numbers(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(names_for_numbers),
        _ => {}
    }
}

/// Whether the client asked for enums as integers (`enum-encoding=int` in the
/// `$alt` system parameter, percent-encoded or not).
pub fn wants_int_enums(req: &HttpRequest) -> bool {
    let q = req.query_string().to_ascii_lowercase();
    q.contains("enum-encoding=int") || q.contains("enum-encoding%3dint")
}

/// What kind of resource a response holds, for its `status` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A Cluster (its node pools inside).
    Cluster,
    /// A NodePool.
    NodePool,
    /// An Operation.
    Operation,
    /// Anything else: only the field enums are converted.
    Other,
}

/// Turns enum names into numbers in a response, for `enum-encoding=int`.
pub fn numbers_for_names(v: &mut Value, shape: Shape) {
    let Value::Object(map) = v else {
        if let Value::Array(items) = v {
            items.iter_mut().for_each(|i| numbers_for_names(i, shape));
        }
        return;
    };
    let status = match shape {
        Shape::Cluster => Some(CLUSTER_STATUS),
        Shape::NodePool => Some(POOL_STATUS),
        Shape::Operation => Some(OPERATION_STATUS),
        Shape::Other => None,
    };
    for (key, field) in map.iter_mut() {
        let table = match key.as_str() {
            "status" => status,
            "operationType" if shape == Shape::Operation => Some(OPERATION_TYPE),
            k => FIELD_ENUMS.iter().find(|(n, _)| *n == k).map(|(_, t)| *t),
        };
        if let Some(table) = table
            && let Some(name) = field.as_str()
            && let Some((_, n)) = table.iter().find(|(t, _)| *t == name)
        {
            *field = Value::from(*n);
            continue;
        }
        let inner = match key.as_str() {
            "clusters" => Shape::Cluster,
            "nodePools" => Shape::NodePool,
            "operations" => Shape::Operation,
            _ => Shape::Other,
        };
        numbers_for_names(field, inner);
    }
}

/// Checks a cluster or node pool name as GKE does.
pub fn check_name(field: &str, name: &str) -> Result<(), Error> {
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 40
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": \"{name}\". Must be a match of regex \
             '(?:[a-z](?:[-a-z0-9]{{0,38}}[a-z0-9])?)' (only alphanumerics and '-' allowed, \
             must start with a letter and end with an alphanumeric, and must be no longer \
             than 40 characters)."
        )))
    }
}

/// A stable 64-bit FNV-1a hash, for ids and fingerprints that must not change
/// between runs.
pub fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The project number GKE shows for a project id (stable, 12 digits).
pub fn project_number(project: &str) -> String {
    format!("{}", 100_000_000_000 + fnv(&[project]) % 900_000_000_000)
}

/// The field of `map` at `key` as an object, if it is one.
pub fn object<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    map.get(key).and_then(Value::as_object)
}

/// An `int32` field as proto3 JSON decodes it (a number, or a string of
/// one): `None` when absent, and the front end's INVALID_ARGUMENT naming the
/// field (`Invalid value at 'node_pool.initial_node_count' (TYPE_INT32),
/// 9223372036854775808`) when it is no int32: out of range, a fraction or
/// not a number is refused, never wrapped or defaulted.
pub fn int32(v: Option<&Value>, field: &str) -> Result<Option<i64>, Error> {
    let n = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match n.filter(|n| i32::try_from(*n).is_ok()) {
        Some(n) => Ok(Some(n)),
        None => Err(Error::InvalidArgument(format!(
            "Invalid value at '{field}' (TYPE_INT32), {}",
            v.map(Value::to_string).unwrap_or_default()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enums_arrive_as_numbers_and_leave_as_asked() {
        let b =
            body(br#"{"cluster":{"releaseChannel":{"channel":2},"x":{"taints":[{"effect":1}]}}}"#)
                .unwrap();
        assert_eq!(b["cluster"]["releaseChannel"]["channel"], "REGULAR");
        assert_eq!(b["cluster"]["x"]["taints"][0]["effect"], "NO_SCHEDULE");
        let mut op = json!({"status":"DONE","operationType":"SET_NODE_POOL_SIZE"});
        numbers_for_names(&mut op, Shape::Operation);
        assert_eq!(op, json!({"status":3,"operationType":14}));
        let mut c = json!({"clusters":[{"status":"RUNNING","nodePools":[{"status":"RUNNING"}]}]});
        numbers_for_names(&mut c, Shape::Other);
        assert_eq!(c["clusters"][0]["status"], 2);
        assert_eq!(c["clusters"][0]["nodePools"][0]["status"], 2);
        assert!(body(b"[1]").is_err());
        assert!(body(b"").unwrap().is_empty());
    }

    #[test]
    fn names_follow_gke_rules() {
        assert!(check_name("cluster.name", "c1").is_ok());
        assert!(check_name("cluster.name", "C1").is_err());
        assert!(check_name("cluster.name", "1c").is_err());
        assert!(check_name("cluster.name", "c-").is_err());
    }
}
