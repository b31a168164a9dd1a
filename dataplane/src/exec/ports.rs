//! What answers on a Pod's ports when a client port-forwards to it: the
//! servers of well-known images, serving the container's own files (a
//! ConfigMap mounted over nginx's html directory is what `curl` gets).
//!
//! | image | port | answers |
//! |---|---|---|
//! | `nginx` | 80 | files under `/usr/share/nginx/html`, nginx's 301/404/405 pages |
//! | `nginx-unprivileged` | 8080 | the same |
//! | `httpd` | 80 | files under `/usr/local/apache2/htdocs`, Apache's 404 page |
//! | `agnhost netexec` | `--http-port` (8080) | `/`, `/hostname`, `/echo?msg=`, `/clientip`, `/healthz`, `/header?key=` |
//! | `agnhost serve-hostname` | `--port` (9376) | the hostname |
//!
//! Any other port is refused as containerd refuses a port nothing listens
//! on; no other process runs in a simulated container.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Container;
use super::fs::Kind;
use super::volumes::image_name;

/// A server an image runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// nginx's static files.
    Nginx,
    /// Apache httpd's static files.
    Httpd,
    /// agnhost's `netexec`.
    Netexec,
    /// agnhost's `serve-hostname`.
    ServeHostname,
}

/// The value of `--name=V` or `--name V` in a container's args.
fn flag_value(args: &[&str], name: &str) -> Option<u16> {
    let long = format!("--{name}");
    args.iter().enumerate().find_map(|(i, a)| {
        let v = match a.strip_prefix(&long)? {
            "" => *args.get(i + 1)?,
            rest => rest.strip_prefix('=')?,
        };
        v.parse().ok()
    })
}

/// The port a container's image listens on, and its server.
pub fn server(container: &Value) -> Option<(u16, Server)> {
    let image = container["image"].as_str().unwrap_or_default();
    let args: Vec<&str> = ["command", "args"]
        .iter()
        .filter_map(|f| container[f].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match image_name(image) {
        "nginx" => Some((80, Server::Nginx)),
        "nginx-unprivileged" => Some((8080, Server::Nginx)),
        "httpd" => Some((80, Server::Httpd)),
        "agnhost" => match args
            .iter()
            .position(|a| *a == "netexec" || *a == "serve-hostname")
        {
            Some(i) if args[i] == "netexec" => Some((
                flag_value(&args[i..], "http-port").unwrap_or(8080),
                Server::Netexec,
            )),
            Some(i) => Some((
                flag_value(&args[i..], "port").unwrap_or(9376),
                Server::ServeHostname,
            )),
            None => None,
        },
        _ => None,
    }
}

/// The servers listening in one Pod's network namespace.
#[derive(Debug, Default)]
pub struct Listeners {
    servers: Vec<(u16, Server, Container)>,
    /// The Pod's UID, naming its sandbox in refusals.
    uid: String,
}

impl Listeners {
    /// An empty namespace of the Pod with this UID.
    pub fn new(uid: &str) -> Self {
        Listeners {
            servers: Vec::new(),
            uid: uid.to_owned(),
        }
    }

    /// Adds a container's server.
    pub fn add(&mut self, port: u16, server: Server, container: Container) {
        self.servers.push((port, server, container));
    }

    /// A connection to `port`, or containerd's refusal.
    pub fn connect(&self, port: u16) -> Result<Connection, String> {
        match self.servers.iter().find(|(p, ..)| *p == port) {
            Some((_, server, container)) => Ok(Connection {
                server: *server,
                container: container.clone(),
                port,
                buf: Vec::new(),
                closed: false,
            }),
            None => {
                let sandbox = self.uid.replace('-', "").repeat(2);
                Err(format!(
                    "failed to execute portforward in network namespace \"/var/run/netns/cni-{}\": failed to connect to localhost:{port} inside namespace \"{sandbox}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ",
                    self.uid
                ))
            }
        }
    }
}

/// One forwarded TCP connection to a server: bytes in, responses out.
#[derive(Debug)]
pub struct Connection {
    server: Server,
    container: Container,
    port: u16,
    buf: Vec<u8>,
    closed: bool,
}

/// The most a request's head may take, as nginx's large header buffers.
const MAX_HEAD: usize = 32 << 10;

/// A response a server wrote, as a client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers, in the order written (names as written).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

struct Request {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    close: bool,
}

struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    location: Option<String>,
}

