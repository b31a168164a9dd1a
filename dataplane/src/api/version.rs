//! `/version`: the build of the served Kubernetes minor, as `version.Info`.

use actix_web::{HttpResponse, web};
use kemu_k8s_types::{SERVED_MAJOR, SERVED_MINOR, SERVED_PATCH};
use serde_json::json;

use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;

/// Answers `version.Info` for the served minor, whatever version the cloud
/// record names (kemu serves one API for every cluster).
pub async fn get(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    engine
        .registry()
        .get(&cluster.id)
        .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))?;
    Ok(HttpResponse::Ok().json(json!({
        "major": SERVED_MAJOR.to_string(),
        "minor": SERVED_MINOR.to_string(),
        "emulationMajor": SERVED_MAJOR.to_string(),
        "emulationMinor": SERVED_MINOR.to_string(),
        "minCompatibilityMajor": SERVED_MAJOR.to_string(),
        "minCompatibilityMinor": (SERVED_MINOR - 1).to_string(),
        "gitVersion": format!("v{SERVED_MAJOR}.{SERVED_MINOR}.{SERVED_PATCH}-kemu"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })))
}
