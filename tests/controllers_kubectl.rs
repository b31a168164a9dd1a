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
