//! A container's environment as the kubelet computes it: the image's `PATH`,
//! `HOSTNAME`, `envFrom` then `env` (values with `$(VAR)` expanded from what
//! came before, `valueFrom` read from the Pod, its ConfigMaps and Secrets),
//! the Service links (`<SVC>_SERVICE_HOST`, `<SVC>_PORT_<N>_TCP…`), and
//! `HOME`. Upstream ranges over Go maps, so its order varies; kemu's is the
//! kubelet's precedence in a fixed order.

use base64::Engine as _;
use serde_json::Value;

use crate::controllers::obj;
use crate::store::{ObjectKey, Store};

/// The image's `PATH` (every common base image sets this one).
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `$(VAR)` references expanded from `known`; `$$` is a `$`; an unknown or
/// unclosed reference stays as written (upstream's `expansion.Expand`).
pub fn expand(value: &str, known: &dyn Fn(&str) -> Option<String>) -> String {
    let b = value.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' || i + 1 >= b.len() {
            let c = value[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8().max(1);
            continue;
        }
        match b[i + 1] {
            b'$' => {
                out.push('$');
                i += 2;
            }
            b'(' => match value[i + 2..].find(')') {
                Some(end) => {
                    let name = &value[i + 2..i + 2 + end];
                    match known(name) {
                        Some(v) => out.push_str(&v),
                        None => out.push_str(&value[i..i + 3 + end]),
                    }
                    i += 3 + end;
                }
                None => {
                    out.push_str(&value[i..]);
                    i = b.len();
                }
            },
            _ => {
                out.push('$');
                i += 1;
            }
        }
    }
    out
}

fn env_name(svc: &str) -> String {
    svc.to_ascii_uppercase().replace('-', "_")
}

/// The link variables of one Service (none without a cluster IP).
pub fn service_links(svc: &Value) -> Vec<(String, String)> {
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or_default();
    if ip.is_empty() || ip == "None" {
        return Vec::new();
    }
    let name = env_name(obj::name(svc));
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    };
    let ports: Vec<&Value> = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let mut out = vec![(format!("{name}_SERVICE_HOST"), ip.to_owned())];
    for (i, p) in ports.iter().enumerate() {
        let port = p["port"].as_i64().unwrap_or_default();
        let proto = p["protocol"].as_str().unwrap_or("TCP");
        if i == 0 {
            out.push((format!("{name}_SERVICE_PORT"), port.to_string()));
        }
        if let Some(pn) = p["name"].as_str().filter(|n| !n.is_empty()) {
            out.push((
                format!("{name}_SERVICE_PORT_{}", env_name(pn)),
                port.to_string(),
            ));
        }
        let url = format!("{}://{host}:{port}", proto.to_ascii_lowercase());
        if i == 0 {
            out.push((format!("{name}_PORT"), url.clone()));
        }
        let prefix = format!("{name}_PORT_{port}_{}", proto.to_ascii_uppercase());
        out.push((prefix.clone(), url));
        out.push((format!("{prefix}_PROTO"), proto.to_ascii_lowercase()));
        out.push((format!("{prefix}_PORT"), port.to_string()));
        out.push((format!("{prefix}_ADDR"), ip.to_owned()));
    }
    out
}

