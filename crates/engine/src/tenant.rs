//! Tenants: applications sharing one cache, each with a reservation and a rank function
//! (Memshare §3, §4).
//!
//! A tenant's policy says how much memory it is guaranteed (`reserved`), how much memory one
//! shadow-queue hit moves to it (`credit`, its priority), how its items are ranked, whether
//! its idle memory is taxed, and an optional hard cap. Policies can change at any time
//! ([`crate::Engine::set_tenant_policy`]) without touching cached data. Without configuration
//! every tenant has no reservation, the default credit and the `hitmap` rank; tenant 0 owns
//! all memory.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use crate::item::MAX_DBS;
use crate::rank::RankKind;

/// A tenant: an application sharing the cache. Tenant 0 is the default tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TenantId(pub u16);

/// Weight of a new sample in the idle-fraction average, in 1/1024ths.
const IDLE_SAMPLE_WEIGHT: u64 = 64;

/// Default credit: the memory one shadow-queue hit moves (Memshare §6.1).
pub const DEFAULT_CREDIT: u64 = 64 << 10;
/// "No value" in the atomics below.
const NONE: u64 = u64::MAX;
/// Sentinel for "no delayed flush pending".
pub(crate) const NO_FLUSH: u64 = u64::MAX;

/// Memshare's idle tax (Algorithm 3): memory a tenant has not touched for `idle_ms` may be
/// reassigned at `rate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleTax {
    /// Fraction of a tenant's idle memory that may be taken from it, 0–1 (Memshare: 0.5).
    pub rate: f64,
    /// How long an item must go unread to count as idle.
    pub idle_ms: u64,
}

/// What a tenant is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantPolicy {
    /// Bytes the tenant keeps while it wants them.
    pub reserved: u64,
    /// Bytes of pooled memory one shadow-queue hit moves to this tenant.
    pub credit: u64,
    /// How the cleaner ranks this tenant's items.
    pub rank: RankKind,
    /// Idle tax, if any.
    pub idle_tax: Option<IdleTax>,
    /// Bytes the tenant may never exceed, if set.
    pub hard_cap: Option<u64>,
    /// Keys (live items, all databases) the tenant may hold, if set: a write that would add
    /// a key past it is refused with [`crate::EngineError::KeyLimit`]; overwrites and
    /// deletes always work.
    pub max_keys: Option<u64>,
    /// Bytes of live items (records: header, key and value) the tenant may hold, if set: a
    /// write that would take it past them is refused with [`crate::EngineError::ByteLimit`];
    /// deletes, and writes that do not grow the tenant, always work. Unlike `hard_cap`,
    /// which the cleaner keeps only when memory is short, this is kept at every write.
    pub max_bytes: Option<u64>,
}

impl Default for TenantPolicy {
    fn default() -> Self {
        TenantPolicy {
            reserved: 0,
            credit: DEFAULT_CREDIT,
            rank: RankKind::Hitmap,
            idle_tax: None,
            hard_cap: None,
            max_keys: None,
            max_bytes: None,
        }
    }
}

/// A tenant's figures at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantStats {
    /// Live items.
    pub items: u64,
    /// Live items with an expiry (Redis's `expires` in `INFO keyspace`).
    pub expiring: u64,
    /// Bytes of live items (`actual` memory).
    pub bytes: u64,
    /// Reserved bytes.
    pub reserved: u64,
    /// Target bytes: reserved plus pooled memory won through credits.
    pub target: u64,
    /// Misses that found the key in the shadow queue.
    pub shadow_hits: u64,
    /// GETs counted for credits weighed by hit ratio (0 while they are weighed by hits).
    pub reads: u64,
    /// Items evicted to make room.
    pub evictions: u64,
    /// Writes of new keys refused because the tenant held `max_keys` keys.
    pub rejected_keys: u64,
    /// Writes refused because they would have taken the tenant past `max_bytes`.
    pub rejected_bytes: u64,
    /// Credits this tenant gained.
    pub credits_gained: u64,
    /// Credits taken from this tenant.
    pub credits_lost: u64,
}

