//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/{group}`, `/apis/{group}/{version}`,
//! legacy and aggregated (`apidiscovery.k8s.io/v2`, chosen by the Accept
//! header and answered with its Content-Type; kube-apiserver 1.34 no longer
//! serves `v2beta1`, whose askers get the legacy form), all built
//! from the cluster's live resource registry (built-ins plus its CRDs).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use crate::api::wire;
use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;
use crate::resources::{ApiGroup, ResourceRegistry, ResourceType};

/// The messages the legacy documents are written as.
const META_APIVERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
const META_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";

/// An aggregated discovery version a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregated {
    /// `apidiscovery.k8s.io/v2`.
    V2,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Aggregated::V2 => "v2",
        }
    }

    /// The message its documents are written as.
    fn message(self) -> &'static str {
        match self {
            Aggregated::V2 => "io.k8s.api.apidiscovery.v2.APIGroupDiscoveryList",
        }
    }

    /// The Content-Type answering it.
    pub fn content_type(self) -> String {
        format!(
            "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
            self.version()
        )
    }
}

/// The first aggregated discovery format the Accept header lists, if any
/// (clients list them in order of preference, legacy JSON last).
pub fn negotiate(accept: &str) -> Option<Aggregated> {
    accept.split(',').find_map(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        let wants = |p: &str| params.contains(&p);
        if !(wants("g=apidiscovery.k8s.io") && wants("as=APIGroupDiscoveryList")) {
            return None;
        }
        wants("v=v2").then_some(Aggregated::V2)
    })
}

fn accept(req: &HttpRequest) -> &str {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// `GET /api`: `APIVersions`, or the core group as an `APIGroupDiscoveryList`.
pub async fn core_versions(
    req: HttpRequest,
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let reg = &engine.resources_of(&cluster.id);
    let core: Vec<ApiGroup> = reg
        .groups()
        .into_iter()
        .filter(|g| g.name.is_empty())
        .collect();
    if let Some(agg) = negotiate(accept(&req)) {
        return Ok(aggregated_response(agg, reg, &core));
    }
    let host = req.connection_info().host().to_owned();
    let versions = json!({
        "kind": "APIVersions",
        "versions": core.iter().flat_map(|g| g.versions.clone()).collect::<Vec<_>>(),
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": host }],
    });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(wire::to_vec_as(&versions, META_APIVERSIONS)))
}

/// `GET /apis`: `APIGroupList`, or every named group as an `APIGroupDiscoveryList`.
pub async fn groups(
    req: HttpRequest,
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let reg = &engine.resources_of(&cluster.id);
    let named: Vec<ApiGroup> = reg
        .groups()
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .collect();
    if let Some(agg) = negotiate(accept(&req)) {
        return Ok(aggregated_response(agg, reg, &named));
    }
    // The list's groups carry no type meta of their own.
    let groups: Vec<Value> = named
        .iter()
        .map(|g| {
            let mut g = api_group(g);
            if let Some(m) = g.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            g
        })
        .collect();
    Ok(wire::respond(
        HttpResponse::Ok(),
        &json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }),
    ))
}

/// `GET /api/v1`.
pub async fn core_resources(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    resource_list(&engine.resources_of(&cluster.id), "", "v1")
}

/// `GET /apis/{group}`.
pub async fn group(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let group = engine
        .resources_of(&cluster.id)
        .group(&path)
        .filter(|g| !g.name.is_empty());
    Ok(match group {
        Some(group) => wire::respond(HttpResponse::Ok(), &api_group(&group)),
        None => page_not_found(),
    })
}

/// `GET /apis/{group}/{version}`.
pub async fn group_resources(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (group, version) = path.into_inner();
    let reg = engine.resources_of(&cluster.id);
    if group.is_empty() || reg.group(&group).is_none() {
        return Ok(page_not_found());
    }
    resource_list(&reg, &group, &version)
}

/// What kube-apiserver answers for a group it does not serve: its mux's
/// plain-text 404, not a Status.
fn page_not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .body("404 page not found\n")
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// An `APIGroup`.
pub fn api_group(g: &ApiGroup) -> Value {
    let gv = |v: &str| json!({ "groupVersion": group_version(&g.name, v), "version": v });
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": g.name,
        "versions": g.versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(g.preferred()),
    })
}

fn resource_list(
    reg: &ResourceRegistry,
    group: &str,
    version: &str,
) -> Result<HttpResponse, ApiError> {
    let body = api_resource_list(reg, group, version).ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(wire::to_vec_as(&body, META_RESOURCE_LIST)))
}

