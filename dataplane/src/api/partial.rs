//! `as=PartialObjectMetadata` and `as=PartialObjectMetadataList`: objects
//! answered as their metadata only (controller-runtime's metadata-only
//! clients and informers), in `meta.k8s.io/v1` or `v1beta1`.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceType;

/// What an Accept asking for metadata only asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// `PartialObjectMetadataList` (else `PartialObjectMetadata`).
    pub list: bool,
    /// `v1` or `v1beta1`.
    pub version: &'static str,
}

/// The first media range of `accept` asking for metadata only, in a
/// version served.
pub fn wanted(accept: &str) -> Option<Metadata> {
    accept.split(',').find_map(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        let list = if params.contains(&"as=PartialObjectMetadataList") {
            true
        } else if params.contains(&"as=PartialObjectMetadata") {
            false
        } else {
            return None;
        };
        let version = if params.contains(&"v=v1") {
            "v1"
        } else if params.contains(&"v=v1beta1") {
            "v1beta1"
        } else {
            return None;
        };
        params
            .contains(&"g=meta.k8s.io")
            .then_some(Metadata { list, version })
    })
}

impl Metadata {
    /// `object` as a `PartialObjectMetadata`.
    pub fn of(&self, object: &Value) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": format!("meta.k8s.io/{}", self.version),
            "metadata": object["metadata"],
        })
    }

    /// The list kind's `apiVersion`.
    pub fn api_version(&self) -> String {
        format!("meta.k8s.io/{}", self.version)
    }

    /// Refuses the answer's shape when it is not the one asked for, as
    /// upstream words it: a single object for a list, or the reverse.
    pub fn check(&self, rt: &ResourceType, is_list: bool) -> Result<(), ApiError> {
        if self.list == is_list {
            return Ok(());
        }
        let go_type = go_type(rt, is_list);
        let message = if self.list {
            format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
            )
        } else {
            format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({go_type})"
            )
        };
        Err(ApiError::Refused(Box::new(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "NotAcceptable", "code": 406,
        }))))
    }
}

/// The Go type upstream names in its refusal: the internal package of the
/// group (`core`, `apps`, `networking`…), or unstructured for custom resources.
fn go_type(rt: &ResourceType, list: bool) -> String {
    if rt.custom.is_some() {
        return format!(
            "*unstructured.Unstructured{}",
            if list { "List" } else { "" }
        );
    }
    let package = match rt.group.split('.').next().unwrap_or_default() {
        "" => "core",
        p => p,
    };
    let kind = if list { &rt.list_kind } else { &rt.kind };
    format!("*{package}.{kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_name_the_view() {
        assert_eq!(
            wanted(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
            Some(Metadata {
                list: true,
                version: "v1"
            })
        );
        assert_eq!(
            wanted("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
            Some(Metadata {
                list: false,
                version: "v1beta1"
            })
        );
        assert_eq!(
            wanted("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2"),
            None
        );
        assert_eq!(wanted("application/json"), None);
    }
}
