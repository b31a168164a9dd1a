//! The simulated kubelet: moves each bound Pod through the states a real
//! kubelet reports — `ContainerCreating`, then Running with container statuses,
//! podIP and hostIP, then Ready once readiness probes' `initialDelaySeconds`
//! have passed — on the clock; ephemeral containers run from when they are
//! added. Deleting Pods are killed and removed. What the containers write:
//! [`super::container_logs`].
//!
//! # Simulated failures
//!
//! Annotations on a Pod (or a workload's pod template) script its containers:
//!
//! | annotation | effect |
//! |---|---|
//! | `kemu.dev/exit-code: "N"` | every container exits with code N (after `exit-after`, default at once) |
//! | `kemu.dev/exit-after: "30s"` | containers exit after running this long (code 0 unless `exit-code` says otherwise): "complete after N seconds" |
//! | `kemu.dev/ready: "never"` | containers run but never become Ready |
//!
//! An image whose tag is `nonexistent`, `non-existent` or `404` (the images
//! upstream's e2e suite uses for a pull that fails) is never pulled: its
//! container waits in `ImagePullBackOff`, unready, and the Pod stays
//! `Pending` unless another container runs.
//!
//! Without annotations, the first container's command tells how long it runs
//! when it is one kemu can read: `sleep N` runs N seconds of clock and exits
//! 0, `exit N` (or `true`, `false`) exits at once, `sh -c` scripts of those
//! steps joined by `;` or `&&` run them in turn, and the `pause` image with
//! no command never exits. Any other `sh -c` script runs in kemu's shell
//! ([`crate::exec::process`]) when each run starts: its code and its sleeps
//! make the run's. Otherwise a Pod whose `restartPolicy` is `Never`
//! or `OnFailure` (every Job's Pods) completes at once with code 0; other
//! Pods keep running.
//!
//! What follows an exit is the Pod's `restartPolicy`, as on a real node: with
//! `Never` (or `OnFailure` and code 0) the Pod ends `Succeeded` or `Failed`;
//! otherwise the container restarts with the kubelet's back-off (10 s doubling
//! to 300 s), showing `CrashLoopBackOff` and `BackOff` Events in between.
//!
//! The Pod's state is a pure function of its start time, the clock and those
//! annotations, so a test advancing a fake clock sees every step, with one
//! exception: an `httpGet` readiness probe of a container that has been
//! exec'd into, whose image's server ([`crate::exec::ports`]) listens on the
//! probe's port, is answered by that server from the container's files, read
//! again after each exec ends (an exec can move the page it serves away).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::exec::{Opener, Sandboxes, process};
use crate::strategy::pods::image_parts;

/// Exit code the containers exit with.
pub const EXIT_CODE: &str = "kemu.dev/exit-code";
/// How long containers run before exiting.
pub const EXIT_AFTER: &str = "kemu.dev/exit-after";
/// `never`: containers never become Ready.
pub const READY: &str = "kemu.dev/ready";

const COMPONENT: &str = "kubelet";
const BACKOFF_START: i64 = 10;
const BACKOFF_MAX: i64 = 300;

/// Image tags that never pull.
const UNPULLABLE_TAGS: [&str; 3] = ["nonexistent", "non-existent", "404"];

/// Whether `image` is one the simulated registry does not have.
fn unpullable(image: &str) -> bool {
    // A digest names content, not a tag.
    match image_parts(image) {
        (_, Some(tag), false) => UNPULLABLE_TAGS.contains(&tag),
        _ => false,
    }
}

