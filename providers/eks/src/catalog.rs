//! What the service offers, fixed: Kubernetes versions, add-ons and their
//! versions, access policies. The operations that only read it live here.

use serde_json::{Value, json};

use crate::Call;
use crate::error::Error;
use crate::wire::{page_response, paginate};

/// The version a cluster gets when create-cluster names none.
pub const DEFAULT_VERSION: &str = "1.34";

/// A Kubernetes minor EKS offers: (version, support, end of standard support,
/// end of extended support, release date), dates as epoch seconds.
const VERSIONS: [(&str, &str, i64, i64, i64); 6] = [
    (
        "1.34",
        "STANDARD_SUPPORT",
        1_794_009_600,
        1_825_545_600,
        1_759_276_800,
    ),
    (
        "1.33",
        "STANDARD_SUPPORT",
        1_785_110_400,
        1_816_646_400,
        1_748_390_400,
    ),
    (
        "1.32",
        "STANDARD_SUPPORT",
        1_774_224_000,
        1_805_760_000,
        1_737_676_800,
    ),
    (
        "1.31",
        "EXTENDED_SUPPORT",
        1_764_288_000,
        1_795_824_000,
        1_727_136_000,
    ),
    (
        "1.30",
        "EXTENDED_SUPPORT",
        1_753_920_000,
        1_785_456_000,
        1_716_336_000,
    ),
    (
        "1.29",
        "EXTENDED_SUPPORT",
        1_742_947_200,
        1_774_483_200,
        1_706_054_400,
    ),
];

/// Whether EKS offers `version`.
pub fn supported_version(version: &str) -> bool {
    VERSIONS.iter().any(|v| v.0 == version)
}

/// EKS's refusal of a version it does not offer, with the ones it does.
pub fn unsupported_version(version: &str) -> String {
    let mut offered: Vec<&str> = VERSIONS.iter().map(|v| v.0).collect();
    offered.sort_by_key(|v| minor(v));
    format!(
        "unsupported Kubernetes version {version}. Supported versions: {} (see `aws eks describe-cluster-versions`)",
        offered.join(", ")
    )
}

/// The platform version a new or upgraded cluster of `version` gets.
pub fn platform_version(_version: &str) -> &'static str {
    "eks.5"
}

/// `(minor)` of a `1.NN` version.
pub fn minor(version: &str) -> Option<u32> {
    version.strip_prefix("1.")?.parse().ok()
}

/// DescribeClusterVersions.
pub fn describe_cluster_versions(call: &Call) -> Result<Value, Error> {
    let q = &call.query;
    let wanted = q.all("clusterVersions");
    let status = q.get("versionStatus").or(q.get("status"));
    let items: Vec<Value> = VERSIONS
        .iter()
        .filter(|v| wanted.is_empty() || wanted.iter().any(|w| w == v.0))
        .filter(|v| !q.flag("defaultOnly") || v.0 == DEFAULT_VERSION)
        .filter(|v| {
            status.is_none_or(|s| {
                s.eq_ignore_ascii_case(v.1) || s.replace('-', "_").eq_ignore_ascii_case(v.1)
            })
        })
        .map(|v| {
            json!({
                "clusterVersion": v.0,
                "clusterType": q.get("clusterType").unwrap_or("eks"),
                "defaultPlatformVersion": platform_version(v.0),
                "defaultVersion": v.0 == DEFAULT_VERSION,
                "releaseDate": v.4,
                "endOfStandardSupportDate": v.2,
                "endOfExtendedSupportDate": v.3,
                "status": v.1.to_ascii_lowercase().replace('_', "-"),
                "versionStatus": v.1,
                "kubernetesPatchVersion": format!("{}.0", v.0),
            })
        })
        .collect();
    let (page, next) = paginate(&items, q, 100)?;
    Ok(page_response("clusterVersions", page, next))
}

/// An add-on EKS offers: (name, type, versions newest first).
const ADDONS: [(&str, &str, [&str; 2]); 6] = [
    (
        "vpc-cni",
        "networking",
        ["v1.20.4-eksbuild.1", "v1.19.6-eksbuild.1"],
    ),
    (
        "coredns",
        "networking",
        ["v1.12.4-eksbuild.1", "v1.11.4-eksbuild.2"],
    ),
    (
        "kube-proxy",
        "networking",
        ["v1.34.0-eksbuild.2", "v1.33.3-eksbuild.4"],
    ),
    (
        "aws-ebs-csi-driver",
        "storage",
        ["v1.48.0-eksbuild.2", "v1.45.0-eksbuild.2"],
    ),
    (
        "eks-pod-identity-agent",
        "security",
        ["v1.3.8-eksbuild.2", "v1.3.7-eksbuild.2"],
    ),
    (
        "metrics-server",
        "observability",
        ["v0.8.0-eksbuild.2", "v0.7.2-eksbuild.4"],
    ),
];

