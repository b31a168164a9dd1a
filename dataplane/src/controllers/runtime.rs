//! The controller runtime, as kube-controller-manager's: shared informers (one
//! watch and one cache per kind, with an owner index), work queues that dedupe by
//! key and requeue failures with rate-limited backoff, and timers on the
//! [`Clock`](kemu_shared::Clock) for requeue-after. Reconcilers are
//! level-triggered: they get a key, read the caches and write through the client;
//! they never run inside the request that wrote the object.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use kemu_shared::SharedClock;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::client::{BoxFuture, Client, ClientError, EventType, Kind};
use super::obj;
use crate::store::Stored;

/// An object's key within its kind: (namespace, name); namespace `""` when
/// cluster-scoped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjKey {
    /// Namespace, `""` for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjKey {
    /// The key of `v`.
    pub fn of(v: &Value) -> Self {
        Self {
            namespace: obj::namespace(v).to_owned(),
            name: obj::name(v).to_owned(),
        }
    }

    /// A key from parts.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// A change an informer saw, handed to every handler.
#[derive(Debug, Clone)]
pub struct Change {
    /// What happened.
    pub kind: EventType,
    /// The object now (as last seen, for `Deleted`).
    pub new: Arc<Value>,
    /// The object before, when the cache had it.
    pub old: Option<Arc<Value>>,
}

impl Change {
    /// Whether this is a resync of the version the cache already held, not
    /// a change: handlers of numerous kinds (Pods) that keep their own
    /// timers skip it.
    pub fn is_resync(&self) -> bool {
        self.kind != EventType::Deleted
            && self
                .old
                .as_ref()
                .is_some_and(|o| obj::resource_version(o) == obj::resource_version(&self.new))
    }
}

type Handler = Box<dyn Fn(&Change) + Send + Sync>;

