//! What users look at on a healthy cluster, with real kubectl: `top pods` and
//! `top nodes` from the synthetic metrics, a HorizontalPodAutoscaler scaling a
//! Deployment when the fake clock passes its sync period, `describe pod`
//! showing the scheduler's and kubelet's Events, `kubectl events`, and the
//! Events expiring an hour later.

mod common;

use std::time::Duration;

use common::{KubectlCluster, eks_spec_with_pool, ok};
use kemu::shared::SystemClock;
use kemu::{Clock, FakeClock, Kemu};

const WORKLOAD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources: {requests: {cpu: 100m, memory: 128Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
"#;

#[test]
fn top_hpa_describe_and_events() {
    // kubectl checks certificates against wall time: the fake clock starts there.
    let clock = FakeClock::new(SystemClock.now());
    let c = KubectlCluster::with_kemu(
        Kemu::builder().clock(clock.clone()).build().unwrap(),
        eks_spec_with_pool("observe", 2, "m5.xlarge"),
    );
    let sandbox = &c.sandbox;
    let k = |args: &[&str]| c.run(args);
    let manifest = sandbox.path("web.yaml");
    std::fs::write(&manifest, WORKLOAD).unwrap();
    ok(k(&["apply", "-f", manifest.to_str().unwrap()]));
    ok(k(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=60s",
    ]));
    ok(k(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=web",
        "--timeout=60s",
    ]));

    // top: half the request by default (50m of 100m, 64Mi of 128Mi).
    let top = ok(k(&["top", "pods", "-l", "app=web"]));
    assert_eq!(
        top.lines().filter(|l| l.starts_with("web-")).count(),
        2,
        "{top}"
    );
    assert!(top.contains("50m") && top.contains("64Mi"), "{top}");
    let nodes = ok(k(&["top", "nodes"]));
    assert_eq!(nodes.lines().count(), 3, "{nodes}");
    assert!(
        nodes.contains("CPU(cores)") && nodes.contains('%'),
        "{nodes}"
    );

    // The HPA sees 50 % of 50 % wanted: nothing to do.
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.desiredReplicas}=2",
        "hpa/web",
        "--timeout=60s",
    ]));
    // Load rises (the workload's usage annotation); at the next sync period
    // the HPA doubles the Deployment.
    ok(k(&[
        "annotate",
        "deployment/web",
        "kemu.dev/cpu-usage=100%",
    ]));
    let top = ok(k(&["top", "pods", "-l", "app=web"]));
    assert!(top.contains("100m"), "{top}");
    clock.advance(Duration::from_secs(15));
    ok(k(&[
        "wait",
        "--for=jsonpath={.spec.replicas}=4",
        "deployment/web",
        "--timeout=60s",
    ]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    let hpa = ok(k(&["get", "hpa", "web"]));
    assert!(
        hpa.contains("cpu: 100%/50%") || hpa.contains("100%/50%"),
        "{hpa}"
    );
    let described = ok(k(&["describe", "hpa", "web"]));
    assert!(described.contains("SuccessfulRescale"), "{described}");
    assert!(described.contains("New size: 4"), "{described}");

    // describe pod: the scheduler's and kubelet's Events.
    let pod = ok(k(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]));
    let described = ok(k(&["describe", "pod", &pod]));
    for reason in ["Scheduled", "Pulled", "Created", "Started"] {
        assert!(described.contains(reason), "{reason} missing:\n{described}");
    }
    // kubectl events: the whole story.
    let events = ok(k(&["events"]));
    for reason in [
        "ScalingReplicaSet",
        "SuccessfulCreate",
        "SuccessfulRescale",
        "Scheduled",
    ] {
        assert!(events.contains(reason), "{reason} missing:\n{events}");
    }
    // Node Leases are renewed on the clock.
    let leases = ok(k(&["get", "leases", "-n", "kube-node-lease"]));
    assert_eq!(leases.lines().count(), 3, "{leases}");

    // An hour after they were last recorded, Events expire (kube-apiserver's
    // --event-ttl): the Pod's are gone, and describe shows none.
    let pods_events = format!("involvedObject.name={pod}");
    let before = ok(k(&[
        "get",
        "events",
        "--field-selector",
        &pods_events,
        "-o",
        "name",
    ]));
    assert!(!before.is_empty(), "the Pod has Events before the hour");
    // A write through the API renews an Event's lease, as in etcd.
    let labelled = before.lines().next().unwrap_or_default().to_owned();
    let name = labelled.trim_start_matches("event/");
    clock.advance(Duration::from_secs(1800));
    ok(k(&["label", &labelled, "kept=yes"]));
    clock.advance(Duration::from_secs(1801));
    let others = format!("{pods_events},metadata.name!={name}");
    ok(k(&[
        "wait",
        "--for=delete",
        "events",
        "--field-selector",
        &others,
        "--timeout=60s",
    ]));
    let kept = ok(k(&["get", &labelled, "-o", "name"]));
    assert_eq!(kept.trim(), labelled, "labelled half an hour in, kept");
    clock.advance(Duration::from_secs(1800));
    ok(k(&[
        "wait",
        "--for=delete",
        "events",
        "--field-selector",
        &pods_events,
        "--timeout=60s",
    ]));
    let described = ok(k(&["describe", "pod", &pod]));
    let events_line = described.lines().find(|l| l.starts_with("Events:"));
    assert!(
        events_line.is_some_and(|l| l.ends_with("<none>")),
        "{described}"
    );
}
