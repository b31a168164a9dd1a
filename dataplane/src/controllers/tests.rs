//! Controllers end to end on a [`MemClient`] and a [`FakeClock`]: each test
//! advances the clock and asserts every intermediate state.

use std::sync::Arc;
use std::time::Duration;

use kemu_shared::{Clock, FakeClock};
use serde_json::{Value, json};

use super::client::{Client, DeleteOptions, Kind, MemClient, kinds};
use super::{ControllerConfig, Controllers, KubeletConfig, obj};

struct Cluster {
    clock: Arc<FakeClock>,
    client: Arc<MemClient>,
    controllers: Controllers,
}

impl Cluster {
    async fn new(start_delay: Duration) -> Self {
        let clock = FakeClock::at_epoch();
        let client = MemClient::new(clock.clone());
        let config = ControllerConfig {
            kubelet: KubeletConfig { start_delay },
            ..ControllerConfig::default()
        };
        let controllers = Controllers::start(client.clone(), clock.clone(), config);
        let c = Self {
            clock,
            client,
            controllers,
        };
        c.settle().await;
        c
    }

    async fn settle(&self) {
        self.controllers.settle().await;
    }

    async fn advance(&self, secs: u64) {
        self.clock.advance(Duration::from_secs(secs));
        self.settle().await;
    }

    async fn create(&self, kind: Kind, v: Value) -> Value {
        let out = self.client.create(kind, v).await.unwrap();
        self.settle().await;
        Arc::unwrap_or_clone(out)
    }

    async fn get(&self, kind: Kind, ns: &str, name: &str) -> Value {
        Arc::unwrap_or_clone(self.client.get(kind, ns, name).await.unwrap())
    }

    async fn node(&self, name: &str, cpu: &str, labels: Value, taints: Value) {
        self.create(
            kinds::NODE,
            json!({"metadata": {"name": name, "labels": labels},
                   "spec": {"taints": taints},
                   "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                              "conditions": [{"type": "Ready", "status": "True"}],
                              "addresses": [{"type": "InternalIP", "address": format!("192.168.0.{}", name.len())}]}}),
        )
        .await;
    }

    fn pods(&self) -> Vec<Arc<Value>> {
        self.client.all(kinds::POD)
    }

    fn rs_named(&self, prefix_image: &str) -> Option<Arc<Value>> {
        self.client
            .all(kinds::REPLICA_SET)
            .into_iter()
            .find(|r| r["spec"]["template"]["spec"]["containers"][0]["image"] == prefix_image)
    }

    fn events(&self, reason: &str) -> Vec<String> {
        self.client
            .all(kinds::EVENT)
            .iter()
            .filter(|e| e["reason"] == reason)
            .map(|e| e["message"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

fn deployment(name: &str, replicas: i64, image: &str, strategy: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    })
}

fn replicas(rs: &Option<Arc<Value>>) -> i64 {
    rs.as_ref()
        .map_or(-1, |r| r["spec"]["replicas"].as_i64().unwrap_or(-1))
}

fn cond<'a>(v: &'a Value, t: &str) -> &'a Value {
    obj::condition(v, t).unwrap_or(&Value::Null)
}

#[tokio::test]
async fn rolling_update_steps_within_surge_and_unavailability() {
    let c = Cluster::new(Duration::from_secs(5)).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.node("node-b", "8", json!({}), json!([])).await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}});
    c.create(kinds::DEPLOYMENT, deployment("web", 4, "nginx:1", strategy))
        .await;

    // Four Pods created, bound, still ContainerCreating.
    let v1 = c.rs_named("nginx:1");
    assert_eq!(replicas(&v1), 4);
    assert_eq!(c.pods().len(), 4);
    assert!(
        c.pods()
            .iter()
            .all(|p| p["spec"]["nodeName"].as_str().is_some())
    );
    assert!(c.pods().iter().all(
        |p| p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            == "ContainerCreating"
    ));
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(d["status"]["replicas"], 4);
    assert_eq!(d["status"]["unavailableReplicas"], 4);
    assert_eq!(cond(&d, "Available")["status"], "False");
    assert_eq!(
        cond(&d, "Available")["reason"],
        "MinimumReplicasUnavailable"
    );
    assert_eq!(cond(&d, "Progressing")["status"], "True");

    // Five seconds on: all Running and Ready; the Deployment is complete.
    c.advance(5).await;
    assert!(
        c.pods()
            .iter()
            .all(|p| obj::pod_phase(p) == "Running" && obj::pod_ready(p))
    );
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(d["status"]["availableReplicas"], 4);
    assert_eq!(d["status"]["updatedReplicas"], 4);
    assert_eq!(d["status"]["observedGeneration"], 1);
    assert!(d["status"].get("unavailableReplicas").is_none());
    assert_eq!(cond(&d, "Available")["reason"], "MinimumReplicasAvailable");
    assert_eq!(
        cond(&d, "Available")["message"],
        "Deployment has minimum availability."
    );
    let v1_name = obj::name(v1.as_ref().unwrap()).to_owned();
    assert_eq!(cond(&d, "Progressing")["reason"], "NewReplicaSetAvailable");
    assert_eq!(
        cond(&d, "Progressing")["message"],
        format!("ReplicaSet \"{v1_name}\" has successfully progressed.")
    );
    assert_eq!(
        obj::annotation(&d, "deployment.kubernetes.io/revision"),
        Some("1")
    );

    // New image: surge one, then trade old for new as Pods become available.
    let mut d2 = d.clone();
    d2["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    c.client.update(kinds::DEPLOYMENT, d2).await.unwrap();
    c.settle().await;
    let (old, new) = (c.rs_named("nginx:1"), c.rs_named("nginx:2"));
    assert_eq!((replicas(&old), replicas(&new)), (3, 2));
    assert_eq!(c.pods().len(), 5);
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(
        obj::annotation(&d, "deployment.kubernetes.io/revision"),
        Some("2")
    );
    assert_eq!(cond(&d, "Progressing")["reason"], "ReplicaSetUpdated");
    assert_eq!(d["status"]["updatedReplicas"], 2);
    assert_eq!(d["status"]["availableReplicas"], 3);

    c.advance(5).await;
    let (old, new) = (c.rs_named("nginx:1"), c.rs_named("nginx:2"));
    assert_eq!((replicas(&old), replicas(&new)), (1, 4));
    assert_eq!(c.pods().len(), 5);

    c.advance(5).await;
    let (old, new) = (c.rs_named("nginx:1"), c.rs_named("nginx:2"));
    assert_eq!((replicas(&old), replicas(&new)), (0, 4));
    assert_eq!(c.pods().len(), 4);
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(d["status"]["availableReplicas"], 4);
    assert_eq!(d["status"]["updatedReplicas"], 4);
    assert_eq!(d["status"]["observedGeneration"], 2);
    assert_eq!(cond(&d, "Progressing")["reason"], "NewReplicaSetAvailable");
    // The old ReplicaSet is kept for `rollout undo`, with its revision.
    assert_eq!(
        obj::annotation(old.as_ref().unwrap(), "deployment.kubernetes.io/revision"),
        Some("1")
    );
    assert_eq!(
        obj::annotation(new.as_ref().unwrap(), "deployment.kubernetes.io/revision"),
        Some("2")
    );
    let scaling = c.events("ScalingReplicaSet");
    assert!(
        scaling.contains(&format!("Scaled up replica set {v1_name} from 0 to 4")),
        "{scaling:?}"
    );
    assert!(
        scaling.contains(&format!("Scaled down replica set {v1_name} from 4 to 3")),
        "{scaling:?}"
    );
    assert!(
        scaling.contains(&format!("Scaled down replica set {v1_name} from 1 to 0")),
        "{scaling:?}"
    );

    // Undo as kubectl does it: the old template back; the old ReplicaSet
    // becomes revision 3 and remembers revision 1.
    let mut d3 = c.get(kinds::DEPLOYMENT, "default", "web").await;
    d3["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1");
    c.client.update(kinds::DEPLOYMENT, d3).await.unwrap();
    c.settle().await;
    c.advance(5).await;
    c.advance(5).await;
    let (old, new) = (c.rs_named("nginx:1"), c.rs_named("nginx:2"));
    assert_eq!((replicas(&old), replicas(&new)), (4, 0));
    assert_eq!(
        obj::annotation(old.as_ref().unwrap(), "deployment.kubernetes.io/revision"),
        Some("3")
    );
    assert_eq!(
        obj::annotation(
            old.as_ref().unwrap(),
            "deployment.kubernetes.io/revision-history"
        ),
        Some("1")
    );
    assert_eq!(c.client.count(kinds::REPLICA_SET), 2);
}