/// Work counters shared by every part, to tell when everything is quiet.
#[derive(Debug, Default)]
pub struct Activity {
    epoch: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    fn tick(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// How many objects held as JSON an informer also keeps decoded after they
/// change: the ones its controllers are about to read.
const RECENT: usize = 2048;

/// One cached object. Of a kind the store keeps encoded, the store's own
/// bytes (shared, not copied), decoded on each read but while recent.
struct Cached {
    rv: u64,
    uid: String,
    object: Stored,
    recent: Option<Arc<Value>>,
}

impl Cached {
    fn new(object: &Arc<Value>, held: Option<Stored>) -> Self {
        let (object, recent) = match held {
            Some(held) => (held, Some(object.clone())),
            None => (Stored::Decoded(object.clone()), None),
        };
        let decoded = recent.as_ref().map_or_else(|| object.object(), Arc::clone);
        Self {
            rv: obj::resource_version(&decoded),
            uid: obj::uid(&decoded).to_owned(),
            object,
            recent,
        }
    }

    fn value(&self) -> Arc<Value> {
        self.held().value()
    }

    fn held(&self) -> Held {
        Held(self.object.clone(), self.recent.clone())
    }
}

/// How a change reached the informer.
#[derive(Default)]
struct Seen {
    /// A resync's re-delivery, not a watch event.
    resync: bool,
    /// The object as the store holds it, for a kind it keeps encoded.
    held: Option<Stored>,
}

/// What a read takes from the cache, to decode after the lock is released.
struct Held(Stored, Option<Arc<Value>>);

impl Held {
    fn value(&self) -> Arc<Value> {
        match &self.1 {
            Some(v) => v.clone(),
            None => self.0.object(),
        }
    }
}

#[derive(Default)]
struct Cache {
    objects: HashMap<ObjKey, Cached>,
    /// Keys (with the version) whose decoded value is kept, oldest first.
    recent: VecDeque<(ObjKey, u64)>,
}

impl Cache {
    fn insert(&mut self, key: ObjKey, cached: Cached) {
        if cached.recent.is_some() {
            self.recent.push_back((key.clone(), cached.rv));
        }
        self.objects.insert(key, cached);
        while self.recent.len() > RECENT {
            let Some((key, rv)) = self.recent.pop_front() else {
                break;
            };
            if let Some(c) = self.objects.get_mut(&key)
                && c.rv == rv
            {
                c.recent = None;
            }
        }
    }
}

/// One kind's cache, fed by one watch and shared by every controller.
pub struct Informer {
    kind: Kind,
    /// Whether it keeps the objects. One that does not hands every change to
    /// its handlers and answers no reads: for kinds too numerous to hold
    /// decoded and that no controller reads back (Events).
    keeps: bool,
    cache: RwLock<Cache>,
    by_owner: RwLock<HashMap<String, HashSet<ObjKey>>>,
    // uids this process deleted, so a late event cannot resurrect them.
    tombstones: Mutex<HashSet<String>>,
    handlers: RwLock<Vec<Handler>>,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Informer {
    fn new(kind: Kind, keeps: bool) -> Self {
        Self {
            kind,
            keeps,
            cache: RwLock::default(),
            by_owner: RwLock::default(),
            tombstones: Mutex::default(),
            handlers: RwLock::default(),
        }
    }

    /// The kind it caches.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Registers a handler called after every change is applied to the cache.
    pub fn on_change(&self, handler: impl Fn(&Change) + Send + Sync + 'static) {
        self.handlers.write().push(Box::new(handler));
    }

    /// The cached object.
    pub fn get(&self, key: &ObjKey) -> Option<Arc<Value>> {
        let cached = self.cache.read().objects.get(key).map(Cached::held)?;
        // Decoded, when it must be, after the lock is released.
        Some(cached.value())
    }

    /// The cached object by namespace and name.
    pub fn get_by(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.get(&ObjKey::new(namespace, name))
    }

    /// Every cached object (O(all): for cluster-scoped kinds and tests).
    pub fn list(&self) -> Vec<Arc<Value>> {
        let held: Vec<Held> = self
            .cache
            .read()
            .objects
            .values()
            .map(Cached::held)
            .collect();
        held.iter().map(Held::value).collect()
    }

    /// Cached objects in `namespace`.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<Value>> {
        let held: Vec<Held> = self
            .cache
            .read()
            .objects
            .iter()
            .filter(|(k, _)| k.namespace == namespace)
            .map(|(_, c)| c.held())
            .collect();
        held.iter().map(Held::value).collect()
    }

    /// Whether the cache holds `stored` itself at `key`: the same bytes of a
    /// kind kept encoded.
    fn holds(&self, key: &ObjKey, stored: &Stored) -> bool {
        matches!(stored, Stored::Encoded(_))
            && self
                .cache
                .read()
                .objects
                .get(key)
                .is_some_and(|c| c.object.same(stored))
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.cache.read().objects.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.cache.read().objects.is_empty()
    }

    /// Objects with an ownerReference to `owner_uid` (O(dependents)).
    pub fn owned_by(&self, owner_uid: &str) -> Vec<Arc<Value>> {
        let keys: Vec<ObjKey> = self
            .by_owner
            .read()
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let held: Vec<Held> = {
            let cache = self.cache.read();
            let held = keys.iter().filter_map(|k| cache.objects.get(k));
            held.map(Cached::held).collect()
        };
        held.iter().map(Held::value).collect()
    }

    /// Objects whose controlling owner is `owner_uid`.
    pub fn controlled_by(&self, owner_uid: &str) -> Vec<Arc<Value>> {
        let mut v = self.owned_by(owner_uid);
        v.retain(|o| obj::controller_uid(o) == Some(owner_uid));
        v
    }

    /// Applies a change; answers the previous object and whether handlers
    /// should hear of it. A version the cache already holds (a write this
    /// process observed, then its watch event) is not delivered twice, except
    /// by a resync. `seen.held` is the store's packing of `new`, for a kind
    /// it keeps encoded. The previous version, held packed, is read back
    /// without decoding while its writer or the store's watch event still
    /// holds it decoded ([`crate::store::Packed::decoded`]).
    fn apply(&self, kind: EventType, new: &Arc<Value>, seen: Seen) -> (Option<Arc<Value>>, bool) {
        if !self.keeps {
            return (None, true);
        }
        let key = ObjKey::of(new);
        let uid = obj::uid(new);
        let rv = obj::resource_version(new);
        let mut cache = self.cache.write();
        let old = match cache.objects.get_mut(&key) {
            Some(c) if c.uid == uid && kind != EventType::Deleted => {
                if self.tombstones.lock().contains(uid) {
                    return (None, false);
                }
                if c.rv > rv || (c.rv == rv && !seen.resync) {
                    // The watch event of a write this process observed: keep
                    // the store's bytes rather than the decoded copy.
                    if c.rv == rv
                        && let (Some(held), Stored::Decoded(_)) = (&seen.held, &c.object)
                    {
                        let fresh = Cached::new(new, Some(held.clone()));
                        cache.insert(key, fresh);
                    }
                    return (None, false);
                }
                if c.rv == rv {
                    // A resync of what the cache holds: nothing to index.
                    return (Some(new.clone()), true);
                }
                Some(c.value())
            }
            Some(c) => Some(c.value()),
            None => None,
        };
        match kind {
            EventType::Added | EventType::Modified => {
                if self.tombstones.lock().contains(uid) {
                    return (old, false);
                }
                cache.insert(key.clone(), Cached::new(new, seen.held));
            }
            EventType::Deleted => {
                self.tombstones.lock().remove(uid);
                if old.as_ref().is_some_and(|o| obj::uid(o) == uid) {
                    cache.objects.remove(&key);
                }
            }
        }
        drop(cache);
        let old_refs = old.as_deref().map(obj::owner_refs).unwrap_or_default();
        let new_refs = if kind == EventType::Deleted {
            &[][..]
        } else {
            obj::owner_refs(new)
        };
        if old_refs == new_refs {
            return (old, true);
        }
        let mut idx = self.by_owner.write();
        for r in old_refs {
            if let Some(u) = r["uid"].as_str()
                && let Some(set) = idx.get_mut(u)
            {
                set.remove(&key);
                if set.is_empty() {
                    idx.remove(u);
                }
            }
        }
        for r in new_refs {
            if let Some(u) = r["uid"].as_str() {
                idx.entry(u.to_owned()).or_default().insert(key.clone());
            }
        }
        (old, true)
    }

    fn dispatch(&self, kind: EventType, new: Arc<Value>) {
        self.dispatch_as(kind, new, Seen::default());
    }

    fn dispatch_as(&self, kind: EventType, new: Arc<Value>, seen: Seen) {
        let (old, applied) = self.apply(kind, &new, seen);
        if !applied {
            return;
        }
        let change = Change { kind, new, old };
        for h in self.handlers.read().iter() {
            if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| h(&change))) {
                let panic = kemu_shared::panics::message(panic.as_ref());
                let key = ObjKey::of(&change.new);
                tracing::error!(kind = %self.kind, ?key, %panic, "event handler panicked");
            }
        }
    }

