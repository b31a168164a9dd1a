//! `pods/exec`, `pods/attach` and `pods/portforward` into simulated
//! containers ([`crate::exec`]).
//!
//! The checks come first, as upstream's `streamLocation` makes them: the Pod,
//! then the container (upstream's 400s), then its Node; then, as the kubelet,
//! that the container runs and a stream was asked for. The upgrade speaks
//! what kube-apiserver and the kubelet do:
//!
//! - WebSocket channels: `v5.channel.k8s.io` (kubectl, client-go: stdin
//!   closed by a `[255, 0]` frame), `v4.channel.k8s.io` (the Python client,
//!   kube-rs), their base64 forms and the older ones, picked in the client's
//!   order. Each frame is a channel byte (0 stdin, 1 stdout, 2 stderr,
//!   3 status, 4 resize) and data; the status is the kubelet's `Status`
//!   (`NonZeroExitCode` with an `ExitCode` cause), written on channel 3
//!   before a normal close.
//! - SPDY/3.1 ([`spdy`]): client-go's SPDY executor and dialer
//!   ([`spdy_exec`], [`forward`]), over the upgraded connection, and
//!   kubectl's port-forward tunnelled in WebSocket messages ([`pipe`]).
//! - Port-forward's WebSocket channels (`?ports=`, the Python client).
//!
//! A request that is no upgrade gets upstream's 400 `Upgrade request required`.

mod channel;
mod forward;
mod pipe;
mod spdy;
mod spdy_exec;

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use kemu_shared::SharedClock;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api::subresources::{Ctx, SubresourceError};
use crate::controllers::obj;
use crate::error::ApiError;
use crate::exec::ports::{self, Listeners};
use crate::exec::session::{self, End};
use crate::exec::shell::Host;
use crate::exec::volumes;

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

/// The channel protocols served, best first.
const PROTOCOLS: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

/// The largest frame a client may send (kubectl cp sends its tar in 32 KiB
/// writes; some clients send whole files).
const MAX_FRAME: usize = 16 << 20;

/// How the negotiated protocol frames and reports.
#[derive(Debug, Clone, Copy)]
struct Protocol {
    /// `v5`: the client closes stdin with `[255, 0]`; kube-apiserver's
    /// translator words the status.
    v5: bool,
    /// `v4`+: the status is a JSON `Status`; older: only a failure's text.
    json_status: bool,
    /// Text frames with a digit and base64 data.
    base64: bool,
}

fn protocol(name: &str) -> Protocol {
    Protocol {
        v5: name == "v5.channel.k8s.io",
        json_status: name.starts_with("v4.") || name.starts_with("v5."),
        base64: name.contains("base64"),
    }
}

/// The query's values of `name` in order (`command` repeats).
fn values(req: &HttpRequest, name: &str) -> Vec<String> {
    web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .collect()
}

/// A stream flag: present and not `0` or `false`.
fn flag(req: &HttpRequest, name: &str) -> bool {
    values(req, name)
        .last()
        .is_some_and(|v| !matches!(v.as_str(), "0" | "false" | ""))
}

/// The container a stream targets, as upstream's `validateContainer` picks it.
fn container(pod: &Value, asked: Option<&str>) -> Result<Value, ApiError> {
    let name = obj::name(pod);
    let all: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| pod["spec"][f].as_array())
        .flatten()
        .collect();
    match asked {
        Some(c) => all
            .into_iter()
            .find(|x| x["name"] == c)
            .cloned()
            .ok_or_else(|| {
                ApiError::BadRequest(format!("container {c} is not valid for pod {name}"))
            }),
        None => {
            let regular: Vec<&Value> = pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .collect();
            match regular.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(ApiError::BadRequest(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => {
                    let names: Vec<&str> = all.iter().filter_map(|c| c["name"].as_str()).collect();
                    Err(ApiError::BadRequest(format!(
                        "a container name must be specified for pod {name}, choose one of: [{}]",
                        names.join(" ")
                    )))
                }
            }
        }
    }
}

