//! Verifies the bearer tokens `aws eks get-token` mints: `k8s-aws-v1.` and the
//! base64url of a presigned STS `GetCallerIdentity` URL whose SigV4 signature
//! covers the `x-k8s-aws-id` header, set to the cluster name. The cluster name
//! is only inside the signature, so the signature is recomputed with the
//! secret kemu knows for the access key and the name of the cluster the token
//! was presented to: a token for another cluster does not verify.
//!
//! The identity maps through the cluster's access entries: the entry's
//! username and Kubernetes groups, and `system:masters` for a cluster-wide
//! `AmazonEKSClusterAdminPolicy` (kemu's RBAC stands in for EKS's policy
//! authorizer that way).

use std::sync::Arc;

use base64::Engine;
use chrono::{DateTime, NaiveDateTime, Utc};
use kemu_shared::{ClusterRecord, SharedClock, TokenAuthenticator, UserInfo};
use ring::{digest, hmac};

use crate::Settings;
use crate::catalog::access_policy_arn;
use crate::state::{Kind, State};
use crate::wire::{Query, percent_decode, uri_encode};

/// The prefix of an EKS token.
pub const TOKEN_PREFIX: &str = "k8s-aws-v1.";
/// How long after `X-Amz-Date` a token is accepted (aws-iam-authenticator's
/// window; client-go caches the token for 14 minutes).
pub const VALIDITY: chrono::Duration = chrono::Duration::minutes(15);
/// How far in the future `X-Amz-Date` may be (clock skew).
const SKEW: chrono::Duration = chrono::Duration::minutes(5);

/// The [`TokenAuthenticator`] of EKS clusters.
#[derive(Clone)]
pub struct EksTokenAuthenticator {
    clock: SharedClock,
    settings: Arc<Settings>,
    state: Arc<State>,
}

impl std::fmt::Debug for EksTokenAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EksTokenAuthenticator")
            .finish_non_exhaustive()
    }
}

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The access key id that signed it.
    pub access_key: String,
    /// The STS region it was signed for.
    pub region: String,
}

impl EksTokenAuthenticator {
    /// An authenticator on `clock`, with the credentials of `settings` and the
    /// access entries of `state`.
    pub fn new(clock: SharedClock, settings: Arc<Settings>, state: Arc<State>) -> Self {
        Self {
            clock,
            settings,
            state,
        }
    }

    /// As aws-iam-authenticator: a token is a presigned STS request, so its
    /// host must be an STS endpoint over https (`sts.amazonaws.com`,
    /// `sts[-fips].REGION.amazonaws.com[.cn]`), or one of the configured
    /// hosts where kemu serves STS itself.
    fn check_sts_host(&self, https: bool, host: &str) -> Result<(), String> {
        let name = host
            .rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(host, |(name, _)| name);
        if self.settings.sts_hosts.iter().any(|h| h == name) {
            return Ok(());
        }
        let aws = https && name == host && is_sts_hostname(host);
        if aws {
            Ok(())
        } else {
            Err(format!("unexpected hostname {host:?} in pre-signed URL"))
        }
    }