    /// Records an object this process just wrote, before its watch event
    /// arrives, so the next reconcile sees it (the mutation cache of
    /// client-go).
    pub fn observe(&self, written: Arc<Value>) {
        self.dispatch(EventType::Modified, written);
    }

    /// Records an object this process just deleted.
    pub fn observe_deleted(&self, deleted: &Value) {
        let key = ObjKey::of(deleted);
        let current = self.get(&key);
        if let Some(c) = current
            && obj::uid(&c) == obj::uid(deleted)
        {
            self.tombstones.lock().insert(obj::uid(deleted).to_owned());
            self.dispatch(EventType::Deleted, c);
            self.tombstones.lock().insert(obj::uid(deleted).to_owned());
        }
    }
}

#[derive(Default)]
struct QueueState {
    queue: VecDeque<ObjKey>,
    dirty: HashSet<ObjKey>,
    processing: HashSet<ObjKey>,
    failures: HashMap<ObjKey, u32>,
}

/// A work queue as client-go's: a key is queued at most once, never processed
/// twice at the same time, and re-queued if it changed while processed.
pub struct Queue {
    name: &'static str,
    state: Mutex<QueueState>,
    notify: Notify,
    adds: AtomicU64,
    retries: AtomicU64,
}

/// What a work queue has done, as client-go's `workqueue_*` metrics count it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    /// The queue's (its controller's) name.
    pub name: &'static str,
    /// Keys waiting now.
    pub depth: usize,
    /// Keys added since it started (deduplicated adds not counted).
    pub adds: u64,
    /// Keys queued again after a failed reconcile.
    pub retries: u64,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Queue {
    fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            state: Mutex::default(),
            notify: Notify::new(),
            adds: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        })
    }

    /// Queues `key` unless it is queued already.
    pub fn add(&self, key: ObjKey) {
        let mut s = self.state.lock();
        if !s.dirty.insert(key.clone()) {
            return;
        }
        self.adds.fetch_add(1, Ordering::Relaxed);
        if s.processing.contains(&key) {
            return;
        }
        s.queue.push_back(key);
        drop(s);
        self.notify.notify_one();
    }

    /// Its counters now.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            name: self.name,
            depth: self.len(),
            adds: self.adds.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    async fn next(&self) -> ObjKey {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock();
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    if !s.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    fn done(&self, key: &ObjKey) {
        let mut s = self.state.lock();
        s.processing.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Counts a failure of `key`; answers the backoff before its retry: at once
    /// for the first, then 5 ms doubling to 1000 s (client-go's per-item limiter).
    fn failed(&self, key: &ObjKey) -> Duration {
        self.retries.fetch_add(1, Ordering::Relaxed);
        let mut s = self.state.lock();
        let n = s.failures.entry(key.clone()).or_default();
        *n += 1;
        if *n == 1 {
            return Duration::ZERO;
        }
        let exp = (*n - 2).min(30);
        Duration::from_millis(5u64.saturating_mul(1 << exp)).min(Duration::from_secs(1000))
    }

    fn forget(&self, key: &ObjKey) {
        self.state.lock().failures.remove(key);
    }

    fn idle(&self) -> bool {
        let s = self.state.lock();
        s.queue.is_empty() && s.processing.is_empty()
    }

    /// How many keys wait.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A pending requeue: the queue and the key.
type Timer = (Arc<Queue>, ObjKey);

/// Requeue-after timers on the clock: one task sleeps until the earliest.
pub struct Timers {
    clock: SharedClock,
    due: Mutex<BTreeMap<(DateTime<Utc>, u64), Timer>>,
    seq: AtomicU64,
    notify: Notify,
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers").finish_non_exhaustive()
    }
}

impl Timers {
    fn new(clock: SharedClock) -> Arc<Self> {
        Arc::new(Self {
            clock,
            due: Mutex::default(),
            seq: AtomicU64::new(0),
            notify: Notify::new(),
        })
    }

    /// Queues `key` on `queue` once the clock reaches `at`.
    pub fn add_at(&self, at: DateTime<Utc>, queue: &Arc<Queue>, key: ObjKey) {
        if at <= self.clock.now() {
            queue.add(key);
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut due = self.due.lock();
        let earliest = due.keys().next().is_none_or(|(t, _)| at < *t);
        due.insert((at, seq), (queue.clone(), key));
        drop(due);
        if earliest {
            self.notify.notify_one();
        }
    }

    /// Queues `key` on `queue` after `delay` on the clock.
    pub fn add_after(&self, delay: Duration, queue: &Arc<Queue>, key: ObjKey) {
        let delay = chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
        let at = self
            .clock
            .now()
            .checked_add_signed(delay)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        self.add_at(at, queue, key);
    }

    fn fire_due(&self) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        let mut due = self.due.lock();
        while let Some(entry) = due.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0);
            }
            let (queue, key) = entry.remove();
            queue.add(key);
        }
        None
    }

    fn overdue(&self) -> bool {
        let now = self.clock.now();
        self.due
            .lock()
            .keys()
            .next()
            .is_some_and(|(t, _)| *t <= now)
    }

    async fn run(self: Arc<Self>, activity: Arc<Activity>) {
        loop {
            let notified = self.notify.notified();
            let next = self.fire_due();
            activity.tick();
            match next {
                None => notified.await,
                Some(at) => {
                    let sleep = self.clock.sleep_until(at);
                    tokio::select! {
                        _ = sleep => {}
                        _ = notified => {}
                    }
                }
            }
        }
    }
}

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requeue {
    /// Nothing: the next change will queue the key again.
    No,
    /// Look again after this long on the clock.
    After(Duration),
}

