//! The NetworkPolicy evaluation endpoint, asked by the real kubectl
//! (`kubectl create --raw`): with no policy traffic flows; a default-deny
//! ingress policy isolates a namespace's Pods; an allow policy opens one
//! port (by number or by its container port's name) to one Pod of another
//! namespace, and nothing else.

mod common;

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;
use serde_json::{Value, json};

#[test]
fn network_policies_are_evaluated_as_upstream_enforces_them() {
    let kemu = Kemu::builder().build().unwrap();
    let record = kemu.registry().create(eks_spec("netpol")).unwrap();
    let sandbox = Sandbox::new();
    let admin = sandbox.path("admin.kubeconfig");
    write_kubeconfig(&admin, &record, record.ca.cert_pem(), kemu.clock().now());
    let ok = |args: &[&str]| -> String {
        let out = sandbox.kubectl(&admin, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let apply = |name: &str, manifest: &str| {
        let path = sandbox.path(name);
        std::fs::write(&path, manifest).unwrap();
        ok(&["apply", "-f", path.to_str().unwrap()]);
    };
    let pod = |ns: &str, name: &str, app: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}, labels: {{app: {app}}}}}\n\
             spec:\n  containers:\n  - name: app\n    image: nginx\n    ports: [{{name: http, containerPort: 8080}}]\n"
        )
    };
    ok(&["create", "namespace", "prod"]);
    ok(&["create", "namespace", "dev"]);
    apply(
        "pods.yaml",
        &[
            pod("prod", "web", "web"),
            pod("prod", "api", "api"),
            pod("dev", "tool", "tool"),
        ]
        .join("---\n"),
    );
    let ask = |from: (&str, &str), to: (&str, &str), port: Value, protocol: &str| -> Value {
        let body = json!({
            "apiVersion": "kemu.dev/v1alpha1", "kind": "NetworkPolicyEvaluation",
            "spec": {"from": {"namespace": from.0, "pod": from.1},
                     "to": {"namespace": to.0, "pod": to.1},
                     "port": port, "protocol": protocol}
        });
        let path = sandbox.path("evaluation.json");
        std::fs::write(&path, body.to_string()).unwrap();
        let out = ok(&[
            "create",
            "--raw",
            "/apis/kemu.dev/v1alpha1/networkpolicyevaluations",
            "-f",
            path.to_str().unwrap(),
        ]);
        serde_json::from_str::<Value>(&out).unwrap()["status"].clone()
    };
    let tool = ("dev", "tool");
    let web = ("prod", "web");
    let api = ("prod", "api");

    // No policy: everything flows, nothing is isolated.
    let v = ask(tool, web, json!(8080), "TCP");
    assert_eq!(v["allowed"], true, "{v}");
    assert_eq!(v["ingress"]["isolated"], false, "{v}");

    // Default deny for ingress in prod.
    apply(
        "deny.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: default-deny, namespace: prod}\n\
         spec: {podSelector: {}, policyTypes: [Ingress]}\n",
    );
    let v = ask(tool, web, json!(8080), "TCP");
    assert_eq!(v["allowed"], false, "{v}");
    assert_eq!(
        v["ingress"],
        json!({"isolated": true, "allowed": false, "allowedBy": []})
    );
    assert_eq!(v["egress"]["allowed"], true, "{v}");
    assert_eq!(ask(api, web, json!(8080), "TCP")["allowed"], false);

    // Allow dev's tool to reach web on 8080/TCP only.
    apply(
        "allow.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: allow-tool, namespace: prod}\n\
         spec:\n  podSelector: {matchLabels: {app: web}}\n  policyTypes: [Ingress]\n  ingress:\n  \
         - from:\n    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: dev}}\n      \
         podSelector: {matchLabels: {app: tool}}\n    ports: [{protocol: TCP, port: 8080}]\n",
    );
    let v = ask(tool, web, json!(8080), "TCP");
    assert_eq!(v["allowed"], true, "{v}");
    assert_eq!(v["ingress"]["allowedBy"], json!(["prod/allow-tool"]));
    assert_eq!(ask(tool, web, json!("http"), "TCP")["allowed"], true);
    assert_eq!(ask(tool, web, json!(9090), "TCP")["allowed"], false);
    assert_eq!(ask(tool, web, json!(8080), "UDP")["allowed"], false);
    assert_eq!(ask(api, web, json!(8080), "TCP")["allowed"], false);
    assert_eq!(ask(tool, api, json!(8080), "TCP")["allowed"], false);

    // A Pod that does not exist: upstream's 404 Status.
    let path = sandbox.path("missing.json");
    std::fs::write(
        &path,
        json!({"spec": {"from": {"namespace": "dev", "pod": "ghost"}, "to": {"namespace": "prod", "pod": "web"}, "port": 80}})
            .to_string(),
    )
    .unwrap();
    let out = sandbox.kubectl(
        &admin,
        &[
            "create",
            "--raw",
            "/apis/kemu.dev/v1alpha1/networkpolicyevaluations",
            "-f",
            path.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (NotFound): pods \"ghost\" not found"
    );
}
