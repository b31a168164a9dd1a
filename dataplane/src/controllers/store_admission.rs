//! Objects the workload controllers create for their owners (a
//! ReplicaSet's Pods, a Deployment's ReplicaSets, a Job's Pods, a
//! StatefulSet's Pods and claims, a DaemonSet's Pods, a CronJob's Jobs) go
//! through the admission chain as in a real cluster, where
//! kube-controller-manager writes them through the apiserver as the
//! controller's own ServiceAccount
//! (`system:serviceaccount:kube-system:replicaset-controller`, …): LimitRange
//! defaults apply, ResourceQuota refuses, webhooks and admission policies see
//! them.
//!
//! Every Pod a controller creates gets ServiceAccount admission
//! ([`admit_service_account`]): its account, by default `default`, and the
//! `kube-api-access-*` token volume; a Pod whose account does not exist yet is
//! refused, as upstream refuses it, and its controller retries.
//!
//! Rollouts of thousands of Pods stay fast: the rest of the chain runs only when
//! something could act on it ([`anything_to_admit`]: a LimitRange or
//! ResourceQuota in its namespace, PodSecurity labels on it, a webhook
//! configuration or admission policy binding in the cluster), read from the
//! store's shared snapshots.

use std::sync::Arc;

use kemu_shared::UserInfo;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::Kind;
use crate::api::admission::Admission;
use crate::authz::Mode;
use crate::authz::admission::{Operation, pod_security, serviceaccount};
use crate::error::ApiError;
use crate::resources::ClusterResources;
use crate::store::{ObjectKey, Store};

/// The group-resource of ServiceAccounts.
const SERVICE_ACCOUNTS: &str = "serviceaccounts";

/// Namespaced objects that make a create in their namespace worth admitting.
const NAMESPACED: [&str; 2] = ["limitranges", "resourcequotas"];

/// Cluster-scoped objects that make any create worth admitting.
const CLUSTER_WIDE: [&str; 3] = [
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
];

/// The kube-controller-manager ServiceAccount that creates `object`, named
/// after the kind of its controlling owner; `None` for objects no workload
/// controller makes (those are written as before, unadmitted).
pub fn creator(object: &Value) -> Option<&'static str> {
    let owner = object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)?;
    let api_version = owner["apiVersion"].as_str()?;
    Some(match (api_version, owner["kind"].as_str()?) {
        ("apps/v1", "ReplicaSet") => "replicaset-controller",
        ("v1", "ReplicationController") => "replication-controller",
        ("apps/v1", "Deployment") => "deployment-controller",
        ("apps/v1", "StatefulSet") => "statefulset-controller",
        ("apps/v1", "DaemonSet") => "daemon-set-controller",
        ("batch/v1", "Job") => "job-controller",
        ("batch/v1", "CronJob") => "cronjob-controller",
        _ => return None,
    })
}

/// The identity a controller's ServiceAccount authenticates as.
pub fn controller_user(account: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:kube-system:{account}"),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
        extra: Default::default(),
    }
}

/// Whether any admission object could act on a create in `namespace`: the
/// cheap check done before admitting a controller's write.
pub fn anything_to_admit(store: &dyn Store, namespace: &str) -> bool {
    let any = |resource: &str, ns: Option<&str>| {
        store
            .snapshot(resource)
            .iter_stored(ns, None)
            .next()
            .is_some()
    };
    let pod_security = || {
        store
            .get(&ObjectKey::new(crate::store::NAMESPACES, "", namespace))
            .is_some_and(|ns| pod_security::labelled(&ns["metadata"]["labels"]))
    };
    (!namespace.is_empty()
        && (NAMESPACED.iter().any(|r| any(r, Some(namespace))) || pod_security()))
        || CLUSTER_WIDE.iter().any(|r| any(r, None))
}

/// ServiceAccount admission of a Pod a controller creates. Unlike the API
/// path, a missing `default` account is not waited for: the controller's
/// retry is the wait.
pub fn admit_service_account(store: &dyn Store, pod: &mut Value) -> Result<(), ApiError> {
    let namespace = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let wanted = pod["spec"]["serviceAccountName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_owned();
    let account = store
        .get(&ObjectKey::new(SERVICE_ACCOUNTS, &namespace, &wanted))
        .map(|a| (*a).clone());
    let suffix = crate::api::resource::random_suffix();
    serviceaccount::admit_pod(pod, &namespace, |_| account, &suffix)?;
    Ok(())
}

/// Admits the create of `object` (of `kind`) by the controller `account`:
/// the object to store (with its generated name, if it asked for one), or
/// the refusal.
pub async fn admit_create(
    store: &Arc<dyn Store>,
    resources: &ClusterResources,
    kind: Kind,
    account: &str,
    mut object: Value,
) -> Result<Value, ApiError> {
    let (group, version) = match kind.api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", kind.api_version),
    };
    let registry = resources.registry();
    let Some(rt) = registry.lookup(group, version, kind.plural) else {
        return Ok(object);
    };
    // As the API path does: a generated name is chosen before admission,
    // so refusals name the object.
    let name_missing = object["metadata"]["name"]
        .as_str()
        .is_none_or(str::is_empty);
    if name_missing
        && let Some(prefix) = object["metadata"]["generateName"]
            .as_str()
            .filter(|p| !p.is_empty())
    {
        let name = format!("{prefix}{}", crate::api::resource::random_suffix());
        object["metadata"]["name"] = json!(name);
    }
    object["apiVersion"] = json!(kind.api_version);
    object["kind"] = json!(kind.kind);
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let user = controller_user(account);
    // Controllers' requests carry no one to read warnings.
    let warnings = Mutex::new(Vec::new());
    let admission = Admission {
        // The controllers' ServiceAccounts never write RBAC objects here.
        authorization: Mode::AllowAll,
        store,
        rt: &rt,
        subresource: "",
        namespace: if kind.namespaced { &namespace } else { "" },
        user: &user,
        dry_run: false,
        warnings: &warnings,
        from_controller: true,
    };
    admission.admit(Operation::Create, object, None).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn owned_by(api_version: &str, kind: &str) -> Value {
        json!({"metadata": {"ownerReferences": [
            {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u", "controller": true}
        ]}})
    }

    #[test]
    fn the_creator_is_the_owners_controller() {
        assert_eq!(
            creator(&owned_by("apps/v1", "ReplicaSet")),
            Some("replicaset-controller")
        );
        assert_eq!(
            creator(&owned_by("apps/v1", "DaemonSet")),
            Some("daemon-set-controller")
        );
        assert_eq!(
            creator(&owned_by("batch/v1", "Job")),
            Some("job-controller")
        );
        assert_eq!(creator(&owned_by("v1", "Node")), None);
        assert_eq!(creator(&json!({"metadata": {}})), None);
    }

    #[test]
    fn only_admission_objects_make_a_create_worth_admitting() {
        let store = MemoryStore::new(kemu_shared::FakeClock::at_epoch(), Default::default());
        assert!(!anything_to_admit(&store, "default"));
        store
            .create(
                &ObjectKey::new("limitranges", "default", "lr"),
                json!({"metadata": {"name": "lr", "namespace": "default"}}),
            )
            .unwrap();
        assert!(anything_to_admit(&store, "default"));
        assert!(!anything_to_admit(&store, "b"));
        store
            .create(
                &ObjectKey::new(CLUSTER_WIDE[1], "", "v"),
                json!({"metadata": {"name": "v"}}),
            )
            .unwrap();
        assert!(anything_to_admit(&store, "b"));
    }
}
