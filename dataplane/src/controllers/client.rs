//! The narrow interface controllers use to reach one cluster's objects, as
//! kube-controller-manager reaches the apiserver, and [`MemClient`], a minimal
//! in-memory implementation for tests and benchmarks.
//!
//! # What an implementation (the store adapter) must guarantee
//!
//! - **Objects** are `serde_json::Value`s in their wire form (`apiVersion`,
//!   `kind`, `metadata`, `spec`, `status`), keyed by ([`Kind`], namespace, name);
//!   the namespace is `""` for cluster-scoped kinds.
//! - **resourceVersion** is a decimal integer, increasing with every write in the
//!   cluster. Controllers compare them numerically to drop stale cache entries.
//! - **create** assigns `uid`, `resourceVersion`, `creationTimestamp` (from the
//!   cluster's Clock), `generation: 1`, and honours `metadata.generateName` (5
//!   characters of `bcdfghjklmnpqrstvwxz2456789` appended, retried on collision).
//!   An existing name is [`ClientError::AlreadyExists`].
//! - **update** is a privileged write (no admission, no immutability checks: the
//!   scheduler sets `spec.nodeName` through it, as a binding would): it fails with
//!   [`ClientError::Conflict`] when `metadata.resourceVersion` is not the stored one,
//!   keeps the stored `status` for kinds with a status subresource, bumps
//!   `metadata.generation` when `spec` changed (any non-metadata change for kinds
//!   without one), and deletes the object when it carries a `deletionTimestamp`
//!   and its update leaves `metadata.finalizers` empty.
//! - **update_status** replaces only `status` (same Conflict rule).
//! - **delete** follows `propagationPolicy` as the apiserver does: `Orphan` adds
//!   the `orphan` finalizer, `Foreground` the `foregroundDeletion` finalizer; an
//!   object with finalizers gets a `deletionTimestamp` and stays (returned as
//!   `Some`); otherwise it is removed at once (`None`). A Namespace stays while
//!   `spec.finalizers` is non-empty. A Pod on a Node is deleted gracefully
//!   (`Some`, terminating for its grace period) until a delete with
//!   `grace_period_seconds: Some(0)` — the kubelet's — removes it. Deleting a
//!   missing object is NotFound. (The store adapter applies
//!   [`crate::store::deletion`]; [`MemClient`] keeps the simpler rules.)
//! - **watch** returns an unbounded, ordered, lossless stream for one kind across
//!   all namespaces: first an `Added` event for every existing object (the
//!   "resourceVersion unset" semantic), then every change in resourceVersion order,
//!   each event carrying the object as stored after the change (`Deleted`: as it
//!   was last stored, or with the deletion's resourceVersion). If the adapter can
//!   no longer deliver (history expired), it closes the stream: the runtime then
//!   re-watches and reconciles everything it is sent (level-triggered).
//! - **delete_namespace_contents** deletes every namespaced object of every type
//!   served (built-ins and custom resources) in a namespace, with background
//!   propagation, and answers how many remain (held by finalizers).
//! - Writes are visible to `get` as soon as the call returns; events reach the
//!   watchers soon after (they never run inside the write).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kemu_shared::SharedClock;
use parking_lot::Mutex;
use serde_json::{Value, json};
use thiserror::Error;
use tokio::sync::mpsc;

use super::runtime::ObjKey;
use crate::store::Stored;

use super::obj;
use crate::label_selector::LabelSelector;
use crate::resources::{ResourceRegistry, ResourceType, scale};

/// A boxed, sendable future: the trait is object-safe and async.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a client call answers.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// A resource type controllers read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    /// `v1`, `apps/v1`, …
    pub api_version: &'static str,
    /// `Pod`, `Deployment`, …
    pub kind: &'static str,
    /// `pods`, `deployments`, …
    pub plural: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether `status` is a subresource (updates of the object keep it).
    pub status_subresource: bool,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.plural, self.api_version)
    }
}

/// The kinds the built-in controllers use.
pub mod kinds {
    use super::Kind;

