//! Cluster operations: create, describe, list, delete, the three kinds of
//! cluster update, and registration of external clusters.

use kemu_shared::{ClusterRecord, ClusterSpec, Lifecycle};
use serde_json::{Map, Value, json};

use crate::catalog::{self, DEFAULT_VERSION};
use crate::error::Error;
use crate::render::{self, is_registered};
use crate::state::{Kind, UpdateTarget};
use crate::wire::{page_response, paginate};
use crate::{Call, Eks, access, update};

const AUTH_MODES: [&str; 3] = ["CONFIG_MAP", "API", "API_AND_CONFIG_MAP"];

/// The order EKS lets authentication modes move in.
fn rank(mode: &str) -> usize {
    match mode {
        "CONFIG_MAP" => 0,
        "API_AND_CONFIG_MAP" => 1,
        _ => 2,
    }
}

/// EKS cluster names: a letter or digit, then letters, digits, `-` and `_`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 100
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn object(call: &Call, key: &str) -> Result<Option<Map<String, Value>>, Error> {
    match call.body.get(key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(Error::InvalidParameter(format!("{key} must be an object."))),
    }
}

/// A short hex id, as EKS uses in issuer URLs and resource names.
fn hex_id(len: usize) -> String {
    uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .to_ascii_uppercase()[..len]
        .to_owned()
}

/// An IAM role ARN: `arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME`.
pub fn is_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [_, partition, "iam", "", account, resource] = parts[..] else {
        return false;
    };
    partition.starts_with("aws")
        && !account.is_empty()
        && account.bytes().all(|b| b.is_ascii_digit())
        && resource
            .strip_prefix("role/")
            .is_some_and(|name| !name.is_empty() && !name.ends_with('/'))
}

/// CreateCluster.
pub fn create(eks: &Eks, call: &Call) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("name")?;
    if !valid_name(name) {
        return Err(Error::InvalidParameter(format!(
            "The cluster name {name} is invalid: it must start with a letter or digit and contain only letters, digits, hyphens and underscores (at most 100)."
        )));
    }
    let role = b.required("roleArn")?;
    if !is_role_arn(role) {
        return Err(Error::InvalidParameter(format!(
            "Invalid Role Arn: '{role}'"
        )));
    }
    let vpc = object(call, "resourcesVpcConfig")?
        .ok_or_else(|| Error::InvalidParameter("resourcesVpcConfig is required.".into()))?;
    if vpc
        .get("subnetIds")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        return Err(Error::InvalidParameter(
            "Subnets are required: resourcesVpcConfig.subnetIds names none.".into(),
        ));
    }
    let version = b.str("version").unwrap_or(DEFAULT_VERSION);
    if !catalog::supported_version(version) {
        return Err(Error::InvalidParameter(catalog::unsupported_version(
            version,
        )));
    }
    let tags = b.string_map("tags")?;
    let access = object(call, "accessConfig")?.unwrap_or_default();
    let mode = access
        .get("authenticationMode")
        .and_then(Value::as_str)
        .unwrap_or("API_AND_CONFIG_MAP");
    if !AUTH_MODES.contains(&mode) {
        return Err(Error::InvalidParameter(format!(
            "Unsupported authentication mode {mode}."
        )));
    }
    let bootstrap = access
        .get("bootstrapClusterCreatorAdminPermissions")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let subnets = vpc.get("subnetIds").cloned().unwrap_or(json!([]));
    let id = uuid::Uuid::new_v4().to_string();
    let mut extra = json!({
        "id": id,
        "roleArn": role,
        "platformVersion": catalog::platform_version(version),
        "resourcesVpcConfig": {
            "subnetIds": subnets,
            "securityGroupIds": vpc.get("securityGroupIds").cloned().unwrap_or(json!([])),
            "clusterSecurityGroupId": format!("sg-{}", hex_id(17).to_ascii_lowercase()),
            "vpcId": format!("vpc-{}", hex_id(17).to_ascii_lowercase()),
            "endpointPublicAccess": vpc.get("endpointPublicAccess").and_then(Value::as_bool).unwrap_or(true),
            "endpointPrivateAccess": vpc.get("endpointPrivateAccess").and_then(Value::as_bool).unwrap_or(false),
            "publicAccessCidrs": vpc.get("publicAccessCidrs").cloned().unwrap_or(json!(["0.0.0.0/0"])),
        },
        "kubernetesNetworkConfig": {
            "serviceIpv4Cidr": b.get("kubernetesNetworkConfig").and_then(|k| k.get("serviceIpv4Cidr")).cloned().unwrap_or(json!("10.100.0.0/16")),
            "ipFamily": b.get("kubernetesNetworkConfig").and_then(|k| k.get("ipFamily")).cloned().unwrap_or(json!("ipv4")),
            "elasticLoadBalancing": { "enabled": false },
        },
        "logging": b.get("logging").cloned().unwrap_or(json!({ "clusterLogging": [{
            "types": ["api", "audit", "authenticator", "controllerManager", "scheduler"],
            "enabled": false,
        }]})),
        "identity": { "oidc": { "issuer": format!(
            "https://oidc.eks.{}.amazonaws.com/id/{}", call.region(), hex_id(32)
        )}},
        "accessConfig": { "authenticationMode": mode, "bootstrapClusterCreatorAdminPermissions": bootstrap },
        "upgradePolicy": b.get("upgradePolicy").cloned().unwrap_or(json!({ "supportType": "EXTENDED" })),
        "health": { "issues": [] },
    });
    if let Value::Object(m) = &mut extra {
        for key in [
            "encryptionConfig",
            "clientRequestToken",
            "zonalShiftConfig",
            "computeConfig",
            "storageConfig",
            "remoteNetworkConfig",
            "deletionProtection",
            "controlPlaneScalingConfig",
            "outpostConfig",
        ] {
            if let Some(v) = b.get(key) {
                m.insert(key.into(), v.clone());
            }
        }
    }
    eks.prune();
    let record = eks.registry().create(ClusterSpec {
        scope: call.scope.clone(),
        name: name.to_owned(),
        version: version.to_owned(),
        node_pools: vec![],
        tags,
        provisioning: eks.settings.provisioning,
        extra,
    })?;
    tracing::info!(cluster = %record.name, "EKS cluster created");
    if bootstrap {
        eks.with_cluster(call, name, |rec, cs| {
            cs.creator_arn = Some(call.caller.clone());
            // The API modes show the creator as an access entry; CONFIG_MAP
            // makes it admin without one.
            if mode != "CONFIG_MAP" {
                access::bootstrap_admin(call, rec, cs);
            }
            Ok(())
        })?;
    }
    Ok(json!({ "cluster": render::cluster(&record) }))
}

