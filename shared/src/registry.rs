//! The cluster registry: one record per cluster, shared by the three facades and
//! the data plane.
//!
//! Lifecycle transitions that take time (provisioning, deletion) are stored as a
//! pending transition and applied when the clock reaches them, on the next read:
//! with a fake clock a test sees each step exactly when it advances time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::RwLock;

use crate::auth::{TokenAuthenticator, UserInfo};
use crate::clock::SharedClock;
use crate::cluster::{
    Cloud, ClusterId, ClusterRecord, ClusterSpec, Lifecycle, OwnerScope, Serving,
};
use crate::error::RegistryError;
use crate::persist::{Persist, PersistError};
use crate::pki::ClusterCa;
use crate::sa_key::ServiceAccountKey;

/// How the data plane serves clusters; attached with [`ClusterRegistry::attach_dataplane`].
pub trait DataPlaneHook: Send + Sync {
    /// Binds (or keeps) the cluster's listener and returns the host and port it
    /// serves on. `record.port`, when set, must be reused.
    fn serve(&self, record: &ClusterRecord) -> Result<(String, u16), String>;
    /// Closes the cluster's listener and forgets its objects.
    fn retire(&self, id: &str);
    /// The record changed (e.g. its node pools): the data plane brings the
    /// cluster's objects in line. Called after the change is stored.
    fn record_changed(&self, record: &ClusterRecord) {
        let _ = record;
    }
}

/// The registry of every cluster of every cloud.
#[derive(Clone)]
pub struct ClusterRegistry {
    inner: Arc<Inner>,
}

struct Inner {
    clock: SharedClock,
    clusters: RwLock<BTreeMap<ClusterId, ClusterRecord>>,
    dataplane: RwLock<Option<Arc<dyn DataPlaneHook>>>,
    authenticators: RwLock<BTreeMap<Cloud, Arc<dyn TokenAuthenticator>>>,
    observer: crate::observe::Observer,
}

impl std::fmt::Debug for ClusterRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterRegistry")
            .field("clusters", &self.inner.clusters.read().len())
            .finish_non_exhaustive()
    }
}

impl ClusterRegistry {
    /// An empty registry on `clock`, with no data plane attached.
    pub fn new(clock: SharedClock) -> Self {
        Self {
            inner: Arc::new(Inner {
                clock,
                clusters: RwLock::new(BTreeMap::new()),
                dataplane: RwLock::new(None),
                authenticators: RwLock::new(BTreeMap::new()),
                observer: crate::observe::Observer::default(),
            }),
        }
    }

    /// The request log and counters every API feeds.
    pub fn observer(&self) -> &crate::observe::Observer {
        &self.inner.observer
    }

    /// The clock the registry runs on.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Whether a data plane is attached.
    pub fn dataplane_attached(&self) -> bool {
        self.inner.dataplane.read().is_some()
    }

    /// Attaches the data plane and reconciles every existing cluster to its real
    /// endpoint and CA.
    pub fn attach_dataplane(&self, hook: Arc<dyn DataPlaneHook>) {
        *self.inner.dataplane.write() = Some(hook);
        let ids: Vec<ClusterId> = self.inner.clusters.read().keys().cloned().collect();
        for id in ids {
            self.bind(&id);
        }
    }

    /// Registers the bearer-token authenticator for `cloud`'s clusters.
    pub fn set_authenticator(&self, cloud: Cloud, authenticator: Arc<dyn TokenAuthenticator>) {
        self.inner
            .authenticators
            .write()
            .insert(cloud, authenticator);
    }

    /// Authenticates a bearer token presented to `cluster` with its cloud's
    /// authenticator: `Ok(None)` if no authenticator recognises it.
    pub fn authenticate_token(
        &self,
        cluster: &ClusterRecord,
        token: &str,
    ) -> Result<Option<UserInfo>, String> {
        let authenticator = self
            .inner
            .authenticators
            .read()
            .get(&cluster.cloud())
            .cloned();
        let Some(a) = authenticator else {
            return Ok(None);
        };
        a.authenticate(cluster, token).map_err(|reason| {
            // A token bound to another cluster (EKS signs the cluster's name
            // into it) is a mistake worth naming.
            let other = self
                .list(|c| c.id != cluster.id && c.cloud() == cluster.cloud())
                .into_iter()
                .find(|c| matches!(a.authenticate(c, token), Ok(Some(_))));
            match other {
                Some(other) => format!(
                    "this token is for cluster {}, not {}: get one for this cluster with {}",
                    other.name,
                    cluster.name,
                    crate::kubeconfig::refresh_command(cluster)
                ),
                None => reason,
            }
        })
    }

