//! Which ARM operation a request is: one variant per operation. ARM matches
//! path segments without case.

use actix_web::http::Method;

use crate::error::Error;

/// List of the ARM operations the facade serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters/{n}`
    GetManagedCluster {
        /// Subscription id.
        subscription: String,
        /// Resource group.
        resource_group: String,
        /// Cluster name.
        name: String,
    },
}

impl Endpoint {
    /// Parses method and path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let lower: Vec<String> = segments.iter().map(|s| s.to_ascii_lowercase()).collect();
        let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
        match (method.as_str(), lower.as_slice()) {
            (
                "GET",
                [
                    "subscriptions",
                    _,
                    "resourcegroups",
                    _,
                    "providers",
                    "microsoft.containerservice",
                    "managedclusters",
                    _,
                ],
            ) => Ok(Endpoint::GetManagedCluster {
                subscription: segments[1].to_owned(),
                resource_group: segments[3].to_owned(),
                name: segments[7].to_owned(),
            }),
            _ => Err(Error::NoRoute(path.to_owned())),
        }
    }
}

/// ARM refuses a request without `api-version`.
pub fn require_api_version(query: &str) -> Result<String, Error> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("api-version"))
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
        .ok_or(Error::MissingApiVersion)
}
