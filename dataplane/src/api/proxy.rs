//! `pods/proxy`, `services/proxy` and `nodes/proxy`: a request passed to
//! what listens behind the object, as kube-apiserver's upgrade-aware proxy
//! passes it, and the answer passed back.
//!
//! The name may carry a scheme and a port (`name`, `name:port`,
//! `scheme:name:port`, upstream's `SplitSchemeNamePort`). A Pod's request
//! goes to its IP and the port named, else its first container port; a
//! Service's to a ready endpoint of the port named (a Service port's number
//! is its name's), as upstream's `ResourceLocation`s pick them. What answers
//! there is the simulated container's server ([`crate::exec::ports`]:
//! nginx, httpd, agnhost); a port nothing serves is upstream's 503 `error
//! trying to reach service: dial tcp …: connect: connection refused`. A
//! Node's proxy is its kubelet's port 10250: `/healthz` and `/pods` answer
//! as a kubelet does, other paths its 404.
//!
//! As upstream: an empty path on a GET or HEAD is a 301 to the path with a
//! `/`; the query goes through as sent; the caller's `Authorization` stays
//! here (the authentication filter drops it); hop-by-hop and CORS headers
//! of the answer are dropped, and a `Location` on the caller's host is
//! rewritten under the proxy's path. Links inside HTML bodies are not
//! rewritten.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use crate::api::request::read_body;
use crate::api::streams;
use crate::api::subresources::Ctx;
use crate::controllers::obj;
use crate::error::{ApiError, Target};
use crate::store::ObjectKey;

/// The methods upstream's proxy connecters serve.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Headers that belong to one hop (Go's `httputil.ReverseProxy` list).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// `name`, `name:port` or `scheme:name:port`: (scheme, name, port).
fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

/// The path after `…/{id}/proxy` in the request's own path: `""`, `/`,
/// `/a/b/`.
fn sub_path<'a>(req: &'a HttpRequest, ctx: &Ctx) -> &'a str {
    let path = req.path();
    let plural = &ctx.scope.rt.plural;
    let start = match ctx.scope.namespace.as_deref() {
        Some(ns) => format!("/namespaces/{ns}/{plural}/"),
        None => format!("/{plural}/"),
    };
    path.find(&start)
        .map(|i| &path[i + start.len()..])
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .and_then(|rest| rest.strip_prefix("/proxy"))
        .unwrap_or_default()
}

/// Where a request goes: a Pod's IP and port (or a kubelet).
enum Backend {
    /// A port in a Pod's network namespace.
    Pod { pod: Value, ip: String, port: u16 },
    /// A Node's kubelet.
    Kubelet { node: Value },
}

/// Serves one proxy request.
pub async fn serve(
    ctx: &Ctx,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let method = req.method().as_str();
    if !METHODS.contains(&method) {
        return Err(ApiError::MethodNotAllowed);
    }
    let id = ctx.scope.name.clone().unwrap_or_default();
    let path = sub_path(req, ctx).to_owned();
    // What upstream's transport calls PathPrepend: the proxy's own path.
    let prefix = req.path().strip_suffix(path.as_str()).unwrap_or(req.path());
    let prefix = prefix.trim_end_matches('/').to_owned();
    let kind = ctx.scope.rt.plural.as_str();
    let Some((scheme, name, port)) = split_scheme_name_port(&id) else {
        let what = match kind {
            "pods" => "pod",
            "services" => "service",
            _ => "node",
        };
        return Err(ApiError::BadRequest(format!(
            "invalid {what} request \"{id}\""
        )));
    };
    let backend = match kind {
        "pods" => pod_backend(ctx, name, port)?,
        "services" => service_backend(ctx, name, port)?,
        _ => Backend::Kubelet {
            node: get(ctx, "nodes", "", name)?,
        },
    };
    if path.is_empty() && matches!(method, "GET" | "HEAD") {
        let query = req.query_string();
        let location = match query {
            "" => format!("{}/", req.path()),
            q => format!("{}/?{q}", req.path()),
        };
        return Ok(HttpResponse::MovedPermanently()
            .insert_header(("Location", location))
            .finish());
    }
    let body = read_body(payload).await?;
    let target = match req.query_string() {
        "" => {
            if path.is_empty() {
                "/".to_owned()
            } else {
                path.clone()
            }
        }
        q => format!("{}?{q}", if path.is_empty() { "/" } else { &path }),
    };
    let reply = match backend {
        Backend::Kubelet { node } => kubelet(ctx, &node, &path),
        Backend::Pod { pod, ip, port } => {
            if scheme == "https" {
                // No simulated server speaks TLS.
                return Err(refused(&ip, port));
            }
            let listeners = streams::listeners(ctx, &pod);
            let mut conn = listeners.connect(port).map_err(|_| refused(&ip, port))?;
            let mut headers = vec![("Host".to_owned(), host(req))];
            headers.extend(forwarded_headers(req));
            conn.exchange(method, &target, &headers, &body, ctx.now())
        }
    };
    Ok(respond(req, reply, &prefix))
}

