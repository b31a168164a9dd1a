//! The in-memory [`Store`]: one lock per cluster, copy-on-write maps per
//! resource so lists and watches take snapshots in O(1), and a bounded history.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use kemu_shared::SharedClock;
use parking_lot::RwLock;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::deletion::{self, Plan};
use super::encoding::Encoding;
use super::packed::{Dictionaries, Packed};
use super::{
    DeleteOptions, DeleteStrategy, Deleted, Event, EventKind, NAMESPACES, Object, ObjectKey,
    Preconditions, Snapshot, Store, Stored, Subscription, WatchFrom, split_group_resource,
};
use crate::error::{ApiError, Target};

/// The namespaces every cluster has from the start.
pub const INITIAL_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The group-resources kept encoded ([`Stored::Encoded`]), as etcd keeps
/// everything: the ones a large cluster holds by the hundred thousand. Events,
/// which a rollout records four of per Pod; Pods, which controllers read
/// from their informers' caches (which keep the same bytes) rather than from
/// the store; ConfigMaps and Secrets, which users and charts store by the
/// thousand and controllers seldom read. Their GETs and lists answer the
/// stored bytes.
pub const ENCODED_RESOURCES: [&str; 4] = ["configmaps", "events", "pods", "secrets"];

/// Whether the store keeps `resource` encoded.
pub fn kept_encoded(resource: &str) -> bool {
    ENCODED_RESOURCES.contains(&resource)
}

/// An object's JSON made before its write takes the lock: as sent to watchers
/// (but for its resourceVersion), and packed as the map will hold it.
type Encoded = (Encoding, Packed);

/// Which objects of a resource pack against one dictionary: the Pods of one
/// ReplicaSet (one `generateName`), the Events of one reason, in a namespace.
fn family(key: &ObjectKey, object: &Value) -> String {
    let similar = object["metadata"]["generateName"]
        .as_str()
        .or_else(|| object["reason"].as_str())
        .unwrap_or_default();
    format!("{}/{}/{similar}", key.resource, key.namespace)
}

/// Tries of an update prepared outside the lock before one is made under it.
const OPTIMISTIC_UPDATES: usize = 4;

/// What a prepared update does.
enum Update {
    /// Nothing: the object is as stored.
    Unchanged,
    /// Removes the object (its last finalizer went while it was deleting).
    Remove,
    /// Writes it, with its JSON made if its resource is kept encoded.
    Write(Option<Encoded>),
}

/// How much a store keeps.
#[derive(Debug, Clone)]
pub struct StoreLimits {
    /// Most events kept for watch resume.
    pub history: usize,
    /// How long (on the clock) an event or a list snapshot is kept, as etcd
    /// compaction bounds kube-apiserver's.
    pub retention: Duration,
    /// Largest stored object, in bytes of JSON (etcd's request limit).
    pub max_object_bytes: usize,
    /// Events a live watcher may fall behind before it must catch up from
    /// the history.
    pub fanout: usize,
    /// Most list snapshots kept for `continue` tokens.
    pub snapshots: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            // Old versions of busy objects dominate memory at scale; a watcher
            // further behind than this relists after a 410, as against a
            // kube-apiserver whose watch cache is bounded too.
            history: 20_000,
            retention: Duration::from_secs(300),
            max_object_bytes: 1_572_864,
            fanout: 8192,
            snapshots: 64,
        }
    }
}

use super::{EventSink, ObjectMap, StoreImage};

#[derive(Default)]
struct State {
    rv: u64,
    resources: HashMap<String, Arc<ObjectMap>>,
    history: VecDeque<(DateTime<Utc>, Arc<Event>)>,
    /// The newest resourceVersion no longer in the history.
    compacted: u64,
    snapshots: VecDeque<(String, DateTime<Utc>, Snapshot)>,
}

/// A cluster's objects in memory.
pub struct MemoryStore {
    clock: SharedClock,
    limits: StoreLimits,
    state: RwLock<State>,
    /// One channel per watched resource, so a write wakes only the watchers
    /// of its own resource. Cleared (dropping the senders) when the store is
    /// closed, which ends every watch on it.
    events: RwLock<HashMap<String, broadcast::Sender<Arc<Event>>>>,
    sink: RwLock<Option<Arc<dyn EventSink>>>,
    /// Events just dropped from the history, freed by the next writer before
    /// it takes the lock: freeing an old Pod's versions is the costliest part
    /// of a busy store's compaction and needs no lock.
    evicted: parking_lot::Mutex<Vec<Arc<Event>>>,
    dictionaries: Dictionaries,
}

impl MemoryStore {
    /// Open watches per resource, by group-resource, sorted.
    pub fn watchers(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = self
            .events
            .read()
            .iter()
            .map(|(r, tx)| (r.clone(), tx.receiver_count()))
            .filter(|(_, n)| *n > 0)
            .collect();
        out.sort();
        out
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("rv", &self.state.read().rv)
            .finish_non_exhaustive()
    }
}