#[tokio::test]
async fn recreate_scales_old_to_zero_first() {
    let c = Cluster::new(Duration::from_secs(5)).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::DEPLOYMENT,
        deployment("db", 2, "pg:1", json!({"type": "Recreate"})),
    )
    .await;
    c.advance(5).await;
    let mut d = c.get(kinds::DEPLOYMENT, "default", "db").await;
    d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("pg:2");
    c.client.update(kinds::DEPLOYMENT, d).await.unwrap();
    c.settle().await;
    assert_eq!(replicas(&c.rs_named("pg:1")), 0);
    assert_eq!(replicas(&c.rs_named("pg:2")), 2);
    assert!(
        c.pods()
            .iter()
            .all(|p| p["spec"]["containers"][0]["image"] == "pg:2")
    );
    c.advance(5).await;
    let d = c.get(kinds::DEPLOYMENT, "default", "db").await;
    assert_eq!(d["status"]["availableReplicas"], 2);
}

#[tokio::test]
async fn progress_deadline_and_pause() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    let mut d = deployment("stuck", 2, "app:1", json!({}));
    d["spec"]["progressDeadlineSeconds"] = json!(10);
    d["spec"]["template"]["metadata"]["annotations"] = json!({"kemu.dev/ready": "never"});
    c.create(kinds::DEPLOYMENT, d).await;
    let d = c.get(kinds::DEPLOYMENT, "default", "stuck").await;
    assert_eq!(cond(&d, "Progressing")["status"], "True");
    assert!(
        c.pods()
            .iter()
            .all(|p| obj::pod_phase(p) == "Running" && !obj::pod_ready(p))
    );
    c.advance(12).await;
    let d = c.get(kinds::DEPLOYMENT, "default", "stuck").await;
    assert_eq!(cond(&d, "Progressing")["status"], "False");
    assert_eq!(
        cond(&d, "Progressing")["reason"],
        "ProgressDeadlineExceeded"
    );
    assert_eq!(cond(&d, "Available")["status"], "False");

    // Paused: a template change makes no new ReplicaSet.
    c.create(kinds::DEPLOYMENT, deployment("p", 1, "a:1", json!({})))
        .await;
    let mut d = c.get(kinds::DEPLOYMENT, "default", "p").await;
    d["spec"]["paused"] = json!(true);
    d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("a:2");
    c.client.update(kinds::DEPLOYMENT, d).await.unwrap();
    c.settle().await;
    assert!(c.rs_named("a:2").is_none());
    let d = c.get(kinds::DEPLOYMENT, "default", "p").await;
    assert_eq!(cond(&d, "Progressing")["reason"], "DeploymentPaused");
    assert_eq!(cond(&d, "Progressing")["status"], "Unknown");
    let mut d = d.clone();
    d["spec"]["paused"] = json!(false);
    c.client.update(kinds::DEPLOYMENT, d).await.unwrap();
    c.settle().await;
    assert_eq!(replicas(&c.rs_named("a:2")), 1);
}

