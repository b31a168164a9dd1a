//! The GKE wire protocol in-process, on a fake clock: provisioning delays,
//! operations RUNNING until the clock reaches their end, FAILED_PRECONDITION
//! while one runs, `enum-encoding=int`, 401 without a token, the compute
//! instance group managers terraform reads, and the access-token
//! authenticator of the clusters' Kubernetes API.

use std::time::Duration;

use actix_web::{App, test};
use kemu::shared::{Cloud, Lifecycle};
use kemu::{FakeClock, Kemu};
use kemu_gke::{Gke, GkeOptions};
use serde_json::{Value, json};

const P: &str = "/v1/projects/p/locations/us-central1-a";

/// Sends one request with a bearer token; returns status and JSON body.
macro_rules! call {
    ($app:expr, $method:expr, $path:expr, $body:expr $(,)?) => {{
        let body: Option<Value> = $body;
        let mut req = test::TestRequest::default()
            .method($method.parse().unwrap())
            .uri(&$path)
            .insert_header(("authorization", "Bearer t"));
        if let Some(b) = body {
            req = req.set_json(b);
        }
        let resp = test::call_service(&$app, req.to_request()).await;
        let status = resp.status().as_u16();
        let body: Value = test::read_body_json(resp).await;
        (status, body)
    }};
}

fn kemu(clock: &std::sync::Arc<FakeClock>) -> Kemu {
    Kemu::builder()
        .clock(clock.clone())
        .dataplane(false)
        .build()
        .unwrap()
}

#[actix_web::test]
async fn provisioning_follows_the_clock() {
    let clock = FakeClock::at_epoch();
    let kemu = kemu(&clock);
    let gke = Gke::with_options(
        kemu.registry().clone(),
        GkeOptions {
            provisioning: Duration::from_secs(30),
        },
    );
    let app = test::init_service(App::new().configure(|c| gke.configure(c))).await;

    let (code, op) = call!(
        app,
        "POST",
        &format!("{P}/clusters"),
        Some(
            json!({"cluster": {"name": "c1", "initialNodeCount": 2, "someFutureField": {"x": 1}}})
        ),
    );
    assert_eq!(code, 200, "{op}");
    assert_eq!(op["status"], "RUNNING");
    let op_path = format!("{P}/operations/{}", op["name"].as_str().unwrap());

    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["status"], "PROVISIONING");
    assert!(
        c.get("endpoint").is_none(),
        "no endpoint while provisioning: {c}"
    );
    assert_eq!(
        c["someFutureField"]["x"], 1,
        "unknown request fields are kept"
    );
    let (_, o) = call!(app, "GET", &op_path, None);
    assert_eq!(o["status"], "RUNNING");

    // Another mutation while the create runs is refused, and changes nothing.
    let (code, e) = call!(
        app,
        "POST",
        &format!("{P}/clusters/c1/nodePools/default-pool:setSize"),
        Some(json!({"nodeCount": 5})),
    );
    assert_eq!(code, 400, "{e}");
    assert_eq!(e["error"]["status"], "FAILED_PRECONDITION");

    clock.advance(Duration::from_secs(30));
    let (_, o) = call!(app, "GET", &op_path, None);
    assert_eq!(o["status"], "DONE");
    assert!(o["endTime"].is_string());
    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["status"], "RUNNING");
    assert_eq!(c["currentNodeCount"], 2);
    // No data plane: the sentinel endpoint, and no CA.
    assert_eq!(c["endpoint"], "dataplane-not-live.kemu.invalid:443");
    assert_eq!(c["masterAuth"], json!({}));
    assert_eq!(
        c["controlPlaneEndpointsConfig"]["ipEndpointsConfig"]["enabled"],
        true
    );

    // An update keeps the cluster RECONCILING until the clock passes.
    let (_, op) = call!(
        app,
        "PUT",
        &format!("{P}/clusters/c1"),
        Some(json!({"update": {"desiredLoggingService": "none"}})),
    );
    assert_eq!(op["operationType"], "UPDATE_CLUSTER");
    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["status"], "RECONCILING");
    assert_eq!(c["loggingService"], "none");
    clock.advance(Duration::from_secs(30));

    // A new pool provisions, then runs.
    let (_, _) = call!(
        app,
        "POST",
        &format!("{P}/clusters/c1/nodePools"),
        Some(json!({"nodePool": {"name": "np2", "initialNodeCount": 1}})),
    );
    let (_, np) = call!(app, "GET", &format!("{P}/clusters/c1/nodePools/np2"), None);
    assert_eq!(np["status"], "PROVISIONING");
    clock.advance(Duration::from_secs(30));
    let (_, np) = call!(app, "GET", &format!("{P}/clusters/c1/nodePools/np2"), None);
    assert_eq!(np["status"], "RUNNING");

    // Delete: STOPPING, then gone.
    let (_, op) = call!(app, "DELETE", &format!("{P}/clusters/c1"), None);
    assert_eq!(op["operationType"], "DELETE_CLUSTER");
    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["status"], "STOPPING");
    clock.advance(Duration::from_secs(30));
    let (code, e) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(code, 404);
    assert_eq!(
        e["error"]["message"],
        "Not found: projects/p/locations/us-central1-a/clusters/c1."
    );
}