/// Counts what is written to it: an object's encoded size without encoding
/// it into memory.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn target(key: &ObjectKey) -> Target {
    let (kind, group) = split_group_resource(&key.resource);
    Target {
        name: key.name.clone(),
        group: group.to_owned(),
        kind: kind.to_owned(),
    }
}

fn conflict(key: &ObjectKey, message: &str) -> ApiError {
    ApiError::Conflict {
        target: target(key),
        message: message.to_owned(),
    }
}

const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

fn meta_mut(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = json!({});
    }
    match v.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("metadata was just made an object"),
    }
}

impl MemoryStore {
    /// A store holding the initial namespaces, on `clock`.
    pub fn new(clock: SharedClock, limits: StoreLimits) -> Self {
        let store = Self {
            clock,
            events: RwLock::default(),
            limits,
            state: RwLock::new(State::default()),
            sink: RwLock::new(None),
            dictionaries: Dictionaries::default(),
            evicted: parking_lot::Mutex::default(),
        };
        for ns in INITIAL_NAMESPACES {
            let key = ObjectKey::new(NAMESPACES, "", ns);
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if let Err(e) = store.create(&key, obj) {
                tracing::error!(error = %e, "initial namespace");
            }
        }
        store
    }

    /// A store holding exactly `image` (objects, resourceVersion, history),
    /// on `clock`: a restart or restore, not a fresh cluster.
    pub fn from_image(clock: SharedClock, limits: StoreLimits, mut image: StoreImage) -> Self {
        for resource in ENCODED_RESOURCES {
            if let Some(map) = image.resources.get_mut(resource) {
                for stored in Arc::make_mut(map).values_mut() {
                    if let Stored::Decoded(object) = stored {
                        *stored = Stored::encode(object);
                    }
                }
            }
        }
        for (_, event) in &mut image.history {
            if kept_encoded(&event.key.resource) && matches!(event.stored(), Stored::Decoded(_)) {
                let prev = event.prev().map(|p| Stored::encode(&p));
                *event = Arc::new(event.as_held(Stored::encode(&event.object()), prev));
            }
        }
        let store = Self {
            clock,
            events: RwLock::default(),
            limits,
            state: RwLock::new(State {
                rv: image.rv,
                resources: image.resources,
                history: image.history.into(),
                compacted: image.compacted,
                snapshots: VecDeque::new(),
            }),
            sink: RwLock::new(None),
            dictionaries: Dictionaries::default(),
            evicted: parking_lot::Mutex::default(),
        };
        {
            let mut st = store.state.write();
            let now = store.now();
            store.compact(&mut st, now);
        }
        store
    }

    /// The whole content, consistent at one resourceVersion. Cheap: the maps
    /// are shared copy-on-write.
    pub fn image(&self) -> StoreImage {
        let st = self.state.read();
        StoreImage {
            rv: st.rv,
            compacted: st.compacted,
            resources: st.resources.clone(),
            history: st.history.iter().cloned().collect(),
        }
    }

    /// Hands every later write to `sink` before it returns.
    pub fn set_sink(&self, sink: Option<Arc<dyn EventSink>>) {
        *self.sink.write() = sink;
    }