#[tokio::test]
async fn scheduler_fits_requests_selectors_and_taints() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("small-1", "1", json!({"pool": "general"}), json!([]))
        .await;
    c.node("small-2", "1", json!({"pool": "general"}), json!([]))
        .await;
    c.node(
        "gpu-1",
        "8",
        json!({"pool": "gpu"}),
        json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
    )
    .await;
    let pod = |name: &str, cpu: &str| {
        json!({"metadata": {"name": name, "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}})
    };
    c.create(kinds::POD, pod("a", "600m")).await;
    c.create(kinds::POD, pod("b", "600m")).await;
    c.create(kinds::POD, pod("c", "600m")).await;
    let node_of = |p: &Value| p["spec"]["nodeName"].as_str().unwrap_or("").to_owned();
    let a = c.get(kinds::POD, "default", "a").await;
    let b = c.get(kinds::POD, "default", "b").await;
    let p3 = c.get(kinds::POD, "default", "c").await;
    // One per small node; the tainted node is not used; the third fits nowhere.
    let mut placed = vec![node_of(&a), node_of(&b)];
    placed.sort();
    assert_eq!(placed, ["small-1", "small-2"]);
    assert_eq!(node_of(&p3), "");
    assert_eq!(obj::pod_phase(&p3), "Pending");
    assert_eq!(cond(&p3, "PodScheduled")["reason"], "Unschedulable");
    let failed = c.events("FailedScheduling");
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0].starts_with(
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint"
        ),
        "{}",
        failed[0]
    );
    assert_eq!(a["status"]["phase"], "Running");
    assert_eq!(cond(&a, "Ready")["status"], "True");
    assert!(a["status"]["podIP"].as_str().is_some());
    assert!(
        c.events("Scheduled")
            .iter()
            .any(|m| m.starts_with("Successfully assigned default/a to small-"))
    );

    // A toleration and a selector send a Pod to the gpu node.
    let mut g = pod("g", "2");
    g["spec"]["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
    g["spec"]["nodeSelector"] = json!({"pool": "gpu"});
    c.create(kinds::POD, g).await;
    assert_eq!(node_of(&c.get(kinds::POD, "default", "g").await), "gpu-1");

    // The pool grows: the pending Pod is placed.
    c.node("small-3", "1", json!({"pool": "general"}), json!([]))
        .await;
    assert_eq!(node_of(&c.get(kinds::POD, "default", "c").await), "small-3");
}

#[tokio::test]
async fn failing_job_retries_to_backoff_limit() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::JOB,
        json!({"metadata": {"name": "fail", "namespace": "default"},
               "spec": {"backoffLimit": 2, "template": {
                   "metadata": {"annotations": {"kemu.dev/exit-code": "3"}},
                   "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let failed = |j: &Value| j["status"]["failed"].as_i64().unwrap_or(0);
    let j = c.get(kinds::JOB, "default", "fail").await;
    assert_eq!(failed(&j), 1);
    let p = &c.pods()[0];
    assert_eq!(obj::pod_phase(p), "Failed");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        3
    );
    // The replacement waits for the back-off: 10 s, then 20 s.
    c.advance(9).await;
    assert_eq!(failed(&c.get(kinds::JOB, "default", "fail").await), 1);
    c.advance(1).await;
    assert_eq!(failed(&c.get(kinds::JOB, "default", "fail").await), 2);
    assert!(finished_cond(&c.get(kinds::JOB, "default", "fail").await).is_none());
    c.advance(20).await;
    let j = c.get(kinds::JOB, "default", "fail").await;
    assert_eq!(failed(&j), 3);
    assert_eq!(cond(&j, "Failed")["status"], "True");
    assert_eq!(cond(&j, "Failed")["reason"], "BackoffLimitExceeded");
    assert_eq!(
        cond(&j, "Failed")["message"],
        "Job has reached the specified backoff limit"
    );
    assert_eq!(cond(&j, "FailureTarget")["reason"], "BackoffLimitExceeded");
    assert_eq!(c.pods().len(), 3);
    assert_eq!(c.events("BackoffLimitExceeded").len(), 1);
}

fn finished_cond(j: &Value) -> Option<&'static str> {
    super::job::finished(j)
}

#[tokio::test]
async fn indexed_job_completes_after_its_run_time() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::JOB,
        json!({"metadata": {"name": "idx", "namespace": "default"},
               "spec": {"completions": 3, "parallelism": 2, "completionMode": "Indexed", "template": {
                   "metadata": {"annotations": {"kemu.dev/exit-after": "30s"}},
                   "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let j = c.get(kinds::JOB, "default", "idx").await;
    assert_eq!(j["status"]["active"], 2);
    c.advance(30).await;
    let j = c.get(kinds::JOB, "default", "idx").await;
    assert_eq!(j["status"]["succeeded"], 2);
    assert_eq!(j["status"]["completedIndexes"], "0-1");
    assert_eq!(j["status"]["active"], 1);
    c.advance(30).await;
    let j = c.get(kinds::JOB, "default", "idx").await;
    assert_eq!(j["status"]["completedIndexes"], "0-2");
    assert_eq!(cond(&j, "Complete")["reason"], "CompletionsReached");
    assert_eq!(cond(&j, "SuccessCriteriaMet")["status"], "True");
    assert_eq!(j["status"]["completionTime"], obj::fmt_time(c.clock.now()));
}

#[tokio::test]
async fn cronjob_fires_when_the_clock_passes_its_schedule() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::CRON_JOB,
        json!({"metadata": {"name": "tick", "namespace": "default"},
               "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
                   "metadata": {"annotations": {"kemu.dev/exit-after": "10s"}},
                   "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    )
    .await;
    c.advance(299).await;
    assert_eq!(c.client.count(kinds::JOB), 0);
    c.advance(1).await;
    let jobs = c.client.all(kinds::JOB);
    assert_eq!(jobs.len(), 1);
    // 2026-01-01T00:05:00Z in minutes since the epoch.
    assert_eq!(obj::name(&jobs[0]), "tick-29453765");
    assert_eq!(
        obj::annotation(&jobs[0], "batch.kubernetes.io/cronjob-scheduled-timestamp"),
        Some("2026-01-01T00:05:00Z")
    );
    let cj = c.get(kinds::CRON_JOB, "default", "tick").await;
    assert_eq!(cj["status"]["lastScheduleTime"], "2026-01-01T00:05:00Z");
    assert_eq!(cj["status"]["active"][0]["name"], "tick-29453765");
    c.advance(10).await;
    let cj = c.get(kinds::CRON_JOB, "default", "tick").await;
    assert!(cj["status"].get("active").is_none(), "{cj}");
    assert_eq!(cj["status"]["lastSuccessfulTime"], "2026-01-01T00:05:10Z");
    assert_eq!(
        c.events("SawCompletedJob"),
        ["Saw completed job: tick-29453765, condition: Complete"]
    );
    // Four more runs: the history keeps three successful Jobs.
    for _ in 0..4 {
        c.advance(290).await;
        c.advance(10).await;
    }
    assert_eq!(c.client.count(kinds::JOB), 3);
}

#[tokio::test]
async fn deleting_an_owner_collects_dependents() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(kinds::DEPLOYMENT, deployment("web", 3, "nginx", json!({})))
        .await;
    assert_eq!(c.pods().len(), 3);
    c.client
        .delete(
            kinds::DEPLOYMENT,
            "default",
            "web",
            DeleteOptions::default(),
        )
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.client.count(kinds::REPLICA_SET), 0);
    assert_eq!(c.pods().len(), 0);

    // Orphan: the ReplicaSet stays, without its ownerReference.
    c.create(kinds::DEPLOYMENT, deployment("keep", 2, "nginx", json!({})))
        .await;
    c.client
        .delete(
            kinds::DEPLOYMENT,
            "default",
            "keep",
            DeleteOptions {
                propagation: Some(super::client::Propagation::Orphan),
                ..DeleteOptions::default()
            },
        )
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.client.count(kinds::DEPLOYMENT), 0);
    let rs = c.client.all(kinds::REPLICA_SET);
    assert_eq!(rs.len(), 1);
    assert!(obj::owner_refs(&rs[0]).is_empty());
    assert_eq!(c.pods().len(), 2);

    // The same Deployment again adopts the orphaned ReplicaSet: no new Pods.
    c.create(kinds::DEPLOYMENT, deployment("keep", 2, "nginx", json!({})))
        .await;
    let rs = c.client.all(kinds::REPLICA_SET);
    assert_eq!(rs.len(), 1);
    assert_eq!(
        obj::controller_ref(&rs[0]).map(|r| r["name"].clone()),
        Some(json!("keep"))
    );
    assert_eq!(c.pods().len(), 2);
    c.client
        .delete(
            kinds::DEPLOYMENT,
            "default",
            "keep",
            DeleteOptions {
                propagation: Some(super::client::Propagation::Orphan),
                ..DeleteOptions::default()
            },
        )
        .await
        .unwrap();
    c.settle().await;
    let rs = c.client.all(kinds::REPLICA_SET);
    assert!(obj::owner_refs(&rs[0]).is_empty());

    // Foreground: the owner waits for its dependents.
    let rs_name = obj::name(&rs[0]).to_owned();
    c.client
        .delete(
            kinds::REPLICA_SET,
            "default",
            &rs_name,
            DeleteOptions {
                propagation: Some(super::client::Propagation::Foreground),
                ..DeleteOptions::default()
            },
        )
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.client.count(kinds::REPLICA_SET), 0);
    assert_eq!(c.pods().len(), 0);
}

#[tokio::test]
async fn namespace_terminates_after_its_contents() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::NAMESPACE,
        json!({"metadata": {"name": "team"}, "spec": {"finalizers": ["kubernetes"]}}),
    )
    .await;
    assert_eq!(
        c.get(kinds::NAMESPACE, "", "team").await["status"]["phase"],
        "Active"
    );
    assert!(
        c.client
            .get(kinds::SERVICE_ACCOUNT, "team", "default")
            .await
            .is_ok()
    );
    let mut d = deployment("web", 2, "nginx", json!({}));
    d["metadata"]["namespace"] = json!("team");
    c.create(kinds::DEPLOYMENT, d).await;
    assert_eq!(c.pods().len(), 2);
    c.client
        .delete(kinds::NAMESPACE, "", "team", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    assert!(c.client.get(kinds::NAMESPACE, "", "team").await.is_err());
    assert_eq!(c.pods().len(), 0);
    assert_eq!(c.client.count(kinds::DEPLOYMENT), 0);
}

#[tokio::test]
async fn crash_looping_pod_backs_off() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::POD,
        json!({"metadata": {"name": "crash", "namespace": "default", "annotations": {"kemu.dev/exit-code": "1", "kemu.dev/exit-after": "5s"}},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let restarts = |p: &Value| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .unwrap_or(-1)
    };
    assert_eq!(restarts(&c.get(kinds::POD, "default", "crash").await), 0);
    c.advance(5).await;
    let p = c.get(kinds::POD, "default", "crash").await;
    assert_eq!(restarts(&p), 1);
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    assert_eq!(
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        1
    );
    assert_eq!(obj::pod_phase(&p), "Running");
    c.advance(10).await;
    let p = c.get(kinds::POD, "default", "crash").await;
    assert!(p["status"]["containerStatuses"][0]["state"]["running"].is_object());
    assert_eq!(c.events("BackOff").len(), 1);
    assert_eq!(c.events("Started").len(), 2);
}

#[tokio::test]
async fn a_host_port_held_on_the_node_gets_a_pod_rejected() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    let pod = |name: &str| {
        json!({"metadata": {"name": name, "namespace": "default"},
               "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "x",
                   "ports": [{"containerPort": 8080, "hostPort": 21017, "protocol": "TCP"}]}]}})
    };
    c.create(kinds::POD, pod("first")).await;
    assert_eq!(
        obj::pod_phase(&c.get(kinds::POD, "default", "first").await),
        "Running"
    );
    c.create(kinds::POD, pod("second")).await;
    let second = c.get(kinds::POD, "default", "second").await;
    assert_eq!(obj::pod_phase(&second), "Failed");
    assert_eq!(second["status"]["reason"], "NodePorts");
    assert!(second["status"]["startTime"].is_null());
    // Once the port is free, a new Pod asking for it runs.
    c.client
        .delete(kinds::POD, "default", "first", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    c.create(kinds::POD, pod("third")).await;
    assert_eq!(
        obj::pod_phase(&c.get(kinds::POD, "default", "third").await),
        "Running"
    );
}

