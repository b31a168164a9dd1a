//! The NetworkPolicy evaluation endpoint: since no packets flow in kemu,
//! `POST /apis/kemu.dev/v1alpha1/networkpolicyevaluations` answers whether
//! traffic from one Pod to another on a port would be allowed by the
//! cluster's NetworkPolicies ([`crate::authz::networkpolicy`]), so policy
//! tests can assert intent. Create-only, like the access reviews: nothing is
//! stored, the reply (HTTP 201) is the request with its `status` filled in.
//!
//! ```yaml
//! apiVersion: kemu.dev/v1alpha1
//! kind: NetworkPolicyEvaluation
//! spec:
//!   from: {namespace: dev, pod: client}
//!   to: {namespace: prod, pod: web}
//!   port: 8080          # a number, or a named container port of `to`
//!   protocol: TCP       # TCP (default), UDP or SCTP
//! ```
//!
//! `status`: `allowed`, and per direction (`egress` of the source,
//! `ingress` of the destination) whether a policy isolates the Pod, whether
//! the traffic passes, and the `namespace/name` of the policies allowing it.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use crate::api::request::{decode_object, header, read_body};
use crate::api::wire;
use crate::authz::networkpolicy::{self, Endpoint, Port};
use crate::engine::{ClusterContext, Engine};
use crate::error::{ApiError, Cause, Target};
use crate::store::{NAMESPACES, ObjectKey, Store};

/// The endpoint's path.
pub const PATH: &str = "/apis/kemu.dev/v1alpha1/networkpolicyevaluations";

const POLICIES: &str = "networkpolicies.networking.k8s.io";

/// Mounts the endpoint.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(PATH, web::post().to(create));
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: String::new(),
            group: "kemu.dev".into(),
            kind: "NetworkPolicyEvaluation".into(),
        },
        kind: "NetworkPolicyEvaluation".into(),
        causes: vec![Cause {
            reason: "FieldValueRequired".into(),
            message: message.into(),
            field: field.into(),
        }],
    }
}

/// The Pod and Namespace `spec.<side>` names.
fn side(store: &dyn Store, body: &Value, side: &str) -> Result<(Value, Value), ApiError> {
    let at = |k: &str| {
        body.pointer(&format!("/spec/{side}/{k}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let namespace = at("namespace").ok_or_else(|| {
        invalid(
            &format!("spec.{side}.namespace"),
            "Required value: the Pod's namespace",
        )
    })?;
    let pod = at("pod").ok_or_else(|| {
        invalid(
            &format!("spec.{side}.pod"),
            "Required value: the Pod's name",
        )
    })?;
    let not_found = |kind: &str, name: &str| {
        ApiError::ObjectNotFound(Target {
            name: name.to_owned(),
            group: String::new(),
            kind: kind.into(),
        })
    };
    let ns = store
        .get(&ObjectKey::new(NAMESPACES, "", &namespace))
        .ok_or_else(|| not_found("namespaces", &namespace))?;
    let pod = store
        .get(&ObjectKey::new("pods", &namespace, &pod))
        .ok_or_else(|| not_found("pods", &pod))?;
    Ok(((*pod).clone(), (*ns).clone()))
}

async fn create(req: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload).await?;
    let mut body = decode_object(header(&req, "content-type"), &body)?;
    let (Some(engine), Some(cluster)) = (
        req.app_data::<web::Data<Engine>>(),
        req.app_data::<web::Data<ClusterContext>>(),
    ) else {
        return Err(ApiError::Internal("engine not mounted".into()));
    };
    let store = engine
        .store(&cluster.id)
        .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
    let (from_pod, from_ns) = side(store.as_ref(), &body, "from")?;
    let (to_pod, to_ns) = side(store.as_ref(), &body, "to")?;
    let port = match &body["spec"]["port"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => {
            return Err(invalid(
                "spec.port",
                "Required value: a port number or name",
            ));
        }
    };
    let protocol = body["spec"]["protocol"]
        .as_str()
        .unwrap_or("TCP")
        .to_owned();
    if !matches!(protocol.as_str(), "TCP" | "UDP" | "SCTP") {
        return Err(ApiError::Invalid {
            target: Target {
                name: String::new(),
                group: "kemu.dev".into(),
                kind: "NetworkPolicyEvaluation".into(),
            },
            kind: "NetworkPolicyEvaluation".into(),
            causes: vec![Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: \"{protocol}\": supported values: \"SCTP\", \"TCP\", \"UDP\""
                ),
                field: "spec.protocol".into(),
            }],
        });
    }
    let policies: Vec<Value> = store
        .snapshot(POLICIES)
        .iter(None, None)
        .map(|(_, p)| (*p).clone())
        .collect();
    let verdict = networkpolicy::evaluate(
        &policies,
        Endpoint {
            pod: &from_pod,
            namespace: &from_ns,
        },
        Endpoint {
            pod: &to_pod,
            namespace: &to_ns,
        },
        &Port { port, protocol },
    );
    body["apiVersion"] = json!("kemu.dev/v1alpha1");
    body["kind"] = json!("NetworkPolicyEvaluation");
    body["status"] = verdict.to_json();
    Ok(wire::respond(HttpResponse::Created(), &body))
}
