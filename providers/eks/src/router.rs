//! Which EKS operation a request is: one variant per operation of botocore's
//! EKS model (64), parsed from the method and the raw path. ARNs arrive
//! percent-encoded as one segment, so the path is split on raw `/` first and
//! each segment decoded after.

use actix_web::http::Method;

use crate::error::Error;
use crate::wire::percent_decode;

/// One EKS operation, with its path parameters decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the model's path parameters, named as in the URI
pub enum Endpoint {
    /// `POST /clusters/{name}/access-entries/{principalArn}/access-policies`
    AssociateAccessPolicy { name: String, principal: String },
    /// `POST /clusters/{name}/encryption-config/associate`
    AssociateEncryptionConfig { name: String },
    /// `POST /clusters/{name}/identity-provider-configs/associate`
    AssociateIdentityProviderConfig { name: String },
    /// `POST /clusters/{name}/access-entries`
    CreateAccessEntry { name: String },
    /// `POST /clusters/{name}/addons`
    CreateAddon { name: String },
    /// `POST /clusters/{name}/capabilities`
    CreateCapability { name: String },
    /// `POST /clusters`
    CreateCluster,
    /// `POST /eks-anywhere-subscriptions`
    CreateEksAnywhereSubscription,
    /// `POST /clusters/{name}/fargate-profiles`
    CreateFargateProfile { name: String },
    /// `POST /clusters/{name}/node-groups`
    CreateNodegroup { name: String },
    /// `POST /clusters/{name}/pod-identity-associations`
    CreatePodIdentityAssociation { name: String },
    /// `DELETE /clusters/{name}/access-entries/{principalArn}`
    DeleteAccessEntry { name: String, principal: String },
    /// `DELETE /clusters/{name}/addons/{addonName}`
    DeleteAddon { name: String, addon: String },
    /// `DELETE /clusters/{name}/capabilities/{capabilityName}`
    DeleteCapability { name: String, capability: String },
    /// `DELETE /clusters/{name}`
    DeleteCluster { name: String },
    /// `DELETE /eks-anywhere-subscriptions/{id}`
    DeleteEksAnywhereSubscription { id: String },
    /// `DELETE /clusters/{name}/fargate-profiles/{fargateProfileName}`
    DeleteFargateProfile { name: String, profile: String },
    /// `DELETE /clusters/{name}/node-groups/{nodegroupName}`
    DeleteNodegroup { name: String, nodegroup: String },
    /// `DELETE /clusters/{name}/pod-identity-associations/{associationId}`
    DeletePodIdentityAssociation { name: String, id: String },
    /// `DELETE /cluster-registrations/{name}`
    DeregisterCluster { name: String },
    /// `GET /clusters/{name}/access-entries/{principalArn}`
    DescribeAccessEntry { name: String, principal: String },
    /// `GET /clusters/{name}/addons/{addonName}`
    DescribeAddon { name: String, addon: String },
    /// `GET /addons/configuration-schemas`
    DescribeAddonConfiguration,
    /// `GET /addons/supported-versions`
    DescribeAddonVersions,
    /// `GET /clusters/{name}/capabilities/{capabilityName}`
    DescribeCapability { name: String, capability: String },
    /// `GET /clusters/{name}`
    DescribeCluster { name: String },
    /// `GET /cluster-versions`
    DescribeClusterVersions,
    /// `GET /eks-anywhere-subscriptions/{id}`
    DescribeEksAnywhereSubscription { id: String },
    /// `GET /clusters/{name}/fargate-profiles/{fargateProfileName}`
    DescribeFargateProfile { name: String, profile: String },
    /// `POST /clusters/{name}/identity-provider-configs/describe`
    DescribeIdentityProviderConfig { name: String },
    /// `GET /clusters/{name}/insights/{id}`
    DescribeInsight { name: String, id: String },
    /// `GET /clusters/{name}/insights-refresh`
    DescribeInsightsRefresh { name: String },
    /// `GET /clusters/{name}/node-groups/{nodegroupName}`
    DescribeNodegroup { name: String, nodegroup: String },
    /// `GET /clusters/{name}/pod-identity-associations/{associationId}`
    DescribePodIdentityAssociation { name: String, id: String },
    /// `GET /clusters/{name}/updates/{updateId}`
    DescribeUpdate { name: String, id: String },
    /// `DELETE /clusters/{name}/access-entries/{principalArn}/access-policies/{policyArn}`
    DisassociateAccessPolicy {
        name: String,
        principal: String,
        policy: String,
    },
    /// `POST /clusters/{name}/identity-provider-configs/disassociate`
    DisassociateIdentityProviderConfig { name: String },
    /// `GET /clusters/{name}/access-entries`
    ListAccessEntries { name: String },
    /// `GET /access-policies`
    ListAccessPolicies,
    /// `GET /clusters/{name}/addons`
    ListAddons { name: String },
    /// `GET /clusters/{name}/access-entries/{principalArn}/access-policies`
    ListAssociatedAccessPolicies { name: String, principal: String },
    /// `GET /clusters/{name}/capabilities`
    ListCapabilities { name: String },
    /// `GET /clusters`
    ListClusters,
    /// `GET /eks-anywhere-subscriptions`
    ListEksAnywhereSubscriptions,
    /// `GET /clusters/{name}/fargate-profiles`
    ListFargateProfiles { name: String },
    /// `GET /clusters/{name}/identity-provider-configs`
    ListIdentityProviderConfigs { name: String },
    /// `POST /clusters/{name}/insights`
    ListInsights { name: String },
    /// `GET /clusters/{name}/node-groups`
    ListNodegroups { name: String },
    /// `GET /clusters/{name}/pod-identity-associations`
    ListPodIdentityAssociations { name: String },
    /// `GET /tags/{resourceArn}`
    ListTagsForResource { arn: String },
    /// `GET /clusters/{name}/updates`
    ListUpdates { name: String },
    /// `POST /cluster-registrations`
    RegisterCluster,
    /// `POST /clusters/{name}/insights-refresh`
    StartInsightsRefresh { name: String },
    /// `POST /tags/{resourceArn}`
    TagResource { arn: String },
    /// `DELETE /tags/{resourceArn}`
    UntagResource { arn: String },
    /// `POST /clusters/{name}/access-entries/{principalArn}`
    UpdateAccessEntry { name: String, principal: String },
    /// `POST /clusters/{name}/addons/{addonName}/update`
    UpdateAddon { name: String, addon: String },
    /// `POST /clusters/{name}/capabilities/{capabilityName}`
    UpdateCapability { name: String, capability: String },
    /// `POST /clusters/{name}/update-config`
    UpdateClusterConfig { name: String },
    /// `POST /clusters/{name}/updates`
    UpdateClusterVersion { name: String },
    /// `POST /eks-anywhere-subscriptions/{id}`
    UpdateEksAnywhereSubscription { id: String },
    /// `POST /clusters/{name}/node-groups/{nodegroupName}/update-config`
    UpdateNodegroupConfig { name: String, nodegroup: String },
    /// `POST /clusters/{name}/node-groups/{nodegroupName}/update-version`
    UpdateNodegroupVersion { name: String, nodegroup: String },
    /// `POST /clusters/{name}/pod-identity-associations/{associationId}`
    UpdatePodIdentityAssociation { name: String, id: String },
    /// `POST /` with `Action=GetCallerIdentity` (STS on the same port, for the
    /// clients that ask who they are before talking to EKS).
    StsGetCallerIdentity,
}

