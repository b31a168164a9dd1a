//! Services, as upstream's service registry prepares them: defaults
//! (`type`, `sessionAffinity`, port `protocol` and `targetPort`, traffic
//! policies, IP families), a ClusterIP from the service CIDR, node ports for
//! `NodePort` and `LoadBalancer` Services; on update the allocated values are
//! carried over when omitted, and a ClusterIP may not change.

use serde_json::{Value, json};

use super::{Context, Strategy, set_default};
use crate::api::validation;
use crate::error::{ApiError, Cause};
use crate::network::allocator::{AllocError, Session};
use crate::resources::ResourceType;

/// The Service strategy.
#[derive(Debug)]
pub struct ServiceStrategy;

fn kind_of(spec: &Value) -> &str {
    spec["type"].as_str().unwrap_or("ClusterIP")
}

fn needs_node_ports(spec: &Value) -> bool {
    match kind_of(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec["allocateLoadBalancerNodePorts"].as_bool() != Some(false),
        _ => false,
    }
}

fn needs_health_check_port(spec: &Value) -> bool {
    kind_of(spec) == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

/// Upstream's defaulting of a Service spec.
fn default_spec(spec: &mut Value) {
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    // ClientIP affinity lasts three hours unless told otherwise.
    if spec["sessionAffinity"] == "ClientIP" {
        set_default(spec, "sessionAffinityConfig", json!({}));
        let config = &mut spec["sessionAffinityConfig"];
        if config.is_object() {
            set_default(config, "clientIP", json!({}));
            if config["clientIP"].is_object() {
                set_default(&mut config["clientIP"], "timeoutSeconds", json!(10800));
            }
        }
    }
    let kind = kind_of(spec).to_owned();
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            set_default(p, "protocol", json!("TCP"));
            // Go's zero IntOrString (`0` or `""`, which clients send) is unset.
            if p["targetPort"].is_null() || p["targetPort"] == 0 || p["targetPort"] == "" {
                p["targetPort"] = p["port"].clone();
            }
        }
    }
    if kind != "ExternalName" {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "NodePort" || kind == "LoadBalancer" {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

fn invalid(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> ApiError {
    crate::api::validation::invalid_object(rt, name, causes)
}

fn cause(reason: &str, field: String, message: String) -> Cause {
    Cause {
        reason: reason.to_owned(),
        message,
        field,
    }
}

/// Go's `%#v` of a `[]string`, as upstream prints `spec.clusterIPs`.
fn go_strings(v: &Value) -> String {
    let items: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(|s| format!("{s}")).collect())
        .unwrap_or_default();
    format!("[]string{{{}}}", items.join(", "))
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// The cluster IP a spec asks for: `clusterIP`, else `clusterIPs[0]`.
fn requested_ip(spec: &Value) -> Option<String> {
    spec["clusterIP"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or_else(|| spec["clusterIPs"][0].as_str().filter(|s| !s.is_empty()))
        .map(str::to_owned)
}

fn set_ip(spec: &mut Value, ip: &str) {
    spec["clusterIP"] = json!(ip);
    spec["clusterIPs"] = json!([ip]);
    set_default(spec, "ipFamilies", json!(["IPv4"]));
    set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
}

fn clear_ips(spec: &mut Value) {
    if let Some(m) = spec.as_object_mut() {
        for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            m.remove(f);
        }
    }
}

/// Rejects node ports on a Service type that has none.
fn forbid_node_ports(rt: &ResourceType, name: &str, spec: &Value) -> Result<(), ApiError> {
    if needs_node_ports(spec) {
        return Ok(());
    }
    let causes: Vec<Cause> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, p)| p["nodePort"].as_i64().is_some_and(|n| n != 0))
        .map(|(i, _)| {
            let why = if kind_of(spec) == "LoadBalancer" {
                "may not be used when `allocateLoadBalancerNodePorts` is false".to_owned()
            } else {
                format!("may not be used when `type` is '{}'", kind_of(spec))
            };
            cause(
                "FieldValueForbidden",
                format!("spec.ports[{i}].nodePort"),
                format!("Forbidden: {why}"),
            )
        })
        .collect();
    if causes.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, name, causes))
    }
}