impl Connection {
    /// One request on a fresh connection and the server's answer: what a
    /// proxy or a probe reads. `target` is the path and query; `headers`
    /// go as given, after `Host`.
    pub fn exchange(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Reply {
        let mut head = format!("{method} {target} HTTP/1.1\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        let out = self.feed(&bytes, now);
        let end = find(&out, b"\r\n\r\n").map_or(out.len(), |i| i + 4);
        let text = String::from_utf8_lossy(&out[..end]);
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(502);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
            .collect();
        Reply {
            status,
            headers,
            body: out[end.min(out.len())..].to_vec(),
        }
    }

    /// The status code of a kubelet's HTTP probe of `path`.
    pub fn probe(&mut self, host: &str, path: &str, now: DateTime<Utc>) -> u16 {
        let headers = [
            ("Host".to_owned(), host.to_owned()),
            ("User-Agent".to_owned(), "kube-probe/1.34".to_owned()),
            ("Accept".to_owned(), "*/*".to_owned()),
        ];
        self.exchange("GET", path, &headers, &[], now).status
    }

    /// The server closed its side (`Connection: close`, a bad request).
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Bytes from the client; what the server writes back.
    pub fn feed(&mut self, data: &[u8], now: DateTime<Utc>) -> Vec<u8> {
        let mut out = Vec::new();
        if self.closed {
            return out;
        }
        self.buf.extend_from_slice(data);
        while !self.closed {
            let Some(end) = find(&self.buf, b"\r\n\r\n").map(|i| i + 4) else {
                if self.buf.len() > MAX_HEAD {
                    out.extend(self.write(&bad_request(), false, true, now));
                }
                break;
            };
            let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
            let Some(req) = parse(&head) else {
                out.extend(self.write(&bad_request(), false, true, now));
                break;
            };
            let length: usize = header(&req.headers, "content-length")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if self.buf.len() < end + length {
                break;
            }
            self.buf.drain(..end + length);
            let resp = self.answer(&req, now);
            out.extend(self.write(&resp, req.method == "HEAD", req.close, now));
        }
        out
    }

    fn write(&mut self, r: &Response, head_only: bool, close: bool, now: DateTime<Utc>) -> Vec<u8> {
        let reason = match r.status {
            200 => "OK",
            301 => "Moved Permanently",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Not Allowed",
            _ => "",
        };
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", r.status);
        match self.server {
            Server::Nginx => head.push_str("Server: nginx\r\n"),
            Server::Httpd => head.push_str("Server: Apache\r\n"),
            Server::Netexec | Server::ServeHostname => {}
        }
        head.push_str(&format!(
            "Date: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            now.format("%a, %d %b %Y %H:%M:%S GMT"),
            r.content_type,
            r.body.len()
        ));
        if let Some(l) = &r.location {
            head.push_str(&format!("Location: {l}\r\n"));
        }
        if close {
            head.push_str("Connection: close\r\n");
            self.closed = true;
        } else if self.server != Server::Netexec && self.server != Server::ServeHostname {
            head.push_str("Connection: keep-alive\r\n");
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        if !head_only {
            out.extend_from_slice(&r.body);
        }
        out
    }

    fn answer(&self, req: &Request, now: DateTime<Utc>) -> Response {
        let text = |status: u16, body: String| Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into_bytes(),
            location: None,
        };
        match self.server {
            Server::Nginx | Server::Httpd => self.static_file(req),
            Server::ServeHostname => text(200, self.container.hostname.clone()),
            Server::Netexec => match req.path.as_str() {
                "/" => text(
                    200,
                    format!("NOW: {}", now.format("%Y-%m-%d %H:%M:%S%.9f +0000 UTC")),
                ),
                "/hostname" => text(200, self.container.hostname.clone()),
                "/echo" => text(200, query(&req.query, "msg").unwrap_or_default()),
                "/clientip" => text(200, format!("127.0.0.1:{}", 40000 + self.port % 20000)),
                "/healthz" => text(200, String::new()),
                "/header" => {
                    let key = query(&req.query, "key").unwrap_or_default();
                    text(
                        200,
                        header(&req.headers, &key.to_ascii_lowercase())
                            .unwrap_or_default()
                            .to_owned(),
                    )
                }
                _ => text(404, "404 page not found\n".into()),
            },
        }
    }

    fn static_file(&self, req: &Request) -> Response {
        let nginx = self.server == Server::Nginx;
        let root = if nginx {
            "/usr/share/nginx/html"
        } else {
            "/usr/local/apache2/htdocs"
        };
        let page = |status: u16, title: &str| Response {
            status,
            content_type: if nginx {
                "text/html"
            } else {
                "text/html; charset=iso-8859-1"
            },
            body: if nginx {
                format!("<html>\r\n<head><title>{status} {title}</title></head>\r\n<body>\r\n<center><h1>{status} {title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n").into_bytes()
            } else {
                format!("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>{status} {title}</title>\n</head><body>\n<h1>{title}</h1>\n<p>The requested URL was not found on this server.</p>\n</body></html>\n").into_bytes()
            },
            location: None,
        };
        if req.method != "GET" && req.method != "HEAD" {
            return page(405, "Not Allowed");
        }
        let path = percent_decode(&req.path);
        if path.split('/').any(|c| c == "..") {
            return page(400, "Bad Request");
        }
        let fs = &self.container.fs;
        let full = format!("{root}{path}");
        let file = match fs.stat("/", &full) {
            Ok(s) if s.kind == Kind::Dir && !path.ends_with('/') => {
                let host = header(&req.headers, "host").unwrap_or("localhost");
                let mut r = page(301, "Moved Permanently");
                r.location = Some(format!("http://{host}{path}/"));
                return r;
            }
            Ok(s) if s.kind == Kind::Dir => format!("{full}index.html"),
            Ok(_) => full,
            Err(_) => return page(404, "Not Found"),
        };
        match fs.read("/", &file) {
            Ok(body) => Response {
                status: 200,
                content_type: content_type(&file),
                body,
                location: None,
            },
            Err(_) if nginx && path.ends_with('/') => page(403, "Forbidden"),
            Err(_) => page(404, "Not Found"),
        }
    }
}

fn bad_request() -> Response {
    Response {
        status: 400,
        content_type: "text/html",
        body: b"<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n".to_vec(),
        location: None,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn parse(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if first.next().is_some() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return None;
    }
    let mut headers = Vec::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let connection = header(&headers, "connection")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let close = connection == "close" || (version == "HTTP/1.0" && connection != "keep-alive");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Some(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        close,
    })
}

fn query(q: &str, name: &str) -> Option<String> {
    q.split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| percent_decode(&v.replace('+', " ")))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" => "application/javascript",
        "json" => "application/json",
        "txt" => "text/plain",
        "xml" => "text/xml",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_name_their_ports() {
        assert_eq!(
            server(&json!({"image": "docker.io/library/nginx:1.27"})),
            Some((80, Server::Nginx))
        );
        assert_eq!(
            server(
                &json!({"image": "registry.k8s.io/e2e-test-images/agnhost:2.53", "args": ["netexec", "--http-port=8081"]})
            ),
            Some((8081, Server::Netexec))
        );
        assert_eq!(
            server(&json!({"image": "agnhost:2.53", "args": ["serve-hostname", "--port", "9000"]})),
            Some((9000, Server::ServeHostname))
        );
        assert_eq!(server(&json!({"image": "busybox"})), None);
    }

    fn connection(server: Server) -> Connection {
        use crate::exec::fs::{Fs, Node, components, put, shared};
        let mut root = Node::dir(0o755, 0);
        put(
            &mut root,
            &components("/", "/usr/share/nginx/html/index.html"),
            Node::file(b"hello\n".to_vec(), 0o644, 0),
        );
        let fs = Fs::new(shared(root));
        let c = Container {
            fs,
            env: Vec::new(),
            cwd: "/".into(),
            hostname: "web-0".into(),
            image: "nginx".into(),
        };
        let mut l = Listeners::new("u-1");
        l.add(80, server, c);
        l.connect(80).unwrap()
    }

    #[test]
    fn nginx_serves_files_keeps_alive_and_closes_when_asked() {
        let now = DateTime::<Utc>::from_timestamp(0, 0).unwrap();
        let mut c = connection(Server::Nginx);
        let out = String::from_utf8(c.feed(
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\n",
            now,
        ))
        .unwrap();
        assert!(
            out.starts_with("HTTP/1.1 200 OK\r\nServer: nginx\r\n"),
            "{out}"
        );
        assert!(
            out.contains("Content-Length: 6\r\nConnection: keep-alive\r\n\r\nhello\n"),
            "{out}"
        );
        assert!(!c.closed());
        let out = String::from_utf8(c.feed(b"Connection: close\r\n\r\n", now)).unwrap();
        assert!(out.starts_with("HTTP/1.1 404 Not Found\r\n"), "{out}");
        assert!(out.contains("<center><h1>404 Not Found</h1></center>"));
        assert!(c.closed());
        let mut c = connection(Server::Nginx);
        let out = String::from_utf8(c.feed(b"\x16\x03\x01garbage\r\n\r\n", now)).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(c.closed());
    }

    #[test]
    fn netexec_echoes_and_other_ports_are_refused() {
        let now = DateTime::<Utc>::from_timestamp(0, 0).unwrap();
        let mut c = connection(Server::Netexec);
        let out =
            String::from_utf8(c.feed(b"GET /echo?msg=hi+there HTTP/1.1\r\n\r\n", now)).unwrap();
        assert!(out.ends_with("\r\n\r\nhi there"), "{out}");
        let l = Listeners::new("0b1c-2d");
        let e = l.connect(9).unwrap_err();
        assert!(
            e.contains("dial tcp4 127.0.0.1:9: connect: connection refused"),
            "{e}"
        );
    }
}
