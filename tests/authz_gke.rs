//! GKE grants Kubernetes access from project IAM roles, through the real
//! gcloud and kubectl: `gcloud projects add-iam-policy-binding` (Resource
//! Manager v1 `getIamPolicy` / `setIamPolicy`, reached through
//! `api_endpoint_overrides/cloudresourcemanager`) gives
//! `user:dev@example.com` `roles/container.viewer`; that account's token
//! then lists pods but may not create them, refused with GKE's wording
//! (the IAM permission it lacks). Before the binding it may do nothing.

mod common;
mod eks_support;
mod gke_support;

use common::{Sandbox, text};
use eks_support::{blocking, start};
use gke_support::{PROJECT, cloud_command, kubectl};
use kemu::Kemu;
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::{OwnerScope, advertise};
use serde_json::Value;

#[actix_web::test]
async fn project_iam_roles_authorize_on_gke() {
    let sandbox = Sandbox::new();
    let kemu = Kemu::builder().build().unwrap();
    kemu.gke_facade()
        .tokens()
        .insert("dev-token", "dev@example.com");
    let running = start(kemu.clone(), &sandbox.path("run"));
    let url = format!("{}/", running.ready.gke);
    blocking(move || flow(&kemu, &sandbox, &url)).await;
    running.stop().await;
}

fn gcloud(sb: &Sandbox, url: &str, args: &[&str]) -> std::process::Output {
    cloud_command(sb, "gcloud", url)
        .env("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER", url)
        .args(args)
        .output()
        .expect("run gcloud")
}

fn ok(sb: &Sandbox, url: &str, args: &[&str]) -> String {
    let out = gcloud(sb, url, args);
    assert!(out.status.success(), "gcloud {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn flow(kemu: &Kemu, sb: &Sandbox, url: &str) {
    ok(
        sb,
        url,
        &[
            "container",
            "clusters",
            "create",
            "c1",
            "--zone",
            "us-central1-a",
            "--num-nodes",
            "1",
        ],
    );
    ok(
        sb,
        url,
        &[
            "container",
            "clusters",
            "get-credentials",
            "c1",
            "--zone",
            "us-central1-a",
        ],
    );
    // The owner (any other token) is admin through the plugin.
    let owner_kc = sb.path("kubeconfig");
    let out = kubectl(sb, &owner_kc, &["run", "web", "--image=nginx"]);
    assert!(out.status.success(), "{}", text(&out));

    // The developer's own token, as gke-gcloud-auth-plugin would hand it.
    let scope = OwnerScope::Gke {
        project: PROJECT.into(),
        location: "us-central1-a".into(),
    };
    let record = kemu.registry().find(&scope, "c1").unwrap();
    let dev_kc = sb.path("dev.kubeconfig");
    std::fs::write(
        &dev_kc,
        kubeconfig::render(
            "c1",
            &advertise(&record).server_url().unwrap(),
            record.ca.cert_pem(),
            "dev",
            &UserAuth::Token("dev-token".into()),
        ),
    )
    .unwrap();
    let dev = |args: &[&str]| sb.kubectl(&dev_kc, args);
    let refusal = |verb: &str, permission: &str| {
        format!(
            "Error from server (Forbidden): pods is forbidden: User \"dev@example.com\" cannot {verb} resource \"pods\" in API group \"\" in the namespace \"default\": requires one of [\"container.pods.{permission}\"] permission(s)."
        )
    };
    let out = dev(&["get", "pods"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        refusal("list", "list")
    );

    // The project's policy: the owner alone, then the developer as viewer.
    let policy: Value = serde_json::from_str(&ok(
        sb,
        url,
        &["projects", "get-iam-policy", PROJECT, "--format=json"],
    ))
    .unwrap();
    assert_eq!(
        policy["bindings"],
        serde_json::json!([{"role": "roles/owner", "members": [format!("serviceAccount:owner@{PROJECT}.iam.gserviceaccount.com")]}])
    );
    ok(
        sb,
        url,
        &[
            "projects",
            "add-iam-policy-binding",
            PROJECT,
            "--member",
            "user:dev@example.com",
            "--role",
            "roles/container.viewer",
            "--condition=None",
        ],
    );
    let policy: Value = serde_json::from_str(&ok(
        sb,
        url,
        &["projects", "get-iam-policy", PROJECT, "--format=json"],
    ))
    .unwrap();
    assert!(
        policy["bindings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["role"] == "roles/container.viewer"
                && b["members"] == serde_json::json!(["user:dev@example.com"])),
        "{policy}"
    );

    let out = dev(&["get", "pods", "-o", "name"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "pod/web");
    let out = dev(&["run", "mine", "--image=nginx"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        refusal("create", "create")
    );
    // Secrets stay out of a viewer's reach.
    let out = dev(&["get", "secrets"]);
    assert!(!out.status.success(), "{}", text(&out));
    // A bad member is refused as Resource Manager refuses it.
    let out = gcloud(
        sb,
        url,
        &[
            "projects",
            "add-iam-policy-binding",
            PROJECT,
            "--member",
            "bob",
            "--role",
            "roles/viewer",
            "--condition=None",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
}
