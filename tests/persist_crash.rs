//! The state directory survives `kill -9`: clusters created through `aws`,
//! `gcloud` and `az`, 1,000+ objects created through kubectl and the Python
//! client, and a stream of Python writes cut by SIGKILL. After the restart
//! every acknowledged write is there, the kubeconfigs written before the
//! crash still work (same ports, same CAs), and a watch from a resourceVersion
//! taken before the crash delivers what happened after it.

mod common;
mod eks_support;
mod gke_support;
mod persist_support;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;

use common::aks::{az_json, az_ok, login};
use common::{Sandbox, text};
use eks_support::Aws;
use persist_support::{Kemu, Ports, config_maps, names};
use serde_json::Value;

const ROLE: &str = "arn:aws:iam::123456789012:role/eks";
const BULK: usize = 300;
const PY_BULK: usize = 100;

/// The three clusters' kubeconfigs, as the CLIs wrote them.
struct Kubeconfigs {
    eks: std::path::PathBuf,
    gke: std::path::PathBuf,
    aks: std::path::PathBuf,
}

fn must(out: std::process::Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(&out));
    out.stdout
}

/// kubectl on one of the three clusters, with the environment its
/// kubeconfig's credential plugin needs.
fn kubectl(sb: &Sandbox, kemu: &Kemu, kc: &Kubeconfigs, cloud: &str, args: &[&str]) -> Vec<u8> {
    let out = match cloud {
        "eks" => Aws::new(sb, &kemu.ready.eks).kubectl(&kc.eks, args),
        "gke" => gke_support::kubectl(sb, &kc.gke, args),
        _ => sb.kubectl(&kc.aks, args),
    };
    must(out, &format!("kubectl on {cloud} {args:?}"))
}

fn python_writes(
    sb: &Sandbox,
    kubeconfig: &Path,
    prefix: &str,
    count: usize,
) -> std::process::Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/persist_writes.py");
    let mut cmd = sb.command("python3");
    cmd.arg(script)
        .args([prefix, &count.to_string()])
        .env("KUBECONFIG", kubeconfig);
    cmd
}

fn create_clusters(sb: &Sandbox, kemu: &Kemu) -> (Kubeconfigs, Value) {
    // EKS, through the aws CLI; the kubeconfig's exec plugin is `aws eks get-token`.
    let aws = Aws::new(sb, &kemu.ready.eks);
    aws.json(&[
        "create-cluster",
        "--name",
        "crash",
        "--role-arn",
        ROLE,
        "--resources-vpc-config",
        "subnetIds=subnet-a,subnet-b",
    ]);
    let eks = sb.path("eks.kubeconfig");
    aws.ok(&[
        "update-kubeconfig",
        "--name",
        "crash",
        "--kubeconfig",
        eks.to_str().unwrap(),
    ]);
    let described = aws.json(&["describe-cluster", "--name", "crash"]);

    // GKE, through gcloud; get-credentials writes the sandbox's KUBECONFIG.
    let gke_url = format!("{}/", kemu.ready.gke);
    let zone = ["--zone", "us-central1-a"];
    must(
        gke_support::gcloud(
            sb,
            &gke_url,
            &[
                &["clusters", "create", "crash", "--num-nodes", "1"][..],
                &zone,
            ]
            .concat(),
        ),
        "gcloud clusters create",
    );
    must(
        gke_support::gcloud(
            sb,
            &gke_url,
            &[&["clusters", "get-credentials", "crash"][..], &zone].concat(),
        ),
        "gcloud get-credentials",
    );
    let gke = sb.path("kubeconfig");

    let aks = create_aks(sb, kemu);
    (Kubeconfigs { eks, gke, aks }, described)
}

/// An AKS cluster `crash` through az; its kubeconfig (a client certificate).
fn create_aks(sb: &Sandbox, kemu: &Kemu) -> std::path::PathBuf {
    let ca = Path::new(&kemu.ready.ca_bundle);
    let out = login(
        sb,
        &kemu.ready.aks,
        ca,
        "11111111-2222-3333-4444-555555555555",
        "s",
    );
    must(out, "az login");
    az_json(sb, ca, &["group", "create", "-n", "rg1", "-l", "eastus"]);
    let created = az_json(
        sb,
        ca,
        &[
            "aks",
            "create",
            "-g",
            "rg1",
            "-n",
            "crash",
            "--node-count",
            "1",
            "--generate-ssh-keys",
        ],
    );
    assert_eq!(created["provisioningState"], "Succeeded");
    let aks = sb.path("aks.kubeconfig");
    az_ok(
        sb,
        ca,
        &[
            "aks",
            "get-credentials",
            "-g",
            "rg1",
            "-n",
            "crash",
            "--file",
            aks.to_str().unwrap(),
        ],
    );
    aks
}

