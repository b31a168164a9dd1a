//! kemu's EKS facade against moto's, side by side: the same boto3 script
//! (tests/py/eks_boto3.py `bench`: every operation of botocore's EKS model,
//! in order, ROUNDS times) against each server. Prints the operations each
//! answers successfully and the requests per second boto3 gets (one client,
//! sequential; boto3's own signing and parsing are part of every figure).
//! kemu runs with `--no-dataplane`: this measures the facade, not cluster
//! listeners. Asserts nothing.
//!
//! Needs `moto_server` (`pip install 'moto[server]'`). Run with
//! `cargo bench --bench eks` (builds kemu in release).

use std::io::BufRead;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ROUNDS: &str = "20";
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/eks_boto3.py");

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_kemu(run_dir: &std::path::Path) -> (Kill, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args([
            "--eks-port",
            "0",
            "--gke-port",
            "0",
            "--aks-port",
            "0",
            "--no-dataplane",
        ])
        .arg("--run-dir")
        .arg(run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kemu");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let ready: serde_json::Value = serde_json::from_str(&line).expect("ready line is JSON");
    let url = ready["eks"].as_str().expect("eks url").to_owned();
    (Kill(child), url)
}

fn start_moto() -> (Kill, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server is not installed: pip install 'moto[server]'");
    // Wait for its listener (an event, bounded), not for time to pass.
    let up = (0..200).any(|_| {
        let ok = TcpStream::connect(("127.0.0.1", port)).is_ok();
        if !ok {
            std::thread::sleep(Duration::from_millis(50));
        }
        ok
    });
    assert!(up, "moto_server did not listen on {port}");
    (Kill(child), format!("http://127.0.0.1:{port}"))
}

fn run(endpoint: &str, home: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("python3")
        .arg(SCRIPT)
        .args(args)
        .env("HOME", home)
        .env("AWS_CONFIG_FILE", home.join("aws-config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", home.join("aws-credentials"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL_EKS", endpoint)
        .env_remove("AWS_CA_BUNDLE")
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "eks_boto3.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn main() {
    let home = tempfile::tempdir().expect("tempdir");
    let (kemu, kemu_url) = start_kemu(&home.path().join("run"));
    let (moto, moto_url) = start_moto();
    println!(
        "EKS facade, boto3 {ROUNDS} rounds of every operation of the model (sequential client)\n"
    );
    println!("| server | operations answered OK (of 64) | requests | seconds | requests/s |");
    println!("|---|---|---|---|---|");
    let mut moto_failures = Vec::new();
    for (name, url) in [("kemu", &kemu_url), ("moto 5", &moto_url)] {
        let out = run(url, home.path(), &["bench", ROUNDS]);
        let r: serde_json::Value = serde_json::from_slice(&out).expect("bench JSON");
        let (requests, seconds) = (
            r["requests"].as_f64().unwrap_or(0.0),
            r["seconds"].as_f64().unwrap_or(0.0),
        );
        println!(
            "| {name} | {} | {requests} | {seconds:.2} | {:.0} |",
            r["ops"],
            requests / seconds.max(1e-9)
        );
        if name != "kemu" {
            let all: serde_json::Value =
                serde_json::from_slice(&run(url, home.path(), &["all-ops"])).unwrap_or_default();
            if let Some(m) = all.as_object() {
                moto_failures = m
                    .iter()
                    .filter(|(_, v)| v.as_str() != Some("ok"))
                    .map(|(k, v)| format!("{k} ({})", v.as_str().unwrap_or("?")))
                    .collect();
            }
        }
    }
    println!(
        "\nmoto's failures on a fresh server: {}",
        moto_failures.join(", ")
    );
    drop(kemu);
    drop(moto);
}
