//! The arbiter: who gets memory when tenants compete (Memshare §3.2–§4, Algorithms 1–3).
//!
//! Each tenant has a **target**: its reservation plus the pooled memory it has won. Its
//! **need** is `target / actual` (actual = bytes of its live items). The cleaner serves the
//! tenant with the highest need first and keeps that tenant's highest-ranked items
//! (Algorithm 1, in [`crate::cleaner`]); tenants over their target lose items first.
//!
//! ```text
//!  GET miss ──try_lock──► shadow queue of the tenant (hashes + sizes of its recent evictions)
//!                           │ hit: the tenant would have hit with a little more memory
//!                           ▼
//!               credit: `credit` bytes of pooled memory move to it, from the unassigned
//!               pool or a random tenant holding at least that much (Algorithm 2)
//! ```
//!
//! **Pooled memory** is what reservations leave: usable memory minus the sum of reservations.
//! It starts unassigned; shadow-queue hits hand it out one credit at a time, and once it is
//! all assigned, credits move between tenants. A tenant's credit size is its priority.
//!
//! **Floors** ([`CreditPolicy::Floor`], the default): a credit never comes from a tenant whose
//! target would fall below its *floor*, its share of usable memory in proportion to its
//! reservation — the memory a static partition by reservations would give it — or a set
//! percentage of that share. Memshare's rule
//! ([`CreditPolicy::Memshare`]) takes credits from a random holder whatever it keeps, and
//! shadow-queue hits come fastest to the tenants with the most requests, so a low-rate tenant
//! whose working set is larger than its share lost its pooled memory to them and then hit less
//! than in a partition of its own (2.8–7.9 points below its static LRU partition on the
//! Twitter-shaped mix, `docs/results.md`). With floors, a tenant that still misses what
//! more memory would hold takes memory back from tenants above their floors; memory moves
//! beyond the floors only from tenants whose shadow queues show no use for it.
//!
//! **Credits weighed by hit ratio** ([`CreditWeight::HitRatio`], an option): under
//! Memshare's rule every shadow-queue hit moves a credit, so memory flows to the tenants with
//! the most requests. Cliffhanger's gradient normalises the hits by request rate: a hit of a
//! tenant with `r` GETs, against a mean of `r̄` over the tenants that read, moves a credit with
//! probability `min(1, r̄ / r)`. Above the mean, memory then follows shadow hits per request —
//! the gain in hit *ratio* more memory would bring — rather than their count. Rates are GETs
//! counted since start (workers add theirs in batches of 64), so this suits steady mixes.
//!
//! **Idle tax** (Algorithm 3): with a tax of rate `r`, a tenant whose memory is a fraction `a`
//! active (read within `idle_ms`) has its reservation's weight scaled by
//! `1 / τ, τ = (1 − a·r) / (1 − r)` — fully active keeps it, fully idle keeps `1 − r` of it.
//! The active fraction is estimated from the items the cleaner reads anyway (a sample of
//! memory), never by scanning.
//!
//! Shadow queues exist only once some tenant other than the default has a policy: a
//! single-tenant cache pays nothing on misses. Each remembers at most `shadow_bytes` of
//! evicted items (Memshare's 10 MiB, sized for a few applications), and all of them together
//! take at most `1 /` [`SHADOW_SHARE`] of usable memory: with `n` tenants whose queues are in
//! use, each remembers at most `usable / (32 · n · SHADOW_ENTRY_BYTES)` items. Without that
//! bound, 1,000 tenants of 100-byte items would remember 100 million items — gigabytes of ring
//! and hash-map entries whatever the memory limit. (With it the queues of small caches and of
//! many tenants are shorter than Memshare's; the tenants study measured 1 MiB and 128 KiB
//! queues as good as 10 MiB in combined hit ratio, `docs/design.md`, "Shadow-queue size".)
//! Their memory, outside the arena, is reported as [`crate::EngineStats::shadow_bytes`].
//! Misses use `try_lock`, so a request never waits for the cleaner filling a queue; a busy
//! lock skips the check (Memshare §5.2).
//!
//! A credit does not visit every tenant: the sums of reservations and of pooled memory are
//! kept as they change, and the tenant a credit comes from is drawn from the list of givers
//! (tenants holding pooled memory above their floors) — a few random draws, each accepted if
//! it may give the credit (uniform over those that may), and a pass over the givers only when
//! the draws all fail. (A pass over every tenant id for each shadow-queue hit cost 2.4 µs per
//! miss with 8 tenants and 3.9 µs with 1,000; `shadow_hits` bench, `docs/benchmarks.md`.)

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::item::MAX_TENANTS;
use crate::tenant::TenantState;

