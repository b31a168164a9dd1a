//! Add-ons: EKS-managed software from the catalog, one version at a time.

use serde_json::{Value, json};

use crate::error::Error;
use crate::resources::{get, insert};
use crate::state::{Kind, UpdateTarget};
use crate::wire::epoch;
use crate::{Call, Eks, catalog, update};

/// `configurationValues` must be JSON (or YAML, which kemu takes as given when
/// it is not JSON-looking).
fn check_configuration(v: Option<&str>) -> Result<(), Error> {
    match v {
        Some(s) if s.trim_start().starts_with('{') && serde_json::from_str::<Value>(s).is_err() => {
            Err(Error::InvalidParameter(
                "configurationValues is not valid JSON.".into(),
            ))
        }
        _ => Ok(()),
    }
}

fn version_of(name: &str, wanted: Option<&str>, cluster_version: &str) -> Result<String, Error> {
    let versions = catalog::addon_versions(name).ok_or_else(|| {
        Error::InvalidParameter(format!(
            "Addon {name} specified is not supported in {cluster_version} kubernetes version"
        ))
    })?;
    match wanted {
        None => Ok(versions[0].to_owned()),
        Some(v) if versions.contains(&v) => Ok(v.to_owned()),
        Some(v) => Err(Error::InvalidParameter(format!(
            "Addon version {v} specified is not supported for addon {name} in {cluster_version} kubernetes version"
        ))),
    }
}

/// CreateAddon.
pub fn create(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("addonName")?.to_owned();
    check_configuration(b.str("configurationValues"))?;
    eks.with_cluster(call, cluster, |rec, cs| {
        crate::nodegroup::require_cluster_active(rec)?;
        let version = version_of(&name, b.str("addonVersion"), &rec.version)?;
        let mut obj = json!({
            "addonName": name,
            "clusterName": cluster,
            "addonVersion": version,
            "health": { "issues": [] },
            "addonArn": call.arn(&format!("addon/{cluster}/{name}/{}", uuid::Uuid::new_v4())),
            "createdAt": epoch(call.now),
            "modifiedAt": epoch(call.now),
            "tags": b.string_map("tags")?,
        });
        for k in [
            "serviceAccountRoleArn",
            "configurationValues",
            "podIdentityAssociations",
            "namespaceConfig",
        ] {
            if let Some(v) = b.get(k) {
                obj[k] = v.clone();
            }
        }
        if cs.of(Kind::Addon).contains_key(&name) {
            return Err(Error::ResourceInUse(format!(
                "Addon already exists with name: {name}"
            )));
        }
        let out = insert(
            eks,
            call,
            cs,
            Kind::Addon,
            &name,
            obj,
            ("CREATING", "ACTIVE"),
        )?;
        Ok(json!({ "addon": out }))
    })
}

/// UpdateAddon.
pub fn update(eks: &Eks, call: &Call, cluster: &str, name: &str) -> Result<Value, Error> {
    let b = &call.body;
    check_configuration(b.str("configurationValues"))?;
    eks.with_cluster(call, cluster, |rec, cs| {
        let item = get(cs, Kind::Addon, cluster, name)?;
        if item.status() != "ACTIVE" && item.status() != "DEGRADED" {
            return Err(Error::ResourceInUse(format!(
                "Addon {name} is in {} status.",
                item.status()
            )));
        }
        let mut obj = item.obj.clone();
        let mut params = Vec::new();
        if let Some(v) = b.str("addonVersion") {
            let v = version_of(name, Some(v), &rec.version)?;
            params.push(("AddonVersion", v.clone()));
            obj.insert("addonVersion".into(), json!(v));
        }
        for (k, p) in [
            ("serviceAccountRoleArn", "ServiceAccountRoleArn"),
            ("configurationValues", "ConfigurationValues"),
            ("podIdentityAssociations", "PodIdentityAssociations"),
        ] {
            if let Some(v) = b.get(k) {
                obj.insert(k.into(), v.clone());
                params.push((
                    p,
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string()),
                ));
            }
        }
        if let Some(r) = b.str("resolveConflicts") {
            params.push(("ResolveConflicts", r.to_owned()));
        }
        obj.insert("modifiedAt".into(), epoch(call.now));
        let pending = eks.after(call.now, eks.settings.transition, Some("ACTIVE"));
        if pending.is_some() {
            obj.insert("status".into(), json!("UPDATING"));
        }
        if let Ok(item) = get(cs, Kind::Addon, cluster, name) {
            item.obj = obj;
            item.pending = pending;
        }
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Addon(name.to_owned()),
            "AddonUpdate",
            params,
        );
        Ok(json!({ "update": out }))
    })
}
