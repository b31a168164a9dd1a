//! The core/v1 kinds other than workloads, as upstream's
//! `pkg/apis/core/validation` checks them.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::errors::Errors;
use super::meta;
use super::pods::{PORT_RANGE, bad_port};
use crate::authz::admission::quantity::Quantity;

/// ConfigMap and Secret data together may hold at most 1 MiB.
const MAX_DATA: usize = 1024 * 1024;

/// What `immutable: true` freezes, on update.
fn frozen(e: &mut Errors, o: &Value, old: &Value, fields: &[&str]) {
    if old["immutable"] != json!(true) {
        return;
    }
    if o["immutable"] != json!(true) {
        e.forbidden("immutable", "field is immutable when `immutable` is set");
    }
    for f in fields {
        if o[*f] != old[*f] {
            e.forbidden(f, "field is immutable when `immutable` is set");
        }
    }
}

/// ConfigMaps.
pub fn config_map(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let mut size = 0;
    for (k, v) in o["data"].as_object().into_iter().flatten() {
        let at = format!("data[{k}]");
        e.invalid_each(&at, &json!(k), meta::config_key(k));
        if o["binaryData"].get(k).is_some() {
            e.invalid(&at, &json!(k), "duplicate of key present in binaryData");
        }
        size += v.as_str().map_or(0, str::len);
    }
    for (k, v) in o["binaryData"].as_object().into_iter().flatten() {
        e.invalid_each(&format!("binaryData[{k}]"), &json!(k), meta::config_key(k));
        // base64 holds 3 bytes in 4 characters
        size += v.as_str().map_or(0, |s| s.len() / 4 * 3);
    }
    if size > MAX_DATA {
        // upstream's path is `field.NewPath("")`, printed `[]`
        e.too_long("[]", MAX_DATA);
    }
    if let Some(old) = old {
        frozen(e, o, old, &["data", "binaryData"]);
    }
}

/// Secrets: keys, the size, the keys each type requires, and on update the
/// type.
pub fn secret(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let mut size = 0;
    let mut keys = Vec::new();
    for bag in ["data", "stringData"] {
        for (k, v) in o[bag].as_object().into_iter().flatten() {
            e.invalid_each(&format!("data[{k}]"), &json!(k), meta::config_key(k));
            size += v.as_str().map_or(0, str::len);
            keys.push(k.as_str());
        }
    }
    if size > MAX_DATA {
        e.too_long("data", MAX_DATA);
    }
    let has = |k: &str| keys.contains(&k);
    match o["type"].as_str().unwrap_or_default() {
        "kubernetes.io/service-account-token"
            if o["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                .as_str()
                .is_none_or(str::is_empty) =>
        {
            e.required(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "",
            );
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => e.required("data[.dockercfg]", ""),
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
            e.required("data[.dockerconfigjson]", "");
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            e.required("data[username]", "");
            e.required("data[password]", "");
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            e.required("data[ssh-privatekey]", "");
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    e.required(&format!("data[{k}]"), "");
                }
            }
        }
        _ => {}
    }
    if let Some(old) = old {
        e.immutable("type", &o["type"], &old["type"]);
        frozen(e, o, old, &["data"]);
    }
}

/// Services: types, ports and their targets.
pub fn service(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    e.one_of(
        "spec.type",
        &spec["type"],
        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
    );
    let ports = spec["ports"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        if ports.len() > 1 && p["name"].as_str().is_none_or(str::is_empty) {
            e.required(&format!("{at}.name"), "");
        }
        if bad_port(&p["port"]) {
            e.invalid(&format!("{at}.port"), &p["port"], PORT_RANGE);
        }
        e.one_of(
            &format!("{at}.protocol"),
            &p["protocol"],
            &["SCTP", "TCP", "UDP"],
        );
        if bad_port(&p["targetPort"]) {
            e.invalid(&format!("{at}.targetPort"), &p["targetPort"], PORT_RANGE);
        }
        if p["nodePort"].as_i64().is_some_and(|n| n != 0) && bad_port(&p["nodePort"]) {
            e.invalid(&format!("{at}.nodePort"), &p["nodePort"], PORT_RANGE);
        }
    }
}

/// What upstream warns of in a Service: settings a headless Service ignores.
pub fn service_warnings(o: &Value) -> Vec<String> {
    let spec = &o["spec"];
    let mut w = Vec::new();
    if spec["clusterIP"] == "None" {
        if spec["loadBalancerIP"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
        {
            w.push("spec.loadBalancerIP is ignored for headless services".to_owned());
        }
        if spec["externalIPs"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            w.push("spec.externalIPs is ignored for headless services".to_owned());
        }
        if spec["sessionAffinity"]
            .as_str()
            .is_some_and(|a| a != "None")
        {
            w.push("spec.SessionAffinity is ignored for headless services".to_owned());
        }
    }
    w
}

/// Endpoints: addresses that are IPs.
pub fn endpoints(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, subset) in o["subsets"].as_array().into_iter().flatten().enumerate() {
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in subset[list].as_array().into_iter().flatten().enumerate() {
                let ip = &a["ip"];
                if ip.as_str().and_then(|s| s.parse::<IpAddr>().ok()).is_none() {
                    let at = format!("subsets[{i}].{list}[{j}].ip");
                    e.invalid(
                        &at,
                        ip,
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    );
                    e.invalid(&at, ip, "must be a valid IP address");
                }
            }
        }
    }
}

/// Whether a quantity is below zero.
fn negative(q: &Value) -> bool {
    Quantity::of_json(q).is_some_and(|q| q.nanos < 0)
}

