//! `/version`: the Kubernetes version the cluster's cloud record names, as
//! `version.Info`, so an upgrade through a facade shows in kubectl.

use actix_web::{HttpResponse, web};
use kemu_k8s_types::{SERVED_MAJOR, SERVED_MINOR, SERVED_PATCH};
use serde_json::json;

use crate::engine::{ClusterContext, Engine};
use crate::error::ApiError;

/// Answers `version.Info` for the record's version. Every cluster is served
/// by the same API; only the reported version follows the record.
pub async fn get(
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let record = engine
        .registry()
        .get(&cluster.id)
        .map_err(|_| ApiError::ClusterGone(cluster.id.clone()))?;
    let (major, minor, patch) =
        parse(&record.version).unwrap_or((SERVED_MAJOR, SERVED_MINOR, SERVED_PATCH));
    Ok(HttpResponse::Ok().json(json!({
        "major": major.to_string(),
        "minor": minor.to_string(),
        "emulationMajor": major.to_string(),
        "emulationMinor": minor.to_string(),
        "minCompatibilityMajor": major.to_string(),
        "minCompatibilityMinor": minor.saturating_sub(1).to_string(),
        "gitVersion": format!("v{major}.{minor}.{patch}-{}-kemu", record.cloud()),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })))
}

/// `major.minor[.patch][-suffix]` (an optional leading `v`) as numbers; a
/// missing or non-numeric patch is 0. `None` when major or minor is not a
/// number, so the caller falls back to the served version.
fn parse(version: &str) -> Option<(u32, u32, u32)> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next().unwrap_or_default();
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn cloud_version_strings() {
        assert_eq!(parse("1.33"), Some((1, 33, 0)));
        assert_eq!(parse("1.33.5"), Some((1, 33, 5)));
        assert_eq!(parse("1.33.5-gke.1200"), Some((1, 33, 5)));
        assert_eq!(parse("v1.34.1"), Some((1, 34, 1)));
        assert_eq!(parse("latest"), None);
        assert_eq!(parse("1"), None);
        assert_eq!(parse(""), None);
    }
}
