//! What kemu served: every request to every facade and cluster, kept in a
//! bounded ring (and, when asked, appended to a JSON-lines file), and the
//! counters the admin endpoint's and each cluster's `/metrics` print in
//! Prometheus' text format, under kube-apiserver's metric names where it has
//! one.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// Requests kept in memory.
pub const RING: usize = 10_000;

/// kube-apiserver's `apiserver_request_duration_seconds` buckets.
const BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its place in the log, from 1.
    pub seq: u64,
    /// When it arrived, RFC 3339 on the cluster's clock.
    pub time: String,
    /// `kubernetes`, `eks`, `gke` or `aks`.
    pub api: String,
    /// The cluster it was for (a Kubernetes cluster's id; a facade's
    /// cluster name from the path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Who asked (the Kubernetes user; the EKS access key id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The HTTP method.
    pub method: String,
    /// The path (without the query).
    pub path: String,
    /// The Kubernetes verb, or the facade's operation.
    pub verb: String,
    /// The resource (`pods`, `deployments.apps`, `pods/log`), for Kubernetes
    /// resource requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The status code answered.
    pub status: u16,
    /// Time to the answer's head, in milliseconds.
    pub latency_ms: f64,
    /// For an error, why (the Status reason or the cloud's error code and
    /// message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Why an error answer refused: each API's error mapping puts it in the
