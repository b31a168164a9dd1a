//! What kemu served, as a user reads it: `kemu requests` (a table, JSON
//! lines, filters, `--follow`) and `--request-log FILE` list the aws, gcloud
//! and kubectl calls with their cluster, caller, status and reason; the
//! admin endpoint's and a cluster's `/metrics` parse with prometheus_client
//! and their counters move as requests are made.

mod common;
mod eks_support;
mod gke_support;

use std::io::BufRead;
use std::process::{Command, Stdio};

use common::{Sandbox, text};
use gke_support::KemuProcess;
use serde_json::Value;

const FIXTURE: &str = "clusters:\n  - {cloud: eks, name: obs, region: us-east-1, nodePools: [{name: ng, count: 1}]}\n";

fn kemu_cli(admin: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .arg("requests")
        .args(["--admin", admin])
        .args(args)
        .output()
        .expect("run kemu requests");
    assert!(
        out.status.success(),
        "kemu requests {args:?}: {}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn records(admin: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    kemu_cli(admin, &all)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn scrape(sandbox: &Sandbox, url: &str, selectors: &[&str]) -> Value {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/metrics_scrape.py");
    let out = sandbox
        .command("python3")
        .arg(script)
        .arg(url)
        .args(selectors)
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("scrape json")
}

fn find(records: &[Value], pred: impl Fn(&Value) -> bool) -> &Value {
    records
        .iter()
        .find(|r| pred(r))
        .unwrap_or_else(|| panic!("no such record in {records:#?}"))
}

