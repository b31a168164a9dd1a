//! The Job controller: runs `parallelism` Pods until `completions` succeed
//! (`NonIndexed`, or `Indexed` with one index per Pod), re-creates failed Pods
//! with the upstream back-off (10 s doubling, at most 10 min), and ends the Job
//! with the upstream conditions: `SuccessCriteriaMet` + `Complete`
//! (`CompletionsReached`), or `FailureTarget` + `Failed` (`BackoffLimitExceeded`,
//! `DeadlineExceeded`). Honours `suspend`, `activeDeadlineSeconds` and
//! `ttlSecondsAfterFinished`; shrinking `parallelism` or `completions` deletes
//! the surplus Pods.
//!
//! An Indexed Job's `successPolicy` ends it with reason `SuccessPolicy`.
//!
//! As upstream's `ClaimPods`: an orphaned Pod the Job's selector matches is
//! adopted, and a Pod of the Job whose labels stop matching is released.
//!
//! A `podFailurePolicy` ([`pod_failure_policy`]) decides of each failed Pod
//! whether it counts, fails the Job (`PodFailurePolicy`) or fails its index.
//! With `backoffLimitPerIndex`, each index of an Indexed Job has its own
//! limit and back-off, its Pods carry the failure counts in upstream's
//! annotations, failed indexes are `status.failedIndexes`, and the Job fails
//! with `MaxFailedIndexesExceeded` or, once every index has ended,
//! `FailedIndexes`. `podReplacementPolicy: Failed` waits for a deleted Pod to
//! be gone before replacing it; `status.terminating` counts such Pods.
//!
//! Not done: the `batch.kubernetes.io/job-tracking` finalizer (counts come
//! from the Pods kemu still holds, kept monotonic in the status).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Value, json};

mod pod_failure_policy;

use super::client::{BoxFuture, ClientError, DeleteOptions, EventType, Propagation, kinds};
use super::events::{EventKind, Recorder};
use super::obj;
use super::replicaset::pod_from_template_of;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};
use crate::label_selector::LabelSelector;

const COMPONENT: &str = "job-controller";
/// The completion index annotation (and label) of Indexed Job Pods.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
const BACKOFF_BASE: i64 = 10;
const BACKOFF_MAX: i64 = 600;
/// How many of an index's Pods failed so far, on each of its Pods.
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// How many of an index's Pod failures a policy's `Ignore` rule discounted.
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// The env var an Indexed Job's containers read their index from.
const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// Whether a Job has finished (`Complete` or `Failed` true).
pub fn finished(job: &Value) -> Option<&'static str> {
    if obj::condition_true(job, "Complete") {
        Some("Complete")
    } else if obj::condition_true(job, "Failed") {
        Some("Failed")
    } else {
        None
    }
}

fn index_of(p: &Value) -> Option<i64> {
    obj::annotation(p, COMPLETION_INDEX)
        .and_then(|i| i.parse().ok())
        .filter(|i| *i >= 0)
}

/// An index failure count annotation, as upstream reads it: 0 unless an int32
/// at least 0.
fn failure_count(p: &Value, annotation: &str) -> i64 {
    obj::annotation(p, annotation)
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(0, |v| i64::from(v.max(0)))
}

/// The back-off before a replacement after `failures` failures (10 s doubling,
/// at most 10 min), as upstream's `getRemainingTimeForFailuresCount`.
fn backoff_after(failures: i64) -> i64 {
    if failures <= 0 {
        return 0;
    }
    BACKOFF_BASE
        .saturating_mul(1i64 << (failures - 1).clamp(0, 20))
        .min(BACKOFF_MAX)
}

