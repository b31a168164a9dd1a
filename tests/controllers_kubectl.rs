//! Workloads settle as on a healthy cluster: real kubectl drives Deployments
//! (rollout status, set image, undo, scale), Jobs and pods placed on the node
//! pool's Nodes, with the controllers running on the store.

mod common;

use common::{KubectlCluster, eks_spec_with_pool, ok};

#[test]
fn deployments_roll_out_on_the_pool_nodes() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 3, "m5.large"));
    let k = |args: &[&str]| c.run(args);

    ok(k(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ]));
    let out = ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    assert!(out.contains("successfully rolled out"), "{out}");

    // Three Running pods, each on one of the pool's Nodes.
    let pods: serde_json::Value =
        serde_json::from_str(&ok(k(&["get", "pods", "-l", "app=web", "-o", "json"]))).unwrap();
    let items = pods["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let pool: serde_json::Value = serde_json::from_str(&ok(k(&[
        "get",
        "nodes",
        "-l",
        "eks.amazonaws.com/nodegroup=ng",
        "-o",
        "json",
    ])))
    .unwrap();
    let pool: Vec<&str> = pool["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(pool.len(), 3, "{pool:?}");
    for p in items {
        assert_eq!(p["status"]["phase"], "Running", "{p}");
        let node = p["spec"]["nodeName"].as_str().unwrap();
        assert!(pool.contains(&node), "{node} not in {pool:?}");
        // The defaults and admission a real apiserver gives every Pod.
        let spec = &p["spec"];
        for (field, want) in [
            ("restartPolicy", serde_json::json!("Always")),
            ("dnsPolicy", serde_json::json!("ClusterFirst")),
            ("schedulerName", serde_json::json!("default-scheduler")),
            ("terminationGracePeriodSeconds", serde_json::json!(30)),
            ("enableServiceLinks", serde_json::json!(true)),
            ("priority", serde_json::json!(0)),
            ("securityContext", serde_json::json!({})),
        ] {
            assert_eq!(spec[field], want, "{field}: {spec}");
        }
        assert_eq!(spec["serviceAccountName"], "default");
        let token_volume = spec["volumes"][0]["name"].as_str().unwrap_or_default();
        assert!(token_volume.starts_with("kube-api-access-"), "{spec}");
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["mountPath"],
            "/var/run/secrets/kubernetes.io/serviceaccount"
        );
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            spec["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        let tolerated: Vec<&str> = spec["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["tolerationSeconds"] == 300)
            .filter_map(|t| t["key"].as_str())
            .collect();
        assert_eq!(
            tolerated,
            [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable"
            ]
        );
    }
    let template = ok(k(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.restartPolicy} {.spec.template.spec.containers[0].imagePullPolicy}",
    ]));
    assert_eq!(template, "Always IfNotPresent");
    ok(k(&["run", "bare", "--image=busybox", "--restart=Never"]));
    let bare = ok(k(&[
        "get",
        "pod",
        "bare",
        "-o",
        "jsonpath={.spec.restartPolicy} {.spec.containers[0].imagePullPolicy} {.spec.serviceAccountName}",
    ]));
    assert_eq!(bare, "Never Always default");

    // A new image rolls out as revision 2; undo brings back the first template.
    ok(k(&["set", "image", "deployment/web", "nginx=nginx:1.28"]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    let history = ok(k(&["rollout", "history", "deployment/web"]));
    assert!(history.contains('1') && history.contains('2'), "{history}");
    ok(k(&["rollout", "undo", "deployment/web"]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    let image = ok(k(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]));
    assert_eq!(image, "nginx:1.27");

    ok(k(&["scale", "deployment/web", "--replicas=5"]));
    // Available holds once no more than maxUnavailable (25%) are missing; the
    // rollout status waits for all five.
    ok(k(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=60s",
    ]));
    ok(k(&["rollout", "status", "deployment/web", "--timeout=60s"]));
    let ready = ok(k(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]));
    assert_eq!(ready, "5");
}