/// Upstream's answer when nothing listens.
fn refused(ip: &str, port: u16) -> ApiError {
    ApiError::ServiceUnavailable(format!(
        "error trying to reach service: dial tcp {ip}:{port}: connect: connection refused"
    ))
}

fn get(ctx: &Ctx, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    ctx.store
        .get(&ObjectKey::new(resource, namespace, name))
        .map(|o| (*o).clone())
        .ok_or_else(|| {
            ApiError::ObjectNotFound(Target {
                name: name.to_owned(),
                group: String::new(),
                kind: resource.to_owned(),
            })
        })
}

/// A port as Go's dialer reads it (a service name from `/etc/services`).
fn dial_port(port: &str) -> Result<u16, ApiError> {
    match port {
        "" | "http" => Ok(80),
        "https" => Ok(443),
        p => p.parse().map_err(|_| {
            ApiError::ServiceUnavailable(format!(
                "error trying to reach service: dial tcp: lookup tcp/{p}: unknown port"
            ))
        }),
    }
}

fn pod_ip(pod: &Value) -> Option<&str> {
    pod["status"]["podIPs"][0]["ip"]
        .as_str()
        .or(pod["status"]["podIP"].as_str())
        .filter(|ip| {
            ip.parse::<std::net::IpAddr>().is_ok_and(|a| match a {
                std::net::IpAddr::V4(v) => {
                    !(v.is_loopback()
                        || v.is_unspecified()
                        || v.is_multicast()
                        || v.is_broadcast()
                        || v.is_link_local())
                }
                std::net::IpAddr::V6(v) => {
                    !(v.is_loopback() || v.is_unspecified() || v.is_multicast())
                }
            })
        })
}

fn pod_backend(ctx: &Ctx, name: &str, port: &str) -> Result<Backend, ApiError> {
    let ns = ctx.scope.namespace.as_deref().unwrap_or_default();
    let pod = get(ctx, "pods", ns, name)?;
    let port = match port {
        "" => pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|c| c["ports"][0]["containerPort"].as_u64())
            .map(|p| p.to_string())
            .unwrap_or_default(),
        p => p.to_owned(),
    };
    let ip = pod_ip(&pod)
        .ok_or_else(|| ApiError::BadRequest("address not allowed".into()))?
        .to_owned();
    let port = dial_port(&port)?;
    Ok(Backend::Pod { pod, ip, port })
}

