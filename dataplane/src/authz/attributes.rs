//! What a request asks to do, as upstream's `authorizer.Attributes`, and the
//! mapping from an HTTP request to them exactly as kube-apiserver's
//! `RequestInfoFactory` does it (verb from method and query, `list` vs `get`,
//! `watch`, `deletecollection`, namespace and subresource from the path).

use kemu_shared::UserInfo;

/// The attributes an authorizer decides on (upstream `authorizer.AttributesRecord`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// Kube verb (`get`, `list`, `watch`, `create`, …) for resource requests;
    /// the lowercase HTTP method for non-resource requests.
    pub verb: String,
    /// API group; empty for the core group.
    pub api_group: String,
    /// API version (not used by RBAC, kept for the 403 Status).
    pub api_version: String,
    /// Resource (plural), e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `status`, `log`.
    pub subresource: String,
    /// Namespace; empty for cluster-scoped requests.
    pub namespace: String,
    /// Object name, when the request names one.
    pub name: String,
    /// URL path (what non-resource rules match).
    pub path: String,
    /// Whether this is an API resource request (else a non-resource URL).
    pub resource_request: bool,
}

impl Attributes {
    /// A resource request, e.g. `resource(user, "list", "", "pods", "default")`.
    pub fn resource(
        user: UserInfo,
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
    ) -> Self {
        Attributes {
            user,
            verb: verb.into(),
            api_group: api_group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            resource_request: true,
            ..Default::default()
        }
    }

    /// A non-resource request, e.g. `non_resource(user, "get", "/healthz")`.
    pub fn non_resource(user: UserInfo, verb: &str, path: &str) -> Self {
        Attributes {
            user,
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    /// Sets the object name.
    pub fn with_name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.into();
        self
    }
}

/// Path prefixes of API requests; `api` is the groupless (core) one.
const API_PREFIXES: [&str; 2] = ["api", "apis"];
const GROUPLESS_PREFIX: &str = "api";
/// Legacy verbs that may open the path (`/api/v1/watch/pods`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Subresources of a namespace, not namespaced resources.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Maps an HTTP request to authorization attributes exactly as upstream's
/// `RequestInfoFactory.NewRequestInfo` does. `path` is the URL path (not yet
/// percent-decoded), `query` the raw query string without `?`.
///
/// Paths it cannot parse as an API resource request are non-resource requests,
/// as upstream treats them. A `/watch/` path with nothing after it maps to a
/// resource request with an empty resource, which no rule but `*` matches.
pub fn from_request(user: UserInfo, method: &str, path: &str, query: &str) -> Attributes {
    let path = percent_decode(path);
    let mut info = Attributes {
        user,
        verb: method.to_ascii_lowercase(),
        path: path.clone(),
        ..Default::default()
    };
    let trimmed = path.trim_matches('/');
    let mut parts: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    if parts.len() < 3 || !API_PREFIXES.contains(&parts[0]) {
        return info;
    }
    let prefix = parts.remove(0);
    if prefix != GROUPLESS_PREFIX {
        if parts.len() < 3 {
            return info;
        }
        info.api_group = parts.remove(0).to_owned();
    }
    info.resource_request = true;
    info.api_version = parts.remove(0).to_owned();

    if SPECIAL_VERBS.contains(&parts[0]) {
        if parts.len() < 2 {
            // Upstream errors here; the request is refused as unparseable.
            info.verb = parts[0].to_owned();
            return info;
        }
        info.verb = parts.remove(0).to_owned();
    } else {
        info.verb = match method.to_ascii_uppercase().as_str() {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_owned();
    }

    if parts[0] == "namespaces" && parts.len() > 1 {
        info.namespace = parts[1].to_owned();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts.drain(..2);
        }
    }

    if parts.len() >= 3 && info.verb != "proxy" {
        info.subresource = parts[2].to_owned();
    }
    if parts.len() >= 2 {
        info.name = parts[1].to_owned();
    }
    if !parts.is_empty() {
        info.resource = parts[0].to_owned();
    }

    if info.name.is_empty() && info.verb == "get" {
        let watch = query_values(query, "watch")
            .first()
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
            .unwrap_or(false);
        info.verb = if watch { "watch" } else { "list" }.to_owned();
        // A list or watch of one object by field selector is authorized as
        // naming it, so `resourceNames` rules can allow it.
        if let Some(selector) = query_values(query, "fieldSelector").first()
            && let Some(name) = exact_name(selector)
            && valid_path_segment(&name)
        {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".to_owned();
    }
    // A patch of a namespace itself is not "in" that namespace (so server-side
    // apply may create it), as upstream's requestinfo_test.go pins.
    if info.verb == "patch" && info.resource == "namespaces" && info.subresource.is_empty() {
        info.namespace.clear();
    }
    info
}

/// The value `metadata.name` must equal in a field selector, if it pins one;
/// `None` too when the selector does not parse (every term needs `=`, `==`
/// or `!=`), as upstream ignores unparseable selectors here.
fn exact_name(selector: &str) -> Option<String> {
    let mut name = None;
    for term in selector.split(',') {
        let term = term.trim();
        if term.contains("!=") {
            continue;
        }
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        if field.trim() == "metadata.name" && name.is_none() {
            name = Some(value.trim().to_owned());
        }
    }
    name
}

/// Upstream `path.IsValidPathSegmentName`.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// All values of `key` in a raw query string, percent-decoded.
pub fn query_values(query: &str, key: &str) -> Vec<String> {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(&k.replace('+', " ")) == key)
                .then(|| percent_decode(&v.replace('+', " ")))
        })
        .collect()
}

