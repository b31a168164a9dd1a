//! Cluster operations.

use actix_web::HttpResponse;
use kemu_shared::OwnerScope;
use serde_json::json;

use crate::{Eks, Error, render};

/// DescribeCluster.
pub fn describe(eks: &Eks, scope: &OwnerScope, name: &str) -> Result<HttpResponse, Error> {
    let record = eks.registry.find(scope, name)?;
    Ok(HttpResponse::Ok().json(json!({ "cluster": render::cluster(&record) })))
}

/// ListClusters.
pub fn list(eks: &Eks, scope: &OwnerScope) -> Result<HttpResponse, Error> {
    let names: Vec<String> = eks
        .registry
        .list(|c| &c.scope == scope)
        .into_iter()
        .map(|c| c.name)
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "clusters": names })))
}
