//! The engine and its per-thread handle, [`Worker`], which carries every operation.
//!
//! Every operation takes a [`TenantId`]. Reads take no lock: they pin an epoch, read one
//! bucket line, follow a tag match to a key record, validate the key and copy the value out.
//! Writes append the new item to the worker's own head segment first (no lock), then lock the
//! key's root bucket only to publish it — so a write holds a lock for a few loads and one
//! store. Operations whose result depends on the current value (append, incr, conditional
//! stores that keep a TTL) read, compute, write, and publish only if the item did not change in
//! between; otherwise they go again.
//!
//! Accounting: an item's size is its key record plus its value. A tenant's bytes are the sizes
//! of its live items; a segment's dead bytes are the sizes of its unreachable ones.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::arbiter::Arbiter;
use crate::arena::Arena;
use crate::budget::{self, LEND_AHEAD, LEND_PER_WRITE};
use crate::cleaner::{self, CleanerState};
use crate::clock::Clock;
use crate::epoch::{self, Epochs, Guard};
use crate::expiry::{self, SweepState};
use crate::hash::{digest_of, key_hash};
use crate::index::{Index, Loc, Locked};
use crate::item::{self, NewItem, Record};
use crate::metadata::{CpuHitmap, MetadataBackend, NoMetadata, POOL_LEN};
use crate::segment::{CLEANER_RESERVE, NO_EXPIRY, Segments};
use crate::stats::{Counters, EngineStats};
use crate::tenant::{NO_FLUSH, TenantPolicy, TenantState, TenantStats};
use crate::{CleanerMode, ConfigError, EngineConfig, EngineError, TenantId};

/// Keys whose lookups [`Worker::get_many`] overlaps.
pub const BATCH: usize = 16;
/// Yields a writer waits for a segment before reporting `OutOfMemory` (about a second).
const MAX_SEGMENT_WAITS: u32 = 1_000_000;
/// Old index roots migrated per write while the index grows.
const MIGRATE_PER_WRITE: usize = 2;

/// An item as a read sees it. Borrowed from the engine's memory for the duration of the
/// callback that receives it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry (ms since the Unix epoch), `None` for never.
    pub expires_at_ms: Option<u64>,
    /// CAS value (0 unless asked for).
    pub cas: u64,
}

/// When a stored item expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Never.
    Never,
    /// At this absolute time, ms since the Unix epoch.
    At(u64),
    /// Keep the existing item's expiry (none if there is no item).
    Keep,
}

/// The condition a store is subject to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Always store.
    Always,
    /// Only if the key has no live item (memcached `add`, Redis `NX`).
    IfAbsent,
    /// Only if the key has a live item (memcached `replace`, Redis `XX`).
    IfPresent,
    /// Only if the item's CAS value is this one (memcached `cas`).
    IfCas(u64),
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    /// The item was stored.
    Stored,
    /// The condition (absent / present) did not hold.
    NotStored,
    /// `IfCas`: the item exists with another CAS value.
    Exists,
    /// `IfCas`: there is no item.
    NotFound,
}

/// A store request.
#[derive(Debug, Clone, Copy)]
pub struct Store<'a> {
    /// Owning tenant.
    pub tenant: TenantId,
    /// Key.
    pub key: &'a [u8],
    /// Value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Expiry.
    pub expiry: Expiry,
    /// Condition.
    pub condition: Condition,
}

impl<'a> Store<'a> {
    /// An unconditional store with no flags and no expiry.
    pub fn new(tenant: TenantId, key: &'a [u8], value: &'a [u8]) -> Self {
        Store { tenant, key, value, flags: 0, expiry: Expiry::Never, condition: Condition::Always }
    }
}

/// The current item, as seen by an [`Worker::update`] closure.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry.
    pub expires_at_ms: Option<u64>,
    /// CAS value. The update is published only if the item is still this one, so a closure
    /// that compares this CAS acts atomically (memcached `md`/`ma` with `C`).
    pub cas: u64,
}

/// What an [`Worker::update`] closure decided.
#[derive(Debug)]
pub enum Update<R> {
    /// Write the value the closure put in the buffer, with these flags and expiry.
    Write {
        /// Client flags.
        flags: u32,
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// What the update returns once published.
        result: R,
    },
    /// Delete the item, then return the result.
    Delete(R),
    /// Change nothing and return this.
    Done(R),
}

pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) arena: Arena,
    pub(crate) segments: Segments,
    pub(crate) index: Index,
    /// Bytes outside the arena that do not change: segment headers, the eviction metadata,
    /// the expiry sweep's per-segment state.
    pub(crate) fixed_overhead: usize,
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
    pub(crate) tenants: Box<[TenantState]>,
    pub(crate) arbiter: Arbiter,
    /// Clock time (ms) at which each recency tick began, by tick (for idle times).
    tick_ms: Box<[AtomicU64]>,
    /// Coarse recency clock for access stamps; advances as segments are filled.
    recency: AtomicU64,
    segment_fills: AtomicU64,
    pub(crate) watermark: usize,
    pub(crate) cleaner: Mutex<CleanerState>,
    /// A lower bound on the expiry of every live item (`u64::MAX`: none has one); see
    /// [`crate::expiry`].
    pub(crate) next_expiry_ms: AtomicU64,
    /// The expiry sweep's cursor (one step at a time).
    pub(crate) sweep: Mutex<SweepState>,
    /// Set when the background thread is asked to run; guards `wake` (a leaf lock, so a
    /// wake-up between the thread's last look and its wait is never lost).
    wake_requested: Mutex<bool>,
    wake: Condvar,
    shutdown: AtomicBool,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A shared handle to one cache. Cheap to clone; create a [`Worker`] per thread to operate.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    background: Arc<Background>,
}

