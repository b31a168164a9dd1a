//! `kubectl describe` of each workload kind reads as on a real cluster: the
//! Events section carries the controllers' upstream reasons and messages
//! (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob), with a
//! rolling update, a scale-down and a CronJob firing on the fake clock.

mod common;

use std::time::Duration;

use common::{KubectlCluster, eks_spec_with_pool, ok};
use kemu::shared::SystemClock;
use kemu::{Clock, FakeClock, Kemu};

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:17}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox:1.36}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: job, image: busybox:1.36}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: Never, containers: [{name: job, image: busybox:1.36}]}
"#;

/// The Events section of `kubectl describe` output.
fn events_of(described: &str) -> &str {
    described
        .rsplit_once("\nEvents:")
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("no Events section:\n{described}"))
}

#[test]
fn describe_shows_each_workload_kinds_events() {
    // kubectl checks certificates against wall time: the fake clock starts there.
    let clock = FakeClock::new(SystemClock.now());
    let c = KubectlCluster::with_kemu(
        Kemu::builder().clock(clock.clone()).build().unwrap(),
        eks_spec_with_pool("describe", 2, "m5.large"),
    );
    let sandbox = &c.sandbox;
    let k = |args: &[&str]| c.run(args);
    let manifest = sandbox.path("workloads.yaml");
    std::fs::write(&manifest, WORKLOADS).unwrap();
    ok(k(&["apply", "-f", manifest.to_str().unwrap()]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    ok(k(&["rollout", "status", "statefulset/db", "--timeout=60s"]));
    ok(k(&[
        "rollout",
        "status",
        "daemonset/agent",
        "--timeout=60s",
    ]));
    ok(k(&[
        "wait",
        "--for=condition=Complete",
        "job/once",
        "--timeout=60s",
    ]));
    // A rolling update, then a scale-down of each scalable kind.
    ok(k(&["set", "image", "deployment/web", "web=nginx:1.28"]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    ok(k(&["scale", "deployment/web", "--replicas=1"]));
    ok(k(&["scale", "statefulset/db", "--replicas=1"]));
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.replicas}=1",
        "statefulset/db",
        "--timeout=60s",
    ]));
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.replicas}=1",
        "deployment/web",
        "--timeout=60s",
    ]));
    // The next minute: the CronJob fires and its Job completes.
    clock.advance(Duration::from_secs(61));
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.lastSuccessfulTime}",
        "cronjob/tick",
        "--timeout=60s",
    ]));

    let described = ok(k(&["describe", "deployment", "web"]));
    let events = events_of(&described);
    for want in [
        "ScalingReplicaSet",
        "deployment-controller",
        "Scaled up replica set web-",
        "from 0 to 2",
        "Scaled down replica set web-",
    ] {
        assert!(events.contains(want), "{want} missing:\n{described}");
    }
    let rs = ok(k(&[
        "get",
        "rs",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]));
    for name in rs.split_whitespace() {
        let described = ok(k(&["describe", "rs", name]));
        let events = events_of(&described);
        assert!(
            events.contains("SuccessfulCreate")
                && events.contains("replicaset-controller")
                && events.contains(&format!("Created pod: {name}-")),
            "{described}"
        );
    }
    let described = ok(k(&["describe", "statefulset", "db"]));
    let events = events_of(&described);
    for want in [
        "create Claim data-db-0 Pod db-0 in StatefulSet db success",
        "create Pod db-0 in StatefulSet db successful",
        "SuccessfulDelete",
        "delete Pod db-1 in StatefulSet db successful",
        "statefulset-controller",
    ] {
        assert!(events.contains(want), "{want} missing:\n{described}");
    }
    let described = ok(k(&["describe", "daemonset", "agent"]));
    let events = events_of(&described);
    assert_eq!(
        events.matches("Created pod: agent-").count(),
        2,
        "{described}"
    );
    assert!(events.contains("daemonset-controller"), "{described}");
    let described = ok(k(&["describe", "job", "once"]));
    let events = events_of(&described);
    for want in [
        "SuccessfulCreate",
        "Created pod: once-",
        "Completed",
        "Job completed",
        "job-controller",
    ] {
        assert!(events.contains(want), "{want} missing:\n{described}");
    }
    // Defaults as upstream's: on what users create and on what controllers create.
    let strategy = ok(k(&[
        "get",
        "statefulset",
        "db",
        "-o",
        "jsonpath={.spec.updateStrategy.type}/{.spec.podManagementPolicy}",
    ]));
    assert_eq!(strategy, "RollingUpdate/OrderedReady");
    let child = ok(k(&[
        "get",
        "jobs",
        "-o",
        "jsonpath={.items[?(@.metadata.ownerReferences[0].kind==\"CronJob\")].spec.backoffLimit}",
    ]));
    assert_eq!(child, "6");
    let described = ok(k(&["describe", "cronjob", "tick"]));
    let events = events_of(&described);
    for want in [
        "SuccessfulCreate",
        "Created job tick-",
        "SawCompletedJob",
        "condition: Complete",
        "cronjob-controller",
    ] {
        assert!(events.contains(want), "{want} missing:\n{described}");
    }
}
