//! ARM and Azure AD conventions of the AKS facade on a fake clock: metadata
//! forms, JWT claims, api-version, case-insensitive paths, long-running
//! operations with a provisioning delay, ARM errors that change nothing,
//! token expiry (ARM and data plane), credentials without a data plane.

mod common;

use std::time::Duration;

use common::aks::{blocking, serve};
use common::{Sandbox, arm_client, https_client, text};
use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::{Clock, FakeClock, Kemu};
use serde_json::{Value, json};

const SUB: &str = kemu_aks::state::DEFAULT_SUBSCRIPTION;
const V: &str = "api-version=2026-06-01";

fn cluster_url(arm: &str, rg: &str, name: &str) -> String {
    format!(
        "{arm}/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters/{name}"
    )
}

async fn token(http: &reqwest::Client, arm: &str, scope: &str) -> String {
    let resp = http
        .post(format!(
            "{arm}/{}/oauth2/v2.0/token",
            kemu_aks::state::DEFAULT_TENANT
        ))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=client_credentials&client_id=app&client_secret=s&scope={scope}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn cluster_body(pool: &str) -> Value {
    json!({
        "location": "westeurope",
        "properties": {
            "kubernetesVersion": "",
            "dnsPrefix": "d",
            "agentPoolProfiles": [{ "name": pool, "count": 2, "vmSize": "", "mode": "System" }],
        },
    })
}

#[actix_web::test]
async fn arm_conventions_and_long_running_operations_on_the_clock() {
    let clock = FakeClock::at_epoch();
    let config = kemu_aks::AksConfig {
        provisioning_delay: Duration::from_secs(30),
        ..Default::default()
    };
    let kemu = Kemu::builder()
        .clock(clock.clone())
        .aks_config(config)
        .build()
        .unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let arm = served.arm.clone();
    let http = arm_client(kemu.facade_ca_pem());

    // Metadata: one object for `az cloud register`, a list for the 2019 form.
    let (_, one) = json_of(
        http.get(format!("{arm}/metadata/endpoints?api-version=2022-09-01"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(one["resourceManager"], format!("{arm}/"));
    assert_eq!(one["authentication"]["loginEndpoint"], format!("{arm}/"));
    let (_, list) = json_of(
        http.get(format!("{arm}/metadata/endpoints?api-version=2019-05-01"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list[0]["name"], one["name"]);

    // Tokens are JWTs whose expiry follows the clock.
    let jwt = token(
        &http,
        &arm,
        "https%3A%2F%2Fmanagement.core.windows.net%2F%2F.default",
    )
    .await;
    let claims = kemu_aks::identity::claims(&jwt).unwrap();
    assert_eq!(claims["aud"], "https://management.core.windows.net/");
    assert_eq!(claims["tid"], kemu_aks::state::DEFAULT_TENANT);
    assert_eq!(claims["appid"], "app");
    assert!(claims["oid"].is_string());
    assert_eq!(claims["exp"], clock.now().timestamp() + 3599);

    // api-version is required.
    let (status, body) = json_of(
        http.get(format!("{arm}/subscriptions/{SUB}/resourcegroups"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("MissingApiVersionParameter"))
    );

    // Without a bearer token ARM refuses the call, in its words, and stores
    // nothing; a header that is no bearer token is refused too.
    let bare = https_client(kemu.facade_ca_pem());
    let no_auth = format!("{arm}/subscriptions/{SUB}/resourcegroups/NoAuth?{V}");
    let resp = bare
        .put(&no_auth)
        .json(&json!({ "location": "westeurope" }))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer authorization_uri=")
    );
    let (status, body) = json_of(resp).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("AuthenticationFailed"))
    );
    assert_eq!(
        body["error"]["message"],
        "Authentication failed. The 'Authorization' header is missing."
    );
    let (status, body) = json_of(
        bare.get(&no_auth)
            .header("authorization", "Basic dTpw")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("AuthenticationFailedInvalidHeader"))
    );
    let (status, _) = json_of(http.get(&no_auth).send().await.unwrap()).await;
    assert_eq!(status, 404, "the refused PUT stored nothing");

    // A location that is no Azure region is refused before anything exists.
    let rg = format!("{arm}/subscriptions/{SUB}/resourcegroups/MyRG?{V}");
    let (status, body) = json_of(
        http.put(&rg)
            .json(&json!({ "location": "mars" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["code"],
        "LocationNotAvailableForResourceGroup"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided location 'mars' is not available for resource group. List of available regions is 'australiacentral,"),
        "{body}"
    );
    let (status, _) = json_of(http.get(&rg).send().await.unwrap()).await;
    assert_eq!(status, 404, "the refused PUT stored nothing");

    // Resource groups: 201 then 200, found under any casing, id as first written.
    let put = http
        .put(&rg)
        .json(&json!({ "location": "westeurope" }))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);
    assert!(put.headers().contains_key("x-ms-request-id"));
    let put = http
        .put(&rg)
        .json(&json!({ "location": "westeurope" }))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    let (status, got) = json_of(
        http.get(format!("{arm}/SUBSCRIPTIONS/{SUB}/resourceGroups/myrg?{V}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        got["id"],
        format!("/subscriptions/{SUB}/resourceGroups/MyRG")
    );
    let (status, body) = json_of(
        http.put(&rg)
            .json(&json!({ "location": "eastus" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("InvalidResourceGroupLocation"))
    );
    let (status, body) = json_of(
        http.put(format!("{}?{V}", cluster_url(&arm, "myrg", "-bad-")))
            .json(&cluster_body("sys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("InvalidParameter"))
    );
    let head = http
        .head(format!("{arm}/subscriptions/{SUB}/resourcegroups/nope?{V}"))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 404);

    // A cluster in a missing group is refused.
    let (status, body) = json_of(
        http.put(format!("{}?{V}", cluster_url(&arm, "nope", "c1")))
            .json(&cluster_body("sys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("ResourceGroupNotFound"))
    );

    // A cluster whose location is no region: ARM's 400, and no cluster.
    let mut on_mars = cluster_body("sys");
    on_mars["location"] = json!("Mars \u{0}");
    let (status, body) = json_of(
        http.put(format!("{}?{V}", cluster_url(&arm, "myrg", "c1")))
            .json(&on_mars)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("LocationNotAvailableForResourceType"))
    );
    assert!(
        body["error"]["message"].as_str().unwrap().starts_with(
            "The provided location 'Mars \u{0}' is not available for resource type 'Microsoft.ContainerService/managedClusters'."
        ),
        "{body}"
    );

    // Create: 201, Creating, an absolute operation URL echoing the api-version.
    let url = format!("{}?{V}", cluster_url(&arm, "myrg", "c1"));
    let resp = http
        .put(&url)
        .header("x-ms-correlation-request-id", "corr-1")
        .json(&cluster_body("sys"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["x-ms-correlation-request-id"], "corr-1");
    let op_url = resp.headers()["azure-asyncoperation"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(op_url.starts_with(&format!("{arm}/subscriptions/{SUB}/providers/Microsoft.ContainerService/locations/westeurope/operations/")), "{op_url}");
    assert!(op_url.ends_with("?api-version=2026-06-01"));
    let (_, created) = json_of(resp).await;
    assert_eq!(created["properties"]["provisioningState"], "Creating");
    assert_eq!(
        created["id"],
        format!(
            "/subscriptions/{SUB}/resourcegroups/MyRG/providers/Microsoft.ContainerService/managedClusters/c1"
        )
    );

    let poll = http.get(&op_url).send().await.unwrap();
    assert_eq!(poll.headers()["retry-after"], "1");
    let (_, status) = json_of(poll).await;
    assert_eq!(status["status"], "InProgress");
    // While creating: no credentials, no second write.
    let (code, body) = json_of(
        http.post(format!(
            "{}/listClusterUserCredential?{V}",
            cluster_url(&arm, "myrg", "c1")
        ))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("OperationNotAllowed"))
    );
    let (code, body) = json_of(
        http.put(&url)
            .json(&cluster_body("sys"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("OperationNotAllowed"))
    );

    clock.advance(Duration::from_secs(30));
    let (_, status) = json_of(http.get(&op_url).send().await.unwrap()).await;
    assert_eq!(status["status"], "Succeeded");
    let (_, got) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(got["properties"]["provisioningState"], "Succeeded");
    assert_eq!(got["properties"]["kubernetesVersion"], "1.34");
    assert_eq!(
        got["properties"]["agentPoolProfiles"][0]["vmSize"],
        "Standard_DS2_v2"
    );

    // Bad input gets ARM's error and changes nothing.
    let (code, body) = json_of(
        http.put(&url)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (400, Some("InvalidRequestContent"))
    );
    let mut bad = cluster_body("sys");
    bad["properties"]["agentPoolProfiles"][0]["count"] = json!(5);
    bad["properties"]["agentPoolProfiles"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "Bad_Name", "count": 1 }));
    let (code, body) = json_of(http.put(&url).json(&bad).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (400, Some("InvalidParameter"))
    );
    let mut old = cluster_body("sys");
    old["properties"]["kubernetesVersion"] = json!("1.32");
    let (code, body) = json_of(http.put(&url).json(&old).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("OperationNotAllowed"))
    );
    let (_, got) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(got["properties"]["agentPoolProfiles"][0]["count"], 2);
    assert_eq!(
        got["properties"]["agentPoolProfiles"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // The rarer cluster calls.
    let base = cluster_url(&arm, "myrg", "c1");
    let (code, body) = json_of(
        http.post(format!("{base}/listClusterMonitoringUserCredential?{V}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["kubeconfigs"][0]["name"].as_str()),
        (200, Some("clusterMonitoringUser"))
    );
    let (code, body) = json_of(
        http.get(format!("{base}/upgradeProfiles/default?{V}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        body["properties"]["controlPlaneProfile"]["kubernetesVersion"],
        "1.34.1"
    );
    let (code, body) = json_of(
        http.get(format!("{base}/maintenanceConfigurations/default?{V}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("ResourceNotFound"))
    );
    let reset = http
        .post(format!("{base}/resetAADProfile?{V}"))
        .json(&json!({ "managed": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 202);
    assert!(reset.headers().contains_key("location"));
    clock.advance(Duration::from_secs(30));
    let (_, got) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(got["properties"]["aadProfile"], json!({ "managed": true }));
    assert_eq!(got["properties"]["provisioningState"], "Succeeded");

    // An expired token is refused by ARM.
    clock.advance(Duration::from_secs(3600));
    let (code, body) = json_of(http.get(&url).bearer_auth(&jwt).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (401, Some("ExpiredAuthenticationToken"))
    );

    // The data plane accepts an AKS-audience token until it expires.
    let aks_token = token(
        &http,
        &arm,
        "6dae42f8-4368-4678-94ff-3960e28e3630%2F.default",
    )
    .await;
    let record = kemu
        .registry()
        .list_cloud(kemu::shared::Cloud::Aks)
        .remove(0);
    let server = kemu::shared::advertise(&record).server_url().unwrap();
    let kc = sandbox.path("token.kubeconfig");
    std::fs::write(
        &kc,
        kubeconfig::render(
            "c1",
            &server,
            record.ca.cert_pem(),
            "aad",
            &UserAuth::Token(aks_token),
        ),
    )
    .unwrap();
    let arm_kc = sandbox.path("arm-token.kubeconfig");
    let arm_token = token(
        &http,
        &arm,
        "https%3A%2F%2Fmanagement.core.windows.net%2F.default",
    )
    .await;
    std::fs::write(
        &arm_kc,
        kubeconfig::render(
            "c1",
            &server,
            record.ca.cert_pem(),
            "arm",
            &UserAuth::Token(arm_token),
        ),
    )
    .unwrap();
    let (clock2, sandbox) = (clock.clone(), sandbox);
    blocking(move || {
        let ok = sandbox.kubectl(&kc, &["auth", "whoami", "-o", "json"]);
        assert!(ok.status.success(), "{}", text(&ok));
        // A token for ARM is not a token for the cluster.
        let wrong = sandbox.kubectl(&arm_kc, &["auth", "whoami"]);
        assert!(!wrong.status.success(), "{}", text(&wrong));
        assert!(
            String::from_utf8_lossy(&wrong.stderr).contains("Unauthorized"),
            "{}",
            text(&wrong)
        );
        clock2.advance(Duration::from_secs(3600));
        let expired = sandbox.kubectl(&kc, &["auth", "whoami"]);
        assert!(!expired.status.success(), "{}", text(&expired));
        assert!(
            String::from_utf8_lossy(&expired.stderr).contains("Unauthorized"),
            "{}",
            text(&expired)
        );
    })
    .await;

    // Deleting the group deletes its clusters, as a long-running operation.
    let resp = http.delete(&rg).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(http.get(&location).send().await.unwrap().status(), 202);
    let (_, got) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(got["properties"]["provisioningState"], "Deleting");
    clock.advance(Duration::from_secs(30));
    assert!(
        http.get(&location)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    // With the group gone, ARM names the group, not the cluster.
    let (code, body) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("ResourceGroupNotFound"))
    );
    let (code, body) = json_of(http.get(&rg).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("ResourceGroupNotFound"))
    );
    served.running.stop().await;
}

#[actix_web::test]
async fn credentials_without_a_data_plane_get_a_clear_error() {
    let kemu = Kemu::builder().dataplane(false).build().unwrap();
    let sandbox = Sandbox::new();
    let served = serve(kemu.clone(), &sandbox);
    let arm = served.arm.clone();
    let http = arm_client(kemu.facade_ca_pem());
    let rg = format!("{arm}/subscriptions/{SUB}/resourcegroups/rg?{V}");
    http.put(&rg)
        .json(&json!({ "location": "westeurope" }))
        .send()
        .await
        .unwrap();
    let url = format!("{}?{V}", cluster_url(&arm, "rg", "c1"));
    assert_eq!(
        http.put(&url)
            .json(&cluster_body("sys"))
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    let (_, got) = json_of(http.get(&url).send().await.unwrap()).await;
    assert_eq!(
        got["properties"]["fqdn"],
        kemu::shared::sentinel::SENTINEL_HOST
    );
    let (code, body) = json_of(
        http.post(format!(
            "{}/listClusterUserCredential?{V}",
            cluster_url(&arm, "rg", "c1")
        ))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (409, Some("OperationNotAllowed"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("data plane is not serving it")
    );

    // A cluster preloaded into the registry without AKS fields is served too.
    let mut spec = common::eks_spec("preloaded");
    spec.scope = kemu::shared::OwnerScope::Aks {
        subscription: SUB.into(),
        resource_group: "rg".into(),
        location: "westeurope".into(),
    };
    kemu.registry().create(spec).unwrap();
    let pre = cluster_url(&arm, "rg", "preloaded");
    let (code, got) = json_of(http.get(format!("{pre}?{V}")).send().await.unwrap()).await;
    assert_eq!(
        (code, got["properties"]["provisioningState"].as_str()),
        (200, Some("Succeeded"))
    );
    let stop = http.post(format!("{pre}/stop?{V}")).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    let (_, got) = json_of(http.get(format!("{pre}?{V}")).send().await.unwrap()).await;
    assert_eq!(got["properties"]["powerState"]["code"], "Stopped");

    // Once the data plane attaches, the same call hands out a working kubeconfig.
    kemu.attach_dataplane().unwrap();
    let (code, body) = json_of(
        http.post(format!(
            "{}/listClusterAdminCredential?{V}",
            cluster_url(&arm, "rg", "c1")
        ))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["kubeconfigs"][0]["name"], "clusterAdmin");
    use base64::Engine;
    let kc_text = base64::engine::general_purpose::STANDARD
        .decode(body["kubeconfigs"][0]["value"].as_str().unwrap())
        .unwrap();
    let kc = sandbox.path("admin.kubeconfig");
    std::fs::write(&kc, kc_text).unwrap();
    blocking(move || {
        let out = sandbox.kubectl(&kc, &["auth", "whoami", "-o", "json"]);
        assert!(out.status.success(), "{}", text(&out));
        let review: Value = serde_json::from_slice(&out.stdout).unwrap();
        let groups = &review["status"]["userInfo"]["groups"];
        assert!(
            groups
                .as_array()
                .unwrap()
                .contains(&json!("system:masters")),
            "{review}"
        );
    })
    .await;
    served.running.stop().await;
}

#[actix_web::test]
async fn binary_flags_configure_service_principals() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args([
            "--eks-port",
            "0",
            "--gke-port",
            "0",
            "--aks-port",
            "0",
            "--no-dataplane",
        ])
        .args(["--aks-service-principal", "app1=s3cret"])
        .arg("--run-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: kemu::server::ReadyLine = serde_json::from_str(&line).unwrap();
    let http = https_client(&std::fs::read_to_string(&ready.ca_bundle).unwrap());
    let url = format!(
        "{}/{}/oauth2/v2.0/token",
        ready.aks,
        kemu_aks::state::DEFAULT_TENANT
    );
    let form = |secret: &str| {
        format!(
            "grant_type=client_credentials&client_id=app1&client_secret={secret}&scope=x%2F.default"
        )
    };
    let (code, body) = json_of(http.post(&url).body(form("wrong")).send().await.unwrap()).await;
    assert_eq!(
        (code, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    assert_eq!(body["error_codes"][0], 7000215);
    let (code, body) = json_of(http.post(&url).body(form("s3cret")).send().await.unwrap()).await;
    assert_eq!(code, 200);
    assert!(body["access_token"].is_string());
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());
}
