//! The state one cache shares between its workers, its cleaner and its expiry sweep:
//! [`Inner`], with the operations on it that every path needs (reading a record, linking and
//! unlinking items, appending to an owned segment, the recency clock, flushes) and the
//! slots that the cleaner and the sweep keep their own state in between steps.
//!
//! This file depends on no other path of the engine: the worker (`worker.rs`), the cleaner,
//! the sweep (`expiry.rs`) and the lending of segments (`budget.rs`) build on it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::arbiter::Arbiter;
use crate::arena::Arena;
use crate::clock::Clock;
use crate::config::EngineConfig;
use crate::epoch::{Epochs, Guard, Slot};
use crate::error::EngineError;
use crate::hash::key_hash_in;
use crate::index::{Index, Loc, Locked};
use crate::item::{self, NewItem, Record};
use crate::metadata::{MetadataBackend, Temperature};
use crate::observe::{Evicted, EvictionObserver};
use crate::segment::{MAIN, SMALL, Segments};
use crate::stats::Counters;
use crate::tenant::{NO_FLUSH, TenantId, TenantState};

pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) arena: Arena,
    pub(crate) segments: Segments,
    pub(crate) index: Index,
    /// The locks that let a write change a published collection in place (`crate::edit`).
    pub(crate) edits: crate::edit::EditLocks,
    /// Bytes outside the arena that do not change: segment headers, the eviction metadata
    /// as it was at the start, the expiry sweep's per-segment state.
    pub(crate) fixed_overhead: usize,
    /// The eviction metadata's bytes at the start (the hitmap or frequency sketch and the
    /// queues' ghosts), and what it has grown by since (a growing sketch and ghosts,
    /// [`EngineConfig::metadata_grows`]; as of the cleaner's last pass).
    pub(crate) metadata_at_start: usize,
    pub(crate) metadata_grown: AtomicUsize,
    /// Bytes of the cleaner's buffers, kept between passes (as of the last pass).
    pub(crate) cleaner_scratch: AtomicUsize,
    /// With `memory_includes_index`: bytes lent for the cleaner's buffers from the start.
    pub(crate) scratch_allowance: usize,
    /// Held while settling the segments lent to the memory outside the arena
    /// (`memory_includes_index`; see `budget.rs`).
    pub(crate) lending: Mutex<()>,
    pub(crate) epochs: Epochs,
    pub(crate) counters: Counters,
    pub(crate) metadata: Box<dyn MetadataBackend>,
    /// Why the hitmap is not where the configuration preferred it (`MetadataDevice::Auto`
    /// without a usable GPU), set once at startup.
    pub(crate) metadata_note: OnceLock<String>,
    pub(crate) tenants: Box<[TenantState]>,
    pub(crate) arbiter: Arbiter,
    /// Keys the small queue evicted lately (`Eviction::Queues` only).
    pub(crate) ghost: Option<crate::ghost::Ghost>,
    /// Keys the main queue evicted lately (`Eviction::Queues` whose small queue adapts).
    pub(crate) main_ghost: Option<crate::ghost::Ghost>,
    /// The small queue's target, bytes of its sealed segments (`Eviction::Queues`; see
    /// [`Inner::adapt_small_queue`]).
    pub(crate) small_target: AtomicU64,
    /// Clock time (ms) at which each recency tick began, by tick (for idle times).
    pub(crate) tick_ms: Box<[AtomicU64]>,
    /// Coarse recency clock for access stamps; advances as segments are filled.
    pub(crate) recency: AtomicU64,
    pub(crate) segment_fills: AtomicU64,
    pub(crate) watermark: usize,
    pub(crate) cleaner: Mutex<CleanerState>,
    /// A lower bound on the expiry of every live item (`u64::MAX`: none has one); see
    /// [`crate::expiry`].
    pub(crate) next_expiry_ms: AtomicU64,
    /// The last CAS value handed out (see [`Inner::new_cas`]).
    pub(crate) cas: CasCounter,
    /// The expiry sweep's cursor (one step at a time).
    pub(crate) sweep: Mutex<SweepState>,
    /// Set when the background thread is asked to run; guards `wake` (a leaf lock, so a
    /// wake-up between the thread's last look and its wait is never lost).
    pub(crate) wake_requested: Mutex<bool>,
    pub(crate) wake: Condvar,
    pub(crate) shutdown: AtomicBool,
    /// Segments to withhold beyond the run-time memory limit (see `budget.rs`).
    pub(crate) withhold_target: AtomicUsize,
    /// Told about each evicted item, once set (see `observe.rs`).
    pub(crate) eviction_observer: OnceLock<EvictionObserver>,
    /// Keys dropped by the engine, for the server (off unless it asks).
    pub(crate) key_events: crate::events::KeyEvents,
}

