//! `watch=true`: a streaming body of newline-delimited watch events, each
//! flushed as it happens (chunked over HTTP/1.1, DATA frames over HTTP/2).
//!
//! A watcher reads the cluster's broadcast of writes in its own task: writers
//! never wait for it. If it falls behind the broadcast buffer it catches up from
//! the store's history; if the history no longer reaches back that far, its
//! stream ends with an `ERROR` event carrying a 410 `Expired` Status, so no
//! event is ever silently missed.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::stream;
use kemu_shared::SharedClock;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::table::{self, IncludeObject};
use crate::api::wire;
use crate::error::ApiError;
use crate::resources::ResourceType;
use crate::resources::strategy;
use crate::store::{Event, EventKind, Object, Store, Stored, WatchFrom};

/// How often a watch that allows bookmarks gets one, as kube-apiserver does.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// Which objects a list or watch covers.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Only this namespace (all when `None`).
    pub namespace: Option<String>,
    /// The label selector.
    pub labels: LabelSelector,
    /// The field selector.
    pub fields: FieldSelector,
}

impl Filter {
    /// Whether `object` is covered.
    pub fn matches(&self, object: &Value) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns))
            && self.labels.selects(object)
            && self.fields.matches(object)
    }

    /// The object `stored` holds, if it is covered. An encoded one is decoded
    /// only when its JSON may match.
    pub fn admits(&self, stored: &Stored) -> Option<Object> {
        let object = match stored {
            Stored::Decoded(object) => object.clone(),
            Stored::Encoded(packed) => match packed.decoded() {
                Some(object) => object,
                None => {
                    let json = packed.json();
                    if !self.fields.may_match_json(&json) {
                        return None;
                    }
                    packed.decode(&json)
                }
            },
        };
        self.matches(&object).then_some(object)
    }

    /// Whether the object stored in `namespace` is covered, decoded only
    /// when a selector needs it.
    pub fn covers(&self, namespace: &str, stored: &Stored) -> bool {
        if self.labels.is_empty() && self.fields.is_empty() {
            return self.namespace.as_deref().is_none_or(|ns| ns == namespace);
        }
        self.admits(stored).is_some()
    }
}

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// The resource type watched.
    pub rt: Arc<ResourceType>,
    /// Its group-resource store key.
    pub resource: String,
    /// Which objects.
    pub filter: Filter,
    /// Where to start.
    pub from: WatchFrom,
    /// Send the current state first (as `ADDED`), ending with a bookmark
    /// annotated `k8s.io/initial-events-end` when `send_initial_events`.
    pub initial_events: bool,
    /// `sendInitialEvents=true`: end the initial state with a bookmark.
    pub send_initial_events: bool,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// Render objects as Tables.
    pub table: Option<IncludeObject>,
    /// Render objects as their metadata only.
    pub metadata: Option<crate::api::partial::Metadata>,
}

/// Starts the watch and answers with its streaming body.
pub fn serve(store: Arc<dyn Store>, clock: SharedClock, req: WatchRequest) -> HttpResponse {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    actix_web::rt::spawn(run(store, clock, req, tx));
    let body = stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body)
}

struct Watcher {
    req: WatchRequest,
    clock: SharedClock,
    tx: mpsc::Sender<Bytes>,
    /// The newest cluster resourceVersion this watcher has seen (any resource).
    seen: u64,
}

impl Watcher {
    fn render(&self, object: &Value) -> Value {
        if let Some(m) = self.req.metadata {
            return m.of(object);
        }
        match self.req.table {
            Some(include) => table::render(
                &self.req.rt,
                std::slice::from_ref(&*strategy::present(&self.req.rt, object)),
                include,
                json!({ "resourceVersion": object["metadata"]["resourceVersion"] }),
                self.clock.now(),
            ),
            None => strategy::present(&self.req.rt, object).into_owned(),
        }
    }

    /// Sends one event line; `false` once the client has gone.
    async fn send(&self, kind: &str, object: Value) -> bool {
        let mut line = Vec::with_capacity(1024);
        line.extend_from_slice(b"{\"type\":");
        line.extend_from_slice(&serde_json::to_vec(kind).unwrap_or_default());
        line.extend_from_slice(b",\"object\":");
        wire::write(&mut line, &object);
        line.extend_from_slice(b"}\n");
        self.tx.send(Bytes::from(line)).await.is_ok()
    }