/// A state directory in a sandbox, and the ports and run dir every start of
/// kemu on it shares.
struct State {
    data: std::path::PathBuf,
    run: std::path::PathBuf,
    ports: Ports,
}

impl State {
    fn new(sb: &Sandbox) -> Self {
        Self {
            data: sb.path("data"),
            run: sb.path("run"),
            ports: Ports::free(),
        }
    }

    /// kemu on the directory; compactions happen during a run, so replay
    /// reads a snapshot plus logs.
    fn start(&self) -> Kemu {
        let data = self.data.to_str().unwrap();
        let args = ["--data-dir", data, "--compact-after", "65536"];
        Kemu::start(&self.ports, &self.run, &args)
    }
}

#[test]
fn kill_9_loses_no_acknowledged_write() {
    let sb = Sandbox::new();
    let state = State::new(&sb);
    let data = &state.data;
    let kemu = state.start();
    let (kc, eks_before) = create_clusters(&sb, &kemu);

    // 900 objects through kubectl, 100 through the Python client.
    for cloud in ["eks", "gke", "aks"] {
        let file = sb.path(&format!("{cloud}-bulk.json"));
        std::fs::write(&file, config_maps(cloud, BULK)).unwrap();
        kubectl(
            &sb,
            &kemu,
            &kc,
            cloud,
            &["create", "-f", file.to_str().unwrap(), "-o", "name"],
        );
    }
    must(
        python_writes(&sb, &kc.aks, "py", PY_BULK).output().unwrap(),
        "python bulk writes",
    );

    // A resourceVersion from before the crash.
    let rv0 = persist_support::list_rv(&kubectl(
        &sb,
        &kemu,
        &kc,
        "aks",
        &["get", "--raw", persist_support::LIST_ONE],
    ));

    // A stream of writes, cut by kill -9 after 150 acknowledgements.
    let mut stream = python_writes(&sb, &kc.aks, "stream", 1_000_000)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(stream.stdout.take().unwrap()).lines();
    let mut acked = BTreeSet::new();
    for line in lines.by_ref() {
        acked.insert(line.unwrap());
        if acked.len() == 150 {
            break;
        }
    }
    kemu.kill9();
    acked.extend(lines.map_while(Result::ok));
    let _ = stream.wait();
    assert!(acked.len() >= 150);

    // Restart on the same state directory and ports.
    let kemu = state.start();
    assert!(data.join("snapshot.jsonl").is_file(), "a compaction ran");
    assert!(
        kemu.stderr().contains("kemu: replaying"),
        "replay progress on stderr: {}",
        kemu.stderr()
    );

    // The old kubeconfigs work, and every acknowledged write is there.
    let aks_names = names(&kubectl(
        &sb,
        &kemu,
        &kc,
        "aks",
        &["get", "configmaps", "-o", "json"],
    ));
    let missing: Vec<_> = acked.difference(&aks_names).collect();
    assert!(missing.is_empty(), "acknowledged writes lost: {missing:?}");
    for i in 0..PY_BULK {
        assert!(aks_names.contains(&format!("py-{i}")));
    }
    for cloud in ["eks", "gke", "aks"] {
        let got = names(&kubectl(
            &sb,
            &kemu,
            &kc,
            cloud,
            &["get", "configmaps", "-o", "json"],
        ));
        let bulk = got
            .iter()
            .filter(|n| n.starts_with(&format!("{cloud}-")))
            .count();
        assert_eq!(bulk, BULK, "{cloud}: {got:?}");
    }

    // A watch from before the crash delivers what happened after it.
    let watched = kubectl(
        &sb,
        &kemu,
        &kc,
        "aks",
        &[
            "get",
            "--raw",
            &format!(
                "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv0}&timeoutSeconds=3"
            ),
        ],
    );
    let added: BTreeSet<String> = String::from_utf8_lossy(&watched)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "ADDED")
        .filter_map(|e| e["object"]["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let unseen: Vec<_> = acked.difference(&added).collect();
    assert!(unseen.is_empty(), "the watch from {rv0} missed {unseen:?}");
    assert!(
        added.iter().all(|n| n.starts_with("stream-")),
        "the watch from {rv0} replayed older writes: {added:?}"
    );

    // The clouds still show their clusters, with the same endpoint and CA.
    let aws = Aws::new(&sb, &kemu.ready.eks);
    let eks_after = aws.json(&["describe-cluster", "--name", "crash"]);
    assert_eq!(
        eks_after["cluster"]["endpoint"],
        eks_before["cluster"]["endpoint"]
    );
    assert_eq!(
        eks_after["cluster"]["certificateAuthority"],
        eks_before["cluster"]["certificateAuthority"]
    );
    must(
        gke_support::gcloud(
            &sb,
            &format!("{}/", kemu.ready.gke),
            &["clusters", "describe", "crash", "--zone", "us-central1-a"],
        ),
        "gcloud describe after restart",
    );
    let ca = Path::new(&kemu.ready.ca_bundle);
    let shown = az_json(&sb, ca, &["aks", "show", "-g", "rg1", "-n", "crash"]);
    assert_eq!(shown["provisioningState"], "Succeeded");

    // Writes after the restart go on being logged: a clean stop and a third
    // start keep them.
    kubectl(
        &sb,
        &kemu,
        &kc,
        "eks",
        &["create", "configmap", "after-restart"],
    );
    kemu.stop();
    let kemu = state.start();
    kubectl(
        &sb,
        &kemu,
        &kc,
        "eks",
        &["get", "configmap", "after-restart"],
    );
    kemu.stop();
}

/// Rounds of the kill -9 loop.
const ROUNDS: usize = 8;

/// Pods' names and phases, and the ReplicaSet controller's create and delete
/// Events (their counts summed).
fn pods_and_rs_events(sb: &Sandbox, kubeconfig: &Path) -> (BTreeSet<String>, bool, u64, u64) {
    let pods: Value = serde_json::from_slice(&must(
        sb.kubectl(kubeconfig, &["get", "pods", "-l", "app=web", "-o", "json"]),
        "get pods",
    ))
    .unwrap();
    let items = pods["items"].as_array().cloned().unwrap_or_default();
    let running = items.iter().all(|p| p["status"]["phase"] == "Running");
    let names = items
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let events: Value = serde_json::from_slice(&must(
        sb.kubectl(kubeconfig, &["get", "events", "-o", "json"]),
        "get events",
    ))
    .unwrap();
    let count = |reason: &str| -> u64 {
        events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["involvedObject"]["kind"] == "ReplicaSet" && e["reason"] == reason)
            .map(|e| e["count"].as_u64().unwrap_or(1))
            .sum()
    };
    (
        names,
        running,
        count("SuccessfulCreate"),
        count("SuccessfulDelete"),
    )
}

