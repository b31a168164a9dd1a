//! The versioned object store of one cluster, behind the [`Store`] trait so an
//! etcd implementation can follow the in-memory one ([`MemoryStore`]).
//!
//! Objects are kept as JSON values, keyed by group-resource (`deployments.apps`,
//! `pods`), namespace and name, as kube-apiserver keys them in etcd; the
//! resources a large cluster holds by the hundred thousand (Pods, Events) are
//! kept encoded, as etcd keeps everything, and packed against similar objects
//! ([`Stored`], [`Packed`]). One
//! resourceVersion counts every write of the cluster; each write is an
//! [`Event`] kept in a bounded history so watches can resume, and broadcast to
//! live watchers without ever waiting for them.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::ApiError;

pub mod deletion;
mod dry_run;
mod encoding;
pub mod generate_name;
mod image;
mod memory;
mod packed;

pub use deletion::{DeleteOptions, DeleteStrategy, Deleted};
pub use dry_run::DryRun;
pub use image::{ClusterJournal, EventSink, ObjectMap, StoreImage};
pub use memory::{ENCODED_RESOURCES, INITIAL_NAMESPACES, MemoryStore, StoreLimits, kept_encoded};
pub use packed::Packed;

/// An object's value: shared, never mutated in place.
pub type Object = Arc<Value>;

/// An object as a store's map holds it.
///
/// A decoded tree costs several times its JSON (a B-tree node of about 640
/// bytes per JSON object however few keys it has: 27 KB for a 2.9 KB Pod):
/// worth it for the few objects controllers read again and again, not for
/// the hundreds of thousands of Pods and Events of a large cluster.
#[derive(Debug, Clone)]
pub enum Stored {
    /// The decoded value.
    Decoded(Object),
    /// The value's JSON, packed; decoded on each read.
    Encoded(Packed),
}

impl Stored {
    /// Whether both are the very same stored value (not merely equal).
    pub fn same(&self, other: &Stored) -> bool {
        match (self, other) {
            (Stored::Decoded(a), Stored::Decoded(b)) => Arc::ptr_eq(a, b),
            (Stored::Encoded(a), Stored::Encoded(b)) => a.same(b),
            _ => false,
        }
    }

    /// Keeps `object` encoded, packed whole (and remembered while held), as
    /// kube-apiserver writes it: answers are these bytes.
    pub fn encode(object: &Object) -> Self {
        let json = crate::api::wire::to_vec(object);
        let packed = Packed::whole(&json);
        packed.remember(object);
        Stored::Encoded(packed)
    }

    /// The value (decoded afresh when kept encoded).
    pub fn object(&self) -> Object {
        match self {
            Stored::Decoded(o) => o.clone(),
            Stored::Encoded(packed) => packed.value(),
        }
    }
}

/// Decodes JSON the store wrote.
fn decode(json: &[u8]) -> Value {
    serde_json::from_slice(json).unwrap_or_else(|e| {
        // Only ever holds what the store encoded.
        tracing::error!(error = %e, "stored JSON does not decode");
        Value::Null
    })
}

impl From<Object> for Stored {
    fn from(object: Object) -> Self {
        Stored::Decoded(object)
    }
}

/// Where one object lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Group-resource: `pods`, `deployments.apps`.
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key for `name` of `resource` in `namespace` (empty when cluster-scoped).
    pub fn new(resource: &str, namespace: &str, name: &str) -> Self {
        Self {
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// The group-resource of namespaces, whose objects namespaced keys need.
pub const NAMESPACES: &str = "namespaces";

/// Built-in group-resources whose upstream strategy keeps no
/// `metadata.generation`; every other type (the workloads, policies, custom
/// resources…) starts at 1 and counts its spec's changes.
const WITHOUT_GENERATION: &[&str] = &[
    "configmaps",
    "secrets",
    "serviceaccounts",
    "services",
    "endpoints",
    "limitranges",
    "resourcequotas",
    "persistentvolumeclaims",
    "persistentvolumes",
    "namespaces",
    "nodes",
    "events",
    "events.events.k8s.io",
    "controllerrevisions.apps",
    "horizontalpodautoscalers.autoscaling",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "storageclasses.storage.k8s.io",
    "volumeattributesclasses.storage.k8s.io",
    "csidrivers.storage.k8s.io",
    "csinodes.storage.k8s.io",
    "csistoragecapacities.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "runtimeclasses.node.k8s.io",
    "leases.coordination.k8s.io",
    "certificatesigningrequests.certificates.k8s.io",
    "servicecidrs.networking.k8s.io",
    "ipaddresses.networking.k8s.io",
    "resourceclaims.resource.k8s.io",
    "resourceclaimtemplates.resource.k8s.io",
    "apiservices.apiregistration.k8s.io",
];

/// Whether objects of the group-resource `resource` carry a
/// `metadata.generation`, as upstream's strategy for it sets one.
pub fn tracks_generation(resource: &str) -> bool {
    !WITHOUT_GENERATION.contains(&resource)
}

/// Everything but `metadata`, `status` and type meta: what bumps
/// `generation`.
fn spec_part(v: &Value) -> Option<Vec<(&String, &Value)>> {
    v.as_object().map(|m| {
        m.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "kind" | "apiVersion"))
            .collect()
    })
}

