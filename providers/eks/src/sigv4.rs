//! The SigV4 shape every EKS call must have, checked as AWS's front end
//! checks it before any operation runs: an `Authorization` header (or a
//! presigned query) naming a credential scoped to `eks`, the signed headers
//! and a signature, and a request date that matches the scope. The
//! signature itself is not recomputed: any key and secret pass, as on a
//! local emulator, but an unsigned or malformed request is refused.

use actix_web::HttpRequest;

use crate::error::Error;

/// The service a credential must be scoped to.
const SERVICE: &str = "eks";

/// Checks the request's signature shape; the error is AWS's own.
pub fn check(req: &HttpRequest) -> Result<(), Error> {
    let header = |name: &str| req.headers().get(name).and_then(|h| h.to_str().ok());
    let query = req.query_string();
    if header("authorization").is_none() && query.contains("X-Amz-Signature=") {
        // A presigned request carries its signature in the query.
        return Ok(());
    }
    let Some(auth) = header("authorization") else {
        return Err(Error::MissingAuthenticationToken);
    };
    let params = auth
        .strip_prefix("AWS4-HMAC-SHA256")
        .filter(|rest| rest.starts_with(' '))
        .unwrap_or(auth);
    let param = |name: &str| {
        params.split(',').find_map(|p| {
            p.trim()
                .strip_prefix(name)
                .and_then(|v| v.strip_prefix('='))
                .filter(|v| !v.is_empty())
        })
    };
    let date = header("x-amz-date").or_else(|| header("date"));
    let mut missing = Vec::new();
    for name in ["Credential", "Signature", "SignedHeaders"] {
        if param(name).is_none() || !auth.starts_with("AWS4-HMAC-SHA256 ") {
            missing.push(format!("Authorization header requires '{name}' parameter."));
        }
    }
    if date.is_none() {
        missing.push(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
                .into(),
        );
    }
    if !missing.is_empty() {
        return Err(Error::IncompleteSignature(format!(
            "{} Authorization={auth}",
            missing.join(" ")
        )));
    }
    let credential = param("Credential").unwrap_or_default();
    let scope: Vec<&str> = credential.split('/').collect();
    let [_akid, day, _region, service, terminator] = scope[..] else {
        return Err(Error::IncompleteSignature(format!(
            "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '{credential}'"
        )));
    };
    if terminator != "aws4_request" {
        return Err(Error::InvalidSignature(format!(
            "Credential should be scoped with a valid terminator: 'aws4_request', not '{terminator}'. "
        )));
    }
    if service != SERVICE {
        return Err(Error::InvalidSignature(format!(
            "Credential should be scoped to correct service: '{SERVICE}'. "
        )));
    }
    // `X-Amz-Date` is ISO-8601 basic (`20261206T101500Z`); a `Date` header
    // is not checked against the scope.
    if let Some(amz) = header("x-amz-date")
        && amz.get(..8) != Some(day)
    {
        return Err(Error::InvalidSignature(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{day}' != '{}', from '{amz}'.",
            amz.get(..8).unwrap_or(amz)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    const SIGNED: &str = "AWS4-HMAC-SHA256 Credential=test/20261206/us-east-1/eks/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";

    fn checked(headers: &[(&str, &str)]) -> Result<(), String> {
        let mut req = TestRequest::get().uri("/clusters");
        for h in headers {
            req = req.insert_header(*h);
        }
        check(&req.to_http_request()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_signed_request_passes_with_any_key() {
        let date = ("x-amz-date", "20261206T101500Z");
        assert_eq!(checked(&[("authorization", SIGNED), date]), Ok(()));
    }

    #[test]
    fn unsigned_and_malformed_requests_are_refused_as_aws_refuses_them() {
        assert_eq!(checked(&[]), Err("Missing Authentication Token".into()));
        assert_eq!(
            checked(&[("authorization", "Bearer x"), ("x-amz-date", "20261206T101500Z")]),
            Err("Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=Bearer x".into())
        );
        assert_eq!(
            checked(&[("authorization", SIGNED)]),
            Err(format!(
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization={SIGNED}"
            ))
        );
        let s3 = SIGNED.replace("/eks/", "/s3/");
        assert_eq!(
            checked(&[("authorization", &s3), ("x-amz-date", "20261206T101500Z")]),
            Err("Credential should be scoped to correct service: 'eks'. ".into())
        );
        assert_eq!(
            checked(&[("authorization", SIGNED), ("x-amz-date", "20250101T000000Z")]),
            Err("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '20261206' != '20250101', from '20250101T000000Z'.".into())
        );
    }
}
