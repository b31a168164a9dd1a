//! The measurements, each the same requests on every target.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use futures_util::StreamExt as _;
use kemu_shared::SystemClock;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::target::{Target, expect};

/// Requests per second of `per_client` sequential GETs of `url` on each of
/// `clients` at once (after one unmeasured GET each, which connects).
pub async fn get_rate(
    clients: &[reqwest::Client],
    url: &str,
    per_client: usize,
) -> anyhow::Result<f64> {
    for c in clients {
        expect(c.get(url), 200, url).await?;
    }
    let start = SystemClock::instant();
    let all = clients.iter().map(|c| async move {
        for _ in 0..per_client {
            expect(c.get(url), 200, url).await?;
        }
        anyhow::Ok(())
    });
    for r in futures_util::future::join_all(all).await {
        r?;
    }
    Ok((clients.len() * per_client) as f64 / start.elapsed().as_secs_f64())
}

/// Creates a namespace; one that exists already is fine.
pub async fn namespace(t: &Target, client: &reqwest::Client, name: &str) -> anyhow::Result<()> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let resp = client
        .post(t.url("/api/v1/namespaces"))
        .json(&body)
        .send()
        .await?;
    let status = resp.status().as_u16();
    resp.bytes().await?;
    match status {
        201 | 409 => Ok(()),
        s => bail!("create namespace {name}: {s}"),
    }
}

/// A small ConfigMap named `name`.
pub fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

/// Creates `n` ConfigMaps `{prefix}{i:06}` in `ns`, spread over `clients`
/// each creating in sequence; creates per second.
pub async fn create_config_maps(
    t: &Target,
    clients: &[reqwest::Client],
    ns: &str,
    prefix: &str,
    n: usize,
) -> anyhow::Result<f64> {
    let url = t.url(&format!("/api/v1/namespaces/{ns}/configmaps"));
    let start = SystemClock::instant();
    let k = clients.len();
    let all = clients.iter().enumerate().map(|(c, client)| {
        let url = url.clone();
        async move {
            for i in (c..n).step_by(k) {
                let body = config_map(&format!("{prefix}{i:06}"));
                expect(client.post(&url).json(&body), 201, &url).await?;
            }
            anyhow::Ok(())
        }
    });
    for r in futures_util::future::join_all(all).await {
        r?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// A ServiceAccount `bench` in `ns` allowed to read ConfigMaps there, and a
/// token for it from the TokenRequest API.
pub async fn service_account_token(
    t: &Target,
    client: &reqwest::Client,
    ns: &str,
) -> anyhow::Result<String> {
    let post = |path: String, body: Value| {
        let url = t.url(&path);
        async move {
            let resp = client.post(&url).json(&body).send().await?;
            let status = resp.status().as_u16();
            let body = resp.bytes().await?;
            match status {
                200 | 201 | 409 => Ok(body),
                s => Err(anyhow!("{url}: {s}: {}", String::from_utf8_lossy(&body))),
            }
        }
    };
    post(
        format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench"}}),
    )
    .await?;
    // A Role of its own: `view` is aggregated, empty where no controller
    // manager runs the aggregation.
    post(
        format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "bench-read"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await?;
    post(
        format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bench-read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-read"},
            "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": ns}]}),
    )
    .await?;
    let body = post(
        format!("/api/v1/namespaces/{ns}/serviceaccounts/bench/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}}),
    )
    .await?;
    let answer: Value = serde_json::from_slice(&body)?;
    answer["status"]["token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("TokenRequest answered no token"))
}

/// Watch delivery: p50 and p99 from just before each create is sent to its
/// event being read by each watcher.
#[derive(Debug, Clone, Copy)]
pub struct WatchLatency {
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Events read over all watchers (`writes × watchers` when none is lost).
    pub received: usize,
}

/// `watchers` watches (each its own connection) on namespace `ns`, then
/// `writes` ConfigMap creates paced at `per_second` from 8 writers.
pub async fn watch_latency(
    t: &Target,
    ns: &str,
    watchers: usize,
    writes: usize,
    per_second: u32,
) -> anyhow::Result<WatchLatency> {
    let admin = t.client()?;
    namespace(t, &admin, ns).await?;
    let url = t.url(&format!("/api/v1/namespaces/{ns}/configmaps"));
    let list: Value = serde_json::from_slice(&expect(admin.get(&url), 200, &url).await?)?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("{url}: no resourceVersion"))?
        .to_owned();
    let received: Arc<Mutex<Vec<(usize, std::time::Instant)>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let resp = t
            .client()?
            .get(format!("{url}?watch=true&resourceVersion={rv}"))
            .send()
            .await?;
        if resp.status() != 200 {
            bail!("{url}: watch answered {}", resp.status());
        }
        let received = received.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            let mut buf = Vec::new();
            let mut got = 0;
            while let Some(Ok(chunk)) = stream.next().await {
                buf.extend_from_slice(&chunk);
                while let Some(nl) = memchr::memchr(b'\n', &buf) {
                    let at = SystemClock::instant();
                    // The first name in an event is its object's.
                    if let Some(i) = event_index(&buf[..nl]) {
                        received.lock().push((i, at));
                        got += 1;
                    }
                    buf.drain(..=nl);
                }
                if got == writes {
                    return;
                }
            }
        }));
    }
    let writers = t.clients(8)?;
    let sent: Arc<Mutex<Vec<Option<std::time::Instant>>>> =
        Arc::new(Mutex::new(vec![None; writes]));
    let mut tick = tokio::time::interval(Duration::from_secs(1) / per_second.max(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut creates = Vec::new();
    for i in 0..writes {
        tick.tick().await;
        let (client, url, sent) = (
            writers[i % writers.len()].clone(),
            url.clone(),
            sent.clone(),
        );
        creates.push(tokio::spawn(async move {
            let body = config_map(&format!("w-{i}"));
            sent.lock()[i] = Some(SystemClock::instant());
            expect(client.post(&url).json(&body), 201, &url).await
        }));
    }
    for c in creates {
        c.await.context("a writer")??;
    }
    let deadline = SystemClock::instant() + Duration::from_secs(30);
    for task in &mut tasks {
        let left = deadline.saturating_duration_since(SystemClock::instant());
        let _ = tokio::time::timeout(left, task).await;
    }
    for task in &tasks {
        task.abort();
    }
    let sent = sent.lock().clone();
    let mut latencies: Vec<Duration> = received
        .lock()
        .iter()
        .filter_map(|(i, at)| Some(at.saturating_duration_since((*sent.get(*i)?)?)))
        .collect();
    latencies.sort();
    if latencies.is_empty() {
        bail!("{url}: no watch event read");
    }
    Ok(WatchLatency {
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        received: latencies.len(),
    })
}

/// The `i` of an `ADDED` event of ConfigMap `w-{i}`.
fn event_index(line: &[u8]) -> Option<usize> {
    if !line.starts_with(br#"{"type":"ADDED""#) {
        return None;
    }
    const NAME: &[u8] = br#""name":"w-"#;
    let at = memchr::memmem::find(line, NAME)? + NAME.len();
    let end = at + line[at..].iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&line[at..end]).ok()?.parse().ok()
}

