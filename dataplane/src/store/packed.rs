//! How an object kept encoded ([`super::Stored::Encoded`]) is held: its JSON
//! compressed (LZ4) against the JSON of a similar object, a dictionary shared
//! by its family (the Pods of one ReplicaSet, the Events of one reason in a
//! namespace). Pods of one template differ in a few names, addresses and
//! times: a 2.9 KB Pod packs into well under 100 bytes.
//!
//! The resourceVersion is held apart, so an object is packed before its write
//! takes the store's lock, and numbered under it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;

use super::encoding::{Encoding, splice};

/// A family changes dictionary when one of its objects packs worse than
/// this share of its size.
const REPACK_ABOVE: usize = 2;

/// Dictionaries kept per store before the oldest families are forgotten (their
/// objects keep theirs).
const FAMILIES: usize = 4096;

/// An object's JSON, compressed.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The JSON but for the resourceVersion's value, compressed.
    data: Bytes,
    /// `data`'s size uncompressed.
    len: u32,
    /// Where the resourceVersion's value goes; `None` for JSON held whole.
    rv_at: Option<u32>,
    rv: u64,
    dict: Arc<[u8]>,
    /// The value as written or last decoded, while anyone still holds it (a
    /// watcher, an informer, a controller about to write it back): a read
    /// takes it instead of decoding. Shared by every clone (the store's map
    /// and the informer's cache hold the same packing).
    decoded: Arc<Mutex<Weak<serde_json::Value>>>,
}

impl Packed {
    /// Packs whole JSON (with its resourceVersion in), without a dictionary.
    pub fn whole(json: &[u8]) -> Self {
        Self {
            data: exact(lz4_flex::block::compress(json)),
            len: json.len() as u32,
            rv_at: None,
            rv: 0,
            dict: Arc::from(&[][..]),
            decoded: Arc::default(),
        }
    }

    fn of(encoding: &Encoding, dict: Arc<[u8]>) -> Self {
        let (json, rv_at) = encoding.parts();
        Self {
            data: exact(lz4_flex::block::compress_with_dict(json, &dict)),
            len: json.len() as u32,
            rv_at: Some(rv_at as u32),
            rv: 0,
            dict,
            decoded: Arc::default(),
        }
    }

    /// The same, numbered `rv` (the write's resourceVersion), as `written`.
    pub(super) fn numbered(mut self, rv: u64, written: &Arc<serde_json::Value>) -> Self {
        self.rv = rv;
        self.decoded = Arc::new(Mutex::new(Arc::downgrade(written)));
        self
    }

    /// The value, if it is still held decoded somewhere.
    pub fn decoded(&self) -> Option<Arc<serde_json::Value>> {
        self.decoded.lock().upgrade()
    }

    /// Notes `value` as this packing decoded, for the next read.
    pub fn remember(&self, value: &Arc<serde_json::Value>) {
        *self.decoded.lock() = Arc::downgrade(value);
    }

    /// The JSON, unpacked.
    pub fn json(&self) -> Bytes {
        let json = lz4_flex::block::decompress_with_dict(&self.data, self.len as usize, &self.dict)
            .unwrap_or_else(|e| {
                // Only ever holds what `of` or `whole` packed.
                tracing::error!(error = %e, "packed JSON does not unpack");
                Vec::new()
            });
        match self.rv_at.map(|a| a as usize).filter(|a| *a <= json.len()) {
            Some(at) => splice(&json, at, self.rv),
            None => Bytes::from(json),
        }
    }

    /// The value: as still held somewhere, or decoded afresh.
    pub fn value(&self) -> Arc<serde_json::Value> {
        self.decoded().unwrap_or_else(|| self.decode(&self.json()))
    }

    /// Decodes `json` (this packing's, unpacked), remembering the value for
    /// the next read.
    pub fn decode(&self, json: &[u8]) -> Arc<serde_json::Value> {
        let value = Arc::new(super::decode(json));
        self.remember(&value);
        value
    }

    /// Whether both are the very same packing (not merely equal JSON).
    pub fn same(&self, other: &Packed) -> bool {
        self.data.as_ptr() == other.data.as_ptr()
            && self.data.len() == other.data.len()
            && self.rv == other.rv
    }

    /// The bytes it takes (its dictionary's aside).
    pub fn size(&self) -> usize {
        self.data.len()
    }
}

/// `packed` in an allocation of exactly its size: the compressor allocates
/// for the worst case, some 40 times what a sibling Pod packs into.
fn exact(packed: Vec<u8>) -> Bytes {
    Bytes::from(packed.into_boxed_slice())
}

/// One store's dictionaries, one per family of similar objects.
#[derive(Debug, Default)]
pub(super) struct Dictionaries {
    families: Mutex<HashMap<String, Arc<[u8]>>>,
}

impl Dictionaries {
    /// Packs `encoding` with its family's dictionary; an object that packs
    /// poorly with it becomes the family's dictionary.
    pub(super) fn pack(&self, family: &str, encoding: &Encoding) -> Packed {
        let dict = self.families.lock().get(family).cloned();
        if let Some(dict) = dict {
            let packed = Packed::of(encoding, dict);
            if packed.size() * REPACK_ABOVE <= packed.len as usize {
                return packed;
            }
        }
        let dict: Arc<[u8]> = Arc::from(encoding.parts().0);
        let mut families = self.families.lock();
        if families.len() >= FAMILIES && !families.contains_key(family) {
            families.clear();
        }
        families.insert(family.to_owned(), dict.clone());
        drop(families);
        Packed::of(encoding, dict)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, ip: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "generateName": "web-7d9c6b5f4-", "namespace": "default",
                            "labels": {"app": "web", "pod-template-hash": "7d9c6b5f4"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                                        "resources": {"requests": {"cpu": "10m"}}}],
                        "nodeName": "node-1", "restartPolicy": "Always"},
               "status": {"phase": "Running", "podIP": ip, "message": "ünïcode \"quoted\""}})
    }

    #[test]
    fn what_is_packed_unpacks_to_the_objects_json_and_siblings_pack_small() {
        let dicts = Dictionaries::default();
        let mut first = pod("web-7d9c6b5f4-aaaaa", "10.244.0.1");
        let mut second = pod("web-7d9c6b5f4-bbbbb", "10.244.0.2");
        let mut packs = Vec::new();
        for (object, rv) in [(&mut first, 7), (&mut second, 12345)] {
            let encoding = Encoding::of(object).unwrap();
            object["metadata"]["resourceVersion"] = json!(rv.to_string());
            let written = Arc::new(object.clone());
            let packed = dicts
                .pack("pods/default/web-7d9c6b5f4-", &encoding)
                .numbered(rv, &written);
            assert!(packed.decoded().is_some_and(|d| Arc::ptr_eq(&d, &written)));
            assert_eq!(*packed.json(), crate::api::wire::to_vec(object)[..]);
            packs.push(packed);
        }
        let alone = Packed::whole(&serde_json::to_vec(&second).unwrap());
        assert!(
            packs[1].size() * 4 < alone.size(),
            "a sibling packs against the first: {} bytes, against {} alone",
            packs[1].size(),
            alone.size()
        );
        assert!(packs[0].same(&packs[0].clone()) && !packs[0].same(&packs[1]));

        let whole = serde_json::to_vec(&first).unwrap();
        assert_eq!(*Packed::whole(&whole).json(), whole[..]);
    }
}