impl Requeue {
    /// The earlier of two requests.
    pub fn min(self, other: Requeue) -> Requeue {
        match (self, other) {
            (Requeue::No, x) | (x, Requeue::No) => x,
            (Requeue::After(a), Requeue::After(b)) => Requeue::After(a.min(b)),
        }
    }
}

/// A level-triggered controller: brings the object at `key` to its desired state.
pub trait Reconciler: Send + Sync + 'static {
    /// Reconciles one key.
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>>;
}

/// A controller ready to run: its queue and its reconciler.
pub struct Registration {
    /// Name, for logs.
    pub name: &'static str,
    /// Its queue.
    pub queue: Arc<Queue>,
    /// Its reconciler.
    pub reconciler: Arc<dyn Reconciler>,
}

/// The key of `dependent`'s controlling owner, when that owner is an `owner_kind`.
pub fn controller_key(dependent: &Value, owner_kind: &str) -> Option<ObjKey> {
    let r = super::obj::controller_ref(dependent).filter(|r| r["kind"] == owner_kind)?;
    Some(ObjKey::new(
        super::obj::namespace(dependent),
        r["name"].as_str()?,
    ))
}

/// How often informers re-deliver every object ([`Runtime::start`]).
pub const RESYNC: Duration = Duration::from_secs(10);

