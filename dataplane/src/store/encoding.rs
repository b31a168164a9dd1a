//! The JSON of an object kept encoded ([`super::Stored::Encoded`]), made
//! before its write takes the store's lock: all but the resourceVersion,
//! which only the write knows and which is spliced in under the lock.

use serde_json::{Value, json};

/// An object's JSON, but for the value of `metadata.resourceVersion`.
#[derive(Debug)]
pub(super) struct Encoding {
    json: Vec<u8>,
    /// Where the resourceVersion's value goes.
    rv_at: usize,
}

/// The resourceVersion written while encoding, cut out afterwards: a value
/// no object holds, so its one occurrence marks where the real one goes.
const MARK: &str = "kemu:resourceVersion:placeholder";

impl Encoding {
    /// Encodes `object` as kube-apiserver writes it, giving it a
    /// `metadata.resourceVersion` to be filled in if it has none, so the key
    /// is in its place; `None` if it is not an object with an object
    /// `metadata`.
    pub(super) fn of(object: &mut Value) -> Option<Self> {
        let meta = object.get_mut("metadata")?.as_object_mut()?;
        let kept = meta.insert("resourceVersion".into(), json!(MARK));
        let mut json = crate::api::wire::to_vec(object);
        let meta = object.get_mut("metadata")?.as_object_mut()?;
        meta.insert("resourceVersion".into(), kept.unwrap_or_else(|| json!("")));
        let quoted = format!("\"{MARK}\"");
        let at = memchr::memmem::find(&json, quoted.as_bytes())?;
        json.drain(at..at + quoted.len());
        Some(Self { json, rv_at: at })
    }

    /// The JSON but for the resourceVersion's value, and where that goes.
    pub(super) fn parts(&self) -> (&[u8], usize) {
        (&self.json, self.rv_at)
    }

    /// Its size once its resourceVersion is in, at most.
    pub(super) fn max_len(&self) -> usize {
        // A quoted u64.
        self.json.len() + 22
    }

    /// The JSON with `rv` in, in an allocation of exactly its size.
    pub(super) fn finish(&self, rv: u64) -> bytes::Bytes {
        splice(&self.json, self.rv_at, rv)
    }
}

/// `json` with `rv`, quoted, put in at `at`, in an allocation of exactly its
/// size.
pub(super) fn splice(json: &[u8], at: usize, rv: u64) -> bytes::Bytes {
    let rv = rv.to_string();
    let mut out = Vec::with_capacity(json.len() + rv.len() + 2);
    out.extend_from_slice(&json[..at]);
    out.push(b'"');
    out.extend_from_slice(rv.as_bytes());
    out.push(b'"');
    out.extend_from_slice(&json[at..]);
    bytes::Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_the_objects_once_its_resource_version_is_in() {
        for mut object in [
            json!({"apiVersion": "v1", "kind": "Event", "count": 2, "reason": "Started",
                   "metadata": {"name": "e", "namespace": "ns", "uid": "u", "annotations": {"a": "\"b\""}},
                   "involvedObject": {"kind": "Pod", "name": "p"}}),
            json!({"metadata": {"resourceVersion": "7", "name": "e"}, "message": "ünïcode"}),
            json!({"metadata": {}}),
            json!({"zzz": 1, "metadata": {"zzz": 2}}),
        ] {
            let encoding = Encoding::of(&mut object).unwrap();
            object["metadata"]["resourceVersion"] = json!("12345");
            let json = encoding.finish(12345);
            assert_eq!(*json, crate::api::wire::to_vec(&object)[..]);
            assert!(encoding.max_len() >= json.len());
        }
        assert!(Encoding::of(&mut json!({"metadata": "x"})).is_none());
        assert!(Encoding::of(&mut json!([1])).is_none());
    }
}