    const fn k(
        api_version: &'static str,
        kind: &'static str,
        plural: &'static str,
        namespaced: bool,
        status_subresource: bool,
    ) -> Kind {
        Kind {
            api_version,
            kind,
            plural,
            namespaced,
            status_subresource,
        }
    }

    /// core/v1 Pod.
    pub const POD: Kind = k("v1", "Pod", "pods", true, true);
    /// core/v1 Node.
    pub const NODE: Kind = k("v1", "Node", "nodes", false, true);
    /// core/v1 Namespace.
    pub const NAMESPACE: Kind = k("v1", "Namespace", "namespaces", false, true);
    /// core/v1 Event.
    pub const EVENT: Kind = k("v1", "Event", "events", true, false);
    /// core/v1 Service.
    pub const SERVICE: Kind = k("v1", "Service", "services", true, true);
    /// discovery.k8s.io/v1 EndpointSlice.
    pub const ENDPOINT_SLICE: Kind = k(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "endpointslices",
        true,
        false,
    );
    /// core/v1 Endpoints.
    pub const ENDPOINTS: Kind = k("v1", "Endpoints", "endpoints", true, false);
    /// core/v1 ServiceAccount.
    pub const SERVICE_ACCOUNT: Kind = k("v1", "ServiceAccount", "serviceaccounts", true, false);
    /// core/v1 Secret.
    pub const SECRET: Kind = k("v1", "Secret", "secrets", true, false);
    /// policy/v1 PodDisruptionBudget.
    pub const POD_DISRUPTION_BUDGET: Kind = k(
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        true,
    );
    /// core/v1 ConfigMap.
    pub const CONFIG_MAP: Kind = k("v1", "ConfigMap", "configmaps", true, false);
    /// apps/v1 Deployment.
    pub const DEPLOYMENT: Kind = k("apps/v1", "Deployment", "deployments", true, true);
    /// apps/v1 ReplicaSet.
    pub const REPLICA_SET: Kind = k("apps/v1", "ReplicaSet", "replicasets", true, true);
    /// apps/v1 ControllerRevision.
    pub const CONTROLLER_REVISION: Kind = k(
        "apps/v1",
        "ControllerRevision",
        "controllerrevisions",
        true,
        false,
    );
    /// core/v1 ReplicationController.
    pub const REPLICATION_CONTROLLER: Kind = k(
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
        true,
    );
    /// apps/v1 StatefulSet.
    pub const STATEFUL_SET: Kind = k("apps/v1", "StatefulSet", "statefulsets", true, true);
    /// apps/v1 DaemonSet.
    pub const DAEMON_SET: Kind = k("apps/v1", "DaemonSet", "daemonsets", true, true);
    /// core/v1 PersistentVolumeClaim.
    pub const PVC: Kind = k(
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
    );
    /// core/v1 PersistentVolume.
    pub const PV: Kind = k("v1", "PersistentVolume", "persistentvolumes", false, true);
    /// storage.k8s.io/v1 StorageClass.
    pub const STORAGE_CLASS: Kind = k(
        "storage.k8s.io/v1",
        "StorageClass",
        "storageclasses",
        false,
        false,
    );
    /// storage.k8s.io/v1 VolumeAttributesClass.
    pub const VOLUME_ATTRIBUTES_CLASS: Kind = k(
        "storage.k8s.io/v1",
        "VolumeAttributesClass",
        "volumeattributesclasses",
        false,
        false,
    );
    /// coordination.k8s.io/v1 Lease.
    pub const LEASE: Kind = k("coordination.k8s.io/v1", "Lease", "leases", true, false);
    /// core/v1 ResourceQuota.
    pub const RESOURCE_QUOTA: Kind = k("v1", "ResourceQuota", "resourcequotas", true, true);
    /// autoscaling/v2 HorizontalPodAutoscaler.
    pub const HPA: Kind = k(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
    );
    /// batch/v1 Job.
    pub const JOB: Kind = k("batch/v1", "Job", "jobs", true, true);
    /// batch/v1 CronJob.
    pub const CRON_JOB: Kind = k("batch/v1", "CronJob", "cronjobs", true, true);
    /// apiextensions.k8s.io/v1 CustomResourceDefinition.
    pub const CRD: Kind = k(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
    );
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// It appeared (or existed when the watch started).
    Added,
    /// It changed.
    Modified,
    /// It is gone.
    Deleted,
}