/// Decodes `%XX` escapes; invalid escapes are kept as they are.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, url: &str) -> Attributes {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        from_request(UserInfo::default(), method, path, query)
    }

    /// (method, url, verb, group, namespace, resource, subresource, name, resource request)
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        bool,
    );

    // The cases of upstream's requestinfo_test.go, plus the name-by-field-selector ones.
    const TABLE: &[Row] = &[
        (
            "GET",
            "/api/v1/namespaces",
            "list",
            "",
            "",
            "namespaces",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/other",
            "get",
            "",
            "other",
            "namespaces",
            "",
            "other",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/other/pods",
            "list",
            "",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo",
            "get",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "HEAD",
            "/api/v1/namespaces/other/pods/foo",
            "get",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        ("GET", "/api/v1/pods", "list", "", "", "pods", "", "", true),
        ("HEAD", "/api/v1/pods", "list", "", "", "pods", "", "", true),
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo",
            "get",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/other/pods",
            "list",
            "",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        // special verbs
        (
            "GET",
            "/api/v1/proxy/namespaces/other/pods/foo",
            "proxy",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "GET",
            "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
            "proxy",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "GET",
            "/api/v1/watch/pods",
            "watch",
            "",
            "",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/pods?watch=true",
            "watch",
            "",
            "",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/pods?watch=false",
            "list",
            "",
            "",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/pods?watch=0",
            "list",
            "",
            "",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/pods?watch=1",
            "watch",
            "",
            "",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/api/v1/watch/namespaces/other/pods",
            "watch",
            "",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        // subresource identification
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo/status",
            "get",
            "",
            "other",
            "pods",
            "status",
            "foo",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo/proxy/subpath",
            "get",
            "",
            "other",
            "pods",
            "proxy",
            "foo",
            true,
        ),
        (
            "PUT",
            "/api/v1/namespaces/other/finalize",
            "update",
            "",
            "other",
            "namespaces",
            "finalize",
            "other",
            true,
        ),
        (
            "PUT",
            "/api/v1/namespaces/other/status",
            "update",
            "",
            "other",
            "namespaces",
            "status",
            "other",
            true,
        ),
        // verb identification
        (
            "PATCH",
            "/api/v1/namespaces/other/pods/foo",
            "patch",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "DELETE",
            "/api/v1/namespaces/other/pods/foo",
            "delete",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        (
            "POST",
            "/api/v1/namespaces/other/pods",
            "create",
            "",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        (
            "DELETE",
            "/api/v1/namespaces/other/pods",
            "deletecollection",
            "",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        (
            "PUT",
            "/api/v1/namespaces/other/pods/foo",
            "update",
            "",
            "other",
            "pods",
            "",
            "foo",
            true,
        ),
        // api group identification
        (
            "POST",
            "/apis/extensions/v1/namespaces/other/pods",
            "create",
            "extensions",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        (
            "POST",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "create",
            "apps",
            "default",
            "deployments",
            "scale",
            "web",
            true,
        ),
        (
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin",
            "get",
            "rbac.authorization.k8s.io",
            "",
            "clusterroles",
            "",
            "admin",
            true,
        ),
        // name by field selector (list/watch of one object)
        (
            "GET",
            "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dtok&watch=true",
            "watch",
            "",
            "ns",
            "secrets",
            "",
            "tok",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name==tok",
            "list",
            "",
            "ns",
            "secrets",
            "",
            "tok",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name!=tok",
            "list",
            "",
            "ns",
            "secrets",
            "",
            "",
            true,
        ),
        (
            "PATCH",
            "/api/v1/namespaces/new-namespace",
            "patch",
            "",
            "",
            "namespaces",
            "",
            "new-namespace",
            true,
        ),
        (
            "DELETE",
            "/api/v1/nodes",
            "deletecollection",
            "",
            "",
            "nodes",
            "",
            "",
            true,
        ),
        (
            "DELETE",
            "/api/v1/namespaces",
            "deletecollection",
            "",
            "",
            "namespaces",
            "",
            "",
            true,
        ),
        (
            "POST",
            "/apis/extensions/v1beta3/namespaces/other/pods",
            "create",
            "extensions",
            "other",
            "pods",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/apis/group/version/resource?fieldSelector=foo=bar",
            "list",
            "group",
            "",
            "resource",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo",
            "list",
            "group",
            "",
            "resource",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true",
            "watch",
            "group",
            "",
            "resource",
            "",
            "",
            true,
        ),
        (
            "GET",
            "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1",
            "watch",
            "group",
            "",
            "resource",
            "",
            "name1",
            true,
        ),
        // non-resource requests
        ("GET", "/", "get", "", "", "", "", "", false),
        ("GET", "", "get", "", "", "", "", "", false),
        ("GET", "/api/version/", "get", "", "", "", "", "", false),
        (
            "GET",
            "/apis/group/version/",
            "get",
            "",
            "",
            "",
            "",
            "",
            false,
        ),
        (
            "GET",
            "/badprefix/version/resource",
            "get",
            "",
            "",
            "",
            "",
            "",
            false,
        ),
        (
            "GET",
            "/apis/version/resource",
            "get",
            "",
            "",
            "",
            "",
            "",
            false,
        ),
        (
            "GET",
            "/apis/extensions/v1beta1/",
            "get",
            "",
            "",
            "",
            "",
            "",
            false,
        ),
        ("GET", "/healthz", "get", "", "", "", "", "", false),
        ("GET", "/api", "get", "", "", "", "", "", false),
        ("GET", "/api/v1", "get", "", "", "", "", "", false),
        ("GET", "/apis", "get", "", "", "", "", "", false),
        ("GET", "/apis/apps", "get", "", "", "", "", "", false),
        ("GET", "/apis/apps/v1", "get", "", "", "", "", "", false),
        ("GET", "/version", "get", "", "", "", "", "", false),
        ("POST", "/logs/x", "post", "", "", "", "", "", false),
        ("GET", "/openapi/v2", "get", "", "", "", "", "", false),
    ];

    #[test]
    fn maps_requests_as_upstream() {
        for &(method, url, verb, group, ns, res, sub, name, rr) in TABLE {
            let a = info(method, url);
            let got = (
                a.verb.as_str(),
                a.api_group.as_str(),
                a.namespace.as_str(),
                a.resource.as_str(),
                a.subresource.as_str(),
                a.name.as_str(),
                a.resource_request,
            );
            assert_eq!(got, (verb, group, ns, res, sub, name, rr), "{method} {url}");
        }
    }

    #[test]
    fn non_resource_keeps_the_path() {
        let a = info("GET", "/openapi/v3/apis/apps/v1");
        assert_eq!(a.path, "/openapi/v3/apis/apps/v1");
        assert_eq!(a.verb, "get");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%3Ab%2f%zz"), "a:b/%zz");
        assert_eq!(query_values("a=1&b=x%20y&b=2", "b"), vec!["x y", "2"]);
    }
}