    /// The identity configuration `cluster`'s cloud maps callers through
    /// (see [`TokenAuthenticator::access_config`]); `Null` if none.
    pub fn access_config(&self, cluster: &ClusterRecord) -> serde_json::Value {
        let authenticator = self
            .inner
            .authenticators
            .read()
            .get(&cluster.cloud())
            .cloned();
        authenticator.map_or(serde_json::Value::Null, |a| a.access_config(cluster))
    }

    /// Creates a cluster. Its CA is made here, so it exists from the first read.
    pub fn create(&self, spec: ClusterSpec) -> Result<ClusterRecord, RegistryError> {
        let now = self.inner.clock.now();
        self.settle(now);
        let key = spec.scope.identity_key();
        if self.find_by_key(&key, &spec.name).is_some() {
            return Err(RegistryError::AlreadyExists(spec.name));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let ca = ClusterCa::generate(&format!("kemu-{}-{}", spec.scope.cloud(), spec.name), now)?;
        let sa_key = ServiceAccountKey::generate()?;
        let (lifecycle, pending) = if spec.provisioning.is_zero() {
            (Lifecycle::Running, None)
        } else {
            (
                Lifecycle::Provisioning,
                Some((now + to_chrono(spec.provisioning), Some(Lifecycle::Running))),
            )
        };
        let record = ClusterRecord {
            id: id.clone(),
            scope: spec.scope,
            name: spec.name,
            version: spec.version,
            lifecycle,
            pending,
            serving: if self.dataplane_attached() {
                Serving::Pending
            } else {
                Serving::Disabled
            },
            port: None,
            ca,
            sa_key,
            node_pools: spec.node_pools,
            tags: spec.tags,
            extra: spec.extra,
            created_at: now,
            updated_at: now,
        };
        {
            let mut clusters = self.inner.clusters.write();
            // Re-check under the write lock: two creates may race.
            if clusters
                .values()
                .any(|c| c.scope.identity_key() == key && c.name == record.name)
            {
                return Err(RegistryError::AlreadyExists(record.name));
            }
            clusters.insert(id.clone(), record);
        }
        self.bind(&id);
        self.get(&id)
    }

    /// The cluster with this id.
    pub fn get(&self, id: &str) -> Result<ClusterRecord, RegistryError> {
        self.settle(self.inner.clock.now());
        self.inner
            .clusters
            .read()
            .get(id)
            .cloned()
            .ok_or_else(|| RegistryError::NotFound(id.to_owned()))
    }

    /// The cluster named `name` in `scope`.
    pub fn find(&self, scope: &OwnerScope, name: &str) -> Result<ClusterRecord, RegistryError> {
        self.settle(self.inner.clock.now());
        self.find_by_key(&scope.identity_key(), name)
            .ok_or_else(|| RegistryError::NotFound(name.to_owned()))
    }

    /// Every cluster `filter` accepts, ordered by scope then name.
    pub fn list(&self, filter: impl Fn(&ClusterRecord) -> bool) -> Vec<ClusterRecord> {
        self.settle(self.inner.clock.now());
        let mut out: Vec<ClusterRecord> = self
            .inner
            .clusters
            .read()
            .values()
            .filter(|c| filter(c))
            .cloned()
            .collect();
        out.sort_by(|a, b| (&a.scope, &a.name).cmp(&(&b.scope, &b.name)));
        out
    }

    /// Every cluster of one cloud.
    pub fn list_cloud(&self, cloud: Cloud) -> Vec<ClusterRecord> {
        self.list(|c| c.cloud() == cloud)
    }

    /// Applies `change` to the cluster and stamps `updated_at`.
    pub fn update<T>(
        &self,
        id: &str,
        change: impl FnOnce(&mut ClusterRecord) -> Result<T, RegistryError>,
    ) -> Result<(T, ClusterRecord), RegistryError> {
        let now = self.inner.clock.now();
        self.settle(now);
        let (out, draft) = {
            let mut clusters = self.inner.clusters.write();
            let record = clusters
                .get_mut(id)
                .ok_or_else(|| RegistryError::NotFound(id.to_owned()))?;
            let mut draft = record.clone();
            let out = change(&mut draft)?;
            draft.updated_at = now;
            *record = draft.clone();
            (out, draft)
        };
        if let Some(dp) = self.inner.dataplane.read().clone() {
            dp.record_changed(&draft);
        }
        Ok((out, draft))
    }

    /// Starts deleting the cluster: it shows `Deleting` for `grace` on the clock,
    /// then disappears and its listener closes. A zero grace removes it at once.
    pub fn delete(&self, id: &str, grace: Duration) -> Result<ClusterRecord, RegistryError> {
        let now = self.inner.clock.now();
        let (_, record) = self.update(id, |c| {
            c.lifecycle = Lifecycle::Deleting;
            c.pending = Some((now + to_chrono(grace), None));
            Ok(())
        })?;
        self.settle(now);
        Ok(record)
    }

    /// Applies every pending transition that is due at `now`.
    fn settle(&self, now: DateTime<Utc>) {
        let due = |c: &ClusterRecord| c.pending.is_some_and(|(at, _)| at <= now);
        if !self.inner.clusters.read().values().any(due) {
            return;
        }
        let mut removed = Vec::new();
        {
            let mut clusters = self.inner.clusters.write();
            clusters.retain(|id, c| match c.pending {
                Some((at, to)) if at <= now => match to {
                    Some(state) => {
                        c.lifecycle = state;
                        c.pending = None;
                        c.updated_at = at;
                        true
                    }
                    None => {
                        removed.push(id.clone());
                        false
                    }
                },
                _ => true,
            });
        }
        if let Some(dp) = self.inner.dataplane.read().clone() {
            for id in removed {
                dp.retire(&id);
            }
        }
    }

    fn find_by_key(&self, key: &str, name: &str) -> Option<ClusterRecord> {
        self.inner
            .clusters
            .read()
            .values()
            .find(|c| c.scope.identity_key() == key && c.name == name)
            .cloned()
    }

    /// Asks the data plane to serve one cluster and records where it does.
    fn bind(&self, id: &str) {
        let Some(dp) = self.inner.dataplane.read().clone() else {
            return;
        };
        let Some(record) = self.inner.clusters.read().get(id).cloned() else {
            return;
        };
        let serving = match dp.serve(&record) {
            Ok((host, port)) => Some((Serving::Live { host, port }, Some(port))),
            Err(e) => {
                tracing::warn!(cluster = %record.name, error = %e, "cluster listener not bound");
                Some((Serving::Pending, record.port))
            }
        };
        if let Some((serving, port)) = serving
            && let Some(c) = self.inner.clusters.write().get_mut(id)
        {
            c.serving = serving;
            c.port = port;
        }
    }
}

/// Every record, CA keys and ports included. Restoring replaces the registry:
/// clusters that are gone are retired (listener closed), the others are served
/// again on the port they had, so their kubeconfigs keep working.
impl Persist for ClusterRegistry {
    fn name(&self) -> &'static str {
        "registry"
    }

