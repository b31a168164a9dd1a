//! Which GKE operation a request is: one variant per operation. Both the
//! `locations` and the legacy `zones` paths name the same resources.

use actix_web::http::Method;
use kemu_shared::OwnerScope;

use crate::error::Error;

/// List of the GKE operations the facade serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /v1/projects/{p}/locations/{l}/clusters/{c}`
    GetCluster {
        /// Project and location.
        scope: OwnerScope,
        /// Cluster name.
        name: String,
    },
    /// `GET /v1/projects/{p}/locations/{l}/clusters`
    ListClusters {
        /// Project and location (`-` for every location).
        scope: OwnerScope,
    },
}

impl Endpoint {
    /// Parses method and path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let scope = |project: &str, location: &str| OwnerScope::Gke {
            project: project.to_owned(),
            location: location.to_owned(),
        };
        match (method.as_str(), segments.as_slice()) {
            ("GET", ["v1", "projects", p, "locations" | "zones", l, "clusters"]) => {
                Ok(Endpoint::ListClusters { scope: scope(p, l) })
            }
            ("GET", ["v1", "projects", p, "locations" | "zones", l, "clusters", c]) => {
                Ok(Endpoint::GetCluster {
                    scope: scope(p, l),
                    name: (*c).to_owned(),
                })
            }
            _ => Err(Error::NotFound(format!(
                "The requested URL {path} was not found on this server."
            ))),
        }
    }
}
