//! `pods/exec`, `pods/attach`, `pods/portforward`: kemu runs no containers,
//! so no stream can be opened. The WebSocket upgrade (GET, `v5.channel.k8s.io`)
//! gets a 400 `Status`, which kubectl takes as an upgrade failure and falls
//! back to SPDY; the SPDY POST gets the same `Status`, which kubectl prints
//! as `Error from server (BadRequest): …` and exits non-zero. The Pod and
//! container are checked first, so a typo still gets upstream's 404 or 400.

use actix_web::{HttpRequest, HttpResponse};

use crate::api::subresources::{Ctx, SubresourceError};
use crate::controllers::obj;
use crate::error::ApiError;

/// Which stream was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `exec`.
    Exec,
    /// `attach`.
    Attach,
    /// `portforward`.
    PortForward,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Exec => "exec",
            Stream::Attach => "attach",
            Stream::PortForward => "port-forward",
        }
    }
}

/// GET (WebSocket) or POST (SPDY) on a streaming subresource.
pub fn serve(
    ctx: &Ctx,
    stream: Stream,
    req: &HttpRequest,
) -> Result<HttpResponse, SubresourceError> {
    if !matches!(req.method().as_str(), "GET" | "POST") {
        return Err(ApiError::MethodNotAllowed.into());
    }
    let pod = ctx.object()?;
    let name = obj::name(&pod).to_owned();
    let container = match stream {
        Stream::PortForward => None,
        _ => Some(match ctx.params.get("container") {
            Some(c) => {
                let known = ["containers", "initContainers", "ephemeralContainers"]
                    .iter()
                    .filter_map(|f| pod["spec"][f].as_array())
                    .flatten()
                    .any(|x| x["name"] == c);
                if !known {
                    return Err(ApiError::BadRequest(format!(
                        "container {c} is not valid for pod {name}"
                    ))
                    .into());
                }
                c.to_owned()
            }
            None => pod["spec"]["containers"][0]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        }),
    };
    let target = match container {
        Some(c) => format!("container {c} of pod {}/{name}", obj::namespace(&pod)),
        None => format!("pod {}/{name}", obj::namespace(&pod)),
    };
    tracing::info!(stream = stream.name(), %target, "stream refused: no containers run");
    Err(ApiError::BadRequest(format!(
        "kemu simulates containers: {} is not supported ({target})",
        stream.name()
    ))
    .into())
}
