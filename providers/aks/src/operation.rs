//! Long-running operations as ARM runs them: the write answers at once with an
//! `Azure-AsyncOperation` (and for deletes and actions a `Location`) URL; the
//! client polls it until `Succeeded`. Completion follows the clock: by default
//! an operation is done on its first poll.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, HttpResponseBuilder};
use serde_json::{Value, json};

use crate::state::Operation;
use crate::{Aks, Ctx, Error};

/// Starts an operation that completes after the configured provisioning delay.
pub fn start(aks: &Aks) -> Operation {
    let now = aks.registry.clock().now();
    let delay = chrono::Duration::from_std(aks.config.provisioning_delay).unwrap_or_default();
    let op = Operation {
        id: uuid::Uuid::new_v4().to_string(),
        start: now,
        done_at: now + delay,
        failure: None,
    };
    aks.state
        .operations
        .lock()
        .insert(op.id.clone(), op.clone());
    op
}

/// A response for a container service write in progress: `status` with the
/// operation URLs; `with_location` adds `Location` (deletes and actions).
pub fn accepted(
    ctx: &Ctx,
    status: StatusCode,
    subscription: &str,
    location: &str,
    op: &Operation,
    with_location: bool,
) -> HttpResponseBuilder {
    let prefix = format!(
        "{}/subscriptions/{subscription}/providers/Microsoft.ContainerService/locations/{location}",
        ctx.base
    );
    let mut resp = HttpResponse::build(status);
    resp.insert_header((
        "Azure-AsyncOperation",
        format!(
            "{prefix}/operations/{}?api-version={}",
            op.id, ctx.api_version
        ),
    ));
    if with_location {
        resp.insert_header((
            "Location",
            format!(
                "{prefix}/operationresults/{}?api-version={}",
                op.id, ctx.api_version
            ),
        ));
    }
    resp.insert_header(("Retry-After", "1"));
    resp
}

fn find(aks: &Aks, id: &str) -> Result<Operation, Error> {
    aks.state
        .operations
        .lock()
        .get(id)
        .cloned()
        .ok_or_else(|| Error::OperationNotFound(id.to_owned()))
}

/// `GET …/locations/{l}/operations/{id}`: the operation's status.
pub fn status(aks: &Aks, id: &str) -> Result<HttpResponse, Error> {
    let op = find(aks, id)?;
    let now = aks.registry.clock().now();
    let status = op.status(now);
    let mut body = json!({
        "id": op.id,
        "name": op.id,
        "status": status,
        "startTime": op.start.to_rfc3339(),
    });
    if status != "InProgress" {
        body["endTime"] = json!(op.done_at.to_rfc3339());
    }
    if let Some((code, message)) = &op.failure {
        body["error"] = json!({ "code": code, "message": message });
    }
    let mut resp = HttpResponse::Ok();
    if status == "InProgress" {
        resp.insert_header(("Retry-After", "1"));
    }
    Ok(resp.json(body))
}

/// `GET …/operationresults/{id}` (the `Location` URL): 202 while running, 204
/// when done, ARM's error when failed. `location` is where to poll again.
pub fn result(aks: &Aks, id: &str, poll_again: &str) -> Result<HttpResponse, Error> {
    let op = find(aks, id)?;
    match op.status(aks.registry.clock().now()) {
        "InProgress" => Ok(HttpResponse::Accepted()
            .insert_header(("Location", poll_again))
            .insert_header(("Retry-After", "1"))
            .finish()),
        "Failed" => {
            let (code, message) = op.failure.unwrap_or_default();
            Ok(HttpResponse::Ok().json(json!({ "error": { "code": code, "message": message } })))
        }
        _ => Ok(HttpResponse::NoContent().finish()),
    }
}

/// A resource group deletion: 202 with a `Location` to poll, as ARM answers it.
pub fn group_accepted(ctx: &Ctx, subscription: &str, op: &Operation) -> HttpResponse {
    HttpResponse::Accepted()
        .insert_header((
            "Location",
            format!(
                "{}/subscriptions/{subscription}/operationresults/{}?api-version={}",
                ctx.base, op.id, ctx.api_version
            ),
        ))
        .insert_header(("Retry-After", "1"))
        .finish()
}

/// The body of a write in progress shows the transitional state even when the
/// operation will already be done at the first poll, as ARM answers.
pub fn in_progress(mut body: Value, state: &str) -> Value {
    body["properties"]["provisioningState"] = json!(state);
    body
}
