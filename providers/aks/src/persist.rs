//! The facade's own state (resource groups, long-running operations, the
//! object id of each principal, the tokens it minted, role assignments) as one JSON value, for
//! kemu's state directory, snapshots and reset. The minted tokens are kept so
//! the kubeconfigs `az aks get-credentials` wrote keep working after a restart.

use std::collections::{BTreeMap, HashMap, HashSet};

use kemu_shared::{Persist, PersistError};
use serde::{Deserialize, Serialize};

use crate::Aks;
use crate::state::{Operation, ResourceGroup};

#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Saved {
    /// Resource groups; the map key is derived again from each group.
    groups: Vec<ResourceGroup>,
    operations: HashMap<String, Operation>,
    object_ids: HashMap<String, String>,
    issued: HashSet<String>,
    #[serde(default)]
    role_assignments: BTreeMap<String, serde_json::Value>,
}

impl Persist for Aks {
    fn name(&self) -> &'static str {
        "aks"
    }

    fn snapshot(&self) -> serde_json::Value {
        let saved = Saved {
            groups: self.state.groups.lock().values().cloned().collect(),
            operations: self.state.operations.lock().clone(),
            object_ids: self.state.object_ids.lock().clone(),
            issued: self.state.issued.lock().clone(),
            role_assignments: self.state.role_assignments.lock().clone(),
        };
        serde_json::to_value(saved).unwrap_or(serde_json::Value::Null)
    }

    fn restore(&self, state: serde_json::Value) -> Result<(), PersistError> {
        let saved: Saved = match state {
            serde_json::Value::Null => Saved::default(),
            state => serde_json::from_value(state).map_err(|e| PersistError::invalid("aks", e))?,
        };
        let groups: BTreeMap<_, _> = saved
            .groups
            .into_iter()
            .map(|g| (crate::state::group_key(&g.subscription, &g.name), g))
            .collect();
        *self.state.groups.lock() = groups;
        *self.state.operations.lock() = saved.operations;
        *self.state.object_ids.lock() = saved.object_ids;
        *self.state.issued.lock() = saved.issued;
        *self.state.role_assignments.lock() = saved.role_assignments;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::{ClusterRegistry, FakeClock};

    #[test]
    fn state_round_trips() {
        let aks = Aks::new(ClusterRegistry::new(FakeClock::at_epoch()));
        let saved = serde_json::json!({
            "groups": [{"subscription": "S", "name": "MyRG", "location": "westeurope",
                        "tags": {}, "managed_by": null}],
            "operations": {}, "object_ids": {"app": "oid"}, "issued": ["uti-1"],
            "role_assignments": {"/subscriptions/s/providers/microsoft.authorization/roleassignments/a": {"name": "a"}}
        });
        aks.restore(saved.clone()).unwrap();
        assert_eq!(aks.snapshot(), saved);
        assert!(
            aks.state
                .groups
                .lock()
                .contains_key(&("s".into(), "myrg".into()))
        );
        assert!(aks.restore(serde_json::json!({"groups": 1})).is_err());
    }
}
