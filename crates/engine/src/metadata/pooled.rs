//! [`Pooled`]: a hitmap that takes reference pools, applied inline by the submitting thread
//! or by a metadata worker thread fed through a bounded lock-free queue. The structure that
//! applies them is a [`Structure`]: the hitmap in host memory ([`CpuHitmap`]) or on a GPU
//! (`GpuHitmap`, `gpu.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_queue::ArrayQueue;

use super::{MetadataBackend, MetadataStats, POOL_LEN, Temperature, UNKNOWN};
use crate::hitmap::{DEFAULT_LEVELS, Hitmap};
use crate::hotkeys::{DEFAULT_WINDOW_MS, HotKeys, NAMES_PER_POOL, TopK};

/// Pools that may wait for the metadata worker (256 KiB of digests).
const QUEUED_POOLS: usize = 64;

/// What applies pools and answers temperatures: the hitmap, wherever it lives.
///
/// # Contract
///
/// [`Pooled`] calls every method under its lock, so from one thread at a time, and passes
/// pools of any length (a threaded backend's, at most `POOL_LEN`). An implementation:
/// - MUST apply what it is given as [`Hitmap::record_pool`] applies a pool — the result a
///   function of the state before and the multiset of digests, never of their order, thread
///   timing or wall time — so that every structure given the same pools in the same batches
///   holds the same bits (the GPU's tests compare them word for word);
/// - MUST apply everything appended so far by the time [`flush`](Structure::flush) returns
///   or, if it applies asynchronously, before any later [`zones`](Structure::zones) answers;
/// - MUST compact when level 1 is saturated, at the end of the batch that saturated it;
/// - MUST write exactly one [`Temperature`] per digest in `zones`, in order, after clearing
///   `out`, and MUST NOT allocate there beyond growing to the largest query once;
/// - MUST NOT scan the hitmap in [`shape`](Structure::shape);
/// - MUST treat its own failure (a device lost) as lost history: drop pools, answer "unknown"
///   (zone 1), and say so in [`device`](Structure::device) — never panic.
pub trait Structure: Send + std::fmt::Debug + 'static {
    /// Applies one pool, or stages it to apply with the next ones; compacts when level 1 is
    /// saturated, with `compacting` raised while a compaction runs on the host.
    fn append(&mut self, digests: &[u32], compacting: &AtomicBool);
    /// Applies what [`append`](Structure::append) staged (the queue has run empty, or a
    /// caller waits for every pool to be applied).
    fn flush(&mut self) {}
    /// Writes the zone of each digest into `out` (cleared first, same order).
    fn zones(&mut self, digests: &[u32], out: &mut Vec<Temperature>);
    /// Bytes, levels and completed compactions, without a scan.
    fn shape(&mut self) -> (usize, usize, u64);
    /// Where the hitmap lives, for logs and stats (`cpu`, `gpu: NVIDIA H100 …`).
    fn device(&self) -> String;
    /// Whether [`zones`](Structure::zones) are estimated references (a frequency sketch),
    /// not hitmap zones.
    const ESTIMATES: bool = false;
    /// The items the cache holds now, for a structure whose memory of the past follows it (a
    /// frequency sketch halves its counters every ten references per item).
    fn set_items(&mut self, _items: usize) {}
}

/// A hitmap fed with reference pools, applied inline or by its own thread.
#[derive(Debug)]
pub struct Pooled<S: Structure> {
    shared: Arc<Shared<S>>,
    thread: Option<JoinHandle<()>>,
}

/// The hitmap in host memory.
pub type CpuHitmap = Pooled<Hitmap>;

#[derive(Debug)]
struct Shared<S> {
    hitmap: Mutex<S>,
    /// Hot keys, counted from the same pools (`hotkeys.rs`); locked after `hitmap`.
    hot: Mutex<TopK>,
    /// The origin of the hot-key windows' milliseconds.
    started: Instant,
    /// `None` inline: pools are applied by the submitting thread.
    queue: Option<Queue>,
    compacting: AtomicBool,
    applied: AtomicU64,
    dropped: AtomicU64,
    zones: Mutex<Vec<u64>>,
    shutdown: AtomicBool,
}

/// A queued reference pool: its digests and its name samples (`hotkeys::push_name`).
#[derive(Debug)]
struct Pool {
    digests: Vec<u32>,
    names: Vec<u8>,
}

#[derive(Debug)]
struct Queue {
    full: ArrayQueue<Pool>,
    free: ArrayQueue<Pool>,
    sleeping: AtomicBool,
    worker: Mutex<Option<std::thread::Thread>>,
}

