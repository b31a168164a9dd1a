//! azure-mgmt-containerservice and azure-identity drive the AKS facade with
//! pollers (tests/py/aks_sdk.py), and kubectl uses the kubeconfig the SDK got.

mod common;

use std::process::Stdio;

use common::aks::{blocking, serve};
use common::{Sandbox, text};
use kemu::Kemu;

#[actix_web::test]
async fn python_sdk_drives_aks_with_pollers() {
    let kemu = Kemu::builder().build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let out_dir = sandbox.path("sdk");
    std::fs::create_dir_all(&out_dir).unwrap();
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    let registry = kemu.registry().clone();
    blocking(move || sdk_flow(&sandbox, &arm, &ca, &out_dir, &registry)).await;
    served.running.stop().await;
}

fn sdk_flow(
    sandbox: &Sandbox,
    arm: &str,
    ca: &std::path::Path,
    out_dir: &std::path::Path,
    registry: &kemu::ClusterRegistry,
) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/aks_sdk.py");
    let out = sandbox
        .command("python3")
        .arg(script)
        .env("REQUESTS_CA_BUNDLE", ca)
        .env("KEMU_ARM", arm)
        .env("KEMU_TENANT", kemu_aks::state::DEFAULT_TENANT)
        .env("KEMU_SUBSCRIPTION", "6f3c1f2a-0b1d-4c52-9a8e-5d2f0c9e7b41")
        .env("KEMU_OUT", out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["ok"], true);

    // The script ran kubectl with this kubeconfig while the cluster lived.
    let kubeconfig = std::fs::read_to_string(out_dir.join("sdk.kubeconfig")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&kubeconfig).unwrap();
    assert!(
        doc["clusters"][0]["cluster"]["server"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );
    assert!(doc["users"][0]["user"]["client-certificate-data"].is_string());
    assert!(registry.list_cloud(kemu::shared::Cloud::Aks).is_empty());
}