/// One tenant's live state inside the engine.
#[derive(Debug)]
pub(crate) struct TenantState {
    pub items: AtomicU64,
    /// The most keys `items` may reach by new keys, or [`NONE`]. Next to `items`, which
    /// every new key writes anyway, so that reading it costs no other cache line.
    pub max_keys: AtomicU64,
    pub bytes: AtomicU64,
    /// The most `bytes` may reach by writes, or [`NONE`] (next to `bytes`, which every write
    /// changes anyway).
    pub max_bytes: AtomicU64,
    /// Live items with an expiry (next to `items`: the same cache line is written).
    pub expiring: AtomicU64,
    /// The sum of their expiry times in whole seconds ([`expiry_secs`]): with `expiring`,
    /// their mean TTL (Redis's `avg_ttl`) without a scan.
    pub expiry_secs: AtomicU64,
    pub flush_at_ms: AtomicU64,
    pub reserved: AtomicU64,
    pub credit: AtomicU64,
    pub rank: AtomicU8,
    /// Idle-tax rate in parts per million, or [`NONE`].
    pub tax_ppm: AtomicU64,
    pub idle_ms: AtomicU64,
    pub hard_cap: AtomicU64,
    /// Pooled bytes this tenant holds on top of its reservation (the arbiter's credits).
    pub pooled: AtomicU64,
    pub shadow_hits: AtomicU64,
    /// GETs of this tenant, counted only while credits are weighed by request rate
    /// ([`crate::CreditWeight::HitRatio`]; workers add theirs in batches).
    pub reads: AtomicU64,
    pub evictions: AtomicU64,
    /// Writes of new keys refused by `max_keys`.
    pub rejected_keys: AtomicU64,
    /// Writes refused by `max_bytes`.
    pub rejected_bytes: AtomicU64,
    pub credits_gained: AtomicU64,
    pub credits_lost: AtomicU64,
    /// Estimated fraction of this tenant's bytes not read within its idle time, in ppm.
    pub idle_ppm: AtomicU64,
    /// Live items and live items with an expiry of each database but 0 (whose figures are
    /// the tenant's less the others', so that database 0 writes no extra line).
    pub dbs: [DbCounts; MAX_DBS],
}

/// One database's live items, live items with an expiry, and the sum of their expiry times
/// ([`expiry_secs`]).
#[derive(Debug, Default)]
pub(crate) struct DbCounts {
    pub items: AtomicU64,
    pub expiring: AtomicU64,
    pub expiry_secs: AtomicU64,
}

/// An expiry time as the sums of expiry times count it: whole seconds since the Unix epoch
/// (rounded to the nearest),
/// at most `u32::MAX` (year 2106), so that 2^32 items' sum fits in 64 bits.
#[inline]
pub(crate) fn expiry_secs(expires_at_ms: u64) -> u64 {
    (expires_at_ms.saturating_add(500) / 1000).min(u64::from(u32::MAX))
}

/// One database's figures (or a tenant's, all its databases together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Live items (expired items not yet reclaimed included, as Redis's `DBSIZE`).
    pub keys: u64,
    /// Live items with an expiry.
    pub expires: u64,
    /// The sum of their expiry times in whole seconds since the Unix epoch.
    pub expiry_secs: u64,
}

impl DbStats {
    /// The mean time left until the expiring items expire, in ms from `now_ms` (Redis's
    /// `avg_ttl`): exact but for the expiry times' rounding to whole seconds (within half a second); 0 without
    /// expiring items, and never below 0 (items expired but not yet reclaimed count as
    /// expiring now).
    pub fn avg_ttl_ms(&self, now_ms: u64) -> u64 {
        if self.expires == 0 {
            return 0;
        }
        let mean_ms = u128::from(self.expiry_secs) * 1000 / u128::from(self.expires);
        u64::try_from(mean_ms.saturating_sub(u128::from(now_ms))).unwrap_or(u64::MAX)
    }
}

impl Default for TenantState {
    fn default() -> Self {
        let state = TenantState {
            items: AtomicU64::new(0),
            max_keys: AtomicU64::new(NONE),
            bytes: AtomicU64::new(0),
            max_bytes: AtomicU64::new(NONE),
            expiring: AtomicU64::new(0),
            expiry_secs: AtomicU64::new(0),
            flush_at_ms: AtomicU64::new(NO_FLUSH),
            reserved: AtomicU64::new(0),
            credit: AtomicU64::new(0),
            rank: AtomicU8::new(0),
            tax_ppm: AtomicU64::new(NONE),
            idle_ms: AtomicU64::new(0),
            hard_cap: AtomicU64::new(NONE),
            pooled: AtomicU64::new(0),
            shadow_hits: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            rejected_keys: AtomicU64::new(0),
            rejected_bytes: AtomicU64::new(0),
            credits_gained: AtomicU64::new(0),
            credits_lost: AtomicU64::new(0),
            idle_ppm: AtomicU64::new(0),
            dbs: Default::default(),
        };
        state.set_policy(&TenantPolicy::default());
        state
    }
}