/// One watch event.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    /// What happened.
    pub kind: EventType,
    /// The object after the change (before it, for `Deleted`).
    pub object: Arc<Value>,
    /// The object as the source holds it, when it keeps it encoded (the
    /// informer then keeps that instead of the decoded tree).
    pub held: Option<Stored>,
}

impl WatchEvent {
    /// An event with the object alone.
    pub fn new(kind: EventType, object: Arc<Value>) -> Self {
        Self {
            kind,
            object,
            held: None,
        }
    }
}

/// A watch: see the module docs for its guarantees.
pub type WatchStream = mpsc::UnboundedReceiver<WatchEvent>;

/// How a delete propagates to dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are removed after the owner, by the garbage collector.
    Background,
    /// Dependents are removed first; the owner waits with `foregroundDeletion`.
    Foreground,
    /// Dependents lose their ownerReference.
    Orphan,
}

/// Options of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `propagationPolicy`; `None` is the type's default (background).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`: only delete this incarnation.
    pub uid: Option<String>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
}

/// An object reached through its `/scale` subresource: an HPA's
/// `scaleTargetRef` in its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleTarget {
    /// `apps/v1`, `stable.example.com/v1`, …
    pub api_version: String,
    /// `Deployment`, `CronTab`, …
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ScaleTarget {
    /// The API group (`""` for core).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default()
    }

    /// Upstream's REST mapper error for a kind no served type has.
    pub fn no_match(&self) -> ClientError {
        ClientError::Invalid(format!(
            "no matches for kind \"{}\" in group \"{}\"",
            self.kind,
            self.group()
        ))
    }
}

/// The built-in kinds with a `/scale` the controllers know (what a client
/// without the cluster's registry can scale).
fn builtin_scalable(target: &ScaleTarget) -> Result<(Kind, Arc<ResourceType>)> {
    let kind = [kinds::DEPLOYMENT, kinds::REPLICA_SET, kinds::STATEFUL_SET]
        .into_iter()
        .find(|k| k.kind == target.kind && k.api_version.starts_with(target.group()))
        .ok_or_else(|| target.no_match())?;
    let rt = ResourceRegistry::builtin_ref()
        .by_kind(kind.api_version, kind.kind)
        .ok_or_else(|| target.no_match())?;
    Ok((kind, rt))
}

/// Why a client call failed.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ClientError {
    /// The object does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The name is taken.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// A stale resourceVersion or uid precondition.
    #[error(
        "Operation cannot be fulfilled on {0}: the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict(String),
    /// The store refused the object.
    #[error("{0}")]
    Invalid(String),
    /// The store could not serve the call.
    #[error("{0}")]
    Unavailable(String),
    /// Admission refused the write (a quota exceeded, a webhook's denial):
    /// the apiserver's message.
    #[error("{0}")]
    Refused(String),
    /// The reconcile panicked (a bug, caught so its controller runs on).
    #[error("reconcile panicked: {0}")]
    Panicked(String),
}

