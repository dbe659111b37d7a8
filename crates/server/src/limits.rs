//! Per-tenant limits: connections logged in at once, and requests per second.
//!
//! Both are set per tenant in the configuration (`max_connections`,
//! `max_requests_per_second`; none by default) and apply to connections *logged in* as the
//! tenant (a password login in any protocol, or a TLS client certificate). `default` is the
//! admin and is never limited; clients that have not logged in (key-prefix routing, a plain
//! server) are not counted.
//!
//! # Connections
//!
//! [`TenantLimits`] counts the connections logged in as each tenant, in one atomic per
//! tenant. A login takes a slot with a compare-and-swap that never goes past the tenant's
//! `max_connections` (so concurrent logins on several workers cannot overshoot); a login
//! past it is refused and the connection stays as it was. A connection gives its slot back
//! when it logs out (`RESET`), logs in as another tenant, or closes. Logging in again as the
//! tenant it already is keeps its slot. A lowered limit (reload) closes nothing: it refuses
//! logins until the count is below it.
//!
//! # Requests per second
//!
//! Each tenant with `max_requests_per_second = r` has a token bucket of `r` tokens (one
//! second's worth) that regains `r` a second, kept as GCRA's "theoretical arrival time": the
//! moment the bucket is full again, in nanoseconds of the server clock, in one atomic word
//! ([`Bucket`]). Taking `n` tokens moves it `n` intervals (1/r s) later; the bucket holds
//! `(tau − (tat − now)) / interval` tokens, `tau` being `r` intervals (one second).
//!
//! Workers do not touch that word per request. Each keeps a few tokens of its own per tenant
//! ([`LocalTokens`], plain integers only its thread touches): a request spends one of them,
//! and only when none is left does the worker take a batch of [`batch`]`(r)` tokens (at most
//! [`MAX_BATCH`], 1 for rates under 200 a second) from the shared bucket with one
//! compare-and-swap; if the bucket has fewer, it takes what there is, and with none the
//! request is refused. So a limited tenant's request costs a load, a compare and a store on
//! its worker, plus one shared compare-and-swap per batch; a tenant without a limit costs one
//! predictable branch (a flag in the session, refreshed at login and on reload).
//!
//! Precision: the bucket itself admits at most `r × t + r` requests in `t` seconds. Tokens a
//! worker took but has not spent yet are spent later without asking the bucket again, so a
//! tenant may go beyond that by at most `workers × (batch − 1)` requests (with 4 workers and
//! a rate of 50,000/s: 252, about half a percent of a second's worth). A reload that changes
//! a rate keeps the bucket's time word, read in the new rate's intervals.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use fridge_engine::TenantId;
use fridge_engine::item::MAX_TENANTS;

/// The most tokens a worker takes from a tenant's bucket at once.
pub(crate) const MAX_BATCH: u32 = 64;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A tenant's request rate: `per_second` tokens a second, as many at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Requests a second (at least 1).
    pub per_second: u32,
}

impl Rate {
    /// Nanoseconds to regain one token (at least 1).
    pub(crate) fn interval_ns(self) -> u64 {
        (NANOS_PER_SEC / u64::from(self.per_second.max(1))).max(1)
    }

    /// How far ahead of now the bucket's time word may be while a token is left: the burst
    /// (one second's worth) in intervals.
    fn tau_ns(self) -> u64 {
        self.interval_ns() * u64::from(self.per_second.max(1))
    }
}

/// Tokens a worker takes from the shared bucket at once: a hundredth of the rate, between 1
/// and [`MAX_BATCH`].
pub(crate) fn batch(rate: Rate) -> u32 {
    (rate.per_second / 100).clamp(1, MAX_BATCH)
}

/// One tenant's shared token bucket: the time it is full again, in ns (see the module doc).
/// On a cache line of its own, since several workers take batches from it.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Bucket {
    full_at_ns: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

impl Bucket {
    /// Takes up to `want` tokens at `now_ns`; returns how many it took (0: the bucket is
    /// empty).
    pub(crate) fn take(&self, rate: Rate, now_ns: u64, want: u32) -> u32 {
        let interval = rate.interval_ns();
        let tau = rate.tau_ns();
        let mut full_at = self.full_at_ns.load(Ordering::Relaxed);
        loop {
            let base = full_at.max(now_ns);
            let debt = base - now_ns;
            if debt >= tau {
                return 0;
            }
            let available = (tau - debt) / interval;
            let n = available.min(u64::from(want));
            if n == 0 {
                return 0;
            }
            let next = base.saturating_add(n * interval);
            match self.full_at_ns.compare_exchange_weak(
                full_at,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                // `n` is at most `want`, a u32.
                Ok(_) => return u32::try_from(n).unwrap_or(want),
                Err(seen) => full_at = seen,
            }
        }
    }
}

