//! The Python `kubernetes` client against a kemu cluster (tests/py/engine_client.py):
//! CRUD, pagination, watch resume after a dropped connection, 410 and 409.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use common::{Sandbox, eks_spec, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{Clock, FakeClock, NodePool};

#[test]
fn python_client_crud_pagination_watch_resume_410_409() {
    let clock = FakeClock::at_epoch();
    let kemu = Kemu::builder().clock(clock.clone()).build().unwrap();
    let mut spec = eks_spec("py");
    spec.node_pools = vec![NodePool {
        name: "ng".into(),
        count: 2,
        machine_type: "t3.medium".into(),
        labels: Default::default(),
        taints: vec![],
    }];
    let a = kemu.registry().create(spec).unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &a, a.ca.cert_pem(), clock.now());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/engine_client.py");
    let mut child = sandbox
        .command("python3")
        .arg(script)
        .env("KUBECONFIG", &kc)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line == "ADVANCE" {
            clock.advance(Duration::from_secs(6 * 60));
            writeln!(stdin, "go").unwrap();
        }
        out.push_str(&line);
        out.push('\n');
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "python client failed:\n{out}");
    assert!(out.ends_with("ok\n"), "{out}");
}
