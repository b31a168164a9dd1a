//! `aws eks get-token` tokens at the EKS authenticator: accepted for the
//! cluster they were minted for, refused for another cluster, after 15 minutes
//! on the (fake) clock, with an unknown key, and as garbage.

mod common;
mod eks_support;

use std::time::Duration;

use common::{Sandbox, text};
use eks_support::{Aws, blocking, start};
use kemu::shared::{OwnerScope, SystemClock};
use kemu::{Clock, FakeClock, Kemu};

fn token(aws: &Aws, cluster: &str) -> String {
    token_via(aws, cluster, None)
}

/// A token presigned for the STS endpoint `sts` (AWS's own when `None`).
fn token_via(aws: &Aws, cluster: &str, sts: Option<&str>) -> String {
    let mut cmd = aws.command();
    if let Some(url) = sts {
        cmd.env("AWS_ENDPOINT_URL_STS", url);
    }
    let out = cmd
        .args([
            "eks",
            "get-token",
            "--cluster-name",
            cluster,
            "--query",
            "status.token",
            "--output",
            "text",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[actix_web::test]
async fn tokens_are_bound_to_cluster_key_and_time() {
    // get-token signs with wall time; the fake clock starts there and moves
    // only when the test moves it.
    let clock = FakeClock::new(SystemClock.now());
    let kemu = Kemu::builder().clock(clock.clone()).build().unwrap();
    let registry = kemu.registry().clone();
    let facade = kemu.eks_facade().clone();
    let sandbox = Sandbox::new();
    let running = start(kemu, &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    let (a, b, stranger, via_kemu, via_elsewhere) = {
        let (tx, rx) = std::sync::mpsc::channel();
        blocking(move || {
            let aws = Aws::new(&sandbox, &endpoint);
            for name in ["alpha", "beta"] {
                aws.ok(&[
                    "create-cluster",
                    "--name",
                    name,
                    "--role-arn",
                    "arn:aws:iam::1:role/r",
                    "--resources-vpc-config",
                    "subnetIds=s",
                ]);
            }
            let mut other = Aws::new(&sandbox, &endpoint);
            other.access_key = "not-a-kemu-key".into();
            tx.send((
                token(&aws, "alpha"),
                token(&aws, "beta"),
                token(&other, "alpha"),
                token_via(&aws, "alpha", Some(&endpoint)),
                token_via(&aws, "alpha", Some("https://sts.example.com")),
            ))
            .unwrap();
        })
        .await;
        rx.recv().unwrap()
    };
    let scope = OwnerScope::Eks {
        account: "000000000000".into(),
        region: "us-east-1".into(),
    };
    let alpha = registry.find(&scope, "alpha").unwrap();
    let beta = registry.find(&scope, "beta").unwrap();

    // The creator's bootstrap entry, in the wire shape the authorizer reads.
    let entries = facade.access_entries(&alpha.id);
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].0["principalArn"],
        "arn:aws:iam::000000000000:user/test"
    );
    assert_eq!(
        entries[0].1[0]["policyArn"],
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    );

    let user = registry
        .authenticate_token(&alpha, &a)
        .unwrap()
        .expect("an EKS token");
    assert_eq!(user.username, "arn:aws:iam::000000000000:user/test");
    assert!(
        user.groups.contains(&"system:masters".to_owned()),
        "{user:?}"
    );
    assert!(registry.authenticate_token(&beta, &b).unwrap().is_some());

    // Bound to its cluster.
    let err = registry.authenticate_token(&beta, &a).unwrap_err();
    assert!(
        err.starts_with("this token is for cluster alpha, not beta: get one for this cluster with `aws eks update-kubeconfig --name beta"),
        "{err}"
    );
    // Unknown keys and garbage are refused; other bearer tokens are not ours.
    let err = registry.authenticate_token(&alpha, &stranger).unwrap_err();
    assert!(err.contains("unknown access key"), "{err}");
    assert!(
        registry
            .authenticate_token(&alpha, "k8s-aws-v1.!!!")
            .is_err()
    );
    assert!(
        registry
            .authenticate_token(&alpha, "k8s-aws-v1.aHR0cHM6Ly9leGFtcGxl")
            .is_err()
    );
    assert_eq!(
        registry.authenticate_token(&alpha, "some-other-token"),
        Ok(None)
    );
    // Presigned for kemu's own STS (AWS_ENDPOINT_URL_STS at kemu) or for
    // AWS's; never for another host, as aws-iam-authenticator refuses it.
    assert!(
        registry
            .authenticate_token(&alpha, &via_kemu)
            .unwrap()
            .is_some()
    );
    let err = registry
        .authenticate_token(&alpha, &via_elsewhere)
        .unwrap_err();
    assert!(
        err.contains("unexpected hostname \"sts.example.com\" in pre-signed URL"),
        "{err}"
    );
    // A tampered signature fails.
    let mut tampered = a.clone();
    tampered.pop();
    assert!(registry.authenticate_token(&alpha, &tampered).is_err());

    // Fresh for 15 minutes on the clock, then expired.
    clock.advance(Duration::from_secs(14 * 60));
    assert!(registry.authenticate_token(&alpha, &a).unwrap().is_some());
    clock.advance(Duration::from_secs(2 * 60));
    let err = registry.authenticate_token(&alpha, &a).unwrap_err();
    assert!(err.contains("expired"), "{err}");

    running.stop().await;
}