/// Refusals of [`TenantLimits::connect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

/// The shared side of the limits: per tenant, the connections logged in and the request
/// bucket. Indexed by tenant id; lives in `Shared` for the life of the process, so counts
/// and buckets carry over reloads.
#[derive(Debug)]
pub(crate) struct TenantLimits {
    connections: Box<[AtomicU32]>,
    buckets: Box<[Bucket]>,
}

impl Default for TenantLimits {
    fn default() -> Self {
        TenantLimits {
            connections: (0..MAX_TENANTS).map(|_| AtomicU32::new(0)).collect(),
            buckets: (0..MAX_TENANTS).map(|_| Bucket::default()).collect(),
        }
    }
}

impl TenantLimits {
    /// Takes a connection slot of `tenant`, unless `max` slots are taken already.
    pub(crate) fn connect(&self, tenant: TenantId, max: Option<u32>) -> Result<(), Full> {
        let count = &self.connections[usize::from(tenant.0)];
        match max {
            None => {
                count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Some(max) => count
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1))
                .map(|_| ())
                .map_err(|_| Full),
        }
    }

    /// Gives back a slot taken by [`TenantLimits::connect`].
    pub(crate) fn disconnect(&self, tenant: TenantId) {
        let count = &self.connections[usize::from(tenant.0)];
        // Never below zero, whatever happens (a slot given back twice would be a bug).
        let _ = count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Connections logged in as `tenant` now.
    pub(crate) fn connections(&self, tenant: TenantId) -> u32 {
        self.connections[usize::from(tenant.0)].load(Ordering::Relaxed)
    }

    fn bucket(&self, tenant: TenantId) -> &Bucket {
        &self.buckets[usize::from(tenant.0)]
    }
}

/// One worker's tokens per tenant, taken from the shared buckets in batches; only its own
/// thread touches them.
#[derive(Debug)]
pub(crate) struct LocalTokens {
    left: Box<[u32]>,
}

impl Default for LocalTokens {
    fn default() -> Self {
        LocalTokens { left: vec![0; MAX_TENANTS].into_boxed_slice() }
    }
}

impl LocalTokens {
    /// Spends one token of `tenant`, whose rate is `rate`, at `now_ns`: from the worker's
    /// own, else from a batch taken from the shared bucket. `false`: the tenant is over its
    /// rate, and the request must not run.
    #[inline]
    pub(crate) fn admit(
        &mut self,
        shared: &TenantLimits,
        tenant: TenantId,
        rate: Rate,
        now_ns: u64,
    ) -> bool {
        let left = &mut self.left[usize::from(tenant.0)];
        if *left > 0 {
            *left -= 1;
            return true;
        }
        match shared.bucket(tenant).take(rate, now_ns, batch(rate)) {
            0 => false,
            n => {
                *left = n - 1;
                true
            }
        }
    }
}

/// RESP's reply to a request over its tenant's rate.
pub(crate) const RESP_THROTTLED: &[u8] =
    b"-ERR max requests per second reached for this tenant\r\n";
/// memcached's (text and meta) reply to a request over its tenant's rate.
pub(crate) const MC_THROTTLED: &[u8] =
    b"SERVER_ERROR too many requests per second for this tenant\r\n";
/// The body of the binary protocol's reply (status `0x86`, temporary failure).
pub(crate) const BINARY_THROTTLED: &[u8] = b"Too many requests per second for this tenant.";

