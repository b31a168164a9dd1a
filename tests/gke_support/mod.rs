//! Helpers for the GKE end-to-end tests: a kemu process on free ports, and
//! gcloud / kubectl / Python commands pointed at its GKE facade.
#![allow(dead_code, missing_docs)]

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use kemu::server::ReadyLine;

use crate::common::Sandbox;

/// The access token every GKE test uses (any string works).
pub const TOKEN: &str = "kemu-test-token";
/// The project every GKE test uses.
pub const PROJECT: &str = "test-proj";

/// A `kemu` binary on free ports, killed on drop.
pub struct KemuProcess {
    child: Child,
    pub ready: ReadyLine,
    _run_dir: tempfile::TempDir,
}

impl KemuProcess {
    pub fn start(extra: &[&str]) -> Self {
        let run_dir = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
            .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
            .arg("--run-dir")
            .arg(run_dir.path())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kemu");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        let ready: ReadyLine = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a ready line ({e}): {line}"));
        Self {
            child,
            ready,
            _run_dir: run_dir,
        }
    }

    /// The GKE facade's base URL, with the trailing slash gcloud requires.
    pub fn gke_override(&self) -> String {
        format!("{}/", self.ready.gke)
    }
}

impl Drop for KemuProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tool` in `sandbox` with gcloud pointed at `gke_url` (container and
/// Service Usage overrides), the access token set, and nothing reaching out.
pub fn cloud_command(sandbox: &Sandbox, tool: &str, gke_url: &str) -> Command {
    let mut cmd = sandbox.command(tool);
    cmd.env("CLOUDSDK_CORE_PROJECT", PROJECT)
        .env("CLOUDSDK_AUTH_ACCESS_TOKEN", TOKEN)
        .env("CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER", gke_url)
        .env("CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE", gke_url)
        .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
        .env("CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "true")
        .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "true")
        .env("CLOUDSDK_SURVEY_DISABLE_PROMPTS", "true")
        .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false");
    cmd
}

/// Runs `gcloud container ARGS` with `--log-http`, so the test can count the
/// requests gcloud made.
pub fn gcloud(sandbox: &Sandbox, gke_url: &str, args: &[&str]) -> Output {
    cloud_command(sandbox, "gcloud", gke_url)
        .arg("container")
        .args(args)
        .arg("--log-http")
        .output()
        .expect("run gcloud")
}

/// The `(method, uri)` of every request gcloud logged with `--log-http`.
pub fn requests(out: &Output) -> Vec<(String, String)> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut uris = Vec::new();
    let mut last_uri = None;
    for line in stderr.lines() {
        if let Some(u) = line.strip_prefix("uri: ") {
            last_uri = Some(u.to_owned());
        } else if let Some(m) = line.strip_prefix("method: ")
            && let Some(u) = last_uri.take()
        {
            uris.push((m.to_owned(), u));
        }
    }
    uris
}

/// How many times gcloud asked for an operation.
pub fn operation_polls(out: &Output) -> usize {
    requests(out)
        .iter()
        .filter(|(m, u)| m == "GET" && u.contains("/operations/operation-"))
        .count()
}

/// kubectl with the kubeconfig gcloud wrote, and the access token the auth
/// plugin hands it.
pub fn kubectl(sandbox: &Sandbox, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut cmd = sandbox.command("kubectl");
    cmd.env("CLOUDSDK_AUTH_ACCESS_TOKEN", TOKEN)
        .env("CLOUDSDK_CONFIG", sandbox.path("gcloud"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=20s")
        .args(args);
    cmd.output().expect("run kubectl")
}

/// Runs a Python script of tests/py with `args`; fails the test if python3 is
/// missing.
pub fn python(sandbox: &Sandbox, script: &str, args: &[&str]) -> Output {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    sandbox
        .command("python3")
        .arg(path)
        .args(args)
        .output()
        .expect("run python3")
}