fn storage_class(name: &str, default: bool, mode: &str) -> Value {
    json!({"metadata": {"name": name, "annotations": {
            "storageclass.kubernetes.io/is-default-class": if default { "true" } else { "false" }}},
           "provisioner": "example.com/csi", "reclaimPolicy": "Delete", "volumeBindingMode": mode})
}

fn claim(name: &str, class: Option<&str>) -> Value {
    let mut c = json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}});
    if let Some(class) = class {
        c["spec"]["storageClassName"] = json!(class);
    }
    c
}

#[tokio::test]
async fn claims_bind_provisioned_volumes_and_release_them_by_policy() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node(
        "node-a",
        "8",
        json!({"topology.kubernetes.io/zone": "z1"}),
        json!([]),
    )
    .await;
    c.create(
        kinds::STORAGE_CLASS,
        storage_class("now", false, "Immediate"),
    )
    .await;
    c.create(
        kinds::STORAGE_CLASS,
        storage_class("late", true, "WaitForFirstConsumer"),
    )
    .await;

    // Immediate: provisioned and bound at once, in a zone of the cluster.
    c.create(kinds::PVC, claim("a", Some("now"))).await;
    let a = c.get(kinds::PVC, "default", "a").await;
    assert_eq!(a["status"]["phase"], "Bound", "{a}");
    let pv_name = a["spec"]["volumeName"].as_str().unwrap().to_owned();
    assert_eq!(pv_name, format!("pvc-{}", obj::uid(&a)));
    let pv = c.get(kinds::PV, "", &pv_name).await;
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(pv["spec"]["claimRef"]["name"], "a");
    assert_eq!(pv["spec"]["capacity"]["storage"], "5Gi");
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
            [0],
        "z1"
    );
    assert_eq!(c.events("ProvisioningSucceeded").len(), 1);

    // WaitForFirstConsumer (the default class): Pending until a Pod uses it.
    c.create(kinds::PVC, claim("b", None)).await;
    let b = c.get(kinds::PVC, "default", "b").await;
    assert_eq!(b["spec"]["storageClassName"], "late");
    assert_eq!(b["status"]["phase"], "Pending");
    assert_eq!(c.events("WaitForFirstConsumer").len(), 1);
    c.create(
        kinds::POD,
        json!({"metadata": {"name": "user", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "x"}],
                        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "b"}}]}}),
    )
    .await;
    let b = c.get(kinds::PVC, "default", "b").await;
    assert_eq!(b["status"]["phase"], "Bound", "{b}");
    let pod = c.get(kinds::POD, "default", "user").await;
    assert_eq!(pod["spec"]["nodeName"], "node-a");
    assert_eq!(pod["status"]["phase"], "Running");

    // A Pod whose claim does not exist stays Pending, as upstream says why.
    c.create(
        kinds::POD,
        json!({"metadata": {"name": "orphan", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "x"}],
                        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "nope"}}]}}),
    )
    .await;
    let failed = c.events("FailedScheduling");
    assert!(
        failed
            .iter()
            .any(|m| m.contains("persistentvolumeclaim \"nope\" not found")),
        "{failed:?}"
    );
    c.create(kinds::PVC, claim("nope", Some("now"))).await;
    let orphan = c.get(kinds::POD, "default", "orphan").await;
    assert_eq!(orphan["spec"]["nodeName"], "node-a");

    // Reclaim: Delete removes the volume with its claim; Retain releases it.
    c.client
        .delete(kinds::PVC, "default", "a", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    assert!(c.client.get(kinds::PV, "", &pv_name).await.is_err());
    let mut kept = c
        .get(kinds::PV, "", b["spec"]["volumeName"].as_str().unwrap())
        .await;
    kept["spec"]["persistentVolumeReclaimPolicy"] = json!("Retain");
    c.client.update(kinds::PV, kept.clone()).await.unwrap();
    c.client
        .delete(kinds::POD, "default", "user", DeleteOptions::default())
        .await
        .unwrap();
    c.client
        .delete(kinds::PVC, "default", "b", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    let kept = c.get(kinds::PV, "", obj::name(&kept)).await;
    assert_eq!(kept["status"]["phase"], "Released");
}

fn statefulset(replicas: i64, image: &str) -> Value {
    json!({
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                         "spec": {"containers": [{"name": "c", "image": image}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    })
}

fn names(c: &Cluster) -> Vec<String> {
    let mut n: Vec<String> = c.pods().iter().map(|p| obj::name(p).to_owned()).collect();
    n.sort();
    n
}

#[tokio::test]
async fn an_ordered_statefulset_halts_scale_down_at_an_unhealthy_pod() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    let mut set = statefulset(3, "pg:1");
    set["spec"]
        .as_object_mut()
        .unwrap()
        .remove("volumeClaimTemplates");
    let s = c.create(kinds::STATEFUL_SET, set).await;
    c.settle().await;
    assert_eq!(names(&c), ["db-0", "db-1", "db-2"]);
    let mark = |ready: Option<&str>| {
        let c = &c;
        let ready = ready.map(str::to_owned);
        async move {
            for n in ["db-0", "db-1", "db-2"] {
                let mut p = c.get(kinds::POD, "default", n).await;
                p["metadata"]["annotations"] = match &ready {
                    Some(r) => json!({"kemu.dev/ready": r}),
                    None => json!({}),
                };
                c.client.update(kinds::POD, p).await.unwrap();
            }
            c.settle().await;
        }
    };
    mark(Some("never")).await;
    let mut s = c.get(kinds::STATEFUL_SET, "default", obj::name(&s)).await;
    s["spec"]["replicas"] = json!(0);
    c.client.update(kinds::STATEFUL_SET, s).await.unwrap();
    c.settle().await;
    c.advance(5).await;
    // db-2 is not the first unhealthy Pod (db-0 is): nothing goes.
    assert_eq!(names(&c), ["db-0", "db-1", "db-2"]);
    mark(None).await;
    for _ in 0..5 {
        c.advance(5).await;
    }
    assert!(names(&c).is_empty(), "{:?}", names(&c));
}

#[tokio::test]
async fn statefulset_orders_pods_and_updates_down_to_partition() {
    let c = Cluster::new(Duration::from_secs(5)).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::STORAGE_CLASS,
        storage_class("fast", true, "WaitForFirstConsumer"),
    )
    .await;
    c.create(kinds::STATEFUL_SET, statefulset(3, "pg:1")).await;
    assert_eq!(names(&c), ["db-0"]);
    c.advance(5).await;
    assert_eq!(names(&c), ["db-0", "db-1"]);
    c.advance(5).await;
    assert_eq!(names(&c), ["db-0", "db-1", "db-2"]);
    c.advance(5).await;
    let s = c.get(kinds::STATEFUL_SET, "default", "db").await;
    assert_eq!(s["status"]["readyReplicas"], 3);
    assert_eq!(
        s["status"]["currentRevision"],
        s["status"]["updateRevision"]
    );
    let p = c.get(kinds::POD, "default", "db-1").await;
    assert_eq!(p["spec"]["hostname"], "db-1");
    assert_eq!(p["spec"]["subdomain"], "db");
    assert_eq!(
        p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "data-db-1"
    );
    assert_eq!(c.client.count(kinds::PVC), 3);
    // Each claim got the default class and a volume provisioned on db's Node.
    let pvc = c.get(kinds::PVC, "default", "data-db-1").await;
    assert_eq!(pvc["status"]["phase"], "Bound");
    assert_eq!(pvc["spec"]["storageClassName"], "fast");
    assert_eq!(
        pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        "node-a"
    );
    assert_eq!(c.client.count(kinds::PV), 3);

    // A new image with partition 1: db-2, then db-1, never db-0.
    let mut s = s.clone();
    s["spec"]["template"]["spec"]["containers"][0]["image"] = json!("pg:2");
    s["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}});
    c.client.update(kinds::STATEFUL_SET, s).await.unwrap();
    c.settle().await;
    let image = |n: &str| {
        c.client
            .all(kinds::POD)
            .iter()
            .find(|p| obj::name(p) == n)
            .map(|p| {
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
    };
    assert_eq!(image("db-2").as_deref(), Some("pg:2"));
    assert_eq!(image("db-1").as_deref(), Some("pg:1"));
    c.advance(5).await;
    assert_eq!(image("db-1").as_deref(), Some("pg:2"));
    c.advance(5).await;
    c.advance(5).await;
    assert_eq!(image("db-0").as_deref(), Some("pg:1"));
    let s = c.get(kinds::STATEFUL_SET, "default", "db").await;
    assert_eq!(s["status"]["updatedReplicas"], 2);
    assert_ne!(
        s["status"]["currentRevision"],
        s["status"]["updateRevision"]
    );

    // Scale down: highest ordinals go; claims stay (Retain).
    let mut s = s.clone();
    s["spec"]["replicas"] = json!(1);
    c.client.update(kinds::STATEFUL_SET, s).await.unwrap();
    c.settle().await;
    assert_eq!(names(&c), ["db-0"]);
    assert_eq!(c.client.count(kinds::PVC), 3);
}

#[tokio::test]
async fn daemonset_follows_eligible_nodes() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({"role": "worker"}), json!([]))
        .await;
    c.node("node-b", "8", json!({"role": "worker"}), json!([]))
        .await;
    c.node("node-c", "8", json!({"role": "infra"}), json!([]))
        .await;
    c.node(
        "node-d",
        "8",
        json!({"role": "worker"}),
        json!([{"key": "gpu", "value": "1", "effect": "NoSchedule"}]),
    )
    .await;
    c.create(
        kinds::DAEMON_SET,
        json!({"metadata": {"name": "agent", "namespace": "kube-system"},
               "spec": {"selector": {"matchLabels": {"app": "agent"}},
                        "template": {"metadata": {"labels": {"app": "agent"}},
                                     "spec": {"nodeSelector": {"role": "worker"}, "containers": [{"name": "c", "image": "agent:1"}]}}}}),
    )
    .await;
    let mut placed: Vec<String> = c
        .pods()
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or("").to_owned())
        .collect();
    placed.sort();
    assert_eq!(placed, ["node-a", "node-b"]);
    let ds = c.get(kinds::DAEMON_SET, "kube-system", "agent").await;
    assert_eq!(ds["status"]["desiredNumberScheduled"], 2);
    assert_eq!(ds["status"]["numberReady"], 2);
    c.node("node-e", "8", json!({"role": "worker"}), json!([]))
        .await;
    assert_eq!(c.pods().len(), 3);
    c.client
        .delete(kinds::NODE, "", "node-a", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.pods().len(), 2);
    assert_eq!(
        c.get(kinds::DAEMON_SET, "kube-system", "agent").await["status"]["desiredNumberScheduled"],
        2
    );
}

#[tokio::test]
async fn service_endpoints_track_ready_pods() {
    let c = Cluster::new(Duration::from_secs(5)).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    let mut d = deployment("web", 3, "nginx", json!({}));
    d["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"name": "http", "containerPort": 8080}]);
    c.create(kinds::DEPLOYMENT, d).await;
    c.create(
        kinds::SERVICE,
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    )
    .await;
    // No Pod has an IP yet: one empty slice.
    let slices = c.client.all(kinds::ENDPOINT_SLICE);
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0]["endpoints"], json!([]));
    assert_eq!(obj::labels(&slices[0])["kubernetes.io/service-name"], "web");
    c.advance(5).await;
    let slices = c.client.all(kinds::ENDPOINT_SLICE);
    let eps = slices[0]["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    assert!(
        eps.iter()
            .all(|e| e["conditions"]["ready"] == true && e["nodeName"] == "node-a")
    );
    assert_eq!(slices[0]["ports"][0]["port"], 8080);
    let ep = c.get(kinds::ENDPOINTS, "default", "web").await;
    assert_eq!(
        ep["subsets"][0]["addresses"].as_array().map(Vec::len),
        Some(3)
    );
    c.client
        .delete(kinds::SERVICE, "default", "web", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.client.count(kinds::ENDPOINT_SLICE), 0);
    assert_eq!(c.client.count(kinds::ENDPOINTS), 0);
}

