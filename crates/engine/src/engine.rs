//! The engine: one cache's shared handle, [`Engine`], which builds the cache, starts its
//! background thread and answers the control path (stats, tenant policies, expiry passes).
//! Operations go through a [`Worker`] (`worker.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::arbiter::{Arbiter, CreditPolicy};
use crate::arena::{Arena, HUGE_PAGE};
use crate::budget::{self, LEND_AHEAD, LimitError};
use crate::cache::{CasCounter, CleanerState, Inner, SweepState};
use crate::cleaner;
use crate::clock::Clock;
use crate::config::{CleanerMode, EngineConfig, Eviction, MetadataDevice};
use crate::epoch::{Epochs, Guard, Slot};
use crate::error::{ConfigError, EngineError};
use crate::expiry;
use crate::ghost::Ghost;
use crate::hotkeys::HotKeys;
use crate::index::Index;
use crate::item;
use crate::metadata::{CpuHitmap, HotKeysOnly, MetadataBackend, NoHitmap, NoMetadata, Pooled};
use crate::observe::EvictionObserver;
use crate::segment::{CLEANER_RESERVE, NO_EXPIRY, Segments};
use crate::sketch::Sketch;
use crate::stats::{Counters, EngineStats};
use crate::tenant::{DbStats, TenantId, TenantPolicy, TenantState, TenantStats};
use crate::worker::Worker;

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
        // Huge pages, except where segments are released one by one (the index then counts
        // against the memory) and are smaller than a huge page: touching a segment next to a
        // released one would bring the released one back whole inside a fresh huge page. And
        // not where values are not copied, so that a record touches a page, not two megabytes.
        let huge = config.copy_values
            && (!config.memory_includes_index || config.segment_size % HUGE_PAGE == 0);
        let arena = Arena::new(segment_count, config.segment_size, huge)
            .map_err(|e| ConfigError(format!("cannot map {} bytes: {e}", config.max_memory)))?;
        let watermark = if config.free_watermark > 0 {
            config.free_watermark
        } else {
            // At least the cleaner's reserve, so that writers leave it free. Memshare's pass
            // needs one more: with one writer and a watermark of 2, its compactions found no
            // room and passes evicted live data while it fit in memory (240 items of 600 in
            // `overwrites_never_evict_while_live_data_fits` with `workers_hint: 1`). A queue
            // pass needs only its outputs, and a free segment less is 1–2% more items in a
            // cache of 50–200 segments (`docs/design.md`, "Eviction: S3-FIFO's queues").
            let floor = match config.eviction {
                crate::config::Eviction::Queues(_) => CLEANER_RESERVE,
                crate::config::Eviction::Memshare => CLEANER_RESERVE + 1,
            };
            (segment_count / 100).max(2 * config.workers_hint).max(floor)
        };
        let initial_buckets = if config.index_buckets > 0 {
            config.index_buckets
        } else {
            (config.max_memory / 4096).max(64)
        };
        let epochs = Epochs::new(config.max_participants + 2);
        let cleaner_id = epochs.register().ok_or_else(|| ConfigError("no epoch slot".into()))?;
        // The queues' ghosts, sized for the items held where the sketch is.
        let new_ghost = |percent| {
            let items = config.hitmap_capacity();
            let ghost = if config.metadata_grows() {
                Ghost::growing(items, percent)
            } else {
                Ghost::new(items, percent)
            };
            ghost.map_err(|e| ConfigError(format!("cannot map the queues' ghost: {e}")))
        };
        let (ghost, main_ghost, small_target) = match config.eviction {
            crate::config::Eviction::Queues(q) => (
                Some(new_ghost(q.ghost_percent)?),
                if q.adapts() { Some(new_ghost(q.ghost_percent)?) } else { None },
                (segment_count * config.segment_size) as u64 * u64::from(q.small_percent) / 100,
            ),
            crate::config::Eviction::Memshare => (None, None, 0),
        };
        let ghost_bytes =
            ghost.as_ref().map_or(0, Ghost::bytes) + main_ghost.as_ref().map_or(0, Ghost::bytes);
        let fixed_overhead = fixed_overhead(segment_count, metadata.bytes()) + ghost_bytes;
        let mut index = Index::new(initial_buckets, config.max_memory / 64)
            .map_err(|e| ConfigError(format!("cannot map the index: {e}")))?;
        if config.slb_bytes > 0 && !index.enable_slb(config.slb_bytes) {
            return Err(ConfigError(format!("cannot map an SLB of {} bytes", config.slb_bytes)));
        }
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
            segments: Segments::new(
                segment_count,
                config.segment_size,
                matches!(config.eviction, crate::config::Eviction::Queues(_)),
            ),
            index,
            edits: crate::edit::EditLocks::new(),
            fixed_overhead,
            metadata_at_start: metadata.bytes() + ghost_bytes,
            metadata_grown: AtomicUsize::new(0),
            cleaner_scratch: AtomicUsize::new(0),
            scratch_allowance,
            lending: Mutex::new(()),
            epochs,
            counters: Counters::default(),
            metadata,
            metadata_note: std::sync::OnceLock::new(),
            tenants: (0..item::MAX_TENANTS).map(|_| TenantState::default()).collect(),
            arbiter: Arbiter::new(
                (usable * config.segment_size) as u64,
                config.seed,
                config.shadow_bytes,
            ),
            ghost,
            main_ghost,
            small_target: AtomicU64::new(small_target),
            tick_ms: (0..256).map(|_| AtomicU64::new(clock.now_ms())).collect(),
            recency: AtomicU64::new(0),
            segment_fills: AtomicU64::new(0),
            key_events: crate::events::KeyEvents::default(),
            watermark,
            cleaner: Mutex::new(CleanerState::new(cleaner_id, config.seed)),
            next_expiry_ms: AtomicU64::new(NO_EXPIRY),
            cas: CasCounter::default(),
            sweep: Mutex::new(SweepState::new()),
            wake_requested: Mutex::new(false),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
            withhold_target: AtomicUsize::new(0),
            eviction_observer: std::sync::OnceLock::new(),
            clock,
            config,
        });
        inner.arbiter.set_credit_policy(inner.config.credit_policy);
        inner.arbiter.set_credit_weight(inner.config.credit_weight);
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

    /// An engine with the eviction metadata its configuration asks for: with S3-FIFO's
    /// queues a frequency sketch (`src/sketch.rs`) in host memory, with Memshare's pass (or
    /// [`MetadataDevice::Gpu`]) the hitmap, in host memory or on a GPU
    /// ([`EngineConfig::metadata_device`]); applied inline
    /// with the inline cleaner (deterministic), by a metadata thread with the background
    /// cleaner; none when `hitmap_bits_per_item` is 0, where the background cleaner's
    /// metadata thread still counts hot keys ([`HotKeysOnly`]) and the inline cleaner keeps
    /// nothing.
    pub fn with_clock(config: EngineConfig, clock: Arc<dyn Clock>) -> Result<Engine, ConfigError> {
        let (items, bits) = (config.hitmap_capacity(), config.hitmap_bits_per_item);
        let inline = config.cleaner == CleanerMode::Inline;
        // The queues read a sketch, unless a GPU was asked for (the hitmap is what runs there).
        let sketch = matches!(config.eviction, Eviction::Queues(_))
            && bits > 0
            && config.metadata_device != MetadataDevice::Gpu;
        let mut note = None;
        let gpu = match (bits, config.metadata_device) {
            _ if sketch => None,
            (0, _) | (_, MetadataDevice::Cpu) => None,
            (_, MetadataDevice::Gpu) => Some(
                crate::metadata::open_gpu(items, bits, inline)
                    .map_err(|e| ConfigError(format!("no GPU hitmap: {e}")))?,
            ),
            (_, MetadataDevice::Auto) => match crate::metadata::open_gpu(items, bits, inline) {
                Ok(gpu) => Some(gpu),
                Err(e) => {
                    note = Some(format!("hitmap in host memory: {e}"));
                    None
                }
            },
        };
        let new_sketch = || {
            let sketch = if config.metadata_grows() {
                Sketch::growing(items, bits)
            } else {
                Sketch::for_items(items, bits)
            };
            sketch.map_err(|e| ConfigError(format!("cannot map the frequency sketch: {e}")))
        };
        let metadata: Box<dyn MetadataBackend> = match (bits, gpu) {
            _ if sketch && inline => Box::new(Pooled::inline_with(new_sketch()?)),
            _ if sketch => Box::new(
                Pooled::threaded_with(new_sketch()?)
                    .map_err(|e| ConfigError(format!("cannot start metadata worker: {e}")))?,
            ),
            (0, _) if inline => Box::new(NoMetadata),
            (0, _) => Box::new(
                HotKeysOnly::threaded_with(NoHitmap)
                    .map_err(|e| ConfigError(format!("cannot start metadata worker: {e}")))?,
            ),
            (_, Some(gpu)) => gpu,
            (_, None) if inline => Box::new(
                CpuHitmap::inline(items, bits)
                    .map_err(|e| ConfigError(format!("cannot map the hitmap: {e}")))?,
            ),
            (_, None) => Box::new(
                CpuHitmap::threaded(items, bits)
                    .map_err(|e| ConfigError(format!("cannot start metadata worker: {e}")))?,
            ),
        };
        let engine = Engine::new(config, clock, metadata)?;
        if let Some(note) = note {
            let _ = engine.inner.metadata_note.set(note);
        }
        Ok(engine)
    }

    /// Why the hitmap is not on the GPU that `MetadataDevice::Auto` preferred (no driver, no
    /// NVRTC, no GPU, …), for the server's log; `None` where it went where asked.
    pub fn metadata_note(&self) -> Option<&str> {
        self.inner.metadata_note.get().map(String::as_str)
    }

    /// The hot keys of the last completed window, or of the live one if none has completed
    /// since the start or the last [`Engine::reset_hot_keys`] (`hotkeys.rs`); `None` where no
    /// metadata is kept (`hitmap_bits_per_item` 0 with the inline cleaner). Pools still in
    /// workers' hands are not counted.
    pub fn hot_keys(&self) -> Option<HotKeys> {
        self.inner.metadata.hot_keys()
    }

    /// Forgets the hot keys counted so far; a new window starts.
    pub fn reset_hot_keys(&self) {
        self.inner.metadata.reset_hot_keys();
    }

    /// Sets the length of the hot-key windows (from the next one on); ignored without a
    /// hitmap.
    pub fn set_hot_window(&self, window_ms: u64) {
        self.inner.metadata.set_hot_window(window_ms);
    }

    /// The length of the hot-key windows, `None` without a hitmap.
    pub fn hot_window(&self) -> Option<u64> {
        self.inner.metadata.hot_window()
    }

    /// A handle for one thread. Fails when `max_participants` handles exist.
    pub fn worker(&self) -> Result<Worker, EngineError> {
        let id = self.inner.epochs.register().ok_or(EngineError::TooManyWorkers)?;
        Ok(Worker::new(Arc::clone(&self.inner), id))
    }

    /// The configuration in force.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Moves the memory limit for items at run time (memcached's `cache_memlimit`), within
    /// the arena mapped at start (`max_memory`). Lowering it evicts down to the new limit in
    /// the cleaner's normal bounded passes — the segments beyond it stop being handed out and
    /// are withheld as they come free, their pages given back — so requests never wait for
    /// it; raising it hands withheld segments out again at once. See `budget.rs`.
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), LimitError> {
        self.inner.set_memory_limit(bytes)
    }

    /// The memory limit in force (`max_memory` until [`Engine::set_memory_limit`] moves it).
    pub fn memory_limit(&self) -> usize {
        self.inner.memory_limit()
    }

    /// Sets the observer told about each evicted item (`observe.rs`). Only the first call
    /// sets it; returns whether this one did.
    pub fn set_eviction_observer(&self, observer: EvictionObserver) -> bool {
        self.inner.eviction_observer.set(observer).is_ok()
    }

    /// Raises the engine's CAS counter to at least `floor`, for a cache restored with the CAS
    /// values its items had (a warm restart: `Store::cas` given each item's old value).
    ///
    /// Contract: once this returns, every CAS value the engine hands out (a store or update
    /// without an explicit CAS) MUST be above `floor` and above every value handed out
    /// before; it never lowers the counter. Items already stored keep theirs.
    pub fn raise_cas_floor(&self, floor: u64) {
        self.inner.cas.0.fetch_max(floor, Ordering::Relaxed);
    }

    /// The highest CAS value the engine has handed out (0 before the first store).
    pub fn cas_high(&self) -> u64 {
        self.inner.cas.0.load(Ordering::Relaxed)
    }

    /// Whether lookups consult the SLB (`slb_bytes`; on from the start when it is
    /// configured). Off, reads go straight to the index and admit nothing, while every write
    /// still keeps the SLB's entries true, so turning it on again is safe at any time: an A/B
    /// switch on one engine, its memory and layout unchanged (the `slb` benchmark).
    pub fn use_slb(&self, on: bool) {
        self.inner.index.use_slb(on);
    }

    /// A snapshot of the engine's statistics.
    pub fn stats(&self) -> EngineStats {
        self.inner.stats()
    }

    /// Where the arena's segments are and how full, right now: free, open heads, and each
    /// queue's sealed segments with the bytes written into them. For reports (the simulator's
    /// capacity columns); it reads every segment header under the lists' mutex.
    pub fn segment_usage(&self) -> crate::stats::SegmentUsage {
        self.inner.segments.usage()
    }

    /// Live items of `tenant` (expired items not yet reclaimed included, as Redis's DBSIZE).
    pub fn item_count(&self, tenant: TenantId) -> u64 {
        self.inner.tenants[usize::from(tenant.0)].items.load(Ordering::Relaxed)
    }

    /// Live items of `tenant` that have an expiry (Redis's `expires` in `INFO keyspace`).
    pub fn expiring_count(&self, tenant: TenantId) -> u64 {
        self.inner.tenants[usize::from(tenant.0)].expiring.load(Ordering::Relaxed)
    }

    /// The figures of each of `tenant`'s databases (keys, keys with an expiry, the sum of
    /// their expiry times), indexed by the database number items are stored with
    /// ([`Worker::select`]); their keys add up to [`Engine::item_count`]. Counted where the
    /// tenant's items are (store, delete, expiry, eviction): this reads a few counters per
    /// database and scans nothing.
    pub fn db_stats(&self, tenant: TenantId) -> [DbStats; item::MAX_DBS] {
        self.inner.tenants[usize::from(tenant.0)].db_stats()
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

    /// Sets `tenant`'s reservation, credit, rank function, idle tax and cap. Takes effect at
    /// the cleaner's next pass; cached items are untouched.
    pub fn set_tenant_policy(&self, tenant: TenantId, policy: TenantPolicy) {
        let old = self.inner.tenants[usize::from(tenant.0)].set_policy(&policy);
        self.inner.arbiter.policy_changed(old, policy.reserved);
        if tenant != TenantId(0) {
            // More than the default tenant: shadow queues and need-ordered cleaning start.
            self.inner.arbiter.enable();
        }
    }

    /// Where the arbiter's credits may come from once the pool is all assigned: tenants
    /// above their floors ([`CreditPolicy::Floor`], the default) or any holder (Memshare).
    /// Replaces [`EngineConfig::credit_policy`].
    pub fn set_credit_policy(&self, policy: CreditPolicy) {
        self.inner.arbiter.set_credit_policy(policy);
    }

    /// Replaces [`EngineConfig::credit_weight`] (see [`crate::CreditWeight`]).
    pub fn set_credit_weight(&self, weight: crate::CreditWeight) {
        self.inner.arbiter.set_credit_weight(weight);
    }

    /// `tenant`'s policy in force.
    pub fn tenant_policy(&self, tenant: TenantId) -> TenantPolicy {
        self.inner.tenants[usize::from(tenant.0)].policy()
    }

    /// `tenant`'s items, memory and arbiter figures.
    pub fn tenant_stats(&self, tenant: TenantId) -> TenantStats {
        self.inner.tenants[usize::from(tenant.0)].stats()
    }

    /// Turns the key-event queue on or off (see [`KeyEvent`](crate::KeyEvent)); off drops
    /// what it holds.
    pub fn set_key_events(&self, on: bool) {
        self.inner.key_events.set(on);
    }

    /// The oldest key event not yet taken.
    pub fn pop_key_event(&self) -> Option<crate::KeyEvent> {
        self.inner.key_events.pop()
    }

    /// Key events dropped because the queue was full.
    pub fn key_events_dropped(&self) -> u64 {
        self.inner.key_events.dropped()
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
    fn stats(&self) -> EngineStats {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let index = self.with_guard(|guard| self.index.stats(guard));
        let metadata = self.metadata.stats();
        let (segments, lent) = (self.segments.count(), self.segments.lent_count());
        let (shadow_bytes, shadow_items) = self.arbiter.shadow_memory();
        EngineStats {
            max_memory: segments * self.config.segment_size,
            segment_size: self.config.segment_size,
            segments,
            segments_free: self.segments.free_count(),
            segments_sealed: self.segments.sealed_count(),
            segments_retired: self.segments.retired_count(),
            segments_held: self.segments.held_count(),
            value_pins: self.segments.pins(),
            segments_lent: lent,
            arena_bytes: (segments - lent) * self.config.segment_size,
            overhead_bytes: index.bytes + self.outside_fixed(),
            index_bytes: index.bytes,
            index_buckets: index.buckets,
            index_resizes: index.resizes,
            index_evictions: index.evictions,
            index_growth_failures: index.growth_failures,
            slb_bytes: index.slb_bytes,
            slb_hits: self.epochs.sum(|c| &c.slb_hits),
            slb_admissions: index.slb_admissions,
            shadow_bytes,
            shadow_items,
            ghost_bytes: self.ghost_bytes(),
            items: self.tenants.iter().map(|t| load(&t.items)).sum(),
            item_bytes: self.tenants.iter().map(|t| load(&t.bytes)).sum(),
            gets: self.epochs.sum(|c| &c.gets),
            hits: self.epochs.sum(|c| &c.hits),
            sets: self.epochs.sum(|c| &c.sets),
            edits_in_place: self.epochs.sum(|c| &c.edits_in_place),
            evictions: load(&c.evictions),
            expired: load(&c.expired),
            expired_swept: load(&c.swept),
            sweep_passes: load(&c.sweep_passes),
            sweep_checked: load(&c.sweep_checked),
            cleaner_passes: load(&c.cleaner_passes),
            relocated_items: load(&c.relocated_items),
            relocated_bytes: load(&c.relocated_bytes),
            fifo_evictions: load(&c.fifo_evictions),
            small_queue_target: self.small_target.load(Ordering::Relaxed),
            flushed: load(&c.flushed),
            digests: load(&c.digests),
            metadata,
        }
    }

    /// Runs `f` pinned under a participant slot of its own (for control-path callers that
    /// have no worker). Spins if every slot is taken.
    fn with_guard<R>(&self, f: impl FnOnce(&Guard<'_>) -> R) -> R {
        self.with_participant(|slot| f(&self.epochs.pin(slot)))
    }

    /// Runs `f` with an epoch participant slot of its own, unpinned. Spins if every slot is
    /// taken.
    fn with_participant<R>(&self, f: impl FnOnce(&Slot) -> R) -> R {
        let slot = loop {
            match self.epochs.register() {
                Some(slot) => break slot,
                None => std::thread::yield_now(),
            }
        };
        let r = f(&slot);
        self.epochs.unregister(slot);
        r
    }

    /// Holds the expiry sweep's lock and then the cleaner's for the whole check, so that no
    /// sweep step or cleaning pass (a background thread's, which may still run after the
    /// caller's writers stopped) drops an item between its count and the counters' (the
    /// only place both locks are held; nothing takes the sweep's under the cleaner's).
    fn validate(&self) {
        let sweep = self.sweep.lock().unwrap_or_else(|e| e.into_inner());
        let _pass = self.cleaner.lock().unwrap_or_else(|e| e.into_inner());
        self.with_guard(|guard| self.validate_pinned(guard, sweep.in_pass()));
    }

    fn validate_pinned(&self, guard: &Guard<'_>, sweeping: bool) {
        let rehash = |loc| self.rehash(guard, loc);
        let mut on_evict = |loc| self.unlinked(guard, loc);
        let mut items = vec![0u64; item::MAX_TENANTS];
        let mut bytes = vec![0u64; item::MAX_TENANTS];
        let mut expiring = vec![0u64; item::MAX_TENANTS];
        let mut dbs = vec![[DbStats::default(); item::MAX_DBS]; item::MAX_TENANTS];
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
            let space = (rec.tenant(), rec.db());
            assert!(seen.insert((space, rec.key().to_vec())), "key indexed twice: {loc:?}");
            items[usize::from(rec.tenant())] += 1;
            let db = &mut dbs[usize::from(rec.tenant())][usize::from(rec.db())];
            db.keys += 1;
            if let Some(at) = self.expires_at(&rec, loc) {
                db.expires += 1;
                db.expiry_secs += crate::tenant::expiry_secs(at);
            }
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
        self.index.validate_slb(guard, &rehash);
        // The bound may be above a live item's expiry only while a pass is under way.
        if !sweeping {
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
            assert_eq!(state.db_stats(), dbs[t], "tenant {t} database counts");
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
        + crate::edit::BYTES
}