impl TenantState {
    /// Counts a new item of database `db` (the tenant's own counts are the caller's).
    #[inline]
    pub fn db_linked(&self, db: u8, expires_at_ms: Option<u64>) {
        if let Some(at) = expires_at_ms {
            self.expiry_secs.fetch_add(expiry_secs(at), Ordering::Relaxed);
        }
        if db != 0 {
            let d = &self.dbs[usize::from(db)];
            d.items.fetch_add(1, Ordering::Relaxed);
            if let Some(at) = expires_at_ms {
                d.expiring.fetch_add(1, Ordering::Relaxed);
                d.expiry_secs.fetch_add(expiry_secs(at), Ordering::Relaxed);
            }
        }
    }

    /// Counts an item of database `db` gone.
    #[inline]
    pub fn db_unlinked(&self, db: u8, expires_at_ms: Option<u64>) {
        if let Some(at) = expires_at_ms {
            self.expiry_secs.fetch_sub(expiry_secs(at), Ordering::Relaxed);
        }
        if db != 0 {
            let d = &self.dbs[usize::from(db)];
            d.items.fetch_sub(1, Ordering::Relaxed);
            if let Some(at) = expires_at_ms {
                d.expiring.fetch_sub(1, Ordering::Relaxed);
                d.expiry_secs.fetch_sub(expiry_secs(at), Ordering::Relaxed);
            }
        }
    }

    /// Each database's figures, by stored number. Database 0's are the tenant's less the
    /// others' (the counters are updated one at a time, so figures read while items change
    /// may be briefly off by the items changing).
    pub fn db_stats(&self) -> [DbStats; MAX_DBS] {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut dbs: [DbStats; MAX_DBS] = std::array::from_fn(|db| {
            let d = &self.dbs[db];
            DbStats {
                keys: load(&d.items),
                expires: load(&d.expiring),
                expiry_secs: load(&d.expiry_secs),
            }
        });
        let mut first = DbStats {
            keys: load(&self.items),
            expires: load(&self.expiring),
            expiry_secs: load(&self.expiry_secs),
        };
        for d in &dbs[1..] {
            first.keys = first.keys.saturating_sub(d.keys);
            first.expires = first.expires.saturating_sub(d.expires);
            first.expiry_secs = first.expiry_secs.saturating_sub(d.expiry_secs);
        }
        dbs[0] = first;
        dbs
    }

    /// Sets the policy; returns the reservation it replaced.
    pub fn set_policy(&self, p: &TenantPolicy) -> u64 {
        let old = self.reserved.swap(p.reserved, Ordering::Relaxed);
        self.credit.store(p.credit.max(1), Ordering::Relaxed);
        self.rank.store(p.rank.code(), Ordering::Relaxed);
        let (ppm, idle) = match p.idle_tax {
            Some(t) => ((t.rate.clamp(0.0, 1.0) * 1e6) as u64, t.idle_ms),
            None => (NONE, 0),
        };
        self.tax_ppm.store(ppm, Ordering::Relaxed);
        self.idle_ms.store(idle, Ordering::Relaxed);
        self.hard_cap.store(p.hard_cap.unwrap_or(NONE), Ordering::Relaxed);
        self.max_keys.store(p.max_keys.unwrap_or(NONE), Ordering::Relaxed);
        self.max_bytes.store(p.max_bytes.unwrap_or(NONE), Ordering::Relaxed);
        old
    }

    pub fn policy(&self) -> TenantPolicy {
        let ppm = self.tax_ppm.load(Ordering::Relaxed);
        let cap = self.hard_cap.load(Ordering::Relaxed);
        let max_keys = self.max_keys.load(Ordering::Relaxed);
        let max_bytes = self.max_bytes.load(Ordering::Relaxed);
        TenantPolicy {
            reserved: self.reserved.load(Ordering::Relaxed),
            credit: self.credit.load(Ordering::Relaxed),
            rank: self.rank(),
            idle_tax: (ppm != NONE).then(|| IdleTax {
                rate: ppm as f64 / 1e6,
                idle_ms: self.idle_ms.load(Ordering::Relaxed),
            }),
            hard_cap: (cap != NONE).then_some(cap),
            max_keys: (max_keys != NONE).then_some(max_keys),
            max_bytes: (max_bytes != NONE).then_some(max_bytes),
        }
    }