    /// Ends every watch on this store (its clients re-watch and find the
    /// store that replaced it).
    pub fn close(&self) {
        self.events.write().clear();
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn timestamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    fn check_size(&self, key: &ObjectKey, v: &Value) -> Result<(), ApiError> {
        let mut counter = ByteCount(0);
        let size = serde_json::to_writer(&mut counter, v).map_or(usize::MAX, |()| counter.0);
        self.check_encoded_size(key, size)
    }

    fn check_encoded_size(&self, key: &ObjectKey, size: usize) -> Result<(), ApiError> {
        if size > self.limits.max_object_bytes {
            tracing::info!(?key, size, "object too large");
            return Err(ApiError::TooLarge(
                "Request entity too large: etcdserver: request is too large".into(),
            ));
        }
        Ok(())
    }

    /// Checks the size of what `object` will be stored as; for a resource
    /// kept encoded, encodes it then, before the write takes the lock.
    fn check_and_encode(
        &self,
        key: &ObjectKey,
        object: &mut Value,
    ) -> Result<Option<Encoded>, ApiError> {
        if !kept_encoded(&key.resource) {
            return self.check_size(key, object).map(|()| None);
        }
        match Encoding::of(object) {
            Some(encoding) => {
                self.check_encoded_size(key, encoding.max_len())?;
                let packed = self.dictionaries.pack(&family(key, object), &encoding);
                Ok(Some((encoding, packed)))
            }
            None => self.check_size(key, object).map(|()| None),
        }
    }

    /// Applies one write under the lock: stamps the resourceVersion, updates the
    /// resource's map, records and broadcasts the event.
    fn commit(
        &self,
        st: &mut State,
        kind: EventKind,
        key: &ObjectKey,
        object: Value,
        prev: Option<Object>,
    ) -> Object {
        self.commit_encoded(st, kind, key, object, prev, None)
    }

    /// [`Self::commit`], with the object's JSON made before the lock was taken.
    fn commit_encoded(
        &self,
        st: &mut State,
        kind: EventKind,
        key: &ObjectKey,
        mut object: Value,
        prev: Option<Object>,
        encoded: Option<Encoded>,
    ) -> Object {
        st.rv += 1;
        meta_mut(&mut object).insert("resourceVersion".into(), json!(st.rv.to_string()));
        let object = Arc::new(object);
        let keeps_encoded = kept_encoded(&key.resource);
        let mut event = Event::new(
            st.rv,
            kind,
            key.clone(),
            object.clone(),
            prev.map(Stored::Decoded),
        );
        // A deleted object leaves the map: nothing to encode for it.
        let stored = match (kind, encoded) {
            (EventKind::Deleted, _) => None,
            (_, Some((encoding, packed))) => {
                event = event.with_json(encoding.finish(st.rv));
                Some(Stored::Encoded(packed.numbered(st.rv, &object)))
            }
            _ if keeps_encoded => Some(Stored::encode(&object)),
            _ => Some(Stored::Decoded(object.clone())),
        };
        if let Some(held @ Stored::Encoded(_)) = &stored {
            event = event.with_held(held.clone());
        }
        let map = Arc::make_mut(st.resources.entry(key.resource.clone()).or_default());
        let map_key = (key.namespace.clone(), key.name.clone());
        let replaced = match stored {
            None => map.remove(&map_key),
            Some(stored) => map.insert(map_key, stored),
        };
        let event = Arc::new(event);
        let now = self.now();
        // Under the lock, so the log's order is the resourceVersion order, and
        // before the caller can acknowledge the write.
        if let Some(sink) = &*self.sink.read() {
            sink.committed(&event, now);
        }
        // The history keeps JSON only of what the map keeps encoded: the
        // object as written (a deleted one is encoded here), the one before
        // as it was stored.
        let kept = if keeps_encoded {
            let held = match event.held() {
                Some(held) => held.clone(),
                None => Stored::encode(&object),
            };
            Arc::new(event.as_held(held, replaced))
        } else {
            event.clone()
        };
        st.history.push_back((now, kept));
        self.compact(st, now);
        // Never waits: a watcher that falls behind notices and catches up from
        // the history, or is told its resourceVersion is too old.
        if let Some(tx) = self.events.read().get(&key.resource) {
            let _ = tx.send(event);
        }
        object
    }

    /// An update, prepared without the lock from `first` (what the writer
    /// read) or a fresh read, and written if nothing was written there
    /// meanwhile; under the lock throughout once contended.
    fn update_from(
        &self,
        key: &ObjectKey,
        mut object: Value,
        pre: &Preconditions,
        mut first: Option<(Stored, Object)>,
    ) -> Result<Object, ApiError> {
        // What the request itself asked for, restored before a retry.
        let asked = ["resourceVersion", "uid"].map(|f| object["metadata"].get(f).cloned());
        for _ in 0..OPTIMISTIC_UPDATES {
            let given = first.is_some();
            let (seen, current) = match first.take() {
                Some(read) => read,
                None => {
                    let seen = Self::stored(&self.state.read(), key)
                        .cloned()
                        .ok_or_else(|| ApiError::ObjectNotFound(target(key)))?;
                    let current = seen.object();
                    (seen, current)
                }
            };
            let still = |st: &State| Self::stored(st, key).is_some_and(|s| s.same(&seen));
            match self.prepare_update(key, &mut object, &current, pre) {
                Ok(update) => {
                    let mut st = self.write();
                    if still(&st) {
                        return Ok(self.finish_update(&mut st, key, object, current, update));
                    }
                }
                // What the writer read is out of date: its error may be too.
                Err(_) if given && !still(&self.state.read()) => {}
                Err(e) => return Err(e),
            }
            let meta = meta_mut(&mut object);
            for (field, value) in ["resourceVersion", "uid"].into_iter().zip(&asked) {
                match value {
                    Some(v) => meta.insert(field.into(), v.clone()),
                    None => meta.remove(field),
                };
            }
        }
        // Contended: under the lock throughout.
        let mut st = self.write();
        let current =
            Self::current(&st, key).ok_or_else(|| ApiError::ObjectNotFound(target(key)))?;
        let update = self.prepare_update(key, &mut object, &current, pre)?;
        Ok(self.finish_update(&mut st, key, object, current, update))
    }

    /// Checks an update against `current` and completes `object` from it.
    fn prepare_update(
        &self,
        key: &ObjectKey,
        object: &mut Value,
        current: &Value,
        pre: &Preconditions,
    ) -> Result<Update, ApiError> {
        Self::check_preconditions(key, current, pre)?;
        let cur_meta = &current["metadata"];
        if let Some(rv) = object["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
            && Some(rv) != cur_meta["resourceVersion"].as_str()
        {
            return Err(conflict(key, MODIFIED));
        }
        if let Some(uid) = object["metadata"]["uid"].as_str()
            && !uid.is_empty()
            && Some(uid) != cur_meta["uid"].as_str()
        {
            return Err(conflict(
                key,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    cur_meta["uid"].as_str().unwrap_or_default()
                ),
            ));
        }
        let generation = super::next_generation(&key.resource, current, object);
        let meta = meta_mut(object);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match cur_meta.get(field) {
                Some(v) if !v.is_null() => {
                    meta.insert(field.into(), v.clone());
                }
                _ => {
                    meta.remove(field);
                }
            }
        }
        meta.insert("name".into(), json!(key.name));
        if !key.namespace.is_empty() {
            meta.insert("namespace".into(), json!(key.namespace));
        }
        match generation {
            Some(g) => {
                meta.insert("generation".into(), json!(g));
            }
            None => {
                meta.remove("generation");
            }
        }
        meta.insert(
            "resourceVersion".into(),
            cur_meta["resourceVersion"].clone(),
        );
        if *object == *current {
            // A no-op write changes nothing, as upstream: same resourceVersion.
            return Ok(Update::Unchanged);
        }
        let encoded = self.check_and_encode(key, object)?;
        if deletion::removes_on_update(object, current, key.resource == NAMESPACES) {
            return Ok(Update::Remove);
        }
        Ok(Update::Write(encoded))
    }