/// The versions of add-on `name`, newest (the default) first.
pub fn addon_versions(name: &str) -> Option<&'static [&'static str]> {
    ADDONS.iter().find(|a| a.0 == name).map(|a| a.2.as_slice())
}

/// DescribeAddonVersions.
pub fn describe_addon_versions(call: &Call) -> Result<Value, Error> {
    let q = &call.query;
    let k8s = q.get("kubernetesVersion");
    if let Some(v) = k8s
        && !supported_version(v)
    {
        return Err(Error::InvalidParameter(format!(
            "Kubernetes version {v} is not supported."
        )));
    }
    let types = q.all("types");
    let publishers = q.all("publishers");
    let owners = q.all("owners");
    let items: Vec<Value> = ADDONS
        .iter()
        .filter(|a| q.get("addonName").is_none_or(|n| n == a.0))
        .filter(|a| types.is_empty() || types.iter().any(|t| t == a.1))
        .filter(|_| publishers.is_empty() || publishers.iter().any(|p| p == "eks"))
        .filter(|_| owners.is_empty() || owners.iter().any(|o| o == "aws"))
        .map(|a| {
            let compat: Vec<&str> = match k8s {
                Some(v) => vec![v],
                None => VERSIONS.iter().map(|v| v.0).collect(),
            };
            let versions: Vec<Value> =
                a.2.iter()
                    .enumerate()
                    .map(|(i, v)| {
                        json!({
                            "addonVersion": v,
                            "architecture": ["amd64", "arm64"],
                            "computeTypes": ["ec2", "auto"],
                            "compatibilities": compat.iter().map(|c| json!({
                                "clusterVersion": c,
                                "platformVersions": ["*"],
                                "defaultVersion": i == 0,
                            })).collect::<Vec<_>>(),
                            "requiresConfiguration": false,
                            "requiresIamPermissions": false,
                        })
                    })
                    .collect();
            json!({
                "addonName": a.0,
                "type": a.1,
                "addonVersions": versions,
                "publisher": "eks",
                "owner": "aws",
            })
        })
        .collect();
    let (page, next) = paginate(&items, q, 100)?;
    Ok(page_response("addons", page, next))
}

/// DescribeAddonConfiguration.
pub fn describe_addon_configuration(call: &Call) -> Result<Value, Error> {
    let name = call
        .query
        .get("addonName")
        .ok_or_else(|| Error::InvalidParameter("addonName is required.".into()))?;
    let version = call
        .query
        .get("addonVersion")
        .ok_or_else(|| Error::InvalidParameter("addonVersion is required.".into()))?;
    if !addon_versions(name).is_some_and(|vs| vs.contains(&version)) {
        return Err(Error::ResourceNotFound(format!(
            "Addon {name} with version {version} not found."
        )));
    }
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": true,
        "properties": {
            "resources": { "type": "object" },
            "tolerations": { "type": "array" },
            "env": { "type": "object", "additionalProperties": { "type": "string" } },
        },
    });
    Ok(json!({
        "addonName": name,
        "addonVersion": version,
        "configurationSchema": schema.to_string(),
        "podIdentityConfiguration": [],
    }))
}

/// The cluster access policies EKS offers.
pub const ACCESS_POLICIES: [&str; 6] = [
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSAutoNodePolicy",
];

/// The ARN of access policy `name`.
pub fn access_policy_arn(name: &str) -> String {
    format!("arn:aws:eks::aws:cluster-access-policy/{name}")
}

/// ListAccessPolicies.
pub fn list_access_policies(call: &Call) -> Result<Value, Error> {
    let items: Vec<Value> = ACCESS_POLICIES
        .iter()
        .map(|n| json!({ "name": n, "arn": access_policy_arn(n) }))
        .collect();
    let (page, next) = paginate(&items, &call.query, 100)?;
    Ok(page_response("accessPolicies", page, next))
}
