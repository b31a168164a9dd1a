//! What each running container uses, synthetically: by default half of its
//! request (a small constant without one), or what a documented annotation
//! says, on the Pod or on the workload that owns it (its ReplicaSet, the
//! ReplicaSet's Deployment, a StatefulSet, DaemonSet or Job):
//!
//! | annotation | value |
//! |---|---|
//! | `kemu.dev/cpu-usage` | per container: a quantity (`250m`) or a share of the request (`80%`) |
//! | `kemu.dev/memory-usage` | per container: a quantity (`300Mi`) or a share of the request (`50%`) |
//!
//! Changing the annotation on a Deployment changes its Pods' metrics at once,
//! with no rollout, so a test can drive a HorizontalPodAutoscaler.

use serde_json::Value;

use crate::controllers::obj;

/// CPU usage annotation.
pub const CPU_USAGE: &str = "kemu.dev/cpu-usage";
/// Memory usage annotation.
pub const MEMORY_USAGE: &str = "kemu.dev/memory-usage";

/// Usage without a request: an idle process (1m cpu is 1,000,000n).
const IDLE_CPU_MILLI: i128 = 2;
const IDLE_MEMORY_BYTES: i128 = 8 * 1024 * 1024;
/// What a Node's system daemons use besides Pods.
const NODE_SYSTEM_CPU_MILLI: i128 = 60;
const NODE_SYSTEM_MEMORY_BYTES: i128 = 450 * 1024 * 1024;

/// The annotations that set usage for a Pod, read from the Pod or its owners.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `kemu.dev/cpu-usage`.
    pub cpu: Option<String>,
    /// `kemu.dev/memory-usage`.
    pub memory: Option<String>,
}

impl Overrides {
    /// The overrides of `pod`: its own annotations, else its controller's,
    /// else that controller's controller; `owner` finds an object by
    /// (kind, namespace, name).
    pub fn of(pod: &Value, owner: &dyn Fn(&str, &str, &str) -> Option<Value>) -> Self {
        let mut out = Self::default();
        let mut current = Some(pod.clone());
        for _ in 0..3 {
            let Some(o) = current else { break };
            if out.cpu.is_none() {
                out.cpu = obj::annotation(&o, CPU_USAGE).map(str::to_owned);
            }
            if out.memory.is_none() {
                out.memory = obj::annotation(&o, MEMORY_USAGE).map(str::to_owned);
            }
            if out.cpu.is_some() && out.memory.is_some() {
                break;
            }
            current = obj::controller_ref(&o)
                .and_then(|r| owner(r["kind"].as_str()?, obj::namespace(&o), r["name"].as_str()?));
        }
        out
    }
}

/// One container's usage: milli-cpu and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    /// Container name.
    pub name: String,
    /// Milli-cores.
    pub cpu_milli: i128,
    /// Bytes.
    pub memory_bytes: i128,
}

fn resolve(setting: Option<&str>, request_milli: Option<i128>, idle_milli: i128) -> i128 {
    match setting.map(str::trim) {
        Some(s) if s.ends_with('%') => {
            let pct: f64 = s.trim_end_matches('%').parse().unwrap_or(50.0);
            request_milli.map_or(idle_milli, |r| (r as f64 * pct / 100.0) as i128)
        }
        Some(q) => obj::quantity_milli(&Value::from(q)).unwrap_or(idle_milli),
        None => request_milli.map_or(idle_milli, |r| r / 2),
    }
}

/// Whether metrics-server would report `pod` (running, on a Node).
pub fn reported(pod: &Value) -> bool {
    obj::pod_phase(pod) == "Running"
        && pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
}

/// The usage of each container of `pod`.
pub fn containers(pod: &Value, overrides: &Overrides) -> Vec<ContainerUsage> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let req = &c["resources"]["requests"];
            let cpu = resolve(
                overrides.cpu.as_deref(),
                obj::quantity_milli(&req["cpu"]),
                IDLE_CPU_MILLI,
            );
            let mem_milli = resolve(
                overrides.memory.as_deref(),
                obj::quantity_milli(&req["memory"]),
                IDLE_MEMORY_BYTES * 1000,
            );
            ContainerUsage {
                name: c["name"].as_str().unwrap_or_default().to_owned(),
                cpu_milli: cpu.max(0),
                memory_bytes: (mem_milli / 1000).max(0),
            }
        })
        .collect()
}

/// A Node's usage from its Pods' (milli-cpu, bytes), plus its system daemons.
pub fn node(pods: impl Iterator<Item = (i128, i128)>) -> (i128, i128) {
    pods.fold(
        (NODE_SYSTEM_CPU_MILLI, NODE_SYSTEM_MEMORY_BYTES),
        |(c, m), (pc, pm)| (c + pc, m + pm),
    )
}

/// CPU as metrics-server prints it: nanocores.
pub fn fmt_cpu(milli: i128) -> String {
    format!("{}n", milli * 1_000_000)
}

/// Memory as metrics-server prints it: KiB.
pub fn fmt_memory(bytes: i128) -> String {
    format!("{}Ki", bytes / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_follows_requests_and_annotations() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}},
            {"name": "b"}]}});
        let u = containers(&pod, &Overrides::default());
        assert_eq!(u[0].cpu_milli, 100);
        assert_eq!(u[0].memory_bytes, 128 * 1024 * 1024);
        assert_eq!(u[1].cpu_milli, IDLE_CPU_MILLI);
        let o = Overrides {
            cpu: Some("90%".into()),
            memory: Some("300Mi".into()),
        };
        let u = containers(&pod, &o);
        assert_eq!(u[0].cpu_milli, 180);
        assert_eq!(u[0].memory_bytes, 300 * 1024 * 1024);
        assert_eq!(fmt_cpu(180), "180000000n");
    }

    #[test]
    fn overrides_come_from_the_owning_workload() {
        let pod = json!({"metadata": {"namespace": "d", "ownerReferences": [
            {"kind": "ReplicaSet", "name": "web-1", "controller": true}]}});
        let lookup = |kind: &str, _: &str, name: &str| match (kind, name) {
            ("ReplicaSet", "web-1") => {
                Some(json!({"metadata": {"namespace": "d", "ownerReferences": [
                {"kind": "Deployment", "name": "web", "controller": true}]}}))
            }
            ("Deployment", "web") => Some(json!({"metadata": {"annotations": {CPU_USAGE: "75%"}}})),
            _ => None,
        };
        let o = Overrides::of(&pod, &lookup);
        assert_eq!(o.cpu.as_deref(), Some("75%"));
        assert_eq!(o.memory, None);
    }
}
