//! Cluster sub-resources, generically: describe, list and delete work the same
//! for every [`Kind`]; this file also holds the create/update operations of
//! the kinds with no rules of their own (Fargate profiles, identity provider
//! configs, pod identity associations, capabilities).

use serde_json::{Value, json};

use crate::error::Error;
use crate::state::{ClusterState, Item, Kind, UpdateTarget};
use crate::wire::{epoch, page_response, paginate};
use crate::{Call, Eks, update};

/// The member a describe/create/delete response wraps the object in.
pub fn wire_key(kind: Kind) -> &'static str {
    match kind {
        Kind::Nodegroup => "nodegroup",
        Kind::Addon => "addon",
        Kind::FargateProfile => "fargateProfile",
        Kind::AccessEntry => "accessEntry",
        Kind::IdentityProviderConfig => "identityProviderConfig",
        Kind::PodIdentityAssociation => "association",
        Kind::Capability => "capability",
    }
}

/// The ResourceNotFoundException EKS answers for a missing `key` of `kind`.
pub fn not_found(kind: Kind, cluster: &str, key: &str) -> Error {
    Error::ResourceNotFound(match kind {
        Kind::Nodegroup => format!("No node group found for name: {key}."),
        Kind::Addon => format!("No addon: {key} found in cluster: {cluster}"),
        Kind::FargateProfile => format!("No Fargate Profile found with name: {key}."),
        Kind::AccessEntry => format!(
            "The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'. ({key})"
        ),
        Kind::IdentityProviderConfig => {
            format!("No identity provider config found with name: {key}.")
        }
        Kind::PodIdentityAssociation => {
            format!("No pod identity association found with id: {key}.")
        }
        Kind::Capability => format!("No capability found with name: {key}."),
    })
}

/// The item `key` of `kind`, or the EKS not-found error.
pub fn get<'a>(
    cs: &'a mut ClusterState,
    kind: Kind,
    cluster: &str,
    key: &str,
) -> Result<&'a mut Item, Error> {
    cs.of(kind)
        .get_mut(key)
        .ok_or_else(|| not_found(kind, cluster, key))
}

/// Stores a new item, `status` `creating` until the transition passes (at once
/// `active` when it is zero). Refuses a duplicate key with ResourceInUse.
pub fn insert(
    eks: &Eks,
    call: &Call,
    cs: &mut ClusterState,
    kind: Kind,
    key: &str,
    mut obj: Value,
    (creating, active): (&'static str, &'static str),
) -> Result<Value, Error> {
    if cs.of(kind).contains_key(key) {
        return Err(Error::ResourceInUse(format!(
            "{} already exists with name: {key}",
            kind.noun()
        )));
    }
    let pending = eks.after(call.now, eks.settings.transition, Some(active));
    obj["status"] = json!(if pending.is_some() { creating } else { active });
    let item = Item::new(obj, pending);
    let out = item.value();
    cs.of(kind).insert(key.to_owned(), item);
    Ok(out)
}

/// Describe{Nodegroup,Addon,FargateProfile,AccessEntry,PodIdentityAssociation,Capability}.
pub fn describe(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    kind: Kind,
    key: &str,
) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        let item = get(cs, kind, cluster, key)?;
        Ok(json!({ wire_key(kind): item.value() }))
    })
}

/// ListNodegroups, ListAddons, ListFargateProfiles: names, paginated.
pub fn list_names(eks: &Eks, call: &Call, cluster: &str, kind: Kind) -> Result<Value, Error> {
    let key = match kind {
        Kind::Nodegroup => "nodegroups",
        Kind::Addon => "addons",
        _ => "fargateProfileNames",
    };
    eks.with_cluster(call, cluster, |_, cs| {
        let names: Vec<Value> = cs.list(kind).map(|(k, _)| json!(k)).collect();
        let (page, next) = paginate(&names, &call.query, 100)?;
        Ok(page_response(key, page, next))
    })
}

