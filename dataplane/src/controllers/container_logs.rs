//! What the simulated kubelet's containers write: synthetic, deterministic log
//! lines that are a pure function of the container's run (its start, its end
//! if it ended) and the clock, so `kubectl logs` shows the same text on every
//! call and `logs -f` sees new lines as a fake clock advances.
//!
//! A running container whose exit the Pod's annotations script
//! (`kemu.dev/exit-after`) has its exit line at that instant, whether or not
//! the kubelet has reported the exit yet. A run writes a start line, then the lines of the Pod's `kemu.dev/log`
//! annotation (one per line of its value, at the start instant: a way to
//! script what a test expects to read), then a heartbeat every
//! [`HEARTBEAT`], and, when it ended, an exit line at its end.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::obj;

/// A Pod annotation whose lines every container of the Pod writes at start.
pub const LOG_ANNOTATION: &str = "kemu.dev/log";
/// Seconds between two heartbeat lines.
pub const HEARTBEAT: i64 = 10;

/// One run of a container: what its log is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRun {
    /// Container name.
    pub container: String,
    /// Image it runs.
    pub image: String,
    /// When it started.
    pub started: DateTime<Utc>,
    /// When and with what code it exited, if it did.
    pub exited: Option<(DateTime<Utc>, i64)>,
    /// Lines scripted by [`LOG_ANNOTATION`].
    pub scripted: Vec<String>,
}

/// One log line and when it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When the container wrote it.
    pub at: DateTime<Utc>,
    /// The text, without the newline.
    pub text: String,
}

impl ContainerRun {
    /// The run described by a container state (`running` or `terminated`)
    /// of container `name` in `pod`.
    pub fn from_state(pod: &Value, name: &str, state: &Value) -> Option<Self> {
        let (started, exited) = if let Some(r) = state.get("running") {
            // A scripted exit is known ahead: the log ends there even before
            // the kubelet has reported it.
            let started = obj::time_at(r, &["startedAt"])?;
            let exit =
                super::kubelet::scripted_exit(pod).map(|(after, code)| (started + after, code));
            (started, exit)
        } else if let Some(t) = state.get("terminated") {
            let finished = obj::time_at(t, &["finishedAt"])?;
            let started = obj::time_at(t, &["startedAt"]).unwrap_or(finished);
            (
                started,
                Some((finished, t["exitCode"].as_i64().unwrap_or(0))),
            )
        } else {
            return None;
        };
        let image = ["containers", "initContainers", "ephemeralContainers"]
            .iter()
            .filter_map(|f| pod["spec"][f].as_array())
            .flatten()
            .find(|c| c["name"] == name)
            .and_then(|c| c["image"].as_str())
            .unwrap_or_default()
            .to_owned();
        let scripted = obj::annotation(pod, LOG_ANNOTATION)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        Some(Self {
            container: name.to_owned(),
            image,
            started,
            exited,
            scripted,
        })
    }

    /// Every line written up to and including `now`.
    pub fn lines_until(&self, now: DateTime<Utc>) -> Vec<LogLine> {
        let end = match self.exited {
            Some((at, _)) => at.min(now),
            None => now,
        };
        let mut out = Vec::new();
        if self.started > end {
            return out;
        }
        let c = &self.container;
        out.push(LogLine {
            at: self.started,
            text: format!("kemu: container {c} started (image {})", self.image),
        });
        out.extend(self.scripted.iter().map(|text| LogLine {
            at: self.started,
            text: text.clone(),
        }));
        let mut k = 1;
        loop {
            let at = self.started + obj::secs(HEARTBEAT * k);
            let before_exit = self.exited.is_none_or(|(e, _)| at < e);
            if at > end || !before_exit {
                break;
            }
            out.push(LogLine {
                at,
                text: format!("kemu: container {c} running for {}s", HEARTBEAT * k),
            });
            k += 1;
        }
        if let Some((at, code)) = self.exited
            && at <= now
        {
            out.push(LogLine {
                at,
                text: format!("kemu: container {c} exited with code {code}"),
            });
        }
        out
    }

    /// When the next line after `now` is written (`None` once it exited).
    pub fn next_line_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if now < self.started {
            return Some(self.started);
        }
        let k = (now - self.started).num_seconds() / HEARTBEAT + 1;
        let next = self.started + obj::secs(HEARTBEAT * k);
        match self.exited {
            Some((e, _)) if e <= now => None,
            Some((e, _)) => Some(next.min(e)),
            None => Some(next),
        }
    }
}

/// A timestamp as Go's RFC3339Nano writes it (trailing zeros dropped), the
/// prefix `timestamps=true` adds.
pub fn rfc3339_nano(t: DateTime<Utc>) -> String {
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos == 0 {
        return format!("{base}Z");
    }
    let frac = format!("{nanos:09}");
    format!("{base}.{}Z", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_follow_the_run_and_the_clock() {
        let pod = json!({"metadata": {"annotations": {LOG_ANNOTATION: "hello\nworld"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
        let state = json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}});
        let run = ContainerRun::from_state(&pod, "app", &state).unwrap();
        let t0 = run.started;
        let lines = run.lines_until(t0 + obj::secs(25));
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "kemu: container app started (image nginx)",
                "hello",
                "world",
                "kemu: container app running for 10s",
                "kemu: container app running for 20s",
            ]
        );
        assert_eq!(
            run.next_line_after(t0 + obj::secs(25)),
            Some(t0 + obj::secs(30))
        );
        let done = json!({"terminated": {"startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:15Z", "exitCode": 3}});
        let run = ContainerRun::from_state(&pod, "app", &done).unwrap();
        let lines = run.lines_until(t0 + obj::secs(100));
        assert_eq!(
            lines.last().unwrap().text,
            "kemu: container app exited with code 3"
        );
        assert_eq!(lines.len(), 5);
        assert_eq!(run.next_line_after(t0 + obj::secs(100)), None);
        assert_eq!(rfc3339_nano(t0), "2026-01-01T00:00:00Z");
    }
}
