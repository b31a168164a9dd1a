//! `kubectl port-forward` (SPDY tunnelled in a WebSocket), the Python
//! client's `portforward` (WebSocket channels) and client-go's SPDY and
//! WebSocket dialers against the servers of simulated containers: nginx's
//! pages from the container's files (a ConfigMap mounted over its html
//! directory included), agnhost's netexec, and containerd's refusal of a
//! port nothing listens on.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{KubectlCluster, eks_spec_with_pool};

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: pages}
data: {page.html: "<p>from a ConfigMap</p>\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports: [{containerPort: 80}]
    volumeMounts:
    - {name: pages, mountPath: /usr/share/nginx/html/extra}
  - name: side
    image: busybox:1.36
    command: [sleep, "3600"]
  volumes:
  - {name: pages, configMap: {name: pages}}
---
apiVersion: v1
kind: Pod
metadata: {name: agn}
spec:
  containers:
  - name: agnhost
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080]
"#;

fn cluster(name: &str) -> KubectlCluster {
    let k = KubectlCluster::new(eks_spec_with_pool(name, 1, "m5.large"));
    let path = k.file("objects.yaml", OBJECTS);
    k.ok(&["apply", "-f", &path]);
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/web",
        "pod/agn",
        "--timeout=60s",
    ]);
    k
}

/// A running `kubectl port-forward` and the local port it listens on.
struct Forward {
    child: Child,
    port: u16,
    stderr: mpsc::Receiver<String>,
}

impl Forward {
    fn start(k: &KubectlCluster, target: &str, remote: u16) -> Forward {
        let mut child = k
            .sandbox
            .command("kubectl")
            .arg("--kubeconfig")
            .arg(&k.kubeconfig)
            .args(["port-forward", "--address", "127.0.0.1", target])
            .arg(format!("0:{remote}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (etx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        // A guard against a hang, not a wait for the server: kubectl prints
        // the line as soon as it listens.
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("kubectl port-forward printed nothing");
        let port = line
            .strip_prefix("Forwarding from 127.0.0.1:")
            .and_then(|r| r.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line: {line}"));
        Forward {
            child,
            port,
            stderr,
        }
    }

    /// `curl` through the forward: (status, body).
    fn get(&self, k: &KubectlCluster, path: &str) -> (String, String) {
        let out = k
            .sandbox
            .command("curl")
            .args(["-s", "--max-time", "30", "-w", "\n%{http_code}"])
            .arg(format!("http://127.0.0.1:{}{path}", self.port))
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = s.rsplit_once('\n').unwrap_or(("", &s));
        (code.to_owned(), body.to_owned())
    }

    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

#[test]
fn kubectl_port_forward_reaches_nginx_netexec_and_a_clear_refusal() {
    let k = cluster("pf-kubectl");
    let web = Forward::start(&k, "pod/web", 80);
    let (code, body) = web.get(&k, "/");
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("<title>Welcome to nginx!</title>"), "{body}");
    assert_eq!(
        web.get(&k, "/extra/page.html"),
        ("200".into(), "<p>from a ConfigMap</p>\n".into())
    );
    let (code, body) = web.get(&k, "/missing");
    assert_eq!(code, "404");
    assert!(
        body.contains("<center><h1>404 Not Found</h1></center>"),
        "{body}"
    );
    web.stop();

    let agn = Forward::start(&k, "pod/agn", 8080);
    assert_eq!(
        agn.get(&k, "/echo?msg=hello"),
        ("200".into(), "hello".into())
    );
    assert_eq!(agn.get(&k, "/hostname"), ("200".into(), "agn".into()));
    agn.stop();

    let none = Forward::start(&k, "pod/web", 9);
    let (code, _) = none.get(&k, "/");
    assert_eq!(code, "000", "nothing listens on port 9");
    let err = none.stop();
    assert!(
        err.contains("error forwarding port 9 to pod web, uid : failed to execute portforward in network namespace")
            && err.contains("dial tcp4 127.0.0.1:9: connect: connection refused"),
        "{err}"
    );
}

#[test]
fn the_python_client_port_forwards_over_websocket_channels() {
    let k = cluster("pf-python");
    k.python_ok("port_forward.py");
}