/// How the simulated kubelet paces Pods.
#[derive(Debug, Clone, Copy)]
pub struct KubeletConfig {
    /// From binding to containers running (image pull and start).
    pub start_delay: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        Self {
            start_delay: Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Run {
    Running {
        since: DateTime<Utc>,
    },
    BackOff {
        until: DateTime<Utc>,
    },
    Exited {
        code: i64,
        started: DateTime<Utc>,
        finished: DateTime<Utc>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Script {
    exit_code: Option<i64>,
    exit_after: Option<Duration>,
    never_ready: bool,
    /// The first container's command is a shell script the kubelet runs
    /// ([`crate::exec::process`]) to learn each run's code and length.
    process: bool,
}

/// How one run of the containers ends: `None` when it runs until stopped.
type RunEnd = Option<(i64, chrono::Duration)>;

impl Script {
    /// Every run ends the same way (annotations, a command read at a glance).
    fn fixed(&self) -> RunEnd {
        let after = self.exit_after?;
        Some((
            self.exit_code?,
            chrono::Duration::from_std(after).unwrap_or(chrono::Duration::MAX),
        ))
    }
}

/// What a container's command tells of its lifetime, when kemu can tell:
/// the pause image runs until stopped; `sleep N`, `exit N`, `true`, `false`
/// (alone, or as `sh -c` scripts of one `sleep N` then one `exit N`) end
/// as they would.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lifetime {
    /// Runs until stopped.
    Forever,
    /// Exits with the code after the time.
    Exits(i64, Duration),
}

fn lifetime(container: &Value) -> Option<Lifetime> {
    let words: Vec<&str> = ["command", "args"]
        .iter()
        .flat_map(|f| container[*f].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    if words.is_empty() {
        let (name, _, _) = image_parts(container["image"].as_str().unwrap_or_default());
        return (name == "pause").then_some(Lifetime::Forever);
    }
    let script = match words.as_slice() {
        [shell, "-c", script, ..] if shell.ends_with("sh") => script.to_string(),
        _ => words.join(" "),
    };
    let mut sleep = Duration::ZERO;
    let mut code = 0;
    for step in script.split([';', '\n']).flat_map(|s| s.split("&&")) {
        let parts: Vec<&str> = step.split_whitespace().collect();
        match parts.as_slice() {
            [] => {}
            [cmd, secs] if cmd.rsplit('/').next() == Some("sleep") => {
                let secs: u64 = secs.parse().ok()?;
                sleep = sleep.saturating_add(Duration::from_secs(secs));
            }
            [cmd] if cmd.rsplit('/').next() == Some("true") => code = 0,
            [cmd] if cmd.rsplit('/').next() == Some("false") => code = 1,
            ["exit", n] => {
                code = n.parse().ok()?;
                break;
            }
            _ => return None,
        }
    }
    Some(Lifetime::Exits(code, sleep))
}

impl Script {
    fn of(p: &Value) -> Self {
        let exit_code = obj::annotation(p, EXIT_CODE).and_then(|c| c.trim().parse().ok());
        let exit_after = obj::annotation(p, EXIT_AFTER).and_then(obj::parse_duration);
        // Run-to-completion Pods (Jobs, `restartPolicy: Never|OnFailure`) with
        // no script finish at once with code 0, as a real batch container that
        // does its work does; long-running Pods (`Always`) keep running,
        // unless the first container's command tells otherwise.
        let batch = !matches!(p["spec"]["restartPolicy"].as_str(), None | Some("Always"));
        let first = &p["spec"]["containers"][0];
        let told = lifetime(first);
        let process = exit_code.is_none()
            && exit_after.is_none()
            && told.is_none()
            && process::script(first).is_some();
        let (exit_code, exit_after) = match (exit_code, exit_after, told) {
            (None, None, Some(Lifetime::Forever)) => (None, None),
            (None, None, Some(Lifetime::Exits(code, after))) => (Some(code), Some(after)),
            (None, None, None) if batch && !process => (Some(0), Some(Duration::ZERO)),
            (code, after, _) => (code, after),
        };
        Self {
            exit_code: exit_code.or(exit_after.map(|_| 0)),
            exit_after: exit_after.or(exit_code.map(|_| Duration::ZERO)),
            never_ready: obj::annotation(p, READY) == Some("never"),
            process,
        }
    }
}

/// When a run of the Pod's containers exits, and with what code, as the
/// annotations (or a batch `restartPolicy`) script it: `None` for runs that
/// keep running. The logs of a running container end there too.
pub fn scripted_exit(p: &Value) -> Option<(chrono::Duration, i64)> {
    let s = Script::of(p);
    let after = chrono::Duration::from_std(s.exit_after?).ok()?;
    Some((after, s.exit_code?))
}

fn backoff(restarts: i64) -> chrono::Duration {
    let secs = BACKOFF_START
        .saturating_mul(1i64 << (restarts - 1).clamp(0, 20))
        .min(BACKOFF_MAX);
    obj::secs(secs)
}

/// Where a walk of a container's life got to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Walk {
    /// (state, restarts, last termination, next instant something changes).
    Done(Run, i64, Option<Run>, Option<DateTime<Utc>>),
    /// How run N (from 0), which starts at this instant, ends is not known
    /// yet.
    Needs(usize, DateTime<Utc>),
}

/// Walks the container's life from `first_run` to `now`, each run ending
/// as `end(n)` says (`None`: not known yet).
fn timeline(
    first_run: DateTime<Utc>,
    now: DateTime<Utc>,
    end: impl Fn(usize) -> Option<RunEnd>,
    policy: &str,
) -> Walk {
    let (mut since, mut restarts, mut last) = (first_run, 0i64, None);
    for n in 0usize.. {
        let Some(run_end) = end(n) else {
            return Walk::Needs(n, since);
        };
        let Some((code, after)) = run_end else {
            return Walk::Done(Run::Running { since }, restarts, last, None);
        };
        let finished = obj::shift(since, after);
        if finished > now {
            return Walk::Done(Run::Running { since }, restarts, last, Some(finished));
        }
        let exited = Run::Exited {
            code,
            started: since,
            finished,
        };
        let restart = match policy {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        };
        if !restart {
            return Walk::Done(exited, restarts, last, None);
        }
        restarts += 1;
        last = Some(exited);
        let until = obj::shift(finished, backoff(restarts));
        if until > now {
            return Walk::Done(Run::BackOff { until }, restarts, last, Some(until));
        }
        since = until;
    }
    Walk::Done(Run::Running { since }, restarts, last, None)
}

fn terminated(code: i64, started: DateTime<Utc>, finished: DateTime<Utc>, cid: &str) -> Value {
    json!({"terminated": {
        "exitCode": code,
        "reason": if code == 0 { "Completed" } else { "Error" },
        "startedAt": obj::fmt_time(started),
        "finishedAt": obj::fmt_time(finished),
        "containerID": cid,
    }})
}

/// A stable fake digest for ids.
fn digest(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::with_capacity(64);
    for round in 0..4u8 {
        for b in s.bytes().chain([round]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// The simulated kubelet of every Node.
pub struct Kubelet {
    rt: Arc<Runtime>,
    recorder: Recorder,
    config: KubeletConfig,
    ips: Mutex<HashMap<String, u32>>,
    // (node, image) pairs already pulled: later Pods find the image present.
    pulled: Mutex<std::collections::HashSet<(String, String)>>,
    sandboxes: Option<Arc<Sandboxes>>,
    opener: Option<Opener>,
    /// How each run of a Pod's script ended, by Pod UID.
    runs: Arc<Mutex<HashMap<String, Vec<RunEnd>>>>,
}

impl Kubelet {
    /// Wires the kubelet to the Pod informer.
    pub fn register(
        rt: &Arc<Runtime>,
        recorder: Recorder,
        config: KubeletConfig,
        sandboxes: Option<Arc<Sandboxes>>,
        opener: Option<Opener>,
    ) -> Registration {
        let queue = rt.queue("kubelet");
        let runs: Arc<Mutex<HashMap<String, Vec<RunEnd>>>> = Arc::default();
        if let Some(s) = &sandboxes {
            let q = queue.clone();
            s.subscribe("kubelet", move |ns, name| q.add(ObjKey::new(ns, name)));
        }
        let q = queue.clone();
        let forget = runs.clone();
        rt.informer(kinds::POD).on_change(move |c| {
            if c.kind == EventType::Deleted {
                forget.lock().remove(obj::uid(&c.new));
            }
            if c.kind != EventType::Deleted
                && !c.is_resync()
                && c.new["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty())
            {
                q.add(ObjKey::of(&c.new));
            }
        });
        Registration {
            name: "kubelet",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                config,
                ips: Mutex::default(),
                pulled: Mutex::default(),
                sandboxes,
                opener,
                runs,
            }),
        }
    }

    fn pod_ip(&self, node: &Value, p: &Value) -> String {
        if let Some(ip) = p["status"]["podIP"].as_str() {
            return ip.to_owned();
        }
        let name = obj::name(node).to_owned();
        let mut ips = self.ips.lock();
        let n = ips.entry(name).or_insert(0);
        *n += 1;
        let base = node["spec"]["podCIDR"]
            .as_str()
            .and_then(|c| c.split('/').next())
            .map(|ip| {
                ip.rsplit_once('.')
                    .map(|(a, _)| a.to_owned())
                    .unwrap_or_default()
            })
            .unwrap_or_else(|| {
                let h = digest(obj::name(node));
                let x = u8::from_str_radix(&h[..2], 16).unwrap_or(0);
                format!("10.244.{x}")
            });
        format!("{base}.{}", (*n - 1) % 253 + 2)
    }

    /// Why the container's HTTP readiness probe fails, when kemu can tell:
    /// the container has been exec'd into and its image's server listens
    /// on the probe's port (the files it serves may have changed); `None`
    /// when it passes or nothing tells.
    fn http_probe_failure(
        &self,
        pod: &Value,
        c: &Value,
        pod_ip: &str,
        now: DateTime<Utc>,
    ) -> Option<String> {
        let get = &c["readinessProbe"]["httpGet"];
        let sandboxes = self.sandboxes.as_ref()?;
        if !get.is_object()
            || get["host"]
                .as_str()
                .is_some_and(|h| !h.is_empty() && h != pod_ip)
            || get["scheme"].as_str().is_some_and(|s| s != "HTTP")
        {
            return None;
        }
        let port = match &get["port"] {
            Value::Number(n) => u16::try_from(n.as_u64()?).ok()?,
            Value::String(name) => c["ports"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == name.as_str())
                .and_then(|p| p["containerPort"].as_u64())
                .and_then(|p| u16::try_from(p).ok())?,
            _ => return None,
        };
        let path = match get["path"].as_str().unwrap_or_default() {
            "" => "/".to_owned(),
            p if p.starts_with('/') => p.to_owned(),
            p => format!("/{p}"),
        };
        match sandboxes.probe(obj::uid(pod), c, (pod_ip, port), &path, now)? {
            Ok(code) if (200..400).contains(&code) => None,
            Ok(code) => Some(format!("HTTP probe failed with statuscode: {code}")),
            Err(_) => Some(format!(
                "Get \"http://{pod_ip}:{port}{path}\": dial tcp {pod_ip}:{port}: connect: connection refused"
            )),
        }
    }

    /// Runs the Pod's script for each run that has started by `now` and
    /// whose end is not known yet, in the container's files as they stand.
    async fn run_processes(
        &self,
        pod: &Value,
        first_run: DateTime<Utc>,
        now: DateTime<Utc>,
        policy: &str,
    ) {
        let uid = obj::uid(pod).to_owned();
        let first = &pod["spec"]["containers"][0];
        let (Some(opener), Some(command)) = (&self.opener, process::script(first)) else {
            return;
        };
        loop {
            let known = self.runs.lock().get(&uid).cloned().unwrap_or_default();
            let Walk::Needs(n, since) = timeline(first_run, now, |n| known.get(n).copied(), policy)
            else {
                return;
            };
            let outcome =
                process::run(opener.open(pod, first), command.clone(), since.timestamp()).await;
            let end = match outcome {
                process::Outcome::Forever => None,
                process::Outcome::Exits(code, after) => Some((
                    i64::from(code),
                    chrono::Duration::from_std(after).unwrap_or(chrono::Duration::MAX),
                )),
            };
            let mut runs = self.runs.lock();
            let entry = runs.entry(uid.clone()).or_default();
            if entry.len() == n {
                entry.push(end);
            }
        }
    }

    async fn event(&self, node: &str, p: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, Some(node), p, kind, reason, msg)
            .await;
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(pod) = self.rt.informer(kinds::POD).get(key) else {
            return Ok(Requeue::No);
        };
        let node_name = pod["spec"]["nodeName"].as_str().unwrap_or("").to_owned();
        if node_name.is_empty() {
            return Ok(Requeue::No);
        }
        let containers: Vec<Value> = pod["spec"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if obj::deleting(&pod) {
            if !obj::pod_terminal(&pod) {
                for c in &containers {
                    let msg = format!("Stopping container {}", c["name"].as_str().unwrap_or(""));
                    self.event(&node_name, &pod, EventKind::Normal, "Killing", msg)
                        .await;
                }
            }
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                uid: Some(obj::uid(&pod).to_owned()),
                ..DeleteOptions::default()
            };
            return match self
                .rt
                .client
                .delete(kinds::POD, &key.namespace, &key.name, opts)
                .await
            {
                Ok(Some(kept)) => {
                    self.rt.informer(kinds::POD).observe(kept);
                    Ok(Requeue::No)
                }
                Ok(None) | Err(ClientError::NotFound(_)) => {
                    self.rt.informer(kinds::POD).observe_deleted(&pod);
                    Ok(Requeue::No)
                }
                Err(e) => Err(e),
            };
        }
        if obj::pod_terminal(&pod) {
            return Ok(Requeue::No);
        }
        let Some(node) = self.rt.informer(kinds::NODE).get_by("", &node_name) else {
            // Bound to a Node not (yet) known: look again, as the node's
            // kubelet would start it once it registers. Resyncs do not wake
            // the kubelet, so it keeps its own timer.
            return Ok(Requeue::After(super::runtime::RESYNC));
        };
        let now = self.rt.clock.now();
        if pod["status"]["startTime"].is_null() && self.host_ports_taken(&pod, &node_name) {
            // The kubelet's admission: the Pod is refused, never started.
            let mut new = (*pod).clone();
            new["status"]["phase"] = json!("Failed");
            new["status"]["reason"] = json!("NodePorts");
            new["status"]["message"] = json!(
                "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
            );
            let written = self.rt.client.update_status(kinds::POD, new).await?;
            self.rt.informer(kinds::POD).observe(written.clone());
            let msg = "Predicate NodePorts failed".to_owned();
            self.event(&node_name, &written, EventKind::Warning, "NodePorts", msg)
                .await;
            return Ok(Requeue::No);
        }
        let start_time = obj::time_at(&pod, &["status", "startTime"]).unwrap_or(now);
        let delay = chrono::Duration::from_std(self.config.start_delay).unwrap_or_default();
        let first_run = start_time + delay;
        let script = Script::of(&pod);
        let policy = pod["spec"]["restartPolicy"]
            .as_str()
            .unwrap_or("Always")
            .to_owned();
        let host_ip = node["status"]["addresses"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
            .and_then(|x| x["address"].as_str())
            .unwrap_or("10.0.0.1")
            .to_owned();
        let running_now = now >= first_run;
        let pod_ip = running_now.then(|| self.pod_ip(&node, &pod));
        let mut wake: Option<DateTime<Utc>> = None;
        let mut all_ready = true;
        let mut unready: Vec<String> = Vec::new();
        let mut statuses = Vec::new();
        let mut phase = "Running";
        let mut exit_codes = Vec::new();
        let mut waiting_on_pull = 0;
        if !running_now {
            wake = Some(first_run);
        }
        let old_statuses = pod["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if script.process && running_now {
            self.run_processes(&pod, first_run, now, &policy).await;
        }
        for c in &containers {
            let name = c["name"].as_str().unwrap_or("").to_owned();
            let image = c["image"].as_str().unwrap_or("").to_owned();
            let cid = format!(
                "containerd://{}",
                digest(&format!("{}/{name}", obj::uid(&pod)))
            );
            let mut cs = json!({
                "name": name,
                "image": image,
                "imageID": format!("{}@sha256:{}", image.split(':').next().unwrap_or(""), digest(&image)),
                "ready": false,
                "restartCount": 0,
                "started": false,
                "lastState": {},
            });
            // What the container runs with, as kubelets report it since
            // in-place resize (`pods/resize` changes the spec; this follows).
            let resources = &c["resources"];
            if resources["requests"].is_object() || resources["limits"].is_object() {
                cs["resources"] = resources.clone();
                if let Some(req) = resources["requests"].as_object() {
                    cs["allocatedResources"] = json!(req);
                }
            }
            if !running_now {
                cs["state"] = json!({"waiting": {"reason": "ContainerCreating"}});
                all_ready = false;
                unready.push(name);
                statuses.push(cs);
                continue;
            }
            if unpullable(&image) {
                cs["state"] = json!({"waiting": {
                    "reason": "ImagePullBackOff",
                    "message": format!("Back-off pulling image \"{image}\""),
                }});
                all_ready = false;
                unready.push(name);
                waiting_on_pull += 1;
                statuses.push(cs);
                continue;
            }
            let runs = self
                .runs
                .lock()
                .get(obj::uid(&pod))
                .cloned()
                .unwrap_or_default();
            let end = |n: usize| {
                if script.process {
                    runs.get(n).copied()
                } else {
                    Some(script.fixed())
                }
            };
            let (run, restarts, last, next) = match timeline(first_run, now, end, &policy) {
                Walk::Done(run, restarts, last, next) => (run, restarts, last, next),
                // Not reached: every run started by now was run above.
                Walk::Needs(_, since) => (Run::Running { since }, 0, None, None),
            };
            wake = match (wake, next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            cs["restartCount"] = json!(restarts);
            if let Some(Run::Exited {
                code,
                started,
                finished,
            }) = last
            {
                cs["lastState"] = terminated(code, started, finished, &cid);
            }
            let mut ready = false;
            match run {
                Run::Running { since } => {
                    cs["containerID"] = json!(cid);
                    cs["started"] = json!(true);
                    cs["state"] = json!({"running": {"startedAt": obj::fmt_time(since)}});
                    let delay = c["readinessProbe"]["initialDelaySeconds"]
                        .as_i64()
                        .unwrap_or(0);
                    let ready_at = obj::after_secs(since, delay);
                    if !script.never_ready {
                        if c.get("readinessProbe").is_none() || ready_at <= now {
                            let failed = pod_ip
                                .as_deref()
                                .and_then(|ip| self.http_probe_failure(&pod, c, ip, now));
                            ready = failed.is_none();
                            let was_ready = old_statuses
                                .iter()
                                .any(|s| s["name"] == name.as_str() && s["ready"] == true);
                            if let Some(why) = failed
                                && was_ready
                            {
                                let msg = format!("Readiness probe failed: {why}");
                                self.event(&node_name, &pod, EventKind::Warning, "Unhealthy", msg)
                                    .await;
                            }
                        } else {
                            wake = Some(wake.map_or(ready_at, |w| w.min(ready_at)));
                        }
                    }
                }
                Run::BackOff { .. } => {
                    cs["containerID"] = json!(cid);
                    cs["state"] = json!({"waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": format!("back-off {}s restarting failed container={name} pod={}_{}({})",
                            backoff(restarts).num_seconds(), key.name, key.namespace, obj::uid(&pod)),
                    }});
                }
                Run::Exited {
                    code,
                    started,
                    finished,
                } => {
                    cs["containerID"] = json!(cid);
                    cs["state"] = terminated(code, started, finished, &cid);
                    exit_codes.push(code);
                }
            }
            cs["ready"] = json!(ready);
            if !ready {
                all_ready = false;
                unready.push(name);
            }
            statuses.push(cs);
        }
        if !exit_codes.is_empty() && exit_codes.len() == containers.len() {
            phase = if exit_codes.iter().all(|c| *c == 0) {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        if !running_now || (!containers.is_empty() && waiting_on_pull == containers.len()) {
            phase = "Pending";
        }
        let ts = obj::fmt_time(now);
        let mut conditions: Vec<Value> = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let unready_msg = format!("containers with unready status: [{}]", unready.join(" "));
        let (ready_status, ready_reason, ready_msg) = if phase == "Succeeded" {
            ("False", Some("PodCompleted"), None)
        } else if all_ready && !containers.is_empty() {
            ("True", None, None)
        } else {
            ("False", Some("ContainersNotReady"), Some(unready_msg))
        };
        let mk = |t: &str, status: &str, reason: Option<&str>, msg: Option<&String>| {
            let mut c = json!({"type": t, "status": status, "lastProbeTime": null});
            if let Some(r) = reason {
                c["reason"] = json!(r);
            }
            if let Some(m) = msg {
                c["message"] = json!(m);
            }
            c
        };
        for c in [
            mk(
                "PodReadyToStartContainers",
                if phase == "Running" || phase == "Pending" {
                    "True"
                } else {
                    "False"
                },
                None,
                None,
            ),
            mk("Initialized", "True", None, None),
            mk("Ready", ready_status, ready_reason, ready_msg.as_ref()),
            mk(
                "ContainersReady",
                ready_status,
                ready_reason,
                ready_msg.as_ref(),
            ),
            mk("PodScheduled", "True", None, None),
        ] {
            set_pod_condition(&mut conditions, c, &ts);
        }
        // Keep upstream's order.
        let order = [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ];
        conditions.sort_by_key(|c| {
            order
                .iter()
                .position(|o| c["type"] == *o)
                .unwrap_or(order.len())
        });
        let mut status = pod["status"].clone();
        if !status.is_object() {
            status = json!({});
        }
        status["phase"] = json!(phase);
        status["conditions"] = json!(conditions);
        status["hostIP"] = json!(host_ip);
        status["hostIPs"] = json!([{"ip": host_ip}]);
        status["startTime"] = json!(obj::fmt_time(start_time));
        status["containerStatuses"] = json!(statuses);
        if running_now {
            let ephemeral = ephemeral_statuses(&pod, now);
            if ephemeral.is_empty() {
                if let Some(m) = status.as_object_mut() {
                    m.remove("ephemeralContainerStatuses");
                }
            } else {
                status["ephemeralContainerStatuses"] = json!(ephemeral);
            }
        }
        if let Some(pod_ip) = pod_ip {
            status["podIP"] = json!(pod_ip);
            status["podIPs"] = json!([{"ip": pod_ip}]);
        }
        if status["qosClass"].is_null() {
            status["qosClass"] = json!(qos_class(&pod));
        }
        if pod.get("status") != Some(&status) {
            let mut new = (*pod).clone();
            new["status"] = status;
            let written = self.rt.client.update_status(kinds::POD, new).await?;
            self.rt.informer(kinds::POD).observe(written.clone());
            self.emit_events(&node_name, &written, &old_statuses, &statuses)
                .await;
        }
        Ok(match wake {
            Some(at) => Requeue::After(obj::to_std(at - now)),
            None => Requeue::No,
        })
    }

    /// Whether a host port `pod` asks for is held by a Pod this kubelet
    /// already admitted on `node` (one that has started and is not done).
    fn host_ports_taken(&self, pod: &Value, node: &str) -> bool {
        let wanted = host_ports(pod);
        if wanted.is_empty() {
            return false;
        }
        self.rt.informer(kinds::POD).list().iter().any(|other| {
            other["spec"]["nodeName"] == node
                && obj::uid(other) != obj::uid(pod)
                && !other["status"]["startTime"].is_null()
                && obj::pod_active(other)
                && host_ports(other).iter().any(|(ip, proto, port)| {
                    wanted.iter().any(|(wip, wproto, wport)| {
                        port == wport
                            && proto == wproto
                            && (ip == wip || ip == "0.0.0.0" || wip == "0.0.0.0")
                    })
                })
        })
    }

    async fn emit_events(&self, node: &str, pod: &Value, old: &[Value], new: &[Value]) {
        for cs in new {
            let name = cs["name"].as_str().unwrap_or("");
            let before = old.iter().find(|o| o["name"] == name);
            let was_running = before.is_some_and(|b| b["state"].get("running").is_some());
            let old_restarts = before.and_then(|b| b["restartCount"].as_i64()).unwrap_or(0);
            let restarts = cs["restartCount"].as_i64().unwrap_or(0);
            let image = cs["image"].as_str().unwrap_or("");
            let started = cs["state"].get("running").is_some();
            if started && (!was_running || restarts > old_restarts) {
                // As the kubelet: a pull the first time a Node needs an image
                // (and every time for `Always`), else it is present.
                let spec = pod["spec"]["containers"]
                    .as_array()
                    .and_then(|a| a.iter().find(|c| c["name"] == name));
                let latest = !image.contains(':') || image.ends_with(":latest");
                let always = match spec.and_then(|c| c["imagePullPolicy"].as_str()) {
                    Some(p) => p == "Always",
                    None => latest && !image.contains('@'),
                };
                let first = self
                    .pulled
                    .lock()
                    .insert((node.to_owned(), image.to_owned()));
                if first || always {
                    self.event(
                        node,
                        pod,
                        EventKind::Normal,
                        "Pulling",
                        format!("Pulling image \"{image}\""),
                    )
                    .await;
                    let size =
                        10_000_000 + u64::from_str_radix(&digest(image)[..6], 16).unwrap_or(0) * 8;
                    self.event(
                        node,
                        pod,
                        EventKind::Normal,
                        "Pulled",
                        format!("Successfully pulled image \"{image}\" in 1.021s (1.021s including waiting). Image size: {size} bytes."),
                    )
                    .await;
                } else {
                    self.event(
                        node,
                        pod,
                        EventKind::Normal,
                        "Pulled",
                        format!("Container image \"{image}\" already present on machine"),
                    )
                    .await;
                }
                self.event(
                    node,
                    pod,
                    EventKind::Normal,
                    "Created",
                    format!("Created container: {name}"),
                )
                .await;
                self.event(
                    node,
                    pod,
                    EventKind::Normal,
                    "Started",
                    format!("Started container {name}"),
                )
                .await;
            }
            if cs["state"]["waiting"]["reason"] == "CrashLoopBackOff" && restarts > old_restarts {
                let msg = format!(
                    "Back-off restarting failed container {name} in pod {}_{}({})",
                    obj::name(pod),
                    obj::namespace(pod),
                    obj::uid(pod)
                );
                self.event(node, pod, EventKind::Warning, "BackOff", msg)
                    .await;
            }
        }
    }
}

/// Ephemeral containers (`kubectl debug`) run from when the kubelet first
/// sees them, never ready, never restarted.
/// The host ports a Pod's containers ask for: (host IP, protocol, port).
fn host_ports(pod: &Value) -> Vec<(String, String, i64)> {
    let mut out = Vec::new();
    for list in ["initContainers", "containers"] {
        for c in pod["spec"][list].as_array().into_iter().flatten() {
            for p in c["ports"].as_array().into_iter().flatten() {
                let Some(port) = p["hostPort"].as_i64().filter(|h| *h > 0) else {
                    continue;
                };
                let ip = p["hostIP"]
                    .as_str()
                    .filter(|i| !i.is_empty())
                    .unwrap_or("0.0.0.0");
                let proto = p["protocol"].as_str().unwrap_or("TCP");
                out.push((ip.to_owned(), proto.to_owned(), port));
            }
        }
    }
    out
}

fn ephemeral_statuses(pod: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let old = pod["status"]["ephemeralContainerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    pod["spec"]["ephemeralContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            let image = c["image"].as_str().unwrap_or_default();
            let since = old
                .iter()
                .find(|o| o["name"] == name)
                .and_then(|o| obj::time_at(o, &["state", "running", "startedAt"]))
                .unwrap_or(now);
            json!({
                "name": name,
                "image": image,
                "imageID": format!("{}@sha256:{}", image.split(':').next().unwrap_or(""), digest(image)),
                "containerID": format!("containerd://{}", digest(&format!("{}/{name}", obj::uid(pod)))),
                "ready": false,
                "restartCount": 0,
                "started": true,
                "state": {"running": {"startedAt": obj::fmt_time(since)}},
                "lastState": {},
            })
        })
        .collect()
}

fn set_pod_condition(conds: &mut Vec<Value>, new: Value, now: &str) {
    if let Some(old) = conds.iter_mut().find(|c| c["type"] == new["type"]) {
        if old["status"] == new["status"]
            && old.get("reason") == new.get("reason")
            && old.get("message") == new.get("message")
        {
            return;
        }
        let mut new = new;
        new["lastTransitionTime"] = if old["status"] == new["status"] {
            old["lastTransitionTime"].clone()
        } else {
            json!(now)
        };
        *old = new;
        return;
    }
    let mut new = new;
    new["lastTransitionTime"] = json!(now);
    conds.push(new);
}

pub use crate::strategy::pods::qos_class;

impl Reconciler for Kubelet {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_tell_how_long_containers_run() {
        let c = |v: Value| lifetime(&v);
        let secs = Duration::from_secs;
        assert_eq!(
            c(json!({"image": "registry.k8s.io/pause:3.10"})),
            Some(Lifetime::Forever)
        );
        assert_eq!(c(json!({"image": "nginx"})), None);
        assert_eq!(
            c(json!({"command": ["sleep", "300"]})),
            Some(Lifetime::Exits(0, secs(300)))
        );
        assert_eq!(
            c(json!({"command": ["/bin/sh", "-c", "sleep 5; exit 3"]})),
            Some(Lifetime::Exits(3, secs(5)))
        );
        assert_eq!(
            c(json!({"command": ["sh", "-c", "exit 1"]})),
            Some(Lifetime::Exits(1, secs(0)))
        );
        assert_eq!(
            c(json!({"command": ["/bin/false"]})),
            Some(Lifetime::Exits(1, secs(0)))
        );
        assert_eq!(c(json!({"command": ["perl", "-e", "print 1"]})), None);
        assert_eq!(
            c(json!({"command": ["sh", "-c", "exit $((RANDOM % 2))"]})),
            None
        );
        // Annotations still win over the command.
        let pod = json!({"metadata": {"annotations": {EXIT_CODE: "2"}},
            "spec": {"restartPolicy": "Never", "containers": [{"command": ["sleep", "9"]}]}});
        assert_eq!(Script::of(&pod).exit_code, Some(2));
        let pause = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"image": "registry.k8s.io/pause:3.10"}]}});
        assert_eq!(Script::of(&pause).exit_code, None);
    }

    #[test]
    fn images_of_the_e2e_suites_missing_tags_never_pull() {
        for image in [
            "foo:non-existent",
            "webserver:404",
            "gcr.io/x/redis:nonexistent",
        ] {
            assert!(unpullable(image), "{image}");
        }
        for image in [
            "nginx",
            "nginx:1.27",
            "registry:5000/app:1",
            "app@sha256:404",
        ] {
            assert!(!unpullable(image), "{image}");
        }
    }

    #[test]
    fn crash_loop_backs_off() {
        let t0 = DateTime::from_timestamp(0, 0).unwrap_or_default();
        let s = Script {
            exit_code: Some(1),
            exit_after: Some(Duration::ZERO),
            never_ready: false,
            process: false,
        };
        let end = |_| Some(s.fixed());
        let Walk::Done(run, restarts, _, next) = timeline(t0, t0, end, "Always") else {
            panic!("walk");
        };
        assert_eq!(restarts, 1);
        assert_eq!(
            run,
            Run::BackOff {
                until: t0 + obj::secs(10)
            }
        );
        assert_eq!(next, Some(t0 + obj::secs(10)));
        let walk = timeline(t0, t0 + obj::secs(10 + 20 + 1), end, "Always");
        assert!(matches!(walk, Walk::Done(_, 3, _, _)), "{walk:?}");
        let walk = timeline(t0, t0, end, "Never");
        assert!(
            matches!(walk, Walk::Done(Run::Exited { code: 1, .. }, 0, _, _)),
            "{walk:?}"
        );
    }

    #[test]
    fn each_run_ends_as_its_script_did() {
        let t0 = DateTime::from_timestamp(0, 0).unwrap_or_default();
        // Fails once, then succeeds: restarted in place under OnFailure.
        let runs = [Some((1, chrono::Duration::zero())), Some((0, obj::secs(5)))];
        let walk = timeline(t0, t0, |n| runs.get(n).copied(), "OnFailure");
        assert!(
            matches!(walk, Walk::Done(Run::BackOff { .. }, 1, _, _)),
            "{walk:?}"
        );
        let at = t0 + obj::secs(10);
        assert_eq!(
            timeline(t0, at, |n| runs.get(n).copied(), "OnFailure"),
            Walk::Done(
                Run::Running { since: at },
                1,
                Some(Run::Exited {
                    code: 1,
                    started: t0,
                    finished: t0
                }),
                Some(at + obj::secs(5))
            )
        );
        assert!(matches!(
            timeline(t0, at + obj::secs(5), |n| runs.get(n).copied(), "OnFailure"),
            Walk::Done(Run::Exited { code: 0, .. }, 1, _, None)
        ));
        // The second run's end is asked for once it has started.
        assert_eq!(
            timeline(t0, at, |n| runs[..1].get(n).copied(), "OnFailure"),
            Walk::Needs(1, at)
        );
    }
}