/// Delete{Nodegroup,Addon,FargateProfile,PodIdentityAssociation,Capability}:
/// `DELETING` for the grace, then gone. Node groups must be settled first.
pub fn delete(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    kind: Kind,
    key: &str,
) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        let grace = eks.settings.deletion_grace;
        let item = get(cs, kind, cluster, key)?;
        if matches!(kind, Kind::Nodegroup | Kind::FargateProfile) && item.status() != "ACTIVE" {
            return Err(Error::ResourceInUse(format!(
                "{} {key} is in {} status; try again later.",
                kind.noun(),
                item.status()
            )));
        }
        if kind == Kind::PodIdentityAssociation {
            let out = item.value();
            cs.of(kind).remove(key);
            return Ok(json!({ wire_key(kind): out }));
        }
        item.obj.insert("status".into(), json!("DELETING"));
        item.obj.insert("modifiedAt".into(), epoch(call.now));
        let out = item.value();
        item.pending = eks.after(call.now, grace, None);
        if grace.is_zero() {
            cs.of(kind).remove(key);
        }
        // `preserve` (add-ons) keeps the software in the cluster; nothing to undo.
        Ok(json!({ wire_key(kind): out }))
    })
}

/// CreateFargateProfile.
pub fn create_fargate_profile(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("fargateProfileName")?.to_owned();
    let role = b.required("podExecutionRoleArn")?;
    let selectors = b.get("selectors").cloned().unwrap_or(json!([]));
    match selectors.as_array() {
        Some(s)
            if (1..=5).contains(&s.len())
                && s.iter()
                    .all(|x| x.get("namespace").is_some_and(Value::is_string)) => {}
        _ => {
            return Err(Error::InvalidParameter(
                "selectors must hold between 1 and 5 selectors, each with a namespace.".into(),
            ));
        }
    }
    let obj = json!({
        "fargateProfileName": name,
        "fargateProfileArn": call.arn(&format!("fargateprofile/{cluster}/{name}/{}", uuid::Uuid::new_v4())),
        "clusterName": cluster,
        "createdAt": epoch(call.now),
        "podExecutionRoleArn": role,
        "subnets": b.string_list("subnets")?,
        "selectors": selectors,
        "tags": b.string_map("tags")?,
        "health": { "issues": [] },
    });
    eks.with_cluster(call, cluster, |rec, cs| {
        crate::nodegroup::require_cluster_active(rec)?;
        let out = insert(
            eks,
            call,
            cs,
            Kind::FargateProfile,
            &name,
            obj,
            ("CREATING", "ACTIVE"),
        )?;
        Ok(json!({ "fargateProfile": out }))
    })
}

/// AssociateIdentityProviderConfig (OIDC).
pub fn associate_idp(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let oidc = call
        .body
        .get("oidc")
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| Error::InvalidParameter("oidc is required.".into()))?;
    let field = |k: &str| {
        oidc.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| Error::InvalidParameter(format!("oidc.{k} is required.")))
    };
    let name = field("identityProviderConfigName")?;
    let issuer = field("issuerUrl")?;
    let client = field("clientId")?;
    if !issuer.starts_with("https://") {
        return Err(Error::InvalidParameter(
            "issuerUrl must be an https URL.".into(),
        ));
    }
    let tags = call.body.string_map("tags")?;
    let mut obj = json!({
        "identityProviderConfigName": name,
        "identityProviderConfigArn": call.arn(&format!("identityproviderconfig/{cluster}/oidc/{name}/{}", uuid::Uuid::new_v4())),
        "clusterName": cluster,
        "issuerUrl": issuer,
        "clientId": client,
        "tags": tags,
    });
    for k in [
        "usernameClaim",
        "usernamePrefix",
        "groupsClaim",
        "groupsPrefix",
        "requiredClaims",
    ] {
        if let Some(v) = oidc.get(k) {
            obj[k] = v.clone();
        }
    }
    eks.with_cluster(call, cluster, |rec, cs| {
        crate::nodegroup::require_cluster_active(rec)?;
        insert(
            eks,
            call,
            cs,
            Kind::IdentityProviderConfig,
            &name,
            obj,
            ("CREATING", "ACTIVE"),
        )?;
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Cluster,
            "AssociateIdentityProviderConfig",
            vec![(
                "IdentityProviderConfig",
                json!([{ "type": "oidc", "name": name }]).to_string(),
            )],
        );
        Ok(json!({ "update": out, "tags": tags }))
    })
}

