//! Managed cluster operations.

use actix_web::HttpResponse;
use kemu_shared::OwnerScope;

use crate::{Aks, Error, render};

/// managedClusters.get.
pub fn get(
    aks: &Aks,
    subscription: &str,
    resource_group: &str,
    name: &str,
) -> Result<HttpResponse, Error> {
    let scope = OwnerScope::Aks {
        subscription: subscription.to_owned(),
        resource_group: resource_group.to_owned(),
        location: String::new(),
    };
    let record = aks
        .registry
        .find(&scope, name)
        .map_err(|_| Error::ResourceNotFound {
            kind: "Microsoft.ContainerService/managedClusters".into(),
            name: name.to_owned(),
            resource_group: resource_group.to_owned(),
        })?;
    Ok(HttpResponse::Ok().json(render::managed_cluster(&record)))
}
