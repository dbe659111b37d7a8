//! The per-worker counters: each worker owns a [`WorkerStats`] in its own cache lines and is
//! its only writer, so counting is a plain load and store, never a locked add. `stats` (the
//! exports) sums them.

use std::sync::atomic::{AtomicU64, Ordering};

use fridge_engine::TenantId;
use fridge_engine::item::MAX_TENANTS;

use crate::cmdstats::{CommandCounters, CommandTotals};
use crate::size_class::{self, CLASSES};

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
    /// incr on a live item (meta `ma` and Redis counters: increments and decrements).
    pub incr_hits: AtomicU64,
    /// incr on a missing key (meta `ma`: increments and decrements).
    pub incr_misses: AtomicU64,
    /// memcached `decr` on a live item.
    pub decr_hits: AtomicU64,
    /// memcached `decr` on a missing key.
    pub decr_misses: AtomicU64,
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
    /// Commands per size class.
    pub classes: ClassCounters,
    /// Redis commands per command table row, and error replies (`INFO commandstats`).
    pub commands_by_row: CommandCounters,
    /// Redis commands' latencies per counter row (`INFO latencystats`).
    pub latency_by_row: crate::latencystats::Histograms,
}

/// One worker's counts per size class (see `size_class`), index 0 for class 1: memcached's
/// per-class command counts in `stats slabs`. Counted by the classic text commands, at the
/// size of the item read or of the block stored; a class lookup (a binary search of 39
/// sizes) and a plain add per command.
#[derive(Debug)]
pub struct ClassCounters {
    /// `get`/`gets`/`gat`/`gats` hits.
    pub get_hits: [AtomicU64; CLASSES],
    /// Storage commands.
    pub cmd_set: [AtomicU64; CLASSES],
    /// `cas` that stored.
    pub cas_hits: [AtomicU64; CLASSES],
    /// `cas` with a stale CAS value.
    pub cas_badval: [AtomicU64; CLASSES],
}

impl Default for ClassCounters {
    fn default() -> Self {
        let zeros = || std::array::from_fn(|_| AtomicU64::new(0));
        ClassCounters {
            get_hits: zeros(),
            cmd_set: zeros(),
            cas_hits: zeros(),
            cas_badval: zeros(),
        }
    }
}

/// Sums of [`ClassCounters`] over workers, index 0 for class 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClassTotals {
    pub get_hits: [u64; CLASSES],
    pub cmd_set: [u64; CLASSES],
    pub cas_hits: [u64; CLASSES],
    pub cas_badval: [u64; CLASSES],
}

impl Default for ClassTotals {
    fn default() -> Self {
        ClassTotals {
            get_hits: [0; CLASSES],
            cmd_set: [0; CLASSES],
            cas_hits: [0; CLASSES],
            cas_badval: [0; CLASSES],
        }
    }
}

impl ClassTotals {
    /// Adds one worker's counts.
    pub(crate) fn add(&mut self, c: &ClassCounters) {
        let sum = |to: &mut [u64; CLASSES], from: &[AtomicU64; CLASSES]| {
            for (t, f) in to.iter_mut().zip(from) {
                *t += f.load(Ordering::Relaxed);
            }
        };
        sum(&mut self.get_hits, &c.get_hits);
        sum(&mut self.cmd_set, &c.cmd_set);
        sum(&mut self.cas_hits, &c.cas_hits);
        sum(&mut self.cas_badval, &c.cas_badval);
    }

    /// These counts less `base` (see [`Baseline`]).
    pub(crate) fn since(&self, base: &ClassTotals) -> ClassTotals {
        let less = |now: &[u64; CLASSES], then: &[u64; CLASSES]| -> [u64; CLASSES] {
            std::array::from_fn(|i| now[i].saturating_sub(then[i]))
        };
        ClassTotals {
            get_hits: less(&self.get_hits, &base.get_hits),
            cmd_set: less(&self.cmd_set, &base.cmd_set),
            cas_hits: less(&self.cas_hits, &base.cas_hits),
            cas_badval: less(&self.cas_badval, &base.cas_badval),
        }
    }
}

/// Counts one command on the calling worker in the class of an item with a key of
/// `key_len` bytes, `flags` and a value of `value_len` bytes (the engine's item size).
#[inline]
pub(crate) fn count_class(
    counters: &[AtomicU64; CLASSES],
    key_len: usize,
    flags: u32,
    value_len: usize,
) {
    // The class of the record without an expiry (an expiry adds 4 bytes, a far one 12).
    let expiry = fridge_engine::item::ExpiryField::None;
    let size = fridge_engine::item::record_len(key_len, flags != 0, expiry, false) + value_len;
    inc(&counters[size_class::class_of(size) - 1]);
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
    /// Logins with the right password refused: the tenant's `max_connections` were all
    /// logged in (`crate::limits`).
    pub rejected_connections: [AtomicU64; MAX_TENANTS],
    /// Requests refused over the tenant's `max_requests_per_second` (`crate::limits`).
    pub throttled_requests: [AtomicU64; MAX_TENANTS],
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
            rejected_connections: zeros(),
            throttled_requests: zeros(),
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
    decr_hits,
    decr_misses,
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
    pub classes: ClassTotals,
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
    /// Redis's per-command counts and error counts.
    pub commands: CommandTotals,
}