/// A downward API field of the Pod (`metadata.labels['app']`, `status.podIP`).
pub fn field(pod: &Value, path: &str) -> Option<String> {
    let subscript = |prefix: &str| -> Option<String> {
        let key = path
            .strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")?;
        let field = prefix.trim_start_matches("metadata.");
        pod["metadata"][field][key].as_str().map(str::to_owned)
    };
    if let Some(v) = subscript("metadata.labels").or_else(|| subscript("metadata.annotations")) {
        return Some(v);
    }
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match path {
        "metadata.name" => text(&pod["metadata"]["name"]),
        "metadata.namespace" => text(&pod["metadata"]["namespace"]),
        "metadata.uid" => text(&pod["metadata"]["uid"]),
        "metadata.labels" | "metadata.annotations" => {
            let field = path.trim_start_matches("metadata.");
            let mut lines: Vec<String> = pod["metadata"][field]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    format!(
                        "{k}={}",
                        serde_json::to_string(v.as_str().unwrap_or_default()).unwrap_or_default()
                    )
                })
                .collect();
            lines.sort();
            Some(lines.join("\n"))
        }
        "spec.nodeName" => text(&pod["spec"]["nodeName"]),
        "spec.serviceAccountName" => {
            text(&pod["spec"]["serviceAccountName"]).or(Some("default".into()))
        }
        "status.hostIP" => text(&pod["status"]["hostIP"]),
        "status.podIP" => text(&pod["status"]["podIP"]),
        "status.hostIPs" | "status.podIPs" => {
            let f = path.trim_start_matches("status.");
            Some(
                pod["status"][f]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x["ip"].as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
        _ => None,
    }
}

/// A `resourceFieldRef` value: the container's limit or request over the
/// divisor, rounded up; limits absent default to the Node's allocatable.
pub fn resource(
    container: &Value,
    node: Option<&Value>,
    resource: &str,
    divisor: &Value,
) -> Option<String> {
    let (section, name) = resource.split_once('.')?;
    let mut q = container["resources"][section][name].clone();
    if q.is_null() && section == "limits" {
        q = node
            .map(|n| n["status"]["allocatable"][name].clone())
            .unwrap_or_default();
    }
    if q.is_null() {
        return Some("0".into());
    }
    let milli = obj::quantity_milli(&q)?;
    let div = if divisor.is_null() {
        1000
    } else {
        obj::quantity_milli(divisor)?
    };
    if div <= 0 {
        return None;
    }
    let v = (milli + div - 1) / div;
    Some(v.max(i128::from(name == "cpu" && milli > 0)).to_string())
}

fn key_of(store: &dyn Store, resource: &str, ns: &str, name: &str, key: &str) -> Option<String> {
    let o = store.get(&ObjectKey::new(resource, ns, name))?;
    if resource == "secrets" {
        let b = o["data"][key].as_str()?;
        let raw = base64::engine::general_purpose::STANDARD.decode(b).ok()?;
        return Some(String::from_utf8_lossy(&raw).into_owned());
    }
    o["data"][key].as_str().map(str::to_owned)
}

