//! Hostile and careless input at a cluster, through kubectl and raw HTTPS:
//! numbers past their type, durations past the clock's range, a body nested
//! past the decoder's bound and a client certificate webpki cannot read.
//! Each is answered as kube-apiserver answers it, and the cluster (its
//! controllers, its other requests) runs on.

mod common;

use common::{KubectlCluster, eks_spec_with_pool, which};

const HUGE: &str = "4611686018427387904"; // 2^62

fn cluster() -> KubectlCluster {
    KubectlCluster::new(eks_spec_with_pool("hostile", 2, "m5.large"))
}

/// The controllers still act: a new Deployment rolls out.
fn controllers_run(c: &KubectlCluster, name: &str) {
    c.ok(&[
        "create",
        "deployment",
        name,
        "--image=nginx",
        "--replicas=2",
    ]);
    let out = c.ok(&[
        "rollout",
        "status",
        &format!("deployment/{name}"),
        "--timeout=60s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

#[test]
fn numbers_past_their_type_or_the_clock_are_refused_or_saturate() {
    let c = cluster();
    // An int32 field past its range is the decoder's 400.
    let deployment = c.file(
        "deployment.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: big}}\nspec:\n  minReadySeconds: {HUGE}\n  \
             selector: {{matchLabels: {{app: big}}}}\n  template:\n    metadata: {{labels: {{app: big}}}}\n    \
             spec: {{containers: [{{name: c, image: nginx}}]}}\n"
        ),
    );
    let err = c.fails(&["apply", "-f", &deployment]);
    assert!(
        err.contains(&format!("json: cannot unmarshal number {HUGE} into Go struct field DeploymentSpec.spec.minReadySeconds of type int32")),
        "{err}"
    );

    // Valid values at the edge of their types: the Pod runs, the Job
    // completes, nothing overflows.
    let pod = c.file(
        "pod.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: edge\n  annotations: {{kemu.dev/exit-after: inf}}\n\
             spec:\n  terminationGracePeriodSeconds: {HUGE}\n  containers:\n  - name: c\n    image: nginx\n    \
             readinessProbe: {{exec: {{command: [\"true\"]}}, initialDelaySeconds: 2147483647}}\n"
        ),
    );
    c.ok(&["apply", "-f", &pod]);
    c.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/edge",
        "--timeout=60s",
    ]);
    let job = c.file(
        "job.yaml",
        &format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: deadline}}\nspec:\n  activeDeadlineSeconds: {HUGE}\n  \
             ttlSecondsAfterFinished: 2147483647\n  template:\n    spec:\n      restartPolicy: Never\n      \
             containers: [{{name: c, image: busybox}}]\n"
        ),
    );
    c.ok(&["apply", "-f", &job]);
    c.ok(&[
        "wait",
        "--for=condition=complete",
        "job/deadline",
        "--timeout=60s",
    ]);

    // Query numbers: saturated where valid, Go's own error where not.
    let log = c.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/default/pods/edge/log?sinceSeconds={HUGE}"),
    ]);
    assert!(log.contains("started"), "{log}");
    let err = c.fails(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/pods/edge?gracePeriodSeconds=99999999999999999999",
    ]);
    assert!(
        err.contains("strconv.ParseInt: parsing \\\"99999999999999999999\\\": value out of range")
            || err
                .contains("strconv.ParseInt: parsing \"99999999999999999999\": value out of range"),
        "{err}"
    );
    c.ok(&[
        "delete",
        "pod",
        "edge",
        &format!("--grace-period={HUGE}"),
        "--wait=false",
    ]);
    controllers_run(&c, "after-numbers");
}

#[tokio::test]
async fn a_body_nested_past_the_decoders_bound_is_refused_and_the_cluster_serves_on() {
    let c = cluster();
    let cert = c
        .record
        .ca
        .client_cert("kemu-admin", &["system:masters".into()], c.now)
        .unwrap();
    let identity = format!("{}{}", cert.cert_pem, cert.key_pem);
    kemu::shared::pki::install_crypto_provider();
    let http = reqwest::Client::builder()
        .tls_certs_only([
            reqwest::Certificate::from_pem(c.record.ca.cert_pem().as_bytes()).unwrap(),
        ])
        .identity(reqwest::Identity::from_pem(identity.as_bytes()).unwrap())
        .build()
        .unwrap();
    let server = kemu::shared::sentinel::advertise(&c.record)
        .server_url()
        .unwrap();
    let url = format!("{server}/api/v1/namespaces/default/configmaps");
    let deep = "[".repeat(100_000);
    let resp = http
        .post(&url)
        .header("content-type", "application/yaml")
        .body(deep)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let status: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        status["message"],
        "error converting YAML to JSON: yaml: exceeded max depth of 10000"
    );
    // Past 3 MiB: 413, before anything is parsed.
    let resp = http
        .post(&url)
        .header("content-type", "application/json")
        .body(vec![b' '; 3 * 1024 * 1024 + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);

    let ready = tokio::task::spawn_blocking(move || {
        let out = c.ok(&["get", "--raw", "/readyz"]);
        let listed = c.items(&["get", "configmaps"]);
        (out, listed.len(), c)
    })
    .await
    .unwrap();
    assert_eq!(ready.0, "ok");
    assert_eq!(ready.1, 1, "only kube-root-ca.crt: nothing was stored");
}

