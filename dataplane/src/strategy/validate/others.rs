//! The kinds of the other API groups (autoscaling, policy, networking,
//! RBAC, storage, scheduling, node, coordination, discovery, admission
//! registration, certificates, flow control), each with the checks of its
//! upstream `validation` package that kemu makes.

use serde_json::{Value, json};

use super::errors::Errors;
use super::meta;

/// HorizontalPodAutoscalers (v1 and v2 share the checks).
pub fn horizontal_pod_autoscaler(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let spec = &o["spec"];
    let min = &spec["minReplicas"];
    e.at_least("spec.minReplicas", min, 1);
    let max = &spec["maxReplicas"];
    let max_n = max.as_i64().unwrap_or(0);
    if max_n < 1 {
        e.invalid("spec.maxReplicas", &json!(max_n), "must be greater than 0");
    }
    if min.as_i64().is_some_and(|m| max_n < m) {
        e.invalid(
            "spec.maxReplicas",
            &json!(max_n),
            "must be greater than or equal to `minReplicas`",
        );
    }
    let target = &spec["scaleTargetRef"];
    for f in ["kind", "name"] {
        e.require_str(&format!("spec.scaleTargetRef.{f}"), &target[f], "");
    }
    let unchanged = old.is_some_and(|old| {
        let r = &old["spec"]["scaleTargetRef"];
        r["apiVersion"] == target["apiVersion"] && r["kind"] == target["kind"]
    });
    let version = target["apiVersion"].as_str().unwrap_or_default();
    if !unchanged && target["kind"] != "ReplicationController" && !version.contains('/') {
        e.invalid(
            "spec.scaleTargetRef.apiVersion",
            &json!(version),
            "apiVersion must specify API group",
        );
    }
}

/// Leases: a positive duration.
pub fn lease(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let d = &o["spec"]["leaseDurationSeconds"];
    if d.as_i64().is_some_and(|d| d <= 0) {
        e.invalid("spec.leaseDurationSeconds", d, "must be greater than 0");
    }
}

/// Ingresses: each HTTP path has a type.
pub fn ingress(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, rule) in o["spec"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let paths = rule["http"]["paths"].as_array().into_iter().flatten();
        for (j, path) in paths.enumerate() {
            let at = format!("spec.rules[{i}].http.paths[{j}].pathType");
            match path["pathType"].as_str() {
                None | Some("") => e.required(&at, "pathType must be specified"),
                Some(_) => e.one_of(
                    &at,
                    &path["pathType"],
                    &["Exact", "ImplementationSpecific", "Prefix"],
                ),
            }
        }
    }
}

/// IngressClasses: a controller.
pub fn ingress_class(e: &mut Errors, o: &Value, old: Option<&Value>) {
    e.require_str("spec.controller", &o["spec"]["controller"], "");
    if let Some(old) = old {
        e.immutable(
            "spec.controller",
            &o["spec"]["controller"],
            &old["spec"]["controller"],
        );
    }
}

/// NetworkPolicies: port protocols.
pub fn network_policy(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for dir in ["ingress", "egress"] {
        for (i, rule) in o["spec"][dir].as_array().into_iter().flatten().enumerate() {
            for (j, port) in rule["ports"].as_array().into_iter().flatten().enumerate() {
                e.one_of(
                    &format!("spec.{dir}[{i}].ports[{j}].protocol"),
                    &port["protocol"],
                    &["TCP", "UDP", "SCTP"],
                );
            }
        }
    }
}

/// PodDisruptionBudgets: not both bounds.
pub fn pod_disruption_budget(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
        // Upstream shows the internal Go struct; its fields, in its order.
        let shown = json!({
            "MinAvailable": spec["minAvailable"],
            "Selector": spec["selector"],
            "MaxUnavailable": spec["maxUnavailable"],
            "UnhealthyPodEvictionPolicy": spec["unhealthyPodEvictionPolicy"],
        });
        e.invalid(
            "spec",
            &shown,
            "minAvailable and maxUnavailable cannot be both set",
        );
    }
}