/// The `metadata.generation` an update of `current` to `next` leaves, as
/// upstream's strategy for `resource` sets it (`None`: it carries none):
/// most kinds count changes of what is not metadata or status; a
/// PriorityClass stays at 1; a CSIDriver, created without one, counts its
/// spec's changes from there; an EndpointSlice counts its labels' too.
pub fn next_generation(resource: &str, current: &Value, next: &Value) -> Option<i64> {
    let g = current["metadata"]["generation"].as_i64();
    let changed = spec_part(next) != spec_part(current);
    match resource {
        "priorityclasses.scheduling.k8s.io" => g,
        "csidrivers.storage.k8s.io" if changed => Some(g.unwrap_or(0) + 1),
        "endpointslices.discovery.k8s.io" => {
            let relabeled = next["metadata"]["labels"] != current["metadata"]["labels"];
            g.map(|g| if changed || relabeled { g + 1 } else { g })
        }
        _ => g.map(|g| if changed { g + 1 } else { g }),
    }
}

/// What kind of change an [`Event`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventKind {
    /// The watch event `type`: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// One write, as watchers see it.
///
/// For a resource kept encoded, the event broadcast to live watchers holds
/// the decoded object (they read it at once) beside the packed one the
/// store's map holds, and the one the history keeps holds the packed objects
/// only: a history of thousands of Pod writes would otherwise keep as many
/// decoded Pods.
#[derive(Debug, Clone)]
pub struct Event {
    /// The cluster resourceVersion the write produced.
    pub rv: u64,
    /// What happened.
    pub kind: EventKind,
    /// The object's key.
    pub key: ObjectKey,
    /// The object after the write (for a delete: as it was, with the delete's
    /// resourceVersion).
    object: Stored,
    /// The object before the write (None for an add).
    prev: Option<Stored>,
    /// `object` as JSON, encoded once for every watcher that sends it.
    json: std::sync::OnceLock<bytes::Bytes>,
    /// `object` as the store's map holds it, when that is encoded.
    held: Option<Stored>,
}

impl Event {
    /// A write of `object` over `prev`.
    pub fn new(
        rv: u64,
        kind: EventKind,
        key: ObjectKey,
        object: impl Into<Stored>,
        prev: Option<Stored>,
    ) -> Self {
        Self {
            rv,
            kind,
            key,
            object: object.into(),
            prev,
            json: std::sync::OnceLock::new(),
            held: None,
        }
    }

    /// The object after the write (decoded afresh when held encoded).
    pub fn object(&self) -> Object {
        self.object.object()
    }

    /// The object as held.
    pub fn stored(&self) -> &Stored {
        &self.object
    }

    /// The object as the store's map holds it, when that is encoded.
    pub fn held(&self) -> Option<&Stored> {
        match &self.object {
            Stored::Encoded(_) => Some(&self.object),
            Stored::Decoded(_) => self.held.as_ref(),
        }
    }

    /// The object before the write.
    pub fn prev(&self) -> Option<Object> {
        self.prev.as_ref().map(Stored::object)
    }

    /// The object before the write, as held.
    pub fn prev_stored(&self) -> Option<&Stored> {
        self.prev.as_ref()
    }

    /// `object` as JSON: of a decoded object, encoded on first use and
    /// shared; of a packed one, unpacked on each call (kept in the history,
    /// it is seldom read).
    pub fn object_json(&self) -> bytes::Bytes {
        match &self.object {
            Stored::Encoded(packed) => packed.json(),
            Stored::Decoded(object) => self
                .json
                .get_or_init(|| bytes::Bytes::from(crate::api::wire::to_vec(object)))
                .clone(),
        }
    }

    /// Sets the JSON [`Event::object_json`] returns, when it is already made.
    pub fn with_json(self, json: bytes::Bytes) -> Self {
        let _ = self.json.set(json);
        self
    }

    /// Notes the object as the store's map holds it.
    pub fn with_held(mut self, held: Stored) -> Self {
        self.held = Some(held);
        self
    }

    /// The same write holding only `object` and `prev` as the store held
    /// them: what the history keeps of a resource kept encoded.
    pub fn as_held(&self, object: Stored, prev: Option<Stored>) -> Self {
        Self::new(self.rv, self.kind, self.key.clone(), object, prev)
    }
}

/// Objects of one resource as of one resourceVersion, ordered by namespace and
/// name. Cheap to take and to keep: the map is shared copy-on-write with the store.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The cluster resourceVersion the snapshot is consistent at.
    pub rv: u64,
    /// `(namespace, name)` → object.
    pub objects: Arc<ObjectMap>,
}

