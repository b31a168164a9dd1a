//! Azure RBAC (Microsoft.Authorization) at any ARM scope, as `az role
//! assignment create` reaches it: the built-in role definitions (the four
//! "Azure Kubernetes Service RBAC …" roles, with their real ids), looked up
//! by `$filter=roleName eq '…'`, and role assignments (`PUT
//! {scope}/providers/Microsoft.Authorization/roleAssignments/{name}`). On a
//! cluster with `aadProfile.enableAzureRBAC`, the data plane grants what the
//! assignments on the cluster or its namespaces grant (read through the
//! token authenticator's access configuration).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::{Value, json};

use crate::Aks;
use crate::error::Error;

/// The built-in roles served: (name, id, description).
pub const BUILTIN_ROLES: [(&str, &str, &str); 4] = [
    (
        "Azure Kubernetes Service RBAC Cluster Admin",
        "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b",
        "Lets you manage all resources in the cluster.",
    ),
    (
        "Azure Kubernetes Service RBAC Admin",
        "3498e952-d568-435e-9b2c-8d77e338d7f7",
        "Lets you manage all resources under cluster/namespace, except update or delete resource quotas and namespaces.",
    ),
    (
        "Azure Kubernetes Service RBAC Writer",
        "a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb",
        "Allows read/write access to most objects in a namespace.This role does not allow viewing or modifying roles or role bindings. However, this role allows accessing Secrets and running Pods as any ServiceAccount in the namespace, so it can be used to gain the API access levels of any ServiceAccount in the namespace. Applying this role at cluster scope will give access across all namespaces.",
    ),
    (
        "Azure Kubernetes Service RBAC Reader",
        "7f6c6a51-bcf8-42ba-9220-52d62157d7db",
        "Allows read-only access to see most objects in a namespace. It does not allow viewing roles or role bindings. This role does not allow viewing Secrets, since reading the contents of Secrets enables access to ServiceAccount credentials in the namespace, which would allow API access as any ServiceAccount in the namespace (a form of privilege escalation). Applying this role at cluster scope will give access across all namespaces.",
    ),
];

/// The subscription part of a scope (`/subscriptions/S/...`), or "".
fn subscription_of(scope: &str) -> &str {
    let mut parts = scope.trim_start_matches('/').split('/');
    match (parts.next(), parts.next()) {
        (Some(s), Some(id)) if s.eq_ignore_ascii_case("subscriptions") => id,
        _ => "",
    }
}

fn definition(scope: &str, (name, id, description): (&str, &str, &str)) -> Value {
    let subscription = subscription_of(scope);
    json!({
        "id": format!("/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{id}"),
        "name": id,
        "type": "Microsoft.Authorization/roleDefinitions",
        "properties": {
            "roleName": name,
            "type": "BuiltInRole",
            "description": description,
            "assignableScopes": ["/"],
            "permissions": [{"actions": [], "notActions": [], "dataActions": [format!("Microsoft.ContainerService/managedClusters/*")], "notDataActions": []}],
            "createdOn": "2020-07-02T00:00:00.0000000Z",
            "updatedOn": "2020-07-02T00:00:00.0000000Z",
        },
    })
}

/// The role name of a role definition id (its last segment), if built in.
pub fn role_name(definition_id: &str) -> Option<&'static str> {
    let id = definition_id.rsplit('/').next()?;
    BUILTIN_ROLES
        .iter()
        .find(|(_, guid, _)| guid.eq_ignore_ascii_case(id))
        .map(|(name, _, _)| *name)
}

/// `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `$filter` of a query string, decoded.
fn filter(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "$filter" || *k == "%24filter")
        .map(|(_, v)| percent_decode(&v.replace('+', " ")))
}

/// GET `{scope}/providers/Microsoft.Authorization/roleDefinitions`,
/// optionally `$filter=roleName eq 'NAME'`.
pub fn list_definitions(scope: &str, query: &str) -> HttpResponse {
    let wanted = filter(query).and_then(|f| {
        f.trim()
            .strip_prefix("roleName eq ")
            .map(|n| n.trim().trim_matches('\'').to_owned())
    });
    let value: Vec<Value> = BUILTIN_ROLES
        .iter()
        .filter(|(name, _, _)| {
            wanted
                .as_deref()
                .is_none_or(|w| w.eq_ignore_ascii_case(name))
        })
        .map(|r| definition(scope, *r))
        .collect();
    HttpResponse::Ok().json(json!({ "value": value }))
}

