//! `kemu --fixture fixtures/examples/multi-cloud.yaml`: the ready line lists a
//! kubeconfig per cluster, kubectl sees each cluster's workload Available,
//! and the real `aws`, `gcloud` and `az` CLIs see the three clusters.

mod common;
mod eks_support;
mod gke_support;

use std::path::{Path, PathBuf};

use common::aks::{az_json, login};
use common::{Sandbox, text};
use serde_json::Value;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/examples/multi-cloud.yaml")
}

#[test]
fn example_fixture_loads_and_every_cloud_cli_sees_it() {
    let example = example();
    let kemu = gke_support::KemuProcess::start(&["--fixture", example.to_str().unwrap()]);
    let ready = &kemu.ready;
    let sandbox = Sandbox::new();

    let names: Vec<(&str, &str)> = ready
        .clusters
        .iter()
        .map(|c| (c.cloud.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [("eks", "shop"), ("gke", "analytics"), ("aks", "payments")]
    );

    // kubectl with the kubeconfigs from the ready line: every Deployment is
    // Available with all its replicas, and the Service and ConfigMap are there.
    let expected = [
        ("shop", "default", "shop-web", 3),
        ("analytics", "default", "analytics-ui", 2),
        ("payments", "payments", "payments-api", 2),
    ];
    for (cluster, ns, deploy, replicas) in expected {
        let entry = ready.clusters.iter().find(|c| c.name == cluster).unwrap();
        let kubeconfig = Path::new(&entry.kubeconfig);
        let out = sandbox.kubectl(
            kubeconfig,
            &[
                "get",
                "deploy",
                "-n",
                ns,
                "-o",
                "json",
                "--show-managed-fields",
            ],
        );
        assert!(out.status.success(), "kubectl get deploy: {}", text(&out));
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["metadata"]["name"] == deploy)
            .unwrap_or_else(|| panic!("{cluster}: no deployment {deploy}: {list}"));
        let available = d["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        assert!(
            available,
            "{cluster}/{deploy} not Available: {}",
            d["status"]
        );
        assert_eq!(d["status"]["readyReplicas"], replicas, "{}", d["status"]);
        // Server-side applied: the fixture's field manager owns what it set.
        let applied = d["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["manager"] == "kemu-fixture" && m["operation"] == "Apply");
        assert!(applied, "{}", d["metadata"]["managedFields"]);
        let out = sandbox.kubectl(kubeconfig, &["get", "svc,cm", "-n", ns, "-o", "name"]);
        assert!(out.status.success(), "kubectl get svc,cm: {}", text(&out));
        let names = String::from_utf8_lossy(&out.stdout);
        assert!(names.contains(&format!("service/{deploy}")), "{names}");
        assert!(names.contains("configmap/"), "{names}");
    }

    // The GKE fixture's Job ran on the tainted batch pool and completed.
    let analytics = Path::new(&ready.clusters[1].kubeconfig);
    let out = sandbox.kubectl(analytics, &["get", "job", "nightly-report", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let job: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["status"]["succeeded"], 1, "{}", job["status"]);

    // aws eks describe-cluster: ACTIVE, its endpoint the kubeconfig's server.
    let aws = eks_support::Aws::new(&sandbox, &ready.eks);
    let shop = aws.json(&["describe-cluster", "--name", "shop"]);
    assert_eq!(shop["cluster"]["status"], "ACTIVE");
    assert_eq!(shop["cluster"]["tags"]["team"], "shop");
    let kubeconfig = std::fs::read_to_string(&ready.clusters[0].kubeconfig).unwrap();
    let endpoint = shop["cluster"]["endpoint"].as_str().unwrap();
    assert!(
        kubeconfig.contains(endpoint),
        "{endpoint} not in {kubeconfig}"
    );
    let groups = aws.json(&[
        "describe-nodegroup",
        "--cluster-name",
        "shop",
        "--nodegroup-name",
        "general",
    ]);
    assert_eq!(groups["nodegroup"]["scalingConfig"]["desiredSize"], 2);
    assert_eq!(groups["nodegroup"]["instanceTypes"][0], "m5.large");

    // gcloud container clusters describe: RUNNING with both node pools.
    let gke_url = kemu.gke_override();
    let out = gke_support::cloud_command(&sandbox, "gcloud", &gke_url)
        .args([
            "container",
            "clusters",
            "describe",
            "analytics",
            "--zone",
            "us-central1-a",
            "--project",
            "kemu-demo",
            "--format",
            "json",
        ])
        .output()
        .expect("run gcloud");
    assert!(out.status.success(), "gcloud describe: {}", text(&out));
    let analytics: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analytics["status"], "RUNNING");
    let pools: Vec<&str> = analytics["nodePools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(pools, ["default-pool", "batch"]);

    // az aks show: Succeeded, with the fixture's pool.
    let ca = PathBuf::from(&ready.ca_bundle);
    let out = login(
        &sandbox,
        &ready.aks,
        &ca,
        "11111111-2222-3333-4444-555555555555",
        "any-secret",
    );
    assert!(out.status.success(), "az login: {}", text(&out));
    let payments = az_json(
        &sandbox,
        &ca,
        &["aks", "show", "-g", "rg-payments", "-n", "payments"],
    );
    assert_eq!(payments["provisioningState"], "Succeeded");
    assert_eq!(payments["location"], "westeurope");
    assert_eq!(payments["agentPoolProfiles"][0]["name"], "system");
    assert_eq!(payments["agentPoolProfiles"][0]["count"], 2);
}
