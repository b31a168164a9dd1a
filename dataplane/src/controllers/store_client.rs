//! The adapter from a cluster's [`Store`] to the controllers' [`Client`]: the
//! controllers write through the same store as API clients, so watchers see
//! every intermediate state.
//!
//! Creates of objects for their owners go through admission first
//! ([`super::store_admission`]). Other writes here are privileged: no
//! validation beyond the store's own, `update` keeps the stored
//! status of kinds with a status subresource, `update_status` changes only it.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::client::{
    BoxFuture, Client, ClientError, DeleteOptions, EventType, Kind, Propagation, Result,
    ScaleTarget, WatchEvent, WatchStream,
};
use super::runtime::ObjKey;
use crate::api::request;
use crate::api::resource::random_suffix;
use crate::authz::admission::storage_protection;
use crate::error::ApiError;
use crate::label_selector::LabelSelector;
use crate::resources::{ClusterResources, ResourceType, scale};
use crate::store::deletion::Propagation as StorePropagation;
use crate::store::{
    DeleteOptions as StoreDeleteOptions, Deleted, EventKind, ObjectKey, Preconditions, Store,
    Stored, WatchFrom, generate_name,
};
use crate::strategy::{pods, workloads};

/// One cluster's store, as the controllers reach it.
#[derive(Debug, Clone)]
pub struct StoreClient {
    store: Arc<dyn Store>,
    resources: Arc<ClusterResources>,
}

impl StoreClient {
    /// An adapter over `store`; `resources` (the cluster's live view, custom
    /// resources included) lists the namespaced types whose objects a
    /// namespace's deletion removes.
    pub fn new(store: Arc<dyn Store>, resources: Arc<ClusterResources>) -> Arc<Self> {
        Arc::new(Self { store, resources })
    }
}

/// The store's group-resource key of a kind: `pods`, `deployments.apps`.
pub fn group_resource(kind: Kind) -> String {
    match kind.api_version.rsplit_once('/') {
        Some((group, _)) => format!("{}.{group}", kind.plural),
        None => kind.plural.to_owned(),
    }
}

fn key(kind: Kind, namespace: &str, name: &str) -> ObjectKey {
    let namespace = if kind.namespaced { namespace } else { "" };
    ObjectKey::new(&group_resource(kind), namespace, name)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object["metadata"][field].as_str().unwrap_or_default()
}

fn client_error(e: ApiError) -> ClientError {
    match e {
        ApiError::ObjectNotFound(t) => ClientError::NotFound(t.qualified()),
        ApiError::AlreadyExists(t) => ClientError::AlreadyExists(t.qualified()),
        ApiError::Conflict { target, .. } => ClientError::Conflict(target.qualified()),
        ApiError::Invalid { .. } | ApiError::BadRequest(_) | ApiError::TooLarge(_) => {
            ClientError::Invalid(e.to_string())
        }
        ApiError::Refused(_) | ApiError::Forbidden(_) => ClientError::Refused(e.to_string()),
        other => ClientError::Unavailable(other.to_string()),
    }
}

/// Whether `a` and `b` differ at most in their `status`. Maps iterate in key
/// order, so the fields can be compared pairwise.
fn same_but_status(a: &Value, b: &Value) -> bool {
    fn rest(m: &serde_json::Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
        m.iter().filter(|(k, _)| k.as_str() != "status")
    }
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => rest(x).eq(rest(y)),
        _ => false,
    }
}

impl StoreClient {
    fn get_now(&self, kind: Kind, namespace: &str, name: &str) -> Result<Arc<Value>> {
        let key = key(kind, namespace, name);
        self.store
            .get(&key)
            .ok_or_else(|| ClientError::NotFound(format!("{} \"{name}\"", kind.plural)))
    }