/// On the system clock with default settings a Deployment becomes Available by
/// itself (the timeout only guards against a hang; speed is benchmarked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_becomes_available_on_the_system_clock() {
    let clock = kemu_shared::SystemClock::shared();
    let client = MemClient::new(clock.clone());
    let _controllers = Controllers::start(client.clone(), clock, ControllerConfig::default());
    client
        .create(
            kinds::NODE,
            json!({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .await
        .unwrap();
    let mut watch = client.watch(kinds::DEPLOYMENT).await.unwrap();
    client
        .create(kinds::DEPLOYMENT, deployment("web", 3, "nginx", json!({})))
        .await
        .unwrap();
    let available = async {
        while let Some(ev) = watch.recv().await {
            if obj::condition_true(&ev.object, "Available")
                && ev.object["status"]["availableReplicas"] == 3
            {
                return true;
            }
        }
        false
    };
    let done = tokio::time::timeout(Duration::from_secs(60), available).await;
    assert_eq!(done, Ok(true));
}

#[tokio::test]
async fn nodes_renew_leases_and_report_heartbeats_on_the_clock() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    let lease = c.get(kinds::LEASE, "kube-node-lease", "node-a").await;
    assert_eq!(lease["spec"]["holderIdentity"], "node-a");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_owned();
    let node = c.get(kinds::NODE, "", "node-a").await;
    let hb = obj::condition(&node, "Ready").unwrap()["lastHeartbeatTime"].clone();
    assert!(hb.is_string(), "{node}");

    c.advance(10).await;
    let renewed = c.get(kinds::LEASE, "kube-node-lease", "node-a").await;
    assert_ne!(renewed["spec"]["renewTime"].as_str().unwrap(), first);
    // The status heartbeat waits for the report frequency.
    let node = c.get(kinds::NODE, "", "node-a").await;
    assert_eq!(
        obj::condition(&node, "Ready").unwrap()["lastHeartbeatTime"],
        hb
    );
    c.advance(300).await;
    let node = c.get(kinds::NODE, "", "node-a").await;
    assert_ne!(
        obj::condition(&node, "Ready").unwrap()["lastHeartbeatTime"],
        hb
    );

    // The first Pod on a Node pulls its image; the next finds it present.
    for name in ["p1", "p2"] {
        c.create(
            kinds::POD,
            json!({"metadata": {"name": name, "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}),
        )
        .await;
    }
    assert_eq!(c.events("Pulling"), ["Pulling image \"nginx:1.27\""]);
    let pulled = c.events("Pulled");
    assert_eq!(pulled.len(), 2);
    assert!(
        pulled
            .iter()
            .any(|m| m.contains("already present on machine")),
        "{pulled:?}"
    );

    c.client
        .delete(kinds::NODE, "", "node-a", DeleteOptions::default())
        .await
        .unwrap();
    c.settle().await;
    assert!(
        c.client
            .get(kinds::LEASE, "kube-node-lease", "node-a")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn resource_quota_status_follows_the_namespace() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("n1", "8", json!({}), json!([])).await;
    c.create(
        kinds::RESOURCE_QUOTA,
        json!({"metadata": {"name": "q", "namespace": "default"},
               "spec": {"hard": {"pods": "10", "requests.cpu": "2", "count/deployments.apps": "5"}}}),
    )
    .await;
    let used = |q: &Value| q["status"]["used"].clone();
    let q = c.get(kinds::RESOURCE_QUOTA, "default", "q").await;
    assert_eq!(q["status"]["hard"], q["spec"]["hard"]);
    assert_eq!(
        used(&q),
        json!({"pods": "0", "requests.cpu": "0", "count/deployments.apps": "0"})
    );
    // Objects the controllers create are not admitted: the resync counts them.
    c.create(kinds::DEPLOYMENT, deployment("web", 3, "nginx", json!({})))
        .await;
    c.advance(10).await;
    let q = c.get(kinds::RESOURCE_QUOTA, "default", "q").await;
    assert_eq!(
        used(&q),
        json!({"pods": "3", "requests.cpu": "0", "count/deployments.apps": "1"})
    );
    // Deletions are recounted at once.
    c.client
        .delete(
            kinds::DEPLOYMENT,
            "default",
            "web",
            DeleteOptions::default(),
        )
        .await
        .unwrap();
    c.settle().await;
    let q = c.get(kinds::RESOURCE_QUOTA, "default", "q").await;
    assert_eq!(
        used(&q),
        json!({"pods": "0", "requests.cpu": "0", "count/deployments.apps": "0"})
    );
}

#[tokio::test]
async fn hpa_scales_a_deployment_from_synthetic_usage_on_the_clock() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "64", json!({}), json!([])).await;
    c.create(
        kinds::DEPLOYMENT,
        json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx",
                        "resources": {"requests": {"cpu": "100m"}}}]}}}}),
    )
    .await;
    c.create(
        kinds::HPA,
        json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}]}}),
    )
    .await;
    // Default usage is half the request: on target, nothing changes.
    let h = c.get(kinds::HPA, "default", "web").await;
    assert_eq!(h["status"]["desiredReplicas"], 2, "{h}");
    assert_eq!(
        h["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
        50
    );
    assert!(obj::condition_true(&h, "ScalingActive"), "{h}");

    // The workload now uses all it requests: 2 × 100 / 50 = 4 at the next sync.
    let mut d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    obj::set_annotation(&mut d, "kemu.dev/cpu-usage", "100%");
    c.client.update(kinds::DEPLOYMENT, d).await.unwrap();
    c.settle().await;
    c.advance(15).await;
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(
        c.events("SuccessfulRescale"),
        ["New size: 4; reason: cpu resource utilization (percentage of request) above target"]
    );
    c.advance(15).await;
    // Still 100 %: doubling again is within the scale-up policy.
    assert_eq!(
        c.get(kinds::DEPLOYMENT, "default", "web").await["spec"]["replicas"],
        8
    );

    // Load drops: the scale-down waits for the stabilization window.
    let mut d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    obj::set_annotation(&mut d, "kemu.dev/cpu-usage", "10%");
    c.client.update(kinds::DEPLOYMENT, d).await.unwrap();
    c.settle().await;
    c.advance(15).await;
    assert_eq!(
        c.get(kinds::DEPLOYMENT, "default", "web").await["spec"]["replicas"],
        8
    );
    let h = c.get(kinds::HPA, "default", "web").await;
    assert_eq!(
        obj::condition(&h, "AbleToScale").unwrap()["reason"],
        "ScaleDownStabilized"
    );
    for _ in 0..21 {
        c.advance(15).await;
    }
    let d = c.get(kinds::DEPLOYMENT, "default", "web").await;
    assert_eq!(d["spec"]["replicas"], 2, "8 × 10 / 50 = 1.6 → 2");
}