/// Bytes of items each tenant's shadow queue remembers by default (Memshare §6.1;
/// [`crate::EngineConfig::shadow_bytes`]).
pub const SHADOW_BYTES: u64 = 10 << 20;

/// All shadow queues together take at most `usable / SHADOW_SHARE` bytes (module doc).
pub const SHADOW_SHARE: u64 = 32;

/// What one remembered item may cost the queues, counted for their bound: a ring slot and a
/// hash-map bucket (16 bytes each, and a control byte) at the most slack the containers keep
/// before [`Shadow::push`] shrinks them (up to 2.5 slots and buckets per item).
pub const SHADOW_ENTRY_BYTES: u64 = 96;

/// Hashes and sizes of a tenant's recently evicted items.
#[derive(Debug, Default)]
struct Shadow {
    ring: VecDeque<(u64, u32)>,
    /// How many ring entries carry each hash.
    members: HashMap<u64, u32>,
    bytes: u64,
}

impl Shadow {
    /// Remembers an evicted item, forgetting the oldest past `budget` bytes of items or
    /// `most` items, and gives back container memory once the ring has more than twice the
    /// room it keeps (its items and a quarter, plus 16).
    fn push(&mut self, hash: u64, size: u32, budget: u64, most: u64) {
        self.ring.push_back((hash, size));
        *self.members.entry(hash).or_default() += 1;
        self.bytes += u64::from(size);
        while self.bytes > budget || self.ring.len() as u64 > most {
            let Some((old, old_size)) = self.ring.pop_front() else { break };
            self.bytes -= u64::from(old_size);
            if let Some(n) = self.members.get_mut(&old) {
                *n -= 1;
                if *n == 0 {
                    self.members.remove(&old);
                }
            }
        }
        let keep = self.ring.len() + self.ring.len() / 4 + 16;
        if self.ring.capacity() > 2 * keep {
            self.ring.shrink_to(keep);
            self.members.shrink_to(keep);
        }
    }

    /// Bytes its containers hold: ring slots, and hash-map buckets with their control bytes
    /// (a hash map allocates 8 buckets per 7 entries of capacity).
    fn memory(&self) -> usize {
        let entry = std::mem::size_of::<(u64, u32)>();
        self.ring.capacity() * entry + self.members.capacity() * 8 / 7 * (entry + 1)
    }

    fn contains(&self, hash: u64) -> bool {
        self.members.contains_key(&hash)
    }
}

/// A set of tenant ids with O(1) insert, remove and uniform draws.
#[derive(Debug)]
struct Members {
    ids: Vec<u16>,
    /// Each tenant's place in `ids`, or [`ABSENT`].
    at: Vec<u32>,
}

/// `Members::at` of a tenant not in the set.
const ABSENT: u32 = u32::MAX;

impl Members {
    fn new() -> Members {
        Members { ids: Vec::new(), at: vec![ABSENT; MAX_TENANTS] }
    }

    fn set(&mut self, tenant: u16, member: bool) {
        let at = self.at[usize::from(tenant)];
        if member && at == ABSENT {
            self.at[usize::from(tenant)] = self.ids.len() as u32;
            self.ids.push(tenant);
        } else if !member && at != ABSENT {
            self.ids.swap_remove(at as usize);
            if let Some(&moved) = self.ids.get(at as usize) {
                self.at[usize::from(moved)] = at;
            }
            self.at[usize::from(tenant)] = ABSENT;
        }
    }
}

/// What tenants' floors depend on: usable memory, the sum of reservations and how many times
/// a policy changed (a reservation or a credit), the floor's percentage (0: no floors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Floors {
    usable: u64,
    reserved: u64,
    changes: u64,
    percent: u64,
}

