//! The byte pipes a SPDY session runs over: the connection itself after an
//! HTTP `Upgrade: SPDY/3.1` (client-go's SPDY executor and dialer), or the
//! binary messages of a WebSocket (`SPDY/3.1+portforward.k8s.io`, how
//! kubectl 1.31+ port-forwards through kube-apiserver's tunnel).

use actix_web::{HttpResponse, web};
use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

/// How many chunks may wait each way before the sender waits.
const DEPTH: usize = 32;

/// Bytes from the peer and to it; dropping `tx` ends the connection.
#[derive(Debug)]
pub struct Pipe {
    /// What the peer sent, in the pieces it arrived in; `None` once it left.
    pub rx: mpsc::Receiver<Bytes>,
    /// What to send.
    pub tx: mpsc::Sender<Bytes>,
}

impl Pipe {
    /// Sends bytes; `false` once the peer is gone.
    pub async fn send(&self, bytes: Vec<u8>) -> bool {
        bytes.is_empty() || self.tx.send(Bytes::from(bytes)).await.is_ok()
    }
}

/// The `101 Switching Protocols` answer to an `Upgrade: SPDY/3.1` request
/// and the pipe over its connection.
pub fn upgrade(protocol: Option<&str>, mut payload: web::Payload) -> (HttpResponse, Pipe) {
    let (in_tx, rx) = mpsc::channel::<Bytes>(DEPTH);
    let (tx, out_rx) = mpsc::channel::<Bytes>(DEPTH);
    actix_web::rt::spawn(async move {
        while let Some(Ok(chunk)) = payload.next().await {
            if in_tx.send(chunk).await.is_err() {
                break;
            }
        }
    });
    let body = futures_util::stream::unfold(out_rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
    });
    let mut response = HttpResponse::SwitchingProtocols();
    response.upgrade("SPDY/3.1");
    if let Some(p) = protocol {
        response.insert_header(("X-Stream-Protocol-Version", p));
    }
    (response.streaming(body), Pipe { rx, tx })
}

/// The pipe over a WebSocket's binary messages (answering its pings); the
/// socket closes normally when the pipe's sender is dropped.
pub fn websocket(mut ws: actix_ws::Session, messages: actix_ws::MessageStream) -> Pipe {
    let (in_tx, rx) = mpsc::channel::<Bytes>(DEPTH);
    let (tx, mut out_rx) = mpsc::channel::<Bytes>(DEPTH);
    let mut messages = messages.max_frame_size(super::MAX_FRAME);
    actix_web::rt::spawn(async move {
        let mut reading = true;
        loop {
            tokio::select! {
                msg = messages.next(), if reading => match msg {
                    Some(Ok(actix_ws::Message::Binary(b))) => {
                        if in_tx.send(b).await.is_err() {
                            reading = false;
                        }
                    }
                    Some(Ok(actix_ws::Message::Ping(p))) => {
                        if ws.pong(&p).await.is_err() {
                            break;
                        }
                    }
                    Some(Ok(actix_ws::Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => {}
                },
                out = out_rx.recv() => match out {
                    Some(b) => {
                        if ws.binary(b).await.is_err() {
                            break;
                        }
                    }
                    None => {
                        let _ = ws.close(Some(actix_ws::CloseCode::Normal.into())).await;
                        return;
                    }
                },
            }
        }
        let _ = ws.close(None).await;
    });
    Pipe { rx, tx }
}