#[test]
fn jobs_complete() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 1, "m5.large"));
    let k = |args: &[&str]| c.run(args);
    ok(k(&["create", "job", "once", "--image=busybox"]));
    ok(k(&[
        "wait",
        "--for=condition=complete",
        "job/once",
        "--timeout=60s",
    ]));
    let succeeded = ok(k(&[
        "get",
        "job",
        "once",
        "-o",
        "jsonpath={.status.succeeded}",
    ]));
    assert_eq!(succeeded, "1");
}

/// Waits (bounded) until the store's Pod `name` in `default` satisfies
/// `done`: a change no kubectl condition can wait for (a field removed).
fn wait_for_pod(
    c: &common::KubectlCluster,
    name: &str,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) {
    let dataplane = c.kemu.dataplane().expect("data plane");
    let key = kemu_dataplane::store::ObjectKey::new("pods", "default", name);
    for _ in 0..2000 {
        let store = dataplane.engine().store(&c.record.id);
        if store.and_then(|s| s.get(&key)).is_some_and(|p| done(&p)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("pod {name} never came {what}");
}

/// The names of the Pods `selector` picks, sorted.
fn pod_names(c: &common::KubectlCluster, selector: &str) -> Vec<String> {
    let mut names: Vec<String> = c
        .items(&["get", "pods", "-l", selector])
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn replication_controllers_keep_their_pods_adopt_orphans_and_release_relabeled_ones() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 2, "m5.large"));
    // An orphan the RC's selector matches, made before the RC.
    c.ok(&[
        "run",
        "orphan",
        "--image=httpd",
        "--labels=app=rc-web",
        "--restart=Always",
    ]);
    let rc = c.file(
        "rc.yaml",
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector:\n    app: rc-web\n  template:\n    metadata:\n      labels:\n        app: rc-web\n    spec:\n      containers:\n      - name: httpd\n        image: httpd\n",
    );
    c.ok(&["apply", "-f", &rc]);
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.readyReplicas}=3",
        "rc/web",
        "--timeout=60s",
    ]);
    // The orphan counts as one of the three: two Pods made, one adopted.
    let pods = pod_names(&c, "app=rc-web");
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(pods.contains(&"orphan".to_owned()), "{pods:?}");
    let owner = c.ok(&[
        "get",
        "pod",
        "orphan",
        "-o",
        "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}",
    ]);
    assert_eq!(owner, "ReplicationController/web/true");
    let status = c.ok(&[
        "get",
        "rc",
        "web",
        "-o",
        "jsonpath={.status.replicas} {.status.fullyLabeledReplicas} {.status.availableReplicas} {.status.observedGeneration}",
    ]);
    assert_eq!(status, "3 3 3 1");

    // A Pod relabeled out of the selector is released, and replaced.
    c.ok(&["label", "pod", "orphan", "app=elsewhere", "--overwrite"]);
    wait_for_pod(&c, "orphan", "to be released", |p| {
        p["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(|refs| refs.is_empty())
    });
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.readyReplicas}=3",
        "rc/web",
        "--timeout=60s",
    ]);
    let pods = pod_names(&c, "app=rc-web");
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(!pods.contains(&"orphan".to_owned()), "{pods:?}");

    // The scale subresource reports the map selector as a string.
    let scale: serde_json::Value = serde_json::from_str(&c.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/replicationcontrollers/web/scale",
    ]))
    .unwrap();
    assert_eq!(scale["status"]["selector"], "app=rc-web", "{scale}");
    c.ok(&["scale", "rc/web", "--replicas=1"]);
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.replicas}=1",
        "rc/web",
        "--timeout=60s",
    ]);
}

