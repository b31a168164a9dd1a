//! A container's own command, run by the simulated kubelet when it is a
//! shell script kemu cannot read at a glance (`sh -c 'if [ … ]; then exit 1;
//! fi'`): the script runs in kemu's shell, in the container's filesystem and
//! environment, on a clock of its own that `sleep` advances at once. What it
//! leaves is the container's run: its exit code and how long it slept, so
//! the kubelet can lay the run out on the cluster's clock. Its writes land
//! when the run starts (a marker file on an emptyDir or hostPath is there
//! for the next run, as the e2e suite's `failOnce` scripts expect).
//!
//! A script that sleeps past [`FOREVER`] in all, or goes on past
//! [`MAX_STEPS`] checks of its clock (`while true; do sleep 5; done`),
//! runs until the container is stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Container;
use super::session::{self, End, Event, Request};
use super::shell::Host;

/// Sleeping this long in all is running until stopped (ten years).
pub const FOREVER: Duration = Duration::from_secs(10 * 365 * 86_400);

/// How many times a script may look at its clock (each `sleep`, each loop
/// turn) before it counts as running until stopped.
pub const MAX_STEPS: u64 = 100_000;

/// How one run of a container's command ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It exits with this code after running this long.
    Exits(i32, Duration),
    /// It runs until stopped.
    Forever,
}

/// The shell words of a command a container runs as a script: `[sh, -c,
/// SCRIPT, …]` (sh, bash or ash, by any path).
pub fn script(container: &serde_json::Value) -> Option<Vec<String>> {
    let words: Vec<String> = ["command", "args"]
        .iter()
        .flat_map(|f| container[*f].as_array().into_iter().flatten())
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect();
    let shell = words.first()?.rsplit('/').next()?;
    (matches!(shell, "sh" | "bash" | "ash")
        && words.get(1).is_some_and(|w| w == "-c")
        && words.len() >= 3)
        .then_some(words)
}

/// Runs `command` in `container`, starting at `start` (seconds since the
/// epoch on the cluster's clock), to its end.
pub async fn run(container: Container, command: Vec<String>, start: i64) -> Outcome {
    let clock = Arc::new(OwnClock {
        start,
        slept_ms: AtomicU64::new(0),
        steps: AtomicU64::new(0),
    });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    session::start(
        container,
        Request {
            command,
            tty: false,
        },
        None,
        clock.clone(),
        tx,
    );
    let mut code = 0;
    while let Some(event) = rx.recv().await {
        if let Event::Done(end) = event {
            code = match end {
                End::Exit(c) => c,
                // containerd cannot start it: the kubelet's StartError code.
                End::NotFound(_) => 128,
            };
        }
    }
    if clock.exhausted() {
        Outcome::Forever
    } else {
        Outcome::Exits(code, clock.slept())
    }
}

/// A script's own clock: `sleep` adds to it and returns at once.
struct OwnClock {
    start: i64,
    slept_ms: AtomicU64,
    steps: AtomicU64,
}

impl OwnClock {
    fn slept(&self) -> Duration {
        Duration::from_millis(self.slept_ms.load(Ordering::Relaxed))
    }

    fn exhausted(&self) -> bool {
        self.steps.load(Ordering::Relaxed) > MAX_STEPS || self.slept() > FOREVER
    }
}

impl Host for OwnClock {
    fn now(&self) -> i64 {
        let secs = i64::try_from(self.slept().as_secs()).unwrap_or(i64::MAX);
        self.start.saturating_add(secs)
    }

    fn sleep(&self, d: Duration) -> bool {
        if self.ended() {
            return false;
        }
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .slept_ms
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                Some(s.saturating_add(ms))
            });
        !self.exhausted()
    }

    fn ended(&self) -> bool {
        self.steps.fetch_add(1, Ordering::Relaxed);
        self.exhausted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::fs::{Fs, Node, shared};
    use serde_json::json;

    fn container(env: &[(&str, &str)]) -> Container {
        Container {
            fs: Fs::new(shared(Node::dir(0o755, 0))),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: "/".into(),
            hostname: "p".into(),
            image: "busybox".into(),
        }
    }

    async fn outcome(c: Container, script: &str) -> Outcome {
        run(c, vec!["sh".into(), "-c".into(), script.into()], 0).await
    }

    #[tokio::test]
    async fn scripts_end_with_their_code_after_their_sleeps() {
        let odd = "if [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then exit 1; else exit 0; fi";
        assert_eq!(
            outcome(container(&[("JOB_COMPLETION_INDEX", "3")]), odd).await,
            Outcome::Exits(1, Duration::ZERO)
        );
        assert_eq!(
            outcome(container(&[("JOB_COMPLETION_INDEX", "2")]), odd).await,
            Outcome::Exits(0, Duration::ZERO)
        );
        assert_eq!(
            outcome(container(&[]), "sleep 5; echo hi; sleep 1.5; exit 3").await,
            Outcome::Exits(3, Duration::from_millis(6500))
        );
        assert_eq!(
            outcome(container(&[]), "while true; do sleep 5; done").await,
            Outcome::Forever
        );
        assert_eq!(
            outcome(container(&[]), "sleep infinity").await,
            Outcome::Forever
        );
        assert_eq!(
            outcome(container(&[]), "while :; do :; done").await,
            Outcome::Forever
        );
    }

    #[tokio::test]
    async fn a_marker_file_is_there_for_the_next_run() {
        let c = container(&[]);
        let once = "if [[ -r /tmp/foo ]]\nthen\n  exit 0\nelse\n  touch /tmp/foo\n  exit 1\nfi";
        let _ = c.fs.mkdir("/", "/tmp", true, 0);
        assert_eq!(
            outcome(c.clone(), once).await,
            Outcome::Exits(1, Duration::ZERO)
        );
        assert_eq!(outcome(c, once).await, Outcome::Exits(0, Duration::ZERO));
    }

    #[test]
    fn only_shell_scripts_are_run() {
        assert!(script(&json!({"command": ["/bin/sh", "-c"], "args": ["exit 1"]})).is_some());
        assert!(script(&json!({"command": ["bash", "-c", "x"]})).is_some());
        assert!(script(&json!({"command": ["sleep", "5"]})).is_none());
        assert!(script(&json!({"command": ["sh", "-c"]})).is_none());
        assert!(script(&json!({"image": "nginx"})).is_none());
    }
}
