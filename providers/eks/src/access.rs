//! Access entries and access policies: who may use the cluster's Kubernetes
//! API, and with which policy. The token authenticator reads them.

use kemu_shared::ClusterRecord;
use serde_json::{Value, json};

use crate::catalog::{ACCESS_POLICIES, access_policy_arn};
use crate::error::Error;
use crate::resources::get;
use crate::state::{ClusterState, Item, Kind};
use crate::wire::{epoch, page_response, paginate};
use crate::{Call, Eks};

const TYPES: [&str; 7] = [
    "STANDARD",
    "FARGATE_LINUX",
    "EC2_LINUX",
    "EC2_WINDOWS",
    "EC2",
    "HYBRID_LINUX",
    "HYPERPOD_LINUX",
];

/// The username EKS gives a principal by default.
fn default_username(principal: &str, kind: &str) -> String {
    match kind {
        "EC2_LINUX" | "EC2_WINDOWS" | "EC2" | "HYBRID_LINUX" | "HYPERPOD_LINUX" => {
            "system:node:{{EC2PrivateDNSName}}".into()
        }
        "FARGATE_LINUX" => "system:node:{{SessionName}}".into(),
        _ => match principal.split_once(":role/") {
            Some((head, role)) => format!(
                "{}:assumed-role/{}/{{{{SessionName}}}}",
                head.replace(":iam:", ":sts:"),
                role.rsplit('/').next().unwrap_or(role)
            ),
            None => principal.to_owned(),
        },
    }
}

fn entry(
    call: &Call,
    cluster: &str,
    principal: &str,
    kind: &str,
    groups: Vec<String>,
    username: String,
) -> Value {
    let (what, name) = match principal.split_once(":role/") {
        Some((_, r)) => ("role", r.to_owned()),
        None => (
            "user",
            principal.rsplit('/').next().unwrap_or(principal).to_owned(),
        ),
    };
    json!({
        "clusterName": cluster,
        "principalArn": principal,
        "kubernetesGroups": groups,
        "accessEntryArn": call.arn(&format!(
            "access-entry/{cluster}/{what}/{}/{name}/{}", call.account(), uuid::Uuid::new_v4()
        )),
        "createdAt": epoch(call.now),
        "modifiedAt": epoch(call.now),
        "tags": {},
        "username": username,
        "type": kind,
    })
}

fn require_api_mode(record: &ClusterRecord) -> Result<(), Error> {
    let mode = record
        .extra
        .pointer("/accessConfig/authenticationMode")
        .and_then(Value::as_str)
        .unwrap_or("API_AND_CONFIG_MAP");
    if mode == "CONFIG_MAP" {
        return Err(Error::InvalidRequest(
            "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] to perform this operation.".into(),
        ));
    }
    Ok(())
}

/// The cluster creator's admin entry, as EKS makes it when
/// `bootstrapClusterCreatorAdminPermissions` is on.
pub fn bootstrap_admin(call: &Call, record: &ClusterRecord, cs: &mut ClusterState) {
    let principal = call.caller.clone();
    let obj = entry(
        call,
        &record.name,
        &principal,
        "STANDARD",
        vec![],
        principal.clone(),
    );
    cs.of(Kind::AccessEntry)
        .insert(principal.clone(), Item::new(obj, None));
    let policy = access_policy_arn("AmazonEKSClusterAdminPolicy");
    cs.policies.entry(principal).or_default().insert(
        policy.clone(),
        json!({
            "policyArn": policy,
            "accessScope": { "type": "cluster", "namespaces": [] },
            "associatedAt": epoch(call.now),
            "modifiedAt": epoch(call.now),
        }),
    );
}

/// CreateAccessEntry.
pub fn create(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let b = &call.body;
    let principal = b.required("principalArn")?.to_owned();
    if !principal.starts_with("arn:aws:iam::") {
        return Err(Error::InvalidParameter(format!(
            "The principalArn {principal} is not a valid IAM principal ARN."
        )));
    }
    let kind = b.str("type").unwrap_or("STANDARD").to_owned();
    if !TYPES.contains(&kind.as_str()) {
        return Err(Error::InvalidParameter(format!(
            "Unsupported access entry type {kind}."
        )));
    }
    let groups = b.string_list("kubernetesGroups")?;
    if kind != "STANDARD" && (!groups.is_empty() || b.get("username").is_some()) {
        return Err(Error::InvalidParameter(
            "kubernetesGroups and username can only be set for access entries of type STANDARD."
                .into(),
        ));
    }
    if groups.iter().any(|g| g.starts_with("system:")) {
        return Err(Error::InvalidParameter(
            "kubernetesGroups cannot start with system:.".into(),
        ));
    }
    let username = b
        .str("username")
        .map(str::to_owned)
        .unwrap_or_else(|| default_username(&principal, &kind));
    let tags = b.string_map("tags")?;
    eks.with_cluster(call, cluster, |rec, cs| {
        require_api_mode(rec)?;
        if cs.of(Kind::AccessEntry).contains_key(&principal) {
            return Err(Error::ResourceInUse(
                "The specified access entry resource is already in use on this cluster.".into(),
            ));
        }
        let mut obj = entry(call, cluster, &principal, &kind, groups, username);
        obj["tags"] = json!(tags);
        let item = Item::new(obj, None);
        let out = item.value();
        cs.of(Kind::AccessEntry).insert(principal.clone(), item);
        Ok(json!({ "accessEntry": out }))
    })
}