/// Every variable of the container, in kemu's fixed order.
pub fn compute(
    store: &dyn Store,
    pod: &Value,
    container: &Value,
    node: Option<&Value>,
    hostname: &str,
) -> Vec<(String, String)> {
    let ns = obj::namespace(pod);
    let mut vars: Vec<(String, String)> = vec![
        ("PATH".into(), PATH.into()),
        ("HOSTNAME".into(), hostname.into()),
    ];
    let set = |vars: &mut Vec<(String, String)>, k: String, v: String| match vars
        .iter_mut()
        .find(|(n, _)| *n == k)
    {
        Some(slot) => slot.1 = v,
        None => vars.push((k, v)),
    };
    for from in container["envFrom"].as_array().into_iter().flatten() {
        let prefix = from["prefix"].as_str().unwrap_or_default();
        let (resource, name) = if let Some(n) = from["configMapRef"]["name"].as_str() {
            ("configmaps", n)
        } else if let Some(n) = from["secretRef"]["name"].as_str() {
            ("secrets", n)
        } else {
            continue;
        };
        let Some(o) = store.get(&ObjectKey::new(resource, ns, name)) else {
            continue;
        };
        for k in o["data"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
        {
            if let Some(v) = key_of(store, resource, ns, name, &k) {
                set(&mut vars, format!("{prefix}{k}"), v);
            }
        }
    }
    let mut links: Vec<(String, String)> = Vec::new();
    let mut services: Vec<Value> = Vec::new();
    if let Some(k) = store.get(&ObjectKey::new("services", "default", "kubernetes")) {
        services.push((*k).clone());
    }
    if pod["spec"]["enableServiceLinks"].as_bool() != Some(false) {
        let snap = store.snapshot("services");
        for (_, s) in snap.iter(Some(ns), None) {
            if !(ns == "default" && obj::name(&s) == "kubernetes") {
                services.push((*s).clone());
            }
        }
    }
    for s in &services {
        links.extend(service_links(s));
    }
    for e in container["env"].as_array().into_iter().flatten() {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let value = if let Some(v) = e["value"].as_str() {
            let snapshot = vars.clone();
            let links = &links;
            expand(v, &|n| {
                snapshot
                    .iter()
                    .chain(links.iter())
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.clone())
            })
        } else if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            field(pod, path).unwrap_or_default()
        } else if let Some(r) = e["valueFrom"]["resourceFieldRef"]["resource"].as_str() {
            let target = e["valueFrom"]["resourceFieldRef"]["containerName"]
                .as_str()
                .and_then(|c| {
                    pod["spec"]["containers"]
                        .as_array()?
                        .iter()
                        .find(|x| x["name"] == c)
                })
                .unwrap_or(container);
            resource(
                target,
                node,
                r,
                &e["valueFrom"]["resourceFieldRef"]["divisor"],
            )
            .unwrap_or_default()
        } else if let Some(r) = e["valueFrom"].get("configMapKeyRef") {
            match key_of(
                store,
                "configmaps",
                ns,
                r["name"].as_str().unwrap_or_default(),
                r["key"].as_str().unwrap_or_default(),
            ) {
                Some(v) => v,
                None => continue,
            }
        } else if let Some(r) = e["valueFrom"].get("secretKeyRef") {
            match key_of(
                store,
                "secrets",
                ns,
                r["name"].as_str().unwrap_or_default(),
                r["key"].as_str().unwrap_or_default(),
            ) {
                Some(v) => v,
                None => continue,
            }
        } else {
            String::new()
        };
        set(&mut vars, name.to_owned(), value);
    }
    for (k, v) in links {
        if !vars.iter().any(|(n, _)| *n == k) {
            vars.push((k, v));
        }
    }
    if !vars.iter().any(|(n, _)| n == "HOME") {
        vars.push(("HOME".into(), "/root".into()));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_expand_as_upstream_expands_them() {
        let known = |n: &str| (n == "A").then(|| "x".to_owned());
        assert_eq!(expand("$(A)-$(B)-$$(A)-$A-$(", &known), "x-$(B)-$(A)-$A-$(");
    }

    #[test]
    fn a_service_links_its_ports() {
        let svc = json!({"metadata": {"name": "my-db"}, "spec": {"clusterIP": "10.0.0.7",
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}});
        let links = service_links(&svc);
        assert!(links.contains(&("MY_DB_SERVICE_HOST".into(), "10.0.0.7".into())));
        assert!(links.contains(&("MY_DB_SERVICE_PORT_PG".into(), "5432".into())));
        assert!(links.contains(&("MY_DB_PORT".into(), "tcp://10.0.0.7:5432".into())));
        assert!(links.contains(&("MY_DB_PORT_5432_TCP_ADDR".into(), "10.0.0.7".into())));
    }

    #[test]
    fn downward_fields_and_resources() {
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "web"}}, "status": {"podIP": "10.1.0.4"}});
        assert_eq!(
            field(&pod, "metadata.labels['app']").as_deref(),
            Some("web")
        );
        assert_eq!(field(&pod, "status.podIP").as_deref(), Some("10.1.0.4"));
        let c = json!({"resources": {"limits": {"memory": "64Mi", "cpu": "250m"}}});
        assert_eq!(
            resource(&c, None, "limits.memory", &json!("1Mi")).as_deref(),
            Some("64")
        );
        assert_eq!(
            resource(&c, None, "limits.cpu", &Value::Null).as_deref(),
            Some("1")
        );
        assert_eq!(
            resource(&c, None, "limits.cpu", &json!("1m")).as_deref(),
            Some("250")
        );
    }
}
