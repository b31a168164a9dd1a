//! exec and attach over WebSocket channels: each frame a channel byte (0
//! stdin, 1 stdout, 2 stderr, 3 status, 4 resize) and data, or on the
//! base64 protocols a digit and base64 text; the kubelet's first empty
//! frame, pings answered, the v5 close of stdin, and the status on channel
//! 3 before a normal close.

use base64::Engine as _;
use futures_util::StreamExt as _;
use tokio::sync::watch;

use super::{MAX_FRAME, Protocol, Session, status};
use crate::exec::session::Event;

pub(super) fn frame(proto: Protocol, channel: u8, data: &[u8]) -> actix_ws::Message {
    if proto.base64 {
        let text = format!(
            "{}{}",
            char::from(b'0' + channel),
            base64::engine::general_purpose::STANDARD.encode(data)
        );
        actix_ws::Message::Text(text.into())
    } else {
        let mut b = Vec::with_capacity(data.len() + 1);
        b.push(channel);
        b.extend_from_slice(data);
        actix_ws::Message::Binary(b.into())
    }
}

/// A text frame's channel and bytes: base64 after a digit on the base64
/// protocols, else the text's bytes (upstream reads a text frame as a
/// binary one; the Python client writes str stdin as text).
pub(super) fn decode_text(proto: Protocol, t: &[u8]) -> Option<Vec<u8>> {
    if !proto.base64 {
        return Some(t.to_vec());
    }
    let (&c, rest) = t.split_first()?;
    let mut d = base64::engine::general_purpose::STANDARD
        .decode(rest)
        .ok()?;
    d.insert(0, c.wrapping_sub(b'0'));
    Some(d)
}

pub(super) async fn pump(
    mut ws: actix_ws::Session,
    messages: actix_ws::MessageStream,
    proto: Protocol,
    session: Session,
    ended: watch::Sender<bool>,
) {
    let streams = session.streams;
    let mut messages = messages.max_frame_size(MAX_FRAME);
    // The kubelet's first write: an empty frame on the lowest output channel.
    let first = if streams.stdout {
        1
    } else if streams.stderr {
        2
    } else {
        3
    };
    if send(&mut ws, frame(proto, first, &[])).await.is_err() {
        return;
    }
    let (stdin_tx, stdin_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut stdin_tx = streams.stdin.then_some(stdin_tx);
    let argv = session.argv();
    let mut events = session.start(Some(stdin_rx));
    let mut running = true;
    loop {
        tokio::select! {
            msg = messages.next() => {
                let Some(Ok(msg)) = msg else { break };
                let data: Vec<u8> = match msg {
                    actix_ws::Message::Binary(b) => b.to_vec(),
                    actix_ws::Message::Text(t) => match decode_text(proto, t.as_bytes()) {
                        Some(d) => d,
                        None => continue,
                    },
                    actix_ws::Message::Ping(p) => {
                        if ws.pong(&p).await.is_err() { break }
                        continue;
                    }
                    actix_ws::Message::Close(_) => break,
                    _ => continue,
                };
                match data.split_first() {
                    Some((0, rest)) if !rest.is_empty() => {
                        if let Some(tx) = &stdin_tx {
                            let _ = tx.send(rest.to_vec());
                        }
                    }
                    Some((255, [0])) if proto.v5 => stdin_tx = None,
                    Some((255, _)) if proto.v5 => break,
                    _ => {}
                }
            }
            event = events.recv(), if running => {
                match event {
                    Some(Event::Stdout(b)) if streams.stdout => {
                        if send(&mut ws, frame(proto, 1, &b)).await.is_err() { break }
                    }
                    Some(Event::Stderr(b)) if streams.stderr => {
                        if send(&mut ws, frame(proto, 2, &b)).await.is_err() { break }
                    }
                    Some(Event::Stdout(_) | Event::Stderr(_)) => {}
                    Some(Event::Done(end)) => {
                        if let Some(s) = status(proto, &argv, &end) {
                            let _ = send(&mut ws, frame(proto, 3, s.as_bytes())).await;
                        }
                        let _ = ws.close(Some(actix_ws::CloseCode::Normal.into())).await;
                        let _ = ended.send(true);
                        return;
                    }
                    None => running = false,
                }
            }
        }
    }
    let _ = ended.send(true);
    drop(stdin_tx);
    let _ = ws.close(None).await;
}

pub(super) async fn send(
    ws: &mut actix_ws::Session,
    msg: actix_ws::Message,
) -> Result<(), actix_ws::Closed> {
    match msg {
        actix_ws::Message::Binary(b) => ws.binary(b).await,
        actix_ws::Message::Text(t) => ws.text(t).await,
        _ => Ok(()),
    }
}