    fn snapshot(&self) -> serde_json::Value {
        let clusters = self.inner.clusters.read();
        serde_json::to_value(clusters.values().collect::<Vec<_>>())
            .unwrap_or(serde_json::Value::Null)
    }

    fn restore(&self, state: serde_json::Value) -> Result<(), PersistError> {
        let records: Vec<ClusterRecord> = match state {
            serde_json::Value::Null => Vec::new(),
            state => {
                serde_json::from_value(state).map_err(|e| PersistError::invalid("registry", e))?
            }
        };
        let attached = self.dataplane_attached();
        let ids: Vec<ClusterId> = records.iter().map(|r| r.id.clone()).collect();
        let removed: Vec<ClusterId> = {
            let mut clusters = self.inner.clusters.write();
            let restored: BTreeMap<ClusterId, ClusterRecord> = records
                .into_iter()
                .map(|mut r| {
                    // Where it is served is found again below, on its old port.
                    r.serving = if attached {
                        Serving::Pending
                    } else {
                        Serving::Disabled
                    };
                    (r.id.clone(), r)
                })
                .collect();
            let removed = clusters
                .keys()
                .filter(|id| !restored.contains_key(*id))
                .cloned()
                .collect();
            *clusters = restored;
            removed
        };
        if let Some(dp) = self.inner.dataplane.read().clone() {
            for id in &removed {
                dp.retire(id);
            }
        }
        for id in ids {
            self.bind(&id);
        }
        Ok(())
    }
}

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn spec(name: &str, provisioning: u64) -> ClusterSpec {
        ClusterSpec {
            scope: OwnerScope::Eks {
                account: "000000000000".into(),
                region: "us-east-1".into(),
            },
            name: name.into(),
            version: "1.34".into(),
            node_pools: vec![],
            tags: Default::default(),
            provisioning: Duration::from_secs(provisioning),
            extra: serde_json::Value::Null,
        }
    }

    #[test]
    fn provisioning_and_deletion_follow_the_clock() {
        let clock = FakeClock::at_epoch();
        let reg = ClusterRegistry::new(clock.clone());
        let c = reg.create(spec("a", 30)).unwrap();
        assert_eq!(c.lifecycle, Lifecycle::Provisioning);
        clock.advance(Duration::from_secs(29));
        assert_eq!(reg.get(&c.id).unwrap().lifecycle, Lifecycle::Provisioning);
        clock.advance(Duration::from_secs(1));
        assert_eq!(reg.get(&c.id).unwrap().lifecycle, Lifecycle::Running);
        reg.delete(&c.id, Duration::from_secs(10)).unwrap();
        assert_eq!(reg.get(&c.id).unwrap().lifecycle, Lifecycle::Deleting);
        clock.advance(Duration::from_secs(10));
        assert_eq!(reg.get(&c.id), Err(RegistryError::NotFound(c.id.clone())));
    }

    #[test]
    fn names_are_unique_per_scope() {
        let reg = ClusterRegistry::new(FakeClock::at_epoch());
        reg.create(spec("a", 0)).unwrap();
        assert_eq!(
            reg.create(spec("a", 0)).unwrap_err(),
            RegistryError::AlreadyExists("a".into())
        );
        let mut other = spec("a", 0);
        other.scope = OwnerScope::Eks {
            account: "000000000000".into(),
            region: "eu-west-1".into(),
        };
        reg.create(other).unwrap();
        assert_eq!(reg.list_cloud(Cloud::Eks).len(), 2);
    }

    #[test]
    fn aks_resource_groups_compare_without_case() {
        let reg = ClusterRegistry::new(FakeClock::at_epoch());
        let scope = |rg: &str| OwnerScope::Aks {
            subscription: "S".into(),
            resource_group: rg.into(),
            location: "westeurope".into(),
        };
        let mut s = spec("a", 0);
        s.scope = scope("MyRG");
        reg.create(s).unwrap();
        assert!(reg.find(&scope("myrg"), "a").is_ok());
    }

    #[test]
    fn restore_brings_back_records_with_their_ca() {
        let reg = ClusterRegistry::new(FakeClock::at_epoch());
        let a = reg.create(spec("a", 30)).unwrap();
        let saved = reg.snapshot();
        reg.create(spec("b", 0)).unwrap();
        let other = ClusterRegistry::new(FakeClock::at_epoch());
        other.restore(saved.clone()).unwrap();
        assert_eq!(other.get(&a.id).unwrap(), a);
        reg.restore(saved).unwrap();
        assert_eq!(reg.list(|_| true).len(), 1, "b is gone after the restore");
        assert!(reg.restore(serde_json::json!({"no": 1})).is_err());
    }
}