    /// Verifies `token` for the cluster named `cluster` at the clock's now.
    /// `Ok(None)` if it is not an EKS token at all.
    pub fn verify(&self, cluster: &str, token: &str) -> Result<Option<VerifiedToken>, String> {
        let Some(encoded) = token.strip_prefix(TOKEN_PREFIX) else {
            return Ok(None);
        };
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded.trim_end_matches('='))
            .map_err(|_| "token is not base64url".to_owned())?;
        let url = String::from_utf8(raw).map_err(|_| "token is not a URL".to_owned())?;
        let (https, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            (None, None) => return Err("token URL is not http(s)".into()),
        };
        let (host, path_query) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        self.check_sts_host(https, host)?;
        let (path, query) = path_query.split_once('?').ok_or("token URL has no query")?;
        let path = if path.is_empty() { "/" } else { path };
        let q = Query::parse(query);
        let one = |k: &str| -> Result<&str, String> {
            match q.all(k) {
                [v] => Ok(v.as_str()),
                _ => Err(format!("token URL needs exactly one {k}")),
            }
        };
        if one("Action")? != "GetCallerIdentity" || one("Version")? != "2011-06-15" {
            return Err("token is not a GetCallerIdentity request".into());
        }
        if one("X-Amz-Algorithm")? != "AWS4-HMAC-SHA256" {
            return Err("token is not signed with AWS4-HMAC-SHA256".into());
        }
        let credential = one("X-Amz-Credential")?;
        let [akid, date, region, "sts", "aws4_request"] =
            credential.split('/').collect::<Vec<_>>()[..]
        else {
            return Err("token credential scope is not an STS scope".into());
        };
        let signed = one("X-Amz-SignedHeaders")?;
        if signed != "host;x-k8s-aws-id" {
            return Err("token must sign exactly host and x-k8s-aws-id".into());
        }
        let expires: i64 = one("X-Amz-Expires")?
            .parse()
            .map_err(|_| "bad X-Amz-Expires")?;
        if !(0..=900).contains(&expires) {
            return Err("X-Amz-Expires must be at most 900 seconds".into());
        }
        let amz_date = one("X-Amz-Date")?;
        let signed_at: DateTime<Utc> = NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ")
            .map_err(|_| "bad X-Amz-Date".to_owned())?
            .and_utc();
        if !amz_date.starts_with(date) {
            return Err("X-Amz-Date does not match the credential scope".into());
        }
        let now = self.clock.now();
        if now > signed_at + VALIDITY {
            return Err("token has expired".into());
        }
        if signed_at > now + SKEW {
            return Err("token is signed in the future".into());
        }
        let secret = &self
            .settings
            .credentials
            .get(akid)
            .ok_or_else(|| format!("unknown access key {akid}"))?
            .secret;

        // SigV4 of `GET <path>?<query without signature>` with the signed headers.
        let mut pairs: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                Some((percent_decode(k)?, percent_decode(v)?))
            })
            .filter(|(k, _)| k != "X-Amz-Signature")
            .map(|(k, v)| (uri_encode(&k), uri_encode(&v)))
            .collect();
        pairs.sort();
        let canonical_query: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let canonical = format!(
            "GET\n{path}\n{}\nhost:{host}\nx-k8s-aws-id:{cluster}\n\n{signed}\n{}",
            canonical_query.join("&"),
            hex(digest::digest(&digest::SHA256, b"").as_ref()),
        );
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/sts/aws4_request\n{}",
            hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
        );
        let mut key = format!("AWS4{secret}").into_bytes();
        for part in [date, region, "sts", "aws4_request"] {
            key = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes())
                .as_ref()
                .to_vec();
        }
        let expected = hex(hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, &key),
            string_to_sign.as_bytes(),
        )
        .as_ref());
        let given = one("X-Amz-Signature")?;
        // Compared in constant time: the signature is a secret-derived value.
        let same = expected.len() == given.len()
            && expected
                .bytes()
                .zip(given.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same {
            return Err(format!(
                "token signature does not verify for cluster {cluster}"
            ));
        }
        Ok(Some(VerifiedToken {
            access_key: akid.to_owned(),
            region: region.to_owned(),
        }))
    }

    /// The Kubernetes user of a verified caller of `cluster`.
    fn user(&self, cluster: &ClusterRecord, token: &VerifiedToken) -> UserInfo {
        let principal = self
            .settings
            .credentials
            .get(&token.access_key)
            .map(|c| c.principal_arn.clone())
            .unwrap_or_default();
        let mut user = UserInfo {
            username: principal.clone(),
            uid: format!(
                "aws-iam-authenticator:{}:{}",
                self.settings.account, token.access_key
            ),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        user.extra.insert("arn".into(), vec![principal.clone()]);
        user.extra
            .insert("accessKeyId".into(), vec![token.access_key.clone()]);
        let clusters = self.state.clusters.lock();
        let Some(cs) = clusters.get(&cluster.id) else {
            return user;
        };
        if let Some(entry) = cs
            .items
            .get(&Kind::AccessEntry)
            .and_then(|m| m.get(&principal))
        {
            if let Some(name) = entry.obj.get("username").and_then(|v| v.as_str()) {
                user.username = name.replace("{{SessionName}}", &token.access_key);
            }
            for g in entry
                .obj
                .get("kubernetesGroups")
                .and_then(crate::wire::string_list)
                .unwrap_or_default()
            {
                user.groups.push(g);
            }
        }
        let admin = access_policy_arn("AmazonEKSClusterAdminPolicy");
        if let Some(policies) = cs.policies.get(&principal) {
            if policies.get(&admin).is_some_and(|p| {
                p.pointer("/accessScope/type").and_then(|t| t.as_str()) == Some("cluster")
            }) {
                user.groups.push("system:masters".into());
            }
            user.extra
                .insert("accessPolicies".into(), policies.keys().cloned().collect());
        }
        user
    }
}