fn idp_name(call: &Call) -> Result<String, Error> {
    let c = call
        .body
        .get("identityProviderConfig")
        .ok_or_else(|| Error::InvalidParameter("identityProviderConfig is required.".into()))?;
    if c.get("type").and_then(Value::as_str) != Some("oidc") {
        return Err(Error::InvalidParameter(
            "identityProviderConfig.type must be oidc.".into(),
        ));
    }
    c.get("name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::InvalidParameter("identityProviderConfig.name is required.".into()))
}

/// DescribeIdentityProviderConfig.
pub fn describe_idp(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let name = idp_name(call)?;
    eks.with_cluster(call, cluster, |_, cs| {
        let item = get(cs, Kind::IdentityProviderConfig, cluster, &name)?;
        Ok(json!({ "identityProviderConfig": { "oidc": item.value() } }))
    })
}

/// ListIdentityProviderConfigs.
pub fn list_idps(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        let items: Vec<Value> = cs
            .list(Kind::IdentityProviderConfig)
            .map(|(k, _)| json!({ "type": "oidc", "name": k }))
            .collect();
        let (page, next) = paginate(&items, &call.query, 100)?;
        Ok(page_response("identityProviderConfigs", page, next))
    })
}

/// DisassociateIdentityProviderConfig.
pub fn disassociate_idp(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let name = idp_name(call)?;
    eks.with_cluster(call, cluster, |_, cs| {
        get(cs, Kind::IdentityProviderConfig, cluster, &name)?;
        let grace = eks.settings.deletion_grace;
        if grace.is_zero() {
            cs.of(Kind::IdentityProviderConfig).remove(&name);
        } else if let Some(item) = cs.of(Kind::IdentityProviderConfig).get_mut(&name) {
            item.obj.insert("status".into(), json!("DELETING"));
            item.pending = eks.after(call.now, grace, None);
        }
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Cluster,
            "DisassociateIdentityProviderConfig",
            vec![(
                "IdentityProviderConfig",
                json!([{ "type": "oidc", "name": name }]).to_string(),
            )],
        );
        Ok(json!({ "update": out }))
    })
}

/// CreatePodIdentityAssociation: one per service account.
pub fn create_pod_identity(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let ns = b.required("namespace")?.to_owned();
    let sa = b.required("serviceAccount")?.to_owned();
    let role = b.required("roleArn")?.to_owned();
    let id = format!("a-{}", &uuid::Uuid::new_v4().simple().to_string()[..17]);
    let mut obj = json!({
        "clusterName": cluster,
        "namespace": ns,
        "serviceAccount": sa,
        "roleArn": role,
        "associationArn": call.arn(&format!("podidentityassociation/{cluster}/{id}")),
        "associationId": id,
        "tags": b.string_map("tags")?,
        "createdAt": epoch(call.now),
        "modifiedAt": epoch(call.now),
        "disableSessionTags": b.get("disableSessionTags").and_then(Value::as_bool).unwrap_or(false),
    });
    for k in ["targetRoleArn", "policy"] {
        if let Some(v) = b.get(k) {
            obj[k] = v.clone();
        }
    }
    eks.with_cluster(call, cluster, |_, cs| {
        let taken = cs.list(Kind::PodIdentityAssociation).any(|(_, i)| {
            i.obj.get("namespace") == Some(&json!(ns))
                && i.obj.get("serviceAccount") == Some(&json!(sa))
        });
        if taken {
            return Err(Error::ResourceInUse(format!(
                "Association already exists for service account {ns}/{sa}."
            )));
        }
        let item = Item::new(obj, None);
        let out = item.value();
        cs.of(Kind::PodIdentityAssociation).insert(id.clone(), item);
        Ok(json!({ "association": out }))
    })
}

/// ListPodIdentityAssociations, filtered by namespace and service account.
pub fn list_pod_identities(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let q = &call.query;
    eks.with_cluster(call, cluster, |_, cs| {
        let items: Vec<Value> = cs
            .list(Kind::PodIdentityAssociation)
            .map(|(_, i)| &i.obj)
            .filter(|o| {
                q.get("namespace")
                    .is_none_or(|n| o.get("namespace") == Some(&json!(n)))
            })
            .filter(|o| {
                q.get("serviceAccount")
                    .is_none_or(|s| o.get("serviceAccount") == Some(&json!(s)))
            })
            .map(|o| {
                let mut s = serde_json::Map::new();
                for k in [
                    "clusterName",
                    "namespace",
                    "serviceAccount",
                    "associationArn",
                    "associationId",
                    "ownerArn",
                ] {
                    if let Some(v) = o.get(k) {
                        s.insert(k.into(), v.clone());
                    }
                }
                Value::Object(s)
            })
            .collect();
        let (page, next) = paginate(&items, q, 100)?;
        Ok(page_response("associations", page, next))
    })
}