fn check_ports_present(rt: &ResourceType, name: &str, spec: &Value) -> Result<(), ApiError> {
    let headless = spec["clusterIP"] == "None";
    let empty = spec["ports"].as_array().is_none_or(Vec::is_empty);
    if empty && !headless && kind_of(spec) != "ExternalName" {
        return Err(validation::invalid(
            rt,
            name,
            "spec.ports",
            "FieldValueRequired",
            "Required value".into(),
        ));
    }
    Ok(())
}

/// Allocates (or claims) the cluster IP of `spec`.
fn allocate_ip(
    rt: &ResourceType,
    name: &str,
    spec: &mut Value,
    sess: &mut Session<'_>,
) -> Result<(), ApiError> {
    match requested_ip(spec).as_deref() {
        Some("None") => {
            spec["clusterIP"] = json!("None");
            spec["clusterIPs"] = json!(["None"]);
            set_default(spec, "ipFamilies", json!(["IPv4"]));
            set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
        }
        Some(ip) => {
            sess.claim_ip(ip).map_err(|e| {
                let shown = if spec["clusterIPs"].is_array() {
                    spec["clusterIPs"].clone()
                } else {
                    json!([ip])
                };
                invalid(
                    rt,
                    name,
                    vec![cause(
                        "FieldValueInvalid",
                        "spec.clusterIPs".into(),
                        format!(
                            "Invalid value: {}: failed to allocate IP {ip}: {e}",
                            go_strings(&shown)
                        ),
                    )],
                )
            })?;
            set_ip(spec, ip);
        }
        None => {
            let ip = sess
                .next_ip()
                .map_err(|e| ApiError::Internal(format!("failed to allocate a serviceIP: {e}")))?;
            set_ip(spec, &ip.to_string());
        }
    }
    Ok(())
}

fn port_error(rt: &ResourceType, name: &str, field: String, port: i64, e: AllocError) -> ApiError {
    invalid(
        rt,
        name,
        vec![cause(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {port}: {e}"),
        )],
    )
}

/// Claims the node ports `spec` names and allocates the missing ones.
fn allocate_node_ports(
    rt: &ResourceType,
    name: &str,
    spec: &mut Value,
    sess: &mut Session<'_>,
) -> Result<(), ApiError> {
    let needs_hc = needs_health_check_port(spec);
    if needs_node_ports(spec)
        && let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut)
    {
        for (i, p) in ports.iter_mut().enumerate() {
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(n) => {
                    sess.claim_port(n).map_err(|e| {
                        port_error(rt, name, format!("spec.ports[{i}].nodePort"), n, e)
                    })?;
                }
                None => {
                    let n = sess.next_port(&i.to_string()).map_err(|e| {
                        ApiError::Internal(format!("failed to allocate a nodePort: {e}"))
                    })?;
                    p["nodePort"] = json!(n);
                }
            }
        }
    }
    if needs_hc {
        match spec["healthCheckNodePort"].as_i64().filter(|n| *n != 0) {
            Some(n) => {
                sess.claim_port(n)
                    .map_err(|e| port_error(rt, name, "spec.healthCheckNodePort".into(), n, e))?;
            }
            None => {
                let n = sess.next_port("health").map_err(|e| {
                    ApiError::Internal(format!("failed to allocate a healthCheck nodePort: {e}"))
                })?;
                spec["healthCheckNodePort"] = json!(n);
            }
        }
    } else if let Some(m) = spec.as_object_mut() {
        m.remove("healthCheckNodePort");
    }
    Ok(())
}

impl Strategy for ServiceStrategy {
    fn defaults(&self, _rt: &ResourceType, object: &mut Value) {
        if object.is_object() && object["spec"].is_null() {
            object["spec"] = json!({});
        }
        if object["spec"].is_object() {
            default_spec(&mut object["spec"]);
        }
    }

    fn prepare_create(
        &self,
        ctx: &Context<'_>,
        rt: &ResourceType,
        name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        if !object["spec"].is_object() {
            object["spec"] = json!({});
        }
        let spec = &mut object["spec"];
        check_ports_present(rt, name, spec)?;
        forbid_node_ports(rt, name, spec)?;
        if kind_of(spec) == "ExternalName" {
            clear_ips(spec);
            return Ok(());
        }
        let Some(net) = ctx.network else {
            return Ok(());
        };
        let mut sess = net.allocator.session(ctx.store, ctx.namespace, name);
        let spec = &mut object["spec"];
        allocate_ip(rt, name, spec, &mut sess)?;
        allocate_node_ports(rt, name, spec, &mut sess)?;
        if object["status"].is_null() {
            object["status"] = json!({"loadBalancer": {}});
        }
        Ok(())
    }

