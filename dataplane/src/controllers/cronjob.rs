//! The CronJob controller: creates a Job named `<cronjob>-<minutes since the
//! epoch>` when the clock passes a scheduled time (5-field schedules and the
//! `@yearly`/`@annually`/`@monthly`/`@weekly`/`@daily`/`@midnight`/`@hourly`
//! macros), honouring `suspend`, `concurrencyPolicy` (Allow, Forbid, Replace),
//! `startingDeadlineSeconds` and the successful/failed history limits, and
//! keeping `status.active`, `lastScheduleTime` and `lastSuccessfulTime`.
//!
//! Not done: `timeZone` other than UTC (such CronJobs get an `UnknownTimeZone`
//! warning Event and are not run).

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use serde_json::{Value, json};
use std::sync::Arc;

use super::client::{BoxFuture, ClientError, DeleteOptions, Propagation, kinds};
use super::events::{EventKind, Recorder};
use super::job::finished;
use super::obj;
use super::runtime::{ObjKey, Reconciler, Registration, Requeue, Runtime};

const COMPONENT: &str = "cronjob-controller";
/// The annotation on each Job with the time it was scheduled for.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Parses a CronJob schedule as upstream accepts it (5 fields or a macro).
pub fn parse_schedule(s: &str) -> Result<Cron, String> {
    let s = s.trim();
    let s = if s.eq_ignore_ascii_case("@midnight") {
        "0 0 * * *"
    } else {
        s
    };
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(s)
        .map_err(|e| e.to_string())
}

/// The CronJob controller.
pub struct CronJobController {
    rt: Arc<Runtime>,
    recorder: Recorder,
}

impl CronJobController {
    /// Wires the controller to the CronJob and Job informers.
    pub fn register(rt: &Arc<Runtime>, recorder: Recorder) -> Registration {
        let queue = rt.queue("cronjob");
        let q = queue.clone();
        rt.informer(kinds::CRON_JOB)
            .on_change(move |c| q.add(ObjKey::of(&c.new)));
        rt.enqueue_controllers_of(kinds::JOB, "CronJob", &queue);
        Registration {
            name: "cronjob",
            queue,
            reconciler: Arc::new(Self {
                rt: rt.clone(),
                recorder,
            }),
        }
    }

    async fn event(&self, cj: &Value, kind: EventKind, reason: &str, msg: String) {
        self.recorder
            .record(COMPONENT, None, cj, kind, reason, msg)
            .await;
    }

    async fn delete_job(&self, cj: &Value, job: &Value) -> Result<(), ClientError> {
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
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
        self.event(
            cj,
            EventKind::Normal,
            "SuccessfulDelete",
            format!("Deleted job {}", obj::name(job)),
        )
        .await;
        Ok(())
    }

