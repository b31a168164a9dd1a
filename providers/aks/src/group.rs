//! Resource groups (`Microsoft.Resources/resourceGroups`): clusters live in one,
//! and deleting it deletes them.

use actix_web::HttpResponse;
use kemu_shared::OwnerScope;
use serde_json::{Value, json};

use crate::router::GroupPath;
use crate::state::{ResourceGroup, group_key};
use crate::{Aks, Ctx, Error, operation};

fn render(g: &ResourceGroup) -> Value {
    let mut v = json!({
        "id": format!("/subscriptions/{}/resourceGroups/{}", g.subscription, g.name),
        "name": g.name,
        "type": "Microsoft.Resources/resourceGroups",
        "location": g.location,
        "tags": g.tags,
        "properties": { "provisioningState": "Succeeded" },
    });
    if let Some(m) = &g.managed_by {
        v["managedBy"] = json!(m);
    }
    v
}

/// The resource group, or ARM's `ResourceGroupNotFound`.
pub fn find(aks: &Aks, subscription: &str, name: &str) -> Result<ResourceGroup, Error> {
    aks.state
        .groups
        .lock()
        .get(&group_key(subscription, name))
        .cloned()
        .ok_or_else(|| Error::ResourceGroupNotFound(name.to_owned()))
}

/// `PUT`: 201 when new, 200 when it existed (tags replaced, casing kept).
pub fn put(aks: &Aks, path: &GroupPath, body: &Value) -> Result<HttpResponse, Error> {
    let location = body["location"]
        .as_str()
        .filter(|l| !l.is_empty())
        .ok_or(Error::LocationRequired)?;
    crate::location::for_group(location)?;
    let tags = match &body["tags"] {
        Value::Null => json!({}),
        t @ Value::Object(_) => t.clone(),
        _ => {
            return Err(Error::InvalidRequestContent(
                "tags must be an object".into(),
            ));
        }
    };
    let key = group_key(&path.subscription, &path.resource_group);
    let mut groups = aks.state.groups.lock();
    let (created, group) = match groups.get_mut(&key) {
        Some(g) => {
            let same =
                |a: &str, b: &str| a.replace(' ', "").eq_ignore_ascii_case(&b.replace(' ', ""));
            if !same(&g.location, location) {
                return Err(Error::InvalidResourceGroupLocation {
                    given: location.to_owned(),
                    existing: g.location.clone(),
                });
            }
            g.tags = tags;
            (false, g.clone())
        }
        None => {
            let g = ResourceGroup {
                subscription: path.subscription.clone(),
                name: path.resource_group.clone(),
                location: location.to_owned(),
                tags,
                managed_by: body["managedBy"].as_str().map(str::to_owned),
            };
            groups.insert(key, g.clone());
            (true, g)
        }
    };
    let body = render(&group);
    Ok(if created {
        HttpResponse::Created().json(body)
    } else {
        HttpResponse::Ok().json(body)
    })
}

/// `GET`.
pub fn get(aks: &Aks, path: &GroupPath) -> Result<HttpResponse, Error> {
    let g = find(aks, &path.subscription, &path.resource_group)?;
    Ok(HttpResponse::Ok().json(render(&g)))
}

/// `HEAD`: 204 if it exists, 404 if not, no body either way.
pub fn check(aks: &Aks, path: &GroupPath) -> HttpResponse {
    match find(aks, &path.subscription, &path.resource_group) {
        Ok(_) => HttpResponse::NoContent().finish(),
        Err(_) => HttpResponse::NotFound().finish(),
    }
}

/// `GET /subscriptions/{s}/resourcegroups`.
pub fn list(aks: &Aks, subscription: &str) -> HttpResponse {
    let sub = subscription.to_ascii_lowercase();
    let value: Vec<Value> = aks
        .state
        .groups
        .lock()
        .iter()
        .filter(|((s, _), _)| *s == sub)
        .map(|(_, g)| render(g))
        .collect();
    HttpResponse::Ok().json(json!({ "value": value }))
}

/// `DELETE`: a long-running operation that deletes every cluster in the group.
pub fn delete(aks: &Aks, ctx: &Ctx, path: &GroupPath) -> Result<HttpResponse, Error> {
    let group = find(aks, &path.subscription, &path.resource_group)?;
    let key = group_key(&path.subscription, &path.resource_group);
    let scope_key = OwnerScope::Aks {
        subscription: group.subscription.clone(),
        resource_group: group.name.clone(),
        location: String::new(),
    }
    .identity_key();
    for cluster in aks.registry.list(|c| c.scope.identity_key() == scope_key) {
        aks.registry
            .delete(&cluster.id, aks.config.provisioning_delay)?;
    }
    aks.state.groups.lock().remove(&key);
    let op = operation::start(aks);
    Ok(operation::group_accepted(ctx, &path.subscription, &op))
}