impl<S: Structure> Pooled<S> {
    /// `structure`, applied by the submitting thread: deterministic.
    pub fn inline_with(structure: S) -> Pooled<S> {
        Pooled { shared: Arc::new(Shared::new(structure, None)), thread: None }
    }

    /// `structure`, applied by a metadata worker thread fed through a bounded lock-free queue.
    pub fn threaded_with(structure: S) -> std::io::Result<Pooled<S>> {
        let queue = Queue {
            full: ArrayQueue::new(QUEUED_POOLS),
            free: ArrayQueue::new(QUEUED_POOLS),
            sleeping: AtomicBool::new(false),
            worker: Mutex::new(None),
        };
        for _ in 0..QUEUED_POOLS {
            let _ = queue.free.push(Pool {
                digests: Vec::with_capacity(POOL_LEN),
                names: Vec::with_capacity(NAMES_PER_POOL),
            });
        }
        let shared = Arc::new(Shared::new(structure, Some(queue)));
        let bg = Arc::clone(&shared);
        let thread =
            std::thread::Builder::new().name("fridge-metadata".into()).spawn(move || bg.run())?;
        Ok(Pooled { shared, thread: Some(thread) })
    }

    /// Applies every queued pool now and waits for any the metadata worker has taken to be
    /// applied (tests): afterwards every submitted pool is applied or counted as dropped.
    pub fn drain(&self) {
        if let Some(q) = &self.shared.queue {
            // Every buffer is free, queued, or being applied by the worker.
            loop {
                self.shared.drain();
                if q.free.len() == QUEUED_POOLS {
                    break;
                }
                std::thread::yield_now();
            }
        }
        lock(&self.shared.hitmap).flush();
    }
}

impl CpuHitmap {
    /// A hitmap for about `items` items at `bits_per_item` bits each (levels and set counter
    /// together), applied by the submitting thread: deterministic. An error if the hitmap
    /// cannot be mapped.
    pub fn inline(items: usize, bits_per_item: usize) -> std::io::Result<CpuHitmap> {
        Ok(Pooled::inline_with(Hitmap::for_items(items, bits_per_item, DEFAULT_LEVELS)?))
    }

    /// The same, applied by a metadata worker thread fed through a bounded lock-free queue;
    /// an error if the hitmap cannot be mapped or the thread cannot start.
    pub fn threaded(items: usize, bits_per_item: usize) -> std::io::Result<CpuHitmap> {
        Pooled::threaded_with(Hitmap::for_items(items, bits_per_item, DEFAULT_LEVELS)?)
    }
}

/// No hitmap: the structure of a [`HotKeysOnly`] backend. Every digest's temperature is
/// unknown (zone 1); nothing is kept.
#[derive(Debug, Default)]
pub struct NoHitmap;

impl Structure for NoHitmap {
    fn append(&mut self, _digests: &[u32], _compacting: &AtomicBool) {}
    fn zones(&mut self, digests: &[u32], out: &mut Vec<Temperature>) {
        out.clear();
        out.resize(digests.len(), UNKNOWN);
    }
    fn shape(&mut self) -> (usize, usize, u64) {
        (0, 0, 0)
    }
    fn device(&self) -> String {
        String::new()
    }
}

/// Hot keys counted from the reference pools, without a hitmap: what the metadata worker does
/// where the eviction needs no temperatures (S3-FIFO's queues, whose read counts live in the
/// record headers). Applying a pool to the counters alone costs about an eighth of applying
/// it to the hitmap too (`docs/benchmarks.md`, "Hot-key counting").
pub type HotKeysOnly = Pooled<NoHitmap>;

impl<S: Structure> Drop for Pooled<S> {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S: Structure> Shared<S> {
    fn new(mut structure: S, queue: Option<Queue>) -> Shared<S> {
        let levels = structure.shape().1;
        Shared {
            zones: Mutex::new(vec![0; levels + 1]),
            hitmap: Mutex::new(structure),
            hot: Mutex::new(TopK::new(DEFAULT_WINDOW_MS)),
            started: Instant::now(),
            queue,
            compacting: AtomicBool::new(false),
            applied: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
        }
    }

