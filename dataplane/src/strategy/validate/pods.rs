//! Pod specs, as upstream's `ValidatePodSpec` checks them (for Pods and for
//! every template that holds one): containers, their names, images, ports
//! and policies, and the pod's restart and DNS policies.

use std::collections::HashSet;

use serde_json::Value;

use super::errors::Errors;
use super::meta;

/// `IsValidPortNum`'s rule.
pub const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// Whether `v` is a port number outside 1–65535.
pub fn bad_port(v: &Value) -> bool {
    v.as_i64().is_some_and(|p| !(1..=65535).contains(&p))
}

fn containers(e: &mut Errors, field: &str, list: &Value, required: bool) {
    let items = list.as_array().map(Vec::as_slice).unwrap_or_default();
    if items.is_empty() {
        if required {
            e.required(field, "");
        }
        return;
    }
    let mut names = HashSet::new();
    for (i, c) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = &c["name"];
        match name.as_str().filter(|n| !n.is_empty()) {
            None => e.required(&format!("{at}.name"), ""),
            Some(n) => e.invalid_each(&format!("{at}.name"), name, meta::dns_label(n)),
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            e.required(&format!("{at}.image"), "");
        }
        e.one_of(
            &format!("{at}.terminationMessagePolicy"),
            &c["terminationMessagePolicy"],
            &["File", "FallbackToLogsOnError"],
        );
        ports(e, &format!("{at}.ports"), &c["ports"]);
        e.one_of(
            &format!("{at}.imagePullPolicy"),
            &c["imagePullPolicy"],
            &["Always", "IfNotPresent", "Never"],
        );
        if let Some(n) = name.as_str()
            && !names.insert(n)
        {
            e.duplicate(&format!("{at}.name"), name);
        }
    }
}

fn ports(e: &mut Errors, field: &str, list: &Value) {
    let mut names = HashSet::new();
    for (i, p) in list.as_array().into_iter().flatten().enumerate() {
        let at = format!("{field}[{i}]");
        if let Some(n) = p["name"].as_str().filter(|n| !n.is_empty())
            && !names.insert(n)
        {
            e.duplicate(&format!("{at}.name"), &p["name"]);
        }
        match p["containerPort"].as_i64() {
            None | Some(0) => e.required(&format!("{at}.containerPort"), ""),
            Some(_) if bad_port(&p["containerPort"]) => {
                e.invalid(
                    &format!("{at}.containerPort"),
                    &p["containerPort"],
                    PORT_RANGE,
                );
            }
            Some(_) => {}
        }
        if p["hostPort"].as_i64().is_some_and(|h| h != 0) && bad_port(&p["hostPort"]) {
            e.invalid(&format!("{at}.hostPort"), &p["hostPort"], PORT_RANGE);
        }
        e.one_of(
            &format!("{at}.protocol"),
            &p["protocol"],
            &["SCTP", "TCP", "UDP"],
        );
    }
}

/// `ValidatePodSpec` of the spec at `field` (`spec`, `spec.template.spec`).
pub fn pod_spec(e: &mut Errors, field: &str, spec: &Value) {
    containers(e, &format!("{field}.containers"), &spec["containers"], true);
    containers(
        e,
        &format!("{field}.initContainers"),
        &spec["initContainers"],
        false,
    );
    e.one_of(
        &format!("{field}.restartPolicy"),
        &spec["restartPolicy"],
        &["Always", "OnFailure", "Never"],
    );
    e.one_of(
        &format!("{field}.dnsPolicy"),
        &spec["dnsPolicy"],
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
    );
    let deadline = &spec["activeDeadlineSeconds"];
    if deadline
        .as_i64()
        .is_some_and(|v| v < 1 || v > i64::from(i32::MAX))
    {
        e.invalid(
            &format!("{field}.activeDeadlineSeconds"),
            deadline,
            "must be between 1 and 2147483647, inclusive",
        );
    }
    meta::labels(e, &format!("{field}.nodeSelector"), &spec["nodeSelector"]);
}

/// `ValidatePodTemplateSpec` of the template at `field`: its labels and
/// annotations, and its spec.
pub fn template(e: &mut Errors, field: &str, template: &Value) {
    meta::labels(
        e,
        &format!("{field}.metadata.labels"),
        &template["metadata"]["labels"],
    );
    pod_spec(e, &format!("{field}.spec"), &template["spec"]);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(spec: Value) -> Vec<String> {
        let mut e = Errors::default();
        pod_spec(&mut e, "spec", &spec);
        e.0.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn containers_need_names_images_and_valid_ports() {
        assert_eq!(fields(json!({})), ["spec.containers: Required value"]);
        assert_eq!(
            fields(
                json!({"containers": [{"name": "c"}, {"name": "c", "image": "x",
                "ports": [{"containerPort": 70000, "protocol": "HTTP"}]}]})
            ),
            [
                "spec.containers[0].image: Required value",
                "spec.containers[1].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[1].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[1].name: Duplicate value: \"c\""
            ]
        );
        assert_eq!(
            fields(
                json!({"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Sometimes"})
            ),
            [
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
            ]
        );
    }
}
