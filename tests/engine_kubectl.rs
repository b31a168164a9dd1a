//! kubectl's everyday commands against a kemu cluster, over TLS: create, apply
//! twice, get (yaml, json, -A, -l, --field-selector, -w), label, annotate,
//! scale, delete with its wait, and the Nodes of the cluster's node pools.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{KubectlCluster, eks_spec, text};
use kemu::shared::NodePool;
use serde_json::Value;

type Cluster = KubectlCluster;

fn cluster() -> Cluster {
    let mut spec = eks_spec("alpha");
    spec.node_pools = vec![NodePool {
        name: "workers".into(),
        count: 3,
        machine_type: "m5.large".into(),
        labels: [("team".to_owned(), "core".to_owned())].into(),
        taints: vec![],
    }];
    KubectlCluster::new(spec)
}

const DEPLOY_V1: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
      - name: sidecar
        image: busybox:1.36
"#;

const DEPLOY_V2: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.28
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
"#;

#[test]
fn apply_twice_then_scale_label_annotate_and_delete() {
    let c = cluster();
    let v1 = c.file("v1.yaml", DEPLOY_V1);
    let out = c.ok(&["apply", "-f", &v1]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let d = c.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["generation"], 1);
    let rv1: u64 = d["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // The second apply is a strategic merge patch computed from the
    // last-applied annotation: replicas change, the sidecar goes, env merges.
    let v2 = c.file("v2.yaml", DEPLOY_V2);
    let out = c.ok(&["apply", "-f", &v2]);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let d = c.json(&["get", "deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "{containers:?}");
    assert_eq!(containers[0]["image"], "nginx:1.28");
    assert_eq!(containers[0]["env"].as_array().unwrap().len(), 2);
    let rv2: u64 = d["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    // Applying the same file again changes nothing.
    let out = c.ok(&["apply", "-f", &v2]);
    assert!(out.contains("unchanged"), "{out}");

    let out = c.ok(&["scale", "deployment/web", "--replicas=5"]);
    assert!(out.contains("scaled"), "{out}");
    assert_eq!(c.json(&["get", "deploy", "web"])["spec"]["replicas"], 5);
    let scale = c.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    ]);
    let scale: Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"]["selector"], "app=web");

    c.ok(&["label", "deploy", "web", "tier=front"]);
    c.ok(&["annotate", "deploy", "web", "note=hello"]);
    let d = c.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    assert_eq!(d["metadata"]["annotations"]["note"], "hello");
    let out = c.ok(&["delete", "deploy", "web"]);
    assert!(out.contains("deployment.apps \"web\" deleted"), "{out}");
    let out = c.run(&["get", "deploy", "web"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deployments.apps \"web\" not found"),
        "{}",
        text(&out)
    );
}

#[test]
fn get_with_selectors_across_namespaces() {
    let c = cluster();
    let cm = c.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {app: web}\ndata: {a: '1'}\n",
    );
    let out = c.ok(&["create", "-f", &cm]);
    assert!(out.contains("configmap/settings created"), "{out}");
    let out = c.run(&["create", "-f", &cm]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("configmaps \"settings\" already exists"),
        "{}",
        text(&out)
    );
    // `kubectl create <generator>` sends protobuf bodies.
    let out = c.ok(&["create", "namespace", "team-a"]);
    assert!(out.contains("namespace/team-a created"), "{out}");
    let out = c.ok(&[
        "create",
        "configmap",
        "gen",
        "-n",
        "team-a",
        "--from-literal=k=v",
    ]);
    assert!(out.contains("configmap/gen created"), "{out}");
    assert_eq!(
        c.json(&["get", "cm", "gen", "-n", "team-a"])["data"]["k"],
        "v"
    );
    let out = c.ok(&[
        "create",
        "deployment",
        "made",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    assert!(out.contains("deployment.apps/made created"), "{out}");
    let made = c.json(&["get", "deploy", "made"]);
    assert_eq!(made["spec"]["replicas"], 2);
    assert_eq!(
        made["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    let other = c.file(
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: team-a\n  labels: {app: db}\n",
    );
    c.ok(&["create", "-f", &other]);

    let y = c.ok(&["get", "cm", "settings", "-o", "yaml"]);
    assert!(
        y.contains("name: settings") && y.contains("a: \"1\""),
        "{y}"
    );
    let all = c.json(&["get", "configmaps", "-A"]);
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        // Every namespace holds kube-root-ca.crt, as on a real cluster.
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, ["settings", "gen", "other"]);
    let web = c.json(&["get", "cm", "-A", "-l", "app in (web)"]);
    assert_eq!(web["items"].as_array().unwrap().len(), 1);
    let none = c.json(&["get", "cm", "-A", "-l", "app,app!=web,app!=db"]);
    assert_eq!(none["items"].as_array().unwrap().len(), 0);
    let by_name = c.json(&["get", "cm", "-A", "--field-selector", "metadata.name=other"]);
    assert_eq!(by_name["items"][0]["metadata"]["namespace"], "team-a");
    let out = c.run(&["get", "cm", "--field-selector", "spec.nope=x"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "\"spec.nope\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ),
        "{}",
        text(&out)
    );
    let out = c.run(&[
        "create",
        "configmap",
        "Bad_Name",
        "-n",
        "nowhere",
        "--dry-run=client",
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let bad = c.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n",
    );
    let out = c.run(&["create", "-f", &bad, "--validate=false"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a lowercase RFC 1123 subdomain"),
        "{}",
        text(&out)
    );
    let missing = c.file(
        "missing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: nowhere\n",
    );
    let out = c.run(&["create", "-f", &missing]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("namespaces \"nowhere\" not found"),
        "{}",
        text(&out)
    );
    c.ok(&["delete", "namespace", "team-a"]);
    let left: Vec<String> = c.json(&["get", "cm", "-A"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn get_watch_streams_each_change() {
    let c = cluster();
    let mut watch = c
        .sandbox
        .command("kubectl")
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        // Table output: each watch event's object is a Table row.
        .args(["get", "configmaps", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let cm = c.file(
        "w.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n",
    );
    // The watch starts after the initial (empty) list; creating right away
    // can race it, which the ADDED line covers either way.
    c.ok(&["create", "-f", &cm]);
    c.ok(&["label", "cm", "watched", "x=y"]);
    c.ok(&["delete", "cm", "watched"]);
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"EVENT") || line.contains("kube-root-ca.crt") {
            continue;
        }
        seen.push(words.iter().take(2).copied().collect::<Vec<_>>().join(" "));
        if line.starts_with("DELETED") {
            break;
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        seen,
        ["ADDED watched", "MODIFIED watched", "DELETED watched"]
    );
}

#[test]
fn node_pools_are_nodes() {
    let c = cluster();
    let nodes = c.json(&["get", "nodes"]);
    let items = nodes["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for n in items {
        let labels = &n["metadata"]["labels"];
        assert_eq!(labels["eks.amazonaws.com/nodegroup"], "workers");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "m5.large");
        assert_eq!(labels["team"], "core");
        assert_eq!(labels["kubernetes.io/hostname"], n["metadata"]["name"]);
        let ready = n["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True");
        assert_eq!(n["status"]["capacity"]["cpu"], "2");
    }
    let table = c.ok(&["get", "nodes"]);
    assert_eq!(table.lines().count(), 4, "{table}");

    // Scaling the pool through the registry (as the facades do) moves the Nodes.
    c.kemu
        .registry()
        .update(&c.record.id, |r| {
            r.node_pools[0].count = 5;
            Ok(())
        })
        .unwrap();
    assert_eq!(
        c.json(&["get", "nodes"])["items"].as_array().unwrap().len(),
        5
    );
    c.kemu
        .registry()
        .update(&c.record.id, |r| {
            r.node_pools.clear();
            Ok(())
        })
        .unwrap();
    assert_eq!(
        c.json(&["get", "nodes"])["items"].as_array().unwrap().len(),
        0
    );
}

#[test]
fn server_side_apply_and_server_dry_run() {
    let c = cluster();
    let v1 = c.file("v1.yaml", DEPLOY_V1);
    let out = c.ok(&["apply", "--server-side", "-f", &v1]);
    assert!(out.contains("serverside-applied"), "{out}");
    assert_eq!(c.json(&["get", "deploy", "web"])["spec"]["replicas"], 1);
    let v2 = c.file("v2.yaml", DEPLOY_V2);
    let out = c.ok(&["apply", "--server-side", "-f", &v2]);
    assert!(out.contains("serverside-applied"), "{out}");
    // Rolled out first: the controllers' status writes would move the
    // resourceVersion the dry runs must leave alone.
    c.ok(&["rollout", "status", "deploy/web", "--timeout=60s"]);
    let d = c.json(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    let rv = d["metadata"]["resourceVersion"].clone();

    // A server dry run answers without storing anything.
    let out = c.ok(&["scale", "deploy", "web", "--replicas=7", "--dry-run=server"]);
    assert!(out.contains("server dry run"), "{out}");
    let cm = c.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\n",
    );
    let out = c.ok(&["create", "-f", &cm, "--dry-run=server"]);
    assert!(out.contains("created (server dry run)"), "{out}");
    let out = c.ok(&["delete", "deploy", "web", "--dry-run=server"]);
    assert!(out.contains("deleted (server dry run)"), "{out}");
    let d = c.json(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["resourceVersion"], rv);
    assert!(!c.run(&["get", "cm", "dry"]).status.success());
}