/// RBAC rules: verbs, and not both resources and non-resource URLs.
fn rules(e: &mut Errors, o: &Value, cluster: bool) {
    for (i, r) in o["rules"].as_array().into_iter().flatten().enumerate() {
        let at = format!("rules[{i}]");
        if r["verbs"].as_array().is_none_or(Vec::is_empty) {
            e.required(
                &format!("{at}.verbs"),
                "verbs must contain at least one value",
            );
        }
        let urls = r["nonResourceURLs"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
        if urls && !cluster {
            e.invalid(
                &format!("{at}.nonResourceURLs"),
                &r["nonResourceURLs"],
                "namespaced rules cannot apply to non-resource URLs",
            );
        }
        let groups = r["apiGroups"].as_array().is_some_and(|a| !a.is_empty());
        let resources = r["resources"].as_array().is_some_and(|a| !a.is_empty());
        if urls && (groups || resources) {
            e.invalid(
                &format!("{at}.nonResourceURLs"),
                &r["nonResourceURLs"],
                "rules cannot apply to both regular resources and non-resource URLs",
            );
        }
        if !urls && !groups {
            e.required(
                &format!("{at}.apiGroups"),
                "resource rules must supply at least one api group",
            );
        }
        if !urls && !resources {
            e.required(
                &format!("{at}.resources"),
                "resource rules must supply at least one resource",
            );
        }
    }
}

/// Roles.
pub fn role(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    rules(e, o, false);
}

/// ClusterRoles.
pub fn cluster_role(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    rules(e, o, true);
}

/// Role and ClusterRole bindings: the role's kind, subjects, and a role
/// reference fixed at create.
fn binding(e: &mut Errors, o: &Value, old: Option<&Value>, cluster: bool) {
    let r = &o["roleRef"];
    let kinds: &[&str] = if cluster {
        &["ClusterRole"]
    } else {
        &["Role", "ClusterRole"]
    };
    match r["kind"].as_str() {
        None | Some("") => e.required("roleRef.kind", ""),
        Some(_) => e.one_of("roleRef.kind", &r["kind"], kinds),
    }
    e.require_str("roleRef.name", &r["name"], "");
    for (i, s) in o["subjects"].as_array().into_iter().flatten().enumerate() {
        let at = format!("subjects[{i}]");
        e.require_str(&format!("{at}.name"), &s["name"], "");
        match s["kind"].as_str() {
            Some("ServiceAccount") => {
                if cluster {
                    e.require_str(&format!("{at}.namespace"), &s["namespace"], "");
                }
            }
            Some("User" | "Group") => {}
            _ => e.unsupported(
                &format!("{at}.kind"),
                &s["kind"],
                &["ServiceAccount", "User", "Group"],
            ),
        }
    }
    if let Some(old) = old
        && old["roleRef"] != *r
    {
        // Upstream shows the internal Go struct.
        let shown = json!({"APIGroup": r["apiGroup"], "Kind": r["kind"], "Name": r["name"]});
        e.invalid("roleRef", &shown, "cannot change roleRef");
    }
}

/// RoleBindings.
pub fn role_binding(e: &mut Errors, o: &Value, old: Option<&Value>) {
    binding(e, o, old, false);
}

/// ClusterRoleBindings.
pub fn cluster_role_binding(e: &mut Errors, o: &Value, old: Option<&Value>) {
    binding(e, o, old, true);
}

/// StorageClasses: a provisioner; parameters and provisioner fixed.
pub fn storage_class(e: &mut Errors, o: &Value, old: Option<&Value>) {
    e.require_str("provisioner", &o["provisioner"], "");
    e.one_of(
        "reclaimPolicy",
        &o["reclaimPolicy"],
        &["Delete", "Recycle", "Retain"],
    );
    e.one_of(
        "volumeBindingMode",
        &o["volumeBindingMode"],
        &["Immediate", "WaitForFirstConsumer"],
    );
    if let Some(old) = old {
        if o["parameters"] != old["parameters"] {
            e.forbidden("parameters", "updates to parameters are forbidden.");
        }
        if o["provisioner"] != old["provisioner"] {
            e.forbidden("provisioner", "updates to provisioner are forbidden.");
        }
    }
}

/// VolumeAttributesClasses: a driver.
pub fn volume_attributes_class(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    e.require_str("driverName", &o["driverName"], "");
}

/// CSIDrivers: lifecycle modes; `attachRequired` fixed.
pub fn csi_driver(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let modes = o["spec"]["volumeLifecycleModes"]
        .as_array()
        .into_iter()
        .flatten();
    for m in modes {
        e.one_of("spec.volumeLifecycleModes", m, &["Persistent", "Ephemeral"]);
    }
    if let Some(old) = old {
        // upstream's path says `attachedRequired`
        e.immutable(
            "spec.attachedRequired",
            &o["spec"]["attachRequired"],
            &old["spec"]["attachRequired"],
        );
    }
}

/// CSINodes: each driver's node ID.
pub fn csi_node(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, d) in o["spec"]["drivers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        e.require_str(&format!("spec.drivers[{i}].nodeID"), &d["nodeID"], "");
    }
}

/// A name that must be a DNS subdomain (and is required).
fn subdomain(e: &mut Errors, field: &str, v: &Value, required: bool) {
    let s = v.as_str().unwrap_or_default();
    if required && s.is_empty() {
        e.required(field, "");
    }
    e.invalid_each(field, &json!(s), meta::dns_subdomain(s));
}

/// CSIStorageCapacities: a storage class name.
pub fn csi_storage_capacity(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    subdomain(e, "storageClassName", &o["storageClassName"], false);
}