    /// Writes a prepared update, under the lock.
    fn finish_update(
        &self,
        st: &mut State,
        key: &ObjectKey,
        mut object: Value,
        current: Object,
        update: Update,
    ) -> Object {
        match update {
            Update::Unchanged => current,
            Update::Remove => {
                // As upstream: the update is not written; watchers see the
                // last stored state deleted, the writer gets its object back.
                let gone = self.commit(
                    st,
                    EventKind::Deleted,
                    key,
                    (*current).clone(),
                    Some(current),
                );
                meta_mut(&mut object).insert(
                    "resourceVersion".into(),
                    gone["metadata"]["resourceVersion"].clone(),
                );
                Arc::new(object)
            }
            Update::Write(encoded) => {
                self.commit_encoded(st, EventKind::Modified, key, object, Some(current), encoded)
            }
        }
    }

    /// The state, locked for a write, once what the last writes evicted is
    /// freed.
    fn write(&self) -> parking_lot::RwLockWriteGuard<'_, State> {
        // Taken first, so the evicted list's lock is not held while freeing.
        let evicted = std::mem::take(&mut *self.evicted.lock());
        drop(evicted);
        self.state.write()
    }

    fn compact(&self, st: &mut State, now: DateTime<Utc>) {
        let horizon = now - chrono::Duration::from_std(self.limits.retention).unwrap_or_default();
        while let Some((at, ev)) = st.history.front() {
            if st.history.len() > self.limits.history || *at < horizon {
                st.compacted = ev.rv;
                if let Some((_, ev)) = st.history.pop_front() {
                    self.evicted.lock().push(ev);
                }
            } else {
                break;
            }
        }
        st.snapshots.retain(|(_, at, _)| *at >= horizon);
    }

    fn check_preconditions(
        key: &ObjectKey,
        current: &Value,
        pre: &Preconditions,
    ) -> Result<(), ApiError> {
        let meta = &current["metadata"];
        if let Some(uid) = &pre.uid
            && meta["uid"].as_str() != Some(uid.as_str())
        {
            return Err(conflict(
                key,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta["uid"].as_str().unwrap_or_default()
                ),
            ));
        }
        if let Some(rv) = &pre.resource_version
            && meta["resourceVersion"].as_str() != Some(rv.as_str())
        {
            return Err(conflict(key, MODIFIED));
        }
        Ok(())
    }

    /// What is stored at `key`.
    fn stored<'a>(st: &'a State, key: &ObjectKey) -> Option<&'a Stored> {
        st.resources
            .get(&key.resource)?
            .get(&(key.namespace.clone(), key.name.clone()))
    }

    /// The object stored at `key`.
    fn current(st: &State, key: &ObjectKey) -> Option<Object> {
        Self::stored(st, key).map(Stored::object)
    }

    fn delete_locked(
        &self,
        st: &mut State,
        key: &ObjectKey,
        strategy: &DeleteStrategy,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let current =
            Self::current(st, key).ok_or_else(|| ApiError::ObjectNotFound(target(key)))?;
        let mut last = current.clone();
        match deletion::plan(strategy, &current, opts, self.now())? {
            Plan::Keep { already_pending } => {
                return Ok(if already_pending {
                    Deleted::AlreadyPending(current)
                } else {
                    Deleted::Pending(current)
                });
            }
            Plan::Write(next) => {
                self.check_size(key, &next)?;
                return Ok(Deleted::Pending(self.commit(
                    st,
                    EventKind::Modified,
                    key,
                    next,
                    Some(current),
                )));
            }
            Plan::Remove { update: Some(next) } => {
                last = self.commit(st, EventKind::Modified, key, next, Some(current));
            }
            Plan::Remove { update: None } => {}
        }
        if key.resource == NAMESPACES {
            // No namespace controller yet: its contents go with it, each with
            // its own DELETED event.
            let inside: Vec<ObjectKey> = st
                .resources
                .iter()
                .flat_map(|(resource, map)| {
                    map.keys()
                        .filter(|(ns, _)| *ns == key.name)
                        .map(|(ns, name)| ObjectKey::new(resource, ns, name))
                        .collect::<Vec<_>>()
                })
                .collect();
            for child in inside {
                if let Some(obj) = Self::current(st, &child) {
                    self.commit(st, EventKind::Deleted, &child, (*obj).clone(), Some(obj));
                }
            }
        }
        Ok(Deleted::Now(self.commit(
            st,
            EventKind::Deleted,
            key,
            (*last).clone(),
            Some(last),
        )))
    }
}

