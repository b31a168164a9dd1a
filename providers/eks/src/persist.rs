//! The facade's own state (node groups, add-ons, access entries, updates…,
//! and the account-wide subscriptions) as one JSON value, for kemu's state
//! directory, snapshots and reset.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use kemu_shared::{ClusterId, Persist, PersistError};
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer, Serialize};

use crate::Eks;
use crate::state::{ClusterState, Item};

#[derive(Serialize, Deserialize)]
struct Saved {
    clusters: HashMap<ClusterId, ClusterState>,
    subscriptions: BTreeMap<String, Item>,
}

impl Persist for Eks {
    fn name(&self) -> &'static str {
        "eks"
    }

    fn snapshot(&self) -> serde_json::Value {
        let saved = Saved {
            clusters: self.state.clusters.lock().clone(),
            subscriptions: self.state.subscriptions.lock().clone(),
        };
        serde_json::to_value(saved).unwrap_or(serde_json::Value::Null)
    }

    fn restore(&self, state: serde_json::Value) -> Result<(), PersistError> {
        let saved: Saved = match state {
            serde_json::Value::Null => Saved {
                clusters: HashMap::new(),
                subscriptions: BTreeMap::new(),
            },
            state => serde_json::from_value(state).map_err(|e| PersistError::invalid("eks", e))?,
        };
        *self.state.clusters.lock() = saved.clusters;
        *self.state.subscriptions.lock() = saved.subscriptions;
        Ok(())
    }
}

/// An [`Item::pending`] transition.
type Pending = Option<(DateTime<Utc>, Option<&'static str>)>;

/// Reads [`Item::pending`]: the status is one of a handful of EKS words, kept
/// as `&'static str`; each distinct word is allocated once per process.
pub(crate) fn pending_status<'de, D: Deserializer<'de>>(d: D) -> Result<Pending, D::Error> {
    static WORDS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let raw: Option<(DateTime<Utc>, Option<String>)> = Option::deserialize(d)?;
    Ok(raw.map(|(at, status)| {
        let status = status.map(|s| {
            let mut words = WORDS.lock();
            let words = words.get_or_insert_with(HashSet::new);
            match words.get(s.as_str()) {
                Some(w) => *w,
                None => {
                    let w: &'static str = Box::leak(s.into_boxed_str());
                    words.insert(w);
                    w
                }
            }
        });
        (at, status)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::{ClusterRegistry, FakeClock};
    use serde_json::json;

    #[test]
    fn state_round_trips() {
        let eks = Eks::new(ClusterRegistry::new(FakeClock::at_epoch()));
        let mut cluster = ClusterState::default();
        cluster.of(crate::state::Kind::Addon).insert(
            "vpc-cni".into(),
            Item::new(
                json!({"status": "CREATING"}),
                Some((DateTime::<Utc>::UNIX_EPOCH, Some("ACTIVE"))),
            ),
        );
        eks.state.clusters.lock().insert("c1".into(), cluster);
        let saved = eks.snapshot();
        let other = Eks::new(ClusterRegistry::new(FakeClock::at_epoch()));
        other.restore(saved.clone()).unwrap();
        assert_eq!(other.snapshot(), saved);
        assert!(other.restore(json!({"clusters": 1})).is_err());
    }
}