    async fn bookmark(&self, initial_end: bool) -> bool {
        let mut meta = json!({ "resourceVersion": self.seen.to_string() });
        if initial_end {
            meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let object = json!({
            "kind": self.req.rt.kind,
            "apiVersion": self.req.rt.api_version(),
            "metadata": meta,
        });
        self.send("BOOKMARK", object).await
    }

    /// Delivers one write as the filter sees it: an object entering the
    /// filter is `ADDED`, one leaving it `DELETED`, as upstream does.
    async fn deliver(&mut self, event: &Event) -> bool {
        if event.rv <= self.seen {
            return true;
        }
        self.seen = event.rv;
        if event.key.resource != self.req.resource {
            return true;
        }
        let f = &self.req.filter;
        let ns = &event.key.namespace;
        let now = event.kind != EventKind::Deleted && f.covers(ns, event.stored());
        let before = match event.kind {
            EventKind::Added => false,
            EventKind::Deleted => f.covers(ns, event.stored()),
            EventKind::Modified => event.prev_stored().is_some_and(|p| f.covers(ns, p)),
        };
        let kind = match (before, now) {
            (false, true) => "ADDED",
            (true, true) => "MODIFIED",
            (true, false) => "DELETED",
            (false, false) => return true,
        };
        // An object leaving the filter is deleted as the watcher last saw
        // it, at this write's resourceVersion (upstream's cacher does so).
        if kind == "DELETED"
            && event.kind == EventKind::Modified
            && let Some(prev) = event.prev_stored()
        {
            let mut object = (*prev.object()).clone();
            object["metadata"]["resourceVersion"] = json!(event.rv.to_string());
            let object = if self.req.table.is_some() || self.req.metadata.is_some() {
                self.render(&Arc::new(object))
            } else {
                strategy::present(&self.req.rt, &object).into_owned()
            };
            return self.send(kind, object).await;
        }
        if self.req.table.is_some() || self.req.metadata.is_some() {
            let object = self.render(&event.object());
            return self.send(kind, object).await;
        }
        if strategy::converts(&self.req.rt) {
            let object = strategy::present(&self.req.rt, &event.object()).into_owned();
            return self.send(kind, object).await;
        }
        // The object's JSON is encoded once per write, shared by every watcher.
        let encoded = event.object_json();
        let mut line = Vec::with_capacity(encoded.len() + 32);
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(kind.as_bytes());
        line.extend_from_slice(b"\",\"object\":");
        line.extend_from_slice(&encoded);
        line.extend_from_slice(b"}\n");
        self.tx.send(Bytes::from(line)).await.is_ok()
    }

    async fn expired(&self, err: &ApiError) {
        let _ = self.send("ERROR", err.status()).await;
    }
}

async fn run(
    store: Arc<dyn Store>,
    clock: SharedClock,
    req: WatchRequest,
    tx: mpsc::Sender<Bytes>,
) {
    let from = if req.initial_events {
        WatchFrom::Now
    } else {
        req.from
    };
    let mut w = Watcher {
        seen: match from {
            WatchFrom::After(rv) => rv,
            WatchFrom::Now => 0,
        },
        req,
        clock: clock.clone(),
        tx,
    };
    let sub = match store.watch(&w.req.resource, from) {
        Ok(sub) => sub,
        Err(err) => return w.expired(&err).await,
    };
    let mut live = sub.live;
    if let Some(initial) = sub.initial {
        w.seen = initial.rv;
        if w.req.initial_events {
            let ns = w.req.filter.namespace.clone();
            for (_, stored) in initial.iter_stored(ns.as_deref(), None) {
                if let Some(object) = w.req.filter.admits(stored) {
                    let object = w.render(&object);
                    if !w.send("ADDED", object).await {
                        return;
                    }
                }
            }
        }
        if w.req.send_initial_events && !w.bookmark(true).await {
            return;
        }
    }
    for event in &sub.backlog {
        if !w.deliver(event).await {
            return;
        }
    }
    let timeout = w.req.timeout.map(|t| clock.sleep(t));
    let mut timeout = std::pin::pin!(async move {
        match timeout {
            Some(t) => t.await,
            None => std::future::pending().await,
        }
    });
    let mut tick = clock.sleep(BOOKMARK_EVERY);
    loop {
        tokio::select! {
            _ = &mut timeout => return,
            _ = &mut tick, if w.req.bookmarks => {
                tick = clock.sleep(BOOKMARK_EVERY);
                if !w.bookmark(false).await {
                    return;
                }
            }
            _ = w.tx.closed() => return,
            received = live.recv() => match received {
                Ok(event) => {
                    if !w.deliver(&event).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, seen = w.seen, "watcher fell behind; catching up from history");
                    match store.watch(&w.req.resource, WatchFrom::After(w.seen)) {
                        Ok(sub) => {
                            live = sub.live;
                            for event in &sub.backlog {
                                if !w.deliver(event).await {
                                    return;
                                }
                            }
                        }
                        Err(err) => return w.expired(&err).await,
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceRegistry;
    use crate::store::{MemoryStore, ObjectKey, StoreLimits};
    use kemu_shared::FakeClock;

    fn request(from: WatchFrom) -> WatchRequest {
        let rt = ResourceRegistry::builtin()
            .lookup("", "v1", "configmaps")
            .expect("configmaps");
        WatchRequest {
            rt,
            resource: "configmaps".into(),
            filter: Filter {
                namespace: Some("default".into()),
                labels: LabelSelector::default(),
                fields: FieldSelector::default(),
            },
            from,
            initial_events: false,
            send_initial_events: false,
            bookmarks: false,
            timeout: None,
            table: None,
            metadata: None,
        }
    }

    fn write(store: &MemoryStore, n: usize) {
        for i in 0..n {
            let key = ObjectKey::new("configmaps", "default", &format!("c{i}"));
            store
                .create(&key, json!({"metadata": {}, "data": {"i": i.to_string()}}))
                .expect("create");
        }
    }

    async fn lines(mut rx: mpsc::Receiver<Bytes>, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            match rx.recv().await {
                Some(b) => out.push(serde_json::from_slice(&b).expect("event json")),
                None => break,
            }
        }
        out
    }

    /// A watcher that stops reading while writers go on falls behind the
    /// broadcast, catches up from the history and still gets every event in
    /// order; writers never waited for it.
    #[tokio::test]
    async fn slow_watcher_catches_up_from_history() {
        let clock = FakeClock::at_epoch();
        let limits = StoreLimits {
            fanout: 16,
            ..StoreLimits::default()
        };
        let store = Arc::new(MemoryStore::new(clock.clone(), limits));
        let (tx, rx) = mpsc::channel(4);
        let task = tokio::spawn(run(store.clone(), clock, request(WatchFrom::After(4)), tx));
        // Let the watcher subscribe and wait on the broadcast before the burst.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        write(&store, 1000);
        let events = lines(rx, 1000).await;
        let names: Vec<String> = events
            .iter()
            .map(|e| {
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let want: Vec<String> = (0..1000).map(|i| format!("c{i}")).collect();
        assert_eq!(names, want);
        assert!(events.iter().all(|e| e["type"] == "ADDED"));
        task.abort();
    }

    /// When even the history no longer reaches back, the stream ends with an
    /// ERROR event carrying a 410 Expired Status.
    #[tokio::test]
    async fn too_slow_watcher_gets_410() {
        let clock = FakeClock::at_epoch();
        let limits = StoreLimits {
            fanout: 16,
            history: 50,
            ..StoreLimits::default()
        };
        let store = Arc::new(MemoryStore::new(clock.clone(), limits));
        let (tx, rx) = mpsc::channel(4);
        let task = tokio::spawn(run(store.clone(), clock, request(WatchFrom::After(4)), tx));
        // Let the watcher subscribe and wait on the broadcast before the burst.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        write(&store, 1000);
        let events = lines(rx, 2000).await;
        let last = events.last().expect("events");
        assert_eq!(last["type"], "ERROR");
        assert_eq!(last["object"]["code"], 410);
        assert_eq!(last["object"]["reason"], "Expired");
        let names: Vec<&str> = events[..events.len() - 1]
            .iter()
            .map(|e| e["object"]["metadata"]["name"].as_str().unwrap_or_default())
            .collect();
        let want: Vec<String> = (0..names.len()).map(|i| format!("c{i}")).collect();
        assert_eq!(names, want, "what was delivered is a gap-free prefix");
        let _ = task.await;
    }

    /// Bookmarks come every minute on the clock when allowed, and
    /// `timeoutSeconds` ends the stream, both on the clock handed in.
    #[tokio::test]
    async fn bookmarks_and_timeout_follow_the_clock() {
        let clock = FakeClock::at_epoch();
        let store = Arc::new(MemoryStore::new(clock.clone(), StoreLimits::default()));
        let mut req = request(WatchFrom::After(4));
        req.bookmarks = true;
        req.timeout = Some(Duration::from_secs(90));
        let (tx, mut rx) = mpsc::channel(16);
        let task = tokio::spawn(run(store.clone(), clock.clone(), req, tx));
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        write(&store, 1);
        let added = lines_from(&mut rx, 1).await;
        assert_eq!(added[0]["type"], "ADDED");
        clock.advance(Duration::from_secs(61));
        let bookmark = lines_from(&mut rx, 1).await;
        assert_eq!(bookmark[0]["type"], "BOOKMARK");
        assert_eq!(bookmark[0]["object"]["metadata"]["resourceVersion"], "5");
        assert_eq!(bookmark[0]["object"]["kind"], "ConfigMap");
        clock.advance(Duration::from_secs(30));
        assert!(rx.recv().await.is_none(), "timeoutSeconds ends the stream");
        task.await.expect("watch task");
    }

    async fn lines_from(rx: &mut mpsc::Receiver<Bytes>, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            match rx.recv().await {
                Some(b) => out.push(serde_json::from_slice(&b).expect("event json")),
                None => break,
            }
        }
        out
    }
}
