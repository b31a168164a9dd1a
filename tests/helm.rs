//! helm 4 against a kemu cluster: a chart made by `helm create` installs with
//! `--wait` (server-side apply, helm 4's default), upgrades, rolls back, lists
//! its history from the release Secrets and uninstalls.

mod common;

use std::path::Path;
use std::process::Output;

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{ClusterSpec, NodePool};

fn helm(sandbox: &Sandbox, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut cmd = sandbox.command("helm");
    cmd.env("HELM_CACHE_HOME", sandbox.path("helm-cache"))
        .env("HELM_CONFIG_HOME", sandbox.path("helm-config"))
        .env("HELM_DATA_HOME", sandbox.path("helm-data"))
        .current_dir(sandbox.dir.path())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args);
    cmd.output().expect("run helm")
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn helm4_install_upgrade_rollback_uninstall() {
    let kemu = Kemu::builder().build().unwrap();
    let cluster = kemu
        .registry()
        .create(ClusterSpec {
            node_pools: vec![NodePool {
                name: "ng-1".into(),
                count: 2,
                machine_type: "m5.large".into(),
                labels: Default::default(),
                taints: vec![],
            }],
            ..eks_spec("charts")
        })
        .unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &cluster, cluster.ca.cert_pem(), kemu.clock().now());

    let version = ok(helm(&sandbox, &kc, &["version", "--short"]));
    assert!(version.starts_with("v4."), "helm 4 expected, got {version}");

    ok(helm(&sandbox, &kc, &["create", "demo"]));
    let out = ok(helm(
        &sandbox,
        &kc,
        &["install", "web", "./demo", "--wait", "--timeout", "90s"],
    ));
    assert!(out.contains("STATUS: deployed"), "{out}");

    // The release lives in a Secret, as helm's default storage driver keeps it.
    let secrets = ok(sandbox.kubectl(
        &kc,
        &["get", "secrets", "-l", "owner=helm,name=web", "-o", "name"],
    ));
    assert!(secrets.contains("sh.helm.release.v1.web.v1"), "{secrets}");
    let deploy = ok(sandbox.kubectl(
        &kc,
        &[
            "get",
            "deploy",
            "web-demo",
            "-o",
            "jsonpath={.status.availableReplicas}",
        ],
    ));
    assert_eq!(deploy.trim(), "1");
    // helm 4 applies server-side: its field manager owns the fields.
    let managers = ok(sandbox.kubectl(
        &kc,
        &[
            "get",
            "deploy",
            "web-demo",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ],
    ));
    assert!(managers.contains("helm"), "{managers}");

    let out = ok(helm(
        &sandbox,
        &kc,
        &[
            "upgrade",
            "web",
            "./demo",
            "--set",
            "replicaCount=3",
            "--wait",
            "--timeout",
            "90s",
        ],
    ));
    assert!(out.contains("REVISION: 2"), "{out}");
    let ready = ok(sandbox.kubectl(
        &kc,
        &[
            "get",
            "deploy",
            "web-demo",
            "-o",
            "jsonpath={.status.availableReplicas}",
        ],
    ));
    assert_eq!(ready.trim(), "3");

    let out = ok(helm(
        &sandbox,
        &kc,
        &["rollback", "web", "1", "--wait", "--timeout", "90s"],
    ));
    assert!(out.contains("Rollback was a success"), "{out}");
    let replicas = ok(sandbox.kubectl(
        &kc,
        &[
            "get",
            "deploy",
            "web-demo",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    ));
    assert_eq!(replicas.trim(), "1");

    let history = ok(helm(&sandbox, &kc, &["history", "web", "-o", "json"]));
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    let revisions: Vec<(i64, String)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        revisions,
        vec![
            (1, "superseded".to_owned()),
            (2, "superseded".to_owned()),
            (3, "deployed".to_owned())
        ]
    );

    let out = ok(helm(
        &sandbox,
        &kc,
        &["uninstall", "web", "--wait", "--timeout", "90s"],
    ));
    assert!(out.contains("uninstalled"), "{out}");
    let left = ok(sandbox.kubectl(
        &kc,
        &[
            "get",
            "deploy,svc,sa,secrets",
            "-l",
            "app.kubernetes.io/instance=web",
            "-o",
            "name",
        ],
    ));
    assert!(left.trim().is_empty(), "{left}");
    let releases = ok(sandbox.kubectl(&kc, &["get", "secrets", "-l", "owner=helm", "-o", "name"]));
    assert!(releases.trim().is_empty(), "{releases}");
}
