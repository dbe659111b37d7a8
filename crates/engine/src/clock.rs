//! Time, injected.
//!
//! The engine never reads the system clock itself: it is given a [`Clock`]. The server uses
//! [`SystemClock`]; the simulator and tests use [`ManualClock`], so expiry is tested without
//! sleeping and the same trace gives the same result bit for bit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
///
/// # Contract
///
/// The engine calls [`Clock::now_ms`] from any thread, on the request path (every expiry
/// check, every store with a TTL), while it holds an epoch pin and sometimes a bucket lock.
/// The caller guarantees nothing about how often or from where it calls.
///
/// An implementation:
/// - MUST NOT block, sleep, take a lock that a request can hold, or do I/O in `now_ms`;
/// - MUST NOT allocate per call;
/// - MUST be callable concurrently from every worker and the cleaner (`Send + Sync`);
/// - MAY return a time behind the last one it returned (the engine tolerates time moving
///   backwards: an item looks live again until the clock passes its deadline once more), but
///   SHOULD move forward;
/// - MUST, where the engine runs inline for determinism (the simulator, tests), read only
///   injected state ([`ManualClock`]), never the system clock, so that the same trace gives
///   the same result.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since 1970-01-01T00:00:00Z. Cheap, non-blocking, allocation-free.
    fn now_ms(&self) -> u64;
}

/// The operating system's real-time clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told to. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        ManualClock { now: Arc::new(AtomicU64::new(start_ms)) }
    }

    /// Moves time forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the time to `ms` (may move backwards; the engine tolerates it).
    pub fn set(&self, ms: u64) {
        self.now.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// The system clock read through an atomic that a ticker thread refreshes every millisecond:
/// one relaxed load per read instead of a clock call. Readings never lead the system clock and
/// lag it by up to a tick, more while the ticker waits for a CPU (several ms on a loaded
/// machine): good for checking whether a deadline has passed, not for computing one (the
/// server counts deadlines from the system clock). The ticker stops once the last clone is
/// dropped.
#[derive(Debug, Clone)]
pub struct CoarseClock {
    now: Arc<AtomicU64>,
}

impl CoarseClock {
    /// Starts the ticker thread.
    pub fn start() -> std::io::Result<Self> {
        let now = Arc::new(AtomicU64::new(SystemClock.now_ms()));
        let ticker = Arc::downgrade(&now);
        std::thread::Builder::new().name("fridge-clock".into()).spawn(move || {
            while let Some(now) = ticker.upgrade() {
                now.store(SystemClock.now_ms(), Ordering::Relaxed);
                drop(now);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })?;
        Ok(CoarseClock { now })
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}
