//! Request deadlines, as kube-apiserver's `WithRequestDeadline` and
//! `WithTimeoutForNonLongRunningRequests` filters: a request that is not
//! long-running gets `--request-timeout` (60 s), or less when its
//! `?timeout=` asks for less, measured on the engine's clock from its arrival;
//! past it the client gets upstream's 504 Status while the cluster serves on.
//! A `?timeout=` Go's `time.ParseDuration` refuses is a 400.
//!
//! Long-running, as kube-apiserver's `LongRunningFunc`: the verbs `watch` and
//! `proxy`, and the subresources `attach`, `exec`, `proxy`, `log` and
//! `portforward`.

use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use kemu_shared::UserInfo;

use crate::engine::Engine;
use crate::error::ApiError;

/// kube-apiserver's default `--request-timeout`.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What the timeout filter answers once the deadline has passed.
const ALLOTTED: &str = "request did not complete within the allotted timeout";

/// Runs the rest of the chain under the request's deadline.
pub async fn deadline(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let attributes = crate::authz::from_request(
        UserInfo::default(),
        req.method().as_str(),
        req.path(),
        req.query_string(),
    );
    let long_running = matches!(attributes.verb.as_str(), "watch" | "proxy")
        || (attributes.resource_request
            && matches!(
                attributes.subresource.as_str(),
                "attach" | "exec" | "proxy" | "log" | "portforward"
            ));
    let clock = req
        .app_data::<web::Data<Engine>>()
        .map(|engine| engine.registry().clock().clone());
    let (false, Some(clock)) = (long_running, clock) else {
        return next.call(req).await;
    };
    let timeout = match requested(req.query_string()) {
        Ok(Some(asked)) if asked > 0 => {
            Duration::from_nanos(asked.unsigned_abs()).min(REQUEST_TIMEOUT)
        }
        Ok(_) => REQUEST_TIMEOUT,
        Err(message) => {
            tracing::debug!(path = req.path(), %message, "refused timeout");
            return Err(ApiError::BadRequest(message).into());
        }
    };
    let expired = clock.sleep(timeout);
    tokio::select! {
        res = next.call(req) => res,
        () = expired => {
            tracing::warn!(?timeout, "request outlived its deadline");
            Err(ApiError::Timeout(ALLOTTED.into()).into())
        }
    }
}

/// The first `timeout` of the query, in nanoseconds, or upstream's 400
/// message for one Go cannot parse.
fn requested(query: &str) -> Result<Option<i64>, String> {
    let Ok(web::Query(pairs)) = web::Query::<Vec<(String, String)>>::from_query(query) else {
        return Ok(None);
    };
    match pairs.into_iter().find(|(k, _)| k == "timeout") {
        Some((_, v)) if !v.is_empty() => parse_go_duration(&v)
            .map(Some)
            .map_err(|e| format!("invalid timeout specified in the request URL - {e}")),
        _ => Ok(None),
    }
}

/// Go's `time.ParseDuration`, with its errors' wording: a signed sequence of
/// decimal numbers, each with an optional fraction and a unit (`ns`, `us`,
/// `µs`, `μs`, `ms`, `s`, `m`, `h`), in nanoseconds up to `i64::MAX`.
pub fn parse_go_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let [c @ (b'-' | b'+'), rest @ ..] = s {
        neg = *c == b'-';
        s = rest;
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut d: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &c in &s[..digits] {
            if v > LIMIT / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > LIMIT {
                return Err(invalid());
            }
        }
        let pre = digits > 0;
        s = &s[digits..];
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let [b'.', rest @ ..] = s {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            post = digits > 0;
            let mut overflow = false;
            for &c in &rest[..digits] {
                // Past 63 bits the fraction only stops gaining precision.
                if overflow || f > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            s = &rest[digits..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .iter()
            .take_while(|c| !(**c == b'.' || c.is_ascii_digit()))
            .count();
        if unit_len == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(orig)
            ));
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let unit: u64 = match unit {
            b"ns" => 1,
            // `µs` (U+00B5) and `μs` (U+03BC) as UTF-8.
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    time_quote(&String::from_utf8_lossy(unit)),
                    time_quote(orig)
                ));
            }
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // As Go: a float product, converted back (it stays below 2^63).
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        d += v;
        if d > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // -2^63 is representable.
        return Ok(0i64.wrapping_sub_unsigned(d));
    }
    i64::try_from(d).map_err(|_| invalid())
}

/// The `time` package's own quoting: `"` and `\` escaped, each byte of a
/// non-ASCII or control character as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !(' '..'\u{80}').contains(&c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_parses_them() {
        let ok = [
            ("0", 0),
            ("-0", 0),
            ("1s", 1_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("1h30m", 5_400_000_000_000),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("-2ms", -2_000_000),
            ("+3us", 3_000),
            ("4µs", 4_000),
            ("5μs", 5_000),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.000000001s", 1),
        ];
        for (s, want) in ok {
            assert_eq!(parse_go_duration(s), Ok(want), "{s}");
        }
        let bad = [
            ("", r#"time: invalid duration """#),
            ("abc", r#"time: invalid duration "abc""#),
            ("1", r#"time: missing unit in duration "1""#),
            ("1x", r#"time: unknown unit "x" in duration "1x""#),
            ("1s2", r#"time: missing unit in duration "1s2""#),
            (".s", r#"time: invalid duration ".s""#),
            ("-", r#"time: invalid duration "-""#),
            (
                "9223372036854775808ns",
                r#"time: invalid duration "9223372036854775808ns""#,
            ),
            (
                "99999999999999999999h",
                r#"time: invalid duration "99999999999999999999h""#,
            ),
            ("3000000h", r#"time: invalid duration "3000000h""#),
            (
                "1é",
                r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#,
            ),
            ("1\"", r#"time: unknown unit "\"" in duration "1\"""#),
        ];
        for (s, want) in bad {
            assert_eq!(parse_go_duration(s), Err(want.to_owned()), "{s}");
        }
    }

    #[test]
    fn the_timeout_is_upstreams_504_status() {
        let status = ApiError::Timeout(ALLOTTED.into()).status();
        assert_eq!(
            status,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Timeout: request did not complete within the allotted timeout",
                "reason": "Timeout", "details": {}, "code": 504,
            })
        );
    }

    #[test]
    fn the_first_timeout_of_the_query_counts() {
        assert_eq!(requested(""), Ok(None));
        assert_eq!(requested("timeout="), Ok(None));
        assert_eq!(requested("timeout=2s&timeout=x"), Ok(Some(2_000_000_000)));
        assert_eq!(
            requested("timeout=1"),
            Err(
                r#"invalid timeout specified in the request URL - time: missing unit in duration "1""#
                    .into()
            )
        );
    }
}
