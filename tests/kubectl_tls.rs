//! kubectl reaches a cluster over TLS verified against that cluster's own CA,
//! with a kubeconfig holding only server, CA and a client certificate.

mod common;

use common::{Sandbox, eks_spec, text, write_kubeconfig};
use kemu::Kemu;

#[test]
fn kubectl_verifies_each_cluster_ca() {
    let kemu = Kemu::builder().build().unwrap();
    let now = kemu.clock().now();
    let a = kemu.registry().create(eks_spec("alpha")).unwrap();
    let b = kemu.registry().create(eks_spec("beta")).unwrap();
    assert_ne!(a.port, b.port, "each cluster has its own listener");

    let sandbox = Sandbox::new();
    let good = sandbox.path("good.kubeconfig");
    write_kubeconfig(&good, &a, a.ca.cert_pem(), now);
    let out = sandbox.kubectl(&good, &["get", "--raw", "/version"]);
    assert!(out.status.success(), "{}", text(&out));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["major"], "1");
    assert_eq!(info["minor"], "34");

    // The same server with the other cluster's CA must fail verification.
    let wrong = sandbox.path("wrong.kubeconfig");
    write_kubeconfig(&wrong, &a, b.ca.cert_pem(), now);
    let out = sandbox.kubectl(&wrong, &["get", "--raw", "/version"]);
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("certificate signed by unknown authority") || stderr.contains("x509"),
        "{}",
        text(&out)
    );
}

#[test]
fn unknown_paths_get_a_status_404() {
    let kemu = Kemu::builder().build().unwrap();
    let now = kemu.clock().now();
    let a = kemu.registry().create(eks_spec("alpha")).unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &a, a.ca.cert_pem(), now);
    let out = sandbox.kubectl(&kc, &["get", "--raw", "/no/such/path"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        text(&out)
    );
    for path in ["/healthz", "/livez", "/readyz"] {
        let out = sandbox.kubectl(&kc, &["get", "--raw", path]);
        assert!(out.status.success(), "{path}: {}", text(&out));
        assert_eq!(out.stdout, b"ok");
    }
}

#[test]
fn deleting_a_cluster_closes_its_listener() {
    let kemu = Kemu::builder().build().unwrap();
    let a = kemu.registry().create(eks_spec("alpha")).unwrap();
    let port = a.port.unwrap();
    kemu.registry()
        .delete(&a.id, std::time::Duration::ZERO)
        .unwrap();
    // The listener closes on the data plane's thread; wait for that event
    // (bounded), not for time to pass.
    let closed = (0..200).any(|_| {
        let refused = std::net::TcpStream::connect(("127.0.0.1", port)).is_err();
        if !refused {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        refused
    });
    assert!(closed, "port {port} still accepts connections");
}

#[test]
fn whoami_names_the_certificate_user_and_tokens_need_an_authenticator() {
    let kemu = Kemu::builder().build().unwrap();
    let a = kemu.registry().create(eks_spec("alpha")).unwrap();
    let sandbox = Sandbox::new();
    let kc = sandbox.path("kubeconfig");
    write_kubeconfig(&kc, &a, a.ca.cert_pem(), kemu.clock().now());
    let out = sandbox.kubectl(&kc, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let review: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "kemu-admin");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );

    // A bearer token no cloud authenticator accepts is a 401; no credential at
    // all reaches only the public endpoints.
    let server = kemu::shared::advertise(&a).server_url().unwrap();
    let with_token = |name: &str, token: &str| {
        let path = sandbox.path(name);
        let text = kemu::shared::kubeconfig::render(
            "alpha",
            &server,
            a.ca.cert_pem(),
            "someone",
            &kemu::shared::kubeconfig::UserAuth::Token(token.into()),
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let bad_token = with_token("bad-token.kubeconfig", "not-a-real-token");
    let run = |kc: &std::path::Path, args: &[&str]| sandbox.kubectl(kc, args);
    let out = run(&bad_token, &["get", "--raw", "/apis"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        text(&out)
    );
    // kubectl prompts for a password when a kubeconfig has no credential, so
    // the anonymous checks use a plain HTTPS client.
    let client = common::https_client(a.ca.cert_pem());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = |path: &str| {
        runtime.block_on(async {
            client
                .get(format!("{server}{path}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    assert_eq!(status("/version"), 200);
    assert_eq!(status("/healthz"), 200);
    assert_eq!(status("/apis"), 403);
}
