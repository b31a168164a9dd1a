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
use crate::api::wire;
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
        return Ok(wire::respond(HttpResponse::Ok(), &*ctx.object()?));
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
            Ok(written) => return Ok(wire::respond(HttpResponse::Ok(), &written)),
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
            let old_cs = current["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let new_cs = proposed["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for (i, (o, n)) in old_cs.iter().zip(&new_cs).enumerate() {
                if o["name"] != n["name"] {
                    return Err(invalid(
                        name,
                        &format!("spec.containers[{i}].name"),
                        "FieldValueForbidden",
                        "Forbidden: containers may not be renamed or reordered on resize".into(),
                    ));
                }
            }
            // Everything but cpu and memory must stay as it is.
            let strip = |spec: &Value| {
                let mut spec = spec.clone();
                for c in spec["containers"].as_array_mut().into_iter().flatten() {
                    if let Some(m) = c.as_object_mut() {
                        m.remove("resizePolicy");
                    }
                    for section in ["requests", "limits"] {
                        if let Some(r) = c["resources"][section].as_object_mut() {
                            r.remove("cpu");
                            r.remove("memory");
                            if r.is_empty() {
                                c["resources"].as_object_mut().map(|m| m.remove(section));
                            }
                        }
                    }
                    if c["resources"].as_object().is_some_and(|m| m.is_empty())
                        && let Some(m) = c.as_object_mut()
                    {
                        m.remove("resources");
                    }
                }
                spec
            };
            if strip(&current["spec"]) != strip(&proposed["spec"]) {
                return Err(invalid(
                    name,
                    "spec",
                    "FieldValueForbidden",
                    "Forbidden: only cpu and memory resources are mutable".into(),
                ));
            }
            next["spec"]["containers"] = proposed["spec"]["containers"].clone();
            let qos = current["status"]["qosClass"]
                .as_str()
                .unwrap_or_else(|| kubelet::qos_class(current));
            if kubelet::qos_class(&next) != qos {
                return Err(invalid(
                    name,
                    "spec",
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: \"{qos}\": Pod QOS Class may not change as a result of resizing"
                    ),
                ));
            }
            for (i, (o, n)) in old_cs.iter().zip(&new_cs).enumerate() {
                for (section, what) in [("limits", "limits"), ("requests", "requests")] {
                    for res in ["cpu", "memory"] {
                        let had = !o["resources"][section][res].is_null();
                        let has = !n["resources"][section][res].is_null();
                        if had && !has {
                            return Err(invalid(
                                name,
                                &format!("spec.containers[{i}].resources.{section}[{res}]"),
                                "FieldValueForbidden",
                                format!("Forbidden: resource {what} cannot be removed"),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(resources: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "a", "image": "nginx", "resources": resources}]},
            "status": {"qosClass": "Burstable"}})
    }

    #[test]
    fn resize_refuses_as_upstream() {
        let current = pod(
            json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}),
        );
        let ok = merge(
            View::Resize,
            &current,
            &pod(
                json!({"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}),
            ),
        )
        .unwrap();
        assert_eq!(
            ok["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "150m"
        );
        let err = |p: Value| {
            merge(View::Resize, &current, &pod(p))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(json!({"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}))
                .contains("spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"),
        );
        assert!(
            err(
                json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}})
            )
            .contains("resource limits cannot be removed")
        );
        assert!(
            err(
                json!({"requests": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"},
                "limits": {"cpu": "200m", "memory": "64Mi"}})
            )
            .contains("only cpu and memory resources are mutable")
        );
    }

    #[test]
    fn ephemeral_containers_are_only_added() {
        let current = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}],
            "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}});
        let mut gone = current.clone();
        gone["spec"]["ephemeralContainers"] = json!([]);
        assert!(
            merge(View::EphemeralContainers, &current, &gone)
                .unwrap_err()
                .to_string()
                .contains("existing ephemeral containers \"dbg\" may not be removed")
        );
        let mut dup = current.clone();
        dup["spec"]["ephemeralContainers"] =
            json!([{"name": "dbg", "image": "busybox"}, {"name": "a", "image": "x"}]);
        assert!(
            merge(View::EphemeralContainers, &current, &dup)
                .unwrap_err()
                .to_string()
                .contains("Duplicate value: \"a\"")
        );
    }
}