/// kill -9 in a loop, each time after a different number of acknowledged
/// writes: after every restart each acknowledged write is there, and the
/// Deployment's Pods are the same Pods, created once and never deleted (the
/// controllers resume from the stored state instead of acting twice).
#[test]
fn a_kill_9_loop_loses_no_write_and_controllers_do_not_act_twice() {
    let sb = Sandbox::new();
    let state = State::new(&sb);
    let mut kemu = state.start();
    let kc = create_aks(&sb, &kemu);
    must(
        sb.kubectl(
            &kc,
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=3",
            ],
        ),
        "create deployment",
    );
    must(
        sb.kubectl(
            &kc,
            &["rollout", "status", "deployment/web", "--timeout=60s"],
        ),
        "rollout",
    );
    let (pods, running, created, deleted) = pods_and_rs_events(&sb, &kc);
    assert!(running && pods.len() == 3, "{pods:?}");
    assert_eq!((created, deleted), (3, 0));

    let mut acked = BTreeSet::new();
    for round in 0..ROUNDS {
        // Between 1 and 60 acknowledgements, a different count each round.
        let cut = 1 + (round * 37) % 60;
        let mut stream = python_writes(&sb, &kc, &format!("r{round}"), 1_000_000)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(stream.stdout.take().unwrap()).lines();
        for line in lines.by_ref().take(cut) {
            acked.insert(line.unwrap());
        }
        kemu.kill9();
        acked.extend(lines.map_while(Result::ok));
        let _ = stream.wait();

        kemu = state.start();
        let stored = names(&must(
            sb.kubectl(&kc, &["get", "configmaps", "-o", "json"]),
            "get configmaps",
        ));
        let missing: Vec<_> = acked.difference(&stored).collect();
        assert!(missing.is_empty(), "round {round}: lost {missing:?}");
        let after = pods_and_rs_events(&sb, &kc);
        assert_eq!(after, (pods.clone(), true, 3, 0), "round {round}");
    }
    kemu.stop();
}