/// Upstream's `matchSuccessPolicy`: the first rule the succeeded indexes
/// meet (all of its `succeededIndexes`, or `succeededCount` of them, or of
/// all indexes), as the condition's message names it.
fn success_policy_match(spec: &Value, completions: i64, done: &BTreeSet<i64>) -> Option<String> {
    if done.is_empty() {
        return None;
    }
    let rules = spec["successPolicy"]["rules"].as_array()?;
    for (i, rule) in rules.iter().enumerate() {
        let count = rule["succeededCount"].as_i64();
        let met = match rule["succeededIndexes"].as_str() {
            Some(text) => {
                let required = index_intervals(text, completions);
                if required.is_empty() {
                    continue;
                }
                let total: i64 = required.iter().map(|(a, b)| b - a + 1).sum();
                let contains: i64 = required
                    .iter()
                    .map(|(a, b)| done.range(*a..=*b).count() as i64)
                    .sum();
                contains == total || count.is_some_and(|c| contains >= c)
            }
            None => count.is_some_and(|c| done.len() as i64 >= c),
        };
        if met {
            return Some(format!("Matched rules at index {i}"));
        }
    }
    None
}

/// `1,3-5` as inclusive intervals below `completions`; a malformed list is
/// empty (upstream's `parseIndexesFromString`).
fn index_intervals(text: &str, completions: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i64>(), b.parse::<i64>()),
            None => (part.parse::<i64>(), part.parse::<i64>()),
        };
        let (Ok(a), Ok(b)) = (a, b) else {
            return Vec::new();
        };
        if a < 0 || b < a || a >= completions {
            return Vec::new();
        }
        out.push((a, b.min(completions - 1)));
    }
    out
}

/// `1,3-5,7` as upstream writes `completedIndexes`.
fn ranges(set: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = set.iter().peekable();
    while let Some(&start) = it.next() {
        let mut end = start;
        while it.peek().is_some_and(|&&n| n == end + 1) {
            end = *it.next().unwrap_or(&end);
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// The failed Pod of index `ix` a replacement follows: the one with the most
/// failures before it, the latest to finish of those (upstream's
/// `getPodsWithDelayedDeletionPerIndex`).
fn last_failed_of<'a>(
    failed: &'a [(&'a Arc<Value>, pod_failure_policy::Verdict)],
    ix: i64,
) -> Option<&'a (&'a Arc<Value>, pod_failure_policy::Verdict)> {
    failed
        .iter()
        .filter(|(p, _)| index_of(p) == Some(ix))
        .max_by_key(|(p, _)| {
            let n = failure_count(p, INDEX_FAILURE_COUNT)
                .saturating_add(failure_count(p, INDEX_IGNORED_FAILURE_COUNT));
            (n, finish_time(p))
        })
}

/// The failure counts (failed, ignored) of the Pod that replaces `failed`
/// (upstream's `getNewIndexFailureCounts`).
fn replacement_counts(policy: &Value, failed: &Value) -> (i64, i64) {
    let (n, ignored) = (
        failure_count(failed, INDEX_FAILURE_COUNT),
        failure_count(failed, INDEX_IGNORED_FAILURE_COUNT),
    );
    if pod_failure_policy::verdict(policy, failed).counts {
        (n.saturating_add(1), ignored)
    } else {
        (n, ignored.saturating_add(1))
    }
}

/// `JOB_COMPLETION_INDEX` from the Pod's index label, in every container
/// that does not set it (upstream's `addCompletionIndexEnvVariables`).
fn add_completion_index_env(pod_spec: &mut Value) {
    let field_path = format!("metadata.labels['{COMPLETION_INDEX}']");
    for list in ["initContainers", "containers"] {
        let Some(containers) = pod_spec[list].as_array_mut() else {
            continue;
        };
        for c in containers {
            if !c["env"].is_array() {
                c["env"] = json!([]);
            }
            let Some(env) = c["env"].as_array_mut() else {
                continue;
            };
            if env.iter().all(|e| e["name"] != COMPLETION_INDEX_ENV) {
                env.push(json!({
                    "name": COMPLETION_INDEX_ENV,
                    "valueFrom": {"fieldRef": {"fieldPath": field_path}},
                }));
            }
        }
    }
}

