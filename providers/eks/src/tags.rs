//! TagResource, UntagResource, ListTagsForResource: by ARN, for clusters and
//! every sub-resource that has one. An unknown ARN is NotFoundException (the
//! tag APIs' own code), a malformed one BadRequestException.

use std::collections::BTreeMap;

use kemu_shared::OwnerScope;
use serde_json::{Value, json};

use crate::error::Error;
use crate::state::Kind;
use crate::{Call, Eks};

/// Applies `f` to the tags of the resource named by `arn`.
fn with_tags<T>(
    eks: &Eks,
    arn: &str,
    f: impl FnOnce(&mut BTreeMap<String, String>) -> Result<T, Error>,
) -> Result<T, Error> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [_, _, "eks", region, account, resource] = parts.as_slice() else {
        return Err(Error::BadRequest(format!(
            "{arn} is not a valid EKS resource ARN."
        )));
    };
    let missing = || Error::NotFound(format!("Resource {arn} was not found."));
    if let Some(name) = resource.strip_prefix("cluster/") {
        let scope = OwnerScope::Eks {
            account: (*account).to_owned(),
            region: (*region).to_owned(),
        };
        let record = eks.registry().find(&scope, name).map_err(|_| missing())?;
        let mut tags = record.tags.clone();
        let out = f(&mut tags)?;
        eks.registry().update(&record.id, |c| {
            c.tags = tags;
            Ok(())
        })?;
        return Ok(out);
    }
    if resource.starts_with("eks-anywhere-subscription/") {
        let mut subs = eks.state.subscriptions.lock();
        let item = subs
            .values_mut()
            .find(|i| i.obj.get("arn").and_then(Value::as_str) == Some(arn))
            .ok_or_else(missing)?;
        let mut tags = item.tags();
        let out = f(&mut tags)?;
        item.set_tags(&tags);
        return Ok(out);
    }
    let mut clusters = eks.state.clusters.lock();
    for cs in clusters.values_mut() {
        for kind in Kind::ALL {
            let field = kind.arn_field();
            if let Some(item) = cs
                .of(kind)
                .values_mut()
                .find(|i| i.obj.get(field).and_then(Value::as_str) == Some(arn))
            {
                let mut tags = item.tags();
                let out = f(&mut tags)?;
                item.set_tags(&tags);
                return Ok(out);
            }
        }
    }
    Err(missing())
}

/// TagResource.
pub fn tag(eks: &Eks, call: &Call, arn: &str) -> Result<Value, Error> {
    let new = call
        .body
        .string_map("tags")
        .map_err(|e| Error::BadRequest(e.to_string()))?;
    if new.is_empty() {
        return Err(Error::BadRequest("tags must name at least one tag.".into()));
    }
    if new.keys().any(|k| k.starts_with("aws:")) {
        return Err(Error::BadRequest(
            "Tag keys starting with aws: are reserved.".into(),
        ));
    }
    with_tags(eks, arn, |tags| {
        if tags.len() + new.keys().filter(|k| !tags.contains_key(*k)).count() > 50 {
            return Err(Error::BadRequest(
                "A resource can have at most 50 tags.".into(),
            ));
        }
        tags.extend(new);
        Ok(json!({}))
    })
}

/// UntagResource: `?tagKeys=a&tagKeys=b`.
pub fn untag(eks: &Eks, call: &Call, arn: &str) -> Result<Value, Error> {
    let keys = call.query.all("tagKeys").to_vec();
    if keys.is_empty() {
        return Err(Error::BadRequest(
            "tagKeys must name at least one key.".into(),
        ));
    }
    with_tags(eks, arn, |tags| {
        tags.retain(|k, _| !keys.contains(k));
        Ok(json!({}))
    })
}

/// ListTagsForResource.
pub fn list(eks: &Eks, _call: &Call, arn: &str) -> Result<Value, Error> {
    with_tags(eks, arn, |tags| Ok(json!({ "tags": tags })))
}
