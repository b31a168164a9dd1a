//! The `kemu` binary: free ports, one machine-readable ready line on stdout,
//! clear 404s in each cloud's format, clean exit on SIGTERM.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

use kemu::server::ReadyLine;

fn start(extra: &[&str], run_dir: &std::path::Path) -> (std::process::Child, ReadyLine) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--eks-port", "0", "--gke-port", "0", "--aks-port", "0"])
        .arg("--run-dir")
        .arg(run_dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: ReadyLine =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a ready line ({e}): {line}"));
    assert_eq!(ready.kemu, "ready");
    (child, ready)
}

fn stop(mut child: std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "kemu exited with {exit:?} on SIGTERM");
}

#[actix_web::test]
async fn ready_line_and_wire_format_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (child, ready) = start(&[], dir.path());
    assert_eq!(ready.dataplane, "live");
    assert!(ready.aks.starts_with("https://"));
    let ca = std::fs::read_to_string(&ready.ca_bundle).unwrap();

    let http = common::http_client();
    let resp = common::eks_signed(http.get(format!("{}/clusters/nope", ready.eks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        resp.headers()["x-amzn-errortype"],
        "ResourceNotFoundException"
    );
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "No cluster found for name: nope.");

    let resp = common::eks_signed(http.get(format!("{}/no/such/operation", ready.eks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.headers().contains_key("x-amzn-errortype"));

    let resp = http
        .get(format!(
            "{}/v1/projects/p/locations/l/clusters/nope",
            ready.gke
        ))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(body["error"]["code"], 404);

    let https = common::arm_client(&ca);
    let arm = format!(
        "{}/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/nope",
        ready.aks
    );
    let resp = https
        .get(format!("{arm}?api-version=2025-01-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ResourceGroupNotFound");
    let resp = https.get(&arm).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MissingApiVersionParameter");

    stop(child);
}

#[actix_web::test]
async fn no_dataplane_flag_reports_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let (child, ready) = start(&["--no-dataplane"], dir.path());
    assert_eq!(ready.dataplane, "disabled");
    stop(child);
}

#[actix_web::test]
async fn authorization_flag_takes_rbac_or_allow_all_only() {
    let dir = tempfile::tempdir().unwrap();
    let (child, ready) = start(&["--authorization", "allow-all"], dir.path());
    assert_eq!(ready.dataplane, "live");
    stop(child);

    let bad = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--authorization", "webhook"])
        .env_remove("KEMU_AUTHORIZATION")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("unknown authorization mode \"webhook\": expected rbac or allow-all"),
        "{stderr}"
    );
}

#[test]
fn a_port_in_use_names_the_port_and_its_flag() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["--eks-port", "0", "--gke-port", &port, "--aks-port", "0"])
        .arg("--run-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "Error: cannot listen on 127.0.0.1:{port} for --gke-port: Address already in use (os error 98) (another process holds it: pass --gke-port with another port, or 0 for a free one)"
        )),
        "{err}"
    );
}

#[test]
fn logs_into_a_pipe_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args([
            "--eks-port",
            "0",
            "--gke-port",
            "0",
            "--aks-port",
            "0",
            "--log",
            "info",
        ])
        .arg("--run-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(" INFO "), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
}
