//! `kemu snapshot FILE` → `kemu --restore FILE` round trip, and `kemu reset`
//! back to the start-up state, driven by the aws CLI and kubectl.

mod common;
mod eks_support;
mod persist_support;

use std::path::Path;
use std::process::{Command, Output};

use common::{Sandbox, text};
use eks_support::Aws;
use persist_support::{Kemu, Ports, names};
use serde_json::Value;

const ROLE: &str = "arn:aws:iam::123456789012:role/eks";

fn must(out: Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(&out));
    out.stdout
}

/// `kemu ARGS` as a client of a running kemu.
fn kemu_cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(args)
        .output()
        .expect("run kemu")
}

fn create_cluster(aws: &Aws, name: &str) {
    aws.json(&[
        "create-cluster",
        "--name",
        name,
        "--role-arn",
        ROLE,
        "--resources-vpc-config",
        "subnetIds=subnet-a",
    ]);
}

fn configmaps(aws: &Aws, kc: &Path) -> std::collections::BTreeSet<String> {
    names(&must(
        aws.kubectl(kc, &["get", "configmaps", "-o", "json"]),
        "kubectl get configmaps",
    ))
}

#[test]
fn snapshot_restore_round_trip_and_reset() {
    let sb = Sandbox::new();
    let run = sb.path("run");
    let ports = Ports::free();
    let first = Kemu::start(&ports, &run, &[]);
    assert!(
        first.ready.admin.starts_with("http://127.0.0.1:"),
        "{:?}",
        first.ready
    );
    let aws = Aws::new(&sb, &first.ready.eks);
    create_cluster(&aws, "keep");
    let kc = sb.path("keep.kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "keep",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let bulk = sb.path("bulk.json");
    std::fs::write(&bulk, persist_support::config_maps("cm", 20)).unwrap();
    must(
        aws.kubectl(&kc, &["create", "-f", bulk.to_str().unwrap()]),
        "kubectl create",
    );
    let before = aws.json(&["describe-cluster", "--name", "keep"]);

    // Snapshot through the admin endpoint, then a new kemu from the file.
    let file = sb.path("state.jsonl");
    must(
        kemu_cli(&[
            "snapshot",
            file.to_str().unwrap(),
            "--admin",
            &first.ready.admin,
        ]),
        "kemu snapshot",
    );
    first.stop();
    let second = Kemu::start(&ports, &run, &["--restore", file.to_str().unwrap()]);
    assert!(
        second.stderr().contains("kemu: restoring"),
        "restore progress on stderr: {}",
        second.stderr()
    );
    let aws = Aws::new(&sb, &second.ready.eks);
    let after = aws.json(&["describe-cluster", "--name", "keep"]);
    assert_eq!(after["cluster"]["endpoint"], before["cluster"]["endpoint"]);
    assert_eq!(
        after["cluster"]["certificateAuthority"],
        before["cluster"]["certificateAuthority"]
    );
    let restored = configmaps(&aws, &kc);
    for i in 0..20 {
        assert!(restored.contains(&format!("cm-{i}")), "{restored:?}");
    }

    // Changes after start-up: a new cluster, a new object, a deleted object,
    // and the start-up cluster deleted.
    create_cluster(&aws, "extra");
    must(
        aws.kubectl(&kc, &["create", "configmap", "later"]),
        "create later",
    );
    must(
        aws.kubectl(&kc, &["delete", "configmap", "cm-0"]),
        "delete cm-0",
    );
    let rv = persist_support::list_rv(&must(
        aws.kubectl(&kc, &["get", "--raw", persist_support::LIST_ONE]),
        "list",
    ));
    aws.ok(&["delete-cluster", "--name", "keep"]);
    aws.ok(&["wait", "cluster-deleted", "--name", "keep"]);

    // Reset: back to what --restore loaded.
    let out = must(
        kemu_cli(&["reset", "--admin", &second.ready.admin]),
        "kemu reset",
    );
    let answer: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(answer["reset"], true, "{answer}");
    let listed = aws.json(&["list-clusters"]);
    assert_eq!(listed["clusters"], serde_json::json!(["keep"]));
    let after_reset = aws.json(&["describe-cluster", "--name", "keep"]);
    assert_eq!(
        after_reset["cluster"]["endpoint"], before["cluster"]["endpoint"],
        "the deleted cluster is back on its port"
    );
    let objects = configmaps(&aws, &kc);
    assert!(objects.contains("cm-0"), "{objects:?}");
    assert!(!objects.contains("later"), "{objects:?}");
    // resourceVersions do not go back: a watch from before the reset is told
    // to list again.
    let watch = must(
        aws.kubectl(
            &kc,
            &[
                "get",
                "--raw",
                &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
            ],
        ),
        "watch after reset",
    );
    let watch = String::from_utf8_lossy(&watch);
    assert!(watch.contains("\"code\":410"), "{watch}");
    // The cluster works as before the reset.
    must(
        aws.kubectl(&kc, &["create", "configmap", "after-reset"]),
        "create after reset",
    );

    // A bad admin URL and a bad state file fail with a clear message.
    let out = kemu_cli(&["snapshot", "x", "--admin", "https://nope"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("expected http://HOST:PORT"),
        "{}",
        text(&out)
    );
    let bad = sb.path("bad.jsonl");
    std::fs::write(&bad, "{\"t\":\"put\"}\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args([
            "--eks-port",
            "0",
            "--gke-port",
            "0",
            "--aks-port",
            "0",
            "--restore",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("bad.jsonl:1:"), "{}", text(&out));
    second.stop();
}

/// The names and sizes of the files in `dir`.
fn listing(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .expect("read data dir")
        .map(|e| {
            let e = e.expect("entry");
            let len = e.metadata().expect("metadata").len();
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect()
}

#[test]
fn a_second_kemu_on_a_data_dir_is_refused_and_changes_nothing() {
    let sb = Sandbox::new();
    let data = sb.path("data");
    let data_arg = data.to_str().expect("utf-8 path");
    let ports = Ports::free();
    let first = Kemu::start(&ports, &sb.path("run-1"), &["--data-dir", data_arg]);
    let aws = Aws::new(&sb, &first.ready.eks);
    create_cluster(&aws, "locked");
    let before = listing(&data);

    // Other ports, so the second kemu would start if the directory let it.
    let other = Ports::free();
    let mut second = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--eks-port", &other.eks.to_string()])
        .args(["--gke-port", &other.gke.to_string()])
        .args(["--aks-port", &other.aks.to_string()])
        .args(["--admin-port", &other.admin.to_string()])
        .arg("--run-dir")
        .arg(sb.path("run-2"))
        .args(["--data-dir", data_arg])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the second kemu");
    // A bound on a refusal that is immediate, so a regression fails instead of hanging.
    let mut polls = 0;
    while second.try_wait().expect("try_wait").is_none() {
        polls += 1;
        if polls > 1200 {
            let _ = second.kill();
            panic!("a second kemu on a locked data dir kept running");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = second.wait_with_output().expect("second kemu's output");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(out.stdout.is_empty(), "no ready line: {}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "is in use by another kemu (pid {}): one state directory serves one kemu at a time",
        first.child.id()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(listing(&data), before, "the refused kemu wrote nothing");

    // The first kemu still serves, and what it wrote survives its restart.
    aws.json(&["describe-cluster", "--name", "locked"]);
    first.stop();
    let again = Kemu::start(&ports, &sb.path("run-3"), &["--data-dir", data_arg]);
    let aws = Aws::new(&sb, &again.ready.eks);
    let cluster = aws.json(&["describe-cluster", "--name", "locked"]);
    assert_eq!(cluster["cluster"]["name"], "locked");
    again.stop();
}

#[test]
fn a_restart_on_the_data_dir_is_invisible_to_the_controllers() {
    let sb = Sandbox::new();
    let data = sb.path("data");
    let data_arg = data.to_str().expect("utf-8 path");
    let ports = Ports::free();
    let mut kemu = Kemu::start(&ports, &sb.path("run-0"), &["--data-dir", data_arg]);
    let aws = Aws::new(&sb, &kemu.ready.eks);
    create_cluster(&aws, "steady");
    aws.ok(&[
        "create-nodegroup",
        "--cluster-name",
        "steady",
        "--nodegroup-name",
        "ng",
        "--node-role",
        "arn:aws:iam::123456789012:role/node",
        "--subnets",
        "subnet-a",
        "--scaling-config",
        "minSize=1,maxSize=3,desiredSize=2",
    ]);
    let kc = sb.path("kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "steady",
        "--kubeconfig",
        kc.to_str().unwrap(),
    ]);
    let k = |kemu: &Kemu, args: &[&str]| {
        must(
            Aws::new(&sb, &kemu.ready.eks).kubectl(&kc, args),
            &format!("kubectl {args:?}"),
        )
    };
    k(
        &kemu,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=30",
        ],
    );
    k(
        &kemu,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    );
    let pods = |kemu: &Kemu| names(&k(kemu, &["get", "pods", "-l", "app=web", "-o", "json"]));
    let before = pods(&kemu);
    assert_eq!(before.len(), 30);

    for round in 1..=3 {
        kemu.stop();
        kemu = Kemu::start(
            &ports,
            &sb.path(&format!("run-{round}")),
            &["--data-dir", data_arg],
        );
        // A rollout after the restart: the controllers have been running.
        let probe = format!("probe-{round}");
        k(&kemu, &["create", "deployment", &probe, "--image=nginx"]);
        k(
            &kemu,
            &[
                "rollout",
                "status",
                &format!("deployment/{probe}"),
                "--timeout=60s",
            ],
        );
        assert_eq!(
            pods(&kemu),
            before,
            "round {round}: the same 30 Pods, none made or removed"
        );
        let deletes = k(
            &kemu,
            &[
                "get",
                "events",
                "--field-selector",
                "reason=SuccessfulDelete",
                "-o",
                "json",
            ],
        );
        assert_eq!(names(&deletes).len(), 0, "round {round}: no Pod deleted");
    }
    kemu.stop();
}
