//! boto3 drives the EKS facade: the user flow with waiters and paginators, and
//! terraform's call sequences, and every operation of botocore's EKS model called once with valid input —
//! none may answer an error, let alone an unrouted 404
//! (tests/py/eks_boto3.py).

mod common;
mod eks_support;

use common::{Sandbox, text};
use eks_support::{aws_env, blocking, start};
use kemu::Kemu;

fn script(sandbox: &Sandbox, endpoint: &str, mode: &str) -> std::process::Output {
    let mut cmd = sandbox.command("python3");
    aws_env(&mut cmd, endpoint, "test");
    // STS on the same port: terraform's provider asks who it is first.
    cmd.env("AWS_ENDPOINT_URL_STS", endpoint);
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/py/eks_boto3.py"
    ))
    .arg(mode)
    .output()
    .expect("run python3")
}

#[actix_web::test]
async fn boto3_flow_with_waiters() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || {
        let out = script(&sandbox, &endpoint, "flow");
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("flow ok"),
            "{}",
            text(&out)
        );
    })
    .await;
    running.stop().await;
}

/// terraform-provider-aws's aws_eks_cluster, aws_eks_node_group and
/// aws_eks_addon call sequences (as the research notes read them from the
/// provider's source), replayed with boto3.
#[actix_web::test]
async fn terraform_call_sequences() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || {
        let out = script(&sandbox, &endpoint, "terraform");
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("terraform ok"),
            "{}",
            text(&out)
        );
    })
    .await;
    running.stop().await;
}

#[actix_web::test]
async fn boto3_every_operation_of_the_model() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || {
        let out = script(&sandbox, &endpoint, "all-ops");
        assert!(out.status.success(), "{}", text(&out));
        let results: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        assert_eq!(
            results.len(),
            64,
            "botocore 1.43's EKS model has 64 operations"
        );
        let failed: Vec<_> = results.iter().filter(|(_, r)| *r != "ok").collect();
        assert!(failed.is_empty(), "operations that failed: {failed:?}");
    })
    .await;
    running.stop().await;
}
