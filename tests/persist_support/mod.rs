//! Helpers for the persistence tests: the `kemu` binary on chosen ports, so a
//! restart serves the facades where the CLIs' configurations point, killed
//! with SIGKILL or stopped with SIGTERM.
#![allow(dead_code, missing_docs)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kemu::server::ReadyLine;

/// A port free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The facade and admin ports of one kemu, kept across its restarts.
#[derive(Debug, Clone)]
pub struct Ports {
    pub eks: u16,
    pub gke: u16,
    pub aks: u16,
    pub admin: u16,
}

impl Ports {
    pub fn free() -> Self {
        Self {
            eks: free_port(),
            gke: free_port(),
            aks: free_port(),
            admin: free_port(),
        }
    }
}

/// A running `kemu` binary.
pub struct Kemu {
    pub child: Child,
    pub ready: ReadyLine,
    pub stderr: PathBuf,
}

impl Kemu {
    /// Starts kemu on `ports` with `run_dir` and `extra` arguments; its stderr
    /// goes to `run_dir/stderr-N.log`.
    pub fn start(ports: &Ports, run_dir: &Path, extra: &[&str]) -> Self {
        std::fs::create_dir_all(run_dir).expect("run dir");
        let n = std::fs::read_dir(run_dir).map(|d| d.count()).unwrap_or(0);
        let stderr = run_dir.join(format!("stderr-{n}.log"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
            .args(["--eks-port", &ports.eks.to_string()])
            .args(["--gke-port", &ports.gke.to_string()])
            .args(["--aks-port", &ports.aks.to_string()])
            .args(["--admin-port", &ports.admin.to_string()])
            .arg("--run-dir")
            .arg(run_dir)
            .args(extra)
            .env("KEMU_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn kemu");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        let ready: ReadyLine = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "not a ready line ({e}): {line}\nstderr: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        });
        Self {
            child,
            ready,
            stderr,
        }
    }

    /// `kill -9`.
    pub fn kill9(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }

    /// SIGTERM, and a clean exit.
    pub fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        assert!(exit.success(), "kemu exited with {exit:?}");
    }

    /// What kemu printed on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Kemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A YAML List of `count` ConfigMaps `prefix-i`, for `kubectl create -f`.
pub fn config_maps(prefix: &str, count: usize) -> String {
    let items: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("{prefix}-{i}"), "namespace": "default"},
                "data": {"i": i.to_string()},
            })
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// The `metadata.name`s of `kubectl get … -o json` output.
pub fn names(list_json: &[u8]) -> std::collections::BTreeSet<String> {
    let list: serde_json::Value = serde_json::from_slice(list_json).expect("list json");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// A one-item list of ConfigMaps in `default`: its `metadata.resourceVersion`
/// is the cluster's (kubectl's own `get -o json` lists carry none).
pub const LIST_ONE: &str = "/api/v1/namespaces/default/configmaps?limit=1";

/// The `metadata.resourceVersion` of a list answer; panics if it has none.
pub fn list_rv(list_json: &[u8]) -> String {
    let list: serde_json::Value = serde_json::from_slice(list_json).expect("list json");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    assert!(!rv.is_empty(), "no resourceVersion in {list}");
    rv.to_owned()
}
