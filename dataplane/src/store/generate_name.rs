//! Creates with `metadata.generateName`: a generated name that is taken is
//! generated again inside the server, as kube-apiserver does since 1.32
//! (RetryGenerateName), instead of answering 409 AlreadyExists.

use serde_json::{Value, json};

use super::{Object, ObjectKey, Store};
use crate::error::ApiError;

/// Attempts before a collision is the answer (upstream's
/// `maxNameGenerationCreateAttempts`).
pub const MAX_ATTEMPTS: usize = 8;

/// Creates `object` under `key`, whose name is `prefix` and a generated
/// suffix; while that name is taken, tries `prefix` and a new `suffix()`.
pub fn create_generated(
    store: &dyn Store,
    mut key: ObjectKey,
    mut object: Value,
    prefix: &str,
    mut suffix: impl FnMut() -> String,
) -> Result<Object, ApiError> {
    let mut attempt = 1;
    loop {
        match store.create(&key, object.clone()) {
            Err(ApiError::AlreadyExists(_)) if attempt < MAX_ATTEMPTS => {
                attempt += 1;
                key.name = format!("{prefix}{}", suffix());
                object["metadata"]["name"] = json!(key.name);
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, StoreLimits};
    use kemu_shared::FakeClock;

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "generateName": "web-"}})
    }

    fn taken(store: &MemoryStore, names: &[&str]) {
        for n in names {
            store
                .create(&ObjectKey::new("configmaps", "default", n), cm(n))
                .unwrap();
        }
    }

    #[test]
    fn a_taken_generated_name_is_generated_again() {
        let store = MemoryStore::new(FakeClock::at_epoch(), StoreLimits::default());
        taken(&store, &["web-aaaaa", "web-bbbbb"]);
        let mut next = ["bbbbb", "ccccc"].into_iter().map(str::to_owned);
        let key = ObjectKey::new("configmaps", "default", "web-aaaaa");
        let made = create_generated(&store, key, cm("web-aaaaa"), "web-", || {
            next.next().unwrap()
        })
        .unwrap();
        assert_eq!(made["metadata"]["name"], "web-ccccc");
        assert!(
            store
                .get(&ObjectKey::new("configmaps", "default", "web-ccccc"))
                .is_some()
        );
    }

    #[test]
    fn eight_collisions_are_the_answer() {
        let store = MemoryStore::new(FakeClock::at_epoch(), StoreLimits::default());
        taken(&store, &["web-a"]);
        let before = store.resource_version();
        let mut tries = 0;
        let key = ObjectKey::new("configmaps", "default", "web-a");
        let err = create_generated(&store, key, cm("web-a"), "web-", || {
            tries += 1;
            "a".to_owned()
        })
        .unwrap_err();
        assert!(matches!(err, ApiError::AlreadyExists(_)), "{err:?}");
        assert_eq!(tries, MAX_ATTEMPTS - 1);
        assert_eq!(store.resource_version(), before, "nothing stored");
    }
}
