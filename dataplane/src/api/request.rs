//! Reading a resource request: the path (which type, namespace, name,
//! subresource), the query, the body (JSON, YAML-flavoured JSON, protobuf) and
//! the response format the client accepts.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::{HttpRequest, web};
use futures_util::StreamExt;
use serde_json::Value;

use crate::api::partial;
use crate::api::protobuf;
use crate::api::table::{self, IncludeObject};
use crate::error::ApiError;
use crate::resources::{ResourceRegistry, ResourceType};

/// The largest request body kube-apiserver reads (3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Where a request points.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The resource type.
    pub rt: Arc<ResourceType>,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource from the path.
    pub subresource: Option<String>,
}

impl Scope {
    /// The store key of the type: `pods`, `deployments.apps`.
    pub fn resource(&self) -> String {
        group_resource(&self.rt)
    }
}

/// The store key of a type: `pods`, `deployments.apps`.
pub fn group_resource(rt: &ResourceType) -> String {
    if let Some(shared) = crate::resources::events::shared_storage(rt) {
        return shared.to_owned();
    }
    if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    }
}

/// Parses the part of the path after `/api/v1/` or `/apis/{group}/{version}/`.
pub fn parse_path(
    registry: &ResourceRegistry,
    group: &str,
    version: &str,
    path: &str,
) -> Result<Scope, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let lookup = |plural: &str| registry.lookup(group, version, plural);
    let namespaced_type = |plural: &str| lookup(plural).filter(|rt| rt.namespaced);
    // A proxy's path goes on past its subresource.
    let fits = |rest: &[&str]| rest.len() <= 2 || rest[1] == "proxy";
    let (rt, namespace, rest) = match segs.as_slice() {
        ["namespaces", ns, plural, rest @ ..]
            if fits(rest) && namespaced_type(plural).is_some() =>
        {
            (namespaced_type(plural), Some((*ns).to_owned()), rest)
        }
        [plural, rest @ ..] if fits(rest) => (lookup(plural), None, rest),
        _ => (None, None, &[][..]),
    };
    let rt = rt.ok_or(ApiError::NotFound)?;
    if rt.namespaced && namespace.is_none() && !rest.is_empty() {
        // A namespaced object can only be named inside its namespace.
        return Err(ApiError::NotFound);
    }
    Ok(Scope {
        rt,
        namespace,
        name: rest.first().map(|s| (*s).to_owned()),
        subresource: rest.get(1).map(|s| (*s).to_owned()),
    })
}

/// The query parameters, by name.
#[derive(Debug, Default)]
pub struct Params(HashMap<String, String>);

impl Params {
    /// Parses the query string.
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        web::Query::<HashMap<String, String>>::from_query(query)
            .map(|q| Params(q.into_inner()))
            .map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))
    }

    /// The same parameters with `name` set to `value`.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.0.insert(name.to_owned(), value.to_owned());
        self
    }

    /// One parameter, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }

    /// A non-negative integer parameter; 400 if malformed.
    pub fn number(&self, name: &str) -> Result<Option<u64>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<i64>()
                    .map(|n| n.max(0) as u64)
                    .map_err(|_| ApiError::BadRequest(format!("invalid {name}: {v}")))
            })
            .transpose()
    }
}

/// The format a response is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// JSON (also answered to clients that accept protobuf beside JSON).
    Json,
    /// A `meta.k8s.io/v1` Table.
    Table(IncludeObject),
    /// Metadata only (`PartialObjectMetadata`).
    Metadata(partial::Metadata),
}

/// Chooses the response format from Accept; 406 when nothing we write is accepted.
pub fn negotiate(req: &HttpRequest, params: &Params) -> Result<Output, ApiError> {
    let accept = header(req, "accept");
    if table::wants_table(accept) {
        return Ok(Output::Table(IncludeObject::parse(
            params.get("includeObject"),
        )?));
    }
    if let Some(m) = partial::wanted(accept) {
        return Ok(Output::Metadata(m));
    }
    negotiate_plain(req).map(|()| Output::Json)
}

/// For endpoints that write their object only as it is (the reviews have
/// no Table or metadata view): 406 unless Accept allows plain JSON.
pub fn negotiate_plain(req: &HttpRequest) -> Result<(), ApiError> {
    let accept = header(req, "accept");
    let ok = accept.trim().is_empty()
        || accept.split(',').any(|part| {
            // A view (`as=…`) not served is no plain JSON.
            if part.contains("as=") {
                return false;
            }
            let media = part.split(';').next().unwrap_or_default().trim();
            matches!(
                media,
                "*/*"
                    | "application/*"
                    | "application/json"
                    | "application/yaml"
                    | protobuf::CONTENT_TYPE
            ) || media.ends_with("+json")
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::NotAcceptable(
            "application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
        ))
    }
}

/// A request header as text (empty when absent or not text).
pub fn header<'a>(req: &'a HttpRequest, name: &str) -> &'a str {
    req.headers()
        .get(name)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
}