    /// Counts a write's bytes against `max_bytes`: adds `size` to `bytes` and returns true,
    /// or, where the tenant's bytes less `freed` (the item the write replaces, which goes
    /// after) plus `size` would pass `max_bytes`, counts a refusal and returns false. A
    /// write that does not grow the tenant (`size ≤ freed`) is never refused, so a tenant
    /// left above its cap by a lowered cap can still shrink. A tenant without a cap pays one
    /// load and the add it always paid; one with a cap, a compare-and-swap instead of the
    /// add, so no two writers can both take the last bytes.
    #[inline]
    pub fn count_bytes(&self, size: u64, freed: u64) -> bool {
        let max = self.max_bytes.load(Ordering::Relaxed);
        if max == NONE || size <= freed {
            self.bytes.fetch_add(size, Ordering::Relaxed);
            return true;
        }
        let counted = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                (b.saturating_sub(freed) + size <= max).then_some(b + size)
            })
            .is_ok();
        if !counted {
            self.rejected_bytes.fetch_add(1, Ordering::Relaxed);
        }
        counted
    }

    /// Whether a write of `size` bytes would be refused now by `max_bytes` (a hint for
    /// refusing before writing anything; [`TenantState::count_bytes`] decides).
    #[inline]
    pub fn over_max_bytes(&self, size: u64) -> bool {
        let max = self.max_bytes.load(Ordering::Relaxed);
        max != NONE && self.bytes.load(Ordering::Relaxed).saturating_add(size) > max
    }

    /// Counts a new key against `max_keys`: adds it to `items` and returns true, or, where
    /// the tenant holds `max_keys` keys already, counts a refusal and returns false. A
    /// tenant without a cap pays one load (of the line `items` is on) and the add it always
    /// paid; one with a cap, a compare-and-swap instead of the add, so that no two writers
    /// can both take the last place: `items` never passes `max_keys` by new keys.
    #[inline]
    pub fn count_new_key(&self) -> bool {
        let max = self.max_keys.load(Ordering::Relaxed);
        if max == NONE {
            self.items.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let counted = self
            .items
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1))
            .is_ok();
        if !counted {
            self.rejected_keys.fetch_add(1, Ordering::Relaxed);
        }
        counted
    }

    /// Whether a new key would be refused now (a hint for refusing before writing anything;
    /// [`TenantState::count_new_key`] decides).
    #[inline]
    pub fn at_max_keys(&self) -> bool {
        let max = self.max_keys.load(Ordering::Relaxed);
        max != NONE && self.items.load(Ordering::Relaxed) >= max
    }

    #[inline]
    pub fn rank(&self) -> RankKind {
        RankKind::from_code(self.rank.load(Ordering::Relaxed))
    }

    pub fn stats(&self) -> TenantStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let reserved = load(&self.reserved);
        TenantStats {
            items: load(&self.items),
            expiring: load(&self.expiring),
            bytes: load(&self.bytes),
            reserved,
            target: self.target(),
            shadow_hits: load(&self.shadow_hits),
            reads: load(&self.reads),
            evictions: load(&self.evictions),
            rejected_keys: load(&self.rejected_keys),
            rejected_bytes: load(&self.rejected_bytes),
            credits_gained: load(&self.credits_gained),
            credits_lost: load(&self.credits_lost),
        }
    }

    /// A tenant's target: its (idle-taxed) reservation plus its pooled memory.
    pub fn target(&self) -> u64 {
        let reserved = self.reserved.load(Ordering::Relaxed);
        let ppm = self.tax_ppm.load(Ordering::Relaxed);
        let reserved = if ppm <= 1_000_000 && ppm > 0 {
            // τ = (1 − a·r) / (1 − r); target = reserved / τ.
            let r = ppm as f64 / 1e6;
            let active = 1.0 - self.idle_ppm.load(Ordering::Relaxed) as f64 / 1e6;
            if r >= 1.0 {
                (reserved as f64 * active) as u64
            } else {
                let tau = (1.0 - active * r) / (1.0 - r);
                (reserved as f64 / tau) as u64
            }
        } else {
            reserved
        };
        reserved.saturating_add(self.pooled.load(Ordering::Relaxed))
    }

    /// Folds a sample of a tenant's items into its idle-fraction estimate.
    pub fn sample_idle(&self, idle_bytes: u64, sampled_bytes: u64) {
        if sampled_bytes == 0 {
            return;
        }
        let sample = idle_bytes * 1_000_000 / sampled_bytes;
        let old = self.idle_ppm.load(Ordering::Relaxed);
        let new = (old * (1024 - IDLE_SAMPLE_WEIGHT) + sample * IDLE_SAMPLE_WEIGHT) / 1024;
        self.idle_ppm.store(new, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_round_trip_through_the_atomics() {
        let state = TenantState::default();
        assert_eq!(state.policy(), TenantPolicy::default());
        let p = TenantPolicy {
            reserved: 10 << 20,
            credit: 4096,
            rank: RankKind::Slru,
            idle_tax: Some(IdleTax { rate: 0.5, idle_ms: 60_000 }),
            hard_cap: Some(20 << 20),
            max_keys: Some(1000),
            max_bytes: Some(30 << 20),
        };
        state.set_policy(&p);
        assert_eq!(state.policy(), p);
        assert_eq!(state.stats().target, 10 << 20);
    }
}