/// LimitRanges: each item's bounds in order, min ≤ default request ≤
/// default ≤ max, and ratios of at least 1 (upstream's
/// `ValidateLimitRange`, resource by resource).
pub fn limit_range(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    use crate::authz::admission::quantity::Quantity;
    for (i, item) in o["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = |bag: &str, k: &str| format!("spec.limits[{i}].{bag}[{k}]");
        let get = |bag: &str, k: &str| Quantity::of_json(&item[bag][k]);
        let mut keys: Vec<&String> = [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ]
        .iter()
        .flat_map(|bag| item[*bag].as_object().into_iter().flat_map(|m| m.keys()))
        .collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (min, max) = (get("min", k), get("max", k));
            let (default, request) = (get("default", k), get("defaultRequest", k));
            let shown = |q: &Quantity| json!(q.to_string());
            if let (Some(min), Some(max)) = (&min, &max)
                && min > max
            {
                e.invalid(
                    &at("min", k),
                    &shown(min),
                    &format!("min value {min} is greater than max value {max}"),
                );
            }
            if let (Some(r), Some(min)) = (&request, &min)
                && min > r
            {
                e.invalid(
                    &at("defaultRequest", k),
                    &shown(r),
                    &format!("min value {min} is greater than default request value {r}"),
                );
            }
            if let (Some(r), Some(max)) = (&request, &max)
                && r > max
            {
                e.invalid(
                    &at("defaultRequest", k),
                    &shown(r),
                    &format!("default request value {r} is greater than max value {max}"),
                );
            }
            if let (Some(r), Some(d)) = (&request, &default)
                && r > d
            {
                e.invalid(
                    &at("defaultRequest", k),
                    &shown(r),
                    &format!("default request value {r} is greater than default limit value {d}"),
                );
            }
            if let (Some(d), Some(min)) = (&default, &min)
                && min > d
            {
                e.invalid(
                    &at("default", k),
                    &shown(min),
                    &format!("min value {min} is greater than default value {d}"),
                );
            }
            if let (Some(d), Some(max)) = (&default, &max)
                && d > max
            {
                e.invalid(
                    &at("default", k),
                    &shown(max),
                    &format!("default value {d} is greater than max value {max}"),
                );
            }
            if let Some(ratio) = get("maxLimitRequestRatio", k)
                && ratio < Quantity::from_units(1)
            {
                e.invalid(
                    &at("maxLimitRequestRatio", k),
                    &shown(&ratio),
                    &format!("ratio {ratio} is less than 1"),
                );
            }
        }
    }
}

/// ResourceQuotas: no negative limits.
pub fn resource_quota(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for bag in ["spec.hard", "status.hard", "status.used"] {
        let (a, b) = bag.split_once('.').unwrap_or_default();
        for (k, q) in o[a][b].as_object().into_iter().flatten() {
            if negative(q) {
                let shown = json!(q.as_str().map_or_else(|| q.to_string(), str::to_owned));
                e.invalid(
                    &format!("{bag}[{k}]"),
                    &shown,
                    "must be greater than or equal to 0",
                );
            }
        }
    }
}

/// PersistentVolumeClaims: at least one access mode.
pub fn persistent_volume_claim(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    if o["spec"]["accessModes"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        e.required("spec.accessModes", "at least 1 access mode is required");
    }
}

/// The volume sources a PersistentVolume may name.
const PV_SOURCES: [&str; 22] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// PersistentVolumes: exactly one volume source.
pub fn persistent_volume(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    if !PV_SOURCES.iter().any(|s| spec[*s].is_object()) {
        e.required("spec", "must specify a volume type");
    }
}

/// Nodes: taints with a known effect (upstream names the path
/// `metadata.taints`).
pub fn node(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, t) in o["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let effect = &t["effect"];
        let at = format!("metadata.taints[{i}].effect");
        match effect.as_str() {
            None | Some("") => e.required(&at, ""),
            Some(_) => e.one_of(
                &at,
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ),
        }
    }
}

/// core/v1 Events: the involved object is in the Event's namespace.
pub fn event(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
    let involved = &o["involvedObject"]["namespace"];
    if let Some(i) = involved.as_str()
        && !i.is_empty()
        && !ns.is_empty()
        && i != ns
    {
        e.invalid(
            "involvedObject.namespace",
            involved,
            "does not match event.namespace",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::errors::messages;
    use super::*;

    #[test]
    fn config_data_keys_and_immutability() {
        assert_eq!(
            messages(
                config_map,
                json!({"data": {"ok": "v", "bad key!": "v"}}),
                None
            )
            .len(),
            1
        );
        assert_eq!(
            messages(
                config_map,
                json!({"immutable": true, "data": {"a": "2"}}),
                Some(json!({"immutable": true, "data": {"a": "1"}}))
            ),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
    }

    #[test]
    fn secrets_have_the_keys_of_their_type() {
        assert_eq!(
            messages(
                secret,
                json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
                None
            ),
            ["data[tls.key]: Required value"]
        );
        assert_eq!(
            messages(
                secret,
                json!({"type": "Opaque"}),
                Some(json!({"type": "kubernetes.io/basic-auth"}))
            ),
            ["type: Invalid value: \"Opaque\": field is immutable"]
        );
    }

    #[test]
    fn service_ports_are_in_range() {
        assert_eq!(
            messages(
                service,
                json!({"spec": {"ports": [{"port": 70000, "targetPort": 70000}]}}),
                None
            ),
            [
                "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"
            ]
        );
    }
}
