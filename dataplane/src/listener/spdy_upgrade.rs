//! Lets an `Upgrade: SPDY/3.1` request through to its handler as a stream.
//!
//! actix-http streams the bytes after a request's head only for a
//! WebSocket upgrade; any other upgrade (client-go's SPDY executor and
//! port-forward dialer) would have its SPDY frames parsed as a next
//! request. This wrapper reads the first request head of an HTTP/1
//! connection and, when it asks for SPDY, names the upgrade `websocket`
//! for the parser and keeps the real one in
//! [`crate::api::streams::SPDY_UPGRADE_MARK`]; the stream handlers read
//! both. The rest of the connection passes through untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much of a first request head is read before giving up on it (the
/// parser refuses a larger head anyway).
const MAX_HEAD: usize = 32 << 10;

/// A connection whose first request head may be rewritten.
#[derive(Debug)]
pub struct SpdyUpgrade<T> {
    inner: T,
    /// The head read so far, while looking.
    head: Option<Vec<u8>>,
    /// Bytes read and not yet handed on.
    pending: Vec<u8>,
    at: usize,
}

impl<T> SpdyUpgrade<T> {
    /// Wraps a connection; `look` is false for one that is not HTTP/1.
    pub fn new(inner: T, look: bool) -> Self {
        SpdyUpgrade {
            inner,
            head: look.then(Vec::new),
            pending: Vec::new(),
            at: 0,
        }
    }

    /// The wrapped connection.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

/// The head with a SPDY upgrade renamed, or as it was.
fn rewrite(head: Vec<u8>) -> Vec<u8> {
    let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
        return head;
    };
    let text = String::from_utf8_lossy(&head[..end]);
    let spdy = text.split("\r\n").skip(1).any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("upgrade") && v.trim().eq_ignore_ascii_case("SPDY/3.1")
        })
    });
    if !spdy {
        return head;
    }
    let mut out = Vec::with_capacity(head.len() + 64);
    for (i, line) in text.split("\r\n").enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\r\n");
        }
        let is_upgrade = i > 0
            && line
                .split_once(':')
                .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("upgrade"));
        if is_upgrade {
            out.extend_from_slice(b"Upgrade: websocket\r\n");
            out.extend_from_slice(crate::api::streams::SPDY_UPGRADE_MARK.as_bytes());
            out.extend_from_slice(b": SPDY/3.1");
        } else {
            out.extend_from_slice(line.as_bytes());
        }
    }
    out.extend_from_slice(&head[end..]);
    out
}

impl<T: AsyncRead + Unpin> AsyncRead for SpdyUpgrade<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while let Some(head) = this.head.as_mut() {
            let done = head.windows(4).any(|w| w == b"\r\n\r\n") || head.len() >= MAX_HEAD;
            if done {
                this.pending = rewrite(this.head.take().unwrap_or_default());
                this.at = 0;
                break;
            }
            let mut chunk = [0u8; 4096];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // The peer closed before a whole head: hand on what came.
                    this.pending = this.head.take().unwrap_or_default();
                    this.at = 0;
                }
                Poll::Ready(Ok(())) => head.extend_from_slice(rb.filled()),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if this.at < this.pending.len() {
            let n = buf.remaining().min(this.pending.len() - this.at);
            buf.put_slice(&this.pending[this.at..this.at + n]);
            this.at += n;
            if this.at == this.pending.len() {
                this.pending = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SpdyUpgrade<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn a_spdy_upgrade_is_renamed_and_the_rest_passes() {
        let wire = b"POST /api/v1/namespaces/d/pods/p/exec HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n\x80\x03\x00\x01";
        let mut s = SpdyUpgrade::new(&wire[..], true);
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("\r\nUpgrade: websocket\r\nkemu-upgrade: SPDY/3.1\r\nX-Stream"),
            "{text}"
        );
        assert!(out.ends_with(b"\r\n\r\n\x80\x03\x00\x01"));

        let plain = b"GET /version HTTP/1.1\r\nHost: h\r\n\r\nGET /x HTTP/1.1\r\n\r\n";
        let mut s = SpdyUpgrade::new(&plain[..], true);
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, plain);
    }
}