#[tokio::test]
async fn replica_sets_create_in_bursts_until_all_pods_exist() {
    let c = Cluster::new(Duration::ZERO).await;
    for i in 0..12 {
        c.node(&format!("node-{i:02}"), "64", json!({}), json!([]))
            .await;
    }
    let n = 2 * super::replicaset::BURST_REPLICAS + 200;
    c.create(kinds::DEPLOYMENT, deployment("big", n, "nginx", json!({})))
        .await;
    assert_eq!(c.pods().len() as i64, n);
    let rs = c.rs_named("nginx");
    let rs = rs.as_ref().unwrap();
    assert_eq!(rs["status"]["replicas"], n);
    assert_eq!(rs["status"]["readyReplicas"], n);
}

#[tokio::test]
async fn events_expire_an_hour_after_they_were_last_recorded() {
    let c = Cluster::new(Duration::ZERO).await;
    c.node("node-a", "8", json!({}), json!([])).await;
    c.create(
        kinds::DEPLOYMENT,
        deployment("web", 2, "nginx:1", json!({"type": "Recreate"})),
    )
    .await;
    let names = |c: &Cluster| -> Vec<String> {
        c.client
            .all(kinds::EVENT)
            .iter()
            .map(|e| obj::name(e).to_owned())
            .collect()
    };
    let recorded = names(&c);
    assert!(
        !c.events("Scheduled").is_empty() && !c.events("ScalingReplicaSet").is_empty(),
        "{recorded:?}"
    );
    c.advance(3599).await;
    let kept = names(&c);
    assert!(
        recorded.iter().all(|n| kept.contains(n)),
        "kept for the hour"
    );
    c.advance(2).await;
    let left = names(&c);
    assert!(
        recorded.iter().all(|n| !left.contains(n)),
        "expired after the hour: {left:?}"
    );
}

