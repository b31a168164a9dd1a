//! azure-mgmt-containerservice and azure-identity drive the AKS facade with
//! pollers (tests/py/aks_sdk.py), and kubectl uses the kubeconfig the SDK got;
//! terraform azurerm's call sequences replayed with the SDK
//! (tests/py/aks_terraform.py).

mod common;

use common::aks::{blocking, python, serve};
use common::{Sandbox, text};
use kemu::Kemu;
use kemu::shared::Cloud;

#[actix_web::test]
async fn python_sdk_drives_aks_with_pollers() {
    let kemu = Kemu::builder().build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    let registry = kemu.registry().clone();
    blocking(move || {
        std::fs::create_dir_all(sandbox.path("out")).unwrap();
        // Any subscription id is served, as SDK users pick their own.
        let sub = "6f3c1f2a-0b1d-4c52-9a8e-5d2f0c9e7b41";
        let out = python(&sandbox, "aks_sdk.py", &arm, &ca, sub);
        assert!(out.status.success(), "{}", text(&out));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["ok"], true);
        // The script ran kubectl with this kubeconfig while the cluster lived.
        let kubeconfig = std::fs::read_to_string(sandbox.path("out/sdk.kubeconfig")).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&kubeconfig).unwrap();
        let server = doc["clusters"][0]["cluster"]["server"].as_str().unwrap();
        assert!(server.starts_with("https://127.0.0.1:"), "{server}");
        assert!(doc["users"][0]["user"]["client-certificate-data"].is_string());
        assert!(registry.list_cloud(Cloud::Aks).is_empty());
    })
    .await;
    served.running.stop().await;
}

#[actix_web::test]
async fn terraform_azurerm_call_sequences_replayed() {
    let kemu = Kemu::builder().build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let (arm, ca) = (served.arm.clone(), served.ca.clone());
    let registry = kemu.registry().clone();
    blocking(move || {
        let sub = kemu_aks::state::DEFAULT_SUBSCRIPTION;
        let out = python(&sandbox, "aks_terraform.py", &arm, &ca, sub);
        assert!(out.status.success(), "{}", text(&out));
        assert!(registry.list_cloud(Cloud::Aks).is_empty());
    })
    .await;
    served.running.stop().await;
}