/// GET `{scope}/providers/Microsoft.Authorization/roleDefinitions/{id}`.
pub fn get_definition(scope: &str, id: &str) -> Result<HttpResponse, Error> {
    BUILTIN_ROLES
        .iter()
        .find(|(_, guid, _)| guid.eq_ignore_ascii_case(id))
        .map(|r| HttpResponse::Ok().json(definition(scope, *r)))
        .ok_or_else(|| {
            Error::BadRequest(format!(
                "The specified role definition with ID '{id}' does not exist."
            ))
        })
}

fn assignment_id(scope: &str, name: &str) -> String {
    format!(
        "{}/providers/Microsoft.Authorization/roleAssignments/{name}",
        scope.trim_end_matches('/')
    )
}

/// PUT `{scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
pub fn put_assignment(
    aks: &Aks,
    scope: &str,
    name: &str,
    body: &Value,
) -> Result<HttpResponse, Error> {
    let props = &body["properties"];
    let definition_id = props["roleDefinitionId"].as_str().unwrap_or_default();
    if role_name(definition_id).is_none() {
        return Err(Error::BadRequest(format!(
            "The specified role definition with ID '{}' does not exist.",
            definition_id.rsplit('/').next().unwrap_or_default()
        )));
    }
    let principal = props["principalId"].as_str().unwrap_or_default();
    if uuid::Uuid::parse_str(principal).is_err() {
        return Err(Error::BadRequest(format!(
            "The value '{principal}' is not a valid principal id."
        )));
    }
    let now = aks
        .registry
        .clock()
        .now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let assignment = json!({
        "id": assignment_id(scope, name),
        "name": name,
        "type": "Microsoft.Authorization/roleAssignments",
        "properties": {
            "roleDefinitionId": definition_id,
            "principalId": principal,
            "principalType": props["principalType"].as_str().unwrap_or("User"),
            "scope": scope,
            "condition": null,
            "conditionVersion": null,
            "createdOn": now,
            "updatedOn": now,
            "createdBy": null,
            "updatedBy": null,
            "delegatedManagedIdentityResourceId": null,
            "description": props.get("description").cloned().unwrap_or(Value::Null),
        },
    });
    let key = assignment_id(scope, name).to_ascii_lowercase();
    aks.state
        .role_assignments
        .lock()
        .insert(key, assignment.clone());
    Ok(HttpResponse::build(StatusCode::CREATED).json(assignment))
}

/// GET `{scope}/providers/Microsoft.Authorization/roleAssignments`: the
/// assignments at or below `scope`.
pub fn list_assignments(aks: &Aks, scope: &str) -> HttpResponse {
    let prefix = scope.trim_end_matches('/').to_ascii_lowercase();
    let value: Vec<Value> = aks
        .state
        .role_assignments
        .lock()
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, v)| v.clone())
        .collect();
    HttpResponse::Ok().json(json!({ "value": value }))
}

/// DELETE `{scope}/providers/Microsoft.Authorization/roleAssignments/{name}`:
/// 200 with the removed assignment, 204 when there was none.
pub fn delete_assignment(aks: &Aks, scope: &str, name: &str) -> HttpResponse {
    let key = assignment_id(scope, name).to_ascii_lowercase();
    match aks.state.role_assignments.lock().remove(&key) {
        Some(v) => HttpResponse::Ok().json(v),
        None => HttpResponse::NoContent().finish(),
    }
}

/// Every assignment, as the data plane reads them: role name, principal,
/// principal type and scope.
pub fn assignments_for_dataplane(aks_assignments: &[Value]) -> Value {
    let out: Vec<Value> = aks_assignments
        .iter()
        .filter_map(|a| {
            let p = &a["properties"];
            Some(json!({
                "roleName": role_name(p["roleDefinitionId"].as_str()?)?,
                "principalId": p["principalId"],
                "principalType": p["principalType"],
                "scope": p["scope"],
            }))
        })
        .collect();
    json!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_roles_resolve_by_name_and_id() {
        assert_eq!(
            role_name(
                "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/7f6c6a51-bcf8-42ba-9220-52d62157d7db"
            ),
            Some("Azure Kubernetes Service RBAC Reader")
        );
        assert_eq!(role_name("nope"), None);
        assert_eq!(
            filter(
                "api-version=2022-04-01&$filter=roleName%20eq%20%27Azure%20Kubernetes%20Service%20RBAC%20Reader%27"
            ),
            Some("roleName eq 'Azure Kubernetes Service RBAC Reader'".into())
        );
        assert_eq!(
            subscription_of("/subscriptions/abc/resourcegroups/x"),
            "abc"
        );
    }
}
