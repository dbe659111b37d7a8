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

/// The system's coarse real-time clock (`CLOCK_REALTIME_COARSE`): read from the kernel's
/// vDSO data page with no system call and no thread of its own (about 9 ns a read on the
/// 2-core VM, where `SystemTime::now` takes 59 ns), at the resolution of the kernel's tick
/// (1–4 ms; 4 ms there). Readings lag the system clock by up to a tick: good for checking
/// whether a deadline has passed, not for computing one (the server counts deadlines from the
/// system clock). Where the coarse clock is unavailable it reads [`SystemClock`].
///
/// It replaced a ticker thread that refreshed an atomic every millisecond (one relaxed load
/// per read, but a thousand wake-ups a second on an idle server).
#[derive(Debug, Default, Clone, Copy)]
pub struct CoarseClock;

impl Clock for CoarseClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, which
        // writes only it.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        if rc != 0 {
            return SystemClock.now_ms();
        }
        ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_lags_the_system_clock_by_at_most_a_tick() {
        for _ in 0..1000 {
            let (coarse, system) = (CoarseClock.now_ms(), SystemClock.now_ms());
            assert!(coarse <= system + 1, "{coarse} ahead of {system}");
            assert!(system.saturating_sub(coarse) <= 20, "{coarse} behind {system}");
        }
    }
}