#[test]
fn daemonsets_and_statefulsets_keep_controller_revisions() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 2, "m5.large"));
    let ds = c.file(
        "ds.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels:\n      app: agent\n  template:\n    metadata:\n      labels:\n        app: agent\n    spec:\n      containers:\n      - name: agent\n        image: agent:1\n",
    );
    c.ok(&["apply", "-f", &ds]);
    c.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    let revisions = c.items(&["get", "controllerrevisions", "-l", "app=agent"]);
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    let first = &revisions[0];
    assert_eq!(first["revision"], 1);
    assert_eq!(first["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    assert_eq!(first["data"]["spec"]["template"]["$patch"], "replace");
    let hash = first["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap();
    assert_eq!(first["metadata"]["name"], format!("agent-{hash}"));

    // A new image is revision 2; undo makes the first template revision 3.
    c.ok(&["set", "image", "ds/agent", "agent=agent:2"]);
    c.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    let history = c.ok(&["rollout", "history", "ds/agent"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");
    c.ok(&["rollout", "undo", "ds/agent"]);
    c.ok(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    let image = c.ok(&[
        "get",
        "ds",
        "agent",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(image, "agent:1");
    let mut numbers: Vec<i64> = c
        .items(&["get", "controllerrevisions", "-l", "app=agent"])
        .iter()
        .map(|r| r["revision"].as_i64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, [2, 3]);

    // A StatefulSet Pod below the partition comes back at the current
    // revision's template, not the update's.
    let sts = c.file(
        "sts.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 3\n  serviceName: db\n  selector:\n    matchLabels:\n      app: db\n  updateStrategy:\n    rollingUpdate:\n      partition: 2\n  template:\n    metadata:\n      labels:\n        app: db\n    spec:\n      containers:\n      - name: db\n        image: db:1\n",
    );
    c.ok(&["apply", "-f", &sts]);
    c.ok(&["rollout", "status", "sts/db", "--timeout=60s"]);
    c.ok(&["set", "image", "sts/db", "db=db:2"]);
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.updatedReplicas}=1",
        "sts/db",
        "--timeout=60s",
    ]);
    let image_of = |pod: &str| {
        c.ok(&[
            "get",
            "pod",
            pod,
            "-o",
            "jsonpath={.spec.containers[0].image}",
        ])
    };
    assert_eq!(image_of("db-2"), "db:2");
    let uid = c.ok(&["get", "pod", "db-0", "-o", "jsonpath={.metadata.uid}"]);
    // Not `--wait`: kubectl's wait lists by name after its GET, and a Pod
    // deleted and re-created between the two is waited for forever.
    c.ok(&["delete", "pod", "db-0", "--wait=false"]);
    wait_for_pod(&c, "db-0", "back as a new Pod", |p| {
        p["metadata"]["uid"] != uid.as_str() && p["status"]["phase"] == "Running"
    });
    assert_eq!(image_of("db-0"), "db:1");
    let revisions = c.items(&["get", "controllerrevisions", "-l", "app=db"]);
    assert_eq!(revisions.len(), 2, "{revisions:?}");
    assert!(
        revisions
            .iter()
            .all(|r| r["metadata"]["labels"]["controller.kubernetes.io/hash"].is_string()),
        "{revisions:?}"
    );
}

#[test]
fn jobs_adopt_matching_orphans_and_release_relabeled_pods() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 2, "m5.large"));
    let job = c.file(
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: long\nspec:\n  parallelism: 2\n  completions: 4\n  template:\n    metadata:\n      labels:\n        app: long\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n        command: [sleep, \"3600\"]\n",
    );
    c.ok(&["apply", "-f", &job]);
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.ready}=2",
        "job/long",
        "--timeout=60s",
    ]);
    let pods = pod_names(&c, "app=long");
    assert_eq!(pods.len(), 2, "{pods:?}");

    // Orphaned (its controller reference removed), a Pod is adopted again.
    let first = pods[0].clone();
    c.ok(&[
        "patch",
        "pod",
        &first,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
    ]);
    wait_for_pod(&c, &first, "adopted", |p| {
        p["metadata"]["ownerReferences"][0]["kind"] == "Job"
            && p["metadata"]["ownerReferences"][0]["controller"] == true
    });
    assert_eq!(pod_names(&c, "app=long").len(), 2);

    // Relabeled out of the Job's selector, it is released and replaced.
    let uid_label = c.ok(&[
        "get",
        "job",
        "long",
        "-o",
        "jsonpath={.spec.selector.matchLabels.batch\\.kubernetes\\.io/controller-uid}",
    ]);
    assert!(!uid_label.is_empty());
    c.ok(&[
        "label",
        "pod",
        &first,
        "batch.kubernetes.io/controller-uid=someone-else",
        "--overwrite",
    ]);
    wait_for_pod(&c, &first, "released", |p| {
        p["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(|refs| refs.iter().all(|r| r["kind"] != "Job"))
    });
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.active}=2",
        "job/long",
        "--timeout=60s",
    ]);
    let selector = format!("batch.kubernetes.io/controller-uid={uid_label}");
    let pods = pod_names(&c, &selector);
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert!(!pods.contains(&first), "{pods:?}");
}