impl Store for MemoryStore {
    fn resource_version(&self) -> u64 {
        self.state.read().rv
    }

    fn get(&self, key: &ObjectKey) -> Option<Object> {
        let stored = Self::stored(&self.state.read(), key)?.clone();
        // Decoded after the lock is released.
        Some(stored.object())
    }

    fn snapshot(&self, resource: &str) -> Snapshot {
        let st = self.state.read();
        Snapshot {
            rv: st.rv,
            objects: st.resources.get(resource).cloned().unwrap_or_default(),
        }
    }

    fn snapshot_at(&self, resource: &str, rv: u64) -> Result<Snapshot, ApiError> {
        let mut st = self.write();
        self.compact(&mut st, self.now());
        if let Some((_, _, s)) = st
            .snapshots
            .iter()
            .find(|(r, _, s)| r == resource && s.rv == rv)
        {
            return Ok(s.clone());
        }
        if st.rv == rv {
            return Ok(Snapshot {
                rv,
                objects: st.resources.get(resource).cloned().unwrap_or_default(),
            });
        }
        Err(ApiError::Gone(
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter, or use the continue token \
             in this response to retrieve the remainder of the results. Continuing with the \
             provided token results in an inconsistent list - objects that were created, \
             modified, or deleted between the time the first chunk was returned and now may show \
             up in the list."
                .into(),
        ))
    }

    fn retain_snapshot(&self, resource: &str, snapshot: &Snapshot) {
        let mut st = self.write();
        if st
            .snapshots
            .iter()
            .any(|(r, _, s)| r == resource && s.rv == snapshot.rv)
        {
            return;
        }
        let now = self.now();
        st.snapshots
            .push_back((resource.to_owned(), now, snapshot.clone()));
        while st.snapshots.len() > self.limits.snapshots {
            st.snapshots.pop_front();
        }
    }

