//! Managed cluster operations (`Microsoft.ContainerService/managedClusters`).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use base64::Engine;
use kemu_shared::kubeconfig::UserAuth;
use kemu_shared::{ClusterRecord, ClusterSpec, Lifecycle, OwnerScope};
use serde_json::{Map, Value, json};

use crate::agentpool::{self, PoolSet};
use crate::render::{self, Extra};
use crate::router::{ClusterPath, GroupPath};
use crate::{Aks, Ctx, Error, group, location, operation, versions};

const KIND: &str = "Microsoft.ContainerService/managedClusters";

/// Properties kemu computes; never stored from a request.
const SERVER_OWNED: [&str; 11] = [
    "identityProfile",
    "agentPoolProfiles",
    "provisioningState",
    "powerState",
    "kubernetesVersion",
    "currentKubernetesVersion",
    "fqdn",
    "azurePortalFQDN",
    "privateFQDN",
    "maxAgentPools",
    "nodeResourceGroup",
];

fn scope(path: &ClusterPath) -> OwnerScope {
    OwnerScope::Aks {
        subscription: path.subscription.clone(),
        resource_group: path.resource_group.clone(),
        location: String::new(),
    }
}

/// The cluster at `path`, or ARM's `ResourceNotFound`. Its `extra` is an
/// object (clusters preloaded without AKS fields get an empty one), so
/// handlers can write AKS fields into a draft without checking.
pub fn find(aks: &Aks, path: &ClusterPath) -> Result<ClusterRecord, Error> {
    let mut record =
        aks.registry
            .find(&scope(path), &path.name)
            .map_err(|_| Error::ResourceNotFound {
                kind: KIND.into(),
                name: path.name.clone(),
                resource_group: path.resource_group.clone(),
            })?;
    if !record.extra.is_object() {
        record.extra = json!({});
    }
    if !record.extra[Extra::PROPERTIES].is_object() {
        record.extra[Extra::PROPERTIES] = json!({});
    }
    Ok(record)
}

/// Refuses a write while another one is in progress, as AKS does.
pub fn require_idle(record: &ClusterRecord) -> Result<(), Error> {
    let what = match record.lifecycle {
        Lifecycle::Provisioning => "create",
        Lifecycle::Updating => "update",
        Lifecycle::Deleting => "delete",
        Lifecycle::Running | Lifecycle::Failed => return Ok(()),
    };
    Err(Error::OperationNotAllowed(format!(
        "Operation is not allowed because there's an in progress {what} managed cluster operation on managed cluster '{}'. Please wait for it to finish before starting a new operation.",
        record.name
    )))
}

/// Marks a write in progress for the configured delay (none by default).
pub fn begin_update(aks: &Aks, draft: &mut ClusterRecord) {
    let delay = aks.config.provisioning_delay;
    if delay.is_zero() {
        draft.lifecycle = Lifecycle::Running;
        draft.pending = None;
    } else {
        let done =
            aks.registry.clock().now() + chrono::Duration::from_std(delay).unwrap_or_default();
        draft.lifecycle = Lifecycle::Updating;
        draft.pending = Some((done, Some(Lifecycle::Running)));
    }
}

/// Writes a validated draft back to the registry.
pub fn commit(aks: &Aks, draft: ClusterRecord) -> Result<ClusterRecord, Error> {
    let (_, record) = aks.registry.update(&draft.id, |c| {
        c.version = draft.version.clone();
        c.node_pools = draft.node_pools.clone();
        c.tags = draft.tags.clone();
        c.extra = draft.extra.clone();
        c.lifecycle = draft.lifecycle;
        c.pending = draft.pending;
        Ok(())
    })?;
    Ok(record)
}

fn parse_tags(body: &Value) -> Result<Option<std::collections::BTreeMap<String, String>>, Error> {
    match &body["tags"] {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(
            map.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect(),
        )),
        _ => Err(Error::InvalidRequestContent(
            "tags must be an object of strings".into(),
        )),
    }
}

