//! The facade's own state, its long-running operations and the projects'
//! IAM policies, as one JSON value for
//! kemu's state directory, snapshots and reset. (A cluster's GKE settings live
//! in its shared record's `extra`, persisted with the registry.)

use kemu_shared::{Persist, PersistError};

use crate::Gke;
use crate::operation::Operation;

impl Persist for Gke {
    fn name(&self) -> &'static str {
        "gke"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "operations": self.operations.all(),
            "iamPolicies": self.tokens.iam().snapshot(),
        })
    }

    fn restore(&self, state: serde_json::Value) -> Result<(), PersistError> {
        let ops: Vec<Operation> = match state.get("operations") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(ops) => {
                serde_json::from_value(ops.clone()).map_err(|e| PersistError::invalid("gke", e))?
            }
        };
        let iam = match state.get("iamPolicies") {
            None | Some(serde_json::Value::Null) => Default::default(),
            Some(saved) => serde_json::from_value(saved.clone())
                .map_err(|e| PersistError::invalid("gke", e))?,
        };
        self.operations.replace(ops);
        self.tokens.iam().restore(iam);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kemu_shared::{ClusterRegistry, FakeClock};

    #[test]
    fn operations_round_trip() {
        let gke = Gke::new(ClusterRegistry::new(FakeClock::at_epoch()));
        let saved = serde_json::json!({"operations": [{
            "id": "operation-1", "project": "p", "location": "us-central1-a",
            "kind": "CreateCluster", "cluster": "c", "pool": null,
            "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z",
            "error": null, "detail": ""
        }], "iamPolicies": {}});
        gke.restore(saved.clone()).unwrap();
        assert_eq!(gke.snapshot(), saved);
        assert!(gke.restore(serde_json::json!({"operations": 3})).is_err());
    }
}