/// VolumeAttachments: an attacher; the spec fixed.
pub fn volume_attachment(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let spec = &o["spec"];
    subdomain(e, "spec.attacher", &spec["attacher"], true);
    e.require_str("spec.nodeName", &spec["nodeName"], "");
    if let Some(old) = old
        && spec != &old["spec"]
    {
        let shown = json!({
            "Attacher": spec["attacher"],
            "Source": {"PersistentVolumeName": spec["source"]["persistentVolumeName"],
                "InlineVolumeSpec": spec["source"]["inlineVolumeSpec"]},
            "NodeName": spec["nodeName"],
        });
        e.invalid("spec", &shown, "field is immutable");
    }
}

/// Upstream's ceiling for a user's PriorityClass.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// PriorityClasses: a value of at most one billion (but for `system-`
/// classes), fixed at create.
pub fn priority_class(e: &mut Errors, o: &Value, old: Option<&Value>) {
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    if !name.starts_with("system-")
        && o["value"]
            .as_i64()
            .is_some_and(|v| v > HIGHEST_USER_PRIORITY)
    {
        e.forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        );
    }
    if let Some(old) = old
        && o["value"] != old["value"]
    {
        e.forbidden("value", "may not be changed in an update.");
    }
}

/// RuntimeClasses: a handler that is a DNS label.
pub fn runtime_class(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let h = o["handler"].as_str().unwrap_or_default();
    if h.is_empty() {
        e.required("handler", "");
    } else {
        e.invalid_each("handler", &o["handler"], meta::dns_label(h));
    }
}

/// EndpointSlices: a known address type.
pub fn endpoint_slice(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    match o["addressType"].as_str() {
        None | Some("") => e.required("addressType", ""),
        Some(_) => e.one_of("addressType", &o["addressType"], &["FQDN", "IPv4", "IPv6"]),
    }
}

/// ValidatingAdmissionPolicies: every CEL expression compiles.
pub fn admission_policy(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    let lists: [(&str, &[&str]); 4] = [
        ("matchConditions", &["expression"]),
        ("variables", &["expression"]),
        ("validations", &["expression", "messageExpression"]),
        ("auditAnnotations", &["valueExpression"]),
    ];
    for (list, fields) in lists {
        for (i, item) in spec[list].as_array().into_iter().flatten().enumerate() {
            for field in fields {
                let Some(expression) = item[*field].as_str().filter(|x| !x.is_empty()) else {
                    continue;
                };
                if let Err(why) = crate::authz::admission::compile_cel(expression) {
                    e.invalid(
                        &format!("spec.{list}[{i}].{field}"),
                        &json!(expression),
                        &format!("compilation failed: {why}"),
                    );
                }
            }
        }
    }
}

/// DeviceClasses: every selector's CEL expression compiles.
pub fn device_class(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, selector) in o["spec"]["selectors"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(expression) = selector["cel"]["expression"].as_str() else {
            continue;
        };
        if let Err(why) = crate::authz::admission::compile_cel(expression) {
            e.invalid(
                &format!("spec.selectors[{i}].cel.expression"),
                &json!(expression),
                &format!("compilation failed: {why}"),
            );
        }
    }
}

/// ValidatingAdmissionPolicyBindings: `Deny` and `Warn` together say the
/// same thing twice.
pub fn admission_policy_binding(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let actions = &o["spec"]["validationActions"];
    let has = |a: &str| actions.as_array().is_some_and(|l| l.iter().any(|x| x == a));
    if has("Deny") && has("Warn") {
        e.invalid(
            "spec.validationActions",
            actions,
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        );
    }
}

