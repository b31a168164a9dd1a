//! `dryRun=All`: a [`Store`] view that checks writes as the real store would
//! (existence, namespace, resourceVersion, delete preconditions) and answers
//! what would be stored — a create with its uid and creationTimestamp, a delete
//! with its deletionTimestamp — without storing anything, bumping no
//! resourceVersion and telling no watcher.

use std::sync::Arc;

use chrono::SecondsFormat;
use kemu_shared::SharedClock;
use serde_json::{Value, json};

use super::deletion::{self, Plan};
use super::{
    DeleteOptions, DeleteStrategy, Deleted, NAMESPACES, Object, ObjectKey, Preconditions, Snapshot,
    Store, Subscription, WatchFrom,
};
use crate::error::{ApiError, Target};

/// Reads go to the inner store; writes change nothing.
#[derive(Debug)]
pub struct DryRun(pub Arc<dyn Store>, pub SharedClock);

impl DryRun {
    fn timestamp(&self) -> String {
        self.1.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

fn target(key: &ObjectKey) -> Target {
    let (kind, group) = super::split_group_resource(&key.resource);
    Target {
        name: key.name.clone(),
        group: group.to_owned(),
        kind: kind.to_owned(),
    }
}

impl Store for DryRun {
    fn resource_version(&self) -> u64 {
        self.0.resource_version()
    }

    fn get(&self, key: &ObjectKey) -> Option<Object> {
        self.0.get(key)
    }

    fn snapshot(&self, resource: &str) -> Snapshot {
        self.0.snapshot(resource)
    }

    fn snapshot_at(&self, resource: &str, rv: u64) -> Result<Snapshot, ApiError> {
        self.0.snapshot_at(resource, rv)
    }

    fn retain_snapshot(&self, resource: &str, snapshot: &Snapshot) {
        self.0.retain_snapshot(resource, snapshot);
    }

    fn create(&self, key: &ObjectKey, mut object: Value) -> Result<Object, ApiError> {
        if !key.namespace.is_empty()
            && self
                .0
                .get(&ObjectKey::new(NAMESPACES, "", &key.namespace))
                .is_none()
        {
            return Err(ApiError::ObjectNotFound(Target {
                name: key.namespace.clone(),
                group: String::new(),
                kind: NAMESPACES.into(),
            }));
        }
        if self.0.get(key).is_some() {
            return Err(ApiError::AlreadyExists(target(key)));
        }
        // What the store would stamp, but no resourceVersion: nothing is stored.
        object["metadata"]["name"] = json!(key.name);
        if !key.namespace.is_empty() {
            object["metadata"]["namespace"] = json!(key.namespace);
        }
        object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
        object["metadata"]["creationTimestamp"] = json!(self.timestamp());
        if super::tracks_generation(&key.resource) {
            object["metadata"]["generation"] = json!(1);
        } else if let Some(m) = object["metadata"].as_object_mut() {
            m.remove("generation");
        }
        if key.resource == NAMESPACES {
            // The namespace registry's create defaults, as the store applies them.
            if !object["metadata"]["labels"].is_object() {
                object["metadata"]["labels"] = json!({});
            }
            object["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(key.name);
            object["spec"] = json!({"finalizers": ["kubernetes"]});
            object["status"] = json!({"phase": "Active"});
        }
        if let Some(m) = object["metadata"].as_object_mut() {
            for field in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                m.remove(field);
            }
        }
        Ok(Arc::new(object))
    }

    fn update(
        &self,
        key: &ObjectKey,
        mut object: Value,
        pre: &Preconditions,
    ) -> Result<Object, ApiError> {
        let current = self
            .0
            .get(key)
            .ok_or_else(|| ApiError::ObjectNotFound(target(key)))?;
        let rv = current["metadata"]["resourceVersion"].clone();
        let stale = pre
            .resource_version
            .as_deref()
            .is_some_and(|p| Some(p) != rv.as_str())
            || object["metadata"]["resourceVersion"]
                .as_str()
                .is_some_and(|p| !p.is_empty() && Some(p) != rv.as_str());
        if stale {
            return Err(ApiError::Conflict {
                target: target(key),
                message: "the object has been modified; please apply your changes to the latest version and try again".into(),
            });
        }
        let generation = super::next_generation(&key.resource, &current, &object);
        for field in [
            "uid",
            "creationTimestamp",
            "generation",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match current["metadata"].get(field) {
                Some(v) => object["metadata"][field] = v.clone(),
                None => {
                    if let Some(m) = object["metadata"].as_object_mut() {
                        m.remove(field);
                    }
                }
            }
        }
        // What the store would answer.
        match generation {
            Some(g) => object["metadata"]["generation"] = json!(g),
            None => {
                if let Some(m) = object["metadata"].as_object_mut() {
                    m.remove("generation");
                }
            }
        }
        Ok(Arc::new(object))
    }

    fn delete_with(
        &self,
        key: &ObjectKey,
        strategy: &DeleteStrategy,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let current = self
            .0
            .get(key)
            .ok_or_else(|| ApiError::ObjectNotFound(target(key)))?;
        Ok(
            match deletion::plan(strategy, &current, opts, self.1.now())? {
                Plan::Keep {
                    already_pending: true,
                } => Deleted::AlreadyPending(current),
                Plan::Keep {
                    already_pending: false,
                } => Deleted::Pending(current),
                Plan::Write(next) => Deleted::Pending(Arc::new(next)),
                // Upstream answers the terminating state it computed, if any.
                Plan::Remove { update: Some(next) } => Deleted::Now(Arc::new(next)),
                Plan::Remove { update: None } => Deleted::Now(current),
            },
        )
    }

    fn watch(&self, resource: &str, from: WatchFrom) -> Result<Subscription, ApiError> {
        self.0.watch(resource, from)
    }
}
