//! NetworkPolicy evaluation: since no packets flow, this answers whether
//! traffic from one Pod to another on a port would be allowed under the
//! NetworkPolicies of both namespaces, with upstream's semantics: a Pod
//! selected by a policy of type Ingress (Egress) is isolated in that
//! direction and admits only what some selecting policy's rules allow;
//! traffic needs both the source's egress and the destination's ingress.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::label_selector as selector;

/// One side of a connection: the Pod and its Namespace objects.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    /// The Pod (labels, `status.podIP`, container ports).
    pub pod: &'a Value,
    /// Its Namespace (labels).
    pub namespace: &'a Value,
}

/// The destination port: a number or a named container port, and a protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// Port number, or a container port name.
    pub port: String,
    /// `TCP` (default), `UDP` or `SCTP`.
    pub protocol: String,
}

/// The answer for one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Direction {
    /// Whether some policy selects the Pod for this direction.
    pub isolated: bool,
    /// Whether the traffic passes in this direction.
    pub allowed: bool,
    /// `namespace/name` of the policies whose rules allow it.
    pub allowed_by: Vec<String>,
}

/// Whether traffic would flow, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Egress from the source and ingress to the destination both allow it.
    pub allowed: bool,
    /// The source's egress.
    pub egress: Direction,
    /// The destination's ingress.
    pub ingress: Direction,
}

