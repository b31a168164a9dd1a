//! The web dashboard in a real browser: headless Chromium (Debian's package)
//! driven by Playwright through tests/py/dashboard.py sees a cluster the aws
//! CLI creates, downloads its kubeconfig, follows a Deployment's rollout to
//! its Pods and Nodes, and finds a failed request in the log view. The
//! screenshots land in target/dashboard/ as test artifacts.

mod common;
mod eks_support;
mod gke_support;

use common::{Sandbox, text};
use gke_support::KemuProcess;

#[test]
fn dashboard_shows_clusters_workloads_and_requests_in_a_browser() {
    let sandbox = Sandbox::new();
    let kemu = KemuProcess::start(&[]);
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    common::which("chromium");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/dashboard.py");
    let mut cmd = sandbox.command("python3");
    eks_support::aws_env(&mut cmd, &kemu.ready.eks, "test");
    let out = cmd
        .arg(script)
        .arg(&kemu.ready.admin)
        .arg(&shots)
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", text(&out));
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(seen["deployment_pods"], 3, "{seen}");
    assert_eq!(seen["nodes"], 2, "{seen}");
    assert_eq!(seen["download_name"], "eks-dash.kubeconfig", "{seen}");
    assert!(
        seen["failed_request"]
            .as_str()
            .is_some_and(|r| r.contains("404") && r.contains("configmaps")),
        "{seen}"
    );
    for view in [
        "clusters",
        "workloads",
        "deployment",
        "pods-by-node",
        "requests",
    ] {
        let png = std::fs::read(shots.join(format!("{view}.png"))).expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "{view}.png is not a PNG");
    }
}

#[test]
fn no_dashboard_leaves_the_admin_api() {
    let kemu = KemuProcess::start(&["--no-dashboard"]);
    let root = kemu::admin::call(&kemu.ready.admin, "GET", "/");
    assert!(
        matches!(&root, Err(kemu::admin::ClientError::Answer { message, .. }) if message.starts_with("HTTP 404")),
        "{root:?}"
    );
    kemu::admin::call(&kemu.ready.admin, "GET", "/kemu/clusters").expect("clusters");
}
