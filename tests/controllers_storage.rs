//! Storage as each cloud's cluster has it, driven by real kubectl: the cloud's
//! default StorageClass, a claim waiting for its first consumer, then bound to
//! a provisioned volume in the consumer's zone, and the volume deleted with
//! the claim.

mod common;

use common::{Sandbox, ok, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{ClusterSpec, NodePool, OwnerScope};
use serde_json::Value;

fn cluster(kemu: &Kemu, scope: OwnerScope, machine: &str) -> kemu::shared::ClusterRecord {
    kemu.registry()
        .create(ClusterSpec {
            scope,
            name: "disks".into(),
            version: "1.34".into(),
            node_pools: vec![NodePool {
                name: "pool".into(),
                count: 2,
                machine_type: machine.into(),
                labels: Default::default(),
                taints: vec![],
            }],
            tags: Default::default(),
            provisioning: std::time::Duration::ZERO,
            extra: Value::Null,
        })
        .unwrap()
}

const CLAIM: &str = r#"
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

fn exercise(scope: OwnerScope, machine: &str, default_class: &str, driver: &str) {
    let kemu = Kemu::builder().build().unwrap();
    let cluster = cluster(&kemu, scope, machine);
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &cluster, cluster.ca.cert_pem(), kemu.clock().now());
    let k = |args: &[&str]| sandbox.kubectl(&kc, args);

    let classes = ok(k(&["get", "storageclass"]));
    assert!(
        classes.contains(&format!("{default_class} (default)")),
        "{classes}"
    );
    let manifest = sandbox.path("claim.yaml");
    std::fs::write(&manifest, CLAIM).unwrap();
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
    let table = ok(k(&["get", "pvc", "data"]));
    assert!(
        table.contains("Bound") && table.contains(default_class),
        "{table}"
    );
    let pvc: Value = serde_json::from_str(&ok(k(&["get", "pvc", "data", "-o", "json"]))).unwrap();
    let pv_name = pvc["spec"]["volumeName"].as_str().unwrap().to_owned();
    let pv: Value = serde_json::from_str(&ok(k(&["get", "pv", &pv_name, "-o", "json"]))).unwrap();
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        driver
    );
    // The volume lives in the zone of the Node the Pod runs on.
    let node = ok(k(&["get", "pod", "app", "-o", "jsonpath={.spec.nodeName}"]));
    let zone = ok(k(&[
        "get",
        "node",
        &node,
        "-o",
        "jsonpath={.metadata.labels.topology\\.kubernetes\\.io/zone}",
    ]));
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
            [0],
        zone.as_str()
    );
    let events = ok(k(&["describe", "pvc", "data"]));
    assert!(
        events.contains("WaitForFirstConsumer") || events.contains("ProvisioningSucceeded"),
        "{events}"
    );
    // Reclaim policy Delete: the volume goes with its claim.
    ok(k(&["delete", "pod", "app", "--wait=true"]));
    ok(k(&["delete", "pvc", "data", "--wait=true"]));
    ok(k(&[
        "wait",
        "--for=delete",
        &format!("pv/{pv_name}"),
        "--timeout=60s",
    ]));
}

#[test]
fn eks_gp3_claims_bind() {
    exercise(
        OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-west-2".into(),
        },
        "m5.large",
        "gp3",
        "ebs.csi.aws.com",
    );
}

#[test]
fn gke_standard_rwo_claims_bind() {
    exercise(
        OwnerScope::Gke {
            project: "proj".into(),
            location: "europe-west1".into(),
        },
        "e2-standard-4",
        "standard-rwo",
        "pd.csi.storage.gke.io",
    );
}

#[test]
fn aks_default_claims_bind() {
    exercise(
        OwnerScope::Aks {
            subscription: "00000000-0000-0000-0000-000000000000".into(),
            resource_group: "rg".into(),
            location: "westeurope".into(),
        },
        "Standard_D2s_v3",
        "default",
        "disk.csi.azure.com",
    );
}