impl Verdict {
    /// As JSON, for an evaluation endpoint.
    pub fn to_json(&self) -> Value {
        let d = |d: &Direction| json!({"isolated": d.isolated, "allowed": d.allowed, "allowedBy": d.allowed_by});
        json!({"allowed": self.allowed, "egress": d(&self.egress), "ingress": d(&self.ingress)})
    }
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn empty() -> Value {
    json!({})
}

fn labels(v: &Value) -> Value {
    v.pointer("/metadata/labels").cloned().unwrap_or_else(empty)
}

/// Namespace labels, with the `kubernetes.io/metadata.name` label the API
/// server always sets.
fn ns_labels(ns: &Value) -> Value {
    let mut l = labels(ns);
    l["kubernetes.io/metadata.name"] = json!(s(ns, "/metadata/name"));
    l
}

fn policy_types(p: &Value) -> (bool, bool) {
    match p.pointer("/spec/policyTypes").and_then(Value::as_array) {
        Some(types) => (
            types.iter().any(|t| t == "Ingress"),
            types.iter().any(|t| t == "Egress"),
        ),
        None => (
            true,
            p.pointer("/spec/egress").is_some_and(|e| !e.is_null()),
        ),
    }
}

fn selects(policy: &Value, ep: Endpoint) -> bool {
    s(policy, "/metadata/namespace") == s(ep.namespace, "/metadata/name")
        && selector::matches(
            policy.pointer("/spec/podSelector").unwrap_or(&empty()),
            &labels(ep.pod),
        )
}

fn in_cidr(ip: &str, cidr: &str) -> bool {
    let Some((net, len)) = cidr.split_once('/') else {
        return false;
    };
    let (Ok(ip), Ok(net), Ok(len)) = (
        ip.parse::<IpAddr>(),
        net.parse::<IpAddr>(),
        len.parse::<u32>(),
    ) else {
        return false;
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) if len <= 32 => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) if len <= 128 => {
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// Whether `peer` (a from/to entry of a policy in `policy_ns`) matches `ep`.
fn peer_matches(peer: &Value, policy_ns: &str, ep: Endpoint) -> bool {
    if let Some(block) = peer.get("ipBlock") {
        let ip = s(ep.pod, "/status/podIP");
        let excepted = block
            .get("except")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|c| in_cidr(ip, c));
        return in_cidr(ip, s(block, "/cidr")) && !excepted;
    }
    let ns_ok = match peer.get("namespaceSelector") {
        Some(sel) => selector::matches(sel, &ns_labels(ep.namespace)),
        None => s(ep.namespace, "/metadata/name") == policy_ns,
    };
    let pod_ok = match peer.get("podSelector") {
        Some(sel) => selector::matches(sel, &labels(ep.pod)),
        None => true,
    };
    ns_ok && pod_ok
}

/// The destination's container port number for a named port.
fn resolve_named(dest: &Value, name: &str, protocol: &str) -> Option<i64> {
    dest.pointer("/spec/containers")
        .and_then(Value::as_array)?
        .iter()
        .flat_map(|c| {
            c.get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .find(|p| s(p, "/name") == name && proto(p) == protocol)
        .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
}

fn proto(v: &Value) -> &str {
    match s(v, "/protocol") {
        "" => "TCP",
        p => p,
    }
}

fn port_matches(rule_port: &Value, port: &Port, dest: &Value) -> bool {
    if proto(rule_port) != port.protocol {
        return false;
    }
    let wanted: Option<i64> = port
        .port
        .parse()
        .ok()
        .or_else(|| resolve_named(dest, &port.port, &port.protocol));
    match rule_port.get("port") {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => {
            let start = n.as_i64().unwrap_or(-1);
            let end = rule_port
                .get("endPort")
                .and_then(Value::as_i64)
                .unwrap_or(start);
            wanted.is_some_and(|w| w >= start && w <= end)
        }
        Some(Value::String(name)) => {
            // A named port in a rule names the destination's container port.
            name == &port.port
                || resolve_named(dest, name, &port.protocol).is_some_and(|n| Some(n) == wanted)
        }
        _ => false,
    }
}

fn direction(
    policies: &[Value],
    subject: Endpoint,
    other: Endpoint,
    port: &Port,
    dest: &Value,
    ingress: bool,
) -> Direction {
    let (rules_key, peers_key) = if ingress {
        ("ingress", "from")
    } else {
        ("egress", "to")
    };
    let mut d = Direction::default();
    for p in policies {
        let (ing, eg) = policy_types(p);
        if !(if ingress { ing } else { eg }) || !selects(p, subject) {
            continue;
        }
        d.isolated = true;
        let ns = s(p, "/metadata/namespace");
        let allows = p
            .pointer(&format!("/spec/{rules_key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|rule| {
                let peers_ok = match rule.get(peers_key).and_then(Value::as_array) {
                    None => true,
                    Some(peers) if peers.is_empty() => true,
                    Some(peers) => peers.iter().any(|peer| peer_matches(peer, ns, other)),
                };
                let ports_ok = match rule.get("ports").and_then(Value::as_array) {
                    None => true,
                    Some(ports) if ports.is_empty() => true,
                    Some(ports) => ports.iter().any(|rp| port_matches(rp, port, dest)),
                };
                peers_ok && ports_ok
            });
        if allows {
            d.allowed_by
                .push(format!("{ns}/{}", s(p, "/metadata/name")));
        }
    }
    d.allowed = !d.isolated || !d.allowed_by.is_empty();
    d
}

/// Whether traffic from `from` to `to` on `port` would be allowed by
/// `policies` (every NetworkPolicy of both namespaces, or of the cluster).
pub fn evaluate(policies: &[Value], from: Endpoint, to: Endpoint, port: &Port) -> Verdict {
    let egress = direction(policies, from, to, port, to.pod, false);
    let ingress = direction(policies, to, from, port, to.pod, true);
    Verdict {
        allowed: egress.allowed && ingress.allowed,
        egress,
        ingress,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, labels: Value) -> Value {
        json!({"metadata":{"name":name,"labels":labels}})
    }

    fn pod(ns: &str, labels: Value, ip: &str) -> Value {
        json!({"metadata":{"namespace":ns,"labels":labels},"status":{"podIP":ip},
               "spec":{"containers":[{"name":"c","ports":[{"name":"http","containerPort":8080}]}]}})
    }

    fn tcp(p: &str) -> Port {
        Port {
            port: p.into(),
            protocol: "TCP".into(),
        }
    }

    #[test]
    fn isolation_and_rules() {
        let (prod, dev) = (
            ns("prod", json!({"env":"prod"})),
            ns("dev", json!({"env":"dev"})),
        );
        let web = pod("prod", json!({"app":"web"}), "10.0.0.2");
        let api = pod("prod", json!({"app":"api"}), "10.0.0.3");
        let tool = pod("dev", json!({"app":"tool"}), "10.0.1.9");
        let e = |p, n| Endpoint {
            pod: p,
            namespace: n,
        };
        // No policy: everything flows.
        assert!(evaluate(&[], e(&tool, &dev), e(&api, &prod), &tcp("8080")).allowed);

        let deny_all =
            json!({"metadata":{"name":"deny","namespace":"prod"},"spec":{"podSelector":{}}});
        let allow_web = json!({"metadata":{"name":"web-to-api","namespace":"prod"},"spec":{
            "podSelector":{"matchLabels":{"app":"api"}},
            "ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"web"}}}],"ports":[{"port":"http"}]}]}});
        let ps = vec![deny_all, allow_web];
        let v = evaluate(&ps, e(&web, &prod), e(&api, &prod), &tcp("8080"));
        assert!(v.allowed);
        assert_eq!(v.ingress.allowed_by, vec!["prod/web-to-api"]);
        assert!(!evaluate(&ps, e(&web, &prod), e(&api, &prod), &tcp("9090")).allowed);
        assert!(!evaluate(&ps, e(&tool, &dev), e(&api, &prod), &tcp("8080")).allowed);
        assert!(!evaluate(&ps, e(&api, &prod), e(&web, &prod), &tcp("80")).allowed);
        // UDP is not TCP.
        let udp = Port {
            port: "8080".into(),
            protocol: "UDP".into(),
        };
        assert!(!evaluate(&ps, e(&web, &prod), e(&api, &prod), &udp).allowed);

        // Namespace selectors and ipBlocks.
        let from_dev = json!({"metadata":{"name":"from-dev","namespace":"prod"},"spec":{
            "podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"dev"}}}]}]}});
        assert!(
            evaluate(
                std::slice::from_ref(&from_dev),
                e(&tool, &dev),
                e(&api, &prod),
                &tcp("1")
            )
            .allowed
        );
        let block = json!({"metadata":{"name":"block","namespace":"prod"},"spec":{
            "podSelector":{},"ingress":[{"from":[{"ipBlock":{"cidr":"10.0.0.0/16","except":["10.0.1.0/24"]}}]}]}});
        assert!(
            evaluate(
                std::slice::from_ref(&block),
                e(&web, &prod),
                e(&api, &prod),
                &tcp("1")
            )
            .allowed
        );
        assert!(
            !evaluate(
                std::slice::from_ref(&block),
                e(&tool, &dev),
                e(&api, &prod),
                &tcp("1")
            )
            .allowed
        );

        // Egress isolation of the source, with a port range.
        let egress = json!({"metadata":{"name":"egress","namespace":"dev"},"spec":{
            "podSelector":{},"policyTypes":["Egress"],"egress":[{"ports":[{"port":8000,"endPort":8100}]}]}});
        let v = evaluate(
            std::slice::from_ref(&egress),
            e(&tool, &dev),
            e(&api, &prod),
            &tcp("8080"),
        );
        assert!(v.allowed && v.egress.isolated);
        assert!(
            !evaluate(
                std::slice::from_ref(&egress),
                e(&tool, &dev),
                e(&api, &prod),
                &tcp("443")
            )
            .allowed
        );
        assert_eq!(v.to_json()["egress"]["allowedBy"], json!(["dev/egress"]));
    }
}
