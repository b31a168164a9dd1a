//! gcloud 528 drives the GKE facade end to end, fully offline: clusters,
//! node pools, upgrades, Autopilot, get-credentials and kubectl through
//! gke-gcloud-auth-plugin. Every mutating command polls its operation once
//! (DONE on the first get), so none waits on gcloud's 5-second poll.

mod common;
mod gke_support;

use common::{Sandbox, text};
use gke_support::{KemuProcess, gcloud, kubectl, operation_polls, requests};
use serde_json::Value;

/// Runs a gcloud command that must succeed; returns its output.
fn ok(sandbox: &Sandbox, url: &str, args: &[&str]) -> std::process::Output {
    let out = gcloud(sandbox, url, args);
    assert!(out.status.success(), "gcloud {args:?}: {}", text(&out));
    out
}

/// Runs a mutating gcloud command: it must succeed after exactly one
/// operations.get (DONE at once: no 5-second sleep).
fn mutate(sandbox: &Sandbox, url: &str, args: &[&str]) {
    let out = ok(sandbox, url, args);
    assert_eq!(
        operation_polls(&out),
        1,
        "gcloud {args:?} polled its operation other than once: {:?}",
        requests(&out)
    );
}

/// The Nodes kubectl lists through the auth plugin: (name, pool label).
fn nodes(sandbox: &Sandbox, kubeconfig: &std::path::Path) -> Vec<(String, String)> {
    let out = kubectl(sandbox, kubeconfig, &["get", "nodes", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("node list json");
    let items = list["items"].as_array().expect("items");
    items
        .iter()
        .map(|n| {
            let pool = n["metadata"]["labels"]["cloud.google.com/gke-nodepool"]
                .as_str()
                .unwrap_or_else(|| panic!("node without its pool label: {n}"));
            let name = n["metadata"]["name"].as_str().expect("node name");
            (name.to_owned(), pool.to_owned())
        })
        .collect()
}

/// How many of `nodes` belong to `pool`.
fn in_pool(nodes: &[(String, String)], pool: &str) -> usize {
    nodes.iter().filter(|(_, p)| p == pool).count()
}

fn json(sandbox: &Sandbox, url: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--format=json");
    let out = ok(sandbox, url, &all);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

#[test]
fn gcloud_drives_a_cluster_end_to_end() {
    let kemu = KemuProcess::start(&[]);
    let url = kemu.gke_override();
    let sb = Sandbox::new();
    let z = ["--zone", "us-central1-a"];
    let with = |args: &[&'static str]| -> Vec<&'static str> { [args, &z[..]].concat() };

    // create: Service Usage pre-flight, create, one poll, get; writes the kubeconfig.
    let out = gcloud(
        &sb,
        &url,
        &with(&["clusters", "create", "c1", "--num-nodes", "2"]),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(operation_polls(&out), 1, "{:?}", requests(&out));
    assert!(
        requests(&out).iter().any(|(m, u)| m == "GET"
            && u.contains("/v1/projects/test-proj/services/container.googleapis.com")),
        "gcloud skipped the Service Usage check: {:?}",
        requests(&out)
    );

    let c = json(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert_eq!(c["status"], "RUNNING");
    assert_eq!(c["currentNodeCount"], 2);
    assert_eq!(c["zone"], "us-central1-a");
    assert_eq!(c["nodePools"][0]["name"], "default-pool");
    assert!(
        c["masterAuth"]["clusterCaCertificate"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let endpoint = c["endpoint"].as_str().expect("endpoint").to_owned();

    let list = json(&sb, &url, &["clusters", "list"]);
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");

    // get-credentials, then kubectl through gke-gcloud-auth-plugin.
    ok(&sb, &url, &with(&["clusters", "get-credentials", "c1"]));
    let kubeconfig = sb.path("kubeconfig");
    let kc = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(kc.contains(&format!("server: https://{endpoint}")), "{kc}");
    assert!(kc.contains("command: gke-gcloud-auth-plugin"), "{kc}");
    assert!(
        kc.contains("current-context: gke_test-proj_us-central1-a_c1"),
        "{kc}"
    );
    let out = kubectl(&sb, &kubeconfig, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", text(&out));
    let version: Value = serde_json::from_slice(&out.stdout).expect("version json");
    assert_eq!(version["major"], "1");
    // The access token the plugin hands kubectl is the project owner's, with
    // cluster-admin (SelfSubjectReview needs an authenticated caller).
    let out = kubectl(&sb, &kubeconfig, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let review: Value = serde_json::from_slice(&out.stdout).expect("review json");
    let user = &review["status"]["userInfo"];
    assert_eq!(
        user["username"], "owner@test-proj.iam.gserviceaccount.com",
        "{review}"
    );
    assert!(
        user["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g == "system:masters")),
        "{review}"
    );

    // The default pool's 2 Nodes, labelled as GKE labels them.
    let listed = nodes(&sb, &kubeconfig);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(in_pool(&listed, "default-pool"), 2, "{listed:?}");

    // A Deployment rolls out on them.
    let out = kubectl(
        &sb,
        &kubeconfig,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = kubectl(
        &sb,
        &kubeconfig,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("successfully rolled out"),
        "{}",
        text(&out)
    );
    // Its pods were scheduled on the pool's Nodes.
    let out = kubectl(
        &sb,
        &kubeconfig,
        &["get", "pods", "-l", "app=web", "-o", "json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let pods: Value = serde_json::from_slice(&out.stdout).expect("pod list json");
    let placed: Vec<&str> = pods["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str())
        .collect();
    assert_eq!(placed.len(), 2, "{pods}");
    assert!(
        placed
            .iter()
            .all(|n| listed.iter().any(|(name, _)| name == n)),
        "pods on unknown nodes: {placed:?} vs {listed:?}"
    );

    // resize the only pool.
    mutate(
        &sb,
        &url,
        &with(&["clusters", "resize", "c1", "--num-nodes", "3"]),
    );
    let c = json(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert_eq!(c["currentNodeCount"], 3);
    let listed = nodes(&sb, &kubeconfig);
    assert_eq!(listed.len(), 3, "resize did not add a Node: {listed:?}");

    // node pools.
    let cl = ["--cluster", "c1", "--zone", "us-central1-a"];
    let pool = |args: &[&'static str]| -> Vec<&'static str> { [args, &cl[..]].concat() };
    mutate(
        &sb,
        &url,
        &pool(&[
            "node-pools",
            "create",
            "np2",
            "--num-nodes",
            "1",
            "--machine-type",
            "e2-standard-4",
        ]),
    );
    let pools = json(&sb, &url, &pool(&["node-pools", "list"]));
    let names: Vec<&str> = pools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["default-pool", "np2"]);
    let np = json(&sb, &url, &pool(&["node-pools", "describe", "np2"]));
    assert_eq!(np["config"]["machineType"], "e2-standard-4");
    assert_eq!(np["status"], "RUNNING");
    mutate(
        &sb,
        &url,
        &pool(&[
            "node-pools",
            "update",
            "np2",
            "--enable-autoscaling",
            "--min-nodes",
            "1",
            "--max-nodes",
            "3",
        ]),
    );
    mutate(
        &sb,
        &url,
        &pool(&["node-pools", "update", "np2", "--node-labels", "team=a"]),
    );
    let np = json(&sb, &url, &pool(&["node-pools", "describe", "np2"]));
    assert_eq!(np["autoscaling"]["enabled"], true);
    assert_eq!(np["autoscaling"]["maxNodeCount"], 3);
    assert_eq!(np["config"]["labels"]["team"], "a");
    let c = json(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert_eq!(c["currentNodeCount"], 4);
    let listed = nodes(&sb, &kubeconfig);
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert_eq!(in_pool(&listed, "np2"), 1, "{listed:?}");
    mutate(&sb, &url, &pool(&["node-pools", "delete", "np2"]));
    let pools = json(&sb, &url, &pool(&["node-pools", "list"]));
    assert_eq!(pools.as_array().map(Vec::len), Some(1));
    let listed = nodes(&sb, &kubeconfig);
    assert_eq!(listed.len(), 3, "np2's Node outlived its pool: {listed:?}");
    assert_eq!(in_pool(&listed, "np2"), 0, "{listed:?}");

    // master upgrade.
    mutate(
        &sb,
        &url,
        &with(&[
            "clusters",
            "upgrade",
            "c1",
            "--master",
            "--cluster-version",
            "1.33",
        ]),
    );
    let c = json(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert!(
        c["currentMasterVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.33.")),
        "{c}"
    );

    // labels, with the fingerprint gcloud sends back.
    mutate(
        &sb,
        &url,
        &with(&["clusters", "update", "c1", "--update-labels", "env=dev"]),
    );
    let c = json(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert_eq!(c["resourceLabels"]["env"], "dev");

    // Autopilot: regional, three zones.
    mutate(
        &sb,
        &url,
        &["clusters", "create-auto", "ap1", "--region", "us-central1"],
    );
    let ap = json(
        &sb,
        &url,
        &["clusters", "describe", "ap1", "--region", "us-central1"],
    );
    assert_eq!(ap["autopilot"]["enabled"], true);
    assert_eq!(ap["locations"].as_array().map(Vec::len), Some(3));
    let list = json(&sb, &url, &["clusters", "list"]);
    assert_eq!(list.as_array().map(Vec::len), Some(2));

    // operations list shows what ran.
    let ops = json(&sb, &url, &["operations", "list"]);
    let kinds: Vec<&str> = ops
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["operationType"].as_str())
        .collect();
    assert!(
        kinds.contains(&"CREATE_CLUSTER") && kinds.contains(&"SET_NODE_POOL_SIZE"),
        "{kinds:?}"
    );

    // delete, then describe is NOT_FOUND.
    mutate(&sb, &url, &with(&["clusters", "delete", "c1"]));
    let out = gcloud(&sb, &url, &with(&["clusters", "describe", "c1"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("code=404")
            && stderr
                .contains("Not found: projects/test-proj/locations/us-central1-a/clusters/c1."),
        "{}",
        text(&out)
    );
    mutate(
        &sb,
        &url,
        &["clusters", "delete", "ap1", "--region", "us-central1"],
    );
}

#[test]
fn creating_an_existing_cluster_is_already_exists() {
    let kemu = KemuProcess::start(&[]);
    let url = kemu.gke_override();
    let sb = Sandbox::new();
    let args = [
        "clusters",
        "create",
        "dup",
        "--zone",
        "us-central1-b",
        "--num-nodes",
        "1",
    ];
    ok(&sb, &url, &args);
    let out = gcloud(&sb, &url, &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("code=409"),
        "{}",
        text(&out)
    );
}

#[test]
fn get_credentials_without_the_data_plane_fails_clearly() {
    let kemu = KemuProcess::start(&["--no-dataplane"]);
    let url = kemu.gke_override();
    let sb = Sandbox::new();
    let out = ok(
        &sb,
        &url,
        &[
            "clusters",
            "create",
            "c1",
            "--zone",
            "us-central1-a",
            "--num-nodes",
            "1",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("kemu runs without its data plane"),
        "create does not warn: {}",
        text(&out)
    );
    let c = json(
        &sb,
        &url,
        &["clusters", "describe", "c1", "--zone", "us-central1-a"],
    );
    assert_eq!(c["endpoint"], "dataplane-not-live.kemu.invalid:443");
    assert!(c["masterAuth"].get("clusterCaCertificate").is_none(), "{c}");

    let _ = std::fs::remove_file(sb.path("kubeconfig"));
    let out = gcloud(
        &sb,
        &url,
        &[
            "clusters",
            "get-credentials",
            "c1",
            "--zone",
            "us-central1-a",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the data plane is not serving cluster"),
        "{}",
        text(&out)
    );
    assert!(
        !sb.path("kubeconfig").exists(),
        "a kubeconfig was written anyway"
    );
}

#[test]
fn private_clusters_channels_and_node_upgrades() {
    let kemu = KemuProcess::start(&[]);
    let url = kemu.gke_override();
    let sb = Sandbox::new();
    let z = ["--zone", "us-central1-a"];
    let with = |args: &[&'static str]| -> Vec<&'static str> { [args, &z[..]].concat() };
    mutate(
        &sb,
        &url,
        &with(&[
            "clusters",
            "create",
            "pv1",
            "--num-nodes",
            "1",
            "--cluster-version",
            "1.32",
            "--enable-ip-alias",
            "--enable-private-nodes",
            "--master-ipv4-cidr",
            "172.16.0.0/28",
            "--enable-master-authorized-networks",
            "--master-authorized-networks",
            "10.0.0.0/8,192.168.0.0/16",
            "--release-channel",
            "regular",
            "--workload-pool",
            "test-proj.svc.id.goog",
            "--labels",
            "env=ci",
        ]),
    );
    let c = json(&sb, &url, &with(&["clusters", "describe", "pv1"]));
    assert_eq!(c["privateClusterConfig"]["enablePrivateNodes"], true);
    assert_eq!(c["privateClusterConfig"]["privateEndpoint"], "172.16.0.2");
    assert_eq!(c["networkConfig"]["defaultEnablePrivateNodes"], true);
    assert_eq!(
        c["networkConfig"]["network"],
        "projects/-/global/networks/default"
    );
    let legacy = &c["masterAuthorizedNetworksConfig"];
    let current = &c["controlPlaneEndpointsConfig"]["ipEndpointsConfig"];
    assert_eq!(
        legacy["cidrBlocks"][1]["cidrBlock"], "192.168.0.0/16",
        "{c}"
    );
    assert_eq!(&current["authorizedNetworksConfig"], legacy);
    assert_eq!(current["enabled"], true);
    assert_eq!(c["releaseChannel"]["channel"], "REGULAR");
    assert_eq!(
        c["workloadIdentityConfig"]["workloadPool"],
        "test-proj.svc.id.goog"
    );
    assert_eq!(c["resourceLabels"]["env"], "ci");
    assert!(
        c["currentMasterVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.32.")),
        "{c}"
    );

    // The IP endpoint stays enabled, so get-credentials writes a working kubeconfig.
    ok(&sb, &url, &with(&["clusters", "get-credentials", "pv1"]));
    let out = kubectl(&sb, &sb.path("kubeconfig"), &["auth", "whoami"]);
    assert!(out.status.success(), "{}", text(&out));

    // Master, then nodes (to the master's version: `desiredNodeVersion: "-"`).
    mutate(
        &sb,
        &url,
        &with(&[
            "clusters",
            "upgrade",
            "pv1",
            "--master",
            "--cluster-version",
            "1.33",
        ]),
    );
    let c = json(&sb, &url, &with(&["clusters", "describe", "pv1"]));
    assert!(
        c["currentNodeVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.32.")),
        "{c}"
    );
    mutate(&sb, &url, &with(&["clusters", "upgrade", "pv1"]));
    let c = json(&sb, &url, &with(&["clusters", "describe", "pv1"]));
    assert_eq!(c["currentNodeVersion"], c["currentMasterVersion"], "{c}");

    // operations describe; cancelling a finished one is refused.
    let ops = json(&sb, &url, &["operations", "list"]);
    let last = ops.as_array().and_then(|o| o.last()).expect("an operation");
    let name = last["name"].as_str().unwrap().to_owned();
    let zone = "--zone=us-central1-a";
    let op = json(&sb, &url, &["operations", "describe", &name, zone]);
    assert_eq!(op["operationType"], "UPGRADE_NODES");
    assert_eq!(op["status"], "DONE");
    let out = gcloud(&sb, &url, &["operations", "cancel", &name, zone]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FAILED_PRECONDITION"),
        "{}",
        text(&out)
    );
}
