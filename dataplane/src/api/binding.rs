//! `pods/binding` (a Binding POST): assigns an unbound Pod to a Node, as the
//! scheduler does through the apiserver; a bound or deleting Pod is a 409.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::{Value, json};

use crate::api::subresources::{self, Ctx, SubresourceError};
use crate::controllers::obj;
use crate::error::{ApiError, Cause, Target};
use crate::store::Preconditions;

fn invalid(kind: &str, value: &str, cause: Cause) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: value.to_owned(),
            group: String::new(),
            kind: kind.to_owned(),
        },
        kind: kind.to_owned(),
        causes: vec![cause],
    }
}

fn conflict(name: &str, message: String) -> ApiError {
    ApiError::Conflict {
        target: Target {
            name: name.to_owned(),
            group: String::new(),
            kind: "pods/binding".into(),
        },
        message,
    }
}

/// POST `pods/{name}/binding`.
pub fn serve(
    ctx: &Ctx,
    method: &str,
    body: Result<Value, ApiError>,
) -> Result<HttpResponse, SubresourceError> {
    let body = subresources::post_body(method, body)?;
    let name = ctx.scope.name.clone().unwrap_or_default();
    subresources::check_body_name(&body, &name, "Binding")?;
    let kind = body["target"]["kind"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != "Node" {
        return Err(invalid(
            "binding.target.kind",
            kind,
            Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{kind}\": must be empty or 'Node'"),
                field: "target.kind".into(),
            },
        )
        .into());
    }
    let node = body["target"]["name"].as_str().unwrap_or_default();
    if node.is_empty() {
        return Err(invalid(
            "binding.target.name",
            "",
            Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "target.name".into(),
            },
        )
        .into());
    }
    let pod = ctx.object()?;
    if obj::deleting(&pod) {
        return Err(conflict(
            &name,
            format!("pod {name} is being deleted, cannot be assigned to a host"),
        )
        .into());
    }
    if let Some(bound) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Err(conflict(
            &name,
            format!("pod {name} is already assigned to node \"{bound}\""),
        )
        .into());
    }
    let mut next = (*pod).clone();
    next["spec"]["nodeName"] = json!(node);
    for (k, v) in body["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
    {
        next["metadata"]["annotations"][k] = v.clone();
    }
    let now = obj::fmt_time(ctx.now());
    let mut conds: Vec<Value> = next["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    obj::set_condition(
        &mut conds,
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
        &now,
        false,
    );
    next["status"]["conditions"] = json!(conds);
    let pre = Preconditions {
        resource_version: pod["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        uid: body["metadata"]["uid"].as_str().map(str::to_owned),
    };
    ctx.store.update(&ctx.key(), next, &pre)?;
    Ok(subresources::success(StatusCode::CREATED))
}
