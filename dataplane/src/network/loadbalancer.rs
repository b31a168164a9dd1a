//! What a cloud's load balancer answers for a `type: LoadBalancer` Service,
//! in `status.loadBalancer.ingress`: a DNS name on EKS (an ELB), an IP on GKE
//! and AKS. Values derive from the Service's uid, so they are stable for the
//! Service's life and differ between Services.

use kemu_shared::OwnerScope;
use serde_json::{Value, json};

/// How a cloud exposes a load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadBalancerStyle {
    /// AWS: an ELB DNS name in `region` (Classic by default; NLB with the
    /// `aws-load-balancer-type` annotation or the AWS Load Balancer
    /// Controller's class).
    Elb {
        /// The cluster's region.
        region: String,
    },
    /// GCP: a regional external IP (an internal one with the
    /// `networking.gke.io/load-balancer-type: Internal` annotation).
    Gcp,
    /// Azure: a public IP of the cluster's load balancer (a VNet IP with the
    /// `azure-load-balancer-internal` annotation).
    Azure,
}

const AWS_TYPE: &str = "service.beta.kubernetes.io/aws-load-balancer-type";
const AWS_INTERNAL: &str = "service.beta.kubernetes.io/aws-load-balancer-internal";
const AWS_SCHEME: &str = "service.beta.kubernetes.io/aws-load-balancer-scheme";
const AWS_LBC_CLASS: &str = "service.k8s.aws/nlb";
const GKE_TYPE: &str = "networking.gke.io/load-balancer-type";
const GKE_TYPE_OLD: &str = "cloud.google.com/load-balancer-type";
const AZURE_INTERNAL: &str = "service.beta.kubernetes.io/azure-load-balancer-internal";

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn annotation<'a>(svc: &'a Value, key: &str) -> &'a str {
    svc["metadata"]["annotations"][key].as_str().unwrap_or("")
}

fn hex(h: u64, len: usize) -> String {
    let s = format!("{h:016x}{:016x}", h.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15);
    s[..len].to_owned()
}

impl LoadBalancerStyle {
    /// The style of a cluster in `scope`.
    pub fn for_scope(scope: &OwnerScope) -> Self {
        match scope {
            OwnerScope::Eks { region, .. } => Self::Elb {
                region: region.clone(),
            },
            OwnerScope::Gke { .. } => Self::Gcp,
            OwnerScope::Aks { .. } => Self::Azure,
        }
    }

    /// Whether this cloud's controller handles `svc` (no class, or a class it
    /// owns; a Service of another class is left to that class's controller).
    pub fn handles(&self, svc: &Value) -> bool {
        match svc["spec"]["loadBalancerClass"].as_str() {
            None => true,
            Some(class) => matches!(self, Self::Elb { .. }) && class == AWS_LBC_CLASS,
        }
    }

    /// The `status.loadBalancer.ingress` list for `svc`.
    pub fn ingress(&self, svc: &Value) -> Value {
        let uid = svc["metadata"]["uid"].as_str().unwrap_or_default();
        let h = fnv(uid);
        match self {
            Self::Elb { region } => {
                let internal = annotation(svc, AWS_INTERNAL) == "true"
                    || annotation(svc, AWS_SCHEME) == "internal";
                let prefix = if internal { "internal-" } else { "" };
                let kind = annotation(svc, AWS_TYPE);
                let lbc = kind == "external"
                    || svc["spec"]["loadBalancerClass"].as_str() == Some(AWS_LBC_CLASS);
                let host = if lbc {
                    // The AWS Load Balancer Controller's NLB names.
                    let short = |s: &str| s.chars().take(8).collect::<String>();
                    let ns = svc["metadata"]["namespace"].as_str().unwrap_or_default();
                    let name = svc["metadata"]["name"].as_str().unwrap_or_default();
                    format!(
                        "{prefix}k8s-{}-{}-{}-{}.elb.{region}.amazonaws.com",
                        short(ns),
                        short(name),
                        hex(h, 10),
                        hex(h.rotate_left(17), 16)
                    )
                } else {
                    // The in-tree cloud provider names its ELB `a` + the uid
                    // without dashes, 32 characters in all.
                    let lb_name: String = format!("a{}", uid.replace('-', ""))
                        .chars()
                        .take(32)
                        .collect();
                    if kind == "nlb" {
                        format!(
                            "{prefix}{lb_name}-{}.elb.{region}.amazonaws.com",
                            hex(h, 16)
                        )
                    } else {
                        format!(
                            "{prefix}{lb_name}-{}.{region}.elb.amazonaws.com",
                            1_000_000_000 + h % 1_000_000_000
                        )
                    }
                };
                json!([{ "hostname": host }])
            }
            Self::Gcp => {
                let internal = annotation(svc, GKE_TYPE).eq_ignore_ascii_case("internal")
                    || annotation(svc, GKE_TYPE_OLD).eq_ignore_ascii_case("internal");
                let b = h.to_be_bytes();
                let ip = if internal {
                    format!("10.128.{}.{}", b[0] % 16, 2 + b[1] % 250)
                } else {
                    format!("34.{}.{}.{}", 16 + b[0] % 150, b[1], 1 + b[2] % 254)
                };
                json!([{ "ip": ip, "ipMode": "VIP" }])
            }
            Self::Azure => {
                let internal = annotation(svc, AZURE_INTERNAL) == "true";
                let b = h.to_be_bytes();
                let ip = if internal {
                    format!("10.224.{}.{}", b[0] % 16, 4 + b[1] % 250)
                } else {
                    format!("20.{}.{}.{}", 40 + b[0] % 200, b[1], 1 + b[2] % 254)
                };
                json!([{ "ip": ip, "ipMode": "VIP" }])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(annotations: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default",
            "uid": "0d9c3c5e-61a0-4b8e-9a4e-2f3b1c0d9e8f", "annotations": annotations},
            "spec": {"type": "LoadBalancer"}})
    }

    #[test]
    fn eks_answers_elb_hostnames() {
        let style = LoadBalancerStyle::Elb {
            region: "eu-west-1".into(),
        };
        let classic = style.ingress(&svc(json!({})))[0]["hostname"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            classic.starts_with("a0d9c3c5e61a04b8e9a4e2f3b1c0d9e8-"),
            "{classic}"
        );
        assert!(
            classic.ends_with(".eu-west-1.elb.amazonaws.com"),
            "{classic}"
        );
        let nlb = style.ingress(&svc(json!({AWS_TYPE: "nlb"})))[0]["hostname"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(nlb.ends_with(".elb.eu-west-1.amazonaws.com"), "{nlb}");
        let lbc = style.ingress(&svc(json!({AWS_TYPE: "external"})))[0]["hostname"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(lbc.starts_with("k8s-default-web-"), "{lbc}");
    }

    #[test]
    fn gke_and_aks_answer_ips() {
        let gcp = LoadBalancerStyle::Gcp.ingress(&svc(json!({})));
        assert!(gcp[0]["ip"].as_str().unwrap().starts_with("34."), "{gcp}");
        assert_eq!(gcp[0]["ipMode"], "VIP");
        let az = LoadBalancerStyle::Azure.ingress(&svc(json!({AZURE_INTERNAL: "true"})));
        assert!(az[0]["ip"].as_str().unwrap().starts_with("10.224."), "{az}");
        assert!(
            !LoadBalancerStyle::Gcp
                .handles(&json!({"spec": {"loadBalancerClass": "example.com/lb"}}))
        );
    }
}