fn running(pod: &Value, name: &str) -> bool {
    crate::api::log::container_status(pod, name)
        .is_some_and(|s| s["state"].get("running").is_some())
}

/// How a client asked to stream.
#[derive(Debug)]
enum Transport {
    /// A WebSocket offering these subprotocols.
    WebSocket(Vec<String>),
    /// `Upgrade: SPDY/3.1` offering these `X-Stream-Protocol-Version`s.
    Spdy(Vec<String>),
}

/// The header the listener sets on a SPDY upgrade it let through as a
/// streaming request ([`crate::listener`]).
pub const SPDY_UPGRADE_MARK: &str = "kemu-upgrade";

/// The SPDY exec protocols the kubelet serves, best first.
const SPDY_PROTOCOLS: &[&str] = &[
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// Port-forward's one SPDY protocol, and kube-apiserver's WebSocket tunnel of it.
const PORT_FORWARD_PROTOCOL: &str = "portforward.k8s.io";
const PORT_FORWARD_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";
/// Port-forward's WebSocket channel protocols.
const PORT_FORWARD_CHANNELS: &[&str] = &["v4.channel.k8s.io", "v4.base64.channel.k8s.io"];

fn header_list(req: &HttpRequest, name: &str) -> Vec<String> {
    req.headers()
        .get_all(name)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

fn transport(req: &HttpRequest) -> Option<Transport> {
    let upgrade = crate::api::request::header(req, "upgrade");
    let mark = crate::api::request::header(req, SPDY_UPGRADE_MARK);
    if upgrade.eq_ignore_ascii_case("SPDY/3.1") || mark.eq_ignore_ascii_case("SPDY/3.1") {
        Some(Transport::Spdy(header_list(
            req,
            "x-stream-protocol-version",
        )))
    } else if upgrade.eq_ignore_ascii_case("websocket") {
        Some(Transport::WebSocket(header_list(
            req,
            "sec-websocket-protocol",
        )))
    } else {
        None
    }
}

/// The first of the client's protocols the server speaks, as
/// `httpstream.Handshake` picks it (`None`: the client named none), or
/// its 403.
fn negotiate(offered: &[String], served: &[&str]) -> Result<Option<String>, ApiError> {
    if offered.is_empty() {
        return Ok(None);
    }
    match offered.iter().find(|p| served.contains(&p.as_str())) {
        Some(p) => Ok(Some(p.clone())),
        None => Err(ApiError::Forbidden(format!(
            "unable to upgrade: unable to negotiate protocol: client supports [{}], server accepts [{}]",
            offered.join(" "),
            served.join(" ")
        ))),
    }
}

/// The WebSocket subprotocol to answer with, of those served.
fn websocket_protocol(offered: &[String], served: &[&str]) -> Result<String, ApiError> {
    if offered.is_empty() {
        return Ok("channel.k8s.io".to_owned());
    }
    offered
        .iter()
        .find(|p| served.contains(&p.as_str()))
        .cloned()
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "requested protocol(s) are not supported: [{}]; supports [{}]",
                offered.join(" "),
                served.join(" ")
            ))
        })
}

/// Opens a container's sandbox.
fn open(ctx: &Ctx, pod: &Value, container: &Value) -> crate::exec::Container {
    let sandboxes = ctx.engine.sandboxes(&ctx.record.id.to_string());
    crate::exec::open(
        &sandboxes,
        ctx.store.as_ref(),
        &ctx.record,
        pod,
        container,
        ctx.now(),
    )
}

fn accept_websocket(
    req: &HttpRequest,
    payload: web::Payload,
    offered: &[String],
    chosen: &str,
) -> Result<(HttpResponse, actix_ws::Session, actix_ws::MessageStream), ApiError> {
    let (mut response, ws, messages) =
        actix_ws::handle(req, payload).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if !offered.is_empty()
        && let Ok(v) = actix_web::http::header::HeaderValue::from_str(chosen)
    {
        response
            .headers_mut()
            .insert(actix_web::http::header::SEC_WEBSOCKET_PROTOCOL, v);
    }
    Ok((response, ws, messages))
}

