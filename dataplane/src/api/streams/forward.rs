//! `pods/portforward`, as the kubelet serves it: over SPDY (a pair of
//! streams per connection, `streamtype` `error` and `data` with the same
//! `requestid` and `port`), or over a WebSocket's channels (`?ports=`;
//! channel `2i` carries port `i`'s data, `2i+1` its errors, each opened by
//! the port number as two little-endian bytes). Each connection goes to
//! what [`crate::exec::ports`] has listening in the Pod.

use std::collections::HashMap;

use futures_util::StreamExt as _;
use kemu_shared::SharedClock;

use super::Protocol;
use super::channel::{frame, send};
use super::pipe::Pipe;
use super::spdy::{CANCEL, Decoder, Encoder, Frame};
use crate::exec::ports::{Connection, Listeners};

/// The kubelet's words for a connection the Pod refused.
fn forward_error(port: u16, pod: &str, cause: &str) -> String {
    format!("error forwarding port {port} to pod {pod}, uid : {cause}")
}

#[derive(Debug, Default)]
struct Pair {
    error: Option<u32>,
    data: Option<u32>,
}

/// Why a stream is refused, as the kubelet's `httpStreamReceived` says it.
fn check(headers: &[(String, String)]) -> Result<(u16, String), String> {
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    let port = get("port");
    if port.is_empty() {
        return Err("\"port\" header is required".into());
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("unable to parse {port:?} as a port"))?;
    if port < 1 {
        return Err(format!("port \"{port}\" must be > 0"));
    }
    match get("streamtype") {
        "" => Err("\"streamType\" header is required".into()),
        t @ ("error" | "data") => Ok((port, t.to_owned())),
        t => Err(format!("invalid stream type {t:?}")),
    }
}

/// Serves port-forward streams on a SPDY connection until the peer leaves.
pub async fn spdy(mut pipe: Pipe, listeners: Listeners, pod: String, clock: SharedClock) {
    let mut dec = Decoder::default();
    let mut enc = Encoder::default();
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    // Open connections by data stream, with their error stream.
    let mut open: HashMap<u32, (Connection, u32)> = HashMap::new();
    while let Some(chunk) = pipe.rx.recv().await {
        dec.push(&chunk);
        loop {
            let f = match dec.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    tracing::info!(error = %e, "port-forward: bad SPDY frame");
                    return;
                }
            };
            let mut out = Vec::new();
            match f {
                Frame::SynStream { id, headers, .. } => {
                    let (port, kind) = match check(&headers) {
                        Ok(v) => v,
                        Err(e) => {
                            tracing::info!(stream = id, error = %e, "port-forward stream refused");
                            out.extend(enc.reply(id, true));
                            if !pipe.send(out).await {
                                return;
                            }
                            continue;
                        }
                    };
                    out.extend(enc.reply(id, false));
                    let request = headers
                        .iter()
                        .find(|(k, _)| k == "requestid")
                        .map(|(_, v)| v.clone())
                        .unwrap_or_else(|| {
                            // Old clients: the stream ids pair up.
                            let base = if kind == "data" {
                                id.saturating_sub(2)
                            } else {
                                id
                            };
                            base.to_string()
                        });
                    let pair = pairs.entry(request.clone()).or_default();
                    let slot = if kind == "data" {
                        &mut pair.data
                    } else {
                        &mut pair.error
                    };
                    if slot.is_some() {
                        if let Some(e) = pair.error {
                            let msg = format!(
                                "error processing stream for request {request}: {kind} stream already assigned"
                            );
                            out.extend(Encoder::data(e, msg.as_bytes(), false));
                        }
                    } else {
                        *slot = Some(id);
                    }
                    if let (Some(e), Some(d)) = (pair.error, pair.data) {
                        pairs.remove(&request);
                        match listeners.connect(port) {
                            Ok(conn) => {
                                open.insert(d, (conn, e));
                            }
                            Err(cause) => {
                                tracing::info!(pod = %pod, port, "port-forward refused: nothing listens");
                                let msg = forward_error(port, &pod, &cause);
                                out.extend(Encoder::data(e, msg.as_bytes(), false));
                                out.extend(Encoder::reset(d, CANCEL));
                                out.extend(Encoder::reset(e, CANCEL));
                            }
                        }
                    }
                }
                Frame::Data { id, fin, data } => {
                    if let Some((conn, e)) = open.get_mut(&id) {
                        let e = *e;
                        let answer = conn.feed(&data, clock.now());
                        if !answer.is_empty() {
                            out.extend(Encoder::data(id, &answer, false));
                        }
                        // The container closes when its server does, or when the
                        // client's side ends (containerd half-closes the socket).
                        if fin || conn.closed() {
                            out.extend(Encoder::data(id, &[], true));
                            out.extend(Encoder::data(e, &[], true));
                            open.remove(&id);
                        }
                    }
                }
                Frame::Reset(id) => {
                    open.retain(|d, (_, e)| *d != id && *e != id);
                }
                Frame::Ping(id) => out.extend(Encoder::ping(id)),
                Frame::GoAway => return,
                Frame::Ignored => {}
            }
            if !pipe.send(out).await {
                return;
            }
        }
    }
}