/// Admission webhook configurations: names of three segments and a side
/// effect class.
pub fn webhook_configuration(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    for (i, w) in o["webhooks"].as_array().into_iter().flatten().enumerate() {
        let at = format!("webhooks[{i}]");
        let name = w["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            e.required(&format!("{at}.name"), "");
        } else if name.split('.').count() < 3 {
            e.invalid(
                &format!("{at}.name"),
                &w["name"],
                "should be a domain with at least three segments separated by dots",
            );
        }
        match w["sideEffects"].as_str() {
            None | Some("") => e.required(
                &format!("{at}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            ),
            Some(_) => e.one_of(
                &format!("{at}.sideEffects"),
                &w["sideEffects"],
                &["None", "NoneOnDryRun"],
            ),
        }
    }
}

/// CertificateSigningRequests: a signer, and an expiry of ten minutes or
/// more.
pub fn certificate_signing_request(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    crate::strategy::certificates::check_request(e, spec);
    e.require_str("spec.signerName", &spec["signerName"], "");
    let exp = &spec["expirationSeconds"];
    if exp.as_i64().is_some_and(|s| s < 600) {
        e.invalid(
            "spec.expirationSeconds",
            exp,
            "may not specify a duration less than 600 seconds (10 minutes)",
        );
    }
}

/// FlowSchemas: a precedence of at most 10,000.
pub fn flow_schema(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let p = &o["spec"]["matchingPrecedence"];
    if p.as_i64().is_some_and(|p| p > 10_000) {
        e.invalid(
            "spec.matchingPrecedence",
            p,
            "must not be greater than 10000",
        );
    }
}

/// PriorityLevelConfigurations: a `limited` section when limited.
pub fn priority_level_configuration(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let spec = &o["spec"];
    if spec["type"] == "Limited" && spec["limited"].is_null() {
        e.required("spec.limited", "must not be empty when type is Limited");
    }
}

/// `IsValidIP`'s problem with `s`, if any.
fn ip_problem(s: &str) -> Option<&'static str> {
    if s.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let unpadded: Vec<String> = s
        .split('.')
        .map(|p| {
            let t = p.trim_start_matches('0');
            if t.is_empty() {
                "0".to_owned()
            } else {
                t.to_owned()
            }
        })
        .collect();
    if s.contains('.') && unpadded.join(".").parse::<std::net::Ipv4Addr>().is_ok() {
        return Some("must not have leading 0s");
    }
    Some("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
}

/// IPAddresses: named by the address they hold.
pub fn ip_address(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let name = &o["metadata"]["name"];
    if let Some(problem) = name.as_str().and_then(ip_problem) {
        e.invalid("metadata.name", name, problem);
    }
}

/// ServiceCIDRs: one or two valid CIDRs.
pub fn service_cidr(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    let cidrs = o["spec"]["cidrs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if cidrs.is_empty() {
        e.required("spec.cidrs", "at least one CIDR required");
        return;
    }
    for (i, c) in cidrs.iter().enumerate() {
        let valid = c
            .as_str()
            .and_then(|s| s.split_once('/'))
            .is_some_and(|(ip, bits)| {
                let max = match ip.parse::<std::net::IpAddr>() {
                    Ok(std::net::IpAddr::V4(_)) => 32,
                    Ok(std::net::IpAddr::V6(_)) => 128,
                    Err(_) => return false,
                };
                bits.parse::<u8>().is_ok_and(|b| b <= max)
            });
        if !valid {
            e.invalid(
                &format!("spec.cidrs[{i}]"),
                c,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        }
    }
}

/// ResourceClaims: each exact request names its device class.
pub fn resource_claim(e: &mut Errors, o: &Value, old: Option<&Value>) {
    device_requests(
        e,
        "spec.devices.requests",
        &o["spec"]["devices"]["requests"],
    );
    if let Some(old) = old
        && o["spec"] != old["spec"]
    {
        e.invalid("spec", &o["spec"], "field is immutable");
    }
}

/// ResourceClaimTemplates.
pub fn resource_claim_template(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    device_requests(
        e,
        "spec.spec.devices.requests",
        &o["spec"]["spec"]["devices"]["requests"],
    );
}

fn device_requests(e: &mut Errors, field: &str, requests: &Value) {
    for (i, r) in requests.as_array().into_iter().flatten().enumerate() {
        let at = format!("{field}[{i}]");
        let name = r["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            e.required(&format!("{at}.name"), "");
        } else {
            e.invalid_each(&format!("{at}.name"), &r["name"], meta::dns_label(name));
        }
        if r["exactly"].is_object() {
            e.require_str(
                &format!("{at}.exactly.deviceClassName"),
                &r["exactly"]["deviceClassName"],
                "",
            );
        }
    }
}

/// ResourceSlices: a driver that is a DNS subdomain.
pub fn resource_slice(e: &mut Errors, o: &Value, _old: Option<&Value>) {
    subdomain(e, "spec.driver", &o["spec"]["driver"], true);
}

#[cfg(test)]
mod tests {
    use super::super::errors::messages;
    use super::*;

    #[test]
    fn autoscalers_and_bindings() {
        assert_eq!(
            messages(
                horizontal_pod_autoscaler,
                json!({"spec": {"minReplicas": 3, "maxReplicas": 2,
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}),
                None
            ),
            ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]
        );
        assert_eq!(
            messages(
                role_binding,
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"}}),
                Some(
                    json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "web"}})
                )
            ),
            [
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"other\"}: cannot change roleRef"
            ]
        );
    }

    #[test]
    fn storage_and_scheduling() {
        assert_eq!(
            messages(
                priority_class,
                json!({"metadata": {"name": "p"}, "value": 2_000_000_000}),
                None
            ),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        assert_eq!(
            messages(
                csi_node,
                json!({"spec": {"drivers": [{"name": "d"}]}}),
                None
            ),
            ["spec.drivers[0].nodeID: Required value"]
        );
    }
}