/// GET (WebSocket) or POST (SPDY) on a streaming subresource.
pub async fn serve(
    ctx: &Ctx,
    stream: Stream,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, SubresourceError> {
    if !matches!(req.method().as_str(), "GET" | "POST") {
        return Err(ApiError::MethodNotAllowed.into());
    }
    let pod = ctx.object()?;
    let name = obj::name(&pod).to_owned();
    let target = match stream {
        Stream::PortForward => None,
        _ => Some(container(&pod, ctx.params.get("container"))?),
    };
    if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        return Err(
            ApiError::BadRequest(format!("pod {name} does not have a host assigned")).into(),
        );
    }
    let Some(transport) = transport(req) else {
        return Err(ApiError::BadRequest("Upgrade request required".into()).into());
    };
    let Some(container) = target else {
        return port_forward(ctx, req, payload, &pod, transport).map_err(Into::into);
    };
    let cname = container["name"].as_str().unwrap_or_default().to_owned();
    if !running(&pod, &cname) {
        return Err(ApiError::BadRequest(format!("container not found (\"{cname}\")")).into());
    }
    let tty = flag(req, "tty");
    let stdin = flag(req, "stdin");
    let stdout = flag(req, "stdout");
    // With a terminal, stderr is merged into stdout (the kubelet drops it).
    let stderr = flag(req, "stderr") && !tty;
    if !(stdin || stdout || stderr) {
        return Err(ApiError::BadRequest(
            "you must specify at least 1 of stdin, stdout, stderr".into(),
        )
        .into());
    }
    let command = match stream {
        Stream::Exec => {
            let c = values(req, "command");
            if c.is_empty() {
                return Err(ApiError::BadRequest(
                    "you must specify at least one command for the container".into(),
                )
                .into());
            }
            Some(c)
        }
        _ => attach_command(&container),
    };
    let streams = Streams {
        stdin,
        stdout,
        stderr,
    };
    let (ended_tx, ended_rx) = watch::channel(false);
    let host = Arc::new(SessionHost {
        clock: ctx.clock(),
        handle: ctx.engine.background(),
        ended: ended_rx,
        sandboxes: ctx.engine.sandboxes(&ctx.record.id.to_string()),
        pod: (obj::namespace(&pod).to_owned(), name.clone()),
    });
    // The container is opened once the transport is agreed.
    let session = || Session {
        streams,
        command,
        tty,
        container: open(ctx, &pod, &container),
        host,
    };
    match transport {
        Transport::WebSocket(offered) => {
            let chosen = websocket_protocol(&offered, PROTOCOLS)?;
            let session = session();
            let (response, ws, messages) = accept_websocket(req, payload, &offered, &chosen)?;
            tracing::info!(stream = stream.name(), pod = %name, container = %cname, protocol = %chosen, "stream opened");
            actix_web::rt::spawn(channel::pump(
                ws,
                messages,
                protocol(&chosen),
                session,
                ended_tx,
            ));
            Ok(response)
        }
        Transport::Spdy(offered) => {
            let chosen = negotiate(&offered, SPDY_PROTOCOLS)?;
            let version = chosen.as_deref().unwrap_or("channel.k8s.io");
            let resize = matches!(version, "v4.channel.k8s.io" | "v3.channel.k8s.io");
            let session = session();
            let (response, pipe) = pipe::upgrade(chosen.as_deref(), payload);
            tracing::info!(stream = stream.name(), pod = %name, container = %cname, protocol = %version, "SPDY stream opened");
            actix_web::rt::spawn(spdy_exec::serve(
                pipe,
                protocol(version),
                resize,
                session,
                ended_tx,
            ));
            Ok(response)
        }
    }
}

