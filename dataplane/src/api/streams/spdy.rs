//! SPDY/3.1 framing, as far as Kubernetes' streams use it (client-go's
//! `spdystream`): streams opened by the client with `SYN_STREAM`, answered
//! with `SYN_REPLY`, `DATA` both ways with `FIN` for a half-close,
//! `RST_STREAM`, `PING` and `GOAWAY`. `SETTINGS` and `WINDOW_UPDATE` are
//! read and ignored: neither side of a Kubernetes stream enforces windows.
//!
//! Header blocks are compressed with one zlib stream per direction for the
//! whole connection, primed with the dictionary of the SPDY/3 draft
//! (section 2.6.10.1); every block the peer sends is inflated, even those
//! ignored, to keep the stream in step.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};

/// A frame's length is 24 bits.
const MAX_FRAME: usize = (1 << 24) - 1;
/// The most a header block may inflate to (a client's holds a few names).
const MAX_HEADERS: usize = 1 << 20;
/// How much data one `DATA` frame carries at most when writing.
pub const DATA_CHUNK: usize = 32 << 10;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const FLAG_FIN: u8 = 0x01;

/// `RST_STREAM` status: the stream is no longer needed.
pub const CANCEL: u32 = 5;

/// What goes wrong reading a peer's frames.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpdyError {
    /// A control frame of another SPDY version.
    #[error("unsupported SPDY version {0}")]
    Version(u16),
    /// A control frame shorter than its type needs.
    #[error("short SPDY control frame of type {0}")]
    Short(u16),
    /// A header block that does not inflate or parse.
    #[error("invalid SPDY header block: {0}")]
    Headers(String),
}

/// A frame read from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A new stream and its headers (names lowercase, as spdystream sends).
    SynStream {
        /// The stream.
        id: u32,
        /// The client sends nothing on it.
        fin: bool,
        /// The headers, values of one name joined by NUL.
        headers: Vec<(String, String)>,
    },
    /// Stream data; `fin` half-closes the peer's side.
    Data {
        /// The stream.
        id: u32,
        /// Last data on it.
        fin: bool,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The peer abandoned a stream.
    Reset(u32),
    /// A ping to answer with the same id.
    Ping(u32),
    /// The peer closes the connection.
    GoAway,
    /// Anything read and ignored (`SETTINGS`, `WINDOW_UPDATE`, replies).
    Ignored,
}