/// Reads the body, refusing more than [`MAX_BODY`] with 413.
pub async fn read_body(mut payload: web::Payload) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("reading body: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ApiError::TooLarge(format!(
                "Request entity too large: limit is {MAX_BODY}"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The largest body parsed on the worker that serves the cluster; larger
/// ones are parsed on the low-priority [`crate::api::parse_pool`].
pub const PARSE_ON_WORKER_MAX: usize = 64 * 1024;

/// The deepest flow nesting (`[`, `{`) parsed on the worker: YAML's parse
/// time grows with the square of the depth, so a small body nested
/// thousands of levels deep is as heavy as a large one.
const NESTING_ON_WORKER_MAX: usize = 64;

/// How deep `[` and `{` nest in `body`, strings not told apart: a cheap
/// bound for where to parse it, not a parse.
fn nesting(body: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in body {
        match b {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Runs `parse` over `body`: at once for a small, shallow body, on the parse
/// pool for a large or deep one, so that parsing a hostile body never holds
/// the worker that serves the cluster's other requests, `/readyz` included.
pub async fn parse_off_worker<T: Send + 'static>(
    body: &[u8],
    parse: impl FnOnce(&[u8]) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if body.len() <= PARSE_ON_WORKER_MAX && nesting(body) <= NESTING_ON_WORKER_MAX {
        return parse(body);
    }
    let owned = body.to_vec();
    crate::api::parse_pool::run(move || parse(&owned))
        .await
        .unwrap_or_else(|| Err(ApiError::Internal(crate::api::recover::PANICKED.into())))
}

/// Decodes an object body by its Content-Type.
pub fn decode_object(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    if protobuf::is_protobuf(content_type) {
        return protobuf::decode(body);
    }
    let media = content_type.split(';').next().unwrap_or_default().trim();
    match media {
        "" | "application/json" | "*/*" => decode_json(body),
        "application/yaml" => decode_yaml(body),
        _ => Err(ApiError::UnsupportedMediaType(
            "application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
        )),
    }
}

/// go-yaml's bound on flow nesting (`[` and `{`), which kube-apiserver's
/// YAML decoding inherits.
const MAX_YAML_FLOW_DEPTH: usize = 10_000;

/// Parses a YAML body (JSON is YAML too).
pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let converting = |e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("error converting YAML to JSON: {e}"))
    };
    if let Some(line) = flow_too_deep(body) {
        // Refused before parsing: the parser's time grows with the square
        // of the depth, and one request must not hold its cluster's worker.
        let at = if line == 0 {
            String::new()
        } else {
            format!("line {}: ", line + 1)
        };
        return Err(converting(&format_args!(
            "yaml: {at}exceeded max depth of {MAX_YAML_FLOW_DEPTH}"
        )));
    }
    serde_norway::from_slice(body).map_err(|e| converting(&e))
}

/// The 0-based line where the flow collections of `body` nest deeper than
/// go-yaml allows, in one pass: brackets inside quoted scalars and comments
/// do not count; a quote opens a scalar only where a token may start.
fn flow_too_deep(body: &[u8]) -> Option<usize> {
    #[derive(PartialEq)]
    enum In {
        Plain,
        Single,
        Double,
        Comment,
    }
    let (mut state, mut depth, mut line) = (In::Plain, 0usize, 0usize);
    // The last byte outside quotes that was not a space: where a token ends.
    let mut last = b'\n';
    let (mut escaped, mut prev) = (false, b'\n');
    for &b in body {
        match state {
            In::Comment if b == b'\n' => state = In::Plain,
            In::Comment => {}
            In::Single if b == b'\'' => state = In::Plain,
            In::Double if escaped => escaped = false,
            In::Double if b == b'\\' => escaped = true,
            In::Double if b == b'"' => state = In::Plain,
            In::Single | In::Double => {}
            In::Plain => match b {
                b'#' if matches!(prev, b' ' | b'\t' | b'\n') => state = In::Comment,
                b'\'' | b'"' if matches!(last, b'\n' | b':' | b',' | b'[' | b'{' | b'-' | b'?') => {
                    state = if b == b'"' { In::Double } else { In::Single };
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_YAML_FLOW_DEPTH {
                        return Some(line);
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        if b == b'\n' {
            line += 1;
        }
        // A space keeps `last`: `a: 'x'` opens a quote after `:`.
        if state == In::Plain && !matches!(b, b' ' | b'\t') || b == b'\n' {
            last = b;
        }
        prev = b;
    }
    None
}

/// Parses a JSON body, worded as upstream's decoder.
pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::BadRequest(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &[u8]) -> String {
        match decode_yaml(body) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn yaml_nested_past_go_yamls_bound_is_refused_before_parsing() {
        let deep = "[".repeat(100_000);
        assert_eq!(
            message(deep.as_bytes()),
            "error converting YAML to JSON: yaml: exceeded max depth of 10000"
        );
        let later = format!("a: 1\nb: {}", "{\"x\": ".repeat(10_001));
        assert_eq!(
            message(later.as_bytes()),
            "error converting YAML to JSON: yaml: line 2: exceeded max depth of 10000"
        );
    }

    #[test]
    fn brackets_in_quotes_and_comments_do_not_nest() {
        let text = format!(
            "a: '{0}'\nb: \"{0}\\\"\"\nc: it's # {0}\nd: [1, [2]]\n",
            "[".repeat(10_001)
        );
        let v = decode_yaml(text.as_bytes()).unwrap();
        assert_eq!(v["d"], serde_json::json!([1, [2]]));
        assert_eq!(v["c"], "it's");
        assert!(flow_too_deep(b"x: '[[['\n").is_none());
    }
}