/// The request's properties kemu keeps to echo back.
fn echoed(props: &Map<String, Value>) -> Value {
    Value::Object(
        props
            .iter()
            .filter(|(k, _)| !SERVER_OWNED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Applies every `agentPoolProfiles[]` entry; the first pool is the System
/// pool when the request names none.
fn apply_profiles(
    set: &mut PoolSet<'_>,
    props: &Map<String, Value>,
    creating: bool,
) -> Result<(), Error> {
    let profiles = props
        .get("agentPoolProfiles")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if creating && profiles.is_empty() {
        return Err(Error::InvalidParameter(
            "The value of parameter agentPoolProfiles is invalid: a managed cluster needs at least one agent pool.".into(),
        ));
    }
    let any_system = profiles.iter().any(|p| p["mode"] == "System");
    for (i, profile) in profiles.iter().enumerate() {
        let mut p = profile.as_object().cloned().unwrap_or_default();
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if creating && i == 0 && !any_system && p.get("mode").is_none_or(Value::is_null) {
            p.insert("mode".into(), json!("System"));
        }
        agentpool::apply(set, &name, &p)?;
    }
    if !set.pools.iter().any(|p| {
        p.labels
            .get("kubernetes.azure.com/mode")
            .map(String::as_str)
            == Some("system")
    }) {
        return Err(Error::InvalidParameter(
            "A managed cluster must have at least one agent pool in System mode.".into(),
        ));
    }
    Ok(())
}

/// `PUT`: create (201) or update (200) — scale through
/// `agentPoolProfiles[].count`, upgrade through `kubernetesVersion`, tags.
pub fn put(aks: &Aks, ctx: &Ctx, path: &ClusterPath, body: &Value) -> Result<HttpResponse, Error> {
    let props = body["properties"].as_object().cloned().unwrap_or_default();
    let requested = props
        .get("kubernetesVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let minor = versions::resolve(&requested)?;
    let tags = parse_tags(body)?;
    let (status, record) = match find(aks, path) {
        Ok(existing) => {
            // A PUT replaces the whole resource: its location too is required.
            let location = body["location"]
                .as_str()
                .filter(|l| !l.is_empty())
                .ok_or(Error::LocationRequired)?;
            location::for_resource(location, "Microsoft.ContainerService/managedClusters")?;
            require_idle(&existing)?;
            if versions::key(minor) < versions::key(&existing.version) {
                return Err(Error::OperationNotAllowed(format!(
                    "Downgrading the Kubernetes version of managed cluster '{}' from {} to {requested} is not allowed.",
                    existing.name, existing.version
                )));
            }
            let mut draft = existing.clone();
            draft.version = minor.to_owned();
            let node_rg = render::node_resource_group(&existing);
            apply_profiles(
                &mut agentpool::pool_set(&mut draft, &node_rg),
                &props,
                false,
            )?;
            if let Some(tags) = tags {
                draft.tags = tags;
            }
            draft.extra[Extra::PROPERTIES] = echoed(&props);
            draft.extra[Extra::VERSION] = json!(requested);
            if body["sku"].is_object() {
                draft.extra[Extra::SKU] = body["sku"].clone();
            }
            begin_update(aks, &mut draft);
            (StatusCode::OK, commit(aks, draft)?)
        }
        Err(_) => (
            StatusCode::CREATED,
            create(aks, path, body, &props, minor, &requested, tags)?,
        ),
    };
    let op = operation::start(aks);
    let state = if status == StatusCode::CREATED {
        "Creating"
    } else {
        "Updating"
    };
    let out = operation::in_progress(render::managed_cluster(&record), state);
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, status, sub, location, &op, false).json(out))
}

fn create(
    aks: &Aks,
    path: &ClusterPath,
    body: &Value,
    props: &Map<String, Value>,
    minor: &str,
    requested: &str,
    tags: Option<std::collections::BTreeMap<String, String>>,
) -> Result<ClusterRecord, Error> {
    let name = &path.name;
    let valid_name = (1..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !valid_name {
        return Err(Error::InvalidParameter(format!(
            "The value of parameter managedClusters name '{name}' is invalid: it must be 1 to 63 letters, digits, hyphens and underscores, starting and ending with a letter or digit."
        )));
    }
    let location = body["location"]
        .as_str()
        .filter(|l| !l.is_empty())
        .ok_or(Error::LocationRequired)?;
    let location =
        location::for_resource(location, "Microsoft.ContainerService/managedClusters")?.to_owned();
    let group = group::find(aks, &path.subscription, &path.resource_group)?;
    let scope = OwnerScope::Aks {
        subscription: group.subscription.clone(),
        resource_group: group.name.clone(),
        location: location.clone(),
    };
    let node_rg = format!("MC_{}_{}_{location}", group.name, path.name);
    let mut pools = Vec::new();
    let mut pool_extra = json!({});
    apply_profiles(
        &mut PoolSet {
            pools: &mut pools,
            extra: &mut pool_extra,
            location: &location,
            node_resource_group: &node_rg,
            version: minor,
        },
        props,
        true,
    )?;
    let mut identity = match &body["identity"] {
        Value::Object(_) => body["identity"].clone(),
        _ => json!({ "type": "SystemAssigned" }),
    };
    if identity["type"] == "SystemAssigned" {
        identity["principalId"] = json!(uuid::Uuid::new_v4().to_string());
        identity["tenantId"] = json!(aks.config.tenant);
    }
    let mut kept = echoed(props);
    if kept["dnsPrefix"].as_str().is_none_or(str::is_empty) {
        kept["dnsPrefix"] = json!(render::default_dns_prefix(
            &path.name,
            &group.name,
            &group.subscription
        ));
    }
    let extra = json!({
        Extra::PROPERTIES: kept,
        Extra::VERSION: requested,
        Extra::SKU: body["sku"].is_object().then(|| body["sku"].clone()),
        Extra::IDENTITY: identity,
        Extra::POWER: "Running",
        Extra::POOLS: pool_extra,
        Extra::IDENTITY_PROFILE: render::kubelet_identity(&group.subscription, &node_rg, &path.name),
    });
    let record = aks.registry.create(ClusterSpec {
        scope,
        name: path.name.clone(),
        version: minor.to_owned(),
        node_pools: pools,
        tags: tags.unwrap_or_default(),
        provisioning: aks.config.provisioning_delay,
        extra,
    })?;
    tracing::info!(cluster = %record.name, "managed cluster created");
    Ok(record)
}

/// `GET`.
pub fn get(aks: &Aks, path: &ClusterPath) -> Result<HttpResponse, Error> {
    // A cluster whose group is missing is named as ARM names it; a cluster
    // still shown while its group is being deleted is found first.
    let record = find(aks, path).map_err(|e| {
        match group::find(aks, &path.subscription, &path.resource_group) {
            Err(missing_group) => missing_group,
            Ok(_) => e,
        }
    })?;
    Ok(HttpResponse::Ok().json(render::managed_cluster(&record)))
}

fn list_where(aks: &Aks, subscription: &str, group: Option<&str>) -> HttpResponse {
    let value: Vec<Value> = aks
        .registry
        .list(|c| match &c.scope {
            OwnerScope::Aks {
                subscription: s,
                resource_group: rg,
                ..
            } => {
                s.eq_ignore_ascii_case(subscription)
                    && group.is_none_or(|g| g.eq_ignore_ascii_case(rg))
            }
            _ => false,
        })
        .iter()
        .map(render::managed_cluster)
        .collect();
    HttpResponse::Ok().json(json!({ "value": value }))
}

/// `GET /subscriptions/{s}/providers/Microsoft.ContainerService/managedClusters`.
pub fn list(aks: &Aks, subscription: &str) -> HttpResponse {
    list_where(aks, subscription, None)
}

/// `GET …/resourceGroups/{rg}/providers/Microsoft.ContainerService/managedClusters`.
pub fn list_in_group(aks: &Aks, path: &GroupPath) -> Result<HttpResponse, Error> {
    group::find(aks, &path.subscription, &path.resource_group)?;
    Ok(list_where(
        aks,
        &path.subscription,
        Some(&path.resource_group),
    ))
}

/// `DELETE`: 202 with the operation URLs, 204 when there is no such cluster.
pub fn delete(aks: &Aks, ctx: &Ctx, path: &ClusterPath) -> Result<HttpResponse, Error> {
    let Ok(record) = find(aks, path) else {
        return Ok(HttpResponse::NoContent().finish());
    };
    aks.registry
        .delete(&record.id, aks.config.provisioning_delay)?;
    let op = operation::start(aks);
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, StatusCode::ACCEPTED, sub, location, &op, true).finish())
}

/// Which `listCluster…Credential` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// `listClusterUserCredential`.
    User,
    /// `listClusterAdminCredential`.
    Admin,
    /// `listClusterMonitoringUserCredential`.
    Monitoring,
}

