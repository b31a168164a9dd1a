//! A bad fixture fails `kemu --fixture` at start-up with the file, the line
//! and the reason, prints no ready line, and leaves nothing behind: the real
//! kemu never starts, so not even its run directory or its state directory
//! (`--data-dir`) is created.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs kemu with `fixtures` (files in `dir`); returns its stderr after
/// asserting it failed before printing a ready line or creating its run or
/// state directory.
fn fails(dir: &Path, fixtures: &[&str]) -> String {
    let run_dir = dir.join("run");
    let data_dir = dir.join("state");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kemu"));
    cmd.args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .arg("--run-dir")
        .arg(&run_dir)
        .arg("--data-dir")
        .arg(&data_dir)
        .args(["--log", "warn"])
        .env("RUST_BACKTRACE", "0")
        .env_remove("KEMU_FIXTURES")
        .stdin(Stdio::null());
    for f in fixtures {
        cmd.arg("--fixture").arg(dir.join(f));
    }
    let out = cmd.output().expect("run kemu");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !run_dir.exists(),
        "a failed fixture left {}",
        run_dir.display()
    );
    assert!(
        !data_dir.exists(),
        "a failed fixture touched the state directory {}",
        data_dir.display()
    );
    stderr
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn has(stderr: &str, needles: &[&str]) {
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
}

#[test]
fn unknown_cloud_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: gke\n    name: a\n    project: p\n    location: us-central1-a\n  - cloud: ibm\n    name: b\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &["f.yaml:6", "unknown variant `ibm`", "`eks`, `gke`, `aks`"],
    );
}

#[test]
fn yaml_error_in_a_manifest_file_names_that_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: eks\n    name: a\n    region: us-east-1\n    manifests:\n      - path: app.yaml\n",
    );
    write(
        dir.path(),
        "app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: [broken\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(&err, &["app.yaml:9", "did not find expected ',' or ']'"]);
}

#[test]
fn inline_manifest_errors_count_lines_in_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: eks\n    name: a\n    region: us-east-1\n    manifests:\n      - yaml: |\n          apiVersion: v1\n          kind: ConfigMap\n          data: {}\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(&err, &["f.yaml:7", "ConfigMap has no metadata.name"]);
}

#[test]
fn object_the_api_server_rejects_names_its_document_and_nothing_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    // The first cluster is fine; the second's second document is invalid.
    write(
        dir.path(),
        "f.yaml",
        "clusters:
  - cloud: eks
    name: fine
    region: us-east-1
  - cloud: aks
    name: a
    subscription: 00000000-0000-0000-0000-00000000b2b2
    resourceGroup: rg
    location: westeurope
    nodePools: [{name: sys, count: 1}]
    manifests:
      - yaml: |
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: ok}
          ---
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: Bad_Name}
          spec:
            selector: {matchLabels: {a: b}}
            template:
              metadata: {labels: {a: b}}
              spec: {containers: [{name: c, image: i}]}
",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &[
            "f.yaml:17",
            "Deployment Bad_Name",
            "422 Invalid",
            "metadata.name: Invalid value: \"Bad_Name\"",
        ],
    );
}

#[test]
fn unknown_kind_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: gke\n    name: a\n    project: p\n    location: us-central1-a\n    manifests:\n      - yaml: |\n          apiVersion: example.com/v1\n          kind: Widget\n          metadata: {name: w}\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(&err, &["f.yaml:8", "no matches for kind \"Widget\""]);
}

#[test]
fn duplicate_cluster_across_files_names_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let gke =
        "clusters:\n  - cloud: gke\n    name: web\n    project: p\n    location: us-central1-a\n";
    write(dir.path(), "one.yaml", gke);
    write(dir.path(), "two.yaml", &format!("# the same again\n{gke}"));
    let err = fails(dir.path(), &["one.yaml", "two.yaml"]);
    has(
        &err,
        &["two.yaml:3", "duplicate cluster", "\"web\"", "one.yaml:2"],
    );
}

#[test]
fn missing_manifest_path_names_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: eks\n    name: a\n    region: us-east-1\n    manifests:\n      - path: nope.yaml\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(&err, &["f.yaml:6", "nope.yaml", "No such file"]);
}

#[test]
fn facade_rejection_is_reported_with_the_cloud_error() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: aks\n    name: a\n    subscription: s\n    resourceGroup: rg\n    location: westeurope\n    nodePools: [{name: Sys_Pool, count: 1}]\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &[
            "f.yaml:2",
            "InvalidParameter",
            "Agent pool name 'Sys_Pool' is invalid",
        ],
    );
}

#[test]
fn scope_fields_must_match_the_cloud() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        "clusters:\n  - cloud: eks\n    name: a\n    project: p\n",
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &["f.yaml:2", "`project` is not a field of eks clusters"],
    );
    write(
        dir.path(),
        "g.yaml",
        "clusters:\n  - cloud: aks\n    name: a\n    location: x\n",
    );
    let err = fails(dir.path(), &["g.yaml"]);
    has(&err, &["g.yaml:2", "needs `subscription`"]);
}

/// A fixture cluster with one Deployment of `container` (YAML flow map).
fn one_deployment(container: &str) -> String {
    format!(
        "clusters:
  - cloud: gke
    name: g
    project: p
    location: us-central1-a
    nodePools: [{{name: pool, count: 2, machineType: e2-small}}]
    manifests:
      - yaml: |
          apiVersion: apps/v1
          kind: Deployment
          metadata: {{name: web}}
          spec:
            replicas: 2
            selector: {{matchLabels: {{app: web}}}}
            template:
              metadata: {{labels: {{app: web}}}}
              spec: {{containers: [{container}]}}
"
    )
}

#[test]
fn a_workload_that_cannot_schedule_fails_with_the_schedulers_reason() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        &one_deployment("{name: app, image: nginx, resources: {requests: {cpu: '64'}}}"),
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &[
            "f.yaml:9: Deployment web cannot become ready: Pod web-",
            "cannot be scheduled: 0/2 nodes are available: 2 Insufficient cpu.",
        ],
    );
}

#[test]
fn a_workload_whose_image_cannot_be_pulled_fails_with_the_kubelets_reason() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "f.yaml",
        &one_deployment("{name: app, image: 'nginx:nonexistent'}"),
    );
    let err = fails(dir.path(), &["f.yaml"]);
    has(
        &err,
        &[
            "f.yaml:9: Deployment web cannot become ready: Pod web-",
            "container app is waiting in ImagePullBackOff: Back-off pulling image \"nginx:nonexistent\"",
        ],
    );
}