/// ListAccessEntries: principal ARNs, optionally those with a given policy.
pub fn list(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let policy = call.query.get("associatedPolicyArn");
    eks.with_cluster(call, cluster, |_, cs| {
        let items: Vec<Value> = cs
            .list(Kind::AccessEntry)
            .map(|(p, _)| p)
            .filter(|p| {
                policy.is_none_or(|pol| cs.policies.get(*p).is_some_and(|m| m.contains_key(pol)))
            })
            .map(|p| json!(p))
            .collect();
        let (page, next) = paginate(&items, &call.query, 100)?;
        Ok(page_response("accessEntries", page, next))
    })
}

/// UpdateAccessEntry.
pub fn update(eks: &Eks, call: &Call, cluster: &str, principal: &str) -> Result<Value, Error> {
    let b = &call.body;
    let groups = b
        .get("kubernetesGroups")
        .map(|_| b.string_list("kubernetesGroups"))
        .transpose()?;
    eks.with_cluster(call, cluster, |_, cs| {
        let item = get(cs, Kind::AccessEntry, cluster, principal)?;
        if item.obj.get("type").and_then(Value::as_str) != Some("STANDARD")
            && (groups.is_some() || b.get("username").is_some())
        {
            return Err(Error::InvalidParameter(
                "kubernetesGroups and username can only be set for access entries of type STANDARD.".into(),
            ));
        }
        if let Some(g) = &groups {
            item.obj.insert("kubernetesGroups".into(), json!(g));
        }
        if let Some(u) = b.str("username") {
            item.obj.insert("username".into(), json!(u));
        }
        item.obj.insert("modifiedAt".into(), epoch(call.now));
        Ok(json!({ "accessEntry": item.value() }))
    })
}

/// DeleteAccessEntry, with its policy associations.
pub fn delete(eks: &Eks, call: &Call, cluster: &str, principal: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        get(cs, Kind::AccessEntry, cluster, principal)?;
        cs.of(Kind::AccessEntry).remove(principal);
        cs.policies.remove(principal);
        Ok(json!({}))
    })
}

/// AssociateAccessPolicy: (re)sets the policy's scope for the principal.
pub fn associate(eks: &Eks, call: &Call, cluster: &str, principal: &str) -> Result<Value, Error> {
    let b = &call.body;
    let policy = b.required("policyArn")?.to_owned();
    if !ACCESS_POLICIES
        .iter()
        .any(|p| access_policy_arn(p) == policy)
    {
        return Err(Error::InvalidParameter(format!(
            "The policy {policy} is not a valid access policy."
        )));
    }
    let scope = b
        .get("accessScope")
        .cloned()
        .ok_or_else(|| Error::InvalidParameter("accessScope is required.".into()))?;
    let namespaces = scope
        .get("namespaces")
        .and_then(crate::wire::string_list)
        .unwrap_or_default();
    match scope.get("type").and_then(Value::as_str) {
        Some("cluster") if namespaces.is_empty() => {}
        Some("namespace") if !namespaces.is_empty() => {}
        _ => {
            return Err(Error::InvalidParameter(
                "accessScope.type must be cluster (no namespaces) or namespace (with namespaces)."
                    .into(),
            ));
        }
    }
    eks.with_cluster(call, cluster, |_, cs| {
        get(cs, Kind::AccessEntry, cluster, principal)?;
        let policies = cs.policies.entry(principal.to_owned()).or_default();
        let associated = policies
            .get(&policy)
            .and_then(|p| p.get("associatedAt").cloned())
            .unwrap_or_else(|| epoch(call.now));
        let assoc = json!({
            "policyArn": policy,
            "accessScope": { "type": scope.get("type"), "namespaces": namespaces },
            "associatedAt": associated,
            "modifiedAt": epoch(call.now),
        });
        policies.insert(policy.clone(), assoc.clone());
        Ok(json!({ "clusterName": cluster, "principalArn": principal, "associatedAccessPolicy": assoc }))
    })
}

/// DisassociateAccessPolicy.
pub fn disassociate(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    principal: &str,
    policy: &str,
) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        get(cs, Kind::AccessEntry, cluster, principal)?;
        let removed = cs
            .policies
            .get_mut(principal)
            .and_then(|m| m.remove(policy));
        match removed {
            Some(_) => Ok(json!({})),
            None => Err(Error::ResourceNotFound(format!(
                "The policy {policy} is not associated with the principal {principal}."
            ))),
        }
    })
}

/// ListAssociatedAccessPolicies.
pub fn list_associated(
    eks: &Eks,
    call: &Call,
    cluster: &str,
    principal: &str,
) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        get(cs, Kind::AccessEntry, cluster, principal)?;
        let items: Vec<Value> = cs
            .policies
            .get(principal)
            .into_iter()
            .flat_map(|m| m.values().cloned())
            .collect();
        let (page, next) = paginate(&items, &call.query, 100)?;
        let mut out = page_response("associatedAccessPolicies", page, next);
        out["clusterName"] = json!(cluster);
        out["principalArn"] = json!(principal);
        Ok(out)
    })
}