/// The server clock in nanoseconds, as the buckets read it.
pub(crate) fn now_ns(now_ms: u64) -> u64 {
    now_ms.saturating_mul(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(3);
    const SEC: u64 = NANOS_PER_SEC;

    #[test]
    fn a_full_bucket_gives_one_seconds_worth_then_the_rate() {
        let b = Bucket::default();
        let rate = Rate { per_second: 50 };
        let t0 = 1000 * SEC;
        let mut taken = 0;
        while b.take(rate, t0, 1) == 1 {
            taken += 1;
            assert!(taken <= 50, "never more than the burst");
        }
        assert_eq!(taken, 50, "the burst is one second's worth");
        assert_eq!(b.take(rate, t0 + rate.interval_ns() - 1, 1), 0, "not a token back yet");
        assert_eq!(b.take(rate, t0 + rate.interval_ns(), 1), 1, "one token per 1/rate s");
        assert_eq!(b.take(rate, t0 + rate.interval_ns(), 1), 0);
        // Idle for long, it is full again, and no fuller.
        assert_eq!(b.take(rate, t0 + 100 * SEC, 1000), 50);
    }

    #[test]
    fn batches_take_what_is_left() {
        let b = Bucket::default();
        let rate = Rate { per_second: 100 };
        assert_eq!(b.take(rate, SEC, 64), 64);
        assert_eq!(b.take(rate, SEC, 64), 36, "only what is left");
        assert_eq!(b.take(rate, SEC, 64), 0);
        assert_eq!(b.take(rate, SEC + SEC / 10, 64), 10, "a tenth of a second: ten tokens");
    }

    #[test]
    fn over_time_admissions_follow_the_rate() {
        // Requests every millisecond for 10 s against 200/s: 200 (burst) + 200 × 10, with at
        // most a batch held back unspent on the one worker.
        let shared = TenantLimits::default();
        let mut local = LocalTokens::default();
        let rate = Rate { per_second: 200 };
        let start = 5 * SEC;
        let admitted = (0..10_000u64)
            .filter(|ms| local.admit(&shared, T, rate, start + ms * 1_000_000))
            .count() as u64;
        let bound = 200 + 200 * 10;
        assert!(admitted <= bound, "{admitted} > {bound}");
        assert!(admitted + u64::from(batch(rate)) >= bound - 200, "{admitted}: too few");
    }

    #[test]
    fn workers_exceed_the_bucket_by_at_most_their_batches() {
        let shared = TenantLimits::default();
        let rate = Rate { per_second: 10_000 };
        let mut workers: Vec<LocalTokens> = (0..4).map(|_| LocalTokens::default()).collect();
        let now = 7 * SEC;
        // Every worker takes a batch, then the bucket runs dry with all of them asking.
        let mut admitted = 0u64;
        for _ in 0..20_000 {
            for w in &mut workers {
                admitted += u64::from(w.admit(&shared, T, rate, now));
            }
        }
        assert_eq!(admitted, 10_000, "at one instant, exactly the burst");
        assert!(workers.iter().all(|w| w.left[usize::from(T.0)] < batch(rate)));
    }

    #[test]
    fn other_tenants_have_their_own_bucket() {
        let shared = TenantLimits::default();
        let mut local = LocalTokens::default();
        let rate = Rate { per_second: 1 };
        assert!(local.admit(&shared, T, rate, SEC));
        assert!(!local.admit(&shared, T, rate, SEC));
        assert!(local.admit(&shared, TenantId(4), rate, SEC));
    }

    #[test]
    fn connection_slots_never_go_past_the_limit() {
        let limits = TenantLimits::default();
        assert_eq!(limits.connect(T, Some(2)), Ok(()));
        assert_eq!(limits.connect(T, Some(2)), Ok(()));
        assert_eq!(limits.connect(T, Some(2)), Err(Full));
        assert_eq!(limits.connections(T), 2);
        limits.disconnect(T);
        assert_eq!(limits.connect(T, Some(2)), Ok(()));
        // A lowered limit refuses new slots and closes nothing.
        assert_eq!(limits.connect(T, Some(1)), Err(Full));
        assert_eq!(limits.connections(T), 2);
        assert_eq!(limits.connect(T, None), Ok(()), "no limit");
        for _ in 0..5 {
            limits.disconnect(T);
        }
        assert_eq!(limits.connections(T), 0, "never below zero");
    }

    #[test]
    fn extreme_rates_stay_sane() {
        let b = Bucket::default();
        let fast = Rate { per_second: u32::MAX };
        assert_eq!(fast.interval_ns(), 1);
        assert_eq!(b.take(fast, SEC, MAX_BATCH), MAX_BATCH);
        assert_eq!(batch(Rate { per_second: 1 }), 1);
        assert_eq!(batch(Rate { per_second: 50_000 }), MAX_BATCH);
    }
}
