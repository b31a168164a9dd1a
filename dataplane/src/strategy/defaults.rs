//! Upstream's `SetDefaults_*` for the kinds without a strategy of their own,
//! as the differential suite's goldens show kube-apiserver 1.34 fills them:
//! ReplicationController, Secret, Namespace, PersistentVolume and PersistentVolumeClaim,
//! NetworkPolicy, PriorityClass, StorageClass, CSIDriver, the webhook
//! configurations and the admission policies and their bindings.

use serde_json::{Value, json};

use super::{pods, set_default};

/// `list` of `v` as mutable objects (none when it is not a list).
fn each<'a>(v: &'a mut Value, field: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(field)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|i| i.is_object())
}

/// Fills an object of `kind` as upstream's defaulting does.
pub fn default_object(kind: &str, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    match kind {
        "ReplicationController" => replication_controller(object),
        "PersistentVolume" => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
                return;
            };
            set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            set_default(spec, "volumeMode", json!("Filesystem"));
            if spec["hostPath"].is_object() {
                set_default(&mut spec["hostPath"], "type", json!(""));
            }
        }
        "PersistentVolumeClaim" => {
            if let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) {
                set_default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        "NetworkPolicy" => network_policy(object),
        "ResourceClaim" => {
            if let Some(spec) = object.get_mut("spec") {
                device_claim(spec);
            }
        }
        "ResourceClaimTemplate" => {
            if let Some(spec) = object.pointer_mut("/spec/spec") {
                device_claim(spec);
            }
        }
        // SetDefaults_Namespace: the name label, on every write.
        "Namespace" => {
            let Some(name) = object["metadata"]["name"].as_str().map(str::to_owned) else {
                return;
            };
            let meta = &mut object["metadata"];
            if !meta["labels"].is_object() {
                meta["labels"] = json!({});
            }
            meta["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        "Secret" => secret(object),
        "LimitRange" => {
            if let Some(spec) = object.get_mut("spec") {
                for item in each(spec, "limits") {
                    limit_range_item(item);
                }
            }
        }
        "HorizontalPodAutoscaler" => {
            if let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) {
                set_default(spec, "minReplicas", json!(1));
            }
            if let Some(behavior) = object
                .pointer_mut("/spec/behavior")
                .filter(|b| b.is_object())
            {
                hpa_behavior(behavior);
            }
        }
        "PriorityClass" => {
            set_default(object, "preemptionPolicy", json!("PreemptLowerPriority"));
        }
        "StorageClass" => {
            set_default(object, "reclaimPolicy", json!("Delete"));
            set_default(object, "volumeBindingMode", json!("Immediate"));
        }
        "CSIDriver" => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
                return;
            };
            set_default(spec, "attachRequired", json!(true));
            set_default(spec, "podInfoOnMount", json!(false));
            set_default(spec, "volumeLifecycleModes", json!(["Persistent"]));
            set_default(spec, "storageCapacity", json!(false));
            set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            set_default(spec, "requiresRepublish", json!(false));
            set_default(spec, "seLinuxMount", json!(false));
        }
        "ValidatingAdmissionPolicy" => {
            let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
                return;
            };
            set_default(spec, "failurePolicy", json!("Fail"));
            if let Some(m) = spec.get_mut("matchConstraints").filter(|m| m.is_object()) {
                match_resources(m);
            }
        }
        "ValidatingAdmissionPolicyBinding" => {
            if let Some(m) = object
                .pointer_mut("/spec/matchResources")
                .filter(|m| m.is_object())
            {
                match_resources(m);
            }
        }
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            let mutating = kind == "MutatingWebhookConfiguration";
            for hook in each(object, "webhooks") {
                for rule in each(hook, "rules") {
                    set_default(rule, "scope", json!("*"));
                }
                set_default(hook, "failurePolicy", json!("Fail"));
                set_default(hook, "matchPolicy", json!("Equivalent"));
                set_default(hook, "namespaceSelector", json!({}));
                set_default(hook, "objectSelector", json!({}));
                set_default(hook, "timeoutSeconds", json!(10));
                if mutating {
                    set_default(hook, "reinvocationPolicy", json!("Never"));
                }
            }
        }
        _ => {}
    }
}

