//! Admission as pure functions, run after defaulting and authorization and
//! before storing, in upstream's order. Mutating: [`namespace`]
//! (NamespaceLifecycle, which only refuses), [`limitrange::mutate`]
//! (container defaults), [`serviceaccount`] (default account, token volume),
//! [`storage_protection`] (StorageObjectInUseProtection finalizers).
//! Mutating [`webhook`]s last (called when their [`match_conditions`] hold). Validating: [`limitrange::validate`]
//! (min/max/ratio), [`pod_security`] (the Pod Security Standards), ValidatingAdmissionPolicies ([`policy`]), validating [`webhook`]s, then [`quota`] (object counts
//! and compute resources against every ResourceQuota of the namespace).
//!
//! [`quantity`] parses and prints `resource.Quantity` as upstream does.

pub mod jsonpatch;
pub mod limitrange;
pub mod match_conditions;
pub mod namespace;
pub mod pod_security;
pub mod policy;
pub mod quantity;
pub mod quota;
pub mod serviceaccount;
pub mod storage_protection;
pub mod webhook;

/// Which write is being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create (POST, or a server-side apply that creates).
    Create,
    /// An update or patch.
    Update,
    /// A delete (admission of deletes has nothing to check here).
    Delete,
}

/// How admission errors name the object (upstream `extractResourceName`):
/// its name, else its `generateName`, else `Unknown`.
pub fn object_name(object: &serde_json::Value) -> &str {
    let s = |k: &str| {
        object
            .pointer(k)
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
    };
    s("/metadata/name")
        .or_else(|| s("/metadata/generateName"))
        .unwrap_or("Unknown")
}

/// Compiles a CEL expression; an expression the parser cannot take is an
/// error, never a panic (the parser panics on some malformed input, such as
/// `... []`).
pub fn compile_cel(expression: &str) -> Result<cel_interpreter::Program, String> {
    std::panic::catch_unwind(|| cel_interpreter::Program::compile(expression))
        .map_err(|_| format!("ERROR: <input>: Syntax error: cannot parse {expression:?}"))?
        .map_err(|e| e.to_string())
}

/// Runs a compiled CEL program; a panic in the interpreter is an error.
pub fn execute_cel(
    program: &cel_interpreter::Program,
    context: &cel_interpreter::Context<'_>,
) -> Result<cel_interpreter::Value, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(context)))
        .map_err(|_| "the expression could not be evaluated".to_owned())?
        .map_err(|e| e.to_string())
}

/// A JSON value as CEL sees it, as upstream's converter types it: a number
/// that fits an `int64` is an `int`, never a `uint` (so `x % 2` works).
pub fn to_cel(v: &serde_json::Value) -> cel_interpreter::Value {
    use cel_interpreter::Value as Cel;
    use serde_json::Value;
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(s.clone().into()),
        Value::Array(a) => Cel::List(a.iter().map(to_cel).collect::<Vec<_>>().into()),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, Cel> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            map.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn objects_are_named_as_upstream_names_them() {
        assert_eq!(super::object_name(&json!({"metadata":{"name":"a"}})), "a");
        assert_eq!(
            super::object_name(&json!({"metadata":{"generateName":"web-"}})),
            "web-"
        );
        assert_eq!(super::object_name(&json!({})), "Unknown");
    }
}
