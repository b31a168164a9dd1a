//! client-go's streaming clients against simulated containers: the SPDY
//! executor (with stdin, stderr, a terminal and exit codes), the WebSocket
//! executor and the fallback between them; port-forward through the SPDY
//! dialer, the SPDY-over-WebSocket tunnel and their fallback, and a port
//! nothing listens on. The Go program is `tests/go/clientgo`; it is built
//! here with the machine's Go, its caches under `target/go`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{KubectlCluster, eks_spec_with_pool, text};

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
  - name: side
    image: busybox:1.36
    command: [sleep, "3600"]
"#;

/// Builds the client-go program; a missing Go toolchain fails the test.
fn build() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target/go");
    let bin = target.join("clientgo");
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(root.join("tests/go/clientgo"))
        .env("GOMODCACHE", target.join("mod"))
        .env("GOCACHE", target.join("cache"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("go is needed to build tests/go/clientgo");
    assert!(out.status.success(), "go build: {}", text(&out));
    bin
}

#[test]
fn client_go_execs_and_port_forwards_over_spdy_and_websocket() {
    let bin = build();
    let k = KubectlCluster::new(eks_spec_with_pool("client-go", 1, "m5.large"));
    let path = k.file("pod.yaml", POD);
    k.ok(&["apply", "-f", &path]);
    k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    let run = |args: &[&str]| {
        let out = k
            .sandbox
            .command(bin.to_str().unwrap())
            .arg("--kubeconfig")
            .arg(&k.kubeconfig)
            .args(["--namespace", "default", "--pod", "web"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let exec = run(&[
        "--container",
        "side",
        "spdy-exec",
        "spdy-exec-ok",
        "spdy-exec-tty",
        "ws-exec",
        "fallback-exec",
    ]);
    assert_eq!(
        exec.lines().filter(|l| l.starts_with("ok ")).count(),
        5,
        "{exec}"
    );
    let forward = run(&[
        "--port",
        "80",
        "spdy-portforward",
        "ws-portforward",
        "fallback-portforward",
        "portforward-refused",
    ]);
    assert_eq!(
        forward.lines().filter(|l| l.starts_with("ok ")).count(),
        4,
        "{forward}"
    );
}
