//! Time for everything in kemu. Nothing else reads the wall clock: provisioning
//! delays, pod start times and token expiry all ask the [`Clock`] they were handed,
//! so tests advance a [`FakeClock`] instead of sleeping.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use tokio::sync::watch;

/// A source of the current time and of timers that follow it.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;

    /// Completes once [`Clock::now`] has reached `deadline`.
    fn sleep_until(&self, deadline: DateTime<Utc>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

    /// Completes once `delay` has passed on this clock.
    fn sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let delay = chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
        let deadline = self
            .now()
            .checked_add_signed(delay)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        self.sleep_until(deadline)
    }
}

/// The clock handed around: cheap to clone, shared by every part.
pub type SharedClock = Arc<dyn Clock>;

/// Wall time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl SystemClock {
    /// A [`SharedClock`] reading wall time.
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }

    /// A monotonic instant, for measuring how long something took (benchmarks,
    /// start-up figures); never used to decide what an object shows.
    pub fn instant() -> std::time::Instant {
        std::time::Instant::now()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn sleep_until(&self, deadline: DateTime<Utc>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let wait = (deadline - Utc::now()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock that only moves when a test moves it.
#[derive(Debug)]
pub struct FakeClock {
    now: Mutex<DateTime<Utc>>,
    changed: watch::Sender<DateTime<Utc>>,
}

impl FakeClock {
    /// A fake clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Arc<Self> {
        Arc::new(Self {
            now: Mutex::new(start),
            changed: watch::channel(start).0,
        })
    }

    /// A fake clock standing at 2026-01-01T00:00:00Z, so runs are reproducible.
    pub fn at_epoch() -> Arc<Self> {
        Self::new(DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default())
    }

    /// Moves the clock forward by `by`, waking every timer that is now due.
    pub fn advance(&self, by: Duration) {
        let by = chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX);
        let mut now = self.now.lock();
        *now += by;
        self.changed.send_replace(*now);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock()
    }

    fn sleep_until(&self, deadline: DateTime<Utc>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut rx = self.changed.subscribe();
        Box::pin(async move {
            // The sender lives as long as the clock; if it is gone, nothing will
            // ever advance time again, so the timer simply never fires.
            let _ = rx.wait_for(|now| *now >= deadline).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[tokio::test]
    async fn fake_timer_fires_only_when_advanced() {
        let clock = FakeClock::at_epoch();
        let mut timer = clock.sleep(Duration::from_secs(10));
        assert!((&mut timer).now_or_never().is_none());
        clock.advance(Duration::from_secs(9));
        assert!((&mut timer).now_or_never().is_none());
        clock.advance(Duration::from_secs(1));
        assert!(timer.now_or_never().is_some());
        assert_eq!(clock.now().timestamp(), 1_767_225_610);
    }
}