/// `pods/portforward` over any of its transports.
fn port_forward(
    ctx: &Ctx,
    req: &HttpRequest,
    payload: web::Payload,
    pod: &Value,
    transport: Transport,
) -> Result<HttpResponse, ApiError> {
    let name = obj::name(pod).to_owned();
    let listeners = listeners(ctx, pod);
    let clock = ctx.clock();
    match transport {
        Transport::Spdy(offered) => {
            let chosen = negotiate(&offered, &[PORT_FORWARD_PROTOCOL])?;
            let (response, pipe) = pipe::upgrade(chosen.as_deref(), payload);
            tracing::info!(pod = %name, "port-forward opened (SPDY)");
            actix_web::rt::spawn(forward::spdy(pipe, listeners, name, clock));
            Ok(response)
        }
        Transport::WebSocket(offered) if offered.iter().any(|p| p == PORT_FORWARD_TUNNEL) => {
            let (response, ws, messages) =
                accept_websocket(req, payload, &offered, PORT_FORWARD_TUNNEL)?;
            tracing::info!(pod = %name, "port-forward opened (SPDY over WebSocket)");
            let pipe = pipe::websocket(ws, messages);
            actix_web::rt::spawn(forward::spdy(pipe, listeners, name, clock));
            Ok(response)
        }
        Transport::WebSocket(offered) => {
            let ports = forward::ports(&values(req, "ports")).map_err(ApiError::BadRequest)?;
            let chosen = if offered.is_empty() {
                "v4.channel.k8s.io".to_owned()
            } else {
                websocket_protocol(&offered, PORT_FORWARD_CHANNELS)?
            };
            let (response, ws, messages) = accept_websocket(req, payload, &offered, &chosen)?;
            tracing::info!(pod = %name, protocol = %chosen, "port-forward opened (WebSocket)");
            actix_web::rt::spawn(forward::channels(
                ws,
                messages,
                protocol(&chosen),
                ports,
                listeners,
                name,
                clock,
            ));
            Ok(response)
        }
    }
}

/// The servers listening in the Pod's network namespace: those of its
/// running containers.
pub fn listeners(ctx: &Ctx, pod: &Value) -> Listeners {
    let mut listeners = Listeners::new(obj::uid(pod));
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        if let Some((port, server)) = ports::server(c)
            && running(pod, c["name"].as_str().unwrap_or_default())
        {
            listeners.add(port, server, open(ctx, pod, c));
        }
    }
    listeners
}

/// What an attach runs: the container's shell when it keeps stdin open and
/// runs one (`kubectl run -it … -- sh`), else nothing to talk to.
fn attach_command(container: &Value) -> Option<Vec<String>> {
    let mut cmd: Vec<String> = ["command", "args"]
        .iter()
        .filter_map(|f| container[f].as_array())
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if cmd.is_empty() {
        let image = container["image"].as_str().unwrap_or_default();
        let base = volumes::image_name(image);
        if matches!(
            base,
            "busybox" | "alpine" | "ubuntu" | "debian" | "bash" | "fedora" | "centos"
        ) {
            cmd.push("sh".into());
        }
    }
    (container["stdin"].as_bool() == Some(true) && session::interactive_shell(&cmd)).then_some(cmd)
}

/// One exec or attach, to start once its transport is ready.
struct Session {
    streams: Streams,
    command: Option<Vec<String>>,
    tty: bool,
    container: crate::exec::Container,
    host: Arc<SessionHost>,
}

impl Session {
    /// The command's words, for its status.
    fn argv(&self) -> Vec<String> {
        self.command.clone().unwrap_or_default()
    }

    /// Starts the command on its thread, reading `stdin`; an attach with
    /// nothing to talk to starts none and its events end at once.
    fn start(
        self,
        stdin: Option<std::sync::mpsc::Receiver<Vec<u8>>>,
    ) -> tokio::sync::mpsc::UnboundedReceiver<session::Event> {
        let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
        match self.command {
            Some(command) => session::start(
                self.container,
                session::Request {
                    command,
                    tty: self.tty,
                },
                stdin.filter(|_| self.streams.stdin),
                self.host,
                events_tx,
            ),
            None => drop(events_tx),
        }
        events
    }
}