/// DescribeCluster.
pub fn describe(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let record = eks.registry().find(&call.scope, name)?;
    Ok(json!({ "cluster": render::cluster(&record) }))
}

/// ListClusters: created clusters, and registered ones with `include=all`.
pub fn list(eks: &Eks, call: &Call) -> Result<Value, Error> {
    let all = call.query.all("include").iter().any(|i| i == "all");
    let names: Vec<Value> = eks
        .registry()
        .list(|c| c.scope == call.scope && (all || !is_registered(c)))
        .into_iter()
        .map(|c| json!(c.name))
        .collect();
    let (page, next) = paginate(&names, &call.query, 100)?;
    Ok(page_response("clusters", page, next))
}

fn start_delete(eks: &Eks, record: &ClusterRecord) -> Result<Value, Error> {
    let grace = eks.settings.deletion_grace;
    let deleted = eks.registry().delete(&record.id, grace)?;
    if grace.is_zero() {
        eks.forget(&record.id);
    }
    tracing::info!(cluster = %record.name, "EKS cluster deleted");
    Ok(json!({ "cluster": render::cluster(&deleted) }))
}

/// DeleteCluster: refused while node groups or Fargate profiles remain, as EKS
/// does; `DELETING` for the configured grace, then gone.
pub fn delete(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let record = eks.with_cluster(call, name, |rec, cs| {
        if is_registered(rec) {
            return Err(Error::InvalidRequest(format!(
                "Cluster {name} is a registered cluster; use DeregisterCluster."
            )));
        }
        if rec.extra.get("deletionProtection").and_then(Value::as_bool) == Some(true) {
            return Err(Error::InvalidRequest(format!(
                "Cluster {name} has deletion protection enabled; disable it with UpdateClusterConfig first."
            )));
        }
        if cs.list(Kind::Nodegroup).next().is_some() {
            return Err(Error::ResourceInUse(format!("Cluster has nodegroups attached: {name}.")));
        }
        if cs.list(Kind::FargateProfile).next().is_some() {
            return Err(Error::ResourceInUse(format!(
                "Cluster has fargate profiles attached: {name}."
            )));
        }
        Ok(rec.clone())
    })?;
    if record.lifecycle == Lifecycle::Deleting {
        return Ok(json!({ "cluster": render::cluster(&record) }));
    }
    start_delete(eks, &record)
}