/// One cluster's objects, as controllers see them. See the module docs for what
/// an implementation must guarantee.
pub trait Client: Send + Sync + 'static {
    /// The object, or [`ClientError::NotFound`].
    fn get<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Arc<Value>>>;

    /// Objects of `kind`, in `namespace` (all when `None`), matching `selector`.
    fn list<'a>(
        &'a self,
        kind: Kind,
        namespace: Option<&'a str>,
        selector: Option<&'a LabelSelector>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>>>;

    /// Every object of `kind` with its key, as the source holds it: kinds the
    /// store keeps encoded as their JSON, decoded by whoever needs them.
    fn list_stored(&self, kind: Kind) -> BoxFuture<'_, Result<Vec<(ObjKey, Stored)>>> {
        Box::pin(async move {
            let objects = self.list(kind, None, None).await?;
            Ok(objects
                .into_iter()
                .map(|o| (ObjKey::of(&o), Stored::Decoded(o)))
                .collect())
        })
    }

    /// Creates `object`; answers it as stored (shared with the store: no
    /// copy per write).
    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>>;

    /// Replaces `object` (metadata and spec) if its resourceVersion is current.
    fn update(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>>;

    /// Replaces the `status` of `object` if its resourceVersion is current.
    fn update_status(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>>;

    /// Deletes an object; `Some` when it stays, marked for deletion.
    fn delete<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
        options: DeleteOptions,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>>>;

    /// Every event of `kind`, starting with the objects that exist.
    fn watch(&self, kind: Kind) -> BoxFuture<'_, Result<WatchStream>>;

    /// Deletes everything in `namespace`; answers how many objects remain.
    fn delete_namespace_contents<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<usize>>;

    /// The `autoscaling/v1` Scale of `target`, as its `/scale` serves it;
    /// [`ClientError::Invalid`] when no served type of that kind has one.
    /// This default knows the built-in workloads only.
    fn get_scale<'a>(&'a self, target: &'a ScaleTarget) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let (kind, rt) = builtin_scalable(target)?;
            let o = self.get(kind, &target.namespace, &target.name).await?;
            Ok(scale::view(&rt, &o))
        })
    }

    /// Sets the desired replicas of `target` through its `/scale`; the new Scale.
    fn update_scale<'a>(
        &'a self,
        target: &'a ScaleTarget,
        replicas: i64,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let (kind, rt) = builtin_scalable(target)?;
            let mut o =
                Arc::unwrap_or_clone(self.get(kind, &target.namespace, &target.name).await?);
            scale::set_replicas(&rt, &mut o, replicas);
            let written = self.update(kind, o).await?;
            Ok(scale::view(&rt, &written))
        })
    }
}

/// The characters upstream appends to generated names (no vowels, no 0/1/3).
pub const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

type Bucket = BTreeMap<(String, String), Arc<Value>>;

#[derive(Default)]
struct MemState {
    rv: u64,
    uids: u64,
    rng: u64,
    objects: HashMap<Kind, Bucket>,
    watchers: HashMap<Kind, Vec<mpsc::UnboundedSender<WatchEvent>>>,
}

/// A minimal in-memory [`Client`] for tests and benchmarks; the real store
/// replaces it. Deterministic: uids and generated names come from counters.
pub struct MemClient {
    clock: SharedClock,
    state: Mutex<MemState>,
}

impl fmt::Debug for MemClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemClient").finish_non_exhaustive()
    }
}

fn display(kind: Kind, ns: &str, name: &str) -> String {
    if ns.is_empty() {
        format!("{} \"{name}\"", kind.plural)
    } else {
        format!("{} \"{ns}/{name}\"", kind.plural)
    }
}

impl MemClient {
    /// An empty cluster whose timestamps come from `clock`.
    pub fn new(clock: SharedClock) -> Arc<Self> {
        Arc::new(Self {
            clock,
            state: Mutex::new(MemState {
                rng: 0x9E37_79B9_7F4A_7C15,
                ..MemState::default()
            }),
        })
    }

    /// Every object of `kind` now stored (tests).
    pub fn all(&self, kind: Kind) -> Vec<Arc<Value>> {
        let state = self.state.lock();
        state
            .objects
            .get(&kind)
            .map(|b| b.values().cloned().collect())
            .unwrap_or_default()
    }

    /// How many objects of `kind` are stored.
    pub fn count(&self, kind: Kind) -> usize {
        self.state.lock().objects.get(&kind).map_or(0, |b| b.len())
    }

    fn emit(state: &mut MemState, kind: Kind, event: EventType, object: Arc<Value>) {
        if let Some(list) = state.watchers.get_mut(&kind) {
            list.retain(|tx| tx.send(WatchEvent::new(event, object.clone())).is_ok());
        }
    }

