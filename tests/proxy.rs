//! `pods/proxy`, `services/proxy` and `nodes/proxy` through kubectl's
//! `get --raw` and the Python client: requests reach the simulated servers
//! of the containers behind them (nginx's files, agnhost's netexec) as
//! kube-apiserver's proxy passes them, with upstream's refusals; and an
//! httpd readiness probe that `kubectl exec` breaks and mends turns the
//! Pod unready and ready again, as the e2e StatefulSet specs do.

mod common;

use common::{KubectlCluster, eks_spec_with_pool};

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: pages}
data: {page.html: "<p>from a ConfigMap</p>\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports: [{containerPort: 80}]
    volumeMounts:
    - {name: pages, mountPath: /usr/share/nginx/html/extra}
  volumes:
  - {name: pages, configMap: {name: pages}}
---
apiVersion: v1
kind: Pod
metadata: {name: agn, labels: {app: agn}}
spec:
  containers:
  - name: agnhost
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080]
    ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata: {name: agn-svc}
spec:
  selector: {app: agn}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: none}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: httpd}
spec:
  containers:
  - name: httpd
    image: httpd:2.4
    readinessProbe:
      httpGet: {path: /index.html, port: 80}
      periodSeconds: 1
      failureThreshold: 1
"#;

fn cluster() -> KubectlCluster {
    let k = KubectlCluster::new(eks_spec_with_pool("proxy", 1, "m5.large"));
    let path = k.file("objects.yaml", OBJECTS);
    k.ok(&["apply", "-f", &path]);
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/web",
        "pod/agn",
        "pod/httpd",
        "--timeout=60s",
    ]);
    k
}

const PODS: &str = "/api/v1/namespaces/default/pods";

#[test]
fn proxies_reach_the_servers_behind_pods_services_and_nodes() {
    let k = cluster();
    let raw = |path: &str| k.ok(&["get", "--raw", path]);
    // The first container port, and the redirect of an empty path.
    assert_eq!(
        raw(&format!("{PODS}/web/proxy/extra/page.html")),
        "<p>from a ConfigMap</p>\n"
    );
    assert!(raw(&format!("{PODS}/web/proxy")).contains("<title>Welcome to nginx!</title>"));
    assert!(raw(&format!("{PODS}/http:web:80/proxy/")).contains("Welcome to nginx!"));
    assert_eq!(
        raw(&format!("{PODS}/agn:8080/proxy/echo?msg=hello")),
        "hello"
    );
    assert_eq!(raw(&format!("{PODS}/agn:8080/proxy/hostname")), "agn");
    // The caller's credentials stay with the apiserver.
    assert_eq!(
        raw(&format!("{PODS}/agn:8080/proxy/header?key=Authorization")),
        ""
    );

    let err = k.fails(&["get", "--raw", &format!("{PODS}/web:81/proxy/")]);
    let ip = k.ok(&["get", "pod", "web", "-o", "jsonpath={.status.podIP}"]);
    assert!(
        err.contains(&format!(
            "Error from server (ServiceUnavailable): error trying to reach service: dial tcp {ip}:81: connect: connection refused"
        )),
        "{err}"
    );
    let err = k.fails(&["get", "--raw", &format!("{PODS}/ftp:web:21/proxy/")]);
    assert!(err.contains("invalid pod request \"ftp:web:21\""), "{err}");
    let err = k.fails(&["get", "--raw", &format!("{PODS}/gone/proxy/")]);
    assert!(err.contains("pods \"gone\" not found"), "{err}");

    // A Service's port by number or name, to a ready endpoint.
    let svc = "/api/v1/namespaces/default/services";
    assert_eq!(raw(&format!("{svc}/agn-svc:80/proxy/hostname")), "agn");
    assert_eq!(raw(&format!("{svc}/agn-svc:http/proxy/echo?msg=x")), "x");
    let err = k.fails(&["get", "--raw", &format!("{svc}/agn-svc:81/proxy/")]);
    assert!(
        err.contains("no service port 81 found for service \"agn-svc\""),
        "{err}"
    );
    let err = k.fails(&["get", "--raw", &format!("{svc}/nobody/proxy/")]);
    assert!(
        err.contains("no endpoints available for service \"nobody\""),
        "{err}"
    );

    // A Node's kubelet.
    let node = k.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    assert_eq!(raw(&format!("/api/v1/nodes/{node}/proxy/healthz")), "ok");
    let pods: serde_json::Value =
        serde_json::from_str(&raw(&format!("/api/v1/nodes/{node}/proxy/pods"))).unwrap();
    assert_eq!(pods["kind"], "PodList");
    assert_eq!(pods["items"].as_array().map(Vec::len), Some(3));

    k.python_ok("proxy.py");
}

#[test]
fn an_http_readiness_probe_follows_the_files_exec_changes() {
    let k = cluster();
    let ready = || {
        k.ok(&[
            "get",
            "pod",
            "httpd",
            "-o",
            "jsonpath={.status.containerStatuses[0].ready}",
        ])
    };
    assert_eq!(ready(), "true");
    k.ok(&[
        "exec",
        "httpd",
        "--",
        "/bin/sh",
        "-c",
        "mv -v /usr/local/apache2/htdocs/index.html /tmp/ || true",
    ]);
    k.ok(&[
        "wait",
        "--for=condition=Ready=false",
        "pod/httpd",
        "--timeout=30s",
    ]);
    assert_eq!(ready(), "false");
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=httpd,reason=Unhealthy",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert_eq!(
        events,
        "Readiness probe failed: HTTP probe failed with statuscode: 404"
    );
    // Still running: only readiness changed.
    let state = k.ok(&["get", "pod", "httpd", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(state, "Running");
    k.ok(&[
        "exec",
        "httpd",
        "--",
        "/bin/sh",
        "-c",
        "mv -v /tmp/index.html /usr/local/apache2/htdocs/ || true",
    ]);
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/httpd",
        "--timeout=30s",
    ]);
    assert_eq!(ready(), "true");
}