/// Refuses a change unless the cluster is `ACTIVE`, as EKS does.
fn require_active(record: &ClusterRecord) -> Result<(), Error> {
    match record.lifecycle {
        Lifecycle::Running => Ok(()),
        l => Err(Error::ResourceInUse(format!(
            "Cluster {} is in {} status; the update is not allowed now.",
            record.name,
            render::status(l)
        ))),
    }
}

/// Marks the cluster `UPDATING` until the update completes (if it takes time).
fn mark_updating(eks: &Eks, call: &Call, record: &ClusterRecord) -> Result<(), Error> {
    let d = eks.settings.transition;
    if d.is_zero() {
        return Ok(());
    }
    let at = call.now + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
    eks.registry().update(&record.id, |c| {
        c.lifecycle = Lifecycle::Updating;
        c.pending = Some((at, Some(Lifecycle::Running)));
        Ok(())
    })?;
    Ok(())
}

fn merge(extra: &mut Value, key: &str, patch: &Value) {
    if let Value::Object(m) = extra {
        match (m.get_mut(key), patch) {
            (Some(Value::Object(old)), Value::Object(new)) => {
                for (k, v) in new {
                    old.insert(k.clone(), v.clone());
                }
            }
            _ => {
                m.insert(key.to_owned(), patch.clone());
            }
        }
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// UpdateClusterConfig: exactly one kind of change per call, as EKS requires.
pub fn update_config(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let b = &call.body;
    const KEYS: [(&str, &str, &str); 11] = [
        ("logging", "LoggingUpdate", "ClusterLogging"),
        ("resourcesVpcConfig", "EndpointAccessUpdate", ""),
        ("accessConfig", "AccessConfigUpdate", "AuthenticationMode"),
        ("upgradePolicy", "UpgradePolicyUpdate", "UpgradePolicy"),
        (
            "zonalShiftConfig",
            "ZonalShiftConfigUpdate",
            "ZonalShiftConfig",
        ),
        ("computeConfig", "AutoModeUpdate", "ComputeConfig"),
        (
            "kubernetesNetworkConfig",
            "AutoModeUpdate",
            "KubernetesNetworkConfig",
        ),
        ("storageConfig", "AutoModeUpdate", "StorageConfig"),
        (
            "remoteNetworkConfig",
            "RemoteNetworkConfigUpdate",
            "RemoteNetworkConfig",
        ),
        (
            "deletionProtection",
            "DeletionProtectionUpdate",
            "DeletionProtection",
        ),
        (
            "controlPlaneScalingConfig",
            "ControlPlaneScalingConfigUpdate",
            "UpdatedTier",
        ),
    ];
    let present: Vec<_> = KEYS.iter().filter(|k| b.get(k.0).is_some()).collect();
    let Some(&&(key, mut kind, param)) = present.first() else {
        return Err(Error::InvalidParameter("No changes needed".into()));
    };
    let value = b.get(key).cloned().unwrap_or(Value::Null);
    eks.with_cluster(call, name, |rec, cs| {
        require_active(rec)?;
        let mut params = Vec::new();
        match key {
            "resourcesVpcConfig" => {
                let v = value.as_object().cloned().unwrap_or_default();
                if v.contains_key("subnetIds") || v.contains_key("securityGroupIds") {
                    kind = "VpcConfigUpdate";
                }
                for (field, p) in [
                    ("endpointPublicAccess", "EndpointPublicAccess"),
                    ("endpointPrivateAccess", "EndpointPrivateAccess"),
                    ("publicAccessCidrs", "PublicAccessCidrs"),
                    ("subnetIds", "Subnets"),
                    ("securityGroupIds", "SecurityGroups"),
                ] {
                    if let Some(x) = v.get(field) {
                        params.push((p, text(x)));
                    }
                }
            }
            "accessConfig" => {
                let mode = value.get("authenticationMode").and_then(Value::as_str);
                let current = rec
                    .extra
                    .pointer("/accessConfig/authenticationMode")
                    .and_then(Value::as_str)
                    .unwrap_or("API_AND_CONFIG_MAP");
                match mode {
                    Some(m) if !AUTH_MODES.contains(&m) => {
                        return Err(Error::InvalidParameter(format!(
                            "Unsupported authentication mode {m}."
                        )));
                    }
                    // EKS only moves CONFIG_MAP → API_AND_CONFIG_MAP → API.
                    Some(m) if rank(m) < rank(current) => {
                        return Err(Error::InvalidParameter(format!(
                            "Unsupported authentication mode update from {current} to {m}"
                        )));
                    }
                    Some(m) if m == current => {
                        return Err(Error::InvalidParameter("No changes needed".into()));
                    }
                    Some(m) => params.push((param, m.to_owned())),
                    None => return Err(Error::InvalidParameter("No changes needed".into())),
                }
            }
            _ => params.push((param, text(&value))),
        }
        let out = update::record(eks, call, cs, UpdateTarget::Cluster, kind, params);
        let mut extra = rec.extra.clone();
        merge(&mut extra, key, &value);
        if key == "computeConfig" || key == "storageConfig" || key == "kubernetesNetworkConfig" {
            // Auto Mode changes may come together; keep each one given.
            for (k, _, _) in present.iter().skip(1).copied() {
                if let Some(v) = b.get(k) {
                    merge(&mut extra, k, v);
                }
            }
        }
        eks.registry().update(&rec.id, |c| {
            c.extra = extra;
            Ok(())
        })?;
        mark_updating(eks, call, rec)?;
        Ok(json!({ "update": out }))
    })
}

/// UpdateClusterVersion: one minor at a time, as EKS allows.
pub fn update_version(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let version = call.body.required("version")?.to_owned();
    eks.with_cluster(call, name, |rec, cs| {
        require_active(rec)?;
        if !catalog::supported_version(&version) {
            return Err(Error::InvalidParameter(catalog::unsupported_version(
                &version,
            )));
        }
        if catalog::minor(&version) != catalog::minor(&rec.version).map(|m| m + 1) {
            return Err(Error::InvalidParameter(format!(
                "Unsupported Kubernetes minor version update from {} to {version}",
                rec.version
            )));
        }
        let platform = catalog::platform_version(&version);
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Cluster,
            "VersionUpdate",
            vec![
                ("Version", version.clone()),
                ("PlatformVersion", platform.to_owned()),
            ],
        );
        let mut extra = rec.extra.clone();
        extra["platformVersion"] = json!(platform);
        eks.registry().update(&rec.id, |c| {
            c.version = version.clone();
            c.extra = extra;
            Ok(())
        })?;
        mark_updating(eks, call, rec)?;
        Ok(json!({ "update": out }))
    })
}

/// AssociateEncryptionConfig: secrets encryption, once per cluster.
pub fn associate_encryption(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let config = call
        .body
        .get("encryptionConfig")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .cloned()
        .ok_or_else(|| Error::InvalidParameter("encryptionConfig is required.".into()))?;
    eks.with_cluster(call, name, |rec, cs| {
        require_active(rec)?;
        if rec.extra.get("encryptionConfig").is_some() {
            return Err(Error::InvalidRequest(
                "Encryption is already enabled on the cluster".into(),
            ));
        }
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Cluster,
            "AssociateEncryptionConfig",
            vec![("EncryptionConfig", config.to_string())],
        );
        let mut extra = rec.extra.clone();
        extra["encryptionConfig"] = config.clone();
        eks.registry().update(&rec.id, |c| {
            c.extra = extra;
            Ok(())
        })?;
        mark_updating(eks, call, rec)?;
        Ok(json!({ "update": out }))
    })
}

