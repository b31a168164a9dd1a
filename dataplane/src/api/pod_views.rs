//! `pods/ephemeralcontainers` and `pods/resize`: the whole Pod on GET; a PUT
//! or PATCH whose result may change only some fields of it —
//! `spec.ephemeralContainers` (added, never changed or removed, as `kubectl
//! debug` adds one) or the containers' `resources` and `resizePolicy`
//! (in-place resize, which keeps the Pod's QoS class).

use actix_web::HttpResponse;
use serde_json::{Value, json};

use crate::api::openapi;
use crate::api::patch::{self, PatchType};
use crate::api::request;
use crate::api::subresources::{Ctx, SubresourceError};
use crate::controllers::{kubelet, obj};
use crate::error::{ApiError, Cause, Target};
use crate::store::Preconditions;

/// How a request turns the stored Pod into the proposed one.
type Change = Box<dyn Fn(&Value) -> Result<Value, ApiError>>;

/// Which part of the Pod the subresource writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `ephemeralcontainers`.
    EphemeralContainers,
    /// `resize`.
    Resize,
}

fn invalid(pod: &str, field: &str, reason: &str, message: String) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: pod.to_owned(),
            group: String::new(),
            kind: "pods".into(),
        },
        kind: "Pod".into(),
        causes: vec![Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        }],
    }
}

/// GET, PUT or PATCH on the subresource.
pub fn serve(
    ctx: &Ctx,
    view: View,
    method: &str,
    content_type: &str,
    body: Result<Vec<u8>, ApiError>,
) -> Result<HttpResponse, SubresourceError> {
    if method == "GET" {
        return Ok(HttpResponse::Ok().json(&*ctx.object()?));
    }
    let body = body?;
    let change: Change = match method {
        "PUT" => {
            let pod = request::decode_object(content_type, &body)?;
            Box::new(move |_| Ok(pod.clone()))
        }
        "PATCH" => {
            let kind = PatchType::from_content_type(content_type)
                .ok_or_else(|| ApiError::UnsupportedMediaType(patch::ACCEPTED.into()))?;
            let p = match kind {
                PatchType::Apply => request::decode_yaml(&body)?,
                _ => request::decode_json(&body)?,
            };
            let schema = openapi::definitions().get(&ctx.scope.rt.definition);
            Box::new(move |current| {
                let mut next = current.clone();
                patch::apply(kind, &mut next, &p, schema)?;
                Ok(next)
            })
        }
        _ => return Err(ApiError::MethodNotAllowed.into()),
    };
    let key = ctx.key();
    for _ in 0..8 {
        let current = ctx.object()?;
        let proposed = change(&current)?;
        let next = merge(view, &current, &proposed)?;
        let pre = Preconditions {
            resource_version: proposed["metadata"]["resourceVersion"]
                .as_str()
                .or(current["metadata"]["resourceVersion"].as_str())
                .map(str::to_owned),
            uid: None,
        };
        let pinned = method == "PUT" && proposed["metadata"]["resourceVersion"].is_string();
        match ctx.store.update(&key, next, &pre) {
            Err(ApiError::Conflict { .. }) if !pinned => continue,
            Ok(written) => return Ok(HttpResponse::Ok().json(&*written)),
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::Internal("too many conflicting writes; try again".into()).into())
}

/// The stored Pod with only the view's fields taken from `proposed`.
fn merge(view: View, current: &Value, proposed: &Value) -> Result<Value, ApiError> {
    let name = obj::name(current);
    let mut next = current.clone();
    match view {
        View::EphemeralContainers => {
            let old = current["spec"]["ephemeralContainers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let new = proposed["spec"]["ephemeralContainers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for o in &old {
                let oname = o["name"].as_str().unwrap_or_default();
                match new.iter().find(|n| n["name"] == o["name"]) {
                    None => {
                        return Err(invalid(
                            name,
                            "spec.ephemeralContainers",
                            "FieldValueForbidden",
                            format!(
                                "Forbidden: existing ephemeral containers \"{oname}\" may not be removed"
                            ),
                        ));
                    }
                    Some(n) if n != o => {
                        return Err(invalid(
                            name,
                            "spec.ephemeralContainers",
                            "FieldValueForbidden",
                            format!(
                                "Forbidden: existing ephemeral containers \"{oname}\" may not be changed"
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
            let mut seen: Vec<String> = ["containers", "initContainers"]
                .iter()
                .filter_map(|f| current["spec"][f].as_array())
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect();
            for (i, n) in new.iter().enumerate() {
                let nname = n["name"].as_str().unwrap_or_default();
                if nname.is_empty() {
                    return Err(invalid(
                        name,
                        &format!("spec.ephemeralContainers[{i}].name"),
                        "FieldValueRequired",
                        "Required value".into(),
                    ));
                }
                if seen.iter().any(|s| s == nname) {
                    return Err(invalid(
                        name,
                        &format!("spec.ephemeralContainers[{i}].name"),
                        "FieldValueDuplicate",
                        format!("Duplicate value: \"{nname}\""),
                    ));
                }
                seen.push(nname.to_owned());
                if n["image"].as_str().is_none_or(str::is_empty) {
                    return Err(invalid(
                        name,
                        &format!("spec.ephemeralContainers[{i}].image"),
                        "FieldValueRequired",
                        "Required value".into(),
                    ));
                }
            }
            next["spec"]["ephemeralContainers"] = json!(new);
        }
        View::Resize => {
            let mut rest_old = current["spec"].clone();
            let mut rest_new = proposed["spec"].clone();
            for spec in [&mut rest_old, &mut rest_new] {
                for c in spec["containers"].as_array_mut().into_iter().flatten() {
                    if let Some(m) = c.as_object_mut() {
                        m.remove("resources");
                        m.remove("resizePolicy");
                    }
                }
            }
            if rest_old != rest_new {
                return Err(invalid(
                    name,
                    "spec",
                    "FieldValueForbidden",
                    "Forbidden: only cpu and memory resources are mutable".into(),
                ));
            }
            next["spec"]["containers"] = proposed["spec"]["containers"].clone();
            if kubelet::qos_class(&next) != kubelet::qos_class(current) {
                return Err(invalid(
                    name,
                    "spec",
                    "FieldValueForbidden",
                    "Forbidden: Pod QoS is immutable".into(),
                ));
            }
        }
    }
    Ok(next)
}