#[derive(Debug, Clone, Copy)]
struct Streams {
    stdin: bool,
    stdout: bool,
    stderr: bool,
}

/// The clock for a session's shell: sleeps end early when the stream does.
struct SessionHost {
    clock: SharedClock,
    handle: tokio::runtime::Handle,
    ended: watch::Receiver<bool>,
    sandboxes: Arc<crate::exec::Sandboxes>,
    /// The Pod's namespace and name.
    pod: (String, String),
}

impl Host for SessionHost {
    fn now(&self) -> i64 {
        self.clock.now().timestamp()
    }

    fn sleep(&self, d: std::time::Duration) -> bool {
        let mut ended = self.ended.clone();
        let timer = self.clock.sleep(d);
        self.handle.block_on(async move {
            tokio::select! {
                () = timer => true,
                _ = ended.wait_for(|e| *e) => false,
            }
        })
    }

    fn ended(&self) -> bool {
        *self.ended.borrow()
    }

    fn finished(&self) {
        self.sandboxes.changed(&self.pod.0, &self.pod.1);
    }
}
/// The status written on channel 3, as the kubelet (v4) or kube-apiserver's
/// stream translator (v5) words it; `None` when nothing is written.
fn status(proto: Protocol, command: &[String], end: &End) -> Option<String> {
    let (doc, text) = match end {
        End::Exit(0) => (json!({"metadata": {}, "status": "Success"}), None),
        End::Exit(code) => {
            let inner = if proto.v5 {
                format!("command terminated with exit code {code}")
            } else {
                format!(
                    "error executing command [{}], exit code {code}",
                    command.join(" ")
                )
            };
            let message = format!("command terminated with non-zero exit code: {inner}");
            (
                json!({"metadata": {}, "status": "Failure", "message": message, "reason": "NonZeroExitCode",
                       "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}}),
                Some(message),
            )
        }
        End::NotFound(cmd) => {
            let id = format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            let cause = format!(
                "error executing command in container: failed to exec in container: failed to start exec \"{id}\": OCI runtime exec failed: exec failed: unable to start container process: exec: \"{cmd}\": executable file not found in $PATH: unknown"
            );
            let message = if proto.v5 {
                format!("Internal error occurred: Internal error occurred: {cause}")
            } else {
                format!("Internal error occurred: {cause}")
            };
            (
                json!({"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
                       "details": {"causes": [{"message": cause}]}, "code": 500}),
                Some(message),
            )
        }
    };
    if proto.json_status {
        Some(doc.to_string())
    } else {
        text
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_worded_per_protocol() {
        let v5 = protocol("v5.channel.k8s.io");
        let v4 = protocol("v4.channel.k8s.io");
        let cmd = vec!["sh".to_owned(), "-c".into(), "exit 3".into()];
        assert_eq!(
            status(v5, &cmd, &End::Exit(0)).unwrap(),
            r#"{"metadata":{},"status":"Success"}"#
        );
        let s: Value = serde_json::from_str(&status(v5, &cmd, &End::Exit(3)).unwrap()).unwrap();
        assert_eq!(
            s["message"],
            "command terminated with non-zero exit code: command terminated with exit code 3"
        );
        assert_eq!(
            s["details"]["causes"][0],
            json!({"reason": "ExitCode", "message": "3"})
        );
        let s: Value = serde_json::from_str(&status(v4, &cmd, &End::Exit(3)).unwrap()).unwrap();
        assert_eq!(
            s["message"],
            "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
        );
        assert_eq!(
            status(protocol("channel.k8s.io"), &cmd, &End::Exit(0)),
            None
        );
    }

    #[test]
    fn containers_are_picked_as_upstream_picks_them() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            container(&pod, None).unwrap_err().to_string(),
            "a container name must be specified for pod p, choose one of: [a b]"
        );
        assert_eq!(
            container(&pod, Some("x")).unwrap_err().to_string(),
            "container x is not valid for pod p"
        );
        assert_eq!(container(&pod, Some("b")).unwrap()["name"], "b");
    }
}