    fn next_rv(state: &mut MemState) -> String {
        state.rv += 1;
        state.rv.to_string()
    }

    fn random_suffix(state: &mut MemState) -> String {
        // xorshift64*: deterministic, good enough to spread names.
        let mut out = String::with_capacity(5);
        for _ in 0..5 {
            let mut x = state.rng;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            state.rng = x;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
            out.push(NAME_ALPHABET[(r >> 33) as usize % NAME_ALPHABET.len()] as char);
        }
        out
    }

    fn create_sync(&self, kind: Kind, mut object: Value) -> Result<Arc<Value>> {
        let now = obj::fmt_time(self.clock.now());
        let mut state = self.state.lock();
        let ns = if kind.namespaced {
            obj::namespace(&object).to_owned()
        } else {
            String::new()
        };
        let mut name = obj::name(&object).to_owned();
        if name.is_empty() {
            let prefix = obj::str_at(&object, &["metadata", "generateName"]).unwrap_or("");
            if prefix.is_empty() {
                return Err(ClientError::Invalid(
                    "name or generateName is required".into(),
                ));
            }
            loop {
                let candidate = format!("{prefix}{}", Self::random_suffix(&mut state));
                let taken = state
                    .objects
                    .get(&kind)
                    .is_some_and(|b| b.contains_key(&(ns.clone(), candidate.clone())));
                if !taken {
                    name = candidate;
                    break;
                }
            }
        }
        let key = (ns.clone(), name.clone());
        if state
            .objects
            .get(&kind)
            .is_some_and(|b| b.contains_key(&key))
        {
            return Err(ClientError::AlreadyExists(display(kind, &ns, &name)));
        }
        state.uids += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", state.uids);
        let rv = Self::next_rv(&mut state);
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        let meta = obj::meta_mut(&mut object);
        meta.insert("name".into(), json!(name));
        if kind.namespaced {
            meta.insert("namespace".into(), json!(ns));
        }
        meta.insert("uid".into(), json!(uid));
        meta.insert("resourceVersion".into(), json!(rv));
        meta.insert("creationTimestamp".into(), json!(now));
        meta.insert("generation".into(), json!(1));
        let stored = Arc::new(object);
        state
            .objects
            .entry(kind)
            .or_default()
            .insert(key, stored.clone());
        Self::emit(&mut state, kind, EventType::Added, stored.clone());
        Ok(stored)
    }