impl Floors {
    /// How much of `pooled` tenant `t` may give: all of it without floors, else what it holds
    /// above its floor (its share of usable memory in proportion to its reservation, times
    /// the percentage), at most `pooled`.
    fn givable(&self, t: &TenantState, pooled: u64) -> u64 {
        if self.percent == 0 {
            return pooled;
        }
        let reserved = t.reserved.load(Ordering::Relaxed);
        let share =
            u128::from(self.usable) * u128::from(reserved) / u128::from(self.reserved.max(1));
        let floor = (share * u128::from(self.percent) / 100) as u64;
        (reserved + pooled).saturating_sub(floor).min(pooled)
    }
}

#[derive(Debug)]
struct State {
    shadows: Vec<Shadow>,
    /// Tenants whose shadow queues remember anything (they share the queues' bound).
    shadows_in_use: u64,
    rng: u64,
    /// The sum of every tenant's `pooled` (which only [`Arbiter::on_miss`] changes, under
    /// the lock).
    pooled: u64,
    /// Tenants whose `pooled` is not zero.
    holders: Members,
    /// Holders that may give a credit of the smallest size any tenant has
    /// ([`Floors::givable`] at least `min_credit`): the others can give no tenant a credit.
    givers: Members,
    min_credit: u64,
    /// Each tenant's [`Floors::givable`] under `floors`, by id: a dense array the choice of
    /// a giver reads instead of the tenants' states.
    givable: Vec<u64>,
    floors: Floors,
}

/// Random draws from the givers before a pass over them.
const DRAWS: usize = 8;

impl State {
    /// Moves `bytes` of pooled memory to tenant `to` (`from`: the tenant they come from, or
    /// `None` for the unassigned pool), keeping the sum and the lists.
    fn transfer(&mut self, tenants: &[TenantState], from: Option<u16>, to: u16, bytes: u64) {
        match from {
            Some(from) => {
                tenants[usize::from(from)].pooled.fetch_sub(bytes, Ordering::Relaxed);
                self.refresh(tenants, from);
            }
            None => self.pooled += bytes,
        }
        tenants[usize::from(to)].pooled.fetch_add(bytes, Ordering::Relaxed);
        self.refresh(tenants, to);
    }

    /// Puts `tenant` in or out of the lists as its pooled memory and the floors now say.
    fn refresh(&mut self, tenants: &[TenantState], tenant: u16) {
        let t = &tenants[usize::from(tenant)];
        let pooled = t.pooled.load(Ordering::Relaxed);
        let givable = self.floors.givable(t, pooled);
        self.givable[usize::from(tenant)] = givable;
        self.holders.set(tenant, pooled > 0);
        self.givers.set(tenant, givable >= self.min_credit);
    }

    /// Recomputes what the holders may give if what floors depend on changed.
    fn set_floors(&mut self, tenants: &[TenantState], floors: Floors) {
        if floors != self.floors {
            self.floors = floors;
            let credits = tenants.iter().map(|t| t.credit.load(Ordering::Relaxed));
            self.min_credit = credits.min().unwrap_or(1).max(1);
            for i in 0..self.holders.ids.len() {
                let id = self.holders.ids[i];
                self.refresh(tenants, id);
            }
        }
    }
}

/// Which tenants a credit may come from once the pool is all assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreditPolicy {
    /// A random tenant holding a credit, as long as its target stays at or above its floor:
    /// `percent` of its share of usable memory in proportion to its reservation (module
    /// docs). 100 by default.
    Floor {
        /// The floor, in percent of the tenant's share (at most 100).
        percent: u8,
    },
    /// A random tenant holding a credit (Memshare Algorithm 2).
    Memshare,
}

impl Default for CreditPolicy {
    fn default() -> Self {
        CreditPolicy::Floor { percent: 100 }
    }
}

/// What a shadow-queue hit is worth (module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CreditWeight {
    /// Every hit moves a credit (Memshare Algorithm 2).
    #[default]
    Hits,
    /// A hit moves a credit with probability `min(1, r̄ / r)`: the tenant's GETs `r` against
    /// the mean `r̄` (Cliffhanger's gradient).
    HitRatio,
}

