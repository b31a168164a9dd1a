//! The google-cloud-container Python client (REST transport) against the GKE
//! facade: `name=`/`parent=` calls and the legacy zone-style flattened
//! arguments, operations polling, and the errors it raises.

mod common;
mod gke_support;

use common::{Sandbox, text};
use gke_support::{KemuProcess, PROJECT, TOKEN, python};

#[test]
fn google_cloud_container_drives_clusters_node_pools_and_operations() {
    let kemu = KemuProcess::start(&[]);
    let sb = Sandbox::new();
    let out = python(
        &sb,
        "gke_client_flow.py",
        &[&kemu.ready.gke, PROJECT, TOKEN],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("each DONE on its first get"),
        "{}",
        text(&out)
    );
}

#[test]
fn terraform_call_sequences_replay_cleanly() {
    let kemu = KemuProcess::start(&[]);
    let sb = Sandbox::new();
    let out = python(
        &sb,
        "gke_terraform_replay.py",
        &[&kemu.ready.gke, PROJECT, TOKEN],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("replayed"),
        "{}",
        text(&out)
    );
}
