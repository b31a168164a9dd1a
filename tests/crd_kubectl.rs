//! CustomResourceDefinitions against a kemu cluster with real clients:
//! kubectl installs a CRD from YAML and waits for `Established`, creates,
//! validates (the field path printed), lists with printer columns, watches,
//! scales through `/scale`, explains, serves a second version and removes
//! every custom resource with the CRD; kube-rs runs a finalizer loop over a
//! custom resource.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{KubectlCluster, eks_spec};
use futures_util::StreamExt;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client, Config};
use serde_json::{Value, json};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired schedule of the cron tab.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                description: When to run, in cron syntax.
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image: {type: string}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const GOOD: &str = r#"
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
spec:
  cronSpec: "0 3 * * *"
  image: backup:1
"#;

const BAD: &str = r#"
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: broken
spec:
  cronSpec: "every night"
  replicas: 50
"#;

const NON_STRUCTURAL: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}
"#;

/// Same kind as CronTab in the same group: its names cannot be accepted.
const CONFLICTING: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs2.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs2, singular: crontab2, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

type Cluster = KubectlCluster;

fn cluster(name: &str) -> Cluster {
    KubectlCluster::new(eks_spec(name))
}

impl KubectlCluster {
    fn install_crd(&self) {
        let crd = self.file("crd.yaml", CRD);
        let out = self.ok(&["apply", "-f", &crd]);
        assert!(
            out.contains(
                "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
            ),
            "{out}"
        );
        self.ok(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd/crontabs.stable.example.com",
        ]);
    }

    /// How many CronTabs the cluster's store holds (every namespace).
    fn stored_crontabs(&self) -> usize {
        let dataplane = self.kemu.dataplane().expect("data plane");
        let store = dataplane.engine().store(&self.record.id).expect("store");
        store
            .snapshot("crontabs.stable.example.com")
            .iter(None, None)
            .count()
    }
}