impl Snapshot {
    /// Objects of `namespace` (every namespace when `None`) from `after`
    /// (exclusive), in key order; encoded ones decoded one by one.
    pub fn iter<'a>(
        &'a self,
        namespace: Option<&'a str>,
        after: Option<&'a (String, String)>,
    ) -> impl Iterator<Item = (&'a (String, String), Object)> + 'a {
        self.iter_stored(namespace, after)
            .map(|(key, stored)| (key, stored.object()))
    }

    /// As [`Snapshot::iter`], but as stored: for who only needs the JSON.
    pub fn iter_stored<'a>(
        &'a self,
        namespace: Option<&'a str>,
        after: Option<&'a (String, String)>,
    ) -> impl Iterator<Item = (&'a (String, String), &'a Stored)> + 'a {
        use std::ops::Bound;
        let lower = match (after, namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_owned(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        self.objects
            .range((lower, Bound::Unbounded))
            .take_while(move |((ns, _), _)| namespace.is_none_or(|want| want == ns))
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// The current state of one resource (delivered as the subscription's
    /// `initial` snapshot), then every later write.
    Now,
    /// Every write after this resourceVersion, from the history.
    After(u64),
}

/// A live subscription to a cluster's writes, taken atomically with its start.
#[derive(Debug)]
pub struct Subscription {
    /// For [`WatchFrom::Now`]: the state to send as synthetic `ADDED` events.
    pub initial: Option<Snapshot>,
    /// Writes already in the history after the requested resourceVersion.
    pub backlog: Vec<Arc<Event>>,
    /// Every later write, in order.
    pub live: broadcast::Receiver<Arc<Event>>,
    /// The cluster resourceVersion when the subscription was taken.
    pub rv: u64,
}

/// A condition on the current object for a write to proceed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object must be at this resourceVersion.
    pub resource_version: Option<String>,
    /// The object must have this uid.
    pub uid: Option<String>,
}

/// A versioned object store for one cluster.
///
/// Every write stamps `metadata.resourceVersion`; creates also stamp `uid`,
/// `creationTimestamp` and `generation`; updates bump `generation` only when
/// something outside `metadata` and `status` changed. Errors are the
/// `metav1.Status` kube-apiserver answers (404, 409, 410, 413).
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The cluster's current resourceVersion.
    fn resource_version(&self) -> u64;

    /// One object.
    fn get(&self, key: &ObjectKey) -> Option<Object>;

    /// Every object of `resource`, as of now.
    fn snapshot(&self, resource: &str) -> Snapshot;

    /// A snapshot taken earlier at `rv`, kept for paginated lists; 410 Gone
    /// once it has expired.
    fn snapshot_at(&self, resource: &str, rv: u64) -> Result<Snapshot, ApiError>;

    /// Keeps `snapshot` for later pages of the same list.
    fn retain_snapshot(&self, resource: &str, snapshot: &Snapshot);

    /// Creates an object; `AlreadyExists` if the key is taken, `NotFound` if its
    /// namespace does not exist.
    fn create(&self, key: &ObjectKey, object: Value) -> Result<Object, ApiError>;

    /// Replaces an object. A `metadata.resourceVersion` in `object` (or in
    /// `pre`) that is not the current one gets 409 Conflict.
    fn update(
        &self,
        key: &ObjectKey,
        object: Value,
        pre: &Preconditions,
    ) -> Result<Object, ApiError>;

    /// One object as held (its JSON, for a resource kept encoded): for a
    /// write that follows, with [`Store::update_seen`].
    fn get_stored(&self, key: &ObjectKey) -> Option<Stored> {
        self.get(key).map(Stored::Decoded)
    }

    /// [`Store::update`] of an object read as `seen` and decoded as
    /// `current`: not decoded again while it is still what is stored.
    fn update_seen(
        &self,
        key: &ObjectKey,
        object: Value,
        pre: &Preconditions,
        seen: (&Stored, Object),
    ) -> Result<Object, ApiError> {
        let _ = seen;
        self.update(key, object, pre)
    }

    /// Deletes an object, or marks it for deletion while finalizers remain.
    /// Deleting a namespace deletes everything in it.
    fn delete(&self, key: &ObjectKey, pre: &Preconditions) -> Result<Object, ApiError> {
        let (resource, group) = split_group_resource(&key.resource);
        let opts = DeleteOptions {
            preconditions: pre.clone(),
            ..DeleteOptions::default()
        };
        self.delete_with(key, &DeleteStrategy::plain(resource, group), &opts)
            .map(Deleted::into_object)
    }

    /// Deletes an object as kube-apiserver does for its kind
    /// ([`deletion::plan`], applied atomically): graceful deletion,
    /// finalizers, the garbage collector's propagation finalizers.
    fn delete_with(
        &self,
        key: &ObjectKey,
        strategy: &DeleteStrategy,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError>;

    /// Subscribes to writes; 410 Gone when `from` is older than the history.
    fn watch(&self, resource: &str, from: WatchFrom) -> Result<Subscription, ApiError>;
}

/// Splits a group-resource key into (resource, group): `deployments.apps` →
/// (`deployments`, `apps`).
pub fn split_group_resource(resource: &str) -> (&str, &str) {
    resource.split_once('.').unwrap_or((resource, ""))
}
