//! The write options every mutating verb shares (`dryRun`, and the 422 a bad
//! option gets), worded as upstream's `metav1` validation words them:
//! `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: …`.

use crate::api::request::Params;
use crate::error::{ApiError, Cause, Target};

/// The meta group the options kinds live in.
const META_GROUP: &str = "meta.k8s.io";

/// Which options object a verb takes (names the kind in its errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionsKind {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object or a collection.
    Delete,
    /// GET of a collection: a list or a watch.
    List,
}

impl OptionsKind {
    fn kind(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch => "PatchOptions",
            OptionsKind::Delete => "DeleteOptions",
            OptionsKind::List => "ListOptions",
        }
    }
}

/// One invalid option, as a `field.Error`.
pub fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.to_owned(),
        message,
        field: field.to_owned(),
    }
}

/// The 422 for invalid options: `<Kind>.meta.k8s.io "" is invalid: …`.
pub fn invalid(kind: OptionsKind, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: String::new(),
            group: META_GROUP.into(),
            kind: kind.kind().into(),
        },
        kind: format!("{}.{META_GROUP}", kind.kind()),
        causes,
    }
}

/// A query parameter as Go's `strconv.ParseInt(s, 10, 64)` reads it, with
/// its error text: `value out of range` for digits past an int64, `invalid
/// syntax` for anything else.
pub fn parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.ParseInt: parsing {}: {why}", go_quote(s))
    })
}

/// Go's `%q` of a string (what upstream's messages quote values with).
pub fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `field.NotSupported` of a `[]string` value.
pub fn unsupported_list(field: &str, values: &[String], supported: &[&str]) -> Cause {
    let list: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    let supported: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
    cause(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: []string{{{}}}: supported values: {}",
            list.join(", "),
            supported.join(", ")
        ),
    )
}

/// `field.NotSupported` of a string value.
pub fn unsupported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let supported: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
    cause(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            supported.join(", ")
        ),
    )
}

/// Checks a `dryRun` list: every value must be `All`.
pub fn check_dry_run(values: &[String]) -> Result<bool, Cause> {
    if values.iter().all(|v| v == "All") {
        Ok(!values.is_empty())
    } else {
        Err(unsupported_list("dryRun", values, &["All"]))
    }
}

/// Whether the query asks for a dry run; 422 for values other than `All`.
pub fn dry_run_query(params: &Params, kind: OptionsKind) -> Result<bool, ApiError> {
    let values: Vec<String> = params
        .get("dryRun")
        .map(str::to_owned)
        .into_iter()
        .collect();
    check_dry_run(&values).map_err(|c| invalid(kind, vec![c]))
}

/// `resourceVersionMatch` and `sendInitialEvents` of a list or watch, as
/// upstream's `ValidateListOptions` checks them (WatchList enabled).
pub fn check_list(params: &Params, watch: bool) -> Result<(), ApiError> {
    const MATCH: &str = "resourceVersionMatch";
    let forbidden =
        |field: &str, why: &str| cause("FieldValueForbidden", field, format!("Forbidden: {why}"));
    let matching = params.get(MATCH).filter(|m| !m.is_empty());
    let send = params.get("sendInitialEvents").is_some();
    let has_continue = params.get("continue").is_some_and(|c| !c.is_empty());
    let mut causes = Vec::new();
    if watch {
        if send && matching != Some("NotOlderThan") {
            causes.push(forbidden(
                MATCH,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = matching {
            if !send {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(unsupported(MATCH, m, &["NotOlderThan"]));
            }
            if has_continue {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = matching {
            let rv = params.get("resourceVersion").unwrap_or_default();
            if rv.is_empty() {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if has_continue {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(unsupported(MATCH, m, &["Exact", "NotOlderThan", ""]));
            }
            if m == "Exact" && rv == "0" {
                causes.push(forbidden(
                    MATCH,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(invalid(OptionsKind::List, causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_dry_run_reads_as_upstream() {
        let params = Params::parse("dryRun=Some").unwrap();
        let err = dry_run_query(&params, OptionsKind::Create).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\""
        );
        assert_eq!(err.status()["code"], 422);
        assert_eq!(err.status()["details"]["group"], "meta.k8s.io");
        assert!(dry_run_query(&Params::parse("dryRun=All").unwrap(), OptionsKind::Patch).unwrap());
        assert!(!dry_run_query(&Params::parse("").unwrap(), OptionsKind::Patch).unwrap());
    }
}