/// UpdatePodIdentityAssociation.
pub fn update_pod_identity(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    id: &str,
) -> Result<Value, Error> {
    let b = &call.body;
    eks.with_cluster(call, cluster, |_, cs| {
        let item = get(cs, Kind::PodIdentityAssociation, cluster, id)?;
        for k in ["roleArn", "disableSessionTags", "targetRoleArn", "policy"] {
            if let Some(v) = b.get(k) {
                item.obj.insert(k.into(), v.clone());
            }
        }
        item.obj.insert("modifiedAt".into(), epoch(call.now));
        Ok(json!({ "association": item.value() }))
    })
}

const CAPABILITY_TYPES: [&str; 3] = ["ACK", "KRO", "ARGOCD"];

/// CreateCapability.
pub fn create_capability(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("capabilityName")?.to_owned();
    let kind = b.required("type")?;
    if !CAPABILITY_TYPES.contains(&kind) {
        return Err(Error::InvalidParameter(format!(
            "Unsupported capability type {kind}."
        )));
    }
    let mut obj = json!({
        "capabilityName": name,
        "arn": call.arn(&format!("capability/{cluster}/{}/{name}/{}", kind.to_ascii_lowercase(), uuid::Uuid::new_v4())),
        "clusterName": cluster,
        "type": kind,
        "roleArn": b.required("roleArn")?,
        "version": "v1",
        "tags": b.string_map("tags")?,
        "health": { "issues": [] },
        "createdAt": epoch(call.now),
        "modifiedAt": epoch(call.now),
        "deletePropagationPolicy": b.required("deletePropagationPolicy")?,
    });
    if let Some(c) = b.get("configuration") {
        obj["configuration"] = c.clone();
    }
    eks.with_cluster(call, cluster, |rec, cs| {
        crate::nodegroup::require_cluster_active(rec)?;
        let out = insert(
            eks,
            call,
            cs,
            Kind::Capability,
            &name,
            obj,
            ("CREATING", "ACTIVE"),
        )?;
        Ok(json!({ "capability": out }))
    })
}

/// ListCapabilities: summaries.
pub fn list_capabilities(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        let items: Vec<Value> = cs
            .list(Kind::Capability)
            .map(|(_, i)| {
                let mut s = serde_json::Map::new();
                for k in [
                    "capabilityName",
                    "arn",
                    "type",
                    "status",
                    "version",
                    "createdAt",
                    "modifiedAt",
                ] {
                    if let Some(v) = i.obj.get(k) {
                        s.insert(k.into(), v.clone());
                    }
                }
                Value::Object(s)
            })
            .collect();
        let (page, next) = paginate(&items, &call.query, 100)?;
        Ok(page_response("capabilities", page, next))
    })
}

/// UpdateCapability.
pub fn update_capability(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    name: &str,
) -> Result<Value, Error> {
    let b = &call.body;
    eks.with_cluster(call, cluster, |_, cs| {
        let item = get(cs, Kind::Capability, cluster, name)?;
        if item.status() != "ACTIVE" {
            return Err(Error::ResourceInUse(format!(
                "Capability {name} is in {} status.",
                item.status()
            )));
        }
        let mut params = Vec::new();
        for (k, p) in [
            ("roleArn", "RoleArn"),
            ("configuration", "Configuration"),
            ("deletePropagationPolicy", "DeletePropagationPolicy"),
        ] {
            if let Some(v) = b.get(k) {
                item.obj.insert(k.into(), v.clone());
                params.push((p, v.to_string()));
            }
        }
        item.obj.insert("modifiedAt".into(), epoch(call.now));
        let out = update::record(
            eks,
            call,
            cs,
            UpdateTarget::Capability(name.to_owned()),
            "ConfigUpdate",
            params,
        );
        Ok(json!({ "update": out }))
    })
}