    fn update_sync(&self, kind: Kind, object: Value, status_only: bool) -> Result<Arc<Value>> {
        let mut state = self.state.lock();
        let ns = if kind.namespaced {
            obj::namespace(&object).to_owned()
        } else {
            String::new()
        };
        let name = obj::name(&object).to_owned();
        let key = (ns.clone(), name.clone());
        let Some(old) = state.objects.get(&kind).and_then(|b| b.get(&key)).cloned() else {
            return Err(ClientError::NotFound(display(kind, &ns, &name)));
        };
        let sent_rv = obj::str_at(&object, &["metadata", "resourceVersion"]).unwrap_or("");
        if !sent_rv.is_empty()
            && sent_rv != obj::str_at(&old, &["metadata", "resourceVersion"]).unwrap_or("")
        {
            return Err(ClientError::Conflict(display(kind, &ns, &name)));
        }
        let mut new = if status_only {
            let mut new = (*old).clone();
            match object.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            new
        } else {
            let mut new = object;
            // Identity fields are the store's, whatever the caller sent.
            for f in [
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
            ] {
                match old["metadata"].get(f) {
                    Some(v) => {
                        obj::meta_mut(&mut new).insert(f.into(), v.clone());
                    }
                    None => {
                        obj::meta_mut(&mut new).remove(f);
                    }
                }
            }
            if kind.status_subresource {
                match old.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        if let Some(m) = new.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            let changed = if kind.status_subresource {
                new.get("spec") != old.get("spec")
            } else {
                strip_meta(&new) != strip_meta(&old)
            };
            if changed {
                let generation = old["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                obj::meta_mut(&mut new).insert("generation".into(), json!(generation));
            }
            new
        };
        new["apiVersion"] = json!(kind.api_version);
        new["kind"] = json!(kind.kind);
        let rv = Self::next_rv(&mut state);
        obj::meta_mut(&mut new).insert("resourceVersion".into(), json!(rv));
        let stored = Arc::new(new);
        let ns_held = kind == kinds::NAMESPACE
            && stored["spec"]["finalizers"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
        if obj::deleting(&stored) && obj::finalizers_empty(&stored) && !ns_held {
            if let Some(b) = state.objects.get_mut(&kind) {
                b.remove(&key);
            }
            Self::emit(&mut state, kind, EventType::Deleted, stored.clone());
        } else {
            state
                .objects
                .entry(kind)
                .or_default()
                .insert(key, stored.clone());
            Self::emit(&mut state, kind, EventType::Modified, stored.clone());
        }
        Ok(stored)
    }

    fn delete_sync(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<Option<Arc<Value>>> {
        let now = obj::fmt_time(self.clock.now());
        let mut state = self.state.lock();
        let key = (ns.to_owned(), name.to_owned());
        let Some(old) = state.objects.get(&kind).and_then(|b| b.get(&key)).cloned() else {
            return Err(ClientError::NotFound(display(kind, ns, name)));
        };
        if let Some(uid) = &options.uid
            && uid != obj::uid(&old)
        {
            return Err(ClientError::Conflict(display(kind, ns, name)));
        }
        let mut new = (*old).clone();
        let finalizer = match options.propagation {
            Some(Propagation::Orphan) => Some("orphan"),
            Some(Propagation::Foreground) => Some("foregroundDeletion"),
            _ => None,
        };
        if let Some(f) = finalizer {
            let list = obj::meta_mut(&mut new)
                .entry("finalizers")
                .or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut()
                && !a.iter().any(|x| x == f)
            {
                a.push(json!(f));
            }
        }
        let ns_finalizers = kind == kinds::NAMESPACE
            && new["spec"]["finalizers"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
        let rv = Self::next_rv(&mut state);
        obj::meta_mut(&mut new).insert("resourceVersion".into(), json!(rv));
        if obj::finalizers_empty(&new) && !ns_finalizers {
            if let Some(b) = state.objects.get_mut(&kind) {
                b.remove(&key);
            }
            Self::emit(&mut state, kind, EventType::Deleted, Arc::new(new));
            return Ok(None);
        }
        if !obj::deleting(&new) {
            obj::meta_mut(&mut new).insert("deletionTimestamp".into(), json!(now));
            obj::meta_mut(&mut new).insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        if kind == kinds::NAMESPACE {
            new["status"]["phase"] = json!("Terminating");
        }
        let stored = Arc::new(new);
        state
            .objects
            .entry(kind)
            .or_default()
            .insert(key, stored.clone());
        Self::emit(&mut state, kind, EventType::Modified, stored.clone());
        Ok(Some(stored))
    }
}

fn strip_meta(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
    }
    v
}

impl Client for MemClient {
    fn get<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Arc<Value>>> {
        let found = self
            .state
            .lock()
            .objects
            .get(&kind)
            .and_then(|b| b.get(&(namespace.to_owned(), name.to_owned())))
            .cloned();
        Box::pin(async move {
            found.ok_or_else(|| ClientError::NotFound(display(kind, namespace, name)))
        })
    }

    fn list<'a>(
        &'a self,
        kind: Kind,
        namespace: Option<&'a str>,
        selector: Option<&'a LabelSelector>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>>> {
        let state = self.state.lock();
        let out = state
            .objects
            .get(&kind)
            .map(|b| {
                b.iter()
                    .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                    .filter(|(_, v)| selector.is_none_or(|s| s.selects(v)))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default();
        drop(state);
        Box::pin(async move { Ok(out) })
    }

    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        let r = self.create_sync(kind, object);
        Box::pin(async move { r })
    }

    fn update(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        let r = self.update_sync(kind, object, false);
        Box::pin(async move { r })
    }

    fn update_status(&self, kind: Kind, object: Value) -> BoxFuture<'_, Result<Arc<Value>>> {
        let r = self.update_sync(kind, object, true);
        Box::pin(async move { r })
    }

    fn delete<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
        name: &'a str,
        options: DeleteOptions,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>>> {
        let r = self.delete_sync(kind, namespace, name, options);
        Box::pin(async move { r })
    }

    fn watch(&self, kind: Kind) -> BoxFuture<'_, Result<WatchStream>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state.lock();
        if let Some(b) = state.objects.get(&kind) {
            for v in b.values() {
                let _ = tx.send(WatchEvent::new(EventType::Added, v.clone()));
            }
        }
        state.watchers.entry(kind).or_default().push(tx);
        Box::pin(async move { Ok(rx) })
    }

    fn delete_namespace_contents<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<usize>> {
        let kinds: Vec<Kind> = self
            .state
            .lock()
            .objects
            .keys()
            .filter(|k| k.namespaced)
            .copied()
            .collect();
        let mut remaining = 0;
        for kind in kinds {
            let names: Vec<String> = self
                .state
                .lock()
                .objects
                .get(&kind)
                .map(|b| {
                    b.keys()
                        .filter(|(ns, _)| ns == namespace)
                        .map(|(_, n)| n.clone())
                        .collect()
                })
                .unwrap_or_default();
            for name in names {
                if let Ok(Some(_)) =
                    self.delete_sync(kind, namespace, &name, DeleteOptions::default())
                {
                    remaining += 1;
                }
            }
        }
        Box::pin(async move { Ok(remaining) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::FakeClock;

    #[tokio::test]
    async fn writes_bump_versions_and_conflict_on_stale() {
        let clock = FakeClock::at_epoch();
        let c = MemClient::new(clock);
        let mut w = c.watch(kinds::DEPLOYMENT).await.unwrap();
        let d = c
            .create(
                kinds::DEPLOYMENT,
                json!({"metadata":{"name":"web","namespace":"default"},"spec":{"replicas":1}}),
            )
            .await
            .unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        assert_eq!(d["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
        let mut d2 = (*d).clone();
        d2["spec"]["replicas"] = json!(3);
        let d2 = c.update(kinds::DEPLOYMENT, d2).await.unwrap();
        assert_eq!(d2["metadata"]["generation"], 2);
        let err = c.update(kinds::DEPLOYMENT, (*d).clone()).await.unwrap_err();
        assert!(matches!(err, ClientError::Conflict(_)));
        let mut s = (*d2).clone();
        s["status"] = json!({"replicas": 3});
        let s = c.update_status(kinds::DEPLOYMENT, s).await.unwrap();
        assert_eq!(s["metadata"]["generation"], 2);
        assert_eq!(w.recv().await.unwrap().kind, EventType::Added);
        assert_eq!(w.recv().await.unwrap().kind, EventType::Modified);
        assert_eq!(w.recv().await.unwrap().object["status"]["replicas"], 3);
        let gone = c
            .delete(
                kinds::DEPLOYMENT,
                "default",
                "web",
                DeleteOptions::default(),
            )
            .await
            .unwrap();
        assert!(gone.is_none());
        assert_eq!(w.recv().await.unwrap().kind, EventType::Deleted);
    }

    #[tokio::test]
    async fn generate_name_and_foreground_finalizer() {
        let c = MemClient::new(FakeClock::at_epoch());
        let p = c
            .create(
                kinds::POD,
                json!({"metadata":{"generateName":"web-","namespace":"default"}}),
            )
            .await
            .unwrap();
        let name = obj::name(&p).to_owned();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        let kept = c
            .delete(
                kinds::POD,
                "default",
                &name,
                DeleteOptions {
                    propagation: Some(Propagation::Foreground),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .unwrap();
        assert!(obj::deleting(&kept));
        let mut cleared = (*kept).clone();
        cleared["metadata"]["finalizers"] = json!([]);
        c.update(kinds::POD, cleared).await.unwrap();
        assert_eq!(c.count(kinds::POD), 0);
    }
}
