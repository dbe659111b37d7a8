//! The per-worker counters: each worker owns a [`WorkerStats`] in its own cache lines and is
//! its only writer, so counting is a plain load and store, never a locked add. `stats` (the
//! exports) sums them.

use std::sync::atomic::{AtomicU64, Ordering};

use fridge_engine::TenantId;
use fridge_engine::item::MAX_TENANTS;

/// Counters of one worker. Written only by that worker.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerStats {
    /// Storage commands (memcached `cmd_set`, Redis writes).
    pub cmd_set: AtomicU64,
    /// Touch commands.
    pub cmd_touch: AtomicU64,
    /// Touches of a live item.
    pub touch_hits: AtomicU64,
    /// Flushes.
    pub cmd_flush: AtomicU64,
    /// Deletes of a live item.
    pub delete_hits: AtomicU64,
    /// Deletes of a missing key.
    pub delete_misses: AtomicU64,
    /// incr/decr on a live item.
    pub incr_hits: AtomicU64,
    /// incr/decr on a missing key.
    pub incr_misses: AtomicU64,
    /// cas that stored.
    pub cas_hits: AtomicU64,
    /// cas on a missing key.
    pub cas_misses: AtomicU64,
    /// cas with a stale CAS value.
    pub cas_badval: AtomicU64,
    /// Requests run, both protocols.
    pub commands: AtomicU64,
    /// Bytes read from clients.
    pub bytes_read: AtomicU64,
    /// Bytes written to clients.
    pub bytes_written: AtomicU64,
    /// Connections closed for an overfull output buffer.
    pub output_overflows: AtomicU64,
    /// Connections closed for being idle.
    pub idle_kicks: AtomicU64,
    /// Connections closed because their request stayed half-sent too long.
    pub request_timeouts: AtomicU64,
    /// Connections closed to bring the clients' memory under `max_client_memory`.
    pub evicted_clients: AtomicU64,
    /// Requests refused because they would exceed the query buffer limit.
    pub query_overflows: AtomicU64,
    /// Login attempts (both protocols), refused ones included.
    pub auth_cmds: AtomicU64,
    /// Login attempts checked and failed.
    pub auth_errors: AtomicU64,
    /// Login attempts refused unchecked (too many failures).
    pub auth_refused: AtomicU64,
    /// Lookups and logins per tenant.
    pub tenants: TenantCounters,
}

/// Per-tenant counters of one worker, indexed by tenant id.
#[derive(Debug)]
pub struct TenantCounters {
    /// Lookups that found a live item.
    pub hits: [AtomicU64; MAX_TENANTS],
    /// Lookups that found none.
    pub misses: [AtomicU64; MAX_TENANTS],
    /// Login attempts naming the tenant.
    pub auth_cmds: [AtomicU64; MAX_TENANTS],
    /// Of those, checked and failed.
    pub auth_errors: [AtomicU64; MAX_TENANTS],
    /// Of those, refused unchecked.
    pub auth_refused: [AtomicU64; MAX_TENANTS],
}

impl Default for TenantCounters {
    fn default() -> Self {
        let zeros = || std::array::from_fn(|_| AtomicU64::new(0));
        TenantCounters {
            hits: zeros(),
            misses: zeros(),
            auth_cmds: zeros(),
            auth_errors: zeros(),
            auth_refused: zeros(),
        }
    }
}

/// What became of a login attempt, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginCount {
    /// Checked and answered: a success, or Redis's error for `AUTH <password>` without one.
    Answered,
    /// Checked and failed.
    Failed,
    /// Refused unchecked.
    Refused,
}

/// Counts a login attempt on the calling worker: server-wide, and for the tenant it names
/// (`None`: an unknown user, or no user at all).
pub(crate) fn count_login(stats: &WorkerStats, named: Option<TenantId>, what: LoginCount) {
    let per_tenant = |counters: &[AtomicU64; MAX_TENANTS]| {
        if let Some(t) = named {
            inc(&counters[usize::from(t.0)]);
        }
    };
    inc(&stats.auth_cmds);
    per_tenant(&stats.tenants.auth_cmds);
    match what {
        LoginCount::Answered => {}
        LoginCount::Failed => {
            inc(&stats.auth_errors);
            per_tenant(&stats.tenants.auth_errors);
        }
        LoginCount::Refused => {
            inc(&stats.auth_refused);
            per_tenant(&stats.tenants.auth_refused);
        }
    }
}

/// Counts `hits` and `misses` of `tenant` on the calling worker.
#[inline]
pub(crate) fn tenant_lookups(stats: &WorkerStats, tenant: TenantId, hits: u64, misses: u64) {
    let i = usize::from(tenant.0);
    if hits > 0 {
        add(&stats.tenants.hits[i], hits);
    }
    if misses > 0 {
        add(&stats.tenants.misses[i], misses);
    }
}

/// Adds `n` to a counter that only the calling thread writes.
#[inline]
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Adds one to a counter that only the calling thread writes.
#[inline]
pub(crate) fn inc(counter: &AtomicU64) {
    add(counter, 1);
}

/// Declares [`Totals`], one field per server-wide counter of [`WorkerStats`] of the same
/// name, with its sum over workers and its difference from a baseline.
macro_rules! totals {
    ($($field:ident),* $(,)?) => {
        /// Sums of every worker's counters.
        #[derive(Debug, Default, Clone, Copy)]
        pub(crate) struct Totals {
            $(pub $field: u64,)*
        }

        impl Totals {
            /// Adds one worker's counters.
            pub(crate) fn add(&mut self, w: &WorkerStats) {
                $(self.$field += w.$field.load(Ordering::Relaxed);)*
            }

            /// These counts less `base`: the counts since the reset that took `base`.
            pub(crate) fn since(&self, base: &Totals) -> Totals {
                Totals { $($field: self.$field.saturating_sub(base.$field),)* }
            }
        }
    };
}

totals!(
    cmd_set,
    cmd_touch,
    touch_hits,
    cmd_flush,
    delete_hits,
    delete_misses,
    incr_hits,
    incr_misses,
    cas_hits,
    cas_misses,
    cas_badval,
    commands,
    bytes_read,
    bytes_written,
    output_overflows,
    idle_kicks,
    request_timeouts,
    evicted_clients,
    query_overflows,
    auth_cmds,
    auth_errors,
    auth_refused,
);

/// The counters as they were at the last `stats reset` (memcached) or `CONFIG RESETSTAT`
/// (Redis). Counters are never written back to zero — a worker's counter has one writer,
/// its worker, and a reset from another thread would race with it — so the exports report
/// each counter less its baseline.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Baseline {
    pub totals: Totals,
    /// The engine's lookups, hits, stores, evictions and expiries.
    pub gets: u64,
    pub hits: u64,
    pub sets: u64,
    pub evictions: u64,
    pub expired: u64,
    pub expired_swept: u64,
    pub sweep_checked: u64,
    pub total_connections: u64,
    pub rejected_connections: u64,
}