#[test]
fn scheduling_gates_hold_pods_until_removed() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 1, "m5.large"));
    let pod = c.file(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\nspec:\n  schedulingGates:\n  - name: example.com/quota\n  containers:\n  - name: c\n    image: nginx\n",
    );
    c.ok(&["create", "-f", &pod]);
    let condition = c.ok(&[
        "get",
        "pod",
        "gated",
        "-o",
        "jsonpath={.status.conditions[0].type}/{.status.conditions[0].status}/{.status.conditions[0].reason}",
    ]);
    assert_eq!(condition, "PodScheduled/False/SchedulingGated");
    let shown = c.ok(&["get", "pod", "gated", "--no-headers"]);
    assert!(shown.contains("SchedulingGated"), "{shown}");
    assert_eq!(
        c.ok(&["get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}"]),
        ""
    );
    c.ok(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/schedulingGates"}]"#,
    ]);
    c.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/gated",
        "--timeout=60s",
    ]);
    assert!(
        !c.ok(&["get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}"])
            .is_empty()
    );
}

#[test]
fn pod_failure_policy_fails_the_job_and_per_index_limits_fail_indexes() {
    let c = KubectlCluster::new(eks_spec_with_pool("work", 1, "m5.large"));
    // A FailJob rule on the exit code: the first failure ends the Job.
    let job = c.file(
        "fail-job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: policy\nspec:\n  backoffLimit: 6\n  podFailurePolicy:\n    rules:\n    - action: Ignore\n      onPodConditions:\n      - type: DisruptionTarget\n    - action: FailJob\n      onExitCodes:\n        containerName: main\n        operator: In\n        values: [42]\n  template:\n    metadata:\n      labels:\n        app: policy\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [sh, -c, \"exit 42\"]\n",
    );
    c.ok(&["apply", "-f", &job]);
    c.ok(&[
        "wait",
        "--for=condition=Failed",
        "job/policy",
        "--timeout=60s",
    ]);
    let job = c.json(&["get", "job", "policy", "-o", "json"]);
    // The decoder's default for a pattern's status, as upstream's.
    assert_eq!(
        job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    let failed = job["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "Failed")
        .expect("Failed condition")
        .clone();
    let pods = pod_names(&c, "app=policy");
    assert_eq!(pods.len(), 1, "one Pod, not replaced: {pods:?}");
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert_eq!(
        failed["message"],
        format!(
            "Container main for pod default/{} failed with exit code 42 matching FailJob rule at index 1",
            pods[0]
        )
    );
    assert_eq!(job["status"]["failed"], 1);

    // backoffLimitPerIndex 0: each index fails on its first failure, the
    // Job once every index has ended.
    let job = c.file(
        "per-index.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: indexed\nspec:\n  completionMode: Indexed\n  completions: 3\n  parallelism: 3\n  backoffLimitPerIndex: 0\n  template:\n    metadata:\n      labels:\n        app: indexed\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [sh, -c, \"exit 1\"]\n",
    );
    c.ok(&["apply", "-f", &job]);
    c.ok(&[
        "wait",
        "--for=condition=Failed",
        "job/indexed",
        "--timeout=60s",
    ]);
    let job = c.json(&["get", "job", "indexed", "-o", "json"]);
    // With a per-index limit the Job-wide limit defaults to int32's max.
    assert_eq!(job["spec"]["backoffLimit"], 2147483647);
    assert_eq!(job["status"]["failedIndexes"], "0-2");
    assert_eq!(job["status"]["failed"], 3);
    let reason = job["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "Failed")
        .map(|c| c["reason"].clone());
    assert_eq!(reason, Some(serde_json::json!("FailedIndexes")));
    let pods = c.items(&["get", "pods", "-l", "app=indexed"]);
    assert_eq!(pods.len(), 3, "no index retried");
    for p in &pods {
        let annotations = &p["metadata"]["annotations"];
        assert_eq!(
            annotations["batch.kubernetes.io/job-index-failure-count"],
            "0"
        );
        let env = &p["spec"]["containers"][0]["env"][0];
        assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
        assert_eq!(
            env["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.labels['batch.kubernetes.io/job-completion-index']"
        );
    }
}

/// Shell scripts the kubelet runs to learn each run's exit code and length
/// (the e2e suite's `failOddSucceedEven` and `failOnce` fixtures), on a fake
/// clock that the test advances.
#[test]
fn container_scripts_decide_how_their_runs_end() {
    let clock = kemu::shared::FakeClock::at_epoch();
    let kemu = kemu::Kemu::builder().clock(clock.clone()).build().unwrap();
    let c = KubectlCluster::with_kemu(kemu, eks_spec_with_pool("scripts", 1, "m5.large"));
    let objects = c.file(
        "scripts.yaml",
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: odd}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  backoffLimitPerIndex: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: [sh, -c]
        args:
        - |
          if [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then
            exit 1
          else
            exit 0
          fi
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    metadata: {labels: {app: once}}
    spec:
      restartPolicy: OnFailure
      volumes: [{name: data, emptyDir: {}}]
      containers:
      - name: main
        image: busybox
        volumeMounts: [{name: data, mountPath: /data}]
        command: [/bin/sh, -c]
        args:
        - |
          if [[ -r /data/foo ]]
          then
            exit 0
          else
            touch /data/foo
            exit 1
          fi
"#,
    );
    c.ok(&["apply", "-f", &objects]);
    c.ok(&["wait", "--for=condition=Failed", "job/odd", "--timeout=60s"]);
    let job = c.json(&["get", "job", "odd", "-o", "json"]);
    assert_eq!(job["status"]["failedIndexes"], "1,3");
    assert_eq!(job["status"]["completedIndexes"], "0,2");

    // The first run fails and leaves its marker; the restart, after the
    // kubelet's 10 s back-off, finds it and succeeds.
    c.ok(&[
        "wait",
        "--for=condition=Ready=false",
        "-l",
        "app=once",
        "pod",
        "--timeout=60s",
    ]);
    let restarts = || {
        c.ok(&[
            "get",
            "pods",
            "-l",
            "app=once",
            "-o",
            "jsonpath={.items[0].status.containerStatuses[0].restartCount}",
        ])
    };
    assert_eq!(restarts(), "1");
    clock.advance(std::time::Duration::from_secs(11));
    c.ok(&[
        "wait",
        "--for=condition=Complete",
        "job/once",
        "--timeout=60s",
    ]);
    assert_eq!(restarts(), "1");

    // Fifteen seconds of sleeps, then exit 4.
    let pod = c.file(
        "counts.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: counts}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, \"for i in 1 2 3; do sleep 5; done; exit 4\"]\n",
    );
    c.ok(&["apply", "-f", &pod]);
    let phase = || c.ok(&["get", "pod", "counts", "-o", "jsonpath={.status.phase}"]);
    c.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/counts",
        "--timeout=60s",
    ]);
    clock.advance(std::time::Duration::from_secs(14));
    assert_eq!(phase(), "Running");
    clock.advance(std::time::Duration::from_secs(1));
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Failed",
        "pod/counts",
        "--timeout=60s",
    ]);
    let code = c.ok(&[
        "get",
        "pod",
        "counts",
        "-o",
        "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}",
    ]);
    assert_eq!(code, "4");
}