/// The credential calls: a kubeconfig with the cluster's endpoint, its CA and
/// a client certificate from the cluster CA. Only when the data plane serves
/// the cluster; otherwise a clear ARM error instead of a kubeconfig that
/// cannot work.
pub fn credentials(
    aks: &Aks,
    path: &ClusterPath,
    kind: CredentialKind,
) -> Result<HttpResponse, Error> {
    let record = find(aks, path)?;
    let local_disabled = record.extra[Extra::PROPERTIES]["disableLocalAccounts"] == json!(true);
    if kind == CredentialKind::Admin && local_disabled {
        return Err(Error::BadRequest(
            "Getting static credential is not allowed because this cluster is set to disable local accounts.".into(),
        ));
    }
    // Non-AAD AKS clusters hand users the same cluster-admin identity.
    let (entry, common_name, groups): (&str, &str, &[&str]) = match kind {
        CredentialKind::User => ("clusterUser", "clusterUser", &["system:masters"]),
        CredentialKind::Admin => ("clusterAdmin", "masterclient", &["system:masters"]),
        CredentialKind::Monitoring => ("clusterMonitoringUser", "clusterMonitoringUser", &[]),
    };
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    let cert = record
        .ca
        .client_cert(common_name, &groups, aks.registry.clock().now())
        .map_err(|e| Error::Internal(e.to_string()))?;
    let (_, rg, _) = render::scope_of(&record);
    let user = format!("{entry}_{rg}_{}", record.name);
    let auth = UserAuth::ClientCert {
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
    };
    let kubeconfig = render::kubeconfig(&record, &user, &auth).ok_or_else(|| {
        Error::OperationNotAllowed(format!(
            "The API server of managed cluster '{}' is not reachable: kemu's data plane is not serving it (kemu runs without a data plane, or the cluster is still being created), so no credential can be issued.",
            record.name
        ))
    })?;
    let value = base64::engine::general_purpose::STANDARD.encode(kubeconfig);
    Ok(HttpResponse::Ok().json(json!({ "kubeconfigs": [{ "name": entry, "value": value }] })))
}