#[actix_web::test]
async fn a_cancelled_operation_reports_why() {
    let clock = FakeClock::at_epoch();
    let kemu = kemu(&clock);
    let gke = Gke::with_options(
        kemu.registry().clone(),
        GkeOptions {
            provisioning: Duration::from_secs(30),
        },
    );
    let app = test::init_service(App::new().configure(|c| gke.configure(c))).await;
    let (_, op) = call!(
        app,
        "POST",
        &format!("{P}/clusters"),
        Some(json!({"cluster": {"name": "c1"}}))
    );
    let name = op["name"].as_str().unwrap();
    let (code, _) = call!(
        app,
        "POST",
        &format!("{P}/operations/{name}:cancel"),
        Some(json!({}))
    );
    assert_eq!(code, 200);
    let (_, o) = call!(
        app,
        "GET",
        &format!("/v1/projects/p/zones/us-central1-a/operations/{name}"),
        None
    );
    assert_eq!(o["status"], "DONE");
    assert_eq!(o["statusMessage"], "Operation was cancelled.");
    assert_eq!(o["error"]["message"], "Operation was cancelled.");
}

#[actix_web::test]
async fn wire_details() {
    let clock = FakeClock::at_epoch();
    let kemu = kemu(&clock);
    let gke = Gke::new(kemu.registry().clone());
    let app = test::init_service(App::new().configure(|c| gke.configure(c))).await;

    // 401 without a token, in google.rpc.Status form.
    let resp = test::call_service(
        &app,
        test::TestRequest::get()
            .uri(&format!("{P}/clusters"))
            .to_request(),
    )
    .await;
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers().contains_key("www-authenticate"));
    let e: Value = test::read_body_json(resp).await;
    assert_eq!(e["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(e["error"]["code"], 401);

    // Enums in as numbers; out as numbers only when asked.
    let (code, op) = call!(
        app,
        "POST",
        &format!("{P}/clusters?$alt=json;enum-encoding=int"),
        Some(
            json!({"cluster": {"name": "c1", "releaseChannel": {"channel": 3},
            "nodePools": [{"name": "default-pool", "initialNodeCount": 1}]}})
        ),
    );
    assert_eq!(code, 200, "{op}");
    assert_eq!(op["operationType"], 1);
    assert_eq!(op["status"], 2);
    let (_, c) = call!(
        app,
        "GET",
        &format!("{P}/clusters/c1?%24alt=json%3Benum-encoding%3Dint"),
        None
    );
    assert_eq!(c["status"], 2);
    assert_eq!(c["releaseChannel"]["channel"], 3);
    assert_eq!(c["nodePools"][0]["status"], 2);
    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["status"], "RUNNING");
    assert_eq!(c["releaseChannel"]["channel"], "STABLE");

    // Bad input: the wire error, nothing changed.
    for (path, body, status) in [
        (
            format!("{P}/clusters"),
            json!({"cluster": {"name": "Bad"}}),
            "INVALID_ARGUMENT",
        ),
        (
            format!("{P}/clusters"),
            json!({"cluster": {"name": "c1"}}),
            "ALREADY_EXISTS",
        ),
        (
            format!("{P}/clusters/c1/nodePools/default-pool:setSize"),
            json!({"nodeCount": -1}),
            "INVALID_ARGUMENT",
        ),
        (
            format!("{P}/clusters/c1:setLocations"),
            json!({"locations": ["europe-west1-b"]}),
            "INVALID_ARGUMENT",
        ),
        (
            format!("{P}/clusters/c1:completeIpRotation"),
            json!({}),
            "FAILED_PRECONDITION",
        ),
        (
            format!("{P}/clusters/zz/nodePools"),
            json!({"nodePool": {"name": "a"}}),
            "NOT_FOUND",
        ),
    ] {
        let (_, e) = call!(app, "POST", &path, Some(body));
        assert_eq!(e["error"]["status"], status, "{path}: {e}");
    }
    // Counts are int32 fields: out of range is the front end's refusal, never
    // a default; a pool is at most 1000 nodes a zone.
    for (path, body, message) in [
        (
            format!("{P}/clusters"),
            json!({"cluster": {"name": "huge", "initialNodeCount": 9223372036854775808u64}}),
            "Invalid value at 'cluster.initial_node_count' (TYPE_INT32), 9223372036854775808",
        ),
        (
            format!("{P}/clusters"),
            json!({"cluster": {"name": "huge", "nodePools": [{"name": "p", "initialNodeCount": "2147483648"}]}}),
            "Invalid value at 'cluster.node_pools[0].initial_node_count' (TYPE_INT32), \"2147483648\"",
        ),
        (
            format!("{P}/clusters"),
            json!({"cluster": {"name": "huge", "initialNodeCount": 5000}}),
            "Invalid value for field \"cluster.initial_node_count\": \"5000\". A node pool may have at most 1000 nodes per zone.",
        ),
        (
            format!("{P}/clusters/c1/nodePools"),
            json!({"nodePool": {"name": "big", "initialNodeCount": 1.5}}),
            "Invalid value at 'node_pool.initial_node_count' (TYPE_INT32), 1.5",
        ),
        (
            format!("{P}/clusters/c1/nodePools/default-pool:setSize"),
            json!({"nodeCount": 5000}),
            "Invalid value for field \"node_count\": \"5000\". A node pool may have at most 1000 nodes per zone.",
        ),
    ] {
        let (code, e) = call!(app, "POST", &path, Some(body));
        assert_eq!(
            (code, e["error"]["status"].as_str()),
            (400, Some("INVALID_ARGUMENT")),
            "{path}: {e}"
        );
        assert_eq!(e["error"]["message"], message);
    }
    let (_, listed) = call!(app, "GET", &format!("{P}/clusters"), None);
    assert_eq!(
        listed["clusters"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let resp = test::call_service(
        &app,
        test::TestRequest::post()
            .uri(&format!("{P}/clusters"))
            .insert_header(("authorization", "Bearer t"))
            .set_payload("{not json")
            .to_request(),
    )
    .await;
    assert_eq!(resp.status().as_u16(), 400);
    let (_, c) = call!(app, "GET", &format!("{P}/clusters/c1"), None);
    assert_eq!(c["currentNodeCount"], 1);
    assert_eq!(c["locations"], json!(["us-central1-a"]));

    // Service Usage pre-flight and server config.
    let (_, s) = call!(
        app,
        "GET",
        "/v1/projects/p/services/container.googleapis.com",
        None
    );
    assert_eq!(s["state"], "ENABLED");
    let (_, cfg) = call!(
        app,
        "GET",
        "/v1/projects/p/zones/us-central1-a/serverconfig",
        None
    );
    assert!(
        cfg["validMasterVersions"]
            .as_array()
            .is_some_and(|v| !v.is_empty())
    );

    // The instance group managers behind instanceGroupUrls, with the pool's size.
    let url = c["nodePools"][0]["instanceGroupUrls"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let igm = url.rsplit('/').next().unwrap();
    let (_, list) = call!(
        app,
        "GET",
        "/compute/v1/projects/p/zones/us-central1-a/instanceGroupManagers",
        None
    );
    assert_eq!(list["items"][0]["name"], igm);
    assert_eq!(list["items"][0]["targetSize"], 1);
    let (_, one) = call!(
        app,
        "GET",
        &format!("/compute/v1/projects/p/zones/us-central1-a/instanceGroupManagers/{igm}"),
        None,
    );
    assert_eq!(one["selfLink"], url);

    // Regional clusters span three zones; a pool of N per zone is 3N Nodes.
    let (_, _) = call!(
        app,
        "POST",
        "/v1/projects/p/locations/us-east1/clusters",
        Some(
            json!({"cluster": {"name": "r1", "nodePools": [{"name": "default-pool", "initialNodeCount": 2}]}})
        ),
    );
    let (_, r) = call!(
        app,
        "GET",
        "/v1/projects/p/locations/us-east1/clusters/r1",
        None
    );
    assert_eq!(r["currentNodeCount"], 6);
    assert_eq!(
        r["nodePools"][0]["instanceGroupUrls"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let (_, all) = call!(app, "GET", "/v1/projects/p/locations/-/clusters", None);
    assert_eq!(all["clusters"].as_array().map(Vec::len), Some(2));
}

#[actix_web::test]
async fn node_pools_become_shared_pools_with_gke_labels_and_tokens_authenticate() {
    let clock = FakeClock::at_epoch();
    let kemu = kemu(&clock);
    let registry = kemu.registry().clone();
    let gke = Gke::new(registry.clone());
    let app = test::init_service(App::new().configure(|c| gke.configure(c))).await;
    let (code, _) = call!(
        app,
        "POST",
        &format!("{P}/clusters"),
        Some(
            json!({"cluster": {"name": "c1", "nodePools": [{"name": "pool-a", "initialNodeCount": 2,
            "config": {"machineType": "n2-standard-8", "labels": {"team": "x"},
                "taints": [{"key": "gpu", "value": "yes", "effect": "NO_EXECUTE"}]}}]}})
        ),
    );
    assert_eq!(code, 200);
    let record = registry.list_cloud(Cloud::Gke).pop().expect("cluster");
    assert_eq!(record.lifecycle, Lifecycle::Running);
    let pool = &record.node_pools[0];
    assert_eq!((pool.name.as_str(), pool.count), ("pool-a", 2));
    assert_eq!(pool.machine_type, "n2-standard-8");
    for (k, v) in [
        ("cloud.google.com/gke-nodepool", "pool-a"),
        ("cloud.google.com/machine-family", "n2"),
        ("node.kubernetes.io/instance-type", "n2-standard-8"),
        ("topology.kubernetes.io/zone", "us-central1-a"),
        ("topology.kubernetes.io/region", "us-central1"),
        ("team", "x"),
    ] {
        assert_eq!(pool.labels.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert_eq!(pool.taints[0].effect, "NoExecute");

    // Any access token is the project owner's, with cluster-admin;
    // ServiceAccount JWTs are left to the data plane.
    let user = registry
        .authenticate_token(&record, "ya29.anything")
        .unwrap()
        .unwrap();
    assert_eq!(user.username, "owner@p.iam.gserviceaccount.com");
    assert!(user.groups.iter().any(|g| g == "system:masters"));
    assert_eq!(
        registry
            .authenticate_token(&record, "eyJhbGciOi.eyJzdWIi.c2ln")
            .unwrap(),
        None
    );
}
