//! The EKS lifecycle on a fake clock with realism delays configured: CREATING
//! until the provisioning delay passes, UPDATING and InProgress until the
//! transition passes, DELETING until the grace passes, then 404 — never ACTIVE
//! after a delete. Also the wire details botocore relies on.

mod common;

use std::time::Duration;

use eks_support::start;
use kemu::{FakeClock, Kemu};
use serde_json::{Value, json};

mod eks_support;

const SIGV4: &str = "AWS4-HMAC-SHA256 Credential=test/20260101/eu-west-1/eks/aws4_request, SignedHeaders=host;x-amz-date, Signature=0";

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Option<String>, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", SIGV4)
            .header("x-amz-date", "20260101T000000Z");
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let code = resp
            .headers()
            .get("x-amzn-errortype")
            .map(|h| h.to_str().unwrap().to_owned());
        (status, code, resp.json().await.unwrap_or(Value::Null))
    }
    async fn get(&self, path: &str) -> (u16, Option<String>, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> (u16, Option<String>, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
    async fn delete(&self, path: &str) -> (u16, Option<String>, Value) {
        self.call(reqwest::Method::DELETE, path, None).await
    }
}

#[actix_web::test]
async fn delays_follow_the_clock() {
    let clock = FakeClock::at_epoch();
    let settings = kemu_eks::Settings {
        provisioning: Duration::from_secs(600),
        transition: Duration::from_secs(60),
        deletion_grace: Duration::from_secs(120),
        ..Default::default()
    };
    let kemu = Kemu::builder()
        .clock(clock.clone())
        .eks_settings(settings)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let running = start(kemu, dir.path());
    let api = Api {
        http: common::http_client(),
        base: running.ready.eks.clone(),
    };

    let (s, _, c) = api
        .post("/clusters", json!({"name": "slow", "roleArn": "arn:aws:iam::1:role/r", "resourcesVpcConfig": {"subnetIds": ["s"]}}))
        .await;
    assert_eq!(s, 200, "{c}");
    // The region comes from the SigV4 credential scope.
    assert_eq!(
        c["cluster"]["arn"],
        "arn:aws:eks:eu-west-1:000000000000:cluster/slow"
    );
    assert_eq!(c["cluster"]["status"], "CREATING");
    assert!(
        c["cluster"].get("endpoint").is_none(),
        "no endpoint while creating: {c}"
    );
    assert_eq!(
        c["cluster"]["createdAt"],
        json!(1_767_225_600.0),
        "epoch seconds as a number"
    );
    clock.advance(Duration::from_secs(599));
    assert_eq!(
        api.get("/clusters/slow").await.2["cluster"]["status"],
        "CREATING"
    );
    let (s, code, _) = api
        .post(
            "/clusters/slow/node-groups",
            json!({"nodegroupName": "ng", "subnets": ["s"], "nodeRole": "arn:aws:iam::1:role/n"}),
        )
        .await;
    assert_eq!((s, code.as_deref()), (400, Some("InvalidRequestException")));
    clock.advance(Duration::from_secs(1));
    let c = api.get("/clusters/slow").await.2;
    assert_eq!(c["cluster"]["status"], "ACTIVE");
    assert!(
        c["cluster"]["endpoint"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );

    // Node group: CREATING for the transition, then ACTIVE.
    let (s, _, ng) = api
        .post("/clusters/slow/node-groups", json!({"nodegroupName": "ng", "subnets": ["s"], "nodeRole": "arn:aws:iam::1:role/n", "scalingConfig": {"minSize": 0, "maxSize": 3, "desiredSize": 1}}))
        .await;
    assert_eq!(s, 200, "{ng}");
    assert_eq!(ng["nodegroup"]["status"], "CREATING");
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        api.get("/clusters/slow/node-groups/ng").await.2["nodegroup"]["status"],
        "ACTIVE"
    );

    // Cluster update: UPDATING and InProgress, then ACTIVE and Successful;
    // a second update meanwhile is refused.
    let (_, _, u) = api
        .post("/clusters/slow/updates", json!({"version": "1.35"}))
        .await;
    let message = u["message"].as_str().unwrap();
    assert!(
        message.starts_with("unsupported Kubernetes version 1.35. Supported versions: ")
            && message.contains("1.34 (see `aws eks describe-cluster-versions`)"),
        "{message}"
    );
    let (s, _, u) = api
        .post(
            "/clusters/slow/update-config",
            json!({"logging": {"clusterLogging": [{"types": ["api"], "enabled": true}]}}),
        )
        .await;
    assert_eq!(s, 200, "{u}");
    let id = u["update"]["id"].as_str().unwrap().to_owned();
    assert_eq!(u["update"]["status"], "InProgress");
    assert_eq!(u["update"]["type"], "LoggingUpdate");
    assert_eq!(
        api.get("/clusters/slow").await.2["cluster"]["status"],
        "UPDATING"
    );
    let (s, code, _) = api
        .post(
            "/clusters/slow/update-config",
            json!({"upgradePolicy": {"supportType": "STANDARD"}}),
        )
        .await;
    assert_eq!((s, code.as_deref()), (409, Some("ResourceInUseException")));
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        api.get(&format!("/clusters/slow/updates/{id}")).await.2["update"]["status"],
        "Successful"
    );
    let c = api.get("/clusters/slow").await.2;
    assert_eq!(c["cluster"]["status"], "ACTIVE");
    assert_eq!(
        c["cluster"]["logging"]["clusterLogging"][0]["enabled"],
        true
    );

    // Deletion: DELETING for the grace, then 404; never ACTIVE again.
    let (_, _, d) = api.delete("/clusters/slow/node-groups/ng").await;
    assert_eq!(d["nodegroup"]["status"], "DELETING");
    clock.advance(Duration::from_secs(119));
    assert_eq!(
        api.get("/clusters/slow/node-groups/ng").await.2["nodegroup"]["status"],
        "DELETING"
    );
    clock.advance(Duration::from_secs(1));
    let (s, code, body) = api.get("/clusters/slow/node-groups/ng").await;
    assert_eq!(
        (s, code.as_deref()),
        (404, Some("ResourceNotFoundException"))
    );
    assert_eq!(body["message"], "No node group found for name: ng.");
    assert_eq!(
        api.delete("/clusters/slow").await.2["cluster"]["status"],
        "DELETING"
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        api.get("/clusters/slow").await.2["cluster"]["status"],
        "DELETING"
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(api.get("/clusters/slow").await.0, 404);

    running.stop().await;
}

#[actix_web::test]
async fn wire_errors_and_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(
        Kemu::builder().dataplane(false).build().unwrap(),
        dir.path(),
    );
    let api = Api {
        http: common::http_client(),
        base: running.ready.eks.clone(),
    };
    // Bad input: the service's own code and message, and nothing changes.
    let (s, code, b) = api.post("/clusters", json!({"name": "x"})).await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException")),
        "{b}"
    );
    let (s, code, _) = api.call(reqwest::Method::POST, "/clusters", None).await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException"))
    );
    let resp = api
        .http
        .post(format!("{}/clusters", api.base))
        .header("authorization", SIGV4)
        .header("x-amz-date", "20260101T000000Z")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // A role that is no IAM role ARN, a VPC config without subnets.
    let (s, code, b) = api
        .post(
            "/clusters",
            json!({"name": "x", "roleArn": "foo", "resourcesVpcConfig": {"subnetIds": ["s"]}}),
        )
        .await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException"))
    );
    assert_eq!(b["message"], "Invalid Role Arn: 'foo'");
    let (s, code, _) = api
        .post(
            "/clusters",
            json!({"name": "x", "roleArn": "arn:aws:iam::1:role/r", "resourcesVpcConfig": {}}),
        )
        .await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException"))
    );
    assert_eq!(api.get("/clusters").await.2, json!({"clusters": []}));
    // Unknown operations are EKS errors, not HTML.
    let (s, code, _) = api.get("/clusters/a/b/c/d/e").await;
    assert_eq!((s, code.is_some()), (404, true));
    // Percent-encoded ARNs as one path segment; repeated query keys.
    api.post("/clusters", json!({"name": "t", "roleArn": "arn:aws:iam::1:role/r", "resourcesVpcConfig": {"subnetIds": ["s"]}, "tags": {"a": "1", "b": "2", "c": "3"}}))
        .await;
    let arn = "arn%3Aaws%3Aeks%3Aeu-west-1%3A000000000000%3Acluster%2Ft";
    let (s, _, _) = api
        .delete(&format!("/tags/{arn}?tagKeys=a&tagKeys=b"))
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        api.get(&format!("/tags/{arn}")).await.2,
        json!({"tags": {"c": "3"}})
    );
    let (s, code, _) = api
        .get("/tags/arn%3Aaws%3Aeks%3Aeu-west-1%3A000000000000%3Acluster%2Fnone")
        .await;
    assert_eq!((s, code.as_deref()), (404, Some("NotFoundException")));
    let (s, code, _) = api.get("/tags/not-an-arn").await;
    assert_eq!((s, code.as_deref()), (400, Some("BadRequestException")));
    // Pagination bounds.
    let (s, code, _) = api.get("/clusters?maxResults=0").await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException"))
    );
    let (s, code, _) = api.get("/clusters?nextToken=zz").await;
    assert_eq!(
        (s, code.as_deref()),
        (400, Some("InvalidParameterException"))
    );
    running.stop().await;
}
