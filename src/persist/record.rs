//! The one line format of the write-ahead log and of state files (snapshots):
//! JSON lines, one [`Line`] each, and the [`Replay`] that folds a sequence of
//! them into a [`StateImage`].
//!
//! | `t` | meaning |
//! |---|---|
//! | `header` | first line of a state file: format, counts, the WAL generation it covers up to |
//! | `cloud` | the whole cloud state, by part name ([`kemu_shared::Persist`]); the last one wins |
//! | `store` | cluster `c`'s store starts over, empty, at `rv`, history compacted up to `compacted` |
//! | `put` | an object of that store (no event) |
//! | `hist` | an event of that store's history, with the object before it (`p`) |
//! | `ev` | a committed write: applied to the objects and appended to the history, unless the store already has `rv` |

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kemu_dataplane::store::{
    Event, EventKind, ObjectKey, ObjectMap, StoreImage, StoreLimits, Stored,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the line format written in headers.
pub const FORMAT: u32 = 1;

/// One line, flat so reading 100,000 of them stays fast (no tagged-enum buffering).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Line {
    /// What the line is: `header`, `cloud`, `store`, `put`, `hist`, `ev`.
    pub t: String,
    /// Cluster id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<String>,
    /// resourceVersion (of the store for `store`, of the event otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rv: Option<u64>,
    /// `store`: newest resourceVersion no longer in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<u64>,
    /// Event time, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
    /// Event kind: `A`, `M`, `D`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<String>,
    /// Group-resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// The object (after the write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o: Option<Value>,
    /// `hist`: the object before the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<Value>,
    /// `cloud`: every part's state; `header`: counts and the WAL generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<BTreeMap<String, Value>>,
    /// `header`: the WAL generation whose records come after this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_gen: Option<u64>,
    /// `header`: line format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u32>,
    /// `header`: how many lines follow (for progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// Everything kemu persists, in memory: the cloud parts and each cluster's store.
#[derive(Debug, Clone, Default)]
pub struct StateImage {
    /// Each [`kemu_shared::Persist`] part's state, by name.
    pub cloud: BTreeMap<String, Value>,
    /// Each cluster's store, by cluster id.
    pub stores: BTreeMap<String, StoreImage>,
}

impl StateImage {
    /// Objects across every store.
    pub fn object_count(&self) -> usize {
        self.stores.values().map(StoreImage::object_count).sum()
    }
}

fn kind_code(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Added => "A",
        EventKind::Modified => "M",
        EventKind::Deleted => "D",
    }
}

fn kind_of(code: Option<&str>) -> Result<EventKind, String> {
    match code {
        Some("A") => Ok(EventKind::Added),
        Some("M") => Ok(EventKind::Modified),
        Some("D") => Ok(EventKind::Deleted),
        other => Err(format!("unknown event kind {other:?}")),
    }
}

/// The `ev` line of a committed write, newline included. The object's JSON is
/// the encoding watchers share, so the log costs no second serialization.
pub fn event_line(cluster: &str, event: &Event, at: DateTime<Utc>) -> Vec<u8> {
    let object = event.object_json();
    let mut out = Vec::with_capacity(object.len() + 160);
    let head = serde_json::json!({
        "t": "ev",
        "c": cluster,
        "rv": event.rv,
        "at": at,
        "k": kind_code(event.kind),
        "r": event.key.resource,
        "ns": event.key.namespace,
        "n": event.key.name,
    });
    // `{…head…,"o":<object>}` without re-parsing the object.
    let head = head.to_string();
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(b",\"o\":");
    out.extend_from_slice(&object);
    out.extend_from_slice(b"}\n");
    out
}