fn service_backend(ctx: &Ctx, name: &str, port: &str) -> Result<Backend, ApiError> {
    let ns = ctx.scope.namespace.as_deref().unwrap_or_default();
    let mut port_name = port.to_owned();
    if let Ok(number) = port.parse::<i64>() {
        let svc = get(ctx, "services", ns, name)?;
        port_name = svc["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(number))
            .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
            .ok_or_else(|| {
                ApiError::ServiceUnavailable(format!(
                    "no service port {number} found for service \"{name}\""
                ))
            })?;
    }
    let eps = get(ctx, "endpoints", ns, name)?;
    let subsets = eps["subsets"].as_array().cloned().unwrap_or_default();
    let none =
        || ApiError::ServiceUnavailable(format!("no endpoints available for service \"{name}\""));
    if subsets.is_empty() {
        return Err(none());
    }
    for ss in &subsets {
        let Some(p) = ss["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)
        else {
            continue;
        };
        let port = p["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(0);
        // Only addresses that are Pods (upstream's isValidAddress).
        for a in ss["addresses"].as_array().into_iter().flatten() {
            let r = &a["targetRef"];
            if r["kind"] != "Pod" {
                continue;
            }
            let pod_ns = r["namespace"].as_str().unwrap_or(ns);
            let Ok(pod) = get(ctx, "pods", pod_ns, r["name"].as_str().unwrap_or_default()) else {
                continue;
            };
            let ip = a["ip"].as_str().unwrap_or_default().to_owned();
            let listed = pod["status"]["podIPs"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|x| x["ip"].as_str() == Some(&ip));
            if listed || pod["status"]["podIP"].as_str() == Some(&ip) {
                return Ok(Backend::Pod { pod, ip, port });
            }
        }
    }
    Err(ApiError::ServiceUnavailable(format!(
        "no endpoints available for service \"{}\"",
        ctx.scope.name.as_deref().unwrap_or(name)
    )))
}

/// The Host the caller sent (the backend sees it, as upstream sends it).
fn host(req: &HttpRequest) -> String {
    req.connection_info().host().to_owned()
}

/// The caller's headers that go on: all but the hop-by-hop ones, those the
/// caller's `Connection` names, `Host` and `Authorization`; then the
/// forwarding headers upstream adds.
fn forwarded_headers(req: &HttpRequest) -> Vec<(String, String)> {
    let named: Vec<String> = req
        .headers()
        .get_all("connection")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect();
    let mut out: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            !HOP_BY_HOP.contains(&k)
                && !named.iter().any(|n| n == k)
                && k != "host"
                && k != "authorization"
                && k != "content-length"
        })
        .filter_map(|(k, v)| Some((canonical(k.as_str()), v.to_str().ok()?.to_owned())))
        .collect();
    out.push(("X-Forwarded-Uri".into(), req.path().to_owned()));
    if let Some(peer) = req.peer_addr() {
        out.push(("X-Forwarded-For".into(), peer.ip().to_string()));
    }
    out
}

/// A header name as Go's `textproto.CanonicalMIMEHeaderKey` writes it.
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The backend's answer, as the proxy passes it back.
fn respond(req: &HttpRequest, reply: crate::exec::ports::Reply, prefix: &str) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = HttpResponse::build(status);
    let request_host = host(req);
    for (k, v) in &reply.headers {
        let lower = k.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || lower == "content-length"
            || lower.starts_with("access-control-")
        {
            continue;
        }
        let value = if lower == "location" {
            rewrite_location(v, &request_host, prefix)
        } else {
            v.clone()
        };
        out.append_header((k.as_str(), value));
    }
    out.body(reply.body)
}

/// Upstream's `rewriteURL` of a `Location` header: a URL on the caller's
/// host (or with no host) and an absolute path is moved under the proxy's
/// path; any other is left alone.
fn rewrite_location(location: &str, request_host: &str, prefix: &str) -> String {
    let (scheme_host, path) = match location.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if host != request_host {
                return location.to_owned();
            }
            (format!("{scheme}://{host}"), path)
        }
        None => (String::new(), location),
    };
    if !path.starts_with('/') || path.starts_with(prefix) {
        return location.to_owned();
    }
    format!("{scheme_host}{prefix}{path}")
}

/// What a Node's kubelet answers on its port.
fn kubelet(ctx: &Ctx, node: &Value, path: &str) -> crate::exec::ports::Reply {
    let text = |status: u16, body: &str| crate::exec::ports::Reply {
        status,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: body.as_bytes().to_vec(),
    };
    match path.trim_end_matches('/') {
        "/healthz" => text(200, "ok"),
        "/pods" => {
            let node_name = obj::name(node);
            let items: Vec<Value> = ctx
                .store
                .snapshot("pods")
                .iter(None, None)
                .filter(|(_, p)| p["spec"]["nodeName"].as_str() == Some(node_name))
                .map(|(_, p)| (*p).clone())
                .collect();
            let list =
                json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items});
            crate::exec::ports::Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: serde_json::to_vec(&list).unwrap_or_default(),
            }
        }
        _ => text(404, "404 page not found\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_as_upstream() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(split_scheme_name_port("web:80"), Some(("", "web", "80")));
        assert_eq!(
            split_scheme_name_port("https:web:443"),
            Some(("https", "web", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    }

    #[test]
    fn locations_on_the_callers_host_move_under_the_proxy() {
        let prefix = "/api/v1/namespaces/d/pods/web/proxy";
        assert_eq!(
            rewrite_location("http://k:6443/docs/", "k:6443", prefix),
            "http://k:6443/api/v1/namespaces/d/pods/web/proxy/docs/"
        );
        assert_eq!(
            rewrite_location("/docs/", "k:6443", prefix),
            "/api/v1/namespaces/d/pods/web/proxy/docs/"
        );
        assert_eq!(
            rewrite_location("http://elsewhere/x", "k:6443", prefix),
            "http://elsewhere/x"
        );
        assert_eq!(rewrite_location("docs/", "k:6443", prefix), "docs/");
    }

    #[test]
    fn header_names_are_canonical() {
        assert_eq!(canonical("x-forwarded-for"), "X-Forwarded-For");
        assert_eq!(canonical("accept"), "Accept");
    }
}