    fn create_now(&self, kind: Kind, mut object: Value) -> Result<Arc<Value>> {
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        // What defaulting and admission give every object the API creates
        // (a Job of a CronJob, a claim of a StatefulSet, a provisioned volume).
        if let Some(spec) = object.get_mut("spec") {
            workloads::default_spec(kind.kind, spec);
        }
        if kind.kind == "Job" && !meta_str(&object, "name").is_empty() {
            object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
            workloads::generate_job_selector(&mut object);
        }
        if kind.kind == "Pod" {
            pods::init_status(&mut object);
            pods::default_pod(&mut object);
            pods::admit_pod(&mut object);
        }
        if kind.api_version == "v1"
            && let Some(f) = storage_protection::finalizer_of("", kind.plural)
        {
            storage_protection::add_finalizer(&mut object, f);
        }
        let namespace = meta_str(&object, "namespace").to_owned();
        let name = meta_str(&object, "name").to_owned();
        if !name.is_empty() {
            return self
                .store
                .create(&key(kind, &namespace, &name), object)
                .map_err(client_error);
        }
        let prefix = meta_str(&object, "generateName").to_owned();
        if prefix.is_empty() {
            return Err(ClientError::Invalid(
                "name or generateName is required".into(),
            ));
        }
        let name = format!("{prefix}{}", random_suffix());
        object["metadata"]["name"] = json!(name);
        generate_name::create_generated(
            self.store.as_ref(),
            key(kind, &namespace, &name),
            object,
            &prefix,
            random_suffix,
        )
        .map_err(client_error)
    }