/// The value at `p` (0–1) of sorted `v`.
pub fn percentile(v: &[Duration], p: f64) -> Duration {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// How long `pods` replicas of a Deployment took to be Available, then to be
/// gone once it was scaled to 0.
#[derive(Debug, Clone, Copy)]
pub struct ScaleTimes {
    /// Created → `availableReplicas` = `pods`.
    pub up: Duration,
    /// Scaled to 0 → no Pod left in the namespace.
    pub down: Duration,
}

/// A Deployment of `pods` replicas in namespace `scale`, up and down.
pub async fn scale_up_and_down(t: &Target, pods: usize) -> anyhow::Result<ScaleTimes> {
    const LIMIT: Duration = Duration::from_secs(900);
    let client = t.client()?;
    namespace(t, &client, "scale").await?;
    let deployments = t.url("/apis/apps/v1/namespaces/scale/deployments");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}});
    let start = SystemClock::instant();
    expect(
        client.post(&deployments).json(&deployment),
        201,
        &deployments,
    )
    .await?;
    let url = format!("{deployments}/web");
    loop {
        let d: Value = serde_json::from_slice(&expect(client.get(&url), 200, &url).await?)?;
        if d["status"]["availableReplicas"].as_u64() == Some(pods as u64)
            && d["status"]["updatedReplicas"].as_u64() == Some(pods as u64)
        {
            break;
        }
        if start.elapsed() > LIMIT {
            bail!("{pods} Pods not Available after {LIMIT:?}: {}", d["status"]);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let up = start.elapsed();
    let start = SystemClock::instant();
    let patch = client
        .patch(&url)
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"spec":{"replicas":0}}"#);
    expect(patch, 200, &url).await?;
    let pods_url = t.url("/api/v1/namespaces/scale/pods?limit=1");
    loop {
        let list: Value =
            serde_json::from_slice(&expect(client.get(&pods_url), 200, &pods_url).await?)?;
        if list["items"].as_array().is_none_or(Vec::is_empty) {
            break;
        }
        if start.elapsed() > LIMIT {
            bail!("Pods left {LIMIT:?} after scaling to 0");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(ScaleTimes {
        up,
        down: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_events_name_their_write() {
        let line = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"w-42","namespace":"n"}}}"#;
        assert_eq!(event_index(line), Some(42));
        let other = br#"{"type":"MODIFIED","object":{"metadata":{"name":"w-42"}}}"#;
        assert_eq!(event_index(other), None);
        let bookmark = br#"{"type":"ADDED","object":{"metadata":{"name":"kube-root-ca.crt"}}}"#;
        assert_eq!(event_index(bookmark), None);
    }
}
