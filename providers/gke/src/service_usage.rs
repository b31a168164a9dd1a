//! Service Usage `services.get`: gcloud asks whether the container API is
//! enabled before `clusters create`; every service is, on kemu.

use serde_json::{Value, json};

use crate::wire;

/// The Service resource, ENABLED.
pub fn get(project: &str, service: &str) -> Value {
    let parent = format!("projects/{}", wire::project_number(project));
    json!({
        "name": format!("{parent}/services/{service}"),
        "parent": parent,
        "config": { "name": service },
        "state": "ENABLED",
    })
}
