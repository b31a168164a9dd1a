//! Namespaces: upstream's `namespaceStrategy` keeps `spec.finalizers` on
//! update; only the `/finalize` subresource changes them.

use serde_json::Value;

use super::{Context, Defaults, Strategy, defaults};
use crate::error::ApiError;
use crate::resources::ResourceType;

/// A Namespace: its defaults, and `spec.finalizers` changed only through
/// `/finalize` (upstream's `namespaceStrategy.PrepareForUpdate`).
#[derive(Debug)]
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        Defaults(defaults::default_object).defaults(rt, object);
    }

    fn prepare_update(
        &self,
        _ctx: &Context<'_>,
        _rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if !new.is_object() {
            return Ok(());
        }
        match old["spec"].get("finalizers") {
            Some(f) if new["spec"].is_object() || new["spec"].is_null() => {
                new["spec"]["finalizers"] = f.clone();
            }
            _ => {
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            }
        }
        Ok(())
    }
}
