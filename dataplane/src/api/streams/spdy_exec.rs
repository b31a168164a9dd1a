//! `pods/exec` and `pods/attach` over SPDY, as the kubelet serves client-go's
//! SPDY executor: the client opens one stream per `streamtype` (`error`,
//! `stdin`, `stdout`, `stderr`, `resize` with a terminal on v3+); once all
//! it asked for are open, the command runs; its output goes on the stdout
//! and stderr streams, each closed with `FIN` when it ends, then the status
//! on the error stream (v4: a JSON `Status`, success included; older: a
//! failure's text only) and `GOAWAY`.

use super::pipe::Pipe;
use super::spdy::{Decoder, Encoder, Frame};
use super::{Protocol, Session, status};
use crate::exec::session::Event;

#[derive(Debug, Default)]
struct Ids {
    error: Option<u32>,
    stdin: Option<u32>,
    stdout: Option<u32>,
    stderr: Option<u32>,
    resize: Option<u32>,
}

/// Runs one exec or attach on a SPDY connection.
pub async fn serve(
    mut pipe: Pipe,
    proto: Protocol,
    resize: bool,
    session: Session,
    ended: tokio::sync::watch::Sender<bool>,
) {
    let (streams, tty) = (session.streams, session.tty);
    let mut dec = Decoder::default();
    let mut enc = Encoder::default();
    let mut ids = Ids::default();
    let mut last = 0;
    let expected = 1
        + usize::from(streams.stdin)
        + usize::from(streams.stdout)
        + usize::from(streams.stderr)
        + usize::from(tty && resize);
    let mut opened = 0;
    // Stdin that arrives with the last stream waits here for the start.
    let (stdin_tx, stdin_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut stdin_tx = streams.stdin.then_some(stdin_tx);
    let mut stdin_rx = Some(stdin_rx);
    let argv = session.argv();
    let mut session = Some(session);
    let mut events = None;
    let mut quiet = false;
    loop {
        tokio::select! {
            chunk = pipe.rx.recv() => {
                let Some(chunk) = chunk else { break };
                dec.push(&chunk);
                let mut out = Vec::new();
                loop {
                    let f = match dec.next_frame() {
                        Ok(Some(f)) => f,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::info!(error = %e, "exec: bad SPDY frame");
                            let _ = ended.send(true);
                            return;
                        }
                    };
                    match f {
                        Frame::SynStream { id, headers, .. } => {
                            last = last.max(id);
                            out.extend(enc.reply(id, false));
                            let kind = headers.iter().find(|(k, _)| k == "streamtype").map(|(_, v)| v.as_str());
                            let slot = match kind {
                                Some("error") => &mut ids.error,
                                Some("stdin") => &mut ids.stdin,
                                Some("stdout") => &mut ids.stdout,
                                Some("stderr") => &mut ids.stderr,
                                Some("resize") => &mut ids.resize,
                                other => {
                                    tracing::info!(stream = ?other, "exec: unexpected stream type");
                                    continue;
                                }
                            };
                            *slot = Some(id);
                            opened += 1;
                        }
                        Frame::Data { id, fin, data } if Some(id) == ids.stdin => {
                            if !data.is_empty()
                                && let Some(tx) = &stdin_tx
                            {
                                let _ = tx.send(data);
                            }
                            if fin {
                                stdin_tx = None;
                            }
                        }
                        Frame::Ping(id) => out.extend(Encoder::ping(id)),
                        Frame::GoAway => {
                            let _ = ended.send(true);
                            return;
                        }
                        Frame::Data { .. } | Frame::Reset(_) | Frame::Ignored => {}
                    }
                }
                if !pipe.send(out).await {
                    break;
                }
                if opened >= expected
                    && let Some(s) = session.take()
                {
                    events = Some(s.start(stdin_rx.take()));
                }
            }
            event = next(events.as_mut()), if events.is_some() && !quiet => {
                let out = match event {
                    Some(Event::Stdout(b)) => ids.stdout.map(|id| Encoder::data(id, &b, false)),
                    Some(Event::Stderr(b)) => ids.stderr.map(|id| Encoder::data(id, &b, false)),
                    Some(Event::Done(end)) => {
                        let mut out = Vec::new();
                        for id in [ids.stdout, ids.stderr].into_iter().flatten() {
                            out.extend(Encoder::data(id, &[], true));
                        }
                        if let Some(id) = ids.error {
                            let text = status(proto, &argv, &end).unwrap_or_default();
                            out.extend(Encoder::data(id, text.as_bytes(), true));
                        }
                        out.extend(Encoder::go_away(last));
                        let _ = pipe.send(out).await;
                        let _ = ended.send(true);
                        return;
                    }
                    None => {
                        quiet = true;
                        None
                    }
                };
                if let Some(out) = out
                    && !pipe.send(out).await
                {
                    break;
                }
            }
        }
    }
    let _ = ended.send(true);
}

/// The session's next event (never, before it starts).
async fn next(events: Option<&mut tokio::sync::mpsc::UnboundedReceiver<Event>>) -> Option<Event> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