/// The arbiter's shared state.
#[derive(Debug)]
pub(crate) struct Arbiter {
    /// Whether more than one tenant is configured (shadow queues and need ordering on).
    enabled: AtomicBool,
    /// Memory the tenants share: usable arena bytes (lowered and raised with the run-time
    /// memory limit).
    usable: AtomicU64,
    /// The floor in percent of a tenant's share; 0 for none ([`CreditPolicy::Memshare`]).
    floor_percent: AtomicU64,
    /// Whether credits are weighed by request rate ([`CreditWeight::HitRatio`]): workers
    /// count GETs per tenant only then.
    by_rate: AtomicBool,
    /// GETs counted for the weighing, all tenants, and the tenants with any.
    reads: AtomicU64,
    readers: AtomicU64,
    /// Bytes of items each tenant's shadow queue remembers.
    shadow_bytes: u64,
    /// The sum of every tenant's reservation ([`Arbiter::policy_changed`]).
    reserved: AtomicU64,
    /// How many times a tenant's policy changed (so that floors and the smallest credit are
    /// recomputed even when the sum of reservations stays).
    policy_changes: AtomicU64,
    state: Mutex<State>,
}

impl Arbiter {
    pub fn new(usable: u64, seed: u64, shadow_bytes: u64) -> Arbiter {
        Arbiter {
            enabled: AtomicBool::new(false),
            usable: AtomicU64::new(usable),
            floor_percent: AtomicU64::new(100),
            by_rate: AtomicBool::new(false),
            reads: AtomicU64::new(0),
            readers: AtomicU64::new(0),
            shadow_bytes,
            reserved: AtomicU64::new(0),
            policy_changes: AtomicU64::new(0),
            state: Mutex::new(State {
                shadows: (0..MAX_TENANTS).map(|_| Shadow::default()).collect(),
                shadows_in_use: 0,
                rng: seed | 1,
                pooled: 0,
                holders: Members::new(),
                givers: Members::new(),
                givable: vec![0; MAX_TENANTS],
                min_credit: 1,
                floors: Floors::default(),
            }),
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Sets the memory the tenants share (the run-time memory limit changed).
    pub fn set_usable(&self, usable: u64) {
        self.usable.store(usable, Ordering::Relaxed);
    }

    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Sets where credits may come from.
    pub fn set_credit_policy(&self, policy: CreditPolicy) {
        let percent = match policy {
            CreditPolicy::Floor { percent } => u64::from(percent.min(100)),
            CreditPolicy::Memshare => 0,
        };
        self.floor_percent.store(percent, Ordering::Relaxed);
    }

    /// Sets what a shadow-queue hit is worth.
    pub fn set_credit_weight(&self, weight: CreditWeight) {
        self.by_rate.store(weight == CreditWeight::HitRatio, Ordering::Relaxed);
    }

    /// Whether GETs are to be counted per tenant ([`CreditWeight::HitRatio`] with tenants).
    #[inline]
    pub fn counts_reads(&self) -> bool {
        self.by_rate.load(Ordering::Relaxed) && self.enabled()
    }

    /// Adds a worker's batch of `n` GETs of `tenant`.
    pub fn add_reads(&self, tenants: &[TenantState], tenant: u16, n: u64) {
        if tenants[usize::from(tenant)].reads.fetch_add(n, Ordering::Relaxed) == 0 {
            self.readers.fetch_add(1, Ordering::Relaxed);
        }
        self.reads.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether a shadow-queue hit of a tenant with `reads` GETs moves a credit: always by
    /// hits; by hit ratio, with probability `min(1, mean / reads)`.
    fn weighs_in(&self, reads: u64, rng: &mut u64) -> bool {
        if !self.by_rate.load(Ordering::Relaxed) || reads == 0 {
            return true;
        }
        let readers = self.readers.load(Ordering::Relaxed).max(1);
        let mean = self.reads.load(Ordering::Relaxed) / readers;
        mean >= reads || next_random(rng) % reads < mean
    }

    /// A tenant's policy was set, its reservation changing from `old` to `new` bytes. Every
    /// policy change MUST be reported here, once, after it is in force: credits are drawn
    /// against the sum of reservations and the smallest credit.
    pub fn policy_changed(&self, old: u64, new: u64) {
        self.reserved.fetch_add(new.wrapping_sub(old), Ordering::Relaxed);
        self.policy_changes.fetch_add(1, Ordering::Relaxed);
    }

    /// Pooled memory not yet won by any tenant.
    fn unassigned(&self, state: &State) -> u64 {
        let reserved = self.reserved.load(Ordering::Relaxed);
        self.usable.load(Ordering::Relaxed).saturating_sub(reserved).saturating_sub(state.pooled)
    }

    /// A GET miss of `tenant` for `hash` (Algorithm 2). Never blocks.
    pub fn on_miss(&self, tenants: &[TenantState], tenant: u16, hash: u64) {
        let Ok(mut state) = self.state.try_lock() else { return };
        if !state.shadows[usize::from(tenant)].contains(hash) {
            return;
        }
        let me = &tenants[usize::from(tenant)];
        me.shadow_hits.fetch_add(1, Ordering::Relaxed);
        if !self.weighs_in(me.reads.load(Ordering::Relaxed), &mut state.rng) {
            return;
        }
        let credit = me.credit.load(Ordering::Relaxed);
        if self.unassigned(&state) >= credit {
            state.transfer(tenants, None, tenant, credit);
            me.credits_gained.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // pickRandom over the other tenants holding at least one credit of pooled memory
        // (and, with floors, keeping their floor without it).
        let floors = Floors {
            usable: self.usable.load(Ordering::Relaxed),
            reserved: self.reserved.load(Ordering::Relaxed),
            changes: self.policy_changes.load(Ordering::Relaxed),
            percent: self.floor_percent.load(Ordering::Relaxed),
        };
        state.set_floors(tenants, floors);
        // Uniform over the givers that may give this credit: draws accepted only if they may
        // (each accepted draw is uniform over those), then, if all fail, one pick among them.
        let State { givers, givable, rng, .. } = &mut *state;
        let may_give = |id: u16| id != tenant && givable[usize::from(id)] >= credit;
        let givers = &givers.ids;
        let mut from = None;
        for _ in 0..DRAWS.min(givers.len()) {
            let at = (next_random(rng) % givers.len() as u64) as usize;
            if may_give(givers[at]) {
                from = Some(givers[at]);
                break;
            }
        }
        if from.is_none() {
            let count = givers.iter().filter(|&&id| may_give(id)).count();
            if count == 0 {
                return;
            }
            let pick = (next_random(rng) % count as u64) as usize;
            from = givers.iter().copied().filter(|&id| may_give(id)).nth(pick);
        }
        let Some(from) = from else { return };
        state.transfer(tenants, Some(from), tenant, credit);
        tenants[usize::from(from)].credits_lost.fetch_add(1, Ordering::Relaxed);
        me.credits_gained.fetch_add(1, Ordering::Relaxed);
    }

    /// Items a cleaning pass evicted: (tenant, hash, size). One lock for the batch.
    pub fn on_evictions(&self, evicted: &[(u16, u64, u32)]) {
        if evicted.is_empty() || !self.enabled() {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let entries = self.usable.load(Ordering::Relaxed) / SHADOW_SHARE / SHADOW_ENTRY_BYTES;
        for &(tenant, hash, size) in evicted {
            if state.shadows[usize::from(tenant)].ring.is_empty() {
                state.shadows_in_use += 1;
            }
            let most = (entries / state.shadows_in_use).max(1);
            state.shadows[usize::from(tenant)].push(hash, size, self.shadow_bytes, most);
        }
    }

    /// Bytes the shadow queues' containers hold, and the items they remember.
    pub fn shadow_memory(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let queues = state.shadows.iter().filter(|s| s.ring.capacity() > 0);
        queues.fold((0, 0), |(bytes, items), s| (bytes + s.memory(), items + s.ring.len()))
    }
}

/// `need = target / actual` as a comparable pair; an empty tenant's need is infinite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Need {
    pub target: u64,
    pub actual: u64,
}

impl Need {
    /// Orders by need (higher first is `Greater`), comparing `t₁·a₂` with `t₂·a₁`.
    pub fn cmp(&self, other: &Need) -> std::cmp::Ordering {
        let lhs = u128::from(self.target) * u128::from(other.actual);
        let rhs = u128::from(other.target) * u128::from(self.actual);
        match (self.actual, other.actual) {
            (0, 0) => std::cmp::Ordering::Equal,
            (0, _) => std::cmp::Ordering::Greater,
            (_, 0) => std::cmp::Ordering::Less,
            _ => lhs.cmp(&rhs),
        }
    }

    /// Whether the tenant holds more than its target.
    pub fn over(&self) -> bool {
        self.actual > self.target
    }
}

fn next_random(rng: &mut u64) -> u64 {
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::TenantPolicy;

    /// Tenants with these reservations (the rest none) and an arbiter of `usable` bytes that
    /// knows them.
    fn tenants(reserved: &[u64], usable: u64) -> (Vec<TenantState>, Arbiter) {
        let a = Arbiter::new(usable, 1, SHADOW_BYTES);
        a.enable();
        let ts = (0..MAX_TENANTS)
            .map(|i| {
                let t = TenantState::default();
                let r = reserved.get(i).copied().unwrap_or(0);
                t.set_policy(&TenantPolicy { reserved: r, credit: 100, ..TenantPolicy::default() });
                a.policy_changed(0, r);
                t
            })
            .collect();
        (ts, a)
    }

    /// Weighed by hit ratio, a tenant with ten times the other's GETs wins credits for
    /// about `mean / its reads` of its shadow-queue hits, the other for all of them; weighed
    /// by hits, both for all.
    #[test]
    fn credits_by_hit_ratio_discount_the_hits_of_busier_tenants() {
        for weight in [CreditWeight::Hits, CreditWeight::HitRatio] {
            let (ts, a) = tenants(&[0, 0, 0], 100_000_000);
            a.set_credit_weight(weight);
            assert!(a.counts_reads() == (weight == CreditWeight::HitRatio));
            a.add_reads(&ts, 1, 10_000);
            a.add_reads(&ts, 2, 1_000);
            a.on_evictions(&[(1, 42, 10), (2, 43, 10)]);
            for _ in 0..2_000 {
                a.on_miss(&ts, 1, 42);
                a.on_miss(&ts, 2, 43);
            }
            let gained = |t: usize| ts[t].credits_gained.load(Ordering::Relaxed);
            assert_eq!(ts[1].shadow_hits.load(Ordering::Relaxed), 2_000);
            assert_eq!(gained(2), 2_000);
            if weight == CreditWeight::Hits {
                assert_eq!(gained(1), 2_000);
            } else {
                // mean 5,500 of 10,000: 55% of 2,000.
                assert!((1_000..1_200).contains(&gained(1)), "{}", gained(1));
            }
        }
    }

    #[test]
    fn shadow_hits_take_unassigned_memory_first_then_from_holders() {
        let (ts, a) = tenants(&[500, 300], 1_000);
        a.on_evictions(&[(1, 42, 10), (0, 7, 10)]);
        a.on_miss(&ts, 1, 41);
        assert_eq!(ts[1].shadow_hits.load(Ordering::Relaxed), 0, "not in the queue");
        // 200 bytes unassigned: two credits from the pool, the third from tenant 1 itself is
        // not allowed, so nothing.
        for _ in 0..3 {
            a.on_miss(&ts, 1, 42);
        }
        assert_eq!(ts[1].pooled.load(Ordering::Relaxed), 200);
        assert_eq!(ts[1].credits_gained.load(Ordering::Relaxed), 2);
        assert_eq!(ts[1].shadow_hits.load(Ordering::Relaxed), 3);
        // Tenant 0 now takes tenant 1's credits.
        a.on_miss(&ts, 0, 7);
        assert_eq!(ts[0].pooled.load(Ordering::Relaxed), 100);
        assert_eq!(ts[1].pooled.load(Ordering::Relaxed), 100);
        assert_eq!(ts[1].credits_lost.load(Ordering::Relaxed), 1);
        assert_eq!(ts[1].target(), 400);
    }

    #[test]
    fn with_floors_no_tenant_gives_up_memory_below_its_share() {
        // 1,000 bytes usable, reservations 300 and 300: shares of 500 each, floors of 500 (or
        // 400 at 80%).
        let policies = [
            (CreditPolicy::default(), 2),
            (CreditPolicy::Floor { percent: 80 }, 3),
            (CreditPolicy::Memshare, 4),
        ];
        for (policy, lost) in policies {
            let (ts, a) = tenants(&[300, 300], 1_000);
            a.set_credit_policy(policy);
            a.on_evictions(&[(1, 42, 10), (0, 7, 10)]);
            // Tenant 1 wins the whole pool (400): 700, above its floor by 200.
            for _ in 0..4 {
                a.on_miss(&ts, 1, 42);
            }
            assert_eq!(ts[1].target(), 700);
            // Tenant 0 takes back what is above tenant 1's floor, and with floors no more.
            for _ in 0..5 {
                a.on_miss(&ts, 0, 7);
            }
            assert_eq!(ts[1].credits_lost.load(Ordering::Relaxed), lost, "{policy:?}");
            assert_eq!(ts[0].target(), 300 + 100 * lost, "{policy:?}");
        }
    }

    #[test]
    fn credits_keep_the_sums_the_holders_and_the_floors_and_come_uniformly() {
        let mut rng = 99u64;
        for policy in [CreditPolicy::default(), CreditPolicy::Memshare] {
            // 40 tenants with uneven reservations; 100,000 bytes usable.
            let reserved: Vec<u64> = (0..40).map(|i| 200 + (i * 37 % 11) * 100).collect();
            let (ts, a) = tenants(&reserved, 100_000);
            a.set_credit_policy(policy);
            let all: u64 = reserved.iter().sum();
            let evicted: Vec<(u16, u64, u32)> =
                (0..40).map(|t| (t, 1000 + u64::from(t), 1)).collect();
            a.on_evictions(&evicted);
            let mut lost_from = vec![0u64; 40];
            for step in 0..20_000 {
                let t = (next_random(&mut rng) % 40) as u16;
                let before: Vec<u64> =
                    ts.iter().map(|t| t.pooled.load(Ordering::Relaxed)).collect();
                a.on_miss(&ts, t, 1000 + u64::from(t));
                let state = a.state.lock().unwrap();
                let pooled: Vec<u64> =
                    ts.iter().map(|t| t.pooled.load(Ordering::Relaxed)).collect();
                assert_eq!(pooled.iter().sum::<u64>(), state.pooled, "step {step}");
                assert!(all + state.pooled <= 100_000, "never more than usable");
                let mut holders = state.holders.ids.clone();
                holders.sort_unstable();
                let expected: Vec<u16> =
                    (0..MAX_TENANTS as u16).filter(|&i| pooled[usize::from(i)] > 0).collect();
                assert_eq!(holders, expected, "step {step}");
                let mut givers = state.givers.ids.clone();
                givers.sort_unstable();
                let expected: Vec<u16> = expected
                    .into_iter()
                    .filter(|&i| {
                        state.floors.givable(&ts[usize::from(i)], pooled[usize::from(i)])
                            >= state.min_credit
                    })
                    .collect();
                assert_eq!(givers, expected, "step {step}");
                for &i in &holders {
                    let fresh = state.floors.givable(&ts[usize::from(i)], pooled[usize::from(i)]);
                    assert_eq!(state.givable[usize::from(i)], fresh, "step {step}");
                }
                for set in [&state.holders, &state.givers] {
                    for (i, &at) in set.at.iter().enumerate() {
                        assert!(at == ABSENT || set.ids[at as usize] == i as u16);
                    }
                }
                for (i, (&b, &p)) in before.iter().zip(&pooled).enumerate() {
                    if p < b {
                        lost_from[i] += 1;
                        let share = 100_000 * reserved[i] / all;
                        if policy != CreditPolicy::Memshare {
                            assert!(reserved[i] + p >= share, "tenant {i} gave below its floor");
                        }
                    }
                }
            }
            // Memshare's rule takes from any holder, uniformly: every tenant lost some.
            if policy == CreditPolicy::Memshare {
                let (min, max) = (lost_from.iter().min().unwrap(), lost_from.iter().max().unwrap());
                assert!(*min > 0 && *max < 3 * *min, "uneven draws: {lost_from:?}");
            }
        }
    }

    #[test]
    fn shadow_queues_forget_beyond_their_byte_budget() {
        let mut s = Shadow::default();
        for h in 0..30 {
            s.push(h, (1 << 20) as u32, SHADOW_BYTES, u64::MAX);
        }
        assert!(!s.contains(0) && s.contains(29));
        assert!(s.bytes <= SHADOW_BYTES);
        s.push(29, 1, SHADOW_BYTES, u64::MAX);
        assert!(s.contains(29));
    }

    /// All queues together remember at most usable / 32 / 96 items, shared among the
    /// tenants whose queues are in use, and a queue cut down gives its memory back: 1,000
    /// tenants evicting 100-byte items stay within the bound whatever `shadow_bytes` says.
    #[test]
    fn shadow_queues_together_stay_within_their_share_of_memory() {
        let usable = 1 << 30;
        let entries = usable / SHADOW_SHARE / SHADOW_ENTRY_BYTES;
        let a = Arbiter::new(usable, 1, SHADOW_BYTES);
        a.enable();
        let remembered = |a: &Arbiter| {
            let state = a.state.lock().unwrap();
            state.shadows.iter().map(|s| s.ring.len() as u64).sum::<u64>()
        };
        // One tenant alone: Memshare's 10 MiB of 100-byte items is within the bound.
        let batch: Vec<(u16, u64, u32)> = (0..200_000).map(|h| (1, h, 100)).collect();
        a.on_evictions(&batch);
        assert_eq!(remembered(&a), SHADOW_BYTES / 100);
        let (one_tenant_memory, _) = a.shadow_memory();
        assert!(one_tenant_memory as u64 <= usable / SHADOW_SHARE, "{one_tenant_memory}");
        // A thousand tenants share the bound; the first one's queue shrinks with its next
        // evictions.
        for round in 0..3u64 {
            let batch: Vec<(u16, u64, u32)> = (1..=1000u16)
                .flat_map(|t| {
                    (0..1000).map(move |h| (t, round << 40 | u64::from(t) << 20 | h, 100))
                })
                .collect();
            a.on_evictions(&batch);
        }
        let most = entries / 1000;
        let state = a.state.lock().unwrap();
        assert_eq!(state.shadows_in_use, 1000);
        for (t, s) in state.shadows.iter().enumerate().skip(1).take(1000) {
            assert_eq!(s.ring.len() as u64, most, "tenant {t}");
            assert_eq!(s.members.len(), s.ring.len(), "distinct hashes");
        }
        drop(state);
        let (memory, items) = a.shadow_memory();
        assert_eq!(items as u64, 1000 * most);
        assert!(memory as u64 <= usable / SHADOW_SHARE, "{memory} bytes");
    }

    #[test]
    fn need_orders_by_target_over_actual() {
        let low = Need { target: 100, actual: 200 };
        let high = Need { target: 100, actual: 50 };
        let empty = Need { target: 0, actual: 0 };
        assert!(high.cmp(&low).is_gt());
        assert!(empty.cmp(&high).is_gt());
        assert!(low.over() && !high.over());
    }

    #[test]
    fn idle_tax_shrinks_the_reservation_of_idle_tenants() {
        let t = TenantState::default();
        t.set_policy(&TenantPolicy {
            reserved: 1000,
            idle_tax: Some(crate::tenant::IdleTax { rate: 0.5, idle_ms: 1 }),
            ..TenantPolicy::default()
        });
        assert_eq!(t.target(), 1000, "no idle memory seen yet");
        for _ in 0..200 {
            t.sample_idle(100, 100);
        }
        let target = t.target();
        assert!((500..=510).contains(&target), "fully idle keeps 1 − r: {target}");
    }
}
