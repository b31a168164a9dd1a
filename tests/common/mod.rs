//! Helpers shared by the end-to-end tests: isolated environments for the real
//! CLIs, cluster specs, kubeconfigs.
#![allow(dead_code, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use kemu::shared::kubeconfig::{self, UserAuth};
use kemu::shared::{ClusterRecord, ClusterSpec, OwnerScope, advertise};

/// A temporary HOME with its own kubeconfig and CLI config dirs.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A command for a real CLI, isolated from the user's configuration.
    /// Fails the test if the tool is not installed.
    pub fn command(&self, tool: &str) -> Command {
        which(tool);
        let mut cmd = Command::new(tool);
        let home = self.dir.path();
        cmd.env("HOME", home)
            .env("KUBECONFIG", home.join("kubeconfig"))
            .env("AWS_CONFIG_FILE", home.join("aws-config"))
            .env("AWS_SHARED_CREDENTIALS_FILE", home.join("aws-credentials"))
            .env("CLOUDSDK_CONFIG", home.join("gcloud"))
            .env("AZURE_CONFIG_DIR", home.join("azure"))
            .env_remove("AWS_CA_BUNDLE")
            .env_remove("REQUESTS_CA_BUNDLE")
            .env_remove("CURL_CA_BUNDLE")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Runs kubectl with `args` against `kubeconfig`.
    pub fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.command("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .expect("run kubectl")
    }
}

/// Panics with a clear message if `tool` is not on PATH: a test that needs a
/// tool it cannot find fails.
pub fn which(tool: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} is not installed; the README's test command installs it"))
}

pub fn eks_spec(name: &str) -> ClusterSpec {
    ClusterSpec {
        scope: OwnerScope::Eks {
            account: "000000000000".into(),
            region: "us-east-1".into(),
        },
        name: name.into(),
        version: "1.34".into(),
        node_pools: vec![],
        tags: Default::default(),
        provisioning: Duration::ZERO,
        extra: serde_json::Value::Null,
    }
}

/// `eks_spec(name)` with one node pool, `ng`, of `count` `machine` Nodes.
pub fn eks_spec_with_pool(name: &str, count: u32, machine: &str) -> ClusterSpec {
    ClusterSpec {
        node_pools: vec![kemu::shared::NodePool {
            name: "ng".into(),
            count,
            machine_type: machine.into(),
            labels: Default::default(),
            taints: vec![],
        }],
        ..eks_spec(name)
    }
}

/// A kubeconfig holding only the server URL, `ca_pem` and a client certificate
/// for `cluster`, written to `path`.
pub fn write_kubeconfig(
    path: &Path,
    cluster: &ClusterRecord,
    ca_pem: &str,
    now: chrono::DateTime<chrono::Utc>,
) {
    let advertised = advertise(cluster);
    let server = advertised.server_url().expect("cluster endpoint");
    let cert = cluster
        .ca
        .client_cert("kemu-admin", &["system:masters".into()], now)
        .expect("client cert");
    let text = kubeconfig::render(
        &cluster.name,
        &server,
        ca_pem,
        "kemu-admin",
        &UserAuth::ClientCert {
            cert_pem: cert.cert_pem,
            key_pem: cert.key_pem,
        },
    );
    std::fs::write(path, text).expect("write kubeconfig");
}

/// An HTTP client for plain-HTTP facades.
pub fn http_client() -> reqwest::Client {
    kemu::shared::pki::install_crypto_provider();
    reqwest::Client::new()
}

/// `req` with the SigV4 headers every EKS call needs (any key passes; the
/// signature is not recomputed).
pub fn eks_signed(req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    req.header(
        "authorization",
        "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/eks/aws4_request, SignedHeaders=host;x-amz-date, Signature=0",
    )
    .header("x-amz-date", "20260101T000000Z")
}

/// An HTTP client trusting `ca_pem` only.
pub fn https_client(ca_pem: &str) -> reqwest::Client {
    kemu::shared::pki::install_crypto_provider();
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("ca")])
        .build()
        .expect("client")
}