/// Upstream's `StorageVersionHash` of a stored type: the first 8 bytes of
/// the SHA-256 of `group/version/kind` of the version it is stored in,
/// base64. Types with no storage of their own (bindings, reviews,
/// componentstatuses) have none.
fn storage_version_hash(t: &crate::resources::ResourceType) -> Option<String> {
    use base64::Engine as _;
    if !t.verbs.iter().any(|v| v == "get") || (t.group.is_empty() && t.kind == "ComponentStatus") {
        return None;
    }
    // kube-apiserver 1.34's storage versions where they are not the served one.
    let (group, version) = match (t.group.as_str(), t.kind.as_str()) {
        (_, _) if t.custom.is_some() => (
            t.group.as_str(),
            t.custom.as_ref().map_or("", |c| c.storage_version.as_str()),
        ),
        ("autoscaling", "HorizontalPodAutoscaler") => ("autoscaling", "v2"),
        ("" | "events.k8s.io", "Event") => ("", "v1"),
        ("storage.k8s.io", "VolumeAttributesClass") => ("storage.k8s.io", "v1beta1"),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => ("apiextensions.k8s.io", "v1beta1"),
        ("resource.k8s.io", _) => ("resource.k8s.io", "v1beta2"),
        (g, _) => (g, t.version.as_str()),
    };
    let gvk = format!("{group}/{version}/{}", t.kind);
    let digest = ring::digest::digest(&ring::digest::SHA256, gvk.as_bytes());
    Some(base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8]))
}

/// The `APIResourceList` of one group-version, subresources included
/// (`deployments/scale`), or `None` if it is not served.
pub fn api_resource_list(reg: &ResourceRegistry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for t in reg.in_group_version(group, version) {
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": t.verbs,
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        if let Some(hash) = storage_version_hash(t) {
            r["storageVersionHash"] = json!(hash);
        }
        resources.push(r);
        for s in &t.subresources {
            let mut r = json!({
                "name": format!("{}/{}", t.plural, s.name),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": s.kind,
                "verbs": s.verbs,
            });
            if s.api_version != t.api_version() {
                let (g, v) = s
                    .api_version
                    .split_once('/')
                    .unwrap_or(("", &s.api_version));
                r["group"] = json!(g);
                r["version"] = json!(v);
            }
            resources.push(r);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let mut list = json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    });
    // The legacy core group's list is written without an apiVersion.
    if group.is_empty()
        && let Some(m) = list.as_object_mut()
    {
        m.remove("apiVersion");
    }
    Some(list)
}

fn aggregated_response(
    agg: Aggregated,
    reg: &ResourceRegistry,
    groups: &[ApiGroup],
) -> HttpResponse {
    let body = wire::to_vec_as(&aggregated(agg, reg, groups), agg.message());
    HttpResponse::Ok()
        .content_type(agg.content_type())
        .body(body)
}

/// An `APIGroupDiscoveryList` of `groups`.
pub fn aggregated(agg: Aggregated, reg: &ResourceRegistry, groups: &[ApiGroup]) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let versions: Vec<Value> = g
                .versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = reg
                        .in_group_version(&g.name, v)
                        .map(|t| discovery_resource(t))
                        .collect();
                    json!({ "version": v, "resources": resources, "freshness": "Current" })
                })
                .collect();
            // A zero creationTimestamp is left out (`omitzero`).
            let metadata = if g.name.is_empty() {
                json!({})
            } else {
                json!({ "name": g.name })
            };
            json!({ "metadata": metadata, "versions": versions })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{}", agg.version()),
        "metadata": {},
        "items": items,
    })
}

fn discovery_resource(t: &ResourceType) -> Value {
    // Upstream leaves group and version empty when they are the resource's own.
    let kind_in = |api_version: &str, kind: &str| {
        if api_version == t.api_version() {
            json!({ "group": "", "version": "", "kind": kind })
        } else {
            let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
            json!({ "group": g, "version": v, "kind": kind })
        }
    };
    let mut r = json!({
        "resource": t.plural,
        "responseKind": kind_in(&t.api_version(), &t.kind),
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": t.verbs,
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if !t.subresources.is_empty() {
        r["subresources"] = t
            .subresources
            .iter()
            .map(|s| {
                json!({
                    "subresource": s.name,
                    "responseKind": kind_in(&s.api_version, &s.kind),
                    "verbs": s.verbs,
                })
            })
            .collect();
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    #[test]
    fn accept_header_chooses_the_format() {
        assert_eq!(negotiate(KUBECTL_ACCEPT), Some(Aggregated::V2));
        assert_eq!(
            negotiate("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            None
        );
        assert_eq!(negotiate("application/json, */*"), None);
        assert_eq!(
            Aggregated::V2.content_type(),
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
    }

    #[test]
    fn resource_lists_carry_subresources() {
        let reg = ResourceRegistry::builtin();
        let list = api_resource_list(&reg, "apps", "v1").unwrap();
        let scale = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
        assert!(api_resource_list(&reg, "apps", "v1beta9").is_none());
    }

    #[test]
    fn aggregated_lists_every_group() {
        let reg = ResourceRegistry::builtin();
        let named: Vec<ApiGroup> = reg
            .groups()
            .into_iter()
            .filter(|g| !g.name.is_empty())
            .collect();
        let doc = aggregated(Aggregated::V2, &reg, &named);
        let apps = doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == "apps")
            .unwrap();
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deploy["shortNames"][0], "deploy");
        assert_eq!(
            deploy["responseKind"],
            json!({ "group": "", "version": "", "kind": "Deployment" })
        );
        assert_eq!(
            deploy["subresources"][0]["responseKind"],
            json!({ "group": "autoscaling", "version": "v1", "kind": "Scale" })
        );
        assert_eq!(deploy["scope"], "Namespaced");
        let autoscaling = doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == "autoscaling")
            .unwrap();
        assert_eq!(
            autoscaling["versions"][0]["version"], "v2",
            "preferred first"
        );
    }
}