    fn prepare_update(
        &self,
        ctx: &Context<'_>,
        rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        let name = name_of(old).to_owned();
        if !new["spec"].is_object() {
            new["spec"] = json!({});
        }
        let old_spec = &old["spec"];
        let spec = &mut new["spec"];
        if kind_of(spec) == "ExternalName" {
            clear_ips(spec);
            forbid_node_ports(rt, &name, spec)?;
            return Ok(());
        }
        let old_ip = if kind_of(old_spec) == "ExternalName" {
            None
        } else {
            requested_ip(old_spec)
        };
        match (requested_ip(spec), &old_ip) {
            (None, Some(_)) => {
                for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                    if !old_spec[f].is_null() {
                        spec[f] = old_spec[f].clone();
                    }
                }
            }
            (Some(ip), Some(old)) if ip != *old => {
                return Err(invalid(
                    rt,
                    &name,
                    vec![cause(
                        "FieldValueInvalid",
                        "spec.clusterIPs[0]".into(),
                        format!("Invalid value: \"{ip}\": may not change once set"),
                    )],
                ));
            }
            _ => {}
        }
        // Switching to a type without node ports drops the ones the old
        // Service held (upstream's dropTypeDependentFields); ports the user
        // changed are left for validation to refuse.
        if !needs_node_ports(spec) && needs_node_ports(old_spec) {
            let old_ports = old_spec["ports"].as_array().cloned().unwrap_or_default();
            for p in spec
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let held = old_ports
                    .iter()
                    .any(|o| !o["nodePort"].is_null() && o["nodePort"] == p["nodePort"]);
                if held && let Some(m) = p.as_object_mut() {
                    m.remove("nodePort");
                }
            }
        }
        let external = matches!(kind_of(spec), "NodePort" | "LoadBalancer");
        for (field, needed) in [
            ("externalTrafficPolicy", external),
            (
                "allocateLoadBalancerNodePorts",
                kind_of(spec) == "LoadBalancer",
            ),
        ] {
            if !needed
                && !spec[field].is_null()
                && spec[field] == old_spec[field]
                && let Some(m) = spec.as_object_mut()
            {
                m.remove(field);
            }
        }
        if !needs_health_check_port(spec)
            && !spec["healthCheckNodePort"].is_null()
            && spec["healthCheckNodePort"] == old_spec["healthCheckNodePort"]
            && let Some(m) = spec.as_object_mut()
        {
            m.remove("healthCheckNodePort");
        }
        // Node ports the old Service held are kept when omitted, as upstream's
        // patchAllocatedValues keeps them.
        if needs_node_ports(spec) && needs_node_ports(old_spec) {
            let old_ports = old_spec["ports"].as_array().cloned().unwrap_or_default();
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut() {
                    if p["nodePort"].as_i64().is_some_and(|n| n != 0) {
                        continue;
                    }
                    let same = old_ports.iter().find(|o| {
                        (o["port"] == p["port"] && o["protocol"] == p["protocol"])
                            || (!p["name"].is_null() && o["name"] == p["name"])
                    });
                    if let Some(n) = same.and_then(|o| o["nodePort"].as_i64()) {
                        p["nodePort"] = json!(n);
                    }
                }
            }
        }
        if needs_health_check_port(spec)
            && spec["healthCheckNodePort"].is_null()
            && !old_spec["healthCheckNodePort"].is_null()
        {
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"].clone();
        }
        check_ports_present(rt, &name, spec)?;
        forbid_node_ports(rt, &name, spec)?;
        let Some(net) = ctx.network else {
            return Ok(());
        };
        let mut sess = net.allocator.session(ctx.store, ctx.namespace, &name);
        let spec = &mut new["spec"];
        allocate_ip(rt, &name, spec, &mut sess)?;
        allocate_node_ports(rt, &name, spec, &mut sess)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Allocator, Cidr, ClusterNetwork, LoadBalancerStyle, NODE_PORTS};
    use crate::resources::ResourceRegistry;
    use crate::store::{MemoryStore, ObjectKey, Store, StoreLimits};

    fn setup() -> (MemoryStore, ClusterNetwork, std::sync::Arc<ResourceType>) {
        let store = MemoryStore::new(kemu_shared::FakeClock::at_epoch(), StoreLimits::default());
        let net = ClusterNetwork {
            allocator: Allocator::new(Cidr::new([10, 100, 0, 0], 16), NODE_PORTS),
            load_balancer: LoadBalancerStyle::Gcp,
        };
        let rt = ResourceRegistry::builtin_ref()
            .lookup("", "v1", "services")
            .unwrap();
        (store, net, rt)
    }

    fn create(
        store: &MemoryStore,
        net: &ClusterNetwork,
        rt: &ResourceType,
        mut svc: Value,
    ) -> Result<Value, ApiError> {
        let ctx = Context {
            store,
            network: Some(net),
            namespace: "default",
            user: None,
            now: chrono::DateTime::UNIX_EPOCH,
        };
        // As kubectl create sends it: no namespace in the body.
        if let Some(m) = svc["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        let name = svc["metadata"]["name"].as_str().unwrap().to_owned();
        super::super::prepare_create(&ctx, rt, &name, &mut svc)?;
        store.create(&ObjectKey::new("services", "default", &name), svc.clone())?;
        Ok(svc)
    }

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn create_allocates_and_defaults() {
        let (store, net, rt) = setup();
        let s = create(
            &store,
            &net,
            &rt,
            svc("web", json!({"type": "NodePort", "ports": [{"port": 80}]})),
        )
        .unwrap();
        let ip = s["spec"]["clusterIP"].as_str().unwrap();
        assert!(ip.starts_with("10.100."), "{ip}");
        assert_eq!(s["spec"]["clusterIPs"], json!([ip]));
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(s["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(s["spec"]["externalTrafficPolicy"], "Cluster");
        let np = s["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
        assert!((30000..=32767).contains(&np));
        // The same node port again is refused as upstream refuses it.
        let err = create(
            &store,
            &net,
            &rt,
            svc(
                "dup",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": np}]}),
            ),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Service \"dup\" is invalid: spec.ports[0].nodePort: Invalid value: {np}: provided port is already allocated"
            )
        );
        let err = create(
            &store,
            &net,
            &rt,
            svc("ip", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Service \"ip\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
            )
        );
        let err = create(
            &store,
            &net,
            &rt,
            svc("cip", json!({"ports": [{"port": 80, "nodePort": 30001}]})),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(
                "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
            ),
            "{err}"
        );
        let h = create(&store, &net, &rt, svc("h", json!({"clusterIP": "None"}))).unwrap();
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
    }

    #[test]
    fn update_keeps_allocations_and_refuses_a_new_ip() {
        let (store, net, rt) = setup();
        let old = create(
            &store,
            &net,
            &rt,
            svc("web", json!({"type": "NodePort", "ports": [{"port": 80}]})),
        )
        .unwrap();
        let ctx = Context {
            store: &store,
            network: Some(&net),
            namespace: "default",
            user: None,
            now: chrono::DateTime::UNIX_EPOCH,
        };
        let mut new = svc("web", json!({"type": "NodePort", "ports": [{"port": 80}]}));
        super::super::prepare_update(&ctx, &rt, &old, &mut new).unwrap();
        assert_eq!(new["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(
            new["spec"]["ports"][0]["nodePort"],
            old["spec"]["ports"][0]["nodePort"]
        );
        let mut moved = svc(
            "web",
            json!({"clusterIP": "10.100.9.9", "ports": [{"port": 80}]}),
        );
        let err = super::super::prepare_update(&ctx, &rt, &old, &mut moved).unwrap_err();
        assert!(
            err.to_string().contains(
                "spec.clusterIPs[0]: Invalid value: \"10.100.9.9\": may not change once set"
            ),
            "{err}"
        );
        // NodePort → LoadBalancer keeps the port and adds nothing else.
        let mut lb = svc(
            "web",
            json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
        );
        super::super::prepare_update(&ctx, &rt, &old, &mut lb).unwrap();
        assert_eq!(
            lb["spec"]["ports"][0]["nodePort"],
            old["spec"]["ports"][0]["nodePort"]
        );
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        // Back to ClusterIP: the held node port goes, the IP stays.
        let mut back = old.clone();
        back["spec"]["type"] = json!("ClusterIP");
        super::super::prepare_update(&ctx, &rt, &old, &mut back).unwrap();
        assert!(back["spec"]["ports"][0].get("nodePort").is_none(), "{back}");
        assert!(
            back["spec"].get("externalTrafficPolicy").is_none(),
            "{back}"
        );
        assert_eq!(back["spec"]["clusterIP"], old["spec"]["clusterIP"]);
    }
}
