//! ServiceAccount admission for Pods on create: the `default` account when
//! none is named, a 403 when the account does not exist, and the projected
//! `kube-api-access-*` token volume mounted into every container, as upstream
//! adds it.

use serde_json::{Value, json};

use crate::authz::forbidden::Forbidden;

/// Where the token, CA and namespace are mounted.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Admits a Pod being created in `namespace`, mutating it. `account` is the
/// named ServiceAccount as stored, if it exists; `suffix` the five random
/// characters of the volume name (upstream's name generator; callers pass
/// their own so tests stay deterministic).
pub fn admit_pod(
    pod: &mut Value,
    namespace: &str,
    account: impl FnOnce(&str) -> Option<Value>,
    suffix: &str,
) -> Result<(), Forbidden> {
    let name = super::object_name(pod).to_owned();
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return Ok(());
    }
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    let sa_name = match pod["spec"]
        .get("serviceAccountName")
        .and_then(Value::as_str)
    {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => "default".to_owned(),
    };
    pod["spec"]["serviceAccountName"] = json!(sa_name);
    let Some(sa) = account(&sa_name) else {
        return Err(Forbidden::of_object(
            "",
            "pods",
            &name,
            &format!(
                "error looking up service account {namespace}/{sa_name}: serviceaccount \"{sa_name}\" not found"
            ),
        ));
    };
    if pod["spec"]
        .get("imagePullSecrets")
        .is_none_or(|v| v.as_array().is_none_or(Vec::is_empty))
        && let Some(secrets) = sa
            .get("imagePullSecrets")
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    {
        pod["spec"]["imagePullSecrets"] = secrets.clone();
    }
    let automount = match pod["spec"]
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
    {
        Some(b) => b,
        None => sa
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .unwrap_or(true),
    };
    if !automount {
        return Ok(());
    }
    let volume = format!("kube-api-access-{suffix}");
    let volumes = pod["spec"]
        .get("volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let already = volumes.iter().any(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.starts_with("kube-api-access-"))
    });
    let mut volume_name = volume.clone();
    if already {
        if let Some(n) = volumes
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .find(|n| n.starts_with("kube-api-access-"))
        {
            volume_name = n.to_owned();
        }
    } else {
        let mut vs = volumes;
        vs.push(json!({
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]
            }
        }));
        pod["spec"]["volumes"] = Value::Array(vs);
    }
    for field in ["initContainers", "containers"] {
        let Some(cs) = pod["spec"].get_mut(field).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in cs.iter_mut() {
            let mounts = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
            {
                continue;
            }
            let mut ms = mounts;
            ms.push(json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH}));
            c["volumeMounts"] = Value::Array(ms);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_account_and_token_volume() {
        let mut pod =
            json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"app","image":"nginx"}]}});
        admit_pod(
            &mut pod,
            "dev",
            |n| (n == "default").then(|| json!({"metadata":{"name":"default"}})),
            "x7k2p",
        )
        .unwrap();
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(pod["spec"]["volumes"][0]["name"], "kube-api-access-x7k2p");
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0],
            json!({"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":MOUNT_PATH})
        );
        // Admitting again adds nothing.
        let before = pod.clone();
        admit_pod(&mut pod, "dev", |_| Some(json!({})), "zzzzz").unwrap();
        assert_eq!(pod, before);
    }

    #[test]
    fn missing_account_and_opt_out() {
        let mut pod = json!({"metadata":{"name":"p"},"spec":{"serviceAccountName":"ci","containers":[{"name":"a"}]}});
        let e = admit_pod(&mut pod, "dev", |_| None, "abcde").unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: error looking up service account dev/ci: serviceaccount \"ci\" not found"
        );
        let mut pod = json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]}});
        admit_pod(&mut pod, "dev", |_| Some(json!({"automountServiceAccountToken":false,"imagePullSecrets":[{"name":"reg"}]})), "abcde").unwrap();
        assert!(pod["spec"].get("volumes").is_none());
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name":"reg"}]));
    }
}