    fn create(&self, key: &ObjectKey, mut object: Value) -> Result<Object, ApiError> {
        let now = self.timestamp();
        let has_generation = super::tracks_generation(&key.resource);
        let meta = meta_mut(&mut object);
        meta.insert("name".into(), json!(key.name));
        if key.namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), json!(key.namespace));
        }
        // A uid the API handler or a controller chose before its strategy
        // needed it (a Job's generated selector) is kept.
        if meta
            .get("uid")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        }
        meta.insert("creationTimestamp".into(), json!(now));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        if has_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if key.resource == NAMESPACES {
            let labels = meta
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            if let Some(labels) = labels {
                labels.insert("kubernetes.io/metadata.name".into(), json!(key.name));
            }
            object["spec"] = json!({"finalizers": ["kubernetes"]});
            object["status"] = json!({"phase": "Active"});
        }
        let encoded = self.check_and_encode(key, &mut object)?;
        let mut st = self.write();
        if !key.namespace.is_empty()
            && !st
                .resources
                .get(NAMESPACES)
                .is_some_and(|m| m.contains_key(&(String::new(), key.namespace.clone())))
        {
            return Err(ApiError::ObjectNotFound(Target {
                name: key.namespace.clone(),
                group: String::new(),
                kind: NAMESPACES.into(),
            }));
        }
        if st
            .resources
            .get(&key.resource)
            .is_some_and(|m| m.contains_key(&(key.namespace.clone(), key.name.clone())))
        {
            return Err(ApiError::AlreadyExists(target(key)));
        }
        Ok(self.commit_encoded(&mut st, EventKind::Added, key, object, None, encoded))
    }

    fn update(
        &self,
        key: &ObjectKey,
        object: Value,
        pre: &Preconditions,
    ) -> Result<Object, ApiError> {
        self.update_from(key, object, pre, None)
    }

    fn get_stored(&self, key: &ObjectKey) -> Option<Stored> {
        Self::stored(&self.state.read(), key).cloned()
    }

    fn update_seen(
        &self,
        key: &ObjectKey,
        object: Value,
        pre: &Preconditions,
        (seen, current): (&Stored, Object),
    ) -> Result<Object, ApiError> {
        self.update_from(key, object, pre, Some((seen.clone(), current)))
    }

    fn delete_with(
        &self,
        key: &ObjectKey,
        strategy: &DeleteStrategy,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut st = self.write();
        self.delete_locked(&mut st, key, strategy, opts)
    }

    fn watch(&self, resource: &str, from: WatchFrom) -> Result<Subscription, ApiError> {
        let mut st = self.write();
        self.compact(&mut st, self.now());
        let live = self
            .events
            .write()
            .entry(resource.to_owned())
            .or_insert_with(|| broadcast::channel(self.limits.fanout.max(16)).0)
            .subscribe();
        match from {
            WatchFrom::Now => Ok(Subscription {
                initial: Some(Snapshot {
                    rv: st.rv,
                    objects: st.resources.get(resource).cloned().unwrap_or_default(),
                }),
                backlog: Vec::new(),
                live,
                rv: st.rv,
            }),
            WatchFrom::After(rv) => {
                if rv < st.compacted {
                    let oldest = st.history.front().map_or(st.rv, |(_, e)| e.rv);
                    return Err(ApiError::Gone(format!(
                        "too old resource version: {rv} ({oldest})"
                    )));
                }
                let start = st.history.partition_point(|(_, e)| e.rv <= rv);
                let backlog = st
                    .history
                    .range(start..)
                    .filter(|(_, e)| e.key.resource == resource)
                    .map(|(_, e)| e.clone())
                    .collect();
                Ok(Subscription {
                    initial: None,
                    backlog,
                    live,
                    rv: st.rv,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::FakeClock;

    fn store() -> (Arc<FakeClock>, MemoryStore) {
        let clock = FakeClock::at_epoch();
        (
            clock.clone(),
            MemoryStore::new(clock, StoreLimits::default()),
        )
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
    }

    #[test]
    fn starts_with_the_four_namespaces() {
        let (_, s) = store();
        let snap = s.snapshot(NAMESPACES);
        let names: Vec<&str> = snap.objects.keys().map(|k| k.1.as_str()).collect();
        assert_eq!(
            names,
            ["default", "kube-node-lease", "kube-public", "kube-system"]
        );
        assert_eq!(s.resource_version(), 4);
    }

    #[test]
    fn create_stamps_and_needs_a_namespace() {
        let (_, s) = store();
        let k = ObjectKey::new("configmaps", "default", "a");
        let o = s.create(&k, cm("a")).unwrap();
        assert_eq!(o["metadata"]["resourceVersion"], "5");
        assert_eq!(o["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
        assert!(o["metadata"]["uid"].is_string());
        assert!(o["metadata"].get("generation").is_none());
        assert!(matches!(
            s.create(&k, cm("a")),
            Err(ApiError::AlreadyExists(_))
        ));
        let err = s
            .create(&ObjectKey::new("configmaps", "nope", "a"), cm("a"))
            .unwrap_err();
        assert_eq!(err.to_string(), "namespaces \"nope\" not found");
        assert_eq!(s.resource_version(), 5, "failed writes change nothing");
    }

    #[test]
    fn stale_updates_conflict_and_generation_follows_spec() {
        let (_, s) = store();
        let k = ObjectKey::new("deployments.apps", "default", "web");
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
        let o = s.create(&k, d).unwrap();
        assert_eq!(o["metadata"]["generation"], 1);
        let mut a = (*o).clone();
        a["spec"]["replicas"] = json!(2);
        let a = s.update(&k, a, &Preconditions::default()).unwrap();
        assert_eq!(a["metadata"]["generation"], 2);
        let mut stale = (*o).clone();
        stale["spec"]["replicas"] = json!(3);
        let err = s.update(&k, stale, &Preconditions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Operation cannot be fulfilled on deployments.apps \"web\": {MODIFIED}")
        );
        let mut status = (*a).clone();
        status["status"] = json!({"replicas": 2});
        let b = s.update(&k, status, &Preconditions::default()).unwrap();
        assert_eq!(
            b["metadata"]["generation"], 2,
            "status does not bump generation"
        );
        let same = s
            .update(&k, (*b).clone(), &Preconditions::default())
            .unwrap();
        assert_eq!(
            same["metadata"]["resourceVersion"],
            b["metadata"]["resourceVersion"]
        );
    }

    #[test]
    fn finalizers_hold_deletion_and_namespaces_take_their_contents() {
        let (_, s) = store();
        let ns = ObjectKey::new(NAMESPACES, "", "team");
        s.create(&ns, json!({"metadata": {}})).unwrap();
        let k = ObjectKey::new("configmaps", "team", "a");
        let mut obj = cm("a");
        obj["metadata"]["finalizers"] = json!(["x/y"]);
        s.create(&k, obj).unwrap();
        let marked = s.delete(&k, &Preconditions::default()).unwrap();
        assert!(marked["metadata"]["deletionTimestamp"].is_string());
        let mut release = (*marked).clone();
        release["metadata"]["finalizers"] = json!([]);
        s.update(&k, release, &Preconditions::default()).unwrap();
        assert!(s.get(&k).is_none());
        s.create(&ObjectKey::new("configmaps", "team", "b"), cm("b"))
            .unwrap();
        s.delete(&ns, &Preconditions::default()).unwrap();
        assert!(s.get(&ObjectKey::new("configmaps", "team", "b")).is_none());
    }

    #[test]
    fn graceful_pods_terminate_then_go_and_watchers_see_each_step() {
        let (_, s) = store();
        let k = ObjectKey::new("pods", "default", "p");
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}});
        s.create(&k, pod).unwrap();
        let mut sub = s
            .watch("pods", WatchFrom::After(s.resource_version()))
            .unwrap();
        let pods = crate::resources::deletion::strategy("v1", "Pod");
        let held = s.delete_with(&k, &pods, &DeleteOptions::default()).unwrap();
        let Deleted::Pending(held) = held else {
            panic!("a scheduled pod terminates first");
        };
        assert_eq!(held["metadata"]["deletionGracePeriodSeconds"], 30);
        // Deleting again leaves the pending deletion alone.
        assert!(matches!(
            s.delete_with(&k, &pods, &DeleteOptions::default()).unwrap(),
            Deleted::AlreadyPending(_)
        ));
        let force = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        assert!(matches!(
            s.delete_with(&k, &pods, &force).unwrap(),
            Deleted::Now(_)
        ));
        assert!(s.get(&k).is_none());
        let kinds: Vec<EventKind> = (0..3).map(|_| sub.live.try_recv().unwrap().kind).collect();
        assert_eq!(
            kinds,
            [EventKind::Modified, EventKind::Modified, EventKind::Deleted]
        );
    }

    #[test]
    fn too_large_objects_are_refused() {
        let (_, s) = store();
        let mut big = cm("big");
        big["data"]["a"] = json!("x".repeat(1_600_000));
        let err = s
            .create(&ObjectKey::new("configmaps", "default", "big"), big)
            .unwrap_err();
        assert_eq!(err.reason(), "RequestEntityTooLarge");
    }

    #[test]
    fn watch_resumes_from_history_and_expires() {
        let (clock, s) = store();
        for i in 0..3 {
            s.create(
                &ObjectKey::new("configmaps", "default", &format!("c{i}")),
                cm("x"),
            )
            .unwrap();
        }
        let sub = s.watch("configmaps", WatchFrom::After(5)).unwrap();
        let rvs: Vec<u64> = sub.backlog.iter().map(|e| e.rv).collect();
        assert_eq!(rvs, [6, 7]);
        let sub = s.watch("configmaps", WatchFrom::Now).unwrap();
        assert_eq!(sub.initial.unwrap().objects.len(), 3);
        clock.advance(Duration::from_secs(301));
        s.create(&ObjectKey::new("configmaps", "default", "late"), cm("x"))
            .unwrap();
        let err = s.watch("configmaps", WatchFrom::After(5)).unwrap_err();
        assert_eq!(err.to_string(), "too old resource version: 5 (8)");
        assert!(s.watch("configmaps", WatchFrom::After(7)).is_ok());
    }

    #[test]
    fn images_round_trip_with_history_and_a_sink_sees_every_write() {
        #[derive(Default)]
        struct Seen(parking_lot::Mutex<Vec<u64>>);
        impl EventSink for Seen {
            fn committed(&self, event: &Event, _at: DateTime<Utc>) {
                self.0.lock().push(event.rv);
            }
        }
        let (clock, s) = store();
        let seen = Arc::new(Seen::default());
        s.set_sink(Some(seen.clone()));
        s.create(&ObjectKey::new("configmaps", "default", "a"), cm("a"))
            .unwrap();
        assert_eq!(*seen.0.lock(), [5]);
        let copy = MemoryStore::from_image(clock, StoreLimits::default(), s.image());
        assert_eq!(copy.resource_version(), 5);
        assert!(
            copy.get(&ObjectKey::new("configmaps", "default", "a"))
                .is_some()
        );
        let sub = copy.watch("configmaps", WatchFrom::After(4)).unwrap();
        assert_eq!(sub.backlog.len(), 1, "history came along");
        let mut live = s.watch("configmaps", WatchFrom::Now).unwrap().live;
        s.close();
        assert!(matches!(
            live.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
    }

    #[test]
    fn the_history_keeps_json_only_of_what_is_kept_encoded() {
        let (_, s) = store();
        let k = ObjectKey::new("pods", "default", "p");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let created = s.create(&k, pod).unwrap();
        let mut live = s.watch("pods", WatchFrom::Now).unwrap().live;
        let mut next = (*created).clone();
        next["status"] = json!({"phase": "Running"});
        let updated = s.update(&k, next, &Preconditions::default()).unwrap();
        let heard = live.try_recv().unwrap();
        assert!(
            matches!(heard.stored(), Stored::Decoded(o) if Arc::ptr_eq(o, &updated)),
            "live watchers get the written object itself"
        );
        let rv = obj_rv(&created);
        let kept = s.watch("pods", WatchFrom::After(rv)).unwrap().backlog;
        assert!(matches!(kept[0].stored(), Stored::Encoded(_)));
        assert!(matches!(kept[0].prev_stored(), Some(Stored::Encoded(_))));
        assert_eq!(kept[0].object(), updated);
        assert_eq!(kept[0].prev(), Some(created));
        s.delete(&k, &Preconditions::default()).unwrap();
        let gone = s.watch("pods", WatchFrom::After(rv + 1)).unwrap().backlog;
        assert!(matches!(gone[0].stored(), Stored::Encoded(_)));
        assert_eq!(gone[0].object()["status"]["phase"], "Running");
    }

    #[test]
    fn an_update_from_an_outdated_read_applies_to_the_current_object() {
        let (_, s) = store();
        let k = ObjectKey::new("pods", "default", "p");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        s.create(&k, pod).unwrap();
        let seen = s.get_stored(&k).unwrap();
        let read = seen.object();
        let mut other = (*read).clone();
        other["metadata"]["labels"] = json!({"by": "other"});
        let between = s.update(&k, other, &Preconditions::default()).unwrap();

        // At the version read: a conflict, as against the current object.
        let at_read = (*read).clone();
        let err = s
            .update_seen(
                &k,
                at_read,
                &Preconditions::default(),
                (&seen, read.clone()),
            )
            .unwrap_err();
        assert!(matches!(err, ApiError::Conflict { .. }), "{err:?}");
        assert_eq!(s.get(&k).unwrap(), between, "nothing written");

        // Unconditional: written over the current one, not the one read.
        let mut mine = (*read).clone();
        meta_mut(&mut mine).remove("resourceVersion");
        mine["status"] = json!({"phase": "Running"});
        let written = s
            .update_seen(&k, mine, &Preconditions::default(), (&seen, read.clone()))
            .unwrap();
        assert!(obj_rv(&written) > obj_rv(&between));
        assert_eq!(written["metadata"]["uid"], read["metadata"]["uid"]);
        assert_eq!(*s.get(&k).unwrap(), *written);
    }

    fn obj_rv(o: &Value) -> u64 {
        o["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn events_are_kept_encoded_and_read_back_whole() {
        let (clock, s) = store();
        let k = ObjectKey::new("events", "default", "e");
        let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "reason": "Started", "count": 1, "involvedObject": {"kind": "Pod", "name": "p"}});
        let created = s.create(&k, event).unwrap();
        let stored = s.snapshot("events").objects[&("default".into(), "e".into())].clone();
        let Stored::Encoded(packed) = &stored else {
            panic!("an Event is kept decoded: {stored:?}");
        };
        assert_eq!(
            packed.json(),
            crate::api::wire::to_vec(&created),
            "the JSON is the object as written, as kube-apiserver writes it"
        );
        assert_eq!(s.get(&k).unwrap(), created);
        let sub = s.watch("events", WatchFrom::After(4)).unwrap();
        assert_eq!(
            sub.backlog[0].object_json(),
            packed.json(),
            "watchers get the same bytes"
        );

        let mut next = (*created).clone();
        next["count"] = json!(2);
        let updated = s.update(&k, next, &Preconditions::default()).unwrap();
        assert_eq!(s.get(&k).unwrap()["count"], 2);
        assert!(matches!(
            s.snapshot("events").iter_stored(None, None).next(),
            Some((_, Stored::Encoded(_)))
        ));

        // A restored image (whose maps a journal fills decoded) is kept encoded too.
        let mut image = s.image();
        let map = Arc::make_mut(image.resources.get_mut("events").unwrap());
        for stored in map.values_mut() {
            *stored = Stored::Decoded(stored.object());
        }
        let copy = MemoryStore::from_image(clock, StoreLimits::default(), image);
        let restored = copy
            .snapshot("events")
            .iter_stored(None, None)
            .next()
            .map(|(_, s)| s.clone());
        let Some(Stored::Encoded(packed)) = restored else {
            panic!("a restored Event is kept decoded: {restored:?}");
        };
        assert_eq!(
            packed.json(),
            crate::api::wire::to_vec(&updated),
            "encoded again, it is still as kube-apiserver writes it"
        );
        assert_eq!(copy.get(&k).unwrap(), updated);
        s.delete(&k, &Preconditions::default()).unwrap();
        assert!(s.get(&k).is_none());
        let mut deployment = cm("a");
        deployment["kind"] = json!("Deployment");
        deployment["apiVersion"] = json!("apps/v1");
        s.create(
            &ObjectKey::new("deployments.apps", "default", "a"),
            deployment,
        )
        .unwrap();
        assert!(
            matches!(
                s.snapshot("deployments.apps")
                    .iter_stored(None, None)
                    .next(),
                Some((_, Stored::Decoded(_)))
            ),
            "what controllers read stays decoded"
        );
        s.create(&ObjectKey::new("configmaps", "default", "a"), cm("a"))
            .unwrap();
        assert!(
            matches!(
                s.snapshot("configmaps").iter_stored(None, None).next(),
                Some((_, Stored::Encoded(_)))
            ),
            "ConfigMaps are kept encoded"
        );
    }

    #[test]
    fn snapshots_stay_consistent_while_writes_go_on() {
        let (clock, s) = store();
        let k = ObjectKey::new("configmaps", "default", "a");
        s.create(&k, cm("a")).unwrap();
        let snap = s.snapshot("configmaps");
        s.retain_snapshot("configmaps", &snap);
        s.delete(&k, &Preconditions::default()).unwrap();
        let again = s.snapshot_at("configmaps", snap.rv).unwrap();
        assert_eq!(again.objects.len(), 1);
        assert_eq!(s.snapshot("configmaps").objects.len(), 0);
        clock.advance(Duration::from_secs(301));
        assert_eq!(
            s.snapshot_at("configmaps", snap.rv).unwrap_err().reason(),
            "Expired"
        );
    }
}