fn replica_set(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

async fn scale_rs(c: &Cluster, name: &str, replicas: i64) {
    let mut rs = c.get(kinds::REPLICA_SET, "default", name).await;
    rs["spec"]["replicas"] = json!(replicas);
    c.client.update(kinds::REPLICA_SET, rs).await.unwrap();
    c.settle().await;
}

#[tokio::test]
async fn scale_down_deletes_pods_in_upstreams_order_from_the_tally() {
    let c = Cluster::new(Duration::from_secs(5)).await;
    c.node("node-a", "64", json!({}), json!([])).await;
    c.create(kinds::REPLICA_SET, replica_set("web", 3)).await;
    c.advance(5).await;
    let ready: Vec<String> = c.pods().iter().map(|p| obj::name(p).to_owned()).collect();
    assert_eq!(ready.len(), 3);
    // Two more, still starting: they go first, the newest Ready ones next.
    scale_rs(&c, "web", 5).await;
    let starting: Vec<String> = c
        .pods()
        .iter()
        .map(|p| obj::name(p).to_owned())
        .filter(|n| !ready.contains(n))
        .collect();
    assert_eq!(starting.len(), 2);
    scale_rs(&c, "web", 3).await;
    let mut left: Vec<String> = c.pods().iter().map(|p| obj::name(p).to_owned()).collect();
    left.sort();
    let mut want = ready.clone();
    want.sort();
    assert_eq!(left, want, "the Pods not yet Ready were deleted");
    c.advance(5).await;
    let rs = c.get(kinds::REPLICA_SET, "default", "web").await;
    assert_eq!(rs["status"]["availableReplicas"], 3);
}

#[tokio::test]
async fn a_large_scale_down_leaves_no_pod_and_no_informer_entry() {
    const PODS: i64 = 10_000;
    let c = Cluster::new(Duration::ZERO).await;
    for n in 0..100 {
        c.node(&format!("node-{n:03}"), "1000", json!({}), json!([]))
            .await;
    }
    c.create(kinds::REPLICA_SET, replica_set("big", PODS)).await;
    c.advance(1).await;
    let rs = c.get(kinds::REPLICA_SET, "default", "big").await;
    assert_eq!(rs["status"]["readyReplicas"], PODS);
    scale_rs(&c, "big", 0).await;
    c.advance(1).await;
    let rs = c.get(kinds::REPLICA_SET, "default", "big").await;
    assert_eq!(rs["status"]["replicas"], 0);
    assert!(c.pods().is_empty(), "{} Pods left", c.pods().len());
    let pods = c.controllers.runtime().informer(kinds::POD);
    assert_eq!(pods.len(), 0, "the Pod informer forgot them");
    assert!(pods.owned_by(obj::uid(&rs)).is_empty());
}
