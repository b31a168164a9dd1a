//! The example host (examples/host.rs) mounts the three facades on its own
//! listeners; they share one registry and one data plane.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn example_binary() -> std::path::PathBuf {
    // cargo test builds examples beside the test binaries' deps directory.
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join("host"))
        .filter(|p| p.is_file())
        .expect("examples/host is built by `cargo test`")
}

#[actix_web::test]
async fn host_mounts_all_three_facades() {
    let mut child = Kill(
        Command::new(example_binary())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let urls: serde_json::Value = serde_json::from_str(&line).unwrap();
    let eks = urls["eks"].as_str().unwrap();

    let http = common::http_client();
    let host = http.get(format!("{eks}/host/health")).send().await.unwrap();
    assert_eq!(host.text().await.unwrap(), "host ok");

    // The cluster the host registered appears through the EKS facade, with a
    // live endpoint from the shared data plane (retry: the host registers it
    // right after printing its line).
    let mut cluster = serde_json::Value::Null;
    for _ in 0..100 {
        let resp = common::eks_signed(http.get(format!("{eks}/clusters/hosted")))
            .send()
            .await
            .unwrap();
        if resp.status() == 200 {
            cluster = resp.json().await.unwrap();
            break;
        }
        tokio::task::yield_now().await;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(cluster["cluster"]["status"], "ACTIVE", "{cluster}");
    assert!(cluster["cluster"]["certificateAuthority"]["data"].is_string());

    let gke = urls["gke"].as_str().unwrap();
    let resp = http
        .get(format!("{gke}/v1/projects/p/locations/-/clusters"))
        .bearer_auth("any-token")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    let aks = urls["aks"].as_str().unwrap();
    let client = common::arm_client(urls["ca"].as_str().unwrap());
    let resp = client
        .get(format!(
            "{aks}/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/none?api-version=2025-01-01"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}