/// RegisterCluster: an external cluster, `PENDING` until a connector agent
/// connects (none ever does in kemu).
pub fn register(eks: &Eks, call: &Call) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("name")?;
    if !valid_name(name) {
        return Err(Error::InvalidParameter(format!(
            "The cluster name {name} is invalid."
        )));
    }
    let connector = object(call, "connectorConfig")?
        .ok_or_else(|| Error::InvalidParameter("connectorConfig is required.".into()))?;
    let role = connector
        .get("roleArn")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParameter("connectorConfig.roleArn is required.".into()))?;
    let provider = connector
        .get("provider")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParameter("connectorConfig.provider is required.".into()))?;
    let expiry = call.now + chrono::Duration::days(3);
    let extra = json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "connectorConfig": {
            "activationId": uuid::Uuid::new_v4().to_string(),
            "activationCode": hex_id(32),
            "activationExpiry": crate::wire::epoch(expiry),
            "provider": provider,
            "roleArn": role,
        },
        "health": { "issues": [] },
    });
    let record = eks.registry().create(ClusterSpec {
        scope: call.scope.clone(),
        name: name.to_owned(),
        version: DEFAULT_VERSION.to_owned(),
        node_pools: vec![],
        tags: b.string_map("tags")?,
        provisioning: std::time::Duration::ZERO,
        extra,
    })?;
    Ok(json!({ "cluster": render::cluster(&record) }))
}

/// DeregisterCluster.
pub fn deregister(eks: &Eks, call: &Call, name: &str) -> Result<Value, Error> {
    let record = eks.registry().find(&call.scope, name)?;
    if !is_registered(&record) {
        return Err(Error::InvalidRequest(format!(
            "Cluster {name} was not registered; use DeleteCluster."
        )));
    }
    start_delete(eks, &record)
}