#[test]
fn requests_and_metrics_show_what_every_client_did() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.path("fixture.yaml");
    std::fs::write(&fixture, FIXTURE).unwrap();
    let log = sandbox.path("requests.jsonl");
    let kemu = KemuProcess::start(&[
        "--fixture",
        fixture.to_str().unwrap(),
        "--request-log",
        log.to_str().unwrap(),
    ]);
    let admin = kemu.ready.admin.clone();
    let kubeconfig = kemu.ready.clusters[0].kubeconfig.clone();

    let aws = eks_support::Aws::new(&sandbox, &kemu.ready.eks);
    aws.ok(&["describe-cluster", "--name", "obs"]);
    let out = aws.eks(&["describe-cluster", "--name", "nope"]);
    assert!(!out.status.success());
    let out = gke_support::gcloud(
        &sandbox,
        &kemu.gke_override(),
        &["clusters", "describe", "nope", "--zone", "us-central1-a"],
    );
    assert!(!out.status.success());
    let kubectl = |args: &[&str]| aws.kubectl(std::path::Path::new(&kubeconfig), args);
    let out = kubectl(&["get", "configmap", "nope"]);
    assert!(!out.status.success());
    let out = kubectl(&["get", "pods", "-A"]);
    assert!(out.status.success(), "{}", text(&out));

    let all = records(&admin, &[]);
    let describe = find(&all, |r| {
        r["api"] == "eks" && r["verb"] == "DescribeCluster" && r["status"] == 200
    });
    assert_eq!(describe["cluster"], "obs");
    assert_eq!(describe["caller"], "test");
    let missing = find(&all, |r| r["api"] == "eks" && r["status"] == 404);
    assert!(
        missing["reason"]
            .as_str()
            .unwrap()
            .contains("No cluster found for name: nope."),
        "{missing}"
    );
    find(&all, |r| {
        r["api"] == "gke" && r["status"] == 404 && r["cluster"] == "nope"
    });
    let cm = find(&all, |r| {
        r["api"] == "kubernetes" && r["resource"] == "configmaps" && r["status"] == 404
    });
    assert_eq!(cm["cluster"], "obs");
    assert_eq!(cm["verb"], "get");
    assert_eq!(cm["reason"], "NotFound: configmaps \"nope\" not found");
    assert!(cm["caller"].as_str().is_some_and(|c| !c.is_empty()), "{cm}");
    find(&all, |r| {
        r["resource"] == "pods" && r["verb"] == "list" && r["status"] == 200
    });

    // Filters, and the table a terminal gets.
    let errors = records(&admin, &["--cluster", "obs", "--status", "4xx"]);
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|r| {
        r["cluster"] == "obs"
            && r["status"]
                .as_u64()
                .is_some_and(|s| (400..500).contains(&s))
    }));
    let table = kemu_cli(&admin, &["--api", "kubernetes", "--status", "404"]);
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("TIME"), "{table}");
    assert!(
        lines.any(|l| l.contains("obs") && l.contains("configmaps") && l.contains(" 404 ")),
        "{table}"
    );
    // The file holds the same records.
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        logged.len() >= all.len(),
        "{} < {}",
        logged.len(),
        all.len()
    );
    assert!(logged.contains(cm));

    // The admin endpoint's metrics, and a counter that moves.
    let metrics = format!("{admin}/metrics");
    let selectors = [
        "apiserver_request_total{cluster=obs,resource=configmaps,verb=GET,code=404,scope=resource}",
        "kemu_facade_requests_total{cloud=eks,operation=DescribeCluster,code=404}",
        "kemu_clusters{cloud=eks}",
        "apiserver_storage_objects{cluster=obs,resource=nodes}",
        "workqueue_adds_total{cluster=obs,name=namespace}",
        "kemu_watchers{cluster=obs,resource=pods}",
    ];
    let before = scrape(&sandbox, &metrics, &selectors);
    assert_eq!(before[selectors[0]], 1.0, "{before}");
    assert_eq!(before[selectors[1]], 1.0, "{before}");
    assert_eq!(before[selectors[2]], 1.0, "{before}");
    assert_eq!(before[selectors[3]], 1.0, "{before}");
    // The controllers' queues and the store's watches (informers included).
    assert!(before[selectors[4]].as_f64().unwrap() >= 1.0, "{before}");
    assert!(before[selectors[5]].as_f64().unwrap() >= 1.0, "{before}");
    assert!(!kubectl(&["get", "configmap", "nope"]).status.success());
    let after = scrape(&sandbox, &metrics, &selectors);
    assert_eq!(after[selectors[0]], 2.0, "{after}");

    // The cluster's own /metrics, to its admin.
    let out = kubectl(&["get", "--raw", "/metrics"]);
    assert!(out.status.success(), "{}", text(&out));
    let own = String::from_utf8_lossy(&out.stdout);
    assert!(own.contains("apiserver_request_total{code=\"404\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 2\n"), "{own}");
    assert!(
        own.contains("apiserver_storage_objects{resource=\"nodes\"} 1\n"),
        "{own}"
    );
    assert!(!own.contains("cluster=\""));
    assert!(
        own.contains("# TYPE workqueue_depth gauge\n")
            && own.contains("workqueue_depth{name=\"deployment\"} ")
            && own.contains("workqueue_adds_total{name=\"scheduler\"} "),
        "{own}"
    );

    // --follow prints what comes next.
    let mut follow = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args([
            "requests",
            "--follow",
            "--json",
            "--api",
            "kubernetes",
            "--status",
            "404",
            "--admin",
            &admin,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kemu requests --follow");
    let mut reader = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut line = String::new();
    // The two 404s so far come first, then the next one.
    for _ in 0..2 {
        line.clear();
        reader.read_line(&mut line).unwrap();
    }
    assert!(!kubectl(&["get", "secret", "nope"]).status.success());
    line.clear();
    reader.read_line(&mut line).unwrap();
    let next: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(next["resource"], "secrets", "{line}");
    let _ = follow.kill();
    let _ = follow.wait();
}

const CLOUDS: &str = "clusters:
  - {cloud: eks, name: web, region: us-east-1, nodePools: [{name: ng, count: 1}]}
  - {cloud: gke, name: data, project: kemu-project, location: us-central1-a, nodePools: [{name: pool, count: 1}]}
  - {cloud: aks, name: pay, subscription: 00000000-0000-0000-0000-00000000b2b2, resourceGroup: rg-pay, location: westeurope}
";

/// Runs `script` in bash in the sandbox with the `kemu` binary on PATH.
fn bash(sandbox: &Sandbox, script: &str) -> std::process::Output {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kemu"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    sandbox
        .command("bash")
        .env("PATH", path)
        .current_dir(sandbox.path("."))
        .args(["-c", script])
        .output()
        .expect("run bash")
}

#[test]
fn env_clusters_and_kubeconfig_work_as_printed() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.path("clouds.yaml");
    std::fs::write(&fixture, CLOUDS).unwrap();
    let kemu = KemuProcess::start(&["--fixture", fixture.to_str().unwrap()]);
    let admin = &kemu.ready.admin;

    // Exactly what `kemu env` prints, evaluated, then each cloud's CLI.
    let out = bash(
        &sandbox,
        &format!(
            "set -e; eval \"$(kemu env aws --admin {admin})\"; aws eks list-clusters --output json"
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"web\""),
        "{}",
        text(&out)
    );
    let out = bash(
        &sandbox,
        &format!(
            "set -e; eval \"$(kemu env gcloud --admin {admin})\"; gcloud container clusters list --format='value(name)'"
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "data",
        "{}",
        text(&out)
    );
    let out = bash(
        &sandbox,
        &format!(
            "set -e; eval \"$(kemu env az --admin {admin})\"; az aks list --query '[].name' -o tsv"
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "pay",
        "{}",
        text(&out)
    );

    // Every cluster of every cloud, and a kubeconfig for one that kubectl uses.
    let out = bash(&sandbox, &format!("kemu clusters --admin {admin}"));
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    for (cloud, name) in [("eks", "web"), ("gke", "data"), ("aks", "pay")] {
        assert!(
            table.lines().any(|l| l.starts_with(cloud)
                && l.contains(name)
                && l.contains("RUNNING")
                && l.contains("https://")),
            "{table}"
        );
    }
    let out = bash(
        &sandbox,
        &format!(
            "set -e; kemu kubeconfig data --admin {admin} -o kc.yaml; kubectl --kubeconfig kc.yaml get nodes -o name"
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1,
        "{}",
        text(&out)
    );
    let out = bash(&sandbox, &format!("kemu kubeconfig nope --admin {admin}"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no cluster named nope"),
        "{}",
        text(&out)
    );
}