fn finish_time(p: &Value) -> Option<DateTime<Utc>> {
    p["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .filter_map(|c| obj::time_at(c, &["state", "terminated", "finishedAt"]))
        .max()
}

/// The Job's selector; `None` when empty (it would select every Pod).
fn selector(job: &Value) -> Option<LabelSelector> {
    LabelSelector::from_label_selector(&job["spec"]["selector"]).filter(|s| !s.is_empty())
}

/// Orphaned Pods each Job's selector matched, waiting for its sync.
type Orphans = Arc<Mutex<HashMap<ObjKey, HashSet<ObjKey>>>>;

/// The Job controller.
pub struct JobController {
    rt: Arc<Runtime>,
    recorder: Recorder,
    orphans: Orphans,
}

impl JobController {
    /// Wires the controller to the Job and Pod informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("job");
        let q = queue.clone();
        rt.informer(kinds::JOB)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        rt.enqueue_controllers_of(kinds::POD, "Job", &queue);
        // An orphan wakes the Jobs whose selector matches it.
        let orphans: Orphans = Arc::default();
        let (q, jobs, found) = (
            queue.clone(),
            rt.informer(kinds::JOB).clone(),
            orphans.clone(),
        );
        rt.informer(kinds::POD).on_change(move |c| {
            let p = &c.new;
            if c.kind == EventType::Deleted
                || c.is_resync()
                || obj::controller_ref(p).is_some()
                || obj::deleting(p)
            {
                return;
            }
            for job in jobs.list_namespace(obj::namespace(p)) {
                if selector(&job).is_some_and(|s| s.selects(p)) {
                    let key = ObjKey::of(&job);
                    found
                        .lock()
                        .entry(key.clone())
                        .or_default()
                        .insert(ObjKey::of(p));
                    q.add(key);
                }
            }
        });
        Registration {
            name: "job",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
                orphans,
            }),
        }
    }

    /// Adopts the orphans found for `job` that its selector still matches,
    /// and releases its Pods whose labels no longer match.
    async fn claim(&self, key: &ObjKey, job: &Value) -> Result<(), ClientError> {
        let found = self.orphans.lock().remove(key).unwrap_or_default();
        let Some(selector) = selector(job) else {
            return Ok(());
        };
        let pods = self.rt.informer(kinds::POD);
        let mut writes = Vec::new();
        for pod_key in found {
            let Some(p) = pods.get(&pod_key) else {
                continue;
            };
            if obj::controller_ref(&p).is_some() || obj::deleting(&p) || !selector.selects(&p) {
                continue;
            }
            writes.push(obj::adopted(&p, kinds::JOB, job));
        }
        let uid = obj::uid(job);
        for p in pods.controlled_by(uid) {
            if selector.selects(&p) || obj::deleting(&p) {
                continue;
            }
            writes.push(obj::released(&p, uid));
        }
        for pod in writes {
            match self.rt.client.update(kinds::POD, pod).await {
                Ok(w) => pods.observe(w),
                // Gone or changed meanwhile: its own event brings it back.
                Err(ClientError::NotFound(_) | ClientError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn event(&self, job: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, None, job, kind, reason, msg)
            .await;
    }

    async fn delete_pods(&self, job: &Value, pods: &[Arc<Value>]) -> Result<(), ClientError> {
        let inf = self.rt.informer(kinds::POD);
        for p in pods {
            match self
                .rt
                .client
                .delete(
                    kinds::POD,
                    obj::namespace(p),
                    obj::name(p),
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(Some(kept)) => inf.observe(kept),
                Ok(None) | Err(ClientError::NotFound(_)) => inf.observe_deleted(p),
                Err(e) => return Err(e),
            }
            self.event(
                job,
                EventKind::Normal,
                "SuccessfulDelete",
                format!("Deleted pod: {}", obj::name(p)),
            )
            .await;
        }
        Ok(())
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(job) = self.rt.informer(kinds::JOB).get(key) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&job) {
            return Ok(Requeue::No);
        }
        let now = self.rt.clock.now();
        let ts = obj::fmt_time(now);
        if finished(&job).is_some() {
            return self.expire(&job, now).await;
        }
        let spec = &job["spec"];
        let indexed = spec["completionMode"] == "Indexed";
        let parallelism = spec["parallelism"].as_i64().unwrap_or(1).max(0);
        let completions = spec["completions"].as_i64();
        let backoff_limit = spec["backoffLimit"].as_i64().unwrap_or(6);
        let per_index = spec["backoffLimitPerIndex"]
            .as_i64()
            .filter(|_| indexed && completions.is_some());
        let policy = &spec["podFailurePolicy"];
        // Upstream's `onlyReplaceFailedPods`.
        let replace_failed_only = spec["podReplacementPolicy"] == "Failed" || policy.is_object();
        self.claim(key, &job).await?;
        let pods = self.rt.informer(kinds::POD).controlled_by(obj::uid(&job));
        let mut active: Vec<Arc<Value>> = pods
            .iter()
            .filter(|p| obj::pod_active(p))
            .cloned()
            .collect();
        let terminating = pods
            .iter()
            .filter(|p| obj::deleting(p) && !obj::pod_terminal(p))
            .count() as i64;
        let succeeded_pods: Vec<&Arc<Value>> = pods
            .iter()
            .filter(|p| obj::pod_phase(p) == "Succeeded")
            .collect();
        // Each failed Pod with what the Job's podFailurePolicy makes of it.
        let failed_pods: Vec<(&Arc<Value>, pod_failure_policy::Verdict)> = pods
            .iter()
            .filter(|p| obj::pod_phase(p) == "Failed")
            .map(|p| (p, pod_failure_policy::verdict(policy, p)))
            .collect();
        let old = &job["status"];
        let succeeded = (succeeded_pods.len() as i64).max(old["succeeded"].as_i64().unwrap_or(0));
        let counted = failed_pods.iter().filter(|(_, v)| v.counts).count() as i64;
        let mut failed = counted.max(old["failed"].as_i64().unwrap_or(0));
        let restarts: i64 = active
            .iter()
            .flat_map(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|c| c["restartCount"].as_i64())
            .fold(0, i64::saturating_add);
        let mut completed: BTreeSet<i64> = BTreeSet::new();
        if indexed {
            completed.extend(succeeded_pods.iter().filter_map(|p| index_of(p)));
        }
        // Upstream's `calculateFailedIndexes`: those already failed, and those
        // whose Pod failed past the per-index limit or by a FailIndex rule.
        let mut failed_indexes: BTreeSet<i64> = BTreeSet::new();
        if let (Some(limit), Some(c)) = (per_index, completions) {
            if let Some(text) = old["failedIndexes"].as_str() {
                for (a, b) in index_intervals(text, c) {
                    failed_indexes.extend(a..=b);
                }
            }
            for (p, v) in &failed_pods {
                let Some(ix) = index_of(p).filter(|ix| *ix < c) else {
                    continue;
                };
                if v.fail_index || (v.counts && failure_count(p, INDEX_FAILURE_COUNT) >= limit) {
                    failed_indexes.insert(ix);
                }
            }
            completed.retain(|i| !failed_indexes.contains(i));
        }
        let mut status = old.clone();
        if !status.is_object() {
            status = json!({});
        }
        let mut conditions: Vec<Value> =
            status["conditions"].as_array().cloned().unwrap_or_default();
        let suspended = spec["suspend"] == true;
        let mut requeue = Requeue::No;

        let set = |conds: &mut Vec<Value>, t: &str, s: &str, reason: &str, msg: &str| {
            obj::set_condition(
                conds,
                json!({"type": t, "status": s, "reason": reason, "message": msg, "lastProbeTime": ts}),
                &ts,
                false,
            );
        };

        if suspended {
            self.delete_pods(&job, &active).await?;
            active.clear();
            set(
                &mut conditions,
                "Suspended",
                "True",
                "JobSuspended",
                "Job suspended",
            );
            if let Some(m) = status.as_object_mut() {
                m.remove("startTime");
            }
        } else {
            if obj::condition_true(&job, "Suspended") {
                set(
                    &mut conditions,
                    "Suspended",
                    "False",
                    "JobResumed",
                    "Job resumed",
                );
            }
            if status["startTime"].is_null() {
                status["startTime"] = json!(ts);
            }
        }
        let start = obj::time_at(&status, &["startTime"]).unwrap_or(now);

        // How the Job ends, if it does now, in upstream's order: a FailJob
        // rule, the back-off limit, the deadline, then the failed indexes.
        let fail_job = failed_pods.iter().find_map(|(_, v)| v.fail_job.clone());
        let failure: Option<(&str, String)> = if suspended {
            None
        } else if let Some(msg) = fail_job {
            Some(("PodFailurePolicy", msg))
        } else if failed.saturating_add(restarts) > backoff_limit {
            Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit".into(),
            ))
        } else if let Some(ads) = spec["activeDeadlineSeconds"].as_i64() {
            let at = obj::after_secs(start, ads);
            if at <= now {
                Some((
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline".into(),
                ))
            } else {
                requeue = requeue.min(Requeue::After(obj::to_std(at - now)));
                None
            }
        } else {
            None
        }
        .or_else(|| {
            let c = completions.filter(|_| per_index.is_some())?;
            let max = spec["maxFailedIndexes"].as_i64();
            let n = failed_indexes.len() as i64;
            if max.is_some_and(|m| n > m) {
                Some((
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes".into(),
                ))
            } else if n > 0 && n + completed.len() as i64 >= c {
                Some(("FailedIndexes", "Job has failed indexes".into()))
            } else {
                None
            }
        })
        .filter(|_| !suspended);
        // An Indexed Job's successPolicy is looked at first, as upstream does.
        let by_policy = match (suspended || failure.is_some(), indexed, completions) {
            (false, true, Some(c)) => success_policy_match(spec, c, &completed),
            _ => None,
        };
        let success = by_policy.is_some()
            || (!suspended
                && failure.is_none()
                && match (indexed, completions) {
                    (true, Some(c)) => (0..c).all(|i| completed.contains(&i)),
                    (false, Some(c)) => succeeded >= c,
                    (_, None) => succeeded > 0 && active.is_empty(),
                });

        if let Some((reason, msg)) = &failure {
            // A failed Job's Pods that had not ended count as failed.
            failed = failed.saturating_add(active.len() as i64);
            self.delete_pods(&job, &active).await?;
            active.clear();
            set(&mut conditions, "FailureTarget", "True", reason, msg);
            set(&mut conditions, "Failed", "True", reason, msg);
            self.event(&job, EventKind::Warning, reason, msg.clone())
                .await;
        } else if success {
            self.delete_pods(&job, &active).await?;
            active.clear();
            let (reason, msg) = match &by_policy {
                Some(m) => ("SuccessPolicy", m.as_str()),
                None => (
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
            };
            set(&mut conditions, "SuccessCriteriaMet", "True", reason, msg);
            set(&mut conditions, "Complete", "True", reason, msg);
            status["completionTime"] = json!(ts);
            self.event(&job, EventKind::Normal, "Completed", "Job completed".into())
                .await;
        } else if !suspended {
            // How many should run now.
            let pending_indexes: Vec<i64> = if indexed {
                let running: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
                (0..completions.unwrap_or(0))
                    .filter(|i| {
                        !completed.contains(i)
                            && !running.contains(i)
                            && !failed_indexes.contains(i)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let ended = completed.len() as i64 + failed_indexes.len() as i64;
            let want = match (indexed, completions) {
                (true, Some(c)) => parallelism.min(c - ended),
                (false, Some(c)) => parallelism.min(c - succeeded),
                (_, None) => {
                    if succeeded > 0 {
                        active.len() as i64
                    } else {
                        parallelism
                    }
                }
            }
            .max(0);
            // Deleted Pods still terminating hold their place until they are
            // gone when only failed Pods are replaced.
            let have = active.len() as i64 + if replace_failed_only { terminating } else { 0 };
            if have > want {
                // Newest first: they did the least work.
                active.sort_by(|a, b| {
                    obj::str_at(b, &["metadata", "creationTimestamp"])
                        .cmp(&obj::str_at(a, &["metadata", "creationTimestamp"]))
                });
                let surplus = ((have - want) as usize).min(active.len());
                let surplus: Vec<Arc<Value>> = active.drain(..surplus).collect();
                self.delete_pods(&job, &surplus).await?;
            } else if have < want {
                let mut creations: Vec<(Option<i64>, Option<&Value>)> = Vec::new();
                if per_index.is_some() {
                    // Each index backs off from its own last failure.
                    let mut wait: Option<Duration> = None;
                    for ix in pending_indexes.iter().copied() {
                        let last = last_failed_of(&failed_pods, ix);
                        let delay = last.map_or(0, |(p, _)| {
                            backoff_after(
                                failure_count(p, INDEX_FAILURE_COUNT)
                                    .saturating_add(failure_count(p, INDEX_IGNORED_FAILURE_COUNT))
                                    .saturating_add(1),
                            )
                        });
                        let at = last
                            .and_then(|(p, _)| finish_time(p))
                            .map(|t| obj::after_secs(t, delay));
                        match at.filter(|at| *at > now) {
                            Some(at) => {
                                let w = obj::to_std(at - now);
                                wait = Some(wait.map_or(w, |x| x.min(w)));
                            }
                            None => creations.push((Some(ix), last.map(|(p, _)| &***p))),
                        }
                    }
                    if creations.is_empty()
                        && let Some(w) = wait
                    {
                        requeue = requeue.min(Requeue::After(w));
                    }
                } else {
                    // Failed Pods delay their replacements.
                    let wait = if failed > 0 {
                        let last = failed_pods
                            .iter()
                            .filter_map(|(p, _)| finish_time(p))
                            .max()
                            .unwrap_or(start);
                        let at = obj::after_secs(last, backoff_after(failed));
                        (at > now).then(|| obj::to_std(at - now))
                    } else {
                        None
                    };
                    match wait {
                        Some(w) => requeue = requeue.min(Requeue::After(w)),
                        None if indexed => {
                            creations = pending_indexes.iter().map(|i| (Some(*i), None)).collect()
                        }
                        None => creations = vec![(None, None); (want - have) as usize],
                    }
                }
                creations.truncate((want - have) as usize);
                for (index, replaced) in creations {
                    let counts = match (per_index, replaced) {
                        (Some(_), Some(p)) => Some(replacement_counts(policy, p)),
                        (Some(_), None) => Some((0, 0)),
                        (None, _) => None,
                    };
                    let created = self.create_pod(&job, index, counts).await?;
                    active.push(Arc::new(created));
                }
            }
        }

        let ready = active.iter().filter(|p| obj::pod_ready(p)).count() as i64;
        status["active"] = json!(active.len());
        status["ready"] = json!(ready);
        status["succeeded"] = json!(succeeded);
        status["failed"] = json!(failed);
        status["terminating"] = json!(terminating);
        status["uncountedTerminatedPods"] = json!({});
        if indexed && !completed.is_empty() {
            status["completedIndexes"] = json!(ranges(&completed));
        }
        if per_index.is_some() {
            status["failedIndexes"] = json!(ranges(&failed_indexes));
        }
        if !conditions.is_empty() {
            status["conditions"] = json!(conditions);
        }
        // omitempty, as upstream.
        if let Some(m) = status.as_object_mut() {
            m.retain(|k, v| !(v.as_i64() == Some(0) && k != "ready" && k != "terminating"));
        }
        if job.get("status") != Some(&status) {
            let mut new = (*job).clone();
            new["status"] = status;
            let written = self.rt.client.update_status(kinds::JOB, new).await?;
            self.rt.informer(kinds::JOB).observe(written);
        }
        Ok(requeue)
    }

    /// Creates a Pod of `job`, for `index` of an Indexed Job, carrying the
    /// index's failure counts (failed, ignored) when it has a per-index limit.
    async fn create_pod(
        &self,
        job: &Value,
        index: Option<i64>,
        counts: Option<(i64, i64)>,
    ) -> Result<Value, ClientError> {
        let name = obj::name(job);
        let prefix = match index {
            Some(i) => format!("{name}-{i}-"),
            None => format!("{name}-"),
        };
        let mut pod = pod_from_template_of(kinds::JOB, job, &job["spec"]["template"], &prefix);
        let uid = obj::uid(job).to_owned();
        let labels = &mut pod["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", uid.as_str()),
            ("batch.kubernetes.io/job-name", name),
            ("controller-uid", uid.as_str()),
            ("job-name", name),
        ] {
            if labels.get(k).is_none() {
                labels[k] = json!(v);
            }
        }
        if let Some(i) = index {
            labels[COMPLETION_INDEX] = json!(i.to_string());
            obj::set_annotation(&mut pod, COMPLETION_INDEX, &i.to_string());
            pod["spec"]["hostname"] = json!(format!("{name}-{i}"));
            add_completion_index_env(&mut pod["spec"]);
        }
        if let Some((failures, ignored)) = counts {
            obj::set_annotation(&mut pod, INDEX_FAILURE_COUNT, &failures.to_string());
            if ignored > 0 {
                obj::set_annotation(&mut pod, INDEX_IGNORED_FAILURE_COUNT, &ignored.to_string());
            }
        }
        let created = match self.rt.client.create(kinds::POD, pod).await {
            Ok(created) => created,
            Err(e) => {
                let msg = format!("Error creating: {e}");
                self.event(job, EventKind::Warning, "FailedCreate", msg)
                    .await;
                return Err(e);
            }
        };
        self.rt.informer(kinds::POD).observe(created.clone());
        self.event(
            job,
            EventKind::Normal,
            "SuccessfulCreate",
            format!("Created pod: {}", obj::name(&created)),
        )
        .await;
        Ok(Arc::unwrap_or_clone(created))
    }

    /// `ttlSecondsAfterFinished`: deletes the finished Job once it expires.
    async fn expire(&self, job: &Value, now: DateTime<Utc>) -> Result<Requeue, ClientError> {
        let Some(ttl) = job["spec"]["ttlSecondsAfterFinished"].as_i64() else {
            return Ok(Requeue::No);
        };
        let done_at = obj::time_at(job, &["status", "completionTime"])
            .or_else(|| {
                obj::condition(job, "Failed")
                    .and_then(|c| c["lastTransitionTime"].as_str())
                    .and_then(obj::parse_time)
            })
            .unwrap_or(now);
        let at = obj::after_secs(done_at, ttl);
        if at > now {
            return Ok(Requeue::After(
                obj::to_std(at - now).max(Duration::from_millis(1)),
            ));
        }
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            uid: Some(obj::uid(job).to_owned()),
            ..DeleteOptions::default()
        };
        match self
            .rt
            .client
            .delete(kinds::JOB, obj::namespace(job), obj::name(job), opts)
            .await
        {
            Ok(Some(kept)) => self.rt.informer(kinds::JOB).observe(kept),
            Ok(None) | Err(ClientError::NotFound(_)) => {
                self.rt.informer(kinds::JOB).observe_deleted(job)
            }
            Err(e) => return Err(e),
        }
        Ok(Requeue::No)
    }
}

impl Reconciler for JobController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_as_ranges() {
        let s: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(ranges(&s), "0-2,4,6-7");
    }

    #[test]
    fn success_policy_rules_match_as_upstream() {
        let done: BTreeSet<i64> = [0, 2, 3].into_iter().collect();
        let spec = |rules: Value| json!({"successPolicy": {"rules": rules}});
        let m = |rules: Value| success_policy_match(&spec(rules), 5, &done);
        assert_eq!(
            m(json!([{"succeededCount": 3}])).as_deref(),
            Some("Matched rules at index 0")
        );
        assert_eq!(m(json!([{"succeededCount": 4}])), None);
        // All of the listed indexes, or the count of them.
        assert_eq!(
            m(json!([{"succeededIndexes": "1"}, {"succeededIndexes": "2-3"}])).as_deref(),
            Some("Matched rules at index 1")
        );
        assert!(m(json!([{"succeededIndexes": "0-1", "succeededCount": 1}])).is_some());
        assert!(m(json!([{"succeededIndexes": "0-1"}])).is_none());
        // A malformed or out-of-range list never matches.
        assert!(m(json!([{"succeededIndexes": "x"}])).is_none());
        assert!(m(json!([{"succeededIndexes": "7"}])).is_none());
    }
}