/// The shared parts every controller gets: client, clock, informers, timers.
pub struct Runtime {
    /// The cluster.
    pub client: Arc<dyn Client>,
    /// Time.
    pub clock: SharedClock,
    /// Requeue-after timers.
    pub timers: Arc<Timers>,
    informers: HashMap<Kind, Arc<Informer>>,
    queues: Mutex<Vec<Arc<Queue>>>,
    activity: Arc<Activity>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Informers that have not yet taken in what the store held when they
    /// first watched; workers wait for none (client-go's WaitForCacheSync).
    unsynced: AtomicUsize,
    synced: Notify,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime with one informer for each of `kinds`, and one that keeps
    /// nothing for each of `notifying` (see [`Informer`]).
    pub fn new(
        client: Arc<dyn Client>,
        clock: SharedClock,
        kinds: &[Kind],
        notifying: &[Kind],
    ) -> Arc<Self> {
        let informers = kinds.iter().map(|k| (k, true));
        let informers = informers.chain(notifying.iter().map(|k| (k, false)));
        Arc::new(Self {
            client,
            timers: Timers::new(clock.clone()),
            clock,
            informers: informers
                .map(|(k, keeps)| (*k, Arc::new(Informer::new(*k, keeps))))
                .collect(),
            queues: Mutex::default(),
            activity: Arc::default(),
            tasks: Mutex::default(),
            unsynced: AtomicUsize::new(kinds.len() + notifying.len()),
            synced: Notify::new(),
        })
    }

    /// The informer of `kind` (every kind the runtime was made with).
    pub fn informer(&self, kind: Kind) -> &Arc<Informer> {
        match self.informers.get(&kind) {
            Some(i) => i,
            None => panic!("no informer for {kind}: add it to the runtime's kinds"),
        }
    }

    /// The informer of `kind`, if the runtime has one.
    pub fn try_informer(&self, kind: Kind) -> Option<&Arc<Informer>> {
        self.informers.get(&kind)
    }

    /// Queues, on every change of a `dependent` object, the key of its
    /// controlling owner when that owner is an `owner_kind` (a Job's Pods wake
    /// the Job, a CronJob's Jobs the CronJob).
    pub fn enqueue_controllers_of(
        &self,
        dependent: Kind,
        owner_kind: &'static str,
        queue: &Arc<Queue>,
    ) {
        let q = queue.clone();
        self.informer(dependent).on_change(move |c| {
            if let Some(key) = controller_key(&c.new, owner_kind) {
                q.add(key);
            }
        });
    }