/// SPDY/3's header dictionary: these names, each after its length as four
/// big-endian bytes, then the text of [`DICTIONARY_TAIL`].
const DICTIONARY_WORDS: &[&str] = &[
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

const DICTIONARY_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

fn dictionary() -> Vec<u8> {
    let mut d = Vec::with_capacity(1423);
    for w in DICTIONARY_WORDS {
        d.extend_from_slice(&(w.len() as u32).to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    d
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reads frames from the bytes a peer sends, in whatever pieces they come.
pub struct Decoder {
    buf: Vec<u8>,
    inflate: Decompress,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("buffered", &self.buf.len())
            .finish()
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            buf: Vec::new(),
            inflate: Decompress::new(true),
        }
    }
}

impl Decoder {
    /// Adds bytes read from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, SpdyError> {
        if self.buf.len() < 8 {
            return Ok(None);
        }
        let len = (be32(&self.buf[4..8]) & 0x00ff_ffff) as usize;
        if self.buf.len() < 8 + len {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buf.drain(..8 + len).collect();
        let flags = frame[4];
        let body = &frame[8..];
        if frame[0] & 0x80 == 0 {
            return Ok(Some(Frame::Data {
                id: be32(&frame[..4]) & 0x7fff_ffff,
                fin: flags & FLAG_FIN != 0,
                data: body.to_vec(),
            }));
        }
        let version = u16::from_be_bytes([frame[0], frame[1]]) & 0x7fff;
        let kind = u16::from_be_bytes([frame[2], frame[3]]);
        if version != 3 {
            return Err(SpdyError::Version(version));
        }
        let need = match kind {
            SYN_STREAM => 10,
            SYN_REPLY | HEADERS | PING => 4,
            RST_STREAM | GOAWAY => 8,
            _ => 0,
        };
        if body.len() < need {
            return Err(SpdyError::Short(kind));
        }
        Ok(Some(match kind {
            SYN_STREAM => Frame::SynStream {
                id: be32(body) & 0x7fff_ffff,
                fin: flags & FLAG_FIN != 0,
                headers: self.headers(&body[10..])?,
            },
            SYN_REPLY | HEADERS => {
                self.headers(&body[4..])?;
                Frame::Ignored
            }
            RST_STREAM => Frame::Reset(be32(body) & 0x7fff_ffff),
            PING => Frame::Ping(be32(body)),
            GOAWAY => Frame::GoAway,
            _ => Frame::Ignored,
        }))
    }

    fn inflate_block(&mut self, mut input: &[u8]) -> Result<Vec<u8>, SpdyError> {
        let bad = |e: &dyn std::fmt::Display| SpdyError::Headers(e.to_string());
        let mut out = Vec::with_capacity(256);
        loop {
            if out.len() >= MAX_HEADERS {
                return Err(SpdyError::Headers("header block too large".into()));
            }
            out.reserve(4096);
            let (before, written) = (self.inflate.total_in(), out.len());
            let mut primed = false;
            match self
                .inflate
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
            {
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(&dictionary())
                        .map_err(|e| bad(&e))?;
                    primed = true;
                }
                Err(e) => return Err(bad(&e)),
            }
            let used = (self.inflate.total_in() - before) as usize;
            input = &input[used.min(input.len())..];
            let full = out.len() == out.capacity();
            let stalled = used == 0 && out.len() == written && !primed;
            if (input.is_empty() && !full) || stalled {
                return Ok(out);
            }
        }
    }

    fn headers(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
        let raw = self.inflate_block(block)?;
        let short = || SpdyError::Headers("truncated".into());
        let mut at = 4;
        let count = be32(raw.get(..4).ok_or_else(short)?);
        let mut out = Vec::new();
        for _ in 0..count {
            let mut field = || -> Result<String, SpdyError> {
                let len = be32(raw.get(at..at + 4).ok_or_else(short)?) as usize;
                let end = at + 4 + len;
                let text = raw.get(at + 4..end).ok_or_else(short)?;
                at = end;
                Ok(String::from_utf8_lossy(text).into_owned())
            };
            let name = field()?;
            let value = field()?;
            out.push((name.to_ascii_lowercase(), value));
        }
        Ok(out)
    }
}

/// Writes frames to the peer.
pub struct Encoder {
    deflate: Compress,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder").finish()
    }
}

impl Default for Encoder {
    fn default() -> Self {
        // A zlib stream without the dictionary: the peer's reader takes
        // the dictionary only when the stream's header asks for it.
        Encoder {
            deflate: Compress::new(Compression::default(), true),
        }
    }
}

