//! kubectl against a GKE cluster with bearer access tokens: any token is the
//! project owner by default; a strict authenticator answers 401 to tokens it
//! does not know.

mod common;

use std::sync::Arc;

use common::{Sandbox, text};
use kemu::Kemu;
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::{Cloud, ClusterSpec, OwnerScope, advertise};

fn gke_cluster(kemu: &Kemu) -> kemu::shared::ClusterRecord {
    kemu.registry()
        .create(ClusterSpec {
            scope: OwnerScope::Gke {
                project: "tok-proj".into(),
                location: "us-central1-a".into(),
            },
            name: "t1".into(),
            version: "1.34".into(),
            node_pools: vec![],
            tags: Default::default(),
            provisioning: std::time::Duration::ZERO,
            extra: serde_json::Value::Null,
        })
        .unwrap()
}

fn whoami(sb: &Sandbox, record: &kemu::shared::ClusterRecord, token: &str) -> std::process::Output {
    let server = advertise(record).server_url().expect("live endpoint");
    let path = sb.path(&format!("{token}.kubeconfig"));
    let text = kubeconfig::render(
        "t1",
        &server,
        record.ca.cert_pem(),
        "u",
        &UserAuth::Token(token.into()),
    );
    std::fs::write(&path, text).unwrap();
    sb.kubectl(
        &path,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
}

#[test]
fn any_token_is_the_project_owner_by_default() {
    let kemu = Kemu::builder().build().unwrap();
    let record = gke_cluster(&kemu);
    let sb = Sandbox::new();
    let out = whoami(&sb, &record, "ya29.some-token");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "owner@tok-proj.iam.gserviceaccount.com"
    );
}

#[test]
fn a_strict_authenticator_maps_known_tokens_and_refuses_others() {
    let kemu = Kemu::builder().build().unwrap();
    let tokens = kemu_gke::AccessTokens::strict();
    tokens.insert("dev-token", "dev@example.com");
    kemu.registry()
        .set_authenticator(Cloud::Gke, Arc::new(tokens));
    let record = gke_cluster(&kemu);
    let sb = Sandbox::new();
    let out = whoami(&sb, &record, "dev-token");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "dev@example.com");
    let out = whoami(&sb, &record, "unknown-token");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        text(&out)
    );
}