/// `GET …/upgradeProfiles/default`.
pub fn upgrade_profile(aks: &Aks, path: &ClusterPath) -> Result<HttpResponse, Error> {
    let record = find(aks, path)?;
    let pools: Vec<Value> = record
        .node_pools
        .iter()
        .map(|p| {
            let props = render::pool_properties(&record, p);
            let version = props["orchestratorVersion"]
                .as_str()
                .unwrap_or(&record.version)
                .to_owned();
            json!({
                "name": p.name,
                "kubernetesVersion": versions::patch(&version),
                "osType": "Linux",
                "upgrades": versions::upgrades(&record.version),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "id": format!("{}/upgradeProfiles/default", render::resource_id(&record)),
        "name": "default",
        "type": "Microsoft.ContainerService/managedClusters/upgradeProfiles",
        "properties": {
            "controlPlaneProfile": {
                "name": "default",
                "kubernetesVersion": versions::patch(&record.version),
                "osType": "Linux",
                "upgrades": versions::upgrades(&record.version),
            },
            "agentPoolProfiles": pools,
        },
    })))
}

/// `POST …/start` and `…/stop`: the power state, as a long-running action.
pub fn set_power(
    aks: &Aks,
    ctx: &Ctx,
    path: &ClusterPath,
    running: bool,
) -> Result<HttpResponse, Error> {
    let record = find(aks, path)?;
    require_idle(&record)?;
    let mut draft = record.clone();
    draft.extra[Extra::POWER] = json!(if running { "Running" } else { "Stopped" });
    begin_update(aks, &mut draft);
    let record = commit(aks, draft)?;
    let op = operation::start(aks);
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, StatusCode::ACCEPTED, sub, location, &op, true).finish())
}

/// `POST …/resetServicePrincipalProfile` and `…/resetAADProfile`: the body is
/// kept under its property name; nothing else changes.
pub fn reset_profile(
    aks: &Aks,
    ctx: &Ctx,
    path: &ClusterPath,
    property: &str,
    body: &Value,
) -> Result<HttpResponse, Error> {
    let record = find(aks, path)?;
    require_idle(&record)?;
    let mut draft = record.clone();
    draft.extra[Extra::PROPERTIES][property] = body.clone();
    begin_update(aks, &mut draft);
    let record = commit(aks, draft)?;
    let op = operation::start(aks);
    let (sub, _, location) = render::scope_of(&record);
    Ok(operation::accepted(ctx, StatusCode::ACCEPTED, sub, location, &op, true).finish())
}

/// `GET …/maintenanceConfigurations`: none are configured.
pub fn maintenance_configurations(aks: &Aks, path: &ClusterPath) -> Result<HttpResponse, Error> {
    find(aks, path)?;
    Ok(HttpResponse::Ok().json(json!({ "value": [] })))
}

/// `GET …/maintenanceConfigurations/{name}`: absent, as on a new cluster.
pub fn maintenance_configuration(
    aks: &Aks,
    path: &ClusterPath,
    name: &str,
) -> Result<HttpResponse, Error> {
    find(aks, path)?;
    Err(Error::ResourceNotFound {
        kind: format!("{KIND}/{}/maintenanceConfigurations", path.name),
        name: name.to_owned(),
        resource_group: path.resource_group.clone(),
    })
}