    /// Every work queue's counters, those of one name summed, by name.
    pub fn queue_stats(&self) -> Vec<QueueStats> {
        let mut by_name: BTreeMap<&'static str, QueueStats> = BTreeMap::new();
        for q in self.queues.lock().iter() {
            let s = q.stats();
            let sum = by_name.entry(s.name).or_insert(QueueStats {
                name: s.name,
                depth: 0,
                adds: 0,
                retries: 0,
            });
            sum.depth += s.depth;
            sum.adds += s.adds;
            sum.retries += s.retries;
        }
        by_name.into_values().collect()
    }

    /// A new named work queue.
    pub fn queue(&self, name: &'static str) -> Arc<Queue> {
        let q = Queue::new(name);
        self.queues.lock().push(q.clone());
        q
    }

    /// Starts every informer, the timers and `workers` workers per controller.
    pub fn start(self: &Arc<Self>, controllers: Vec<Registration>, workers: usize) {
        let mut tasks = self.tasks.lock();
        tasks.push(tokio::spawn(self.timers.clone().run(self.activity.clone())));
        for inf in self.informers.values() {
            let (watched, rt) = (inf.clone(), self.clone());
            tasks.push(tokio::spawn(async move { rt.run_informer(watched).await }));
            if !inf.keeps {
                // A resync re-delivers what a cache holds; there is none.
                continue;
            }
            let (resynced, rt) = (inf.clone(), self.clone());
            tasks.push(tokio::spawn(async move { rt.run_resync(resynced).await }));
        }
        for c in controllers {
            for _ in 0..workers.max(1) {
                let (rt, q, r, name) =
                    (self.clone(), c.queue.clone(), c.reconciler.clone(), c.name);
                tasks.push(tokio::spawn(async move { rt.run_worker(name, q, r).await }));
            }
        }
    }

