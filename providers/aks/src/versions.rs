//! The Kubernetes versions the facade offers, as AKS names them: a minor
//! (`1.34`) that the cluster record keeps, and the patch it runs (`1.34.1`).

use serde_json::{Value, json};

use crate::Error;

/// Offered minors and the patch each runs, oldest first.
pub const SUPPORTED: [(&str, &str); 3] =
    [("1.32", "1.32.9"), ("1.33", "1.33.5"), ("1.34", "1.34.1")];

/// The minor a cluster gets when the request leaves `kubernetesVersion` empty.
pub const DEFAULT_MINOR: &str = "1.34";

/// Resolves a requested version (empty, `1.33` or `1.33.5`) to its minor.
pub fn resolve(requested: &str) -> Result<&'static str, Error> {
    if requested.is_empty() {
        return Ok(DEFAULT_MINOR);
    }
    SUPPORTED
        .iter()
        .find(|(minor, patch)| *minor == requested || *patch == requested)
        .map(|(minor, _)| *minor)
        .ok_or_else(|| Error::VersionNotSupported(requested.to_owned()))
}

/// The patch a minor runs (the minor itself if kemu does not offer it).
pub fn patch(minor: &str) -> String {
    SUPPORTED
        .iter()
        .find(|(m, _)| *m == minor)
        .map_or_else(|| minor.to_owned(), |(_, p)| (*p).to_owned())
}

/// Orders minors numerically (`1.9` < `1.10`).
pub fn key(minor: &str) -> (u32, u32) {
    let mut parts = minor.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The upgrades offered from `minor`: the next minor only, as AKS allows.
pub fn upgrades(minor: &str) -> Vec<Value> {
    SUPPORTED
        .iter()
        .filter(|(m, _)| key(m) > key(minor) && key(m).1 <= key(minor).1 + 1)
        .map(|(_, p)| json!({ "kubernetesVersion": p, "isPreview": false }))
        .collect()
}

/// `locations/{l}/kubernetesVersions`, the list `az aks get-versions` prints.
pub fn list() -> Value {
    let values: Vec<Value> = SUPPORTED
        .iter()
        .map(|(minor, patch)| {
            let upgrades: Vec<Value> = upgrades(minor)
                .iter()
                .filter_map(|u| u["kubernetesVersion"].as_str().map(|s| json!(s)))
                .collect();
            json!({
                "version": minor,
                "isDefault": *minor == DEFAULT_MINOR,
                "isPreview": false,
                "capabilities": { "supportPlan": ["KubernetesOfficial"] },
                "patchVersions": { *patch: { "upgrades": upgrades } },
            })
        })
        .collect();
    json!({ "values": values })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_resolve_and_upgrade_one_minor() {
        assert_eq!(resolve("").unwrap(), DEFAULT_MINOR);
        assert_eq!(resolve("1.33.5").unwrap(), "1.33");
        assert!(resolve("1.20").is_err());
        assert_eq!(upgrades("1.32").len(), 1);
        assert!(upgrades("1.34").is_empty());
    }
}
