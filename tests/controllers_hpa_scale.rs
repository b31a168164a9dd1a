//! A HorizontalPodAutoscaler scales any `/scale` target, driven by real
//! kubectl on the fake clock: a custom resource whose CRD declares
//! `subresources.scale`, its Pods found through the scale's
//! `status.selector`, as upstream's controller finds them.

mod common;

use std::time::Duration;

use common::{KubectlCluster, eks_spec_with_pool, ok};
use kemu::shared::SystemClock;
use kemu::{Clock, FakeClock, Kemu};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pools, singular: pool, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
"#;

const POOLS: &str = r#"
apiVersion: example.com/v1
kind: Pool
metadata: {name: web}
spec: {replicas: 2}
---
apiVersion: example.com/v1
kind: Pool
metadata: {name: bare}
spec: {replicas: 1}
"#;

fn pod(name: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: pool}}}}
spec:
  containers:
  - name: c
    image: nginx:1.27
    resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}
"#
    )
}

fn hpa(name: &str) -> String {
    format!(
        r#"
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: example.com/v1, kind: Pool, name: {name}}}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 50}}}}
"#
    )
}

#[test]
fn hpa_scales_a_custom_resource_through_its_scale_subresource() {
    // kubectl checks certificates against wall time: the fake clock starts there.
    let clock = FakeClock::new(SystemClock.now());
    let c = KubectlCluster::with_kemu(
        Kemu::builder().clock(clock.clone()).build().unwrap(),
        eks_spec_with_pool("scale", 2, "m5.xlarge"),
    );
    let sandbox = &c.sandbox;
    let k = |args: &[&str]| c.run(args);
    let file = |name: &str, body: &str| {
        let p = sandbox.path(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    };

    ok(k(&["apply", "-f", &file("crd.yaml", CRD)]));
    ok(k(&[
        "wait",
        "--for=condition=Established",
        "crd/pools.example.com",
        "--timeout=60s",
    ]));
    ok(k(&["apply", "-f", &file("pools.yaml", POOLS)]));
    // The workload's own controller would report these; here kubectl does.
    ok(k(&[
        "patch",
        "pool",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"selector":"app=pool"}}"#,
    ]));
    for name in ["pool-a", "pool-b"] {
        ok(k(&[
            "apply",
            "-f",
            &file(&format!("{name}.yaml"), &pod(name)),
        ]));
    }
    ok(k(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=pool",
        "--timeout=60s",
    ]));
    let scale = ok(k(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/pools/web/scale",
    ]));
    assert!(scale.contains(r#""selector":"app=pool""#), "{scale}");

    ok(k(&["apply", "-f", &file("hpa-web.yaml", &hpa("web"))]));
    ok(k(&["apply", "-f", &file("hpa-bare.yaml", &hpa("bare"))]));
    // 50 % of the request used, 50 % wanted: nothing to do.
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.desiredReplicas}=2",
        "hpa/web",
        "--timeout=60s",
    ]));
    let status = ok(k(&["get", "hpa", "web", "-o", "jsonpath={.status}"]));
    assert!(status.contains(r#""currentReplicas":2"#), "{status}");
    assert!(status.contains("ValidMetricFound"), "{status}");

    // Load doubles; at the next sync period the HPA doubles the Pool.
    ok(k(&[
        "annotate",
        "pod",
        "-l",
        "app=pool",
        "kemu.dev/cpu-usage=100%",
    ]));
    clock.advance(Duration::from_secs(15));
    ok(k(&[
        "wait",
        "--for=jsonpath={.spec.replicas}=4",
        "pool/web",
        "--timeout=60s",
    ]));
    let scale = ok(k(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/pools/web/scale",
    ]));
    assert!(scale.contains(r#""spec":{"replicas":4}"#), "{scale}");
    let described = ok(k(&["describe", "hpa", "web"]));
    assert!(described.contains("SuccessfulRescale"), "{described}");
    assert!(
        described.contains(
            "New size: 4; reason: cpu resource utilization (percentage of request) above target"
        ),
        "{described}"
    );
    assert!(described.contains("Pool/web"), "{described}");

    // A scale without a selector: upstream's InvalidSelector, nothing scaled.
    ok(k(&[
        "wait",
        "--for=jsonpath={.status.conditions[?(@.type==\"ScalingActive\")].reason}=InvalidSelector",
        "hpa/bare",
        "--timeout=60s",
    ]));
    let described = ok(k(&["describe", "hpa", "bare"]));
    assert!(
        described.contains("the HPA target's scale is missing a selector"),
        "{described}"
    );
    assert!(described.contains("SelectorRequired"), "{described}");
    assert_eq!(
        ok(k(&[
            "get",
            "pool",
            "bare",
            "-o",
            "jsonpath={.spec.replicas}"
        ])),
        "1"
    );

    // Targets without a `/scale`, or of no served kind: FailedGetScale.
    let bad = r#"
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: role}
spec:
  scaleTargetRef: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, name: reader}
  maxReplicas: 3
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: ghost}
spec:
  scaleTargetRef: {apiVersion: example.com/v1, kind: Ghost, name: g}
  maxReplicas: 3
"#;
    ok(k(&["apply", "-f", &file("bad-hpa.yaml", bad)]));
    for (hpa, message) in [
        (
            "role",
            "the HPA controller was unable to get the target's current scale: the server could not find the requested resource",
        ),
        (
            "ghost",
            "the HPA controller was unable to get the target's current scale: no matches for kind \"Ghost\" in group \"example.com\"",
        ),
    ] {
        ok(k(&[
            "wait",
            "--for=jsonpath={.status.conditions[?(@.type==\"AbleToScale\")].reason}=FailedGetScale",
            &format!("hpa/{hpa}"),
            "--timeout=60s",
        ]));
        let described = ok(k(&["describe", "hpa", hpa]));
        assert!(described.contains(message), "{described}");
    }
}
