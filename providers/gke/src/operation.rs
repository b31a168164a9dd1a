//! Long-running Operations: every mutation returns one; `operations.get`,
//! `list` and `cancel`. An operation is DONE once the clock reaches its end,
//! so with no provisioning delay it is DONE on its first get (gcloud sleeps 5 s
//! between polls, terraform 10 s).

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::error::Error;
use crate::router::{LocationRef, OperationRef};
use crate::wire;

/// `Operation.Type` names kemu emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OpType {
    /// CREATE_CLUSTER.
    CreateCluster,
    /// DELETE_CLUSTER.
    DeleteCluster,
    /// UPGRADE_MASTER.
    UpgradeMaster,
    /// UPGRADE_NODES.
    UpgradeNodes,
    /// UPDATE_CLUSTER.
    UpdateCluster,
    /// CREATE_NODE_POOL.
    CreateNodePool,
    /// DELETE_NODE_POOL.
    DeleteNodePool,
    /// SET_NODE_POOL_MANAGEMENT.
    SetNodePoolManagement,
    /// SET_LABELS.
    SetLabels,
    /// SET_MASTER_AUTH.
    SetMasterAuth,
    /// SET_NODE_POOL_SIZE.
    SetNodePoolSize,
    /// SET_NETWORK_POLICY.
    SetNetworkPolicy,
    /// SET_MAINTENANCE_POLICY.
    SetMaintenancePolicy,
}

impl OpType {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            OpType::CreateCluster => "CREATE_CLUSTER",
            OpType::DeleteCluster => "DELETE_CLUSTER",
            OpType::UpgradeMaster => "UPGRADE_MASTER",
            OpType::UpgradeNodes => "UPGRADE_NODES",
            OpType::UpdateCluster => "UPDATE_CLUSTER",
            OpType::CreateNodePool => "CREATE_NODE_POOL",
            OpType::DeleteNodePool => "DELETE_NODE_POOL",
            OpType::SetNodePoolManagement => "SET_NODE_POOL_MANAGEMENT",
            OpType::SetLabels => "SET_LABELS",
            OpType::SetMasterAuth => "SET_MASTER_AUTH",
            OpType::SetNodePoolSize => "SET_NODE_POOL_SIZE",
            OpType::SetNetworkPolicy => "SET_NETWORK_POLICY",
            OpType::SetMaintenancePolicy => "SET_MAINTENANCE_POLICY",
        }
    }
}

/// One operation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Operation {
    /// Bare id, `operation-…`: gcloud polls `locations/L/operations/{name}`.
    pub id: String,
    /// Project id.
    pub project: String,
    /// Location of the target cluster.
    pub location: String,
    /// What it does.
    pub kind: OpType,
    /// The cluster it acts on.
    pub cluster: String,
    /// The node pool it acts on, if any.
    pub pool: Option<String>,
    /// When it started.
    pub start: DateTime<Utc>,
    /// When it is (or was) done.
    pub end: DateTime<Utc>,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
    /// A note for the user (gcloud prints a DONE create's `detail` as a warning).
    pub detail: String,
}

impl Operation {
    /// Whether the operation is over at `now`.
    pub fn done(&self, now: DateTime<Utc>) -> bool {
        self.end <= now
    }

    /// The Operation resource. `fresh` is the answer to the mutating call
    /// itself, which GKE always reports RUNNING.
    pub fn render(&self, now: DateTime<Utc>, fresh: bool) -> Value {
        let number = wire::project_number(&self.project);
        let base = format!(
            "https://container.googleapis.com/v1/projects/{number}/zones/{}",
            self.location
        );
        let mut target = format!("{base}/clusters/{}", self.cluster);
        if let Some(pool) = &self.pool {
            target.push_str(&format!("/nodePools/{pool}"));
        }
        let done = !fresh && self.done(now);
        let ts = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let mut op = json!({
            "name": self.id,
            "zone": self.location,
            "operationType": self.kind.name(),
            "status": if done { "DONE" } else { "RUNNING" },
            "selfLink": format!("{base}/operations/{}", self.id),
            "targetLink": target,
            "startTime": ts(self.start),
        });
        if !self.detail.is_empty() {
            op["detail"] = json!(self.detail);
        }
        if done {
            op["endTime"] = json!(ts(self.end));
            if let Some(message) = &self.error {
                op["statusMessage"] = json!(message);
                op["error"] = json!({ "code": 1, "message": message });
            }
        }
        op
    }
}

/// Every operation of the facade, oldest first.
#[derive(Debug, Default)]
pub struct Operations {
    ops: Mutex<Vec<Operation>>,
    mutations: Mutex<()>,
}

impl Operations {
    /// Held by every mutation from its checks to its operation's start, so two
    /// concurrent changes of one cluster cannot both pass the busy check.
    pub fn serialize(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.mutations.lock()
    }

    /// Every operation, oldest first.
    pub fn all(&self) -> Vec<Operation> {
        self.ops.lock().clone()
    }

    /// Replaces every operation (restore, reset).
    pub fn replace(&self, ops: Vec<Operation>) {
        *self.ops.lock() = ops;
    }

    /// Records an operation.
    pub fn push(&self, op: Operation) {
        self.ops.lock().push(op);
    }

    /// An unfinished operation on `cluster`, if any.
    pub fn busy(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        now: DateTime<Utc>,
    ) -> Option<String> {
        self.ops
            .lock()
            .iter()
            .find(|o| {
                o.project == project
                    && o.location == location
                    && o.cluster == cluster
                    && !o.done(now)
            })
            .map(|o| o.id.clone())
    }

    /// `operations.get`.
    pub fn get(&self, r: &OperationRef) -> Result<Operation, Error> {
        self.ops
            .lock()
            .iter()
            .find(|o| {
                o.id == r.id && o.project == r.parent.project && o.location == r.parent.location
            })
            .cloned()
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "Not found: projects/{}/locations/{}/operations/{}.",
                    r.parent.project, r.parent.location, r.id
                ))
            })
    }

    /// `operations.list`; location `-` lists every location.
    pub fn list(&self, at: &LocationRef) -> Vec<Operation> {
        self.ops
            .lock()
            .iter()
            .filter(|o| {
                o.project == at.project && (at.location == "-" || o.location == at.location)
            })
            .cloned()
            .collect()
    }

    /// `operations.cancel`: a running operation ends now, cancelled.
    pub fn cancel(&self, r: &OperationRef, now: DateTime<Utc>) -> Result<(), Error> {
        let mut ops = self.ops.lock();
        let op = ops
            .iter_mut()
            .find(|o| {
                o.id == r.id && o.project == r.parent.project && o.location == r.parent.location
            })
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "Not found: projects/{}/locations/{}/operations/{}.",
                    r.parent.project, r.parent.location, r.id
                ))
            })?;
        if op.done(now) {
            return Err(Error::FailedPrecondition(format!(
                "Operation {} is already done and cannot be cancelled.",
                r.id
            )));
        }
        op.end = now;
        op.error = Some("Operation was cancelled.".into());
        Ok(())
    }
}
