//! Cluster operations.

use actix_web::HttpResponse;
use kemu_shared::OwnerScope;
use serde_json::json;

use crate::{Error, Gke, render};

/// clusters.get.
pub fn get(gke: &Gke, scope: &OwnerScope, name: &str) -> Result<HttpResponse, Error> {
    let record = gke.registry.find(scope, name)?;
    Ok(HttpResponse::Ok().json(render::cluster(&record)))
}

/// clusters.list; location `-` lists every location of the project.
pub fn list(gke: &Gke, scope: &OwnerScope) -> Result<HttpResponse, Error> {
    let OwnerScope::Gke { project, location } = scope else {
        return Err(Error::InvalidArgument("not a GKE scope".into()));
    };
    let clusters: Vec<_> = gke
        .registry
        .list(|c| match &c.scope {
            OwnerScope::Gke {
                project: p,
                location: l,
            } => p == project && (location == "-" || l == location),
            _ => false,
        })
        .iter()
        .map(render::cluster)
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "clusters": clusters })))
}