    fn update_now(&self, kind: Kind, mut object: Value, status_only: bool) -> Result<Arc<Value>> {
        let namespace = meta_str(&object, "namespace").to_owned();
        let name = meta_str(&object, "name").to_owned();
        let key = key(kind, &namespace, &name);
        let seen = self
            .store
            .get_stored(&key)
            .ok_or_else(|| ClientError::NotFound(format!("{} \"{name}\"", kind.plural)))?;
        let current = seen.object();
        let next = if status_only
            && object.get("status").is_some()
            && same_but_status(&object, &current)
        {
            // The usual controller write: the object as read, with a new
            // status. It is the next object as it is, without another copy.
            object
        } else if status_only {
            let rv = object["metadata"]["resourceVersion"].clone();
            let mut next = (*current).clone();
            next["status"] = object["status"].take();
            next["metadata"]["resourceVersion"] = rv;
            next
        } else {
            if kind.status_subresource {
                match current.get("status") {
                    Some(s) => object["status"] = s.clone(),
                    None => {
                        if let Some(m) = object.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            object["apiVersion"] = json!(kind.api_version);
            object["kind"] = json!(kind.kind);
            // A write that carries no managed fields keeps the live ones, as
            // upstream's field manager does.
            if object["metadata"].get("managedFields").is_none()
                && let Some(mf) = current["metadata"].get("managedFields")
            {
                object["metadata"]["managedFields"] = mf.clone();
            }
            object
        };
        self.store
            .update_seen(&key, next, &Preconditions::default(), (&seen, current))
            .map_err(client_error)
    }

    fn delete_now(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Option<Arc<Value>>> {
        let key = key(kind, namespace, name);
        let opts = StoreDeleteOptions {
            preconditions: Preconditions {
                uid: options.uid.clone(),
                resource_version: None,
            },
            grace_period_seconds: options.grace_period_seconds,
            propagation: options.propagation.map(|p| match p {
                Propagation::Orphan => StorePropagation::Orphan,
                Propagation::Background => StorePropagation::Background,
                Propagation::Foreground => StorePropagation::Foreground,
            }),
            orphan_dependents: None,
        };
        let strategy = crate::resources::deletion::strategy(kind.api_version, kind.kind);
        match self
            .store
            .delete_with(&key, &strategy, &opts)
            .map_err(client_error)?
        {
            Deleted::Now(_) => Ok(None),
            // Still stored: terminating (grace period or finalizers).
            Deleted::Pending(o) | Deleted::AlreadyPending(o) => Ok(Some(o)),
        }
    }

    fn watch_now(&self, kind: Kind) -> Result<WatchStream> {
        let resource = group_resource(kind);
        let sub = self
            .store
            .watch(&resource, WatchFrom::Now)
            .map_err(client_error)?;
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(initial) = &sub.initial {
            for (_, stored) in initial.iter_stored(None, None) {
                let mut event = WatchEvent::new(EventType::Added, stored.object());
                if let Stored::Encoded(_) = stored {
                    event.held = Some(stored.clone());
                }
                let _ = tx.send(event);
            }
        }
        for event in &sub.backlog {
            if event.key.resource == resource {
                let _ = tx.send(convert(event));
            }
        }
        let mut live = sub.live;
        let mut seen = sub.backlog.last().map_or(sub.rv, |e| e.rv.max(sub.rv));
        let store = self.store.clone();
        tokio::spawn(async move {
            loop {
                match live.recv().await {
                    Ok(event) => {
                        seen = event.rv;
                        if event.key.resource == resource && tx.send(convert(&event)).is_err() {
                            return;
                        }
                    }
                    // Fell behind: catch up from the history, as an API
                    // watcher does.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let Ok(sub) = store.watch(&resource, WatchFrom::After(seen)) else {
                            // Older than the history: closing the stream makes
                            // the runtime watch again and reconcile all it is
                            // sent (level-triggered), so nothing is missed.
                            return;
                        };
                        for event in &sub.backlog {
                            seen = event.rv;
                            if tx.send(convert(event)).is_err() {
                                return;
                            }
                        }
                        seen = seen.max(sub.rv);
                        live = sub.live;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(rx)
    }

    fn list_now(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: Option<&LabelSelector>,
    ) -> Vec<Arc<Value>> {
        let snapshot = self.store.snapshot(&group_resource(kind));
        let namespace = namespace.filter(|_| kind.namespaced);
        snapshot
            .iter(namespace, None)
            .filter(|(_, o)| selector.is_none_or(|s| s.selects(o)))
            .map(|(_, o)| o.clone())
            .collect()
    }

    fn delete_namespace_contents_now(&self, namespace: &str) -> usize {
        // OrderedNamespaceDeletion (on in 1.34): the Pods go first, and
        // nothing else is deleted while one remains, so a Pod never outlives
        // the Secrets and ConfigMaps it mounts.
        let pods = self.delete_all_of("pods", namespace);
        if pods > 0 {
            return pods;
        }
        let mut remaining = 0;
        let registry = self.resources.registry();
        let mut seen = std::collections::HashSet::from(["pods".to_owned()]);
        for rt in registry.all().iter().filter(|t| t.namespaced) {
            let resource = request::group_resource(rt);
            if !seen.insert(resource.clone()) {
                // A custom type served in several versions has one storage
                // (and events.k8s.io Events are core Events).
                continue;
            }
            remaining += self.delete_all_of(&resource, namespace);
        }
        remaining
    }

    /// Deletes every `resource` object in `namespace`; answers how many
    /// remain (finalizers or graceful deletion keep them).
    fn delete_all_of(&self, resource: &str, namespace: &str) -> usize {
        let snapshot = self.store.snapshot(resource);
        let mut remaining = 0;
        for ((ns, name), _) in snapshot.iter_stored(Some(namespace), None) {
            let key = ObjectKey::new(resource, ns, name);
            if self.store.delete(&key, &Preconditions::default()).is_ok()
                && self.store.get(&key).is_some()
            {
                remaining += 1;
            }
        }
        remaining
    }
}

fn convert(event: &crate::store::Event) -> WatchEvent {
    let kind = match event.kind {
        EventKind::Added => EventType::Added,
        EventKind::Modified => EventType::Modified,
        EventKind::Deleted => EventType::Deleted,
    };
    WatchEvent {
        kind,
        object: event.object(),
        held: match event.kind {
            EventKind::Deleted => None,
            _ => event.held().cloned(),
        },
    }
}

impl Client for StoreClient {
    fn get<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Arc<Value>>> {
        Box::pin(async move { self.get_now(kind, namespace, name) })
    }

    fn list<'a>(
        &'a self,
        kind: Kind,
        namespace: Option<&'a str>,
        selector: Option<&'a LabelSelector>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>>> {
        Box::pin(async move { Ok(self.list_now(kind, namespace, selector)) })
    }

    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        Box::pin(async move {
            let mut object = object;
            let creator = super::store_admission::creator(&object);
            if kind.kind == "Pod" && creator.is_some() {
                super::store_admission::admit_service_account(self.store.as_ref(), &mut object)
                    .map_err(client_error)?;
            }
            let object = match creator {
                Some(account)
                    if super::store_admission::anything_to_admit(
                        self.store.as_ref(),
                        meta_str(&object, "namespace"),
                    ) =>
                {
                    super::store_admission::admit_create(
                        &self.store,
                        &self.resources,
                        kind,
                        account,
                        object,
                    )
                    .await
                    .map_err(client_error)?
                }
                _ => object,
            };
            self.create_now(kind, object)
        })
    }

    fn update(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        Box::pin(async move { self.update_now(kind, object, false) })
    }

    fn update_status(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        Box::pin(async move { self.update_now(kind, object, true) })
    }

    fn delete<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
        options: DeleteOptions,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>>> {
        Box::pin(async move { self.delete_now(kind, namespace, name, &options) })
    }

    fn watch(&self, kind: Kind) -> BoxFuture<'_, Result<WatchStream>> {
        Box::pin(async move { self.watch_now(kind) })
    }

    fn list_stored(&self, kind: Kind) -> BoxFuture<'_, Result<Vec<(ObjKey, Stored)>>> {
        Box::pin(async move {
            let snapshot = self.store.snapshot(&group_resource(kind));
            Ok(snapshot
                .iter_stored(None, None)
                .map(|((ns, name), stored)| (ObjKey::new(ns, name), stored.clone()))
                .collect())
        })
    }

    fn delete_namespace_contents<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<usize>> {
        Box::pin(async move { Ok(self.delete_namespace_contents_now(namespace)) })
    }

    fn get_scale<'a>(&'a self, target: &'a ScaleTarget) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let (rt, _, object) = self.scalable(target)?;
            Ok(scale::view(&rt, &object))
        })
    }