#[derive(Debug, Default)]
struct Background {
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Engine {
    /// Builds an engine. With [`CleanerMode::Background`] a cleaner thread starts now and stops
    /// when the last `Engine` clone is dropped (workers keep the memory alive, not the thread).
    pub fn new(
        config: EngineConfig,
        clock: Arc<dyn Clock>,
        metadata: Box<dyn MetadataBackend>,
    ) -> Result<Engine, ConfigError> {
        config.validate()?;
        let segment_count = config.max_memory / config.segment_size;
        let arena = Arena::new(segment_count, config.segment_size, config.memory_includes_index)
            .map_err(|e| ConfigError(format!("cannot map {} bytes: {e}", config.max_memory)))?;
        let watermark = if config.free_watermark > 0 {
            config.free_watermark
        } else {
            (segment_count / 100).max(2 * config.workers_hint).max(CLEANER_RESERVE + 1)
        };
        let initial_buckets = if config.index_buckets > 0 {
            config.index_buckets
        } else {
            (config.max_memory / 4096).max(64)
        };
        let epochs = Epochs::new(config.max_participants + 2);
        let cleaner_id = epochs.register().ok_or_else(|| ConfigError("no epoch slot".into()))?;
        let fixed_overhead = fixed_overhead(segment_count, metadata.stats().bytes);
        let index = Index::new(initial_buckets, config.max_memory / 64);
        // The tenants share the arena less what is lent at the start (the index's growth
        // later is not taken off).
        let scratch_allowance = if config.memory_includes_index {
            budget::scratch_allowance(config.max_memory, config.segment_size)
        } else {
            0
        };
        let lent_at_start = if config.memory_includes_index {
            (fixed_overhead + scratch_allowance + index.resident_bytes() + LEND_AHEAD)
                .div_ceil(config.segment_size)
        } else {
            0
        };
        let usable = segment_count.saturating_sub(watermark + lent_at_start);
        let inner = Arc::new(Inner {
            arena,
            segments: Segments::new(segment_count, config.segment_size),
            index,
            fixed_overhead,
            cleaner_scratch: AtomicUsize::new(0),
            scratch_allowance,
            lending: Mutex::new(()),
            epochs,
            counters: Counters::default(),
            metadata,
            tenants: (0..item::MAX_TENANTS).map(|_| TenantState::default()).collect(),
            arbiter: Arbiter::new((usable * config.segment_size) as u64, config.seed),
            tick_ms: (0..256).map(|_| AtomicU64::new(clock.now_ms())).collect(),
            recency: AtomicU64::new(0),
            segment_fills: AtomicU64::new(0),
            watermark,
            cleaner: Mutex::new(CleanerState::new(cleaner_id, config.seed)),
            next_expiry_ms: AtomicU64::new(NO_EXPIRY),
            sweep: Mutex::new(SweepState::new()),
            wake_requested: Mutex::new(false),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
            clock,
            config,
        });
        if inner.settle_lending(usize::MAX) {
            return Err(ConfigError(format!(
                "max_memory {} cannot hold the index and the engine's other structures \
                 ({} bytes) with memory_includes_index",
                inner.config.max_memory,
                inner.fixed_overhead + inner.index.resident_bytes()
            )));
        }
        let usable = segment_count - inner.segments.lent_count();
        let needed = 4 * inner.config.workers_hint.max(1) + 8;
        if usable < needed {
            return Err(ConfigError(format!(
                "max_memory {} leaves {usable} segments for items once the index and the \
                 engine's other structures are counted in it (memory_includes_index); at least \
                 {needed} are needed for {} workers",
                inner.config.max_memory, inner.config.workers_hint
            )));
        }
        let background = Arc::new(Background::default());
        if inner.config.cleaner == CleanerMode::Background {
            let bg = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name("fridge-cleaner".into())
                .spawn(move || cleaner::run_background(&bg))
                .map_err(|e| ConfigError(format!("cannot start cleaner: {e}")))?;
            *background.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        }
        Ok(Engine { inner, background })
    }

    /// An engine with the CPU hitmap its configuration asks for: applied inline with the
    /// inline cleaner (deterministic), by a metadata thread with the background cleaner, or
    /// none when `hitmap_bits_per_item` is 0.
    pub fn with_clock(config: EngineConfig, clock: Arc<dyn Clock>) -> Result<Engine, ConfigError> {
        let (items, bits) = (config.hitmap_capacity(), config.hitmap_bits_per_item);
        let metadata: Box<dyn MetadataBackend> = match (bits, config.cleaner) {
            (0, _) => Box::new(NoMetadata),
            (_, CleanerMode::Inline) => Box::new(CpuHitmap::inline(items, bits)),
            (_, CleanerMode::Background) => Box::new(
                CpuHitmap::threaded(items, bits)
                    .map_err(|e| ConfigError(format!("cannot start metadata worker: {e}")))?,
            ),
        };
        Engine::new(config, clock, metadata)
    }

    /// A handle for one thread. Fails when `max_participants` handles exist.
    pub fn worker(&self) -> Result<Worker, EngineError> {
        let id = self.inner.epochs.register().ok_or(EngineError::TooManyWorkers)?;
        Ok(Worker {
            inner: Arc::clone(&self.inner),
            id,
            heads: [None, None],
            scratch: Vec::new(),
            refs: Vec::with_capacity(POOL_LEN),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// A snapshot of the engine's statistics.
    pub fn stats(&self) -> EngineStats {
        self.inner.stats()
    }

    /// Live items of `tenant` (expired items not yet reclaimed included, as Redis's DBSIZE).
    pub fn item_count(&self, tenant: TenantId) -> u64 {
        self.inner.tenants[usize::from(tenant.0)].items.load(Ordering::Relaxed)
    }

    /// Live items of `tenant` that have an expiry (Redis's `expires` in `INFO keyspace`).
    pub fn expiring_count(&self, tenant: TenantId) -> u64 {
        self.inner.tenants[usize::from(tenant.0)].expiring.load(Ordering::Relaxed)
    }

    /// Reclaims expired items now: completes the expiry sweep's pass under way, or runs a
    /// whole one if an item may have expired (the sweep is described in `src/expiry.rs`).
    /// Returns the items removed. With [`CleanerMode::Inline`] this is the only way expired
    /// items that nothing reads leave the counts before the cleaner meets them; in the
    /// background mode the cleaner thread sweeps by itself, a step at a time.
    pub fn reclaim_expired(&self) -> u64 {
        let inner = &*self.inner;
        inner.with_participant(|id| {
            // One step without a bound completes a pass. If it finished one begun earlier (by
            // the background thread), items it had passed may have expired since: run another.
            let first = expiry::step(inner, id, usize::MAX);
            let mut reclaimed = first.reclaimed;
            if first.continued {
                reclaimed += expiry::step(inner, id, usize::MAX).reclaimed;
            }
            reclaimed
        })
    }

    /// One bounded step of the expiry sweep, as the background thread runs every 10 ms:
    /// starts a pass if an item may have expired, then does about `work` units (a root bucket
    /// or a key record read is one). Returns the items removed and whether the pass is still
    /// under way. For the simulator and tests that interleave the sweep with other operations.
    pub fn reclaim_expired_step(&self, work: usize) -> (u64, bool) {
        let inner = &*self.inner;
        let step = inner.with_participant(|id| expiry::step(inner, id, work.max(1)));
        (step.reclaimed, step.in_pass)
    }

    /// Bytes of `tenant`'s live items.
    pub fn tenant_bytes(&self, tenant: TenantId) -> u64 {
        self.inner.tenants[usize::from(tenant.0)].bytes.load(Ordering::Relaxed)
    }

    /// Sets `tenant`'s reservation, credit, rank function, idle tax and cap. Takes effect at
    /// the cleaner's next pass; cached items are untouched.
    pub fn set_tenant_policy(&self, tenant: TenantId, policy: TenantPolicy) {
        self.inner.tenants[usize::from(tenant.0)].set_policy(&policy);
        if tenant != TenantId(0) {
            // More than the default tenant: shadow queues and need-ordered cleaning start.
            self.inner.arbiter.enable();
        }
    }

    /// `tenant`'s policy in force.
    pub fn tenant_policy(&self, tenant: TenantId) -> TenantPolicy {
        self.inner.tenants[usize::from(tenant.0)].policy()
    }

    /// `tenant`'s items, memory and arbiter figures.
    pub fn tenant_stats(&self, tenant: TenantId) -> TenantStats {
        self.inner.tenants[usize::from(tenant.0)].stats()
    }

    #[cfg(test)]
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Checks internal invariants; panics with a description if one is broken. Expensive:
    /// walks the whole index. For tests and fuzzing.
    pub fn validate(&self) {
        self.inner.validate();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(handle) = self.thread.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // The last Engine clone stops the cleaner thread (Background's drop joins it).
        if Arc::strong_count(&self.background) == 1 {
            self.inner.shutdown.store(true, Ordering::SeqCst);
            self.inner.wake_background();
        }
    }
}

impl Inner {
    /// The record at `loc`, which an index slot pointed to while `_guard` was held.
    #[inline]
    pub(crate) fn record(&self, _guard: &Guard<'_>, loc: Loc) -> Record {
        // SAFETY: slots only ever point at complete, published records; the guard keeps the
        // segment from being reused while it (and thus the returned view) is in use.
        unsafe { Record::at(self.arena.segment_ptr(loc.segment), loc.offset as usize) }
    }

    #[inline]
    fn key_matches(&self, guard: &Guard<'_>, loc: Loc, tenant: TenantId, key: &[u8]) -> bool {
        let rec = self.record(guard, loc);
        rec.tenant() == tenant.0 && rec.key() == key
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
    fn value_fits(&self, len: usize) -> bool {
        self.config.max_value_len == 0 || len <= self.config.max_value_len
    }

    /// A GET miss: the arbiter checks the tenant's shadow queue (never waiting).
    #[inline]
    fn missed(&self, tenant: TenantId, hash: u64) {
        if self.arbiter.enabled() {
            self.arbiter.on_miss(&self.tenants, tenant.0, hash);
        }
    }

    /// When the recency tick `tick` began (an item stamped with it was read no earlier).
    pub(crate) fn tick_time_ms(&self, tick: u8) -> u64 {
        self.tick_ms[usize::from(tick)].load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn recency(&self) -> u8 {
        self.recency.load(Ordering::Relaxed) as u8
    }

    pub(crate) fn rehash(&self, guard: &Guard<'_>, loc: Loc) -> u64 {
        let rec = self.record(guard, loc);
        key_hash(TenantId(rec.tenant()), rec.key())
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
        let rec = self.record(guard, loc);
        let size = rec.size() as u64;
        self.segments.header(loc.segment).add_dead(size as usize);
        let t = &self.tenants[usize::from(rec.tenant())];
        t.items.fetch_sub(1, Ordering::Relaxed);
        t.bytes.fetch_sub(size, Ordering::Relaxed);
        if rec.has_expiry() {
            t.expiring.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Accounts for a new item just published (under its root's lock).
    fn linked(&self, tenant: TenantId, size: usize, expires_at_ms: Option<u64>) {
        let t = &self.tenants[usize::from(tenant.0)];
        t.items.fetch_add(1, Ordering::Relaxed);
        t.bytes.fetch_add(size as u64, Ordering::Relaxed);
        if expires_at_ms.is_some() {
            t.expiring.fetch_add(1, Ordering::Relaxed);
        }
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
    fn check_flush(&self, guard_id: usize, tenant: TenantId) {
        let t = &self.tenants[usize::from(tenant.0)];
        let at = t.flush_at_ms.load(Ordering::Relaxed);
        if at != NO_FLUSH
            && self.now_ms() >= at
            && t.flush_at_ms
                .compare_exchange(at, NO_FLUSH, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.flush_now(guard_id, tenant);
        }
    }

    fn flush_now(&self, id: usize, tenant: TenantId) {
        let guard = self.epochs.pin(id);
        let rehash = |loc| self.rehash(&guard, loc);
        let mut on_evict = |loc| self.unlinked(&guard, loc);
        let mut flushed = 0;
        self.index.for_each(&guard, &rehash, &mut on_evict, &mut |locked, slot, loc| {
            if self.record(&guard, loc).tenant() == tenant.0 {
                self.unlinked(&guard, loc);
                locked.remove(slot);
                flushed += 1;
            }
        });
        Counters::add(&self.counters.flushed, flushed);
    }

    /// Bounded index maintenance on the write path, and the lending of segments to the index
    /// it may call for. Returns true while a growth is under way.
    pub(crate) fn maintain_index(&self, guard: &Guard<'_>) -> bool {
        let rehash = |loc| self.rehash(guard, loc);
        let mut on_evict = |loc| self.unlinked(guard, loc);
        let items = || self.tenants.iter().map(|t| t.items.load(Ordering::Relaxed)).sum();
        let growing = self.index.maintain(
            guard,
            &self.epochs,
            MIGRATE_PER_WRITE,
            &items,
            &rehash,
            &mut on_evict,
        );
        self.settle_lending(LEND_PER_WRITE);
        growing
    }

    /// Appends an item to `seg`, which the caller owns (a worker's head or the cleaner's
    /// output), if it fits. The item is not published: the caller links it into the index.
    ///
    /// Placement: the key record goes at the low end. A value of at most `inline_value_max`
    /// bytes follows its record directly (one cache line holds both, saving a miss per GET
    /// hit; see `docs/design.md`); a larger one goes at the high end, apart from keys
    /// (Cavast §4.2).
    pub(crate) fn append_to(&self, seg: u32, item: &NewItem<'_>, value: &[&[u8]]) -> Option<Loc> {
        let value_len: usize = value.iter().map(|v| v.len()).sum();
        let record_len = item.record_len();
        let h = self.segments.header(seg);
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
                value,
                h.base_ms.load(Ordering::Relaxed),
            );
        }
        h.key_top.store(new_top as u32, Ordering::Release);
        h.value_bottom.store(new_bottom as u32, Ordering::Release);
        Some(Loc { segment: seg, offset: top as u32 })
    }

    /// A free segment to become a head, cleaning or evicting as needed. The caller must not
    /// be pinned (it may wait for other readers to leave their epochs).
    fn acquire_segment(&self, id: usize) -> Result<u32, EngineError> {
        let mut waits = 0u32;
        let mut cleans = 0;
        loop {
            if self.segments.free_count() <= self.watermark {
                self.segments.reclaim(&self.epochs);
                match self.config.cleaner {
                    CleanerMode::Inline => cleaner::clean_until_watermark(self),
                    CleanerMode::Background => self.wake_background(),
                }
            }
            if let Some(seg) = self.segments.take_free(self.now_ms(), CLEANER_RESERVE) {
                self.note_segment_fill();
                return Ok(seg);
            }
            if self.segments.reclaim(&self.epochs) > 0 {
                continue;
            }
            // Nothing free. In order of preference: wait for retired segments (readers leave
            // their epochs within one operation); clean here (waiting for a pass under way,
            // if any); and only then evict a whole segment, which drops live items regardless
            // of their rank.
            if self.segments.retired_count() == 0 {
                if cleans < 2 {
                    cleans += 1;
                    cleaner::clean_until_watermark(self);
                    continue;
                }
                if cleaner::evict_oldest(self, id) {
                    continue;
                }
            }
            // Still nothing: a pass holds its candidates, or readers hold retired segments.
            // Give up only if this lasts (then every segment is some writer's head: memory is
            // too small for the workers).
            waits += 1;
            if waits > MAX_SEGMENT_WAITS {
                return Err(EngineError::OutOfMemory);
            }
            std::thread::yield_now();
        }
    }

    fn note_segment_fill(&self) {
        let per_tick = (self.segments.count() as u64 / 64).max(1);
        if self.segment_fills.fetch_add(1, Ordering::Relaxed) % per_tick == per_tick - 1 {
            let tick = self.recency.fetch_add(1, Ordering::Relaxed).wrapping_add(1) as u8;
            self.tick_ms[usize::from(tick)].store(self.now_ms(), Ordering::Relaxed);
        }
    }

    /// Asks the background thread to run now (writers short of free segments, shutdown).
    fn wake_background(&self) {
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

    fn stats(&self) -> EngineStats {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let index = self.with_guard(|guard| self.index.stats(guard));
        let metadata = self.metadata.stats();
        let (segments, lent) = (self.segments.count(), self.segments.lent_count());
        EngineStats {
            max_memory: segments * self.config.segment_size,
            segment_size: self.config.segment_size,
            segments,
            segments_free: self.segments.free_count(),
            segments_sealed: self.segments.sealed_count(),
            segments_retired: self.segments.retired_count(),
            segments_lent: lent,
            arena_bytes: (segments - lent) * self.config.segment_size,
            overhead_bytes: index.bytes + self.outside_fixed(),
            index_bytes: index.bytes,
            index_buckets: index.buckets,
            index_resizes: index.resizes,
            index_evictions: index.evictions,
            items: self.tenants.iter().map(|t| load(&t.items)).sum(),
            item_bytes: self.tenants.iter().map(|t| load(&t.bytes)).sum(),
            gets: self.epochs.sum(|c| &c.gets),
            hits: self.epochs.sum(|c| &c.hits),
            sets: self.epochs.sum(|c| &c.sets),
            evictions: load(&c.evictions),
            expired: load(&c.expired),
            expired_swept: load(&c.swept),
            sweep_passes: load(&c.sweep_passes),
            sweep_checked: load(&c.sweep_checked),
            cleaner_passes: load(&c.cleaner_passes),
            relocated_items: load(&c.relocated_items),
            relocated_bytes: load(&c.relocated_bytes),
            fifo_evictions: load(&c.fifo_evictions),
            flushed: load(&c.flushed),
            digests: load(&c.digests),
            metadata,
        }
    }

    /// Runs `f` pinned under a participant slot of its own (for control-path callers that
    /// have no worker). Spins if every slot is taken.
    fn with_guard<R>(&self, f: impl FnOnce(&Guard<'_>) -> R) -> R {
        self.with_participant(|id| f(&self.epochs.pin(id)))
    }

    /// Runs `f` with an epoch participant slot of its own, unpinned. Spins if every slot is
    /// taken.
    fn with_participant<R>(&self, f: impl FnOnce(usize) -> R) -> R {
        let id = loop {
            match self.epochs.register() {
                Some(id) => break id,
                None => std::thread::yield_now(),
            }
        };
        let r = f(id);
        self.epochs.unregister(id);
        r
    }

    fn validate(&self) {
        self.with_guard(|guard| self.validate_pinned(guard));
    }

    fn validate_pinned(&self, guard: &Guard<'_>) {
        let rehash = |loc| self.rehash(guard, loc);
        let mut on_evict = |loc| self.unlinked(guard, loc);
        let mut items = vec![0u64; item::MAX_TENANTS];
        let mut bytes = vec![0u64; item::MAX_TENANTS];
        let mut expiring = vec![0u64; item::MAX_TENANTS];
        let mut earliest = NO_EXPIRY;
        let mut seen = std::collections::HashSet::new();
        self.index.for_each(guard, &rehash, &mut on_evict, &mut |_, _, loc| {
            assert!((loc.segment as usize) < self.segments.count(), "slot names segment {loc:?}");
            let h = self.segments.header(loc.segment);
            assert!(
                loc.offset < h.key_top.load(Ordering::Relaxed),
                "slot {loc:?} points past its segment's records"
            );
            let rec = self.record(guard, loc);
            assert!(seen.insert((rec.tenant(), rec.key().to_vec())), "key indexed twice: {loc:?}");
            items[usize::from(rec.tenant())] += 1;
            bytes[usize::from(rec.tenant())] += rec.size() as u64;
            if let Some(at) = self.expires_at(&rec, loc) {
                expiring[usize::from(rec.tenant())] += 1;
                earliest = earliest.min(at);
                assert!(
                    h.min_expiry_ms.load(Ordering::Relaxed) <= at,
                    "segment {} claims no expiry before {at}",
                    loc.segment
                );
            }
        });
        // The bound may be above a live item's expiry only while a pass is under way.
        if !self.sweep.lock().unwrap_or_else(|e| e.into_inner()).in_pass() {
            assert!(
                self.next_expiry_ms.load(Ordering::Relaxed) <= earliest,
                "the expiry bound passes over a live item"
            );
        }
        for (t, state) in self.tenants.iter().enumerate() {
            assert_eq!(state.items.load(Ordering::Relaxed), items[t], "tenant {t} item count");
            assert_eq!(state.bytes.load(Ordering::Relaxed), bytes[t], "tenant {t} byte count");
            assert_eq!(
                state.expiring.load(Ordering::Relaxed),
                expiring[t],
                "tenant {t} expiring count"
            );
        }
        let total: u64 = bytes.iter().sum();
        assert!(total as usize <= self.config.max_memory, "live bytes exceed max_memory");
        if self.config.memory_includes_index {
            let s = self.stats();
            assert!(
                s.arena_bytes + s.overhead_bytes <= s.max_memory,
                "arena {} + outside {} exceed max_memory {}",
                s.arena_bytes,
                s.overhead_bytes,
                s.max_memory
            );
        }
    }
}

/// Bytes outside the arena that do not change: a header per segment, the eviction metadata
/// (`metadata_bytes`), the expiry sweep's per-segment state.
fn fixed_overhead(segments: usize, metadata_bytes: usize) -> usize {
    segments * (std::mem::size_of::<crate::segment::SegmentHeader>() + expiry::BYTES_PER_SEGMENT)
        + metadata_bytes
}

/// One thread's handle: its own head segments, reference pool and scratch buffer.
#[derive(Debug)]
pub struct Worker {
    inner: Arc<Inner>,
    id: usize,
    /// Head segments for small and large values.
    heads: [Option<u32>; 2],
    scratch: Vec<u8>,
    refs: Vec<u32>,
}

#[cfg(test)]
impl Worker {
    pub(crate) fn id(&self) -> usize {
        self.id
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        for seg in self.heads.iter_mut().filter_map(Option::take) {
            self.inner.segments.seal(seg);
        }
        self.flush_references();
        self.inner.epochs.unregister(self.id);
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

impl Worker {
    /// A snapshot of the statistics of the engine this worker belongs to.
    pub fn stats(&self) -> EngineStats {
        self.inner.stats()
    }

    #[inline]
    fn note_access(&mut self, hash: u64, set: bool) {
        self.refs.push(digest_of(hash) & !1 | u32::from(set));
        if self.refs.len() == POOL_LEN {
            self.flush_references();
        }
    }

    fn flush_references(&mut self) {
        if !self.refs.is_empty() {
            self.inner.metadata.submit(&self.refs);
            Counters::add(&self.inner.counters.digests, self.refs.len() as u64);
            self.refs.clear();
        }
    }

    /// Hands the partly filled reference pool to the metadata sink now (the simulator calls
    /// this to make metadata effects deterministic at chosen points).
    pub fn flush_reference_pool(&mut self) {
        self.flush_references();
    }

    /// Reads `key`. `f` sees the item while it is pinned in memory; its result is returned.
    pub fn get<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        self.read(tenant, key, false, f)
    }

    /// Reads `key` with its CAS value.
    pub fn gets<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        self.read(tenant, key, true, f)
    }

    /// Whether `key` has a live item, without counting a GET or touching recency.
    pub fn contains(&mut self, tenant: TenantId, key: &[u8]) -> bool {
        let inner = &*self.inner;
        inner.check_flush(self.id, tenant);
        let hash = key_hash(tenant, key);
        let guard = inner.epochs.pin(self.id);
        let Some(loc) =
            inner.index.find(&guard, hash, |l| inner.key_matches(&guard, l, tenant, key))
        else {
            return false;
        };
        let rec = inner.record(&guard, loc);
        !is_expired(inner.expires_at(&rec, loc), || inner.now_ms())
    }

    /// Looks up many keys at once, calling `f(i, item)` for each key `keys[i]` that has a
    /// live item (in order). See [`Worker::get_each`].
    pub fn get_many<K: AsRef<[u8]>>(
        &mut self,
        tenant: TenantId,
        keys: &[K],
        mut f: impl FnMut(usize, Item<'_>),
    ) {
        self.get_each(tenant, keys.iter().map(AsRef::as_ref), |i, _, item| f(i, item));
    }

    /// Looks up every key the iterator yields, calling `f(i, key, item)` for the `i`-th key if
    /// it has a live item (in order). Lookups are software-pipelined in chunks of [`BATCH`]
    /// keys: while one chunk's keys are compared, the next chunk's likely records and the
    /// chunk after that's buckets are already being loaded, so memory misses overlap. Keys
    /// are held three chunks at a time on the stack (no allocation). Expired items are
    /// reported as misses and left for the cleaner. The call stays pinned throughout, so
    /// callers pass a request's or a pipeline's worth of keys, not whole key spaces.
    pub fn get_each<'k>(
        &mut self,
        tenant: TenantId,
        mut keys: impl Iterator<Item = &'k [u8]>,
        mut f: impl FnMut(usize, &'k [u8], Item<'_>),
    ) {
        let inner = Arc::clone(&self.inner);
        inner.check_flush(self.id, tenant);
        let counters = inner.epochs.counters(self.id);
        let guard = inner.epochs.pin(self.id);
        let recency = inner.recency();
        // A ring of three chunks: [c % 3] holds chunk c's keys, hashes and length.
        let mut ring_keys: [[&'k [u8]; BATCH]; 3] = [[&[]; BATCH]; 3];
        let mut ring_hashes = [[0u64; BATCH]; 3];
        let mut ring_len = [0usize; 3];
        // Stage 1: take a chunk of keys, hash them and start loading their buckets. Returns
        // whether the chunk has any keys.
        let stage_buckets = |c: usize,
                             keys: &mut dyn Iterator<Item = &'k [u8]>,
                             ring_keys: &mut [[&'k [u8]; BATCH]; 3],
                             ring_hashes: &mut [[u64; BATCH]; 3],
                             ring_len: &mut [usize; 3]| {
            let slot = c % 3;
            let mut n = 0;
            while n < BATCH {
                let Some(key) = keys.next() else { break };
                let h = key_hash(tenant, key);
                inner.index.prefetch_root(&guard, h);
                ring_keys[slot][n] = key;
                ring_hashes[slot][n] = h;
                n += 1;
            }
            ring_len[slot] = n;
            n > 0
        };
        // Stage 2: start loading the record each bucket most likely points to.
        let stage_records = |slot: usize, ring_hashes: &[[u64; BATCH]; 3], len: usize| {
            for &h in &ring_hashes[slot][..len] {
                if let Some(loc) = inner.index.probable(&guard, h) {
                    crate::index::prefetch(
                        inner.arena.segment_ptr(loc.segment).wrapping_add(loc.offset as usize),
                    );
                }
            }
        };
        let mut filled = [false; 3];
        filled[0] = stage_buckets(0, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
        filled[1] = filled[0]
            && stage_buckets(1, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
        if filled[0] {
            stage_records(0, &ring_hashes, ring_len[0]);
        }
        let mut c = 0;
        while filled[c % 3] {
            let next2 = (c + 2) % 3;
            filled[next2] = filled[(c + 1) % 3]
                && stage_buckets(c + 2, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
            if filled[(c + 1) % 3] {
                stage_records((c + 1) % 3, &ring_hashes, ring_len[(c + 1) % 3]);
            }
            // Stage 3: compare keys and hand out values.
            let slot = c % 3;
            for j in 0..ring_len[slot] {
                epoch::bump(&counters.gets);
                let (key, h) = (ring_keys[slot][j], ring_hashes[slot][j]);
                let Some(loc) =
                    inner.index.find(&guard, h, |l| inner.key_matches(&guard, l, tenant, key))
                else {
                    inner.missed(tenant, h);
                    continue;
                };
                let rec = inner.record(&guard, loc);
                let expires_at_ms = inner.expires_at(&rec, loc);
                if is_expired(expires_at_ms, || inner.now_ms()) {
                    continue;
                }
                rec.touch_access(recency);
                epoch::bump(&counters.hits);
                self.note_access(h, false);
                let item = Item { value: rec.value(), flags: rec.flags(), expires_at_ms, cas: 0 };
                f(c * BATCH + j, key, item);
            }
            filled[slot] = false;
            c += 1;
        }
    }

    fn read<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        with_cas: bool,
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        let hash = key_hash(tenant, key);
        let inner = &*self.inner;
        inner.check_flush(self.id, tenant);
        let counters = inner.epochs.counters(self.id);
        epoch::bump(&counters.gets);
        let guard = inner.epochs.pin(self.id);
        let is_key = |l| inner.key_matches(&guard, l, tenant, key);
        let found = if with_cas {
            inner.index.find_with_cas(&guard, hash, is_key)
        } else {
            inner.index.find(&guard, hash, is_key).map(|loc| (loc, 0))
        };
        let Some((loc, cas)) = found else {
            inner.missed(tenant, hash);
            return None;
        };
        let rec = inner.record(&guard, loc);
        let expires_at_ms = inner.expires_at(&rec, loc);
        if is_expired(expires_at_ms, || inner.now_ms()) {
            drop(guard);
            self.remove_if_at(tenant, hash, key, loc, true);
            return None;
        }
        rec.touch_access(inner.recency());
        epoch::bump(&counters.hits);
        let result = f(Item { value: rec.value(), flags: rec.flags(), expires_at_ms, cas });
        drop(guard);
        // Only hits reach the eviction metadata: a miss has no item to warm, and a lookaside
        // miss followed by its SET must count as one access, not two.
        self.note_access(hash, false);
        Some(result)
    }

    /// Removes `key`'s item if it is still the one at `loc` (expired-item reclamation).
    fn remove_if_at(&mut self, tenant: TenantId, hash: u64, key: &[u8], loc: Loc, expired: bool) {
        let inner = &*self.inner;
        let guard = inner.epochs.pin(self.id);
        let locked = inner.lock_key(&guard, hash);
        if let Some((slot, found)) = locked.find(|l| inner.key_matches(&guard, l, tenant, key)) {
            if found == loc {
                inner.unlinked(&guard, loc);
                locked.remove(slot);
                locked.bump_cas();
                if expired {
                    Counters::add(&inner.counters.expired, 1);
                }
            }
        }
    }

    /// Appends an item to this worker's head segment (unpublished). The caller must not be
    /// pinned.
    fn write_item(
        &mut self,
        item: &NewItem<'_>,
        value: &[&[u8]],
    ) -> Result<(Loc, usize), EngineError> {
        let inner = &*self.inner;
        let value_len: usize = value.iter().map(|v| v.len()).sum();
        let record_len = item.record_len();
        let size = record_len + value_len;
        if item.key.len() > item::MAX_KEY_LEN {
            return Err(EngineError::KeyTooLong);
        }
        if size > inner.config.max_item_size
            || size > inner.config.segment_size
            || !inner.value_fits(value_len)
        {
            return Err(EngineError::TooLarge);
        }
        let large = value_len >= inner.config.large_value_threshold;
        let head = &mut self.heads[usize::from(large)];
        loop {
            if let Some(seg) = *head {
                if let Some(loc) = inner.append_to(seg, item, value) {
                    return Ok((loc, size));
                }
                inner.segments.seal(seg);
                *head = None;
            }
            *head = Some(inner.acquire_segment(self.id)?);
        }
    }

    /// Stores an item.
    pub fn store(&mut self, req: Store<'_>) -> Result<StoreOutcome, EngineError> {
        self.store_returning_old(req, None)
    }

    /// Stores an item; if `old` is given, it is cleared and the replaced live value (if any)
    /// is copied into it. An empty `old` afterwards means no live item *or* an empty value;
    /// where the difference matters (Redis `SET … GET` answers nil or `""`), use
    /// [`Worker::update`], which sees the current item.
    pub fn store_returning_old(
        &mut self,
        req: Store<'_>,
        mut old: Option<&mut Vec<u8>>,
    ) -> Result<StoreOutcome, EngineError> {
        let hash = key_hash(req.tenant, req.key);
        self.note_access(hash, true);
        self.inner.check_flush(self.id, req.tenant);
        epoch::bump(&self.inner.epochs.counters(self.id).sets);
        if let Some(old) = old.as_deref_mut() {
            old.clear();
        }
        if req.expiry == Expiry::Keep {
            return self.store_keeping_ttl(req, old);
        }
        let expires_at_ms = match req.expiry {
            Expiry::At(at) => Some(at),
            _ => None,
        };
        if expires_at_ms.is_some_and(|at| at <= self.inner.now_ms()) {
            // Already expired: the store succeeds and leaves nothing behind (memcached's
            // negative exptime). Conditions still apply.
            return self.store_expired(req, old);
        }
        // A cheap early answer for conditions that already fail (no write wasted).
        if let Some(outcome) = self.precheck(req) {
            return Ok(outcome);
        }
        let tenant = req.tenant;
        let item = NewItem {
            tenant: tenant.0,
            key: req.key,
            flags: req.flags,
            expires_at_ms,
            access: self.inner.recency(),
        };
        let (new, size) = self.write_item(&item, &[req.value])?;
        let inner = &*self.inner;
        let guard = inner.epochs.pin(self.id);
        inner.maintain_index(&guard);
        let locked = inner.lock_key(&guard, hash);
        let found = locked.find(|l| inner.key_matches(&guard, l, tenant, req.key));
        let live = found.filter(|&(_, l)| {
            let rec = inner.record(&guard, l);
            !is_expired(inner.expires_at(&rec, l), || inner.now_ms())
        });
        let outcome = match (req.condition, live) {
            (Condition::Always, _) => StoreOutcome::Stored,
            (Condition::IfAbsent, None) | (Condition::IfPresent, Some(_)) => StoreOutcome::Stored,
            (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                StoreOutcome::NotStored
            }
            (Condition::IfCas(_), None) => StoreOutcome::NotFound,
            (Condition::IfCas(cas), Some(_)) if cas == locked.cas() => StoreOutcome::Stored,
            (Condition::IfCas(_), Some(_)) => StoreOutcome::Exists,
        };
        if outcome != StoreOutcome::Stored {
            inner.segments.header(new.segment).add_dead(size);
            return Ok(outcome);
        }
        match found {
            Some((slot, old_loc)) => {
                if let (Some(out), Some(_)) = (old, live) {
                    out.extend_from_slice(inner.record(&guard, old_loc).value());
                }
                if live.is_none() {
                    Counters::add(&inner.counters.expired, 1);
                }
                inner.unlinked(&guard, old_loc);
                locked.replace(slot, new);
            }
            None => {
                if let Some(evicted) = locked.insert(new) {
                    inner.unlinked(&guard, evicted);
                }
            }
        }
        inner.linked(tenant, size, expires_at_ms);
        locked.bump_cas();
        drop(locked);
        inner.note_expiry(expires_at_ms);
        Ok(StoreOutcome::Stored)
    }

    /// Answers conditional stores whose condition already fails, without writing.
    fn precheck(&mut self, req: Store<'_>) -> Option<StoreOutcome> {
        let present = match req.condition {
            Condition::Always => return None,
            Condition::IfCas(cas) => {
                let inner = &*self.inner;
                let hash = key_hash(req.tenant, req.key);
                let guard = inner.epochs.pin(self.id);
                let found = inner.index.find_with_cas(&guard, hash, |l| {
                    inner.key_matches(&guard, l, req.tenant, req.key)
                });
                return match found {
                    None => Some(StoreOutcome::NotFound),
                    Some((loc, cas_now)) => {
                        let rec = inner.record(&guard, loc);
                        if is_expired(inner.expires_at(&rec, loc), || inner.now_ms()) {
                            Some(StoreOutcome::NotFound)
                        } else if cas_now != cas {
                            Some(StoreOutcome::Exists)
                        } else {
                            None
                        }
                    }
                };
            }
            _ => self.contains(req.tenant, req.key),
        };
        match (req.condition, present) {
            (Condition::IfAbsent, true) | (Condition::IfPresent, false) => {
                Some(StoreOutcome::NotStored)
            }
            _ => None,
        }
    }

    fn store_expired(
        &mut self,
        req: Store<'_>,
        mut old: Option<&mut Vec<u8>>,
    ) -> Result<StoreOutcome, EngineError> {
        self.update(req.tenant, req.key, |current, _| {
            let outcome = match (req.condition, current) {
                (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                    StoreOutcome::NotStored
                }
                (Condition::IfCas(_), None) => StoreOutcome::NotFound,
                _ => StoreOutcome::Stored,
            };
            if let (Some(out), Some(c)) = (old.as_deref_mut(), current) {
                out.clear();
                out.extend_from_slice(c.value);
            }
            Ok(match (outcome, current) {
                (StoreOutcome::Stored, Some(_)) => Update::Delete(outcome),
                _ => Update::Done(outcome),
            })
        })
    }

    fn store_keeping_ttl(
        &mut self,
        req: Store<'_>,
        mut old: Option<&mut Vec<u8>>,
    ) -> Result<StoreOutcome, EngineError> {
        self.update(req.tenant, req.key, |current, buf| {
            let fails = match (req.condition, current) {
                (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                    Some(StoreOutcome::NotStored)
                }
                (Condition::IfCas(_), _) => Some(StoreOutcome::Exists),
                _ => None,
            };
            if let Some(out) = old.as_deref_mut() {
                out.clear();
                if let Some(c) = current {
                    out.extend_from_slice(c.value);
                }
            }
            if let Some(outcome) = fails {
                return Ok(Update::Done(outcome));
            }
            buf.extend_from_slice(req.value);
            Ok(Update::Write {
                flags: req.flags,
                expires_at_ms: current.and_then(|c| c.expires_at_ms),
                result: StoreOutcome::Stored,
            })
        })
    }

    /// Read-modify-write of one key. `f` sees the current live item (or `None`) and a cleared
    /// buffer; to write, it fills the buffer with the new value and returns
    /// [`Update::Write`]. The new item is published only if the key still holds the item `f`
    /// saw; otherwise `f` runs again on the newer item.
    pub fn update<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        mut f: impl FnMut(Option<Current<'_>>, &mut Vec<u8>) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        let hash = key_hash(tenant, key);
        self.note_access(hash, true);
        self.inner.check_flush(self.id, tenant);
        let mut buf = std::mem::take(&mut self.scratch);
        let result = loop {
            buf.clear();
            let inner = Arc::clone(&self.inner);
            let guard = inner.epochs.pin(self.id);
            let found = inner
                .index
                .find_with_cas(&guard, hash, |l| inner.key_matches(&guard, l, tenant, key));
            let seen = found.map(|(loc, _)| loc);
            let seen_cas = found.map(|(_, cas)| cas);
            let current = found.and_then(|(loc, cas)| {
                let rec = inner.record(&guard, loc);
                let expires_at_ms = inner.expires_at(&rec, loc);
                (!is_expired(expires_at_ms, || inner.now_ms())).then(|| Current {
                    value: rec.value(),
                    flags: rec.flags(),
                    expires_at_ms,
                    cas,
                })
            });
            let step = match f(current, &mut buf) {
                Ok(step) => step,
                Err(e) => break Err(e),
            };
            drop(guard);
            let (new, result, expires_at_ms) = match step {
                Update::Done(r) => break Ok(r),
                Update::Delete(r) => {
                    if let Some(loc) = seen {
                        self.remove_if_at(tenant, hash, key, loc, false);
                    }
                    break Ok(r);
                }
                Update::Write { flags, expires_at_ms, result } => {
                    if expires_at_ms.is_some_and(|at| at <= inner.now_ms()) {
                        if let Some(loc) = seen {
                            self.remove_if_at(tenant, hash, key, loc, false);
                        }
                        break Ok(result);
                    }
                    let item = NewItem {
                        tenant: tenant.0,
                        key,
                        flags,
                        expires_at_ms,
                        access: inner.recency(),
                    };
                    match self.write_item(&item, &[&buf]) {
                        Ok(new) => (new, result, expires_at_ms),
                        Err(e) => break Err(e),
                    }
                }
            };
            let (new, size) = new;
            let guard = inner.epochs.pin(self.id);
            inner.maintain_index(&guard);
            let locked = inner.lock_key(&guard, hash);
            let found = locked.find(|l| inner.key_matches(&guard, l, tenant, key));
            // Publish only over the very item `f` saw: same location and no change under
            // the root since (which also rules out the location being reused).
            if found.map(|(_, l)| l) != seen || (seen.is_some() && Some(locked.cas()) != seen_cas) {
                // Someone changed the key in between: this copy is dead; go again.
                inner.segments.header(new.segment).add_dead(size);
                continue;
            }
            match found {
                Some((slot, old_loc)) => {
                    if current_was_expired(&inner, &guard, old_loc) {
                        Counters::add(&inner.counters.expired, 1);
                    }
                    inner.unlinked(&guard, old_loc);
                    locked.replace(slot, new);
                }
                None => {
                    if let Some(evicted) = locked.insert(new) {
                        inner.unlinked(&guard, evicted);
                    }
                }
            }
            inner.linked(tenant, size, expires_at_ms);
            locked.bump_cas();
            drop(locked);
            inner.note_expiry(expires_at_ms);
            break Ok(result);
        };
        self.scratch = buf;
        result
    }

    /// Deletes `key`. Returns whether a live item was deleted.
    pub fn delete(&mut self, tenant: TenantId, key: &[u8]) -> bool {
        self.update(tenant, key, |current, _| {
            Ok(if current.is_some() { Update::Delete(true) } else { Update::Done(false) })
        })
        .unwrap_or(false)
    }

    /// Sets a live item's expiry (memcached `touch`, Redis `EXPIRE`/`PERSIST`). Returns the
    /// previous expiry, or `None` if there is no live item.
    pub fn set_expiry(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
    ) -> Result<Option<Option<u64>>, EngineError> {
        self.update(tenant, key, |current, buf| {
            let Some(c) = current else { return Ok(Update::Done(None)) };
            if c.expires_at_ms == expires_at_ms {
                return Ok(Update::Done(Some(c.expires_at_ms)));
            }
            buf.extend_from_slice(c.value);
            Ok(Update::Write { flags: c.flags, expires_at_ms, result: Some(c.expires_at_ms) })
        })
    }

    /// Reads `key` and sets its expiry in one step (memcached `gat`, Redis `GETEX`).
    pub fn get_and_touch<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        let mut f = Some(f);
        let inner = Arc::clone(&self.inner);
        epoch::bump(&inner.epochs.counters(self.id).gets);
        let out = self.update(tenant, key, |current, buf| {
            let Some(c) = current else { return Ok(Update::Done(None)) };
            let r =
                f.take().map(|f| f(Item { value: c.value, flags: c.flags, expires_at_ms, cas: 0 }));
            if c.expires_at_ms == expires_at_ms {
                return Ok(Update::Done(r));
            }
            buf.extend_from_slice(c.value);
            Ok(Update::Write { flags: c.flags, expires_at_ms, result: r })
        })?;
        if out.is_some() {
            epoch::bump(&inner.epochs.counters(self.id).hits);
        }
        Ok(out)
    }

    /// Appends (or prepends) `data` to a live item. With `create`, a missing key is created
    /// with `data` as its value (Redis `APPEND`); without, it is left missing (memcached).
    /// Returns the new length, or `None` if nothing was stored. A result longer than
    /// `max_value_len` (or an item over `max_item_size`) is [`EngineError::TooLarge`], and the
    /// item is left as it was.
    pub fn append(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        data: &[u8],
        prepend: bool,
        create: bool,
    ) -> Result<Option<usize>, EngineError> {
        let max = self.inner.config.max_value_len;
        self.update(tenant, key, |current, buf| match current {
            None if !create => Ok(Update::Done(None)),
            _ if max > 0 && current.map_or(0, |c| c.value.len()) + data.len() > max => {
                // Refused before copying anything.
                Err(EngineError::TooLarge)
            }
            None => {
                buf.extend_from_slice(data);
                Ok(Update::Write { flags: 0, expires_at_ms: None, result: Some(data.len()) })
            }
            Some(c) => {
                if prepend {
                    buf.extend_from_slice(data);
                    buf.extend_from_slice(c.value);
                } else {
                    buf.extend_from_slice(c.value);
                    buf.extend_from_slice(data);
                }
                let len = buf.len();
                Ok(Update::Write {
                    flags: c.flags,
                    expires_at_ms: c.expires_at_ms,
                    result: Some(len),
                })
            }
        })
    }

    /// memcached `incr`/`decr`: the value must be an unsigned 64-bit decimal; incr wraps, decr
    /// stops at 0. Returns the new value, or `None` if the key is missing.
    pub fn incr_u64(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: u64,
        decrement: bool,
    ) -> Result<Option<u64>, EngineError> {
        self.update(tenant, key, |current, buf| {
            let Some(c) = current else { return Ok(Update::Done(None)) };
            let n = parse_u64_lenient(c.value).ok_or(EngineError::NotANumber)?;
            let n = if decrement { n.saturating_sub(delta) } else { n.wrapping_add(delta) };
            write_decimal(buf, i128::from(n));
            Ok(Update::Write { flags: c.flags, expires_at_ms: c.expires_at_ms, result: Some(n) })
        })
    }

    /// Redis `INCRBY`: the value must be a signed 64-bit integer; a missing key counts as 0;
    /// overflow is an error. Returns the new value.
    pub fn incr_i64(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: i64,
    ) -> Result<i64, EngineError> {
        self.update(tenant, key, |current, buf| {
            let (n, flags, expires_at_ms) = match current {
                None => (0, 0, None),
                Some(c) => (
                    parse_i64_strict(c.value).ok_or(EngineError::NotAnInteger)?,
                    c.flags,
                    c.expires_at_ms,
                ),
            };
            let n = n.checked_add(delta).ok_or(EngineError::Overflow)?;
            write_decimal(buf, i128::from(n));
            Ok(Update::Write { flags, expires_at_ms, result: n })
        })
    }

    /// Redis `INCRBYFLOAT`: returns the new value as stored (shortest round-trip form).
    pub fn incr_f64(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: f64,
        out: &mut Vec<u8>,
    ) -> Result<(), EngineError> {
        out.clear();
        self.update(tenant, key, |current, buf| {
            let (n, flags, expires_at_ms) = match current {
                None => (0.0, 0, None),
                Some(c) => {
                    (parse_f64(c.value).ok_or(EngineError::NotAFloat)?, c.flags, c.expires_at_ms)
                }
            };
            let n = n + delta;
            if !n.is_finite() {
                return Err(EngineError::NotFinite);
            }
            use std::io::Write;
            let _ = write!(buf, "{n}");
            out.clear();
            out.extend_from_slice(buf);
            Ok(Update::Write { flags, expires_at_ms, result: () })
        })
    }

    /// Schedules a flush of every item `tenant` holds: now (`delay_ms == 0`) or when the clock
    /// reaches now + `delay_ms` (memcached `flush_all N`). A later call replaces an earlier
    /// schedule.
    pub fn flush(&mut self, tenant: TenantId, delay_ms: u64) {
        let inner = &*self.inner;
        if delay_ms == 0 {
            inner.tenants[usize::from(tenant.0)].flush_at_ms.store(NO_FLUSH, Ordering::Relaxed);
            inner.flush_now(self.id, tenant);
        } else {
            let at = inner.now_ms().saturating_add(delay_ms);
            inner.tenants[usize::from(tenant.0)].flush_at_ms.store(at, Ordering::Relaxed);
        }
    }

    /// One step of a resumable pass over `tenant`'s live keys (Redis `SCAN`). Start with
    /// cursor 0; keys are appended to `out` until about `count` were found or the pass ends;
    /// returns the next cursor, 0 when the pass is complete. A key present for the whole pass
    /// is returned at least once, even while the cleaner moves items and the index grows.
    pub fn scan(
        &mut self,
        tenant: TenantId,
        cursor: u64,
        count: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> u64 {
        self.scan_bounded(tenant, cursor, count, usize::MAX, out)
    }

    /// [`scan`](Self::scan) that visits at most `max_buckets` index buckets, so one call's
    /// work is bounded even where `tenant` owns few of the keys: it may return fewer than
    /// `count` keys, or none, with a cursor that is not 0 (as Redis's `SCAN` may).
    pub fn scan_bounded(
        &mut self,
        tenant: TenantId,
        mut cursor: u64,
        count: usize,
        max_buckets: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> u64 {
        let inner = &*self.inner;
        inner.check_flush(self.id, tenant);
        let guard = inner.epochs.pin(self.id);
        let rehash = |l| inner.rehash(&guard, l);
        let mut on_evict = |l| inner.unlinked(&guard, l);
        let target = out.len() + count.max(1);
        let now = inner.now_ms();
        for _ in 0..max_buckets.max(1) {
            cursor = inner.index.scan(&guard, cursor, &rehash, &mut on_evict, &mut |_, _, loc| {
                let rec = inner.record(&guard, loc);
                if rec.tenant() == tenant.0 && !is_expired(inner.expires_at(&rec, loc), || now) {
                    out.push(rec.key().to_vec());
                }
            });
            if cursor == 0 || out.len() >= target {
                break;
            }
        }
        cursor
    }

    /// Runs cleaner passes now until free segments are above the watermark (inline mode does
    /// this by itself as segments are filled; tests and the simulator may force it).
    pub fn clean(&mut self) {
        cleaner::clean_until_watermark(&self.inner);
    }
}

fn current_was_expired(inner: &Inner, guard: &Guard<'_>, loc: Loc) -> bool {
    let rec = inner.record(guard, loc);
    is_expired(inner.expires_at(&rec, loc), || inner.now_ms())
}

/// memcached's reading of a counter: decimal digits, optionally followed by spaces (memcached
/// pads a shrunken counter with spaces in place).
fn parse_u64_lenient(v: &[u8]) -> Option<u64> {
    let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || v[digits..].iter().any(|&b| b != b' ') {
        return None;
    }
    std::str::from_utf8(&v[..digits]).ok()?.parse().ok()
}

/// Redis's reading of an integer: an optional '-', then digits without leading zeros, at most
/// 20 bytes, fitting i64.
fn parse_i64_strict(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
        || v == b"-0"
    {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn parse_f64(v: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(v).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let n: f64 = s.parse().ok()?;
    n.is_finite().then_some(n)
}

fn write_decimal(buf: &mut Vec<u8>, n: i128) {
    let mut digits = [0u8; 40];
    let mut i = digits.len();
    let negative = n < 0;
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if negative {
        buf.push(b'-');
    }
    buf.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_like_their_servers() {
        assert_eq!(parse_u64_lenient(b"42"), Some(42));
        assert_eq!(parse_u64_lenient(b"9 "), Some(9), "memcached pads shrunken counters");
        assert_eq!(parse_u64_lenient(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64_lenient(b"18446744073709551616"), None);
        assert_eq!(parse_u64_lenient(b"x1"), None);
        assert_eq!(parse_u64_lenient(b""), None);
        assert_eq!(parse_i64_strict(b"-5"), Some(-5));
        assert_eq!(parse_i64_strict(b"007"), None, "Redis rejects leading zeros");
        assert_eq!(parse_i64_strict(b" 1"), None);
        assert_eq!(parse_i64_strict(b"9223372036854775808"), None);
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"nan"), None);
        let mut b = Vec::new();
        write_decimal(&mut b, -120);
        assert_eq!(b, b"-120");
    }
}