/// The engine-wide CAS counter, on a cache line of its own: every store writes it.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct CasCounter(pub(crate) AtomicU64);

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Inner {
    /// The record at `loc`, which an index slot pointed to while `_guard` was held.
    #[inline]
    pub(crate) fn record<'g>(&self, _guard: &'g Guard<'_>, loc: Loc) -> Record<'g> {
        // SAFETY: slots only ever point at complete, published records; the guard keeps the
        // segment from being reused while it (and thus the returned view) is in use.
        unsafe { Record::at(self.arena.segment_ptr(loc.segment), loc.offset as usize) }
    }

    #[inline]
    pub(crate) fn key_matches(
        &self,
        guard: &Guard<'_>,
        loc: Loc,
        tenant: TenantId,
        db: u8,
        key: &[u8],
    ) -> bool {
        let rec = self.record(guard, loc);
        rec.tenant() == tenant.0 && rec.key() == key && rec.db() == db
    }

    #[inline]
    pub(crate) fn expires_at(&self, rec: &Record, loc: Loc) -> Option<u64> {
        rec.expires_at_ms(self.segments.header(loc.segment).base_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Whether a value of `len` bytes is within `max_value_len`.
    #[inline]
    pub(crate) fn value_fits(&self, len: usize) -> bool {
        self.config.max_value_len == 0 || len <= self.config.max_value_len
    }

    /// A GET miss: the arbiter checks the tenant's shadow queue (never waiting).
    #[inline]
    pub(crate) fn missed(&self, tenant: TenantId, hash: u64) {
        if self.arbiter.enabled() {
            self.arbiter.on_miss(&self.tenants, tenant.0, hash);
        }
    }

    /// When the recency tick `tick` began (an item stamped with it was read no earlier).
    pub(crate) fn tick_time_ms(&self, tick: u8) -> u64 {
        self.tick_ms[usize::from(tick)].load(Ordering::Relaxed)
    }

    /// Tells the eviction observer, if any, about the live item at `loc` being evicted.
    pub(crate) fn observe_eviction(&self, guard: &Guard<'_>, loc: Loc) {
        let Some(observer) = self.eviction_observer.get() else { return };
        let rec = self.record(guard, loc);
        observer(&Evicted {
            tenant: TenantId(rec.tenant()),
            db: rec.db(),
            key: rec.key(),
            value_len: rec.value_len(),
            expires_at_ms: self.expires_at(&rec, loc),
            last_access_ms: self.tick_time_ms(rec.access()),
        });
    }

    /// A CAS value no item has had: one more than the last handed out. One atomic add on a
    /// line of its own per store (memcached takes a global lock for the same).
    #[inline]
    pub(crate) fn new_cas(&self) -> u64 {
        self.cas.0.fetch_add(1, Ordering::Relaxed) + 1
    }

    #[inline]
    pub(crate) fn recency(&self) -> u8 {
        self.recency.load(Ordering::Relaxed) as u8
    }

    pub(crate) fn rehash(&self, guard: &Guard<'_>, loc: Loc) -> u64 {
        let rec = self.record(guard, loc);
        key_hash_in(TenantId(rec.tenant()), rec.db(), rec.key())
    }

    /// Locks the index root for `hash`; items the index drops meanwhile (migration into a full
    /// tree) are accounted as unlinked.
    pub(crate) fn lock_key<'g>(&'g self, guard: &'g Guard<'_>, hash: u64) -> Locked<'g> {
        let rehash = |loc| self.rehash(guard, loc);
        let mut on_evict = |loc| self.unlinked(guard, loc);
        self.index.lock(guard, hash, &rehash, &mut on_evict)
    }

    /// Accounts for a live item at `loc` becoming unreachable.
    pub(crate) fn unlinked(&self, guard: &Guard<'_>, loc: Loc) {
        self.unlinked_item(guard, loc, true);
    }

    /// Accounts for a live item at `loc` replaced by a new item of its key, which
    /// [`Inner::linked`] accounts with `new_key` false: the tenant's key count stays as it
    /// is (it neither dips, which would let a new key elsewhere past `max_keys`, nor rises).
    pub(crate) fn replaced(&self, guard: &Guard<'_>, loc: Loc) {
        self.unlinked_item(guard, loc, false);
    }

    fn unlinked_item(&self, guard: &Guard<'_>, loc: Loc, key_gone: bool) {
        let rec = self.record(guard, loc);
        let size = rec.size() as u64;
        self.segments.header(loc.segment).add_dead(size as usize);
        let t = &self.tenants[usize::from(rec.tenant())];
        if key_gone {
            t.items.fetch_sub(1, Ordering::Relaxed);
        }
        t.bytes.fetch_sub(size, Ordering::Relaxed);
        if rec.has_expiry() {
            t.expiring.fetch_sub(1, Ordering::Relaxed);
        }
        t.db_unlinked(rec.db(), self.expires_at(&rec, loc));
    }

    /// Accounts for a new item of database `db` being published (under its root's lock).
    /// A `new_key` (no item of the key is replaced) is counted against the tenant's
    /// `max_keys` first, then the item's bytes against its `max_bytes` (less `freed`, the
    /// size of the item it replaces); where either is passed nothing is accounted and the
    /// answer is the error (the caller must not publish). An item that replaces another of
    /// its key leaves the key count alone (the replaced one goes by [`Inner::replaced`]).
    pub(crate) fn linked(
        &self,
        tenant: TenantId,
        db: u8,
        (size, freed): (usize, usize),
        expires_at_ms: Option<u64>,
        new_key: bool,
    ) -> Result<(), EngineError> {
        let t = &self.tenants[usize::from(tenant.0)];
        if new_key && !t.count_new_key() {
            return Err(EngineError::KeyLimit);
        }
        if !t.count_bytes(size as u64, freed as u64) {
            if new_key {
                t.items.fetch_sub(1, Ordering::Relaxed);
            }
            return Err(EngineError::ByteLimit);
        }
        if expires_at_ms.is_some() {
            t.expiring.fetch_add(1, Ordering::Relaxed);
        }
        t.db_linked(db, expires_at_ms);
        Ok(())
    }

    /// Tells the expiry sweep about an item published with an expiry (stored, or copied by
    /// the cleaner), after its root is unlocked. Keeps [`Inner::next_expiry_ms`] a lower
    /// bound on every live item's expiry: either the sweep pass that reset the bound sees the
    /// new slot, or this lowers the bound (see `expiry::begin_pass`, whose fence pairs with
    /// this one). Costs a fence and a load per store with an expiry; the shared line is
    /// written only when the bound drops.
    #[inline]
    pub(crate) fn note_expiry(&self, expires_at_ms: Option<u64>) {
        if let Some(at) = expires_at_ms {
            fence(Ordering::SeqCst);
            if at < self.next_expiry_ms.load(Ordering::Relaxed) {
                self.next_expiry_ms.fetch_min(at, Ordering::Relaxed);
            }
        }
    }

    /// Runs a due delayed flush of `tenant`, if any.
    #[inline]
    pub(crate) fn check_flush(&self, slot: &Slot, tenant: TenantId) {
        let t = &self.tenants[usize::from(tenant.0)];
        let at = t.flush_at_ms.load(Ordering::Relaxed);
        if at != NO_FLUSH
            && self.now_ms() >= at
            && t.flush_at_ms
                .compare_exchange(at, NO_FLUSH, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.flush_now(slot, tenant, None);
        }
    }

    /// Drops every item of `tenant` (of its database `db` only, if given): one pass over the
    /// whole index, locking each root in turn.
    pub(crate) fn flush_now(&self, slot: &Slot, tenant: TenantId, db: Option<u8>) {
        let guard = self.epochs.pin(slot);
        let rehash = |loc| self.rehash(&guard, loc);
        let mut on_evict = |loc| self.unlinked(&guard, loc);
        let mut flushed = 0;
        self.index.for_each(&guard, &rehash, &mut on_evict, &mut |locked, slot, loc| {
            let rec = self.record(&guard, loc);
            if rec.tenant() == tenant.0 && db.is_none_or(|db| rec.db() == db) {
                self.unlinked(&guard, loc);
                locked.remove(slot);
                flushed += 1;
            }
        });
        Counters::add(&self.counters.flushed, flushed);
    }

    /// Appends an item to `seg`, which the caller owns (a worker's head or the cleaner's
    /// output), if it fits. The item is not published: the caller links it into the index.
    ///
    /// Placement: the key record goes at the low end. A value of at most `inline_value_max`
    /// bytes follows its record directly (one cache line holds both, saving a miss per GET
    /// hit; see `docs/design.md`); a larger one goes at the high end, apart from keys
    /// (Cavast §4.2).
    pub(crate) fn append_to(
        &self,
        seg: u32,
        item: &NewItem<'_>,
        value: &[&[u8]],
    ) -> Option<(Loc, usize)> {
        let value_len: usize = value.iter().map(|v| v.len()).sum();
        let h = self.segments.header(seg);
        let base_ms = h.base_ms.load(Ordering::Relaxed);
        let record_len = item.record_len(base_ms);
        let top = h.key_top.load(Ordering::Relaxed) as usize;
        let bottom = h.value_bottom.load(Ordering::Relaxed) as usize;
        if top + record_len + value_len > bottom {
            return None;
        }
        let inline = value_len <= self.config.inline_value_max;
        let (value_offset, new_top, new_bottom) = if inline {
            (top + record_len, top + record_len + value_len, bottom)
        } else {
            (bottom - value_len, top + record_len, bottom - value_len)
        };
        if let Some(at) = item.expires_at_ms {
            h.note_expiry(at);
        }
        let base = self.arena.segment_ptr(seg);
        let parts = if self.config.copy_values { value } else { &[] };
        // SAFETY: the caller owns `seg`: nobody else writes it. [top, top + record_len) and
        // [value_offset, value_offset + value_len) lie in the unpublished middle of the
        // segment, [top, bottom) (checked above), and do not overlap: an inline value starts
        // where the record ends; any other value ends at `bottom` and starts at or after
        // top + record_len.
        unsafe {
            item::write(
                base.add(top),
                base.add(value_offset),
                item,
                value_offset,
                value_len,
                parts,
                base_ms,
            );
        }
        h.key_top.store(new_top as u32, Ordering::Release);
        h.value_bottom.store(new_bottom as u32, Ordering::Release);
        Some((Loc { segment: seg, offset: top as u32 }, record_len + value_len))
    }

    pub(crate) fn note_segment_fill(&self) {
        let per_tick = (self.segments.count() as u64 / 64).max(1);
        if self.segment_fills.fetch_add(1, Ordering::Relaxed) % per_tick == per_tick - 1 {
            let tick = self.recency.fetch_add(1, Ordering::Relaxed).wrapping_add(1) as u8;
            self.tick_ms[usize::from(tick)].store(self.now_ms(), Ordering::Relaxed);
        }
    }

    /// Asks the background thread to run now (writers short of free segments, shutdown).
    pub(crate) fn wake_background(&self) {
        *self.wake_requested.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    /// The background thread's wait: returns at once if woken since it last looked or if
    /// free segments are short, otherwise after `timeout` or a wake-up. False at shutdown.
    pub(crate) fn wait_for_work(&self, timeout: std::time::Duration) -> bool {
        let mut requested = self.wake_requested.lock().unwrap_or_else(|e| e.into_inner());
        if !*requested
            && !self.shutdown.load(Ordering::SeqCst)
            && self.segments.free_count() > self.watermark
        {
            requested =
                self.wake.wait_timeout(requested, timeout).unwrap_or_else(|e| e.into_inner()).0;
        }
        *requested = false;
        !self.shutdown.load(Ordering::SeqCst)
    }
}

/// Whether an item that expires at `expires_at_ms` is gone at the time `now_ms` gives (read
/// only if the item has an expiry). Redis's rule: a key expires once the time is *past* its
/// deadline (`now > at`), so a key set with `PX 200` is still there at exactly 200 ms. With the
/// server's coarse clock, which may lag real time but never leads it, this also means a key is
/// never gone before its deadline.
pub(crate) fn is_expired(expires_at_ms: Option<u64>, now_ms: impl FnOnce() -> u64) -> bool {
    expires_at_ms.is_some_and(|at| now_ms() > at)
}

/// A survivor of a cleaning pass as Memshare's Algorithm 1 serves it (by need).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served {
    /// Index into the pass's survivors.
    pub(crate) index: usize,
    /// Keeping it stays within its tenant's hard cap.
    pub(crate) within_cap: bool,
    /// Its tenant held less than its target when it was served: with queues, it may stay
    /// without the reads that earn a stay, so that reservations and won credits hold.
    pub(crate) needy: bool,
}

