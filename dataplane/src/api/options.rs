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

/// Go's `%q` of a string (`strconv.Quote`, what upstream's messages quote
/// values with): `"` and `\` escaped, control characters as `\n`, `\x7f`,
/// `\u0085`, and characters Go does not print (spaces other than U+0020,
/// format characters, private use, non-characters) as `\u…`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if !go_prints(c) && u32::from(c) < 0x10000 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if !go_prints(c) => out.push_str(&format!("\\U{:08x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`, near enough: letters, marks, numbers, punctuation,
/// symbols and U+0020, so not controls, other spaces, the common format
/// characters, private use or non-characters.
fn go_prints(c: char) -> bool {
    let n = u32::from(c);
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(n, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e
                | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f
                | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff | 0xf0000..=0x10ffff)
            || (n & 0xfffe) == 0xfffe)
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
    fn strings_are_quoted_as_gos_strconv_quote() {
        let cases = [
            ("plain", r#""plain""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("s\u{7f}lector", r#""s\x7flector""#),
            ("\u{1}\n\t\u{7}", r#""\x01\n\t\a""#),
            ("\u{85}\u{a0}\u{200b}", r#""\u0085\u00a0\u200b""#),
            ("é💥", "\"é💥\""),
            ("\u{f0000}", r#""\U000f0000""#),
        ];
        for (s, want) in cases {
            assert_eq!(go_quote(s), want, "{s:?}");
        }
    }

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