    /// Applies (or stages) one pool, compacting when due — inline, where nothing else will
    /// flush it, applied at once — then counts its hot keys.
    fn apply(&self, digests: &[u32], names: &[u8]) {
        let mut hitmap = lock(&self.hitmap);
        hitmap.append(digests, &self.compacting);
        if self.queue.is_none() {
            hitmap.flush();
        }
        drop(hitmap);
        self.applied.fetch_add(digests.len() as u64, Ordering::Relaxed);
        lock(&self.hot).apply(digests, names, self.now_ms());
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Applies queued pools; returns whether there were any.
    fn drain(&self) -> bool {
        let mut worked = false;
        if let Some(q) = &self.queue {
            while let Some(mut pool) = q.full.pop() {
                self.apply(&pool.digests, &pool.names);
                pool.digests.clear();
                pool.names.clear();
                let _ = q.free.push(pool);
                worked = true;
            }
        }
        worked
    }

    /// The metadata worker's loop: it sleeps until a pool comes (no timeout, so an idle
    /// server's metadata worker never wakes).
    fn run(&self) {
        let Some(q) = &self.queue else { return };
        // Set before `sleeping` can be: a submitter that sees `sleeping` finds the thread.
        *lock(&q.worker) = Some(std::thread::current());
        while !self.shutdown.load(Ordering::Acquire) {
            if !self.drain() {
                lock(&self.hitmap).flush();
                q.sleeping.store(true, Ordering::SeqCst);
                // Pairs with the fence in `submit`: either this look sees the pool a
                // submitter queued, or that submitter sees `sleeping` and unparks (an unpark
                // before the park makes the park return at once).
                fence(Ordering::SeqCst);
                if q.full.is_empty() && !self.shutdown.load(Ordering::Acquire) {
                    std::thread::park();
                }
                q.sleeping.store(false, Ordering::SeqCst);
            }
        }
    }
}

impl<S: Structure> MetadataBackend for Pooled<S> {
    fn submit(&self, digests: &[u32], names: &[u8]) {
        let s = &self.shared;
        let Some(q) = &s.queue else {
            s.apply(digests, names);
            return;
        };
        let Some(mut pool) = q.free.pop() else {
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        pool.digests.clear();
        pool.digests.extend_from_slice(&digests[..digests.len().min(POOL_LEN)]);
        pool.names.clear();
        pool.names.extend_from_slice(&names[..names.len().min(NAMES_PER_POOL)]);
        if q.full.push(pool).is_err() {
            // Cannot happen (as many buffers as queue slots), but never block or grow.
            s.dropped.fetch_add(1, Ordering::Relaxed);
        }
        // Pairs with the fence in `run` (the pool is queued before `sleeping` is read).
        fence(Ordering::SeqCst);
        if q.sleeping.load(Ordering::SeqCst)
            && let Some(t) = lock(&q.worker).as_ref()
        {
            t.unpark();
        }
    }

    fn temperatures(&self, digests: &[u32], out: &mut Vec<Temperature>) {
        let s = &self.shared;
        out.clear();
        if s.compacting.load(Ordering::Acquire) {
            out.resize(digests.len(), UNKNOWN);
            return;
        }
        lock(&s.hitmap).zones(digests, out);
        let mut zones = lock(&s.zones);
        zones.iter_mut().for_each(|z| *z = 0);
        // Without a hitmap (no levels) every answer is "unknown" and nothing is counted.
        for t in out.iter() {
            if let Some(z) = zones.get_mut(usize::from(t.zone)) {
                *z += 1;
            }
        }
        drop(zones);
    }

    fn bytes(&self) -> usize {
        lock(&self.shared.hitmap).shape().0 + lock(&self.shared.hot).bytes()
    }

    fn estimates_frequencies(&self) -> bool {
        S::ESTIMATES
    }

    fn set_items(&self, items: usize) {
        lock(&self.shared.hitmap).set_items(items);
    }

    fn hot_keys(&self) -> Option<HotKeys> {
        let s = &self.shared;
        Some(lock(&s.hot).report(s.now_ms()))
    }

    fn reset_hot_keys(&self) {
        lock(&self.shared.hot).reset();
    }

    fn set_hot_window(&self, window_ms: u64) {
        lock(&self.shared.hot).set_window(window_ms);
    }

    fn hot_window(&self) -> Option<u64> {
        Some(lock(&self.shared.hot).window_ms())
    }

    fn stats(&self) -> MetadataStats {
        let s = &self.shared;
        // Sizes and counts only: the fill rates would scan the whole hitmap under its lock.
        let ((bytes, levels, compactions), device) = {
            let mut h = lock(&s.hitmap);
            (h.shape(), h.device())
        };
        MetadataStats {
            applied: s.applied.load(Ordering::Relaxed),
            pools_dropped: s.dropped.load(Ordering::Relaxed),
            compactions,
            bytes,
            levels,
            zones: lock(&s.zones).clone(),
            device,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{digest_of, key_hash};

    fn digest(i: u64, set: bool) -> u32 {
        digest_of(key_hash(crate::tenant::TenantId(0), &i.to_le_bytes())) & !1 | u32::from(set)
    }

    #[test]
    fn threaded_and_inline_backends_agree() {
        let inline = CpuHitmap::inline(10_000, 32).unwrap();
        let threaded = CpuHitmap::threaded(10_000, 32).unwrap();
        for round in 0..6u64 {
            let pool: Vec<u32> = (0..POOL_LEN as u64).map(|i| digest(i % 700, i < 10)).collect();
            inline.submit(&pool, &[]);
            threaded.submit(&pool, &[]);
            // Give the worker each pool before the next, so none is dropped.
            threaded.drain();
            let _ = round;
        }
        let probe: Vec<u32> = (0..1000).map(|i| digest(i, false)).collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        inline.temperatures(&probe, &mut a);
        threaded.temperatures(&probe, &mut b);
        assert_eq!(a, b);
        assert!(a[..700].iter().all(|t| t.zone >= 4), "accessed 8+ times");
        assert_eq!(threaded.stats().applied, 6 * POOL_LEN as u64);
        assert_eq!(threaded.stats().pools_dropped, 0);
    }

    #[test]
    fn without_a_hitmap_hot_keys_are_still_counted() {
        let hot = HotKeysOnly::threaded_with(NoHitmap).unwrap();
        let pool: Vec<u32> = (0..POOL_LEN as u64).map(|i| digest(i % 10, false)).collect();
        for _ in 0..3 {
            hot.submit(&pool, &[]);
            hot.drain();
        }
        let report = hot.hot_keys().unwrap();
        assert_eq!(report.references, 3 * POOL_LEN as u64, "every reference counted");
        // No hitmap: no bytes, no levels, every temperature unknown.
        let stats = hot.stats();
        assert_eq!((stats.bytes, stats.levels, stats.device.as_str()), (0, 0, ""));
        let mut out = Vec::new();
        hot.temperatures(&pool[..10], &mut out);
        assert_eq!(out, vec![UNKNOWN; 10]);
    }

    #[test]
    fn a_sleeping_worker_wakes_for_each_pool() {
        let threaded = CpuHitmap::threaded(10_000, 32).unwrap();
        let q = threaded.shared.queue.as_ref().unwrap();
        let pool = vec![digest(1, false); POOL_LEN];
        for round in 1..=50u64 {
            // Wait until the worker sleeps (it parks with no timeout), then submit once.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !q.sleeping.load(Ordering::SeqCst) {
                assert!(std::time::Instant::now() < deadline, "the worker never slept");
                std::thread::yield_now();
            }
            threaded.submit(&pool, &[]);
            // Only the worker applies it: no drain here.
            while threaded.stats().applied < round * POOL_LEN as u64 {
                assert!(std::time::Instant::now() < deadline, "round {round}: not woken");
                std::thread::yield_now();
            }
        }
    }

    #[test]
    fn a_full_queue_drops_pools_instead_of_blocking() {
        let threaded = CpuHitmap::threaded(1 << 20, 32).unwrap();
        // Hold the hitmap so the worker cannot apply anything.
        let held = lock(&threaded.shared.hitmap);
        let pool = vec![digest(1, false); POOL_LEN];
        for _ in 0..QUEUED_POOLS + 10 {
            threaded.submit(&pool, &[]);
        }
        drop(held);
        threaded.drain();
        let s = threaded.stats();
        assert!(s.pools_dropped >= 9, "dropped {}", s.pools_dropped);
        assert_eq!(
            s.applied + s.pools_dropped * POOL_LEN as u64,
            (QUEUED_POOLS as u64 + 10) * POOL_LEN as u64
        );
    }

    #[test]
    fn a_saturated_level_one_is_compacted_where_pools_are_applied() {
        // 1,000 items at 16 bits: level 1 has 1,024 bits; about 3,000 distinct keys fill it.
        let h = CpuHitmap::inline(1_000, 16).unwrap();
        let keys: Vec<u32> = (0..1_000).map(|i| digest(i, false)).collect();
        h.submit(&keys, &[]);
        assert_eq!(h.stats().compactions, 0, "{:?}", h.stats());
        let more: Vec<u32> = (1_000..5_000).map(|i| digest(i, false)).collect();
        for pool in more.chunks(POOL_LEN) {
            h.submit(pool, &[]);
        }
        assert!(h.stats().compactions >= 1, "{:?}", h.stats());
    }
}