fn control(kind: u16, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + body.len());
    f.extend_from_slice(&0x8003u16.to_be_bytes());
    f.extend_from_slice(&kind.to_be_bytes());
    f.extend_from_slice(&((u32::from(flags) << 24) | body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

impl Encoder {
    /// `SYN_REPLY` with no headers; `fin` refuses the stream.
    pub fn reply(&mut self, id: u32, fin: bool) -> Vec<u8> {
        let mut body = id.to_be_bytes().to_vec();
        body.reserve(256);
        let mut block: &[u8] = &0u32.to_be_bytes();
        // Until the flush fits: a full buffer may hold back flushed bytes.
        loop {
            let before = self.deflate.total_in();
            let _ = self
                .deflate
                .compress_vec(block, &mut body, FlushCompress::Sync);
            let used = (self.deflate.total_in() - before) as usize;
            block = &block[used.min(block.len())..];
            if block.is_empty() && body.len() < body.capacity() {
                break;
            }
            body.reserve(256);
        }
        control(SYN_REPLY, if fin { FLAG_FIN } else { 0 }, &body)
    }

    /// `DATA` frames carrying `data` (split as needed); `fin` on the last.
    pub fn data(id: u32, data: &[u8], fin: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + 8);
        let mut chunks = data.chunks(DATA_CHUNK.min(MAX_FRAME)).peekable();
        if chunks.peek().is_none() {
            push_data(&mut out, id, &[], fin);
        }
        while let Some(c) = chunks.next() {
            push_data(&mut out, id, c, fin && chunks.peek().is_none());
        }
        out
    }

    /// `RST_STREAM` with a status.
    pub fn reset(id: u32, status: u32) -> Vec<u8> {
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(&status.to_be_bytes());
        control(RST_STREAM, 0, &body)
    }

    /// `PING` answering the peer's.
    pub fn ping(id: u32) -> Vec<u8> {
        control(PING, 0, &id.to_be_bytes())
    }

    /// `GOAWAY` (status OK) naming the last stream the peer opened.
    pub fn go_away(last: u32) -> Vec<u8> {
        let mut body = last.to_be_bytes().to_vec();
        body.extend_from_slice(&0u32.to_be_bytes());
        control(GOAWAY, 0, &body)
    }
}

fn push_data(out: &mut Vec<u8>, id: u32, data: &[u8], fin: bool) {
    out.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
    let flags = if fin { FLAG_FIN } else { 0 };
    out.extend_from_slice(&((u32::from(flags) << 24) | data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adler32(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &x in data {
            a = (a + u32::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    #[test]
    fn the_dictionary_is_the_drafts() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        assert_eq!(adler32(&d), 0xe3c6_a7c2);
    }

    /// A SYN_STREAM as spdystream writes it: headers deflated with the
    /// dictionary on one zlib stream.
    fn syn_stream(z: &mut Compress, id: u32, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut block = (headers.len() as u32).to_be_bytes().to_vec();
        for (k, v) in headers {
            block.extend_from_slice(&(k.len() as u32).to_be_bytes());
            block.extend_from_slice(k.as_bytes());
            block.extend_from_slice(&(v.len() as u32).to_be_bytes());
            block.extend_from_slice(v.as_bytes());
        }
        let mut out = Vec::with_capacity(block.len() + 1024);
        z.compress_vec(&block, &mut out, FlushCompress::Sync)
            .unwrap();
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(&out);
        control(SYN_STREAM, 0, &body)
    }

    #[test]
    fn streams_headers_and_data_are_read_in_any_pieces() {
        let mut z = Compress::new(Compression::default(), true);
        z.set_dictionary(&dictionary()).unwrap();
        let mut wire = syn_stream(
            &mut z,
            1,
            &[("streamtype", "error"), ("port", "80"), ("requestid", "0")],
        );
        wire.extend(syn_stream(
            &mut z,
            3,
            &[("streamtype", "data"), ("port", "80")],
        ));
        wire.extend(Encoder::data(3, b"GET / HTTP/1.1\r\n\r\n", true));
        wire.extend(Encoder::ping(7));
        let mut d = Decoder::default();
        let mut frames = Vec::new();
        for b in wire.chunks(3) {
            d.push(b);
            while let Some(f) = d.next_frame().unwrap() {
                frames.push(f);
            }
        }
        assert_eq!(frames.len(), 4);
        assert_eq!(
            frames[1],
            Frame::SynStream {
                id: 3,
                fin: false,
                headers: vec![
                    ("streamtype".into(), "data".into()),
                    ("port".into(), "80".into())
                ]
            }
        );
        assert_eq!(
            frames[2],
            Frame::Data {
                id: 3,
                fin: true,
                data: b"GET / HTTP/1.1\r\n\r\n".to_vec()
            }
        );
        assert_eq!(frames[3], Frame::Ping(7));
    }

    #[test]
    fn replies_inflate_on_the_peers_side() {
        let mut e = Encoder::default();
        let mut inflate = Decompress::new(true);
        for id in [1u32, 3, 5] {
            let f = e.reply(id, false);
            assert_eq!(&f[..4], &[0x80, 0x03, 0, 2]);
            let mut out = Vec::with_capacity(64);
            inflate
                .decompress_vec(&f[12..], &mut out, FlushDecompress::Sync)
                .unwrap();
            assert_eq!(out, [0, 0, 0, 0]);
        }
    }

    #[test]
    fn bad_frames_are_errors() {
        let mut d = Decoder::default();
        d.push(&[0x80, 0x02, 0, 1, 0, 0, 0, 0]);
        assert_eq!(d.next_frame(), Err(SpdyError::Version(2)));
        let mut d = Decoder::default();
        d.push(&control(
            SYN_STREAM,
            0,
            &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, 3],
        ));
        assert!(matches!(d.next_frame(), Err(SpdyError::Headers(_))));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, failure_persistence: None, ..Default::default() })]

        /// Whatever a peer sends, in whatever pieces, is a frame, an error or a wait.
        #[test]
        fn any_bytes_are_frames_errors_or_waits(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            cut in 1usize..64,
        ) {
            let mut d = Decoder::default();
            let mut wire = control(SYN_STREAM, 0, &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
            wire.extend(data);
            for piece in wire.chunks(cut) {
                d.push(piece);
                while let Ok(Some(_)) = d.next_frame() {}
            }
        }
    }
}