impl TokenAuthenticator for EksTokenAuthenticator {
    fn authenticate(
        &self,
        cluster: &ClusterRecord,
        token: &str,
    ) -> Result<Option<UserInfo>, String> {
        match self.verify(&cluster.name, token)? {
            Some(verified) => Ok(Some(self.user(cluster, &verified))),
            None => Ok(None),
        }
    }

    /// The cluster's access entries, each with its
    /// `associatedAccessPolicies`, as the data plane's authorizer reads them.
    fn access_config(&self, cluster: &ClusterRecord) -> serde_json::Value {
        let clusters = self.state.clusters.lock();
        let Some(cs) = clusters.get(&cluster.id) else {
            return serde_json::Value::Null;
        };
        let entries: Vec<serde_json::Value> = cs
            .list(Kind::AccessEntry)
            .map(|(principal, item)| {
                let mut entry = item.value();
                let policies: Vec<serde_json::Value> = cs
                    .policies
                    .get(principal)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default();
                entry["associatedAccessPolicies"] = serde_json::Value::Array(policies);
                entry
            })
            .collect();
        serde_json::json!({ "accessEntries": entries, "creatorArn": cs.creator_arn })
    }
}

/// Whether `host` is one of AWS's STS endpoints: the global one or a
/// regional (or FIPS) one, in the commercial, China or GovCloud partitions.
fn is_sts_hostname(host: &str) -> bool {
    if matches!(host, "sts.amazonaws.com" | "sts-fips.amazonaws.com") {
        return true;
    }
    let Some(regional) = host
        .strip_suffix(".amazonaws.com")
        .or_else(|| host.strip_suffix(".amazonaws.com.cn"))
    else {
        return false;
    };
    let Some(region) = regional
        .strip_prefix("sts.")
        .or_else(|| regional.strip_prefix("sts-fips."))
    else {
        return false;
    };
    // `us-east-1`, `cn-north-1`, `us-gov-west-1`, `ap-southeast-5`.
    let parts: Vec<&str> = region.split('-').collect();
    parts.len() >= 3
        && parts
            .last()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::is_sts_hostname;

    #[test]
    fn sts_hostnames_of_every_partition() {
        for host in [
            "sts.amazonaws.com",
            "sts.us-east-1.amazonaws.com",
            "sts-fips.us-gov-west-1.amazonaws.com",
            "sts.cn-north-1.amazonaws.com.cn",
        ] {
            assert!(is_sts_hostname(host), "{host}");
        }
        for host in [
            "sts.example.com",
            "sts.us-east-1.amazonaws.com.evil.example",
            "evil.us-east-1.amazonaws.com",
            "sts.1.amazonaws.com",
            "sts..amazonaws.com",
        ] {
            assert!(!is_sts_hostname(host), "{host}");
        }
    }
}