/// A `cloud` line.
pub fn cloud_line(parts: &BTreeMap<String, Value>) -> Vec<u8> {
    let line = Line {
        t: "cloud".into(),
        parts: Some(parts.clone()),
        ..Line::default()
    };
    let mut out = serde_json::to_vec(&line).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Writes `store`, `put` and `hist` lines for one cluster's image.
pub fn write_store(w: &mut impl Write, cluster: &str, image: &StoreImage) -> std::io::Result<()> {
    let line = |w: &mut dyn Write, l: &Line| -> std::io::Result<()> {
        serde_json::to_writer(&mut *w, l)?;
        w.write_all(b"\n")
    };
    line(
        w,
        &Line {
            t: "store".into(),
            c: Some(cluster.into()),
            rv: Some(image.rv),
            compacted: Some(image.compacted),
            ..Line::default()
        },
    )?;
    let mut resources: Vec<_> = image.resources.iter().collect();
    resources.sort_by(|a, b| a.0.cmp(b.0));
    for (resource, objects) in resources {
        for ((ns, name), stored) in objects.iter() {
            // The object is borrowed, not cloned, into the line.
            let object = stored.object();
            #[derive(Serialize)]
            struct Put<'a> {
                t: &'static str,
                c: &'a str,
                r: &'a str,
                ns: &'a str,
                n: &'a str,
                o: &'a Value,
            }
            serde_json::to_writer(
                &mut *w,
                &Put {
                    t: "put",
                    c: cluster,
                    r: resource,
                    ns,
                    n: name,
                    o: &object,
                },
            )?;
            w.write_all(b"\n")?;
        }
    }
    for (at, event) in &image.history {
        let (object, prev) = (event.object(), event.prev());
        #[derive(Serialize)]
        struct Hist<'a> {
            t: &'static str,
            c: &'a str,
            rv: u64,
            at: &'a DateTime<Utc>,
            k: &'static str,
            r: &'a str,
            ns: &'a str,
            n: &'a str,
            o: &'a Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            p: Option<&'a Value>,
        }
        serde_json::to_writer(
            &mut *w,
            &Hist {
                t: "hist",
                c: cluster,
                rv: event.rv,
                at,
                k: kind_code(event.kind),
                r: &event.key.resource,
                ns: &event.key.namespace,
                n: &event.key.name,
                o: &object,
                p: prev.as_deref(),
            },
        )?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Lines a state image takes (for the header's progress count).
pub fn line_count(image: &StateImage) -> u64 {
    1 + image
        .stores
        .values()
        .map(|s| 1 + s.object_count() as u64 + s.history.len() as u64)
        .sum::<u64>()
}

#[derive(Default)]
struct ReplayStore {
    rv: u64,
    compacted: u64,
    resources: HashMap<String, ObjectMap>,
    history: VecDeque<(DateTime<Utc>, Arc<Event>)>,
}

/// Folds lines, in order, into a [`StateImage`].
#[derive(Default)]
pub struct Replay {
    cloud: BTreeMap<String, Value>,
    stores: HashMap<String, ReplayStore>,
    /// The header of a state file, once read.
    pub header: Option<Line>,
    history_limit: usize,
}

impl Replay {
    /// An empty replay.
    pub fn new() -> Self {
        Self {
            history_limit: StoreLimits::default().history,
            ..Self::default()
        }
    }

    /// Applies one line.
    pub fn apply(&mut self, line: Line) -> Result<(), String> {
        match line.t.as_str() {
            "header" => {
                if line.format.unwrap_or(0) > FORMAT {
                    return Err(format!(
                        "state format {} is newer than this kemu reads ({FORMAT})",
                        line.format.unwrap_or(0)
                    ));
                }
                self.header = Some(line);
            }
            "cloud" => self.cloud = line.parts.unwrap_or_default(),
            "store" => {
                let c = line.c.ok_or("store line without a cluster")?;
                self.stores.insert(
                    c,
                    ReplayStore {
                        rv: line.rv.unwrap_or(0),
                        compacted: line.compacted.unwrap_or(0),
                        ..ReplayStore::default()
                    },
                );
            }
            "put" => {
                let store = self.store_of(line.c.as_deref())?;
                let (r, ns, n) = key_parts(line.r, line.ns, line.n)?;
                let o = line.o.ok_or("put line without an object")?;
                store
                    .resources
                    .entry(r)
                    .or_default()
                    .insert((ns, n), Stored::Decoded(Arc::new(o)));
            }
            "hist" => {
                let limit = self.history_limit;
                let store = self.store_of(line.c.as_deref())?;
                let kind = kind_of(line.k.as_deref())?;
                let (r, ns, n) = key_parts(line.r, line.ns, line.n)?;
                let event = Event::new(
                    line.rv.unwrap_or(0),
                    kind,
                    ObjectKey {
                        resource: r,
                        namespace: ns,
                        name: n,
                    },
                    Arc::new(line.o.ok_or("hist line without an object")?),
                    line.p.map(|p| Stored::Decoded(Arc::new(p))),
                );
                push_history(store, line.at.unwrap_or_default(), event, limit);
            }
            "ev" => {
                let limit = self.history_limit;
                let c = line.c.ok_or("ev line without a cluster")?;
                // A store first seen in the log started empty (its `store`
                // line comes first in practice; this keeps a torn log usable).
                let store = self.stores.entry(c).or_default();
                let rv = line.rv.unwrap_or(0);
                if rv <= store.rv {
                    // Already in the snapshot this log continues.
                    return Ok(());
                }
                let kind = kind_of(line.k.as_deref())?;
                let (r, ns, n) = key_parts(line.r, line.ns, line.n)?;
                let object = Arc::new(line.o.ok_or("ev line without an object")?);
                let map = store.resources.entry(r.clone()).or_default();
                let map_key = (ns.clone(), n.clone());
                let prev = match kind {
                    EventKind::Deleted => map.remove(&map_key),
                    _ => map.insert(map_key, Stored::Decoded(object.clone())),
                };
                store.rv = rv;
                let key = ObjectKey {
                    resource: r,
                    namespace: ns,
                    name: n,
                };
                let event = Event::new(rv, kind, key, object, prev);
                push_history(store, line.at.unwrap_or_default(), event, limit);
            }
            other => return Err(format!("unknown line type {other:?}")),
        }
        Ok(())
    }

    fn store_of(&mut self, c: Option<&str>) -> Result<&mut ReplayStore, String> {
        let c = c.ok_or("line without a cluster")?;
        self.stores
            .get_mut(c)
            .ok_or_else(|| format!("line for cluster {c} before its store line"))
    }

    /// The state the lines describe.
    pub fn finish(self) -> StateImage {
        StateImage {
            cloud: self.cloud,
            stores: self
                .stores
                .into_iter()
                .map(|(c, s)| {
                    (
                        c,
                        StoreImage {
                            rv: s.rv,
                            compacted: s.compacted,
                            resources: s
                                .resources
                                .into_iter()
                                .map(|(r, m)| (r, Arc::new(m)))
                                .collect(),
                            history: s.history.into(),
                        },
                    )
                })
                .collect(),
        }
    }
}

fn key_parts(
    r: Option<String>,
    ns: Option<String>,
    n: Option<String>,
) -> Result<(String, String, String), String> {
    match (r, n) {
        (Some(r), Some(n)) => Ok((r, ns.unwrap_or_default(), n)),
        _ => Err("line without a resource or name".into()),
    }
}

fn push_history(store: &mut ReplayStore, at: DateTime<Utc>, event: Event, limit: usize) {
    store.history.push_back((at, Arc::new(event)));
    while store.history.len() > limit {
        if let Some((_, old)) = store.history.pop_front() {
            store.compacted = old.rv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(rv: u64, kind: EventKind, name: &str) -> Event {
        let object = json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
        Event::new(
            rv,
            kind,
            ObjectKey::new("configmaps", "default", name),
            Arc::new(object),
            None,
        )
    }

    fn parse(bytes: &[u8]) -> Line {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn log_lines_fold_into_objects_and_history() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let mut replay = Replay::new();
        replay
            .apply(parse(br#"{"t":"store","c":"c1","rv":4,"compacted":0}"#))
            .unwrap();
        for e in [
            ev(5, EventKind::Added, "a"),
            ev(6, EventKind::Added, "b"),
            ev(7, EventKind::Deleted, "a"),
        ] {
            replay.apply(parse(&event_line("c1", &e, at))).unwrap();
        }
        // A line the snapshot already holds is skipped.
        replay
            .apply(parse(&event_line(
                "c1",
                &ev(6, EventKind::Deleted, "b"),
                at,
            )))
            .unwrap();
        let image = replay.finish();
        let store = &image.stores["c1"];
        assert_eq!(store.rv, 7);
        assert_eq!(store.object_count(), 1);
        assert_eq!(store.history.len(), 3);
        assert!(
            store.history[2].1.prev().is_some(),
            "a delete knows what it removed"
        );
    }

    #[test]
    fn a_state_file_round_trips() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let mut replay = Replay::new();
        replay
            .apply(parse(br#"{"t":"store","c":"c1","rv":0}"#))
            .unwrap();
        replay
            .apply(parse(&event_line("c1", &ev(1, EventKind::Added, "a"), at)))
            .unwrap();
        let mut parts = BTreeMap::new();
        parts.insert("eks".to_owned(), json!({"x": 1}));
        replay.apply(parse(&cloud_line(&parts))).unwrap();
        let image = replay.finish();
        let mut file = Vec::new();
        file.extend(cloud_line(&image.cloud));
        write_store(&mut file, "c1", &image.stores["c1"]).unwrap();
        let mut again = Replay::new();
        for line in file.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            again.apply(parse(line)).unwrap();
        }
        let again = again.finish();
        assert_eq!(again.cloud, image.cloud);
        assert_eq!(again.stores["c1"].rv, 1);
        assert_eq!(again.stores["c1"].object_count(), 1);
        assert_eq!(again.stores["c1"].history.len(), 1);
        assert!(Replay::new().apply(parse(br#"{"t":"nope"}"#)).is_err());
    }
}
