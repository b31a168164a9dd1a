//! StorageObjectInUseProtection with real kubectl: every claim and volume
//! carries its protection finalizer; a claim deleted while a Pod uses it
//! stays `Terminating` until the Pod is gone, and a volume deleted while
//! bound stays until its claim lets go.

mod common;

use common::{KubectlCluster, eks_spec_with_pool, ok};
use kemu::Kemu;
use serde_json::Value;

const CLAIM_AND_POD: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: app, image: nginx}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"#;

const STATIC: &str = r#"
apiVersion: v1
kind: PersistentVolume
metadata: {name: manual}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: /data/manual}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: manual
  resources: {requests: {storage: 5Gi}}
"#;

fn finalizers(v: &Value) -> Vec<String> {
    v["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn claims_in_use_and_bound_volumes_wait_for_their_users() {
    let c = KubectlCluster::with_kemu(
        Kemu::builder().build().unwrap(),
        eks_spec_with_pool("protect", 1, "m5.large"),
    );
    let sandbox = &c.sandbox;
    let k = |args: &[&str]| c.run(args);
    let json = |args: &[&str]| -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&ok(k(&all))).unwrap()
    };
    let manifest = sandbox.path("claim.yaml");
    std::fs::write(&manifest, CLAIM_AND_POD).unwrap();
    ok(k(&["apply", "-f", manifest.to_str().unwrap()]));
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.phase}=Bound",
        "pvc/data",
        "--timeout=60s",
    ]));
    ok(k(&[
        "wait",
        "--for=condition=Ready",
        "pod/app",
        "--timeout=60s",
    ]));
    let pvc = json(&["get", "pvc", "data"]);
    assert_eq!(finalizers(&pvc), ["kubernetes.io/pvc-protection"], "{pvc}");
    let pv_name = pvc["spec"]["volumeName"].as_str().unwrap().to_owned();
    // A provisioned volume (written by the controller) gets its finalizer too.
    ok(k(&[
        "wait",
        "--for=jsonpath={.metadata.finalizers[0]}=kubernetes.io/pv-protection",
        &format!("pv/{pv_name}"),
        "--timeout=60s",
    ]));

    // Deleting the claim the Pod uses: it stays, Terminating.
    ok(k(&["delete", "pvc", "data", "--wait=false"]));
    let pvc = json(&["get", "pvc", "data"]);
    assert!(pvc["metadata"]["deletionTimestamp"].is_string(), "{pvc}");
    assert_eq!(finalizers(&pvc), ["kubernetes.io/pvc-protection"], "{pvc}");
    let table = ok(k(&["get", "pvc", "data"]));
    assert!(table.contains("Terminating"), "{table}");
    // Still there after the controllers have seen later writes.
    ok(k(&["label", "pod", "app", "touched=yes"]));
    ok(k(&[
        "wait",
        "--for=jsonpath={.metadata.labels.touched}=yes",
        "pod/app",
        "--timeout=60s",
    ]));
    let pvc = json(&["get", "pvc", "data"]);
    assert!(pvc["metadata"]["deletionTimestamp"].is_string(), "{pvc}");
    // The Pod goes: the claim follows, then its volume (reclaim policy Delete).
    ok(k(&["delete", "pod", "app", "--wait=true"]));
    ok(k(&["wait", "--for=delete", "pvc/data", "--timeout=60s"]));
    ok(k(&[
        "wait",
        "--for=delete",
        &format!("pv/{pv_name}"),
        "--timeout=60s",
    ]));

    // A volume deleted while bound stays Terminating until its claim goes.
    let manifest = sandbox.path("static.yaml");
    std::fs::write(&manifest, STATIC).unwrap();
    ok(k(&["apply", "-f", manifest.to_str().unwrap()]));
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.phase}=Bound",
        "pvc/static",
        "--timeout=60s",
    ]));
    let pv = json(&["get", "pv", "manual"]);
    assert_eq!(finalizers(&pv), ["kubernetes.io/pv-protection"], "{pv}");
    ok(k(&["delete", "pv", "manual", "--wait=false"]));
    let table = ok(k(&["get", "pv", "manual"]));
    assert!(table.contains("Terminating"), "{table}");
    let pv = json(&["get", "pv", "manual"]);
    assert_eq!(pv["status"]["phase"], "Bound", "{pv}");
    // No Pod uses the claim: it goes at once; the volume is Released (Retain)
    // and no longer protected.
    ok(k(&["delete", "pvc", "static", "--wait=true"]));
    ok(k(&["wait", "--for=delete", "pv/manual", "--timeout=60s"]));
}
