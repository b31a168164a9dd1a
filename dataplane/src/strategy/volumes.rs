//! PersistentVolumes and PersistentVolumeClaims: their defaults, and the
//! status upstream's strategies give a new one: `Pending` (a volume also
//! records when it entered that phase).

use serde_json::{Value, json};

use super::{Context, Defaults, Strategy, defaults};
use crate::error::ApiError;
use crate::resources::ResourceType;

/// PersistentVolumes and PersistentVolumeClaims.
#[derive(Debug)]
pub struct VolumeStrategy;

impl Strategy for VolumeStrategy {
    fn defaults(&self, rt: &ResourceType, object: &mut Value) {
        Defaults(defaults::default_object).defaults(rt, object);
    }

    fn prepare_create(
        &self,
        ctx: &Context<'_>,
        rt: &ResourceType,
        _name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        if object.is_object() {
            object["status"] = if rt.kind == "PersistentVolume" {
                let now = ctx.now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                json!({"phase": "Pending", "lastPhaseTransitionTime": now})
            } else {
                json!({"phase": "Pending"})
            };
        }
        Ok(())
    }
}
