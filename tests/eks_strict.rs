//! The EKS facade refuses what AWS refuses, in AWS's words, and changes
//! nothing: unsigned and malformed calls (the aws CLI's `--no-sign-request`,
//! raw HTTP), a node group past the per-group node quota, one node group
//! past the per-cluster quota.

mod common;
mod eks_support;

use common::{Sandbox, text};
use eks_support::{Aws, blocking, start};
use kemu::Kemu;

#[actix_web::test]
async fn unsigned_and_malformed_calls_are_refused_as_aws_refuses_them() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    let http = common::http_client();

    let unsigned = http
        .get(format!("{endpoint}/clusters"))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);
    assert_eq!(
        unsigned.headers()["x-amzn-errortype"],
        "MissingAuthenticationTokenException"
    );
    let body: serde_json::Value = unsigned.json().await.unwrap();
    assert_eq!(body["message"], "Missing Authentication Token");

    let bearer = http
        .get(format!("{endpoint}/clusters"))
        .header("authorization", "Bearer abc")
        .header("x-amz-date", "20260101T000000Z")
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), 403);
    assert_eq!(
        bearer.headers()["x-amzn-errortype"],
        "IncompleteSignatureException"
    );

    let wrong_service = http
        .post(format!("{endpoint}/clusters"))
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=0",
        )
        .header("x-amz-date", "20260101T000000Z")
        .json(&serde_json::json!({"name": "x", "roleArn": "arn:aws:iam::1:role/r",
            "resourcesVpcConfig": {"subnetIds": ["s"]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_service.status(), 403);
    assert_eq!(
        wrong_service.headers()["x-amzn-errortype"],
        "InvalidSignatureException"
    );

    blocking(move || {
        let aws = Aws::new(&sandbox, &endpoint);
        let out = aws
            .command()
            .args(["eks", "list-clusters", "--no-sign-request"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains(
                "An error occurred (MissingAuthenticationTokenException) when calling the ListClusters operation: Missing Authentication Token"
            ),
            "{}",
            text(&out)
        );
        // Nothing was created by the refused create; signed calls work.
        assert_eq!(
            aws.json(&["list-clusters"])["clusters"],
            serde_json::json!([])
        );
    })
    .await;
    running.stop().await;
}

#[actix_web::test]
async fn node_groups_stay_within_the_eks_quotas() {
    let sandbox = Sandbox::new();
    let running = start(Kemu::builder().build().unwrap(), &sandbox.path("run"));
    let endpoint = running.ready.eks.clone();
    blocking(move || {
        let aws = Aws::new(&sandbox, &endpoint);
        aws.ok(&[
            "create-cluster",
            "--name",
            "quota",
            "--role-arn",
            "arn:aws:iam::123456789012:role/eks",
            "--resources-vpc-config",
            "subnetIds=subnet-a",
        ]);
        let group = |name: &str, scaling: &str| {
            aws.eks(&[
                "create-nodegroup",
                "--cluster-name",
                "quota",
                "--nodegroup-name",
                name,
                "--node-role",
                "arn:aws:iam::123456789012:role/node",
                "--subnets",
                "subnet-a",
                "--scaling-config",
                scaling,
            ])
        };
        let huge = group("huge", "minSize=1,maxSize=5000,desiredSize=5000");
        assert!(!huge.status.success());
        assert!(
            text(&huge).contains("(InvalidParameterException) when calling the CreateNodegroup operation: Invalid scaling config: maxSize 5000 exceeds the limit of 450 nodes per managed node group."),
            "{}",
            text(&huge)
        );
        let listed = aws.json(&["list-nodegroups", "--cluster-name", "quota"]);
        assert_eq!(listed["nodegroups"], serde_json::json!([]), "nothing stored");

        for i in 0..30 {
            let out = group(&format!("ng{i:02}"), "minSize=0,maxSize=1,desiredSize=0");
            assert!(out.status.success(), "{}", text(&out));
        }
        let one_more = group("ng30", "minSize=0,maxSize=1,desiredSize=0");
        assert!(
            text(&one_more).contains("(ResourceLimitExceededException) when calling the CreateNodegroup operation: Cluster quota already has the maximum of 30 managed node groups."),
            "{}",
            text(&one_more)
        );
    })
    .await;
    running.stop().await;
}