    fn informer_synced(&self) {
        if self.unsynced.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.synced.notify_waiters();
        }
    }

    async fn run_informer(self: Arc<Self>, inf: Arc<Informer>) {
        let mut first = true;
        loop {
            let mut rx = match self.client.watch(inf.kind).await {
                Ok(rx) => rx,
                Err(e) => {
                    tracing::warn!(kind = %inf.kind, error = %e, "watch failed; retrying");
                    if std::mem::take(&mut first) {
                        // Nothing to take in: workers need not wait for it.
                        self.informer_synced();
                    }
                    self.clock.sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if std::mem::take(&mut first) {
                // A watch starts with what the store holds (its initial
                // ADDED events, queued before it is returned): take them in
                // before any worker reconciles, or a controller that starts
                // after a restart sees its Pods missing and makes more.
                self.activity.busy.fetch_add(1, Ordering::SeqCst);
                while let Ok(event) = rx.try_recv() {
                    let seen = Seen {
                        resync: false,
                        held: event.held,
                    };
                    inf.dispatch_as(event.kind, event.object, seen);
                }
                self.activity.busy.fetch_sub(1, Ordering::SeqCst);
                self.informer_synced();
            }
            while let Some(event) = rx.recv().await {
                self.activity.busy.fetch_add(1, Ordering::SeqCst);
                let seen = Seen {
                    resync: false,
                    held: event.held,
                };
                inf.dispatch_as(event.kind, event.object, seen);
                self.activity.busy.fetch_sub(1, Ordering::SeqCst);
                self.activity.tick();
            }
            tracing::debug!(kind = %inf.kind, "watch closed; watching again");
        }
    }

    /// Every [`RESYNC`] on the clock, re-reads the informer's kind from the
    /// store and re-delivers each object to the handlers, as client-go's
    /// resync does: reconciles are level-triggered, so one that was missed is
    /// made up for within the period instead of leaving a workload stuck.
    /// An object the cache holds as the very bytes the store holds is not
    /// decoded to be re-delivered: its kind (Pods) is numerous, and its
    /// handlers skip resyncs or wake owners that resync themselves.
    async fn run_resync(self: Arc<Self>, inf: Arc<Informer>) {
        loop {
            self.clock.sleep(RESYNC).await;
            let Ok(objects) = self.client.list_stored(inf.kind).await else {
                continue;
            };
            self.activity.busy.fetch_add(1, Ordering::SeqCst);
            for (key, stored) in objects {
                if inf.holds(&key, &stored) {
                    continue;
                }
                let held = matches!(stored, Stored::Encoded(_)).then(|| stored.clone());
                let seen = Seen { resync: true, held };
                inf.dispatch_as(EventType::Modified, stored.object(), seen);
            }
            self.activity.busy.fetch_sub(1, Ordering::SeqCst);
            self.activity.tick();
        }
    }

    async fn run_worker(
        self: Arc<Self>,
        name: &'static str,
        queue: Arc<Queue>,
        rec: Arc<dyn Reconciler>,
    ) {
        loop {
            let synced = self.synced.notified();
            if self.unsynced.load(Ordering::SeqCst) == 0 {
                break;
            }
            synced.await;
        }
        loop {
            let key = queue.next().await;
            self.activity.busy.fetch_add(1, Ordering::SeqCst);
            // A panic is one object's bug: the controller keeps running and
            // the object is retried with back-off, as a failed reconcile.
            let result = AssertUnwindSafe(rec.reconcile(&key))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let panic = kemu_shared::panics::message(panic.as_ref());
                    tracing::error!(controller = name, ?key, %panic, "reconcile panicked");
                    Err(ClientError::Panicked(panic))
                });
            match result {
                Ok(next) => {
                    queue.forget(&key);
                    if let Requeue::After(d) = next {
                        self.timers.add_after(d, &queue, key.clone());
                    }
                }
                Err(e) => {
                    let backoff = queue.failed(&key);
                    tracing::debug!(controller = name, ?key, error = %e, ?backoff, "reconcile failed; requeued");
                    if backoff.is_zero() {
                        // Marked dirty while processing: `done` queues it again.
                        queue.add(key.clone());
                    } else {
                        self.timers.add_after(backoff, &queue, key.clone());
                    }
                }
            }
            queue.done(&key);
            self.activity.busy.fetch_sub(1, Ordering::SeqCst);
            self.activity.tick();
            tokio::task::yield_now().await;
        }
    }

    /// Whether nothing is queued, running or overdue right now.
    pub fn quiet(&self) -> bool {
        self.activity.busy.load(Ordering::SeqCst) == 0
            && self.queues.lock().iter().all(|q| q.idle())
            && !self.timers.overdue()
    }

    /// Waits until every controller has finished what the current clock allows
    /// (tests: call after each FakeClock advance). Only meaningful on a
    /// current-thread runtime, where yielding lets every ready task run.
    pub async fn settle(&self) {
        let mut quiet_rounds = 0;
        for _ in 0..10_000_000u64 {
            let epoch = self.activity.epoch.load(Ordering::SeqCst);
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            if self.quiet() && epoch == self.activity.epoch.load(Ordering::SeqCst) {
                quiet_rounds += 1;
                if quiet_rounds >= 3 {
                    return;
                }
            } else {
                quiet_rounds = 0;
            }
        }
        panic!("controllers never settled");
    }

    /// Stops every task.
    pub fn shutdown(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        for t in self.tasks.get_mut().drain(..) {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use kemu_shared::FakeClock;
    use serde_json::json;

    use super::*;
    use crate::controllers::client::{MemClient, kinds};

    #[tokio::test]
    async fn pods_are_cached_as_the_stores_own_bytes() {
        use crate::controllers::store_client::StoreClient;
        use crate::resources::ClusterResources;
        use crate::store::{MemoryStore, ObjectKey, Store, StoreLimits};

        let clock = FakeClock::at_epoch();
        let store = Arc::new(MemoryStore::new(clock.clone(), StoreLimits::default()));
        let client = StoreClient::new(store.clone(), Arc::new(ClusterResources::default()));
        let rt = Runtime::new(client.clone(), clock.clone(), &[kinds::POD], &[]);
        let olds = Arc::new(Mutex::new(Vec::new()));
        let o = olds.clone();
        rt.informer(kinds::POD).on_change(move |c| {
            o.lock().push(c.old.as_ref().map(|v| v["status"].clone()));
        });
        rt.start(Vec::new(), 1);
        rt.settle().await;
        let mut names = Vec::new();
        for i in 0..RECENT + 2 {
            let pod = json!({"metadata": {"name": format!("p{i}"), "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
            names.push(obj::name(&client.create(kinds::POD, pod).await.unwrap()).to_owned());
        }
        rt.settle().await;
        let informer = rt.informer(kinds::POD);
        let key = ObjKey::new("default", &names[0]);
        let stored = store
            .get_stored(&ObjectKey::new("pods", "default", &names[0]))
            .unwrap();
        assert!(informer.holds(&key, &stored), "the same bytes, not a copy");
        let cached = informer.get(&key).unwrap();
        assert_eq!(cached, stored.object());
        assert!(
            informer.cache.read().objects[&key].recent.is_none(),
            "older than the recent ones: decoded only when read"
        );
        let mut running = (*cached).clone();
        running["status"] = json!({"phase": "Running"});
        client.update_status(kinds::POD, running).await.unwrap();
        rt.settle().await;
        assert_eq!(
            olds.lock().last().cloned().flatten(),
            Some(cached["status"].clone()),
            "handlers get the version before"
        );
        assert_eq!(informer.get(&key).unwrap()["status"]["phase"], "Running");
        assert_eq!(informer.len(), RECENT + 2);
    }

    #[tokio::test]
    async fn an_informer_that_keeps_nothing_still_hears_every_write() {
        let clock = FakeClock::at_epoch();
        let client = MemClient::new(clock.clone());
        let rt = Runtime::new(client.clone(), clock.clone(), &[], &[kinds::EVENT]);
        let heard = Arc::new(AtomicUsize::new(0));
        let h = heard.clone();
        rt.informer(kinds::EVENT).on_change(move |_| {
            h.fetch_add(1, Ordering::SeqCst);
        });
        rt.start(Vec::new(), 1);
        rt.settle().await;
        for name in ["a", "b"] {
            let event =
                json!({"metadata": {"name": name, "namespace": "default"}, "reason": "Started"});
            client.create(kinds::EVENT, event).await.unwrap();
        }
        rt.settle().await;
        clock.advance(RESYNC * 2);
        rt.settle().await;
        assert_eq!(
            heard.load(Ordering::SeqCst),
            2,
            "each write once, no resync"
        );
        let informer = rt.informer(kinds::EVENT);
        assert!(informer.is_empty() && informer.get_by("default", "a").is_none());
    }

    /// Panics on the key named `bad` every time; counts every reconcile.
    struct Fragile(Arc<Mutex<Vec<String>>>);

    impl Reconciler for Fragile {
        fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
            Box::pin(async move {
                self.0.lock().push(key.name.clone());
                assert!(key.name != "bad", "reconcile of {key:?} went wrong");
                Ok(Requeue::No)
            })
        }
    }

    #[tokio::test]
    async fn a_panicking_reconcile_is_retried_with_backoff_and_the_controller_runs_on() {
        let clock = FakeClock::at_epoch();
        let client = MemClient::new(clock.clone());
        let rt = Runtime::new(client.clone(), clock.clone(), &[], &[]);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let queue = rt.queue("fragile");
        let reconciler = Arc::new(Fragile(seen.clone()));
        rt.start(
            vec![Registration {
                name: "fragile",
                queue: queue.clone(),
                reconciler,
            }],
            1,
        );
        queue.add(ObjKey::new("default", "bad"));
        rt.settle().await;
        queue.add(ObjKey::new("default", "good"));
        rt.settle().await;
        let tries = |name: &str| seen.lock().iter().filter(|n| *n == name).count();
        assert_eq!(tries("good"), 1, "the worker outlived the panic");
        let before = tries("bad");
        assert!(before >= 2, "retried at once after the first panic");
        clock.advance(Duration::from_secs(1));
        rt.settle().await;
        assert!(tries("bad") > before, "and again after its back-off");
    }
}
