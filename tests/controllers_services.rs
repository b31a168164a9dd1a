//! Services as each cloud's cluster answers them, driven by real kubectl:
//! ClusterIPs from the cloud's service CIDR, NodePorts (conflicts refused as
//! upstream), LoadBalancer ingress in the cloud's shape, and the `kubernetes`
//! Service pointing at the API listener.

mod common;

use common::{Sandbox, ok, text, write_kubeconfig};
use kemu::Kemu;
use kemu::shared::{ClusterSpec, OwnerScope};
use serde_json::Value;

fn spec(scope: OwnerScope) -> ClusterSpec {
    ClusterSpec {
        scope,
        name: "net".into(),
        version: "1.34".into(),
        node_pools: vec![],
        tags: Default::default(),
        provisioning: std::time::Duration::ZERO,
        extra: Value::Null,
    }
}

fn json(out: std::process::Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// Creates Services of every type in a cluster of `scope`; answers the
/// LoadBalancer's ingress and the `kubernetes` ClusterIP.
fn exercise(scope: OwnerScope, cidr_prefix: &str, lb_field: &str) -> Value {
    let kemu = Kemu::builder().build().unwrap();
    let cluster = kemu.registry().create(spec(scope)).unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &cluster, cluster.ca.cert_pem(), kemu.clock().now());
    let k = |args: &[&str]| sandbox.kubectl(&kc, args);

    // The kubernetes Service: the first IP of the range, 443, Endpoints at the listener.
    let svc = json(k(&["get", "svc", "kubernetes", "-o", "json"]));
    let ip = svc["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with(cidr_prefix) && ip.ends_with(".1"), "{ip}");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    let cluster = kemu.registry().get(&cluster.id).unwrap();
    let port = match &cluster.serving {
        kemu::shared::Serving::Live { port, .. } => *port,
        other => panic!("not served: {other:?}"),
    };
    let ep = json(k(&["get", "endpoints", "kubernetes", "-o", "json"]));
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port, "{ep}");
    let table = ok(k(&["get", "svc", "kubernetes"]));
    assert!(table.contains(ip) && table.contains("443/TCP"), "{table}");

    // ClusterIP: `kubectl create` prints what the registry allocated.
    let web = json(k(&[
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80:8080",
        "-o",
        "json",
    ]));
    let web_ip = web["spec"]["clusterIP"].as_str().unwrap();
    assert!(web_ip.starts_with(cidr_prefix) && web_ip != ip, "{web}");
    assert_eq!(web["spec"]["clusterIPs"][0], web_ip);
    assert_eq!(web["spec"]["ports"][0]["targetPort"], 8080);

    // NodePort: a chosen port, then the same port again refused with a 422.
    let np = json(k(&[
        "create",
        "service",
        "nodeport",
        "np",
        "--tcp=80:8080",
        "--node-port=30080",
        "-o",
        "json",
    ]));
    assert_eq!(np["spec"]["ports"][0]["nodePort"], 30080);
    let dup = k(&[
        "create",
        "service",
        "nodeport",
        "np2",
        "--tcp=81:8080",
        "--node-port=30080",
    ]);
    assert!(!dup.status.success());
    let err = String::from_utf8_lossy(&dup.stderr);
    assert!(
        err.contains(
            "Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        ),
        "{err}"
    );
    // An allocated one lands in the dynamic band.
    let np3 = json(k(&[
        "create",
        "service",
        "nodeport",
        "np3",
        "--tcp=82:8080",
        "-o",
        "json",
    ]));
    let p = np3["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&p) && p != 30080, "{p}");
    // A taken ClusterIP is refused too.
    let taken = k(&[
        "create",
        "service",
        "clusterip",
        "again",
        "--tcp=80",
        &format!("--clusterip={web_ip}"),
    ]);
    assert!(!taken.status.success());
    assert!(
        String::from_utf8_lossy(&taken.stderr).contains("provided IP is already allocated"),
        "{}",
        text(&taken)
    );

    // Back to ClusterIP: the held node port is released, the IP kept.
    let np_ip = np["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let patched = json(k(&[
        "patch",
        "svc",
        "np",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
        "-o",
        "json",
    ]));
    assert!(
        patched["spec"]["ports"][0].get("nodePort").is_none(),
        "{patched}"
    );
    assert_eq!(patched["spec"]["clusterIP"], np_ip.as_str());
    ok(k(&[
        "create",
        "service",
        "nodeport",
        "np4",
        "--tcp=83:8080",
        "--node-port=30080",
    ]));

    // LoadBalancer: a node port now, the cloud's ingress from the service controller.
    let lb = json(k(&[
        "create",
        "service",
        "loadbalancer",
        "lb",
        "--tcp=80:8080",
        "-o",
        "json",
    ]));
    assert!(
        lb["spec"]["ports"][0]["nodePort"].as_i64().is_some(),
        "{lb}"
    );
    let wait_for = format!("--for=jsonpath={{.status.loadBalancer.ingress[0].{lb_field}}}");
    ok(k(&["wait", &wait_for, "service/lb", "--timeout=60s"]));
    let lb = json(k(&["get", "svc", "lb", "-o", "json"]));
    let ingress = lb["status"]["loadBalancer"]["ingress"][0].clone();
    let shown = ingress[lb_field].as_str().unwrap().to_owned();
    let table = ok(k(&["get", "svc", "lb"]));
    assert!(table.contains(&shown), "{table}");
    let events = ok(k(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=lb",
    ]));
    assert!(events.contains("EnsuredLoadBalancer"), "{events}");
    ingress
}

#[test]
fn eks_services() {
    let ingress = exercise(
        OwnerScope::Eks {
            account: "000000000000".into(),
            region: "eu-west-1".into(),
        },
        "10.100.",
        "hostname",
    );
    let host = ingress["hostname"].as_str().unwrap();
    assert!(host.ends_with(".eu-west-1.elb.amazonaws.com"), "{host}");
}

#[test]
fn gke_services() {
    let ingress = exercise(
        OwnerScope::Gke {
            project: "proj".into(),
            location: "us-central1".into(),
        },
        "34.118.",
        "ip",
    );
    assert!(
        ingress["ip"].as_str().unwrap().starts_with("34."),
        "{ingress}"
    );
}

#[test]
fn aks_services() {
    let ingress = exercise(
        OwnerScope::Aks {
            subscription: "00000000-0000-0000-0000-000000000000".into(),
            resource_group: "rg".into(),
            location: "westeurope".into(),
        },
        "10.0.",
        "ip",
    );
    assert!(
        ingress["ip"].as_str().unwrap().starts_with("20."),
        "{ingress}"
    );
}