    async fn sync(&self, key: &ObjKey) -> Result<Requeue, ClientError> {
        let Some(cj) = self.rt.informer(kinds::CRON_JOB).get(key) else {
            return Ok(Requeue::No);
        };
        if obj::deleting(&cj) {
            return Ok(Requeue::No);
        }
        let now = self.rt.clock.now();
        let spec = &cj["spec"];
        let schedule = match parse_schedule(spec["schedule"].as_str().unwrap_or("")) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "unparseable schedule: \"{}\" : {e}",
                    spec["schedule"].as_str().unwrap_or("")
                );
                self.event(&cj, EventKind::Warning, "UnparseableSchedule", msg)
                    .await;
                return Ok(Requeue::No);
            }
        };
        if let Some(tz) = spec["timeZone"].as_str()
            && !matches!(tz, "UTC" | "Etc/UTC" | "")
        {
            self.event(
                &cj,
                EventKind::Warning,
                "UnknownTimeZone",
                format!("invalid timeZone: \"{tz}\": kemu schedules in UTC only"),
            )
            .await;
            return Ok(Requeue::No);
        }
        let mut status = cj["status"].clone();
        if !status.is_object() {
            status = json!({});
        }
        let mut jobs: Vec<Arc<Value>> = self.rt.informer(kinds::JOB).controlled_by(obj::uid(&cj));
        jobs.sort_by(|a, b| {
            obj::annotation(a, SCHEDULED_TIMESTAMP)
                .cmp(&obj::annotation(b, SCHEDULED_TIMESTAMP))
                .then_with(|| obj::name(a).cmp(obj::name(b)))
        });
        let was_active: Vec<String> = status["active"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut active = Vec::new();
        for j in &jobs {
            match finished(j) {
                None => active.push(j.clone()),
                Some(cond) => {
                    if was_active.iter().any(|n| n == obj::name(j)) {
                        self.event(
                            &cj,
                            EventKind::Normal,
                            "SawCompletedJob",
                            format!("Saw completed job: {}, condition: {cond}", obj::name(j)),
                        )
                        .await;
                    }
                    if cond == "Complete"
                        && let Some(t) = j["status"]["completionTime"].as_str()
                        && status["lastSuccessfulTime"].as_str().is_none_or(|l| l < t)
                    {
                        status["lastSuccessfulTime"] = json!(t);
                    }
                }
            }
        }
        // History limits: oldest finished Jobs beyond them go.
        for (cond, limit) in [
            (
                "Complete",
                spec["successfulJobsHistoryLimit"].as_i64().unwrap_or(3),
            ),
            (
                "Failed",
                spec["failedJobsHistoryLimit"].as_i64().unwrap_or(1),
            ),
        ] {
            let done: Vec<&Arc<Value>> = jobs
                .iter()
                .filter(|j| finished(j) == Some(cond) && !obj::deleting(j))
                .collect();
            let surplus = done.len() as i64 - limit.max(0);
            for j in done.into_iter().take(surplus.max(0) as usize) {
                self.delete_job(&cj, j).await?;
            }
        }
        let mut requeue = Requeue::No;
        let next = schedule.find_next_occurrence(&now, false).ok();
        if let Some(n) = next {
            // Exactly at the scheduled instant, so a fake clock fires it.
            requeue = Requeue::After(obj::to_std(n - now));
        }
        if spec["suspend"] != true {
            let since = obj::time_at(&cj, &["status", "lastScheduleTime"])
                .or_else(|| obj::time_at(&cj, &["metadata", "creationTimestamp"]))
                .unwrap_or(now);
            let most_recent: Option<DateTime<Utc>> = schedule
                .find_previous_occurrence(&now, true)
                .ok()
                .filter(|t| *t > since);
            if let Some(scheduled) = most_recent {
                let too_late = spec["startingDeadlineSeconds"]
                    .as_i64()
                    .is_some_and(|d| obj::after_secs(scheduled, d) < now);
                if too_late {
                    let msg = format!(
                        "Missed scheduled time to start a job: {}",
                        scheduled.to_rfc2822()
                    );
                    self.event(&cj, EventKind::Warning, "MissSchedule", msg)
                        .await;
                } else {
                    let policy = spec["concurrencyPolicy"].as_str().unwrap_or("Allow");
                    let run = match policy {
                        "Forbid" if !active.is_empty() => {
                            self.event(&cj, EventKind::Normal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid".into())
                                .await;
                            false
                        }
                        "Replace" => {
                            for j in active.drain(..) {
                                self.delete_job(&cj, &j).await?;
                            }
                            true
                        }
                        _ => true,
                    };
                    if run {
                        let job = self.create_job(&cj, scheduled).await?;
                        active.push(Arc::new(job));
                        status["lastScheduleTime"] = json!(obj::fmt_time(scheduled));
                    }
                }
            }
        }
        let refs: Vec<Value> = active
            .iter()
            .map(|j| {
                json!({
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": obj::name(j),
                    "namespace": obj::namespace(j),
                    "uid": obj::uid(j),
                    "resourceVersion": j["metadata"]["resourceVersion"],
                })
            })
            .collect();
        match refs.is_empty() {
            true => {
                if let Some(m) = status.as_object_mut() {
                    m.remove("active");
                }
            }
            false => status["active"] = json!(refs),
        }
        if cj.get("status").unwrap_or(&json!({})) != &status {
            let mut new = (*cj).clone();
            new["status"] = status;
            let written = self.rt.client.update_status(kinds::CRON_JOB, new).await?;
            self.rt.informer(kinds::CRON_JOB).observe(written);
        }
        Ok(requeue)
    }

    async fn create_job(&self, cj: &Value, scheduled: DateTime<Utc>) -> Result<Value, ClientError> {
        let name = format!("{}-{}", obj::name(cj), scheduled.timestamp().div_euclid(60));
        let template = &cj["spec"]["jobTemplate"];
        let mut meta = json!({
            "name": name,
            "namespace": obj::namespace(cj),
            "ownerReferences": [obj::controller_ref_to(kinds::CRON_JOB, cj)],
        });
        for f in ["labels", "annotations"] {
            if let Some(v) = template["metadata"].get(f) {
                meta[f] = v.clone();
            }
        }
        let mut job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": template["spec"].clone(),
        });
        obj::set_annotation(&mut job, SCHEDULED_TIMESTAMP, &obj::fmt_time(scheduled));
        match self.rt.client.create(kinds::JOB, job).await {
            Ok(created) => {
                self.rt.informer(kinds::JOB).observe(created.clone());
                self.event(
                    cj,
                    EventKind::Normal,
                    "SuccessfulCreate",
                    format!("Created job {name}"),
                )
                .await;
                Ok(Arc::unwrap_or_clone(created))
            }
            // Created by an earlier attempt whose status write was lost.
            Err(ClientError::AlreadyExists(_)) => self
                .rt
                .client
                .get(kinds::JOB, obj::namespace(cj), &name)
                .await
                .map(Arc::unwrap_or_clone),
            Err(e) => Err(e),
        }
    }
}

impl Reconciler for CronJobController {
    fn reconcile<'a>(&'a self, key: &'a ObjKey) -> BoxFuture<'a, Result<Requeue, ClientError>> {
        Box::pin(self.sync(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_and_macros() {
        let t = DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(); // 2026-01-01 00:00 Thu
        let c = parse_schedule("*/5 * * * *").unwrap();
        assert_eq!(
            c.find_next_occurrence(&t, false).unwrap().timestamp(),
            1_767_225_600 + 300
        );
        let c = parse_schedule("@hourly").unwrap();
        assert_eq!(
            c.find_next_occurrence(&t, false).unwrap().timestamp(),
            1_767_225_600 + 3600
        );
        assert!(parse_schedule("@midnight").is_ok());
        assert!(parse_schedule("0 0 * * * *").is_err());
        assert!(parse_schedule("nonsense").is_err());
    }
}