#[test]
fn a_crd_from_yaml_serves_validated_custom_resources_until_it_is_deleted() {
    let c = cluster("crd");
    c.install_crd();
    let crd = c.json(&["get", "crd", "crontabs.stable.example.com"]);
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    for t in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|k| k["type"] == t && k["status"] == "True"),
            "{t}: {conditions:?}"
        );
    }
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Discovery knows the new kind, with its short name.
    let resources = c.ok(&["api-resources", "--api-group=stable.example.com"]);
    assert!(
        resources.contains("crontabs") && resources.contains("ct"),
        "{resources}"
    );

    // Created, defaulted; a body with unknown fields is refused under
    // strict field validation and pruned when validation is off.
    let good = c.file("good.yaml", GOOD);
    let out = c.ok(&["apply", "-f", &good]);
    assert!(
        out.contains("crontab.stable.example.com/nightly created"),
        "{out}"
    );
    let nightly = c.json(&["get", "crontab", "nightly"]);
    assert_eq!(nightly["spec"]["replicas"], 1, "defaulted: {nightly}");
    assert_eq!(nightly["metadata"]["generation"], 1);
    let extra = c.file(
        "extra.yaml",
        &GOOD
            .replace("nightly", "extra")
            .replace("image: backup:1", "image: backup:1\n  colour: red"),
    );
    let err = c.fails(&["create", "-f", &extra]);
    assert!(err.contains("unknown field \"spec.colour\""), "{err}");
    c.ok(&["create", "--validate=false", "-f", &extra]);
    let pruned = c.json(&["get", "ct", "extra"]);
    assert!(pruned["spec"].get("colour").is_none(), "pruned: {pruned}");

    // A bad one: every invalid field is printed with its path; nothing stored.
    let bad = c.file("bad.yaml", BAD);
    let err = c.fails(&["apply", "-f", &bad]);
    assert!(err.contains("is invalid"), "{err}");
    assert!(
        err.contains("spec.cronSpec: Invalid value: \"every night\""),
        "{err}"
    );
    assert!(
        err.contains("spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    assert!(!c.ok(&["get", "crontabs"]).contains("broken"));

    // Printer columns.
    let table = c.ok(&["get", "crontabs"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let row = table.lines().find(|l| l.starts_with("nightly")).unwrap();
    assert!(row.contains("0 3 * * *") && row.contains(" 1 "), "{table}");

    // status is a subresource: the main endpoint ignores it, /status takes
    // only it, and generation follows spec alone.
    c.ok(&[
        "patch",
        "ct",
        "nightly",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7}}"#,
    ]);
    let n = c.json(&["get", "ct", "nightly"]);
    assert!(n["status"]["replicas"].is_null(), "{n}");
    c.ok(&[
        "patch",
        "ct",
        "nightly",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"selector":"app=nightly"},"spec":{"image":"ignored"}}"#,
    ]);
    let n = c.json(&["get", "ct", "nightly"]);
    assert_eq!(n["status"]["replicas"], 2);
    assert_eq!(n["spec"]["image"], "backup:1");
    assert_eq!(n["metadata"]["generation"], 1);

    // Scale through /scale, read back as a Scale and on the object.
    let out = c.ok(&["scale", "crontab", "nightly", "--replicas=4"]);
    assert!(out.contains("scaled"), "{out}");
    let n = c.json(&["get", "ct", "nightly"]);
    assert_eq!(n["spec"]["replicas"], 4);
    assert_eq!(n["metadata"]["generation"], 2);
    let scale: Value = serde_json::from_str(&c.ok(&[
        "get",
        "--raw",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/nightly/scale",
    ]))
    .unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=nightly");
    let err = c.fails(&["scale", "crontab", "nightly", "--replicas=11"]);
    assert!(err.contains("spec.replicas"), "{err}");

    // The second version serves the same objects (conversion None).
    let beta = c.json(&["get", "crontabs.v1beta1.stable.example.com", "nightly"]);
    assert_eq!(beta["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(beta["spec"]["replicas"], 4);

    // explain reads the CRD's schema from OpenAPI.
    let explained = c.ok(&["explain", "crontab.spec"]);
    assert!(explained.contains("cronSpec"), "{explained}");
    assert!(
        explained.contains("When to run, in cron syntax."),
        "{explained}"
    );

    // A watch sees the events of custom resources.
    let mut watch = c
        .sandbox
        .command("kubectl")
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(["get", "crontabs", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Lines arrive through a channel so a missing event fails the test
    // instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The initial list is printed before the watch starts from its
    // resourceVersion: every later write is seen.
    let mut all = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        let listed = line.contains("nightly");
        all.push(line);
        if listed {
            break;
        }
    }
    let watched = c.file("watched.yaml", &GOOD.replace("nightly", "watched"));
    c.ok(&["create", "-f", &watched]);
    c.ok(&["label", "ct", "watched", "x=y"]);
    c.ok(&["delete", "ct", "watched"]);
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        all.push(line.clone());
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.get(1) != Some(&"watched") {
            continue;
        }
        seen.push(words[..2].join(" "));
        if line.starts_with("DELETED") {
            break;
        }
    }
    let _ = watch.kill();
    let out = watch.wait_with_output().unwrap();
    assert_eq!(
        seen,
        ["ADDED watched", "MODIFIED watched", "DELETED watched"],
        "watch printed {all:?}; stderr {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A non-structural schema is refused with upstream's message.
    let ns = c.file("nonstructural.yaml", NON_STRUCTURAL);
    let err = c.fails(&["apply", "-f", &ns]);
    assert!(
        err.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"),
        "{err}"
    );

    // Names already taken in the group are not accepted.
    let conflicting = c.file("conflicting.yaml", CONFLICTING);
    c.ok(&["apply", "-f", &conflicting]);
    let mut names_accepted = Value::Null;
    for _ in 0..200 {
        let crd = c.json(&["get", "crd", "crontabs2.stable.example.com"]);
        if let Some(cond) = crd["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|k| k["type"] == "NamesAccepted"))
        {
            names_accepted = cond.clone();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(names_accepted["status"], "False", "{names_accepted}");
    assert_eq!(names_accepted["reason"], "KindConflict");
    assert_eq!(names_accepted["message"], "\"CronTab\" is already in use");

    // Deleting the CRD deletes every CronTab, then the CRD, then the endpoints.
    assert_eq!(c.stored_crontabs(), 2);
    c.ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--timeout=60s",
    ]);
    assert_eq!(c.stored_crontabs(), 0);
    let err = c.fails(&["get", "crd", "crontabs.stable.example.com"]);
    assert!(err.contains("NotFound"), "{err}");
    let mut gone = false;
    for _ in 0..100 {
        let out = c.run(&["get", "--raw", "/apis/stable.example.com/v1/crontabs"]);
        if !out.status.success() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone, "crontabs still served after the CRD was deleted");
}

async fn kube_client(c: &Cluster) -> Client {
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&c.kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    Client::try_from(config).unwrap()
}

const FINALIZER: &str = "stable.example.com/cleanup";

/// A finalizer loop as an operator writes it with kube-rs: the object gets
/// the finalizer, is deleted, stays with a deletionTimestamp until the
/// cleanup removes the finalizer, and a watcher sees it change then vanish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_finalizer_loop_over_a_custom_resource() {
    let c = cluster("crd-kube");
    tokio::task::block_in_place(|| c.install_crd());
    let client = kube_client(&c).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("stable.example.com", "v1", "CronTab"),
        "crontabs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": { "name": "guarded" },
        "spec": { "cronSpec": "*/5 * * * *" },
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();

    let events = api.clone();
    // The writes below start once the watcher has listed: what it sees
    // after that is every change, not whatever state its list met.
    let (listed, synced) = tokio::sync::oneshot::channel();
    let watch = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut seen = Vec::new();
        let stream = watcher(
            events,
            watcher::Config::default().fields("metadata.name=guarded"),
        );
        let mut stream = std::pin::pin!(stream);
        while let Some(e) = stream.next().await {
            match e.unwrap() {
                watcher::Event::Apply(o) => {
                    let terminating = o.metadata.deletion_timestamp.is_some();
                    seen.push(if terminating {
                        "terminating"
                    } else {
                        "applied"
                    });
                }
                watcher::Event::Delete(_) => {
                    seen.push("deleted");
                    return seen;
                }
                watcher::Event::InitDone => {
                    if let Some(tx) = listed.take() {
                        let _ = tx.send(());
                    }
                }
                _ => {}
            }
        }
        seen
    });
    tokio::time::timeout(Duration::from_secs(20), synced)
        .await
        .expect("the watcher listed")
        .unwrap();

    // The reconciler's first pass: add the finalizer.
    let patch = json!({ "metadata": { "finalizers": [FINALIZER] } });
    api.patch("guarded", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // Status through the status subresource.
    let status = json!({ "status": { "replicas": 1 } });
    let o = api
        .patch_status("guarded", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(o.data["status"]["replicas"], 1);

    // Deleted: held by the finalizer, with a deletionTimestamp.
    api.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    let held = api.get("guarded").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some(), "{held:?}");
    assert_eq!(
        held.metadata.finalizers.as_deref(),
        Some(&[FINALIZER.to_owned()][..])
    );

    // The cleanup pass removes the finalizer; the object goes.
    let remove = json!({ "metadata": { "finalizers": null } });
    api.patch("guarded", &PatchParams::default(), &Patch::Merge(&remove))
        .await
        .unwrap();
    let mut gone = false;
    for _ in 0..200 {
        if api.get_opt("guarded").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the object stayed after its finalizer was removed");
    let seen = tokio::time::timeout(Duration::from_secs(20), watch)
        .await
        .expect("watcher saw the deletion")
        .unwrap();
    assert_eq!(seen.first(), Some(&"applied"));
    assert!(seen.contains(&"terminating"), "{seen:?}");
    assert_eq!(seen.last(), Some(&"deleted"));
}
