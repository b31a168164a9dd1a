//! What persistence needs of a store: its whole content as one value
//! ([`StoreImage`], taken and loaded in O(resources) thanks to the
//! copy-on-write maps), and a hook that sees every write as it is committed
//! ([`EventSink`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{Event, Stored};

/// Objects of one resource, by `(namespace, name)`.
pub type ObjectMap = BTreeMap<(String, String), Stored>;

/// A store's whole content at one resourceVersion: its objects, and the event
/// history watches resume from.
#[derive(Debug, Clone, Default)]
pub struct StoreImage {
    /// The cluster resourceVersion.
    pub rv: u64,
    /// The newest resourceVersion no longer in `history` (older watches get 410).
    pub compacted: u64,
    /// Objects by group-resource.
    pub resources: HashMap<String, Arc<ObjectMap>>,
    /// The event history, oldest first, each with when (on the clock) it happened.
    pub history: Vec<(DateTime<Utc>, Arc<Event>)>,
}

impl StoreImage {
    /// How many objects the image holds.
    pub fn object_count(&self) -> usize {
        self.resources.values().map(|m| m.len()).sum()
    }
}

/// Sees every committed write of a store, in resourceVersion order, under the
/// store's lock and before the write returns to its caller: the write-ahead
/// log hangs here.
pub trait EventSink: Send + Sync {
    /// `event` was committed at `at` (on the clock).
    fn committed(&self, event: &Event, at: DateTime<Utc>);
}

/// The persistence of every cluster's store: an [`EventSink`] per cluster, and
/// the image of each store opened fresh (its initial namespaces and bootstrap
/// policy are written before any sink is attached).
pub trait ClusterJournal: Send + Sync + std::fmt::Debug {
    /// The sink for the writes of `cluster`'s store.
    fn sink(&self, cluster: &str) -> Arc<dyn EventSink>;
    /// `cluster`'s store was opened (or replaced) holding `image`.
    fn opened(&self, cluster: &str, image: &StoreImage);
}