    fn update_scale<'a>(
        &'a self,
        target: &'a ScaleTarget,
        replicas: i64,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let (rt, key, mut object) = self.scalable(target)?;
            scale::set_replicas(&rt, &mut object, replicas);
            let written = self
                .store
                .update(&key, object, &Preconditions::default())
                .map_err(client_error)?;
            Ok(scale::view(&rt, &written))
        })
    }
}

impl StoreClient {
    /// The served type of `target` with a `/scale` (any version of its group
    /// and kind, the named one first, custom resources included), the
    /// object's key and the object.
    fn scalable(&self, target: &ScaleTarget) -> Result<(Arc<ResourceType>, ObjectKey, Value)> {
        let registry = self.resources.registry();
        let rt = registry
            .by_kind(&target.api_version, &target.kind)
            .or_else(|| {
                registry
                    .all()
                    .iter()
                    .find(|t| t.group == target.group() && t.kind == target.kind)
                    .cloned()
            })
            .ok_or_else(|| target.no_match())?;
        if !scale::has_scale(&rt) {
            // A served type without `/scale`: the subresource's 404.
            return Err(ClientError::Invalid(
                "the server could not find the requested resource".into(),
            ));
        }
        let namespace = if rt.namespaced {
            target.namespace.as_str()
        } else {
            ""
        };
        let key = ObjectKey::new(&request::group_resource(&rt), namespace, &target.name);
        let object = self.store.get(&key).ok_or_else(|| {
            ClientError::NotFound(
                crate::error::Target {
                    name: target.name.clone(),
                    group: rt.group.clone(),
                    kind: rt.plural.clone(),
                }
                .qualified(),
            )
        })?;
        Ok((rt, key, (*object).clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::kinds;

    #[test]
    fn status_writes_compare_everything_but_the_status() {
        let a = json!({"metadata": {"name": "p", "resourceVersion": "3"}, "spec": {"x": 1}, "status": {"phase": "Running"}});
        let mut b = a.clone();
        b["status"]["phase"] = json!("Pending");
        assert!(same_but_status(&a, &b));
        b["metadata"]["resourceVersion"] = json!("4");
        assert!(!same_but_status(&a, &b), "another version");
        let mut c = a.clone();
        c["spec"]["x"] = json!(2);
        assert!(!same_but_status(&a, &c));
        let mut d = a.clone();
        d["extra"] = json!(true);
        assert!(!same_but_status(&a, &d));
    }

    #[test]
    fn group_resources_match_the_store_keys() {
        assert_eq!(group_resource(kinds::POD), "pods");
        assert_eq!(group_resource(kinds::DEPLOYMENT), "deployments.apps");
        assert_eq!(
            group_resource(kinds::ENDPOINT_SLICE),
            "endpointslices.discovery.k8s.io"
        );
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_catches_up_from_the_history() {
        use crate::store::{MemoryStore, StoreLimits};
        let limits = StoreLimits {
            fanout: 16,
            ..StoreLimits::default()
        };
        let store: Arc<dyn Store> =
            Arc::new(MemoryStore::new(kemu_shared::FakeClock::at_epoch(), limits));
        let client = StoreClient::new(store, Arc::new(ClusterResources::default()));
        let mut watch = client.watch(kinds::CONFIG_MAP).await.unwrap();
        for i in 0..100 {
            let cm = json!({"metadata": {"name": format!("c{i:03}"), "namespace": "default"}});
            client.create(kinds::CONFIG_MAP, cm).await.unwrap();
        }
        let mut names = Vec::new();
        while names.len() < 100 {
            let event = watch.recv().await.expect("the stream stays open");
            assert_eq!(event.kind, EventType::Added);
            names.push(
                event.object["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        let expected: Vec<String> = (0..100).map(|i| format!("c{i:03}")).collect();
        assert_eq!(names, expected);
    }

    #[tokio::test]
    async fn deleting_a_namespace_of_ten_thousand_objects_leaves_nothing_behind() {
        use std::time::Duration;

        use crate::controllers::{ControllerConfig, Controllers, obj};
        use crate::store::{MemoryStore, StoreLimits};
        const PODS: i64 = 5_000;
        const CONFIG_MAPS: usize = 5_000;
        let clock = kemu_shared::FakeClock::at_epoch();
        let store: Arc<dyn Store> =
            Arc::new(MemoryStore::new(clock.clone(), StoreLimits::default()));
        let client = StoreClient::new(store.clone(), Arc::new(ClusterResources::default()));
        let controllers =
            Controllers::start(client.clone(), clock.clone(), ControllerConfig::default());
        controllers.settle().await;
        for n in 0..50 {
            let node = json!({"metadata": {"name": format!("node-{n:02}")},
                "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "1000"},
                           "conditions": [{"type": "Ready", "status": "True"}]}});
            client.create(kinds::NODE, node).await.unwrap();
        }
        let ns = json!({"metadata": {"name": "bulk"}, "spec": {"finalizers": ["kubernetes"]}});
        client.create(kinds::NAMESPACE, ns).await.unwrap();
        for i in 0..CONFIG_MAPS {
            let cm = json!({"metadata": {"name": format!("cm-{i:05}"), "namespace": "bulk"},
                "data": {"i": i.to_string()}});
            client.create(kinds::CONFIG_MAP, cm).await.unwrap();
        }
        let rs = json!({"metadata": {"name": "big", "namespace": "bulk"},
            "spec": {"replicas": PODS, "selector": {"matchLabels": {"app": "big"}},
                     "template": {"metadata": {"labels": {"app": "big"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        let rs = client.create(kinds::REPLICA_SET, rs).await.unwrap();
        controllers.settle().await;
        clock.advance(Duration::from_secs(1));
        controllers.settle().await;
        let in_bulk = |resource: &str| {
            store
                .snapshot(resource)
                .iter_stored(Some("bulk"), None)
                .count()
        };
        assert_eq!(in_bulk("pods"), PODS as usize);

        client
            .delete(kinds::NAMESPACE, "", "bulk", DeleteOptions::default())
            .await
            .unwrap();
        for _ in 0..10 {
            clock.advance(Duration::from_secs(1));
            controllers.settle().await;
        }
        assert!(
            client.get(kinds::NAMESPACE, "", "bulk").await.is_err(),
            "the namespace is gone"
        );
        let registry = ClusterResources::default().registry();
        for rt in registry.all().iter().filter(|t| t.namespaced) {
            let resource = request::group_resource(rt);
            assert_eq!(in_bulk(&resource), 0, "{resource} left in the namespace");
        }
        let pods = controllers.runtime().informer(kinds::POD);
        assert_eq!(pods.len(), 0, "the Pod informer forgot them");
        assert!(pods.owned_by(obj::uid(&rs)).is_empty());
        assert_eq!(controllers.runtime().informer(kinds::REPLICA_SET).len(), 0);
    }
}