/// The cleaner's own state, under the engine's cleaner mutex (one pass at a time).
#[derive(Debug)]
pub(crate) struct CleanerState {
    /// Epoch participant used while cleaning.
    pub(crate) participant: Slot,
    pub(crate) rng: u64,
    /// Output head segments for small and large values.
    pub(crate) heads: [Option<u32>; 2],
    /// A pass's survivors, their digests and temperatures, the order to keep them in (with
    /// tenants) and the items it evicts: reused between passes, so their memory is what the
    /// largest pass needed ([`CleanerState::scratch_bytes`], reported with the memory outside
    /// the arena).
    pub(crate) survivors: Vec<Survivor>,
    pub(crate) digests: Vec<u32>,
    pub(crate) temperatures: Vec<Temperature>,
    pub(crate) order: Vec<Served>,
    pub(crate) evicted: Vec<(u16, u64, u32)>,
    /// Items evicted less items relocated, over the run (`Eviction::Queues`; negative after
    /// compactions, which copy without evicting): what a pass may copy beyond its first two
    /// candidates' room.
    pub(crate) relocation_credit: i64,
}

impl CleanerState {
    pub(crate) fn new(participant: Slot, seed: u64) -> Self {
        CleanerState {
            participant,
            rng: seed | 1,
            heads: [None, None],
            survivors: Vec::new(),
            digests: Vec::new(),
            temperatures: Vec::new(),
            order: Vec::new(),
            evicted: Vec::new(),
            relocation_credit: 0,
        }
    }

