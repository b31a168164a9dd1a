//! Helpers for the EKS end-to-end tests: kemu served in-process on free ports,
//! and the real aws CLI pointed at it with dummy keys in a sandbox.
#![allow(dead_code, missing_docs)]

use std::path::Path;
use std::process::{Command, Output};

use kemu::Kemu;
use kemu::server::{Listeners, Running};

use crate::common::{Sandbox, text};

/// Starts kemu's facades on free ports; call inside `#[actix_web::test]`.
pub fn start(kemu: Kemu, run_dir: &Path) -> Running {
    kemu::server::start(
        kemu,
        &Listeners {
            bind_host: "127.0.0.1".into(),
            eks_port: 0,
            gke_port: 0,
            aks_port: 0,
            run_dir: run_dir.to_path_buf(),
        },
    )
    .expect("start kemu")
}

/// The environment every AWS client of a test gets: dummy keys, the region,
/// the EKS endpoint, no inherited CA bundle.
pub fn aws_env(cmd: &mut Command, endpoint: &str, access_key: &str) {
    cmd.env("AWS_ACCESS_KEY_ID", access_key)
        .env("AWS_SECRET_ACCESS_KEY", access_key)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL_EKS", endpoint)
        .env("AWS_PAGER", "")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT_URL_STS");
}

/// The aws CLI in a sandbox, against one kemu.
pub struct Aws<'a> {
    pub sandbox: &'a Sandbox,
    pub endpoint: String,
    pub access_key: String,
}

impl<'a> Aws<'a> {
    pub fn new(sandbox: &'a Sandbox, endpoint: &str) -> Self {
        Self {
            sandbox,
            endpoint: endpoint.to_owned(),
            access_key: "test".into(),
        }
    }

    pub fn command(&self) -> Command {
        let mut cmd = self.sandbox.command("aws");
        aws_env(&mut cmd, &self.endpoint, &self.access_key);
        cmd
    }

    /// Runs `aws eks <args>`.
    pub fn eks(&self, args: &[&str]) -> Output {
        self.command()
            .arg("eks")
            .args(args)
            .output()
            .expect("run aws")
    }

    /// Runs `aws eks <args>`, asserts success, parses the JSON output.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.eks(args);
        assert!(out.status.success(), "aws eks {args:?}: {}", text(&out));
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            return serde_json::Value::Null;
        }
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("aws eks {args:?} printed no JSON ({e}): {}", text(&out)))
    }

    /// Runs `aws eks <args>`, asserts success.
    pub fn ok(&self, args: &[&str]) {
        let out = self.eks(args);
        assert!(out.status.success(), "aws eks {args:?}: {}", text(&out));
    }

    /// kubectl with the same AWS environment (its exec plugin runs
    /// `aws eks get-token`).
    pub fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut cmd = self.sandbox.command("kubectl");
        aws_env(&mut cmd, &self.endpoint, &self.access_key);
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--request-timeout=20s")
            .args(args)
            .output()
            .expect("run kubectl")
    }
}

/// Runs the blocking part of a test (the CLIs) off the actix test thread, which
/// must stay free to drive the servers started on it.
pub async fn blocking(f: impl FnOnce() + Send + 'static) {
    if let Err(e) = tokio::task::spawn_blocking(f).await {
        std::panic::resume_unwind(e.into_panic());
    }
}