/// `SetDefaults_LimitRangeItem`: a Container item's default limit falls
/// back to its max, its default request to its default limit, then to its
/// min.
fn limit_range_item(item: &mut Value) {
    if item["type"] != "Container" {
        return;
    }
    let map = |v: &Value| v.as_object().cloned().unwrap_or_default();
    let (max, min) = (map(&item["max"]), map(&item["min"]));
    let mut default = map(&item["default"]);
    let mut request = map(&item["defaultRequest"]);
    for (k, v) in &max {
        default.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in default.iter().chain(min.iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if !default.is_empty() {
        item["default"] = Value::Object(default);
    }
    if !request.is_empty() {
        item["defaultRequest"] = Value::Object(request);
    }
}

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscalerBehavior`: a given
/// behavior has both directions, each with what its rules leave unset
/// taken from upstream's defaults (scale up by 4 Pods or 100% each 15 s at
/// once; scale down by 100% each 15 s).
fn hpa_behavior(behavior: &mut Value) {
    let up = json!({
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    });
    let down = json!({
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    });
    for (direction, mut rules) in [("scaleUp", up), ("scaleDown", down)] {
        if let Some(given) = behavior[direction].as_object() {
            for (k, v) in given {
                if !v.is_null() {
                    rules[k] = v.clone();
                }
            }
        }
        behavior[direction] = rules;
    }
}

/// admissionregistration's `SetDefaults_MatchResources` and the rules'
/// `SetDefaults_Rule`.
fn match_resources(m: &mut Value) {
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in each(m, list) {
            set_default(rule, "scope", json!("*"));
        }
    }
}

/// resource.k8s.io/v1 `SetDefaults_ExactDeviceRequest` and
/// `SetDefaults_DeviceSubRequest`: `ExactCount` of one device.
fn device_claim(spec: &mut Value) {
    let Some(devices) = spec.get_mut("devices").filter(|d| d.is_object()) else {
        return;
    };
    let exact = |r: &mut Value| {
        set_default(r, "allocationMode", json!("ExactCount"));
        if r["allocationMode"] == "ExactCount" {
            set_default(r, "count", json!(1));
        }
    };
    for request in each(devices, "requests") {
        if let Some(e) = request.get_mut("exactly").filter(|e| e.is_object()) {
            exact(e);
        }
        for sub in each(request, "firstAvailable") {
            exact(sub);
        }
    }
}

/// `SetDefaults_ReplicationController`: the selector and labels from the
/// template's labels, one replica, and the pod template's defaults.
fn replication_controller(object: &mut Value) {
    let template_labels = object
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    if let Some(labels) = &template_labels {
        let empty = spec["selector"].as_object().is_none_or(|m| m.is_empty());
        if empty {
            spec["selector"] = labels.clone();
        }
    }
    set_default(spec, "replicas", json!(1));
    if let Some(pod_spec) = spec.pointer_mut("/template/spec") {
        pods::default_pod_spec(pod_spec);
    }
    if let Some(labels) = template_labels {
        let meta = &mut object["metadata"];
        if meta.is_object() && meta["labels"].as_object().is_none_or(|m| m.is_empty()) {
            meta["labels"] = labels;
        }
    }
}

/// `SetDefaults_Secret` and the v1 → internal conversion: `type` Opaque,
/// and `stringData` folded into `data` (its keys win), as no Secret is
/// ever stored or answered with `stringData`.
fn secret(object: &mut Value) {
    use base64::Engine as _;
    set_default(object, "type", json!("Opaque"));
    let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData"))
    else {
        return;
    };
    if !object["data"].is_object() {
        object["data"] = json!({});
    }
    for (key, value) in strings {
        if let Value::String(text) = value {
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            object["data"][key] = Value::String(encoded);
        }
    }
}

/// `SetDefaults_NetworkPolicy*`: ports' protocol TCP, and `policyTypes`
/// from the rules given.
fn network_policy(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for rule in each(spec, direction) {
            for port in each(rule, "ports") {
                set_default(port, "protocol", json!("TCP"));
            }
        }
    }
    if spec["policyTypes"].as_array().is_none_or(|t| t.is_empty()) {
        let mut types = vec![json!("Ingress")];
        if spec["egress"].as_array().is_some_and(|e| !e.is_empty()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = json!(types);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_requests_default_to_one_exact_device() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu"}},
            {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
            {"name": "c", "firstAvailable": [{"name": "x", "deviceClassName": "gpu", "count": 2}]},
        ]}}});
        default_object("ResourceClaim", &mut claim);
        let r = &claim["spec"]["devices"]["requests"];
        assert_eq!(r[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(r[0]["exactly"]["count"], 1);
        assert!(r[1]["exactly"].get("count").is_none());
        assert_eq!(r[2]["firstAvailable"][0]["count"], 2);
        let mut bare = json!({"metadata": {"name": "t"}});
        default_object("ResourceClaimTemplate", &mut bare);
        assert_eq!(bare, json!({"metadata": {"name": "t"}}));
    }

    #[test]
    fn replication_controllers_take_their_templates_labels() {
        let mut rc = json!({"metadata": {"name": "r"}, "spec": {"template": {
            "metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        default_object("ReplicationController", &mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "a"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert_eq!(rc["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn secrets_fold_string_data_into_data() {
        let mut s = json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eA=="},
            "stringData": {"b": "t0p", "c": ""}});
        default_object("Secret", &mut s);
        assert_eq!(s["data"], json!({"a": "eA==", "b": "dDBw", "c": ""}));
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
    }

    #[test]
    fn network_policies_get_protocols_and_types() {
        let mut np = json!({"spec": {"ingress": [{"ports": [{"port": 80}]}], "egress": [{}]}});
        default_object("NetworkPolicy", &mut np);
        assert_eq!(np["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    }
}