#[test]
fn a_client_certificate_webpki_cannot_read_is_a_401_not_a_tls_abort() {
    let c = cluster();
    let openssl = which("openssl");
    let dir = c.sandbox.path("v1");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&openssl)
            .current_dir(&dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            common::text(&out)
        );
    };
    // An X.509 v1 certificate (no extensions) from a CA of its own.
    run(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        "ca.key",
    ]);
    run(&[
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-subj",
        "/CN=other",
        "-days",
        "2",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        "user.key",
    ]);
    run(&[
        "req",
        "-new",
        "-key",
        "user.key",
        "-subj",
        "/CN=mallory/O=system:masters",
        "-out",
        "user.csr",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "user.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        "user.pem",
    ]);

    let server = kemu::shared::sentinel::advertise(&c.record)
        .server_url()
        .unwrap();
    let kubeconfig = c.sandbox.path("v1.kubeconfig");
    let text = kemu::shared::kubeconfig::render(
        "hostile",
        &server,
        c.record.ca.cert_pem(),
        "mallory",
        &kemu::shared::kubeconfig::UserAuth::ClientCert {
            cert_pem: std::fs::read_to_string(dir.join("user.pem")).unwrap(),
            key_pem: std::fs::read_to_string(dir.join("user.key")).unwrap(),
        },
    );
    std::fs::write(&kubeconfig, text).unwrap();
    let out = c.sandbox.kubectl(&kubeconfig, &["get", "namespaces"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // kubectl's discovery (no cache for this server yet) is refused first.
    assert!(
        err.trim().lines().last().is_some_and(|l| l
            == "error: You must be logged in to the server (the server has asked for the client to provide credentials)"),
        "{err}"
    );
    // The cluster's own credentials still work.
    c.ok(&["get", "namespaces"]);
}

/// A request outlives its deadline (here a webhook that never answers): the
/// client gets upstream's 504 on the cluster's clock, nothing is stored, and
/// the cluster serves on. A `?timeout=` Go cannot parse is a 400.
#[test]
fn a_request_past_its_deadline_is_a_504_and_the_cluster_serves_on() {
    use kemu::shared::{Clock as _, FakeClock, SystemClock};
    // kubectl checks certificates against wall time: the fake clock starts there.
    let clock = FakeClock::new(SystemClock.now());
    let c = KubectlCluster::with_kemu(
        kemu::Kemu::builder().clock(clock.clone()).build().unwrap(),
        eks_spec_with_pool("deadline", 1, "m5.large"),
    );
    // With no timeout of its own, kubectl leaves the URL's.
    let err = c.fails(&[
        "get",
        "--raw",
        "/api/v1/namespaces?timeout=1",
        "--request-timeout=0",
    ]);
    assert!(
        err.contains(
            "Error from server (BadRequest): invalid timeout specified in the request URL - \
             time: missing unit in duration \"1\""
        ),
        "{err}"
    );

    // A webhook that takes the connection and never answers, within its own
    // 30 s allowance.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (accepted, taken) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((conn, _)) = silent.accept() {
            held.push(conn);
            let _ = accepted.send(());
        }
    });
    let hook = c.file(
        "hook.yaml",
        &format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n\
             metadata: {{name: silent}}\nwebhooks:\n- name: silent.kemu.test\n  \
             admissionReviewVersions: [v1]\n  sideEffects: None\n  timeoutSeconds: 30\n  \
             clientConfig: {{url: \"https://127.0.0.1:{port}/validate\"}}\n  \
             rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps]}}]\n"
        ),
    );
    c.ok(&["apply", "-f", &hook]);
    std::thread::scope(|s| {
        // kubectl sends its --request-timeout (20s) as ?timeout=20s.
        let create = s.spawn(|| c.run(&["create", "configmap", "slow", "--from-literal=a=b"]));
        taken.recv().unwrap();
        // Still serving while that request waits.
        assert_eq!(c.ok(&["get", "--raw", "/readyz"]), "ok");
        clock.advance(std::time::Duration::from_secs(20));
        let out = create.join().unwrap();
        assert!(!out.status.success(), "{}", common::text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "error: failed to create configmap: Timeout: request did not complete within the allotted timeout"
            ),
            "{err}"
        );
    });
    let err = c.fails(&["get", "configmap", "slow"]);
    assert!(err.contains("NotFound"), "{err}");
    c.ok(&["delete", "validatingwebhookconfiguration", "silent"]);
    c.ok(&["create", "configmap", "fast", "--from-literal=a=b"]);
}