/// response's extensions for the request log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// The labels of kube-apiserver's request metrics.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestLabels {
    /// The cluster's id (what a cluster's own `/metrics` keeps).
    pub cluster_id: String,
    /// The cluster's name (the `cluster` label).
    pub cluster: String,
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`,
    /// `CONNECT`, as upstream's `CleanVerb`.
    pub verb: String,
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// `resource`, `namespace` or `cluster`; empty for non-resource paths.
    pub scope: String,
}

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (c, le) in self.counts.iter_mut().zip(BUCKETS) {
            if secs <= le {
                *c += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }
}

#[derive(Debug, Default)]
struct Counters {
    /// (labels, code) → requests.
    requests: BTreeMap<(RequestLabels, u16), u64>,
    durations: BTreeMap<RequestLabels, Histogram>,
    /// (cloud, operation, code) → calls.
    facade: BTreeMap<(String, String, u16), u64>,
}

/// The request log and counters of one kemu.
#[derive(Default)]
pub struct Observer {
    ring: Mutex<VecDeque<Record>>,
    next: AtomicU64,
    file: Mutex<Option<std::fs::File>>,
    counters: Mutex<Counters>,
    appended: tokio::sync::Notify,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("records", &self.ring.lock().len())
            .finish_non_exhaustive()
    }
}

impl Observer {
    /// Also appends every record to `file`, one JSON object per line.
    pub fn log_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        *self.file.lock() = Some(file);
        Ok(())
    }

    /// Logs a request to a cluster's Kubernetes API and counts it.
    pub fn kubernetes(&self, record: Record, labels: RequestLabels) {
        {
            let mut c = self.counters.lock();
            *c.requests
                .entry((labels.clone(), record.status))
                .or_default() += 1;
            if labels.verb != "WATCH" && labels.verb != "CONNECT" {
                c.durations
                    .entry(labels)
                    .or_default()
                    .observe(record.latency_ms / 1000.0);
            }
        }
        self.log(record);
    }

    /// Logs a call to a cloud facade and counts it.
    pub fn facade(&self, record: Record) {
        *self
            .counters
            .lock()
            .facade
            .entry((record.api.clone(), record.verb.clone(), record.status))
            .or_default() += 1;
        self.log(record);
    }

    /// Logs a request no counter follows (a cluster's non-resource paths).
    pub fn log(&self, mut record: Record) {
        record.seq = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(f) = self.file.lock().as_mut()
            && let Ok(line) = serde_json::to_string(&record)
            && let Err(e) = writeln!(f, "{line}")
        {
            tracing::warn!(error = %e, "request log file");
        }
        let mut ring = self.ring.lock();
        if ring.len() == RING {
            ring.pop_front();
        }
        ring.push_back(record);
        drop(ring);
        self.appended.notify_waiters();
    }

    /// The records after `seq` still in the ring, oldest first.
    pub fn since(&self, seq: u64) -> Vec<Record> {
        let ring = self.ring.lock();
        let start = ring.partition_point(|r| r.seq <= seq);
        ring.range(start..).cloned().collect()
    }

    /// Resolves once a record is appended after it is enabled (or first
    /// polled): enable it before reading [`Observer::since`] so nothing
    /// appended in between is missed.
    pub fn appended(&self) -> tokio::sync::futures::Notified<'_> {
        self.appended.notified()
    }

    /// kube-apiserver's request families, for one cluster (without the
    /// `cluster` label) or for all.
    pub fn render_requests(&self, cluster: Option<&str>, out: &mut String) {
        let c = self.counters.lock();
        let labels = |l: &RequestLabels| {
            let mut s = String::new();
            if cluster.is_none() {
                let _ = write!(s, "cluster=\"{}\",", escape(&l.cluster));
            }
            let _ = write!(
                s,
                "component=\"apiserver\",dry_run=\"\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                escape(&l.group),
                escape(&l.resource),
                l.scope,
                escape(&l.subresource),
                l.verb,
                escape(&l.version)
            );
            s
        };
        let mine = |l: &RequestLabels| cluster.is_none_or(|id| l.cluster_id == id);
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        for ((l, code), n) in c.requests.iter().filter(|((l, _), _)| mine(l)) {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",{}}} {n}",
                labels(l)
            );
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        for (l, h) in c.durations.iter().filter(|(l, _)| mine(l)) {
            let base = labels(l);
            for (count, le) in h.counts.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{base},le=\"{le}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_sum{{{base}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_count{{{base}}} {}",
                h.count
            );
        }
    }

    /// kemu's facade calls.
    pub fn render_facades(&self, out: &mut String) {
        let c = self.counters.lock();
        out.push_str("# HELP kemu_facade_requests_total Calls to the cloud facades by cloud, operation and HTTP response code.\n# TYPE kemu_facade_requests_total counter\n");
        for ((cloud, op, code), n) in &c.facade {
            let _ = writeln!(
                out,
                "kemu_facade_requests_total{{cloud=\"{cloud}\",code=\"{code}\",operation=\"{}\"}} {n}",
                escape(op)
            );
        }
    }
}

/// A label value as Prometheus' text format escapes it.
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The cluster a facade path names: the segment after `clusters` or
/// `managedClusters` (EKS, GKE, AKS), up to a `:` verb (GKE's
/// `clusters/x:setSize`).
pub fn facade_cluster(path: &str) -> Option<String> {
    let mut segs = path.split('/');
    while let Some(s) = segs.next() {
        if s.eq_ignore_ascii_case("clusters") || s.eq_ignore_ascii_case("managedclusters") {
            let name = segs.next()?.split(':').next()?;
            return (!name.is_empty()).then(|| name.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: u16) -> Record {
        Record {
            seq: 0,
            time: "2026-01-01T00:00:00Z".into(),
            api: "kubernetes".into(),
            cluster: Some("c1".into()),
            caller: None,
            method: "GET".into(),
            path: "/api/v1/pods".into(),
            verb: "list".into(),
            resource: Some("pods".into()),
            status,
            latency_ms: 3.0,
            reason: None,
        }
    }

    fn labels(cluster: &str) -> RequestLabels {
        RequestLabels {
            cluster_id: cluster.into(),
            cluster: cluster.into(),
            verb: "LIST".into(),
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: String::new(),
            scope: "cluster".into(),
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_and_counts_every_request() {
        let o = Observer::default();
        for _ in 0..RING + 5 {
            o.kubernetes(record(200), labels("c1"));
        }
        o.kubernetes(record(404), labels("c2"));
        let all = o.since(0);
        assert_eq!(all.len(), RING);
        assert_eq!(all[0].seq, 7);
        assert_eq!(o.since(all[RING - 2].seq).len(), 1);
        let mut text = String::new();
        o.render_requests(Some("c1"), &mut text);
        assert!(text.contains(&format!("apiserver_request_total{{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"}} {}\n", RING + 5)), "{text}");
        assert!(!text.contains("code=\"404\""));
        assert!(text.contains("le=\"0.005\"} 10005\n"), "{text}");
    }

    #[test]
    fn facade_paths_name_their_cluster() {
        assert_eq!(
            facade_cluster("/clusters/web/node-groups").as_deref(),
            Some("web")
        );
        assert_eq!(
            facade_cluster("/v1/projects/p/locations/l/clusters/web:setLabels").as_deref(),
            Some("web")
        );
        assert_eq!(
            facade_cluster("/subscriptions/s/resourceGroups/g/providers/Microsoft.ContainerService/managedClusters/aks1").as_deref(),
            Some("aks1")
        );
        assert_eq!(facade_cluster("/clusters"), None);
    }
}