    /// Bytes of the buffers reused between passes. An evicting pass holds one entry of about
    /// 40 bytes per live item of its `n` candidate segments.
    pub(crate) fn scratch_bytes(&self) -> usize {
        use std::mem::size_of;
        self.survivors.capacity() * size_of::<Survivor>()
            + self.digests.capacity() * size_of::<u32>()
            + self.temperatures.capacity() * size_of::<Temperature>()
            + self.order.capacity() * size_of::<Served>()
            + self.evicted.capacity() * size_of::<(u16, u64, u32)>()
    }

    pub(crate) fn next_random(&mut self) -> u64 {
        // xorshift64*: deterministic for a given seed.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[derive(Debug)]
pub(crate) struct Survivor {
    pub(crate) loc: Loc,
    pub(crate) hash: u64,
    pub(crate) rank: u64,
    pub(crate) large: bool,
    pub(crate) age: u8,
    pub(crate) size: u32,
    pub(crate) tenant: u16,
    /// Its reads since it entered its queue (`Record::freq`).
    pub(crate) freq: u8,
    /// The reads it needs to be kept (`Eviction::Queues`; 0 otherwise).
    pub(crate) min_freq: u8,
    /// The queue of its segment.
    pub(crate) queue: u8,
}

/// The sweep's place in the index and what it knows about each segment, under
/// [`Inner::sweep`]. The per-segment vectors (24 bytes a segment) are made by the first pass.
#[derive(Debug)]
pub(crate) struct SweepState {
    /// Next root position of the pass under way.
    pub(crate) cursor: usize,
    /// Whether a pass is under way.
    pub(crate) in_pass: bool,
    /// Per segment: its life (`SegmentHeader::generation`) if it was sealed when the pass
    /// under way (or the last one) began, so that every item in it then is one the pass sees.
    pub(crate) marks: Vec<Option<u32>>,
    /// Per segment: no item that existed when the pass began expires before this (from the
    /// header's earliest expiry and what the last pass learnt).
    pub(crate) bounds: Vec<u64>,
    /// Per segment: the earliest expiry among the live items the pass has seen there.
    pub(crate) mins: Vec<u64>,
}

impl SweepState {
    pub(crate) fn new() -> Self {
        SweepState {
            cursor: 0,
            in_pass: false,
            marks: Vec::new(),
            bounds: Vec::new(),
            mins: Vec::new(),
        }
    }

    /// Whether a pass is under way.
    pub(crate) fn in_pass(&self) -> bool {
        self.in_pass
    }
}

impl Inner {
    /// Bytes of the eviction metadata: the hitmap or frequency sketch, and the queues'
    /// ghosts.
    pub(crate) fn eviction_metadata_bytes(&self) -> usize {
        self.metadata.bytes() + self.ghost_bytes()
    }

    /// The queues' ghosts' bytes.
    pub(crate) fn ghost_bytes(&self) -> usize {
        let ghost = |g: &Option<crate::ghost::Ghost>| g.as_ref().map_or(0, |g| g.bytes());
        ghost(&self.ghost) + ghost(&self.main_ghost)
    }

    /// Live items of every tenant (a load per tenant slot: for a pass or a growth, not a
    /// request).
    pub(crate) fn items_held(&self) -> u64 {
        self.tenants.iter().map(|t| t.items.load(Ordering::Relaxed)).sum()
    }

    /// The queue a new item of key `hash` and `bytes` is written to (`Eviction::Queues`): a
    /// key a queue evicted lately goes straight to the main queue (S3-FIFO's ghost; with an
    /// adaptive small queue, also its main-queue ghost) and moves the small queue's target —
    /// a key the small queue dropped too early grows it, one the main queue dropped shrinks
    /// it. Any other key starts in the small queue.
    pub(crate) fn queue_for_write(&self, hash: u64, bytes: u64) -> u8 {
        let remembers =
            |g: &Option<crate::ghost::Ghost>| g.as_ref().is_some_and(|g| g.contains(hash));
        if remembers(&self.ghost) {
            self.adapt_small_queue(true, bytes);
            MAIN
        } else if remembers(&self.main_ghost) {
            self.adapt_small_queue(false, bytes);
            MAIN
        } else {
            SMALL
        }
    }

    /// ARC's adaptation of the small queue's target to a write of `bytes` whose key a ghost
    /// remembers: the small queue's (`grow`) or the main queue's. Within the configured
    /// shares; concurrent writers may lose each other's steps (a step is one item's bytes).
    fn adapt_small_queue(&self, grow: bool, bytes: u64) {
        let crate::config::Eviction::Queues(q) = self.config.eviction else { return };
        if self.main_ghost.is_none() {
            return; // A fixed share.
        }
        let total = (self.segments.count() * self.config.segment_size) as u64;
        let (lo, hi) = (
            total * u64::from(q.small_min_percent) / 100,
            total * u64::from(q.small_percent) / 100,
        );
        let t = self.small_target.load(Ordering::Relaxed);
        let new =
            if grow { t.saturating_add(bytes).min(hi) } else { t.saturating_sub(bytes).max(lo) };
        self.small_target.store(new, Ordering::Relaxed);
    }
}