/// An HTTPS client for ARM trusting `ca_pem`, with a bearer token on every
/// call (ARM refuses calls without one; kemu takes any token it cannot read).
pub fn arm_client(ca_pem: &str) -> reqwest::Client {
    kemu::shared::pki::install_crypto_provider();
    let bearer = reqwest::header::HeaderValue::from_static("Bearer kemu-test");
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("ca")])
        .default_headers(reqwest::header::HeaderMap::from_iter([(
            reqwest::header::AUTHORIZATION,
            bearer,
        )]))
        .build()
        .expect("client")
}

/// Waits (bounded) until the controllers have published `kube-root-ca.crt` in
/// `namespace` of `cluster`, as they do in every namespace of a real cluster.
pub fn wait_for_root_ca(kemu: &kemu::Kemu, cluster: &ClusterRecord, namespace: &str) {
    wait_for_object(kemu, cluster, "configmaps", namespace, "kube-root-ca.crt");
}

/// Waits until the namespace controller has given every initial namespace
/// its `kube-root-ca.crt` and `default` ServiceAccount, so a test that
/// compares resourceVersions sees no write of its own start-up.
pub fn wait_for_bootstrap(kemu: &kemu::Kemu, cluster: &ClusterRecord) {
    for ns in kemu_dataplane::store::INITIAL_NAMESPACES {
        wait_for_object(kemu, cluster, "configmaps", ns, "kube-root-ca.crt");
        wait_for_object(kemu, cluster, "serviceaccounts", ns, "default");
    }
}

fn wait_for_object(
    kemu: &kemu::Kemu,
    cluster: &ClusterRecord,
    resource: &str,
    namespace: &str,
    name: &str,
) {
    let dataplane = kemu.dataplane().expect("data plane");
    let key = kemu_dataplane::store::ObjectKey::new(resource, namespace, name);
    for _ in 0..1000 {
        let store = dataplane.engine().store(&cluster.id);
        if store.is_some_and(|s| s.get(&key).is_some()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{resource} {namespace}/{name} never appeared");
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A command's stdout; fails the test (with its stderr) unless it succeeded.
pub fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A kemu with one cluster made from a spec, and kubectl pointed at it with a
/// `system:masters` client certificate: what the kubectl tests share.
pub struct KubectlCluster {
    pub kemu: kemu::Kemu,
    pub record: ClusterRecord,
    pub sandbox: Sandbox,
    pub kubeconfig: PathBuf,
    /// The clock's time when the cluster was made (client certificates).
    pub now: chrono::DateTime<chrono::Utc>,
}

impl KubectlCluster {
    pub fn new(spec: ClusterSpec) -> Self {
        Self::with_kemu(kemu::Kemu::builder().build().unwrap(), spec)
    }

    /// The cluster of `spec` on a given kemu (a fake clock's, say).
    pub fn with_kemu(kemu: kemu::Kemu, spec: ClusterSpec) -> Self {
        let record = kemu.registry().create(spec).unwrap();
        let sandbox = Sandbox::new();
        let kubeconfig = sandbox.path("kubeconfig");
        let now = kemu.clock().now();
        write_kubeconfig(&kubeconfig, &record, record.ca.cert_pem(), now);
        Self {
            kemu,
            record,
            sandbox,
            kubeconfig,
            now,
        }
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.sandbox.kubectl(&self.kubeconfig, args)
    }

    /// kubectl's stdout; fails the test unless it succeeds.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// kubectl's stderr; fails the test unless it fails.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} should fail: {}",
            text(&out)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `args` with `-o json`, parsed.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let body = self.ok(&all);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{args:?}: {e}: {body}"))
    }

    /// The `items` of a list `args` prints.
    pub fn items(&self, args: &[&str]) -> Vec<serde_json::Value> {
        self.json(args)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Runs `tests/py/{script}` with the Python client on this cluster's
    /// kubeconfig; fails the test unless it succeeds and ends printing `ok`.
    pub fn python_ok(&self, script: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/py")
            .join(script);
        let out = self
            .sandbox
            .command("python3")
            .arg(script)
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .expect("run python3");
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).ends_with("ok\n"),
            "{}",
            text(&out)
        );
    }

    /// Writes `body` to a file in the sandbox; its path.
    pub fn file(&self, name: &str, body: &str) -> String {
        let path = self.sandbox.path(name);
        std::fs::write(&path, body).unwrap();
        path.to_string_lossy().into_owned()
    }
}

pub mod aks;
