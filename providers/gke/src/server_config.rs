//! GKE versions and `serverConfig`: which master and node versions exist, and
//! what each release channel defaults to.

use serde_json::{Value, json};

use crate::error::Error;

/// Versions kemu offers, newest first. The data plane serves one Kubernetes
/// API whatever version a cluster names.
pub const VERSIONS: &[&str] = &[
    "1.34.1-gke.1829001",
    "1.33.5-gke.1308000",
    "1.32.9-gke.1207000",
    "1.31.13-gke.1023000",
];

/// The default version of new clusters (and of the REGULAR channel).
pub const DEFAULT_VERSION: &str = VERSIONS[0];

/// Resolves a requested version: empty, `-` and `latest` are the default; a
/// prefix (`1.33`, `1.33.5`) picks the newest offered version it matches; any
/// other well-formed `1.N.P[-gke.B]` is kept as given (gcloud does not check
/// `--cluster-version` against `validMasterVersions`, and neither does kemu).
pub fn resolve(requested: &str, field: &str) -> Result<String, Error> {
    match requested {
        "" | "-" | "latest" => return Ok(DEFAULT_VERSION.to_owned()),
        _ => {}
    }
    if let Some(v) = VERSIONS.iter().find(|v| {
        **v == requested
            || v.starts_with(&format!("{requested}."))
            || v.starts_with(&format!("{requested}-"))
    }) {
        return Ok((*v).to_owned());
    }
    let (release, build) = requested.split_once("-gke.").unwrap_or((requested, "0"));
    let parts: Vec<&str> = release.split('.').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if (2..=3).contains(&parts.len()) && parts.iter().all(|p| numeric(p)) && numeric(build) {
        Ok(requested.to_owned())
    } else {
        Err(Error::InvalidArgument(format!(
            "Invalid value for field \"{field}\": \"{requested}\". Version \"{requested}\" is invalid."
        )))
    }
}

/// The Kubernetes minor of a GKE version, as the shared record keeps it
/// (`1.33.5-gke.1308000` → `1.33`).
pub fn minor(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// The `ServerConfig` resource.
pub fn render() -> Value {
    let channel = |name: &str, default: &str| json!({ "channel": name, "defaultVersion": default, "validVersions": VERSIONS });
    json!({
        "defaultClusterVersion": DEFAULT_VERSION,
        "validMasterVersions": VERSIONS,
        "validNodeVersions": VERSIONS,
        "defaultImageType": "COS_CONTAINERD",
        "validImageTypes": ["COS_CONTAINERD", "UBUNTU_CONTAINERD", "WINDOWS_LTSC_CONTAINERD"],
        "channels": [
            channel("RAPID", VERSIONS[0]),
            channel("REGULAR", DEFAULT_VERSION),
            channel("STABLE", VERSIONS[1]),
            channel("EXTENDED", VERSIONS[2]),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_resolve_like_gke() {
        assert_eq!(resolve("", "v").unwrap(), DEFAULT_VERSION);
        assert_eq!(resolve("1.33", "v").unwrap(), "1.33.5-gke.1308000");
        assert_eq!(resolve("1.32.5", "v").unwrap(), "1.32.5");
        assert!(resolve("banana", "v").is_err());
        assert_eq!(minor("1.33.5-gke.1308000"), "1.33");
    }
}
