//! The REST-JSON wire: percent-decoding, repeated query keys, request bodies,
//! epoch-second timestamps and `maxResults`/`nextToken` pagination.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::error::Error;

/// Decodes `%XX` escapes (and nothing else); `None` for a malformed escape or
/// bytes that are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    decode(s, false)
}

/// Decodes one `application/x-www-form-urlencoded` value (`+` is a space).
pub fn form_decode(s: &str) -> Option<String> {
    decode(s, true)
}

fn decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Encodes every byte outside RFC 3986's unreserved set, as SigV4 requires.
pub fn uri_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string whose keys may repeat (`tagKeys=a&tagKeys=b`).
#[derive(Debug, Clone, Default)]
pub struct Query(BTreeMap<String, Vec<String>>);

impl Query {
    /// Parses a raw query string; malformed pairs are dropped.
    pub fn parse(raw: &str) -> Self {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Some(k), Some(v)) = (form_decode(k), form_decode(v)) {
                map.entry(k).or_default().push(v);
            }
        }
        Self(map)
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> &[String] {
        self.0.get(key).map_or(&[], Vec::as_slice)
    }

    /// A boolean query parameter (`true` as botocore sends it).
    pub fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// A parsed request body: a JSON object (an empty body is `{}`).
#[derive(Debug, Clone, Default)]
pub struct Body(pub Map<String, Value>);

impl Body {
    /// Parses the body; anything but a JSON object is a 400.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        match serde_json::from_slice(bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(Error::BadRequest(
                "The request body must be a JSON object.".into(),
            )),
            Err(e) => Err(Error::BadRequest(format!(
                "The request body is not valid JSON: {e}"
            ))),
        }
    }

    /// A member, if present and not null.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// A string member.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A required string member, or the InvalidParameterException EKS answers.
    pub fn required(&self, key: &str) -> Result<&str, Error> {
        self.str(key).filter(|s| !s.is_empty()).ok_or_else(|| {
            Error::InvalidParameter(format!("{key} is required and must be a non-empty string."))
        })
    }

    /// A `{string: string}` member such as `tags` or `labels`.
    pub fn string_map(&self, key: &str) -> Result<BTreeMap<String, String>, Error> {
        match self.get(key) {
            None => Ok(BTreeMap::new()),
            Some(v) => string_map(v).ok_or_else(|| {
                Error::InvalidParameter(format!("{key} must be a map of strings to strings."))
            }),
        }
    }

    /// A list-of-strings member.
    pub fn string_list(&self, key: &str) -> Result<Vec<String>, Error> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(v) => string_list(v).ok_or_else(|| {
                Error::InvalidParameter(format!("{key} must be a list of strings."))
            }),
        }
    }
}

/// A `{string: string}` JSON object as a map.
pub fn string_map(v: &Value) -> Option<BTreeMap<String, String>> {
    v.as_object()?
        .iter()
        .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect()
}

/// A JSON list of strings.
pub fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// An instant as EKS sends it: epoch seconds as a JSON number (SDKs for Go and
/// Java reject strings).
pub fn epoch(t: DateTime<Utc>) -> Value {
    json!(t.timestamp_millis() as f64 / 1000.0)
}

/// The page of `items` a list call asks for. `nextToken` is the offset of the
/// next page, as an opaque string; `maxResults` is capped at `cap`.
pub fn paginate<T: Clone>(
    items: &[T],
    query: &Query,
    cap: usize,
) -> Result<(Vec<T>, Option<String>), Error> {
    paginate_with(items, query.get("maxResults"), query.get("nextToken"), cap)
}

/// [`paginate`] with the parameters given explicitly (ListInsights takes them
/// in its body).
pub fn paginate_with<T: Clone>(
    items: &[T],
    max_results: Option<&str>,
    next_token: Option<&str>,
    cap: usize,
) -> Result<(Vec<T>, Option<String>), Error> {
    let max = match max_results {
        None => cap,
        Some(m) => match m.parse::<usize>() {
            Ok(n) if (1..=cap).contains(&n) => n,
            _ => {
                return Err(Error::InvalidParameter(format!(
                    "maxResults must be between 1 and {cap}."
                )));
            }
        },
    };
    let start = match next_token {
        None | Some("") => 0,
        Some(t) => t
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| Error::InvalidParameter("The nextToken is not valid.".into()))?,
    };
    let end = (start + max).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

/// A JSON object with `key: page` and, when more remain, `nextToken`.
pub fn page_response(key: &str, page: Vec<Value>, next: Option<String>) -> Value {
    let mut out = Map::new();
    out.insert(key.into(), Value::Array(page));
    if let Some(n) = next {
        out.insert("nextToken".into(), json!(n));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_and_escapes() {
        let q = Query::parse("tagKeys=a&tagKeys=b%2Fc&maxResults=2");
        assert_eq!(q.all("tagKeys"), ["a", "b/c"]);
        assert_eq!(q.get("maxResults"), Some("2"));
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
    }

    #[test]
    fn pages_follow_the_token() {
        let items: Vec<u32> = (0..5).collect();
        let (p, n) = paginate_with(&items, Some("2"), None, 100).unwrap();
        assert_eq!((p, n.as_deref()), (vec![0, 1], Some("2")));
        let (p, n) = paginate_with(&items, Some("2"), Some("4"), 100).unwrap();
        assert_eq!((p, n), (vec![4], None));
        assert!(paginate_with(&items, Some("0"), None, 100).is_err());
        assert!(paginate_with(&items, None, Some("x"), 100).is_err());
    }
}