/// The ports a WebSocket port-forward asks for (`?ports=80,8080`, repeatable),
/// with the kubelet's errors.
pub fn ports(values: &[String]) -> Result<Vec<u16>, String> {
    if values.is_empty() {
        return Err("query parameter \"port\" is required".into());
    }
    let mut out = Vec::new();
    for v in values {
        if v.is_empty() {
            return Err("query parameter \"port\" cannot be empty".into());
        }
        for p in v.split(',') {
            let port: u16 = p
                .parse()
                .map_err(|_| format!("unable to parse {v:?} as a port"))?;
            if port < 1 {
                return Err(format!("port {v:?} must be > 0"));
            }
            out.push(port);
        }
    }
    Ok(out)
}

/// Serves port-forward channels on a WebSocket until every port's
/// connection has ended or the client leaves.
pub async fn channels(
    mut ws: actix_ws::Session,
    messages: actix_ws::MessageStream,
    proto: Protocol,
    ports: Vec<u16>,
    listeners: Listeners,
    pod: String,
    clock: SharedClock,
) {
    let mut messages = messages.max_frame_size(super::MAX_FRAME);
    let mut conns: Vec<Option<Connection>> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let (data, error) = channel_pair(i);
        let tag = port.to_le_bytes();
        if send(&mut ws, frame(proto, data, &tag)).await.is_err()
            || send(&mut ws, frame(proto, error, &tag)).await.is_err()
        {
            return;
        }
        match listeners.connect(*port) {
            Ok(c) => conns.push(Some(c)),
            Err(cause) => {
                let msg = forward_error(*port, &pod, &cause);
                let _ = send(&mut ws, frame(proto, error, msg.as_bytes())).await;
                conns.push(None);
            }
        }
    }
    while conns.iter().any(Option::is_some) {
        let Some(Ok(msg)) = messages.next().await else {
            return;
        };
        let data = match msg {
            actix_ws::Message::Binary(b) => b.to_vec(),
            actix_ws::Message::Text(t) => match super::channel::decode_text(proto, t.as_bytes()) {
                Some(d) => d,
                None => continue,
            },
            actix_ws::Message::Ping(p) => {
                if ws.pong(&p).await.is_err() {
                    return;
                }
                continue;
            }
            actix_ws::Message::Close(_) => return,
            _ => continue,
        };
        let Some((&channel, rest)) = data.split_first() else {
            continue;
        };
        let i = usize::from(channel / 2);
        if channel % 2 != 0 || rest.is_empty() {
            continue;
        }
        let Some(slot) = conns.get_mut(i) else {
            continue;
        };
        let Some(conn) = slot.as_mut() else {
            continue;
        };
        let answer = conn.feed(rest, clock.now());
        if !answer.is_empty() && send(&mut ws, frame(proto, channel, &answer)).await.is_err() {
            return;
        }
        if conn.closed() {
            *slot = None;
        }
    }
    let _ = ws.close(Some(actix_ws::CloseCode::Normal.into())).await;
}

/// Port `i`'s data and error channels.
fn channel_pair(i: usize) -> (u8, u8) {
    let data = u8::try_from(i * 2).unwrap_or(u8::MAX - 1);
    (data, data.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_ports_are_checked_as_the_kubelet_checks_them() {
        let h = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
        };
        assert_eq!(
            check(&h(&[("streamtype", "data"), ("port", "80")])),
            Ok((80, "data".into()))
        );
        assert_eq!(
            check(&h(&[("streamtype", "data")])).unwrap_err(),
            "\"port\" header is required"
        );
        assert_eq!(
            check(&h(&[("port", "99999"), ("streamtype", "data")])).unwrap_err(),
            "unable to parse \"99999\" as a port"
        );
        assert_eq!(
            check(&h(&[("port", "80"), ("streamtype", "x")])).unwrap_err(),
            "invalid stream type \"x\""
        );
        assert_eq!(ports(&["80,8080".into()]), Ok(vec![80, 8080]));
        assert_eq!(
            ports(&[]).unwrap_err(),
            "query parameter \"port\" is required"
        );
        assert_eq!(ports(&["0".into()]).unwrap_err(), "port \"0\" must be > 0");
    }
}
