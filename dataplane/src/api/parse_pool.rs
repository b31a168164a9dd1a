//! Threads that parse large request bodies at the lowest CPU priority
//! (`nice` 19). On a machine with few cores a 3 MiB body or one nested
//! thousands of levels deep would otherwise take a core from the workers
//! serving the clusters' small requests; at nice 19 the scheduler gives the
//! parse only the time those workers leave.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// Threads in the pool: parses wait for one rather than share a core with
/// the workers.
const THREADS: usize = 2;

fn queue() -> &'static Mutex<mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(Mutex::new(rx));
        for n in 0..THREADS {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("kemu-parse-{n}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "starting a parse thread");
            }
        }
        Mutex::new(tx)
    })
}

/// This thread at the lowest priority of its policy (nice 19); a failure
/// leaves it where it was.
fn lower_priority() {
    if let Err(e) =
        thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
    {
        tracing::debug!(error = ?e, "parse thread keeps its priority");
    }
}

/// Runs `f` on the pool; `None` if it panicked or the pool is gone.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        match out {
            Ok(v) => {
                let _ = tx.send(v);
            }
            Err(panic) => {
                let panic = kemu_shared::panics::message(panic.as_ref());
                tracing::error!(%panic, "parsing a request body panicked");
            }
        }
    });
    let sent = queue().lock().ok()?.send(job);
    sent.ok()?;
    rx.await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_and_a_panic_is_none() {
        assert_eq!(run(|| 2 + 2).await, Some(4));
        let panicked: Option<()> = run(|| panic!("a bug")).await;
        assert_eq!(panicked, None);
        assert_eq!(run(|| "serves on").await, Some("serves on"));
    }

    #[tokio::test]
    async fn the_threads_run_at_nice_19() {
        let stat = run(|| std::fs::read_to_string("/proc/thread-self/stat").unwrap())
            .await
            .unwrap();
        // The fields after the command's closing parenthesis; nice is the 19th
        // field of the line, the 17th of these.
        let rest = stat.rsplit_once(')').unwrap().1;
        let nice = rest.split_whitespace().nth(16).unwrap();
        assert_eq!(nice, "19", "{stat}");
    }
}