impl Endpoint {
    /// Parses method and raw path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        use Endpoint as E;
        let unknown = || Error::UnknownOperation(format!("{method} {path}"));
        let decoded: Vec<String> = path
            .trim_start_matches('/')
            .trim_end_matches('/')
            .split('/')
            .map(percent_decode)
            .collect::<Option<_>>()
            .ok_or_else(unknown)?;
        let seg: Vec<&str> = decoded.iter().map(String::as_str).collect();
        let s = |v: &str| v.to_owned();
        let op = match (method.as_str(), seg.as_slice()) {
            ("POST", [""]) => E::StsGetCallerIdentity,
            ("GET", ["clusters"]) => E::ListClusters,
            ("POST", ["clusters"]) => E::CreateCluster,
            ("GET", ["clusters", n]) => E::DescribeCluster { name: s(n) },
            ("DELETE", ["clusters", n]) => E::DeleteCluster { name: s(n) },
            ("POST", ["clusters", n, "update-config"]) => E::UpdateClusterConfig { name: s(n) },
            ("POST", ["clusters", n, "updates"]) => E::UpdateClusterVersion { name: s(n) },
            ("GET", ["clusters", n, "updates"]) => E::ListUpdates { name: s(n) },
            ("GET", ["clusters", n, "updates", id]) => E::DescribeUpdate {
                name: s(n),
                id: s(id),
            },
            ("POST", ["clusters", n, "encryption-config", "associate"]) => {
                E::AssociateEncryptionConfig { name: s(n) }
            }
            ("GET", ["clusters", n, "node-groups"]) => E::ListNodegroups { name: s(n) },
            ("POST", ["clusters", n, "node-groups"]) => E::CreateNodegroup { name: s(n) },
            ("GET", ["clusters", n, "node-groups", g]) => E::DescribeNodegroup {
                name: s(n),
                nodegroup: s(g),
            },
            ("DELETE", ["clusters", n, "node-groups", g]) => E::DeleteNodegroup {
                name: s(n),
                nodegroup: s(g),
            },
            ("POST", ["clusters", n, "node-groups", g, "update-config"]) => {
                E::UpdateNodegroupConfig {
                    name: s(n),
                    nodegroup: s(g),
                }
            }
            ("POST", ["clusters", n, "node-groups", g, "update-version"]) => {
                E::UpdateNodegroupVersion {
                    name: s(n),
                    nodegroup: s(g),
                }
            }
            ("GET", ["clusters", n, "addons"]) => E::ListAddons { name: s(n) },
            ("POST", ["clusters", n, "addons"]) => E::CreateAddon { name: s(n) },
            ("GET", ["clusters", n, "addons", a]) => E::DescribeAddon {
                name: s(n),
                addon: s(a),
            },
            ("DELETE", ["clusters", n, "addons", a]) => E::DeleteAddon {
                name: s(n),
                addon: s(a),
            },
            ("POST", ["clusters", n, "addons", a, "update"]) => E::UpdateAddon {
                name: s(n),
                addon: s(a),
            },
            ("GET", ["addons", "supported-versions"]) => E::DescribeAddonVersions,
            ("GET", ["addons", "configuration-schemas"]) => E::DescribeAddonConfiguration,
            ("GET", ["clusters", n, "access-entries"]) => E::ListAccessEntries { name: s(n) },
            ("POST", ["clusters", n, "access-entries"]) => E::CreateAccessEntry { name: s(n) },
            ("GET", ["clusters", n, "access-entries", p]) => E::DescribeAccessEntry {
                name: s(n),
                principal: s(p),
            },
            ("POST", ["clusters", n, "access-entries", p]) => E::UpdateAccessEntry {
                name: s(n),
                principal: s(p),
            },
            ("DELETE", ["clusters", n, "access-entries", p]) => E::DeleteAccessEntry {
                name: s(n),
                principal: s(p),
            },
            ("GET", ["clusters", n, "access-entries", p, "access-policies"]) => {
                E::ListAssociatedAccessPolicies {
                    name: s(n),
                    principal: s(p),
                }
            }
            ("POST", ["clusters", n, "access-entries", p, "access-policies"]) => {
                E::AssociateAccessPolicy {
                    name: s(n),
                    principal: s(p),
                }
            }
            ("DELETE", ["clusters", n, "access-entries", p, "access-policies", pol]) => {
                E::DisassociateAccessPolicy {
                    name: s(n),
                    principal: s(p),
                    policy: s(pol),
                }
            }
            ("GET", ["access-policies"]) => E::ListAccessPolicies,
            ("GET", ["clusters", n, "fargate-profiles"]) => E::ListFargateProfiles { name: s(n) },
            ("POST", ["clusters", n, "fargate-profiles"]) => E::CreateFargateProfile { name: s(n) },
            ("GET", ["clusters", n, "fargate-profiles", f]) => E::DescribeFargateProfile {
                name: s(n),
                profile: s(f),
            },
            ("DELETE", ["clusters", n, "fargate-profiles", f]) => E::DeleteFargateProfile {
                name: s(n),
                profile: s(f),
            },
            ("GET", ["clusters", n, "identity-provider-configs"]) => {
                E::ListIdentityProviderConfigs { name: s(n) }
            }
            ("POST", ["clusters", n, "identity-provider-configs", "associate"]) => {
                E::AssociateIdentityProviderConfig { name: s(n) }
            }
            ("POST", ["clusters", n, "identity-provider-configs", "describe"]) => {
                E::DescribeIdentityProviderConfig { name: s(n) }
            }
            ("POST", ["clusters", n, "identity-provider-configs", "disassociate"]) => {
                E::DisassociateIdentityProviderConfig { name: s(n) }
            }
            ("GET", ["clusters", n, "pod-identity-associations"]) => {
                E::ListPodIdentityAssociations { name: s(n) }
            }
            ("POST", ["clusters", n, "pod-identity-associations"]) => {
                E::CreatePodIdentityAssociation { name: s(n) }
            }
            ("GET", ["clusters", n, "pod-identity-associations", id]) => {
                E::DescribePodIdentityAssociation {
                    name: s(n),
                    id: s(id),
                }
            }
            ("POST", ["clusters", n, "pod-identity-associations", id]) => {
                E::UpdatePodIdentityAssociation {
                    name: s(n),
                    id: s(id),
                }
            }
            ("DELETE", ["clusters", n, "pod-identity-associations", id]) => {
                E::DeletePodIdentityAssociation {
                    name: s(n),
                    id: s(id),
                }
            }
            ("GET", ["clusters", n, "capabilities"]) => E::ListCapabilities { name: s(n) },
            ("POST", ["clusters", n, "capabilities"]) => E::CreateCapability { name: s(n) },
            ("GET", ["clusters", n, "capabilities", c]) => E::DescribeCapability {
                name: s(n),
                capability: s(c),
            },
            ("POST", ["clusters", n, "capabilities", c]) => E::UpdateCapability {
                name: s(n),
                capability: s(c),
            },
            ("DELETE", ["clusters", n, "capabilities", c]) => E::DeleteCapability {
                name: s(n),
                capability: s(c),
            },
            ("POST", ["clusters", n, "insights"]) => E::ListInsights { name: s(n) },
            ("GET", ["clusters", n, "insights", id]) => E::DescribeInsight {
                name: s(n),
                id: s(id),
            },
            ("GET", ["clusters", n, "insights-refresh"]) => {
                E::DescribeInsightsRefresh { name: s(n) }
            }
            ("POST", ["clusters", n, "insights-refresh"]) => E::StartInsightsRefresh { name: s(n) },
            ("GET", ["cluster-versions"]) => E::DescribeClusterVersions,
            ("POST", ["cluster-registrations"]) => E::RegisterCluster,
            ("DELETE", ["cluster-registrations", n]) => E::DeregisterCluster { name: s(n) },
            ("GET", ["eks-anywhere-subscriptions"]) => E::ListEksAnywhereSubscriptions,
            ("POST", ["eks-anywhere-subscriptions"]) => E::CreateEksAnywhereSubscription,
            ("GET", ["eks-anywhere-subscriptions", id]) => {
                E::DescribeEksAnywhereSubscription { id: s(id) }
            }
            ("POST", ["eks-anywhere-subscriptions", id]) => {
                E::UpdateEksAnywhereSubscription { id: s(id) }
            }
            ("DELETE", ["eks-anywhere-subscriptions", id]) => {
                E::DeleteEksAnywhereSubscription { id: s(id) }
            }
            ("GET", ["tags", arn]) => E::ListTagsForResource { arn: s(arn) },
            ("POST", ["tags", arn]) => E::TagResource { arn: s(arn) },
            ("DELETE", ["tags", arn]) => E::UntagResource { arn: s(arn) },
            _ => return Err(unknown()),
        };
        // A path parameter is never empty (`/clusters//addons` names nothing).
        if seg.len() > 1 && seg.iter().any(|s| s.is_empty()) {
            return Err(unknown());
        }
        Ok(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_paths_are_errors_not_panics() {
        for path in [
            "",
            "//",
            "/clusters/a/b/c/d",
            "/nope",
            "/clusters//addons",
            "/tags/%zz",
        ] {
            assert!(Endpoint::parse(&Method::GET, path).is_err(), "{path}");
        }
        assert_eq!(
            Endpoint::parse(&Method::GET, "/clusters/demo").unwrap(),
            Endpoint::DescribeCluster {
                name: "demo".into()
            }
        );
    }

    #[test]
    fn arns_are_one_encoded_segment() {
        let op = Endpoint::parse(
            &Method::POST,
            "/clusters/demo/access-entries/arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fdev/access-policies",
        )
        .unwrap();
        assert_eq!(
            op,
            Endpoint::AssociateAccessPolicy {
                name: "demo".into(),
                principal: "arn:aws:iam::123456789012:role/dev".into()
            }
        );
    }
}
