//! The real engine as a simulated cache: a [`FridgeCache`] owns one [`Engine`] with the
//! inline cleaner and a [`ManualClock`], and serves trace requests the way a lookaside
//! client of the server would.
//!
//! ```text
//!  Request ──► clock.set(time) ──► get(tenant, key) ── hit ──► HIT
//!                                        └── miss ──► store(key, zero value) ──► MISS
//! ```
//!
//! # What a cached object costs in the engine
//! The key is the request's id as 8 little-endian bytes (unique per id; the trace's key
//! length is not reproduced), and the value is `object_size − 8` zero bytes (at least 0), so
//! an item holds `max(object_size, 8)` bytes of key and value plus the engine's 21-byte key
//! record header ([`RECORD_HEADER`]; 4 bytes more for an item with a TTL), all inside
//! `max_memory`. Values are laid out but not
//! copied (`EngineConfig::copy_values` is off: nobody reads them), so the simulator's speed
//! does not depend on the objects' sizes. The index (tagged 64-byte buckets, outside the
//! arena) is reported separately as [`EngineStats::overhead_bytes`]. Reference policies, by
//! contrast, count object bytes only; a row of a report always says which meaning applies.
//!
//! # Eviction metadata and rank
//! Every access (a GET, and the store after a miss) logs the key's digest in the worker's
//! reference pool; a full pool (1024 digests) is applied to the engine's CPU hitmap at once,
//! in the same thread ([`CleanerMode::Inline`] gives the inline metadata backend). The cleaner
//! ranks survivors with the tenant's [`RankKind`], which the simulator sets for every tenant
//! of the input ([`FridgeOptions::tenants`]; with more than one the arbiter runs):
//! `fridge` is the engine's default `hitmap` rank, `fridge-lru`, `fridge-lfu` and
//! `fridge-slru` the others ([`FridgeOptions::rank`]).
//!
//! The hitmap's size is `hitmap_bits_per_item × hitmap_items` bits (levels and set counter
//! together; the engine rounds level 1 up to a power of two, so the real footprint is up to
//! twice that). The engine's own default for `hitmap_items` (one item per 64 bytes of
//! `max_memory`) suits small items only, so the simulator estimates the number of items the
//! cache can hold from the input ([`hitmap_items`]):
//!
//! ```text
//! hitmap_items = max_memory / (max(mean object size, 8) + 21)
//! ```
//!
//! where the mean object size is the working set's bytes over its distinct objects (the
//! profile pass), 8 the key bytes every item carries at least and 21 the record header: the
//! item count a cache full of average objects holds. `hitmap_bits_per_item = 0` runs without
//! metadata (every item cold, no zombies: all ranks become recency).
//!
//! # Determinism
//! The cleaner and the hitmap run inline in the writer that needs them, and time comes only
//! from the trace, so the same trace, seed and settings give the same hits, bit for bit.
//!
//! # Segment size
//! `max_memory / segment_size` must be at least 12 segments with one writer
//! ([`EngineConfig::validate`]). [`auto_segment_size`] starts from the largest power of two
//! that leaves the target number of segments (`--target-segments`, default 64; between 1 KiB,
//! the engine's smallest, and 1 MiB); then raises it towards 64 items of the mean size
//! (64–128 after rounding) wherever a larger segment loses less memory in a simple model:
//! about three segments whatever the size are never items (the free reserve, the open heads'
//! room: `bench/capacity`), and each segment's end keeps the room an item did not fit in —
//! exactly the remainder where all objects have one size, half a mean item otherwise. So a
//! cache of gigabytes keeps many segments of many items, as a server's does, and a small one
//! trades the fixed segments against the ends: 102 segments of 1 KiB for orm-busy's 691
//! items of 137 B at 1% (26 of 4 KiB when 4 KiB was the engine's smallest: 8% of memory free
//! and 4% in open heads), but 4 KiB for Zipf's 293-byte items at 0.1% (2 KiB segments hold
//! six and leave 14% at their ends). With 64-item segments, caches of 1–5% of Zipf 0.99 and
//! scarab kept 106–266 segments, 3–5% of them free and 1.5–3% in open heads, and held 2–5%
//! fewer items than S3-FIFO at equal item counts (`docs/design.md`). Then, while 16 segments
//! (or an eighth of the target, if more) still fit, the segment grows until the largest item
//! of the trace fits in it. With 512 segments, a floor of 16 left 20–30 segments to small
//! caches of Facebook ETC (whose largest values are hundreds of KiB), a quarter of them free
//! or open heads; a floor of 64 refuses 7–62 of its 1M objects at 1–10% of the working set
//! (11,032 at 0.1%) and gave 0.5–1.7 points fewer misses at 0.1–10% (1.1–1.7 up to 5%).
//! Last, where every object has one size (the key-only traces' size models, the synthetic
//! streams but Facebook ETC), the segment need not be a power of two: of the sizes on the
//! engine's 64-byte grid within a factor of two of the power of two, the one the model says
//! loses least, which holds a whole number of items or nearly (54 segments of 1,920 bytes, 14
//! items each, for orm-busy at 1%, where the 102 of 1 KiB left 6.3% of memory at their ends;
//! 72 of 2,368 bytes for Zipf at 0.1%).
//! Items larger than a segment are refused ([`EngineError::TooLarge`]): a miss that is never
//! admitted, as reference policies do for objects larger than the whole cache.

use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, EngineError, EngineStats, Eviction, Expiry, LookupLines,
    ManualClock, MetadataDevice, RankKind, Store, TenantId, TenantPolicy, Worker,
};
use fridge_workload::Request;

/// Bytes of the engine's key record header per item that never expires
/// (`fridge_engine::item::HEADER_LEN`; one with a TTL stores 4 bytes more).
pub const RECORD_HEADER: u64 = fridge_engine::item::HEADER_LEN as u64;
/// Bytes of key each item carries: the id, little-endian.
pub const KEY_LEN: usize = 8;
/// Segments [`auto_segment_size`] aims for by default (`--target-segments`). The eviction
/// study uses 512, so that the queues, the open heads and the free reserve are each a small
/// share of memory, as in a server's cache of gigabytes.
pub const DEFAULT_TARGET_SEGMENTS: u64 = 64;
/// Segments a cache keeps from items whatever the segment size, in [`auto_segment_size`]'s
/// model: the free reserve (2 with one writer) and the open heads' unused room (about one
/// segment), as `bench/capacity` measured them in small caches.
const FIXED_SEGMENTS: u64 = 3;
/// The most mean items [`auto_segment_size`] grows a segment towards (64–128 after rounding up
/// to a power of two), where its model of lost memory says a larger one loses less. Towards
/// 16 lost 3% of memory at the ends of 4 KiB segments of 137-byte items (16 B + 100 B objects
/// and the 21-byte header) in caches of 0.3–3.6 MB (web07-100 and scarab-100); 64 moved the eviction study's mean gap to
/// S3-FIFO by −0.013 (equal item counts) and −0.012 points (equal bytes).
const MEAN_ITEMS_PER_SEGMENT: u64 = 64;
/// Fewest segments [`auto_segment_size`] accepts when growing segments, to hold the mean items
/// or to fit large items (for the latter, this or an eighth of the target, whichever is more).
const MIN_SEGMENTS: u64 = 16;
const MIN_SEGMENT: u64 = fridge_engine::MIN_SEGMENT_SIZE as u64;
const MAX_AUTO_SEGMENT: u64 = 1 << 20;
/// The engine's segment sizes are multiples of this ([`EngineConfig::validate`]).
const GRID: u64 = fridge_engine::SEGMENT_GRID as u64;

/// The segment size used for a cache of `max_memory` bytes whose objects (key + value) are
/// `mean_object` bytes on average and at most `max_object`, aiming for `target` segments.
/// See the module docs for the rule.
pub fn auto_segment_size(max_memory: u64, mean_object: u64, max_object: u64, target: u64) -> usize {
    let prev_pow2 = |x: u64| if x == 0 { 1 } else { 1u64 << (63 - x.leading_zeros()) };
    let mut seg = prev_pow2(max_memory / target.max(1)).clamp(MIN_SEGMENT, MAX_AUTO_SEGMENT);
    let item = |object: u64| object.max(KEY_LEN as u64) + RECORD_HEADER;
    let mean = item(mean_object);
    // The share of memory a segment size loses to the fixed segments and to the room left at
    // each segment's end: exactly the remainder when every object has the same size, half a
    // mean item otherwise.
    let lost = |seg: u64| {
        let end = if mean_object == max_object { (seg % mean) as f64 } else { mean as f64 / 2.0 };
        (FIXED_SEGMENTS * seg) as f64 / max_memory as f64 + end / seg as f64
    };
    let wanted = (mean * MEAN_ITEMS_PER_SEGMENT).min(MAX_AUTO_SEGMENT);
    let mut candidate = seg;
    while candidate < wanted && max_memory / (candidate * 2) >= MIN_SEGMENTS {
        candidate *= 2;
        if lost(candidate) < lost(seg) {
            seg = candidate;
        }
    }
    let fewest = MIN_SEGMENTS.max(target / 8);
    while seg < item(max_object)
        && seg < fridge_engine::item::MAX_SEGMENT_SIZE as u64
        && max_memory / (seg * 2) >= fewest
    {
        seg *= 2;
    }
    // Where every object has one size, a segment need not be a power of two: the size on the
    // engine's 64-byte grid, within a factor of two of the one chosen, that loses least in the
    // model above holds a whole number of items, or nearly (orm-busy's 137-byte items at 1%:
    // 1,920-byte segments of 14 items instead of 1 KiB ones of 7 that leave 6% of memory at
    // their ends).
    if mean_object == max_object {
        let mut candidate =
            ((seg / 2).max(MIN_SEGMENT).max(item(max_object))).div_ceil(GRID) * GRID;
        let mut best = seg;
        while candidate <= 2 * seg && max_memory / candidate >= MIN_SEGMENTS {
            if lost(candidate) < lost(best) {
                best = candidate;
            }
            candidate += GRID;
        }
        seg = best;
    }
    seg as usize
}

/// Items a cache of `max_memory` bytes holds when full of objects of `mean_object_size`
/// bytes (key + value): `max_memory / (max(mean_object_size, 8) + 21)` (21: the record
/// header, [`RECORD_HEADER`]), at least 1. The simulator sizes the hitmap for this many items
/// (see the module docs).
pub fn hitmap_items(max_memory: u64, mean_object_size: u64) -> usize {
    let item = mean_object_size.max(KEY_LEN as u64) + RECORD_HEADER;
    usize::try_from(max_memory / item).unwrap_or(usize::MAX).max(1)
}

/// Engine settings for one simulated cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FridgeOptions {
    /// Arena bytes (`max_memory`).
    pub max_memory: u64,
    /// Segment size in bytes.
    pub segment_size: usize,
    /// Seed of the cleaner's random choices.
    pub seed: u64,
    /// The rank function of every tenant.
    pub rank: RankKind,
    /// Tenants in the input (ids `0..tenants`). With more than one, the engine's arbiter runs
    /// (shadow queues, need-ordered cleaning), as in a server with tenants configured; with
    /// one it does not, as in a server with only the default tenant.
    pub tenants: usize,
    /// Hitmap bits per item (0: no eviction metadata).
    pub hitmap_bits_per_item: usize,
    /// Items the hitmap is sized for (0: the engine's default, one per 64 bytes).
    pub hitmap_items: usize,
    /// Segments per evicting cleaner pass (the engine's `cleaner_candidates`).
    pub cleaner_candidates: usize,
    /// Free segments below which the cleaner runs (0: the engine's default rule).
    pub free_watermark: usize,
    /// How the engine evicts.
    pub eviction: Eviction,
    /// Bytes of the SLB's cache table in front of the index (0: none; the engine's
    /// `slb_bytes`).
    pub slb_bytes: usize,
    /// Where the hitmap lives (`--metadata`): a GPU's hitmap gives the same results as the
    /// CPU's, pool for pool (`metadata/gpu.rs` in the engine).
    pub metadata_device: MetadataDevice,
}

impl FridgeOptions {
    /// `max_memory` bytes in segments of `segment_size`, seed 1, the engine's default rank and
    /// hitmap budget, the hitmap sized by the engine's default rule.
    pub fn new(max_memory: u64, segment_size: usize) -> FridgeOptions {
        let defaults = EngineConfig::default();
        FridgeOptions {
            max_memory,
            segment_size,
            seed: 1,
            rank: RankKind::default(),
            tenants: 1,
            hitmap_bits_per_item: defaults.hitmap_bits_per_item,
            hitmap_items: 0,
            cleaner_candidates: defaults.cleaner_candidates,
            free_watermark: defaults.free_watermark,
            eviction: defaults.eviction,
            slb_bytes: 0,
            metadata_device: MetadataDevice::Cpu,
        }
    }
}

/// One engine behind the simulator's request interface.
#[derive(Debug)]
pub struct FridgeCache {
    engine: Engine,
    worker: Worker,
    clock: ManualClock,
    now_ms: u64,
    /// Zero bytes that every stored value is sliced from; grows to the largest value.
    zeros: Vec<u8>,
    refused: u64,
    store_errors: u64,
}

impl FridgeCache {
    /// Builds an engine of `options.max_memory` bytes with one worker, the inline cleaner and
    /// a manual clock at time 0.
    ///
    /// # Errors
    /// The engine's explanation when the settings are invalid (e.g. too few segments).
    pub fn new(options: FridgeOptions) -> Result<Self, String> {
        let max_memory = usize::try_from(options.max_memory)
            .map_err(|_| format!("max_memory {} too large", options.max_memory))?;
        let config = EngineConfig {
            max_memory,
            segment_size: options.segment_size,
            max_item_size: options.segment_size,
            cleaner: CleanerMode::Inline,
            // The simulator has exactly one writer; this sizes the free-segment watermark.
            workers_hint: 1,
            max_participants: 4,
            seed: options.seed,
            hitmap_bits_per_item: options.hitmap_bits_per_item,
            // Always given, so the queues' sketch has its size from the start (the server's,
            // sized by default for one item per 64 bytes, grows with the items held): the
            // simulator's tables stay those of a sketch of one size.
            hitmap_items: if options.hitmap_items > 0 {
                options.hitmap_items
            } else {
                (max_memory / 64).max(1)
            },
            cleaner_candidates: options.cleaner_candidates,
            free_watermark: options.free_watermark,
            eviction: options.eviction,
            // Nobody reads the simulator's values: lay them out, do not copy them.
            copy_values: false,
            slb_bytes: options.slb_bytes,
            metadata_device: options.metadata_device,
            ..EngineConfig::default()
        };
        let clock = ManualClock::new(0);
        let engine = Engine::with_clock(config, Arc::new(clock.clone())).map_err(|e| e.0)?;
        for t in 0..options.tenants.clamp(1, fridge_engine::item::MAX_TENANTS) {
            let tenant = TenantId(t as u16);
            let policy = TenantPolicy { rank: options.rank, ..engine.tenant_policy(tenant) };
            engine.set_tenant_policy(tenant, policy);
        }
        let worker = engine.worker().map_err(|e| e.to_string())?;
        Ok(Self {
            engine,
            worker,
            clock,
            now_ms: 0,
            zeros: Vec::new(),
            refused: 0,
            store_errors: 0,
        })
    }

    fn tick(&mut self, time_ms: u64) {
        if time_ms != self.now_ms {
            self.now_ms = time_ms;
            self.clock.set(time_ms);
        }
    }

    /// A lookaside GET: a hit returns `true`; a miss stores the object and returns `false`.
    pub fn get(&mut self, r: &Request) -> bool {
        self.tick(r.time_ms);
        let key = r.key.to_le_bytes();
        let tenant = TenantId(r.tenant);
        if self.worker.get(tenant, &key, |_| ()).is_some() {
            return true;
        }
        self.store(r, Expiry::Never);
        false
    }

    /// Where a GET of `r`'s key would read, without reading it (no access counted, no
    /// recency touched): `out` gets the index buckets, the key records compared and the value
    /// (`fridge_engine::Worker::lookup_lines`). Returns whether the key has a live item.
    pub fn lookup_lines(&mut self, r: &Request, out: &mut LookupLines) -> bool {
        self.tick(r.time_ms);
        self.worker.lookup_lines(TenantId(r.tenant), &r.key.to_le_bytes(), out)
    }

    /// [`FridgeCache::get`], reading one byte of each 64 of a hit's value (as a server
    /// copying the value out would touch every line of it); returns the hit and the bytes'
    /// sum, for a caller to keep. For runs under cachegrind (`fridge-memsim --engine-only`).
    pub fn get_reading(&mut self, r: &Request) -> (bool, u64) {
        self.tick(r.time_ms);
        let key = r.key.to_le_bytes();
        let tenant = TenantId(r.tenant);
        let read = |item: fridge_engine::Item<'_>| {
            item.value.iter().step_by(64).map(|&b| u64::from(b)).sum::<u64>()
        };
        if let Some(sum) = self.worker.get(tenant, &key, read) {
            return (true, sum);
        }
        self.store(r, Expiry::Never);
        (false, 0)
    }

    /// A SET-like request: stores the object, with the request's TTL if it has one.
    pub fn set(&mut self, r: &Request) {
        self.tick(r.time_ms);
        let expiry = match r.ttl_s {
            Some(ttl) => Expiry::At(r.time_ms + u64::from(ttl) * 1000),
            None => Expiry::Never,
        };
        self.store(r, expiry);
    }

    /// A DELETE.
    pub fn delete(&mut self, r: &Request) {
        self.tick(r.time_ms);
        self.worker.delete(TenantId(r.tenant), &r.key.to_le_bytes());
    }

    fn store(&mut self, r: &Request, expiry: Expiry) {
        let value_len =
            usize::try_from(r.object_size()).unwrap_or(usize::MAX).saturating_sub(KEY_LEN);
        if value_len > self.zeros.len() {
            if value_len > self.engine.config().max_item_size {
                self.refused += 1;
                return;
            }
            self.zeros.resize(value_len, 0);
        }
        let key = r.key.to_le_bytes();
        let store =
            Store { expiry, ..Store::new(TenantId(r.tenant), &key, &self.zeros[..value_len]) };
        match self.worker.store(store) {
            Ok(_) => {}
            Err(EngineError::TooLarge) => self.refused += 1,
            Err(_) => self.store_errors += 1,
        }
    }

    /// The engine's statistics now, after handing the worker's partly filled reference pool
    /// to the hitmap (so `metadata.applied` counts every access made so far).
    pub fn stats(&mut self) -> EngineStats {
        self.worker.flush_reference_pool();
        self.engine.stats()
    }

    /// Where the arena's segments are and how full (free, open heads, each queue).
    pub fn segment_usage(&self) -> fridge_engine::SegmentUsage {
        self.engine.segment_usage()
    }

    /// Objects refused because their item exceeds a segment (misses never admitted).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Stores that failed for another reason (e.g. `OutOfMemory`); 0 in a healthy run.
    pub fn store_errors(&self) -> u64 {
        self.store_errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_segment_size_follows_the_rule() {
        let auto = |memory, mean, max| auto_segment_size(memory, mean, max, 512);
        // 512 segments when that is within [1 KiB, 1 MiB] and 64 mean items fit.
        assert_eq!(auto(512 << 20, 100, 1000), 1 << 20);
        assert_eq!(auto(64 << 20, 100, 1000), 128 << 10);
        // (Objects of 1,004 and 301 bytes below: items of 1,025 and 322 bytes with the 21-byte
        // header; among many sizes up to 2,000 or 5,000 bytes, each segment's end loses half a
        // mean item.)
        // Raised towards 64 mean items (64 x 1,025 B: the next power of two, 128 KiB) while
        // that loses less: not past it, and not where the ends gain less than the fixed
        // segments cost (of 8 MiB, 32 KiB segments lose 1.6% at their ends and 1.2% fixed,
        // 64 KiB ones 0.8% and 2.3%; of 1 MiB, 16 KiB ones 3.1% and 4.7%, 8 KiB 6.3% and
        // 2.3%).
        assert_eq!(auto(64 << 20, 1004, 2000), 128 << 10);
        assert_eq!(auto(8 << 20, 1004, 2000), 32 << 10);
        assert_eq!(auto(1 << 20, 1004, 2000), 16 << 10);
        assert_eq!(auto(200 << 10, 301, 5000), 4 << 10);
        // Raised to fit a 68 KiB item while 64 segments (an eighth of the target) remain.
        assert_eq!(auto(16 << 20, 100, 69_632), 128 << 10);
        // Not raised past 64 segments: such items are refused.
        assert_eq!(auto(4 << 20, 100, 69_632), 64 << 10);
        // The default, 64 segments: the mean item never raises it.
        let default = |memory, mean, max| auto_segment_size(memory, mean, max, 64);
        assert_eq!(default(64 << 20, 1004, 2000), 1 << 20);
        assert_eq!(default(8 << 20, 1004, 2000), 128 << 10);
        // Raised to fit a 68 KiB item while 16 segments remain; not past that.
        assert_eq!(default(4 << 20, 100, 69_632), 128 << 10);
        assert_eq!(default(1 << 20, 100, 69_632), 64 << 10);
    }

    #[test]
    fn with_one_object_size_segments_hold_whole_items() {
        let auto = |memory, mean| auto_segment_size(memory, mean, mean, 512);
        // Where the power-of-two rule gives 128 KiB, 64 KiB and 16 KiB, segments of exactly 64,
        // 32 and 8 items of 1,025 B (on the 64-byte grid: 32,800 B and 8,200 B round up to
        // 32,832 and 8,256): no end lost, and the fixed segments are smaller.
        assert_eq!(auto(64 << 20, 1004), 64 * 1025);
        assert_eq!(auto(8 << 20, 1004), 32_832);
        assert_eq!(auto(1 << 20, 1004), 8_256);
        // orm-busy's 137-byte items at 1% (690 of them): 14 in 1,920 B (2 B left), where 1 KiB
        // segments held 7 and left 65 B (6.3%).
        assert_eq!(auto(690 * 137, 116), 1920);
        // 8 items of 1,021 B fill 8 KiB but for 24 B: a power of two can be the best fit.
        assert_eq!(auto(8 << 20, 1000), 8 << 10);
        // 8 items of 125 B leave 24 B of 1 KiB (2.3%); no size up to 2 KiB loses less with
        // its fixed segments counted.
        assert_eq!(auto(100 << 10, 104), 1 << 10);
        // 6 items of 322 B in 1,984 B (52 B left, 2.6%, and 1.4% more of memory in the fixed
        // segments than with 1 KiB, whose 3 items leave 5.7%).
        assert_eq!(auto(200 << 10, 301), 1984);
        // Every size is a multiple of the engine's grid.
        for memory in [50 << 10, 300 << 10, 3 << 20, 40 << 20] {
            for mean in [10, 116, 137, 272, 1016] {
                assert_eq!(auto(memory, mean) as u64 % GRID, 0, "{memory} {mean}");
            }
        }
    }

    fn get(key: u64, size: u32) -> Request {
        Request::get(key, size)
    }

    #[test]
    fn hits_after_a_miss_and_refuses_items_larger_than_a_segment() {
        let options = FridgeOptions::new(1 << 20, 16 << 10);
        let mut c = FridgeCache::new(options).unwrap();
        assert!(!c.get(&get(1, 100)));
        assert!(c.get(&get(1, 100)));
        assert!(!c.get(&get(2, 20_000)));
        assert!(!c.get(&get(2, 20_000)));
        assert_eq!(c.refused(), 2);
        c.delete(&get(1, 100));
        assert!(!c.get(&get(1, 100)));
        assert_eq!(c.store_errors(), 0);
    }

    #[test]
    fn ttls_expire_on_the_trace_clock() {
        let options = FridgeOptions::new(1 << 20, 16 << 10);
        let mut c = FridgeCache::new(options).unwrap();
        let set = Request { op: fridge_workload::Op::Set, ttl_s: Some(10), ..get(7, 50) };
        c.set(&set);
        // The engine's rule is Redis's: gone once the time is past the deadline.
        assert!(c.get(&Request { time_ms: 10_000, ..get(7, 50) }));
        assert!(!c.get(&Request { time_ms: 10_001, ..get(7, 50) }));
    }

    #[test]
    fn too_few_segments_is_an_error() {
        let options = FridgeOptions::new(32 << 10, 4 << 10);
        assert!(FridgeCache::new(options).is_err());
    }

    #[test]
    fn hitmap_items_counts_average_items_with_their_headers() {
        // 272-byte objects cost 272 + the record header each.
        let cost = 272 + RECORD_HEADER;
        assert_eq!(hitmap_items(cost * 1000, 272), 1000);
        // Objects under 8 bytes still carry an 8-byte key.
        assert_eq!(hitmap_items((8 + RECORD_HEADER) * 100, 1), 100);
        assert_eq!(hitmap_items(10, 1000), 1);
    }

    #[test]
    fn the_rank_and_hitmap_budget_reach_the_engine() {
        let options = FridgeOptions {
            rank: RankKind::Slru,
            hitmap_bits_per_item: 16,
            hitmap_items: 1 << 14,
            tenants: 3,
            ..FridgeOptions::new(1 << 20, 16 << 10)
        };
        let mut c = FridgeCache::new(options).unwrap();
        assert_eq!(c.engine.tenant_policy(TenantId(0)).rank, RankKind::Slru);
        assert_eq!(c.engine.tenant_policy(TenantId(2)).rank, RankKind::Slru);
        assert_ne!(c.engine.tenant_policy(TenantId(3)).rank, RankKind::Slru, "not in the input");
        for key in 0..3000 {
            c.get(&get(key % 500, 100));
        }
        let m = c.stats().metadata;
        // 16 bits × 16384 items: level 1 gets 2^14 bits, all levels and the set counter
        // 16 times that.
        assert_eq!(m.bytes, 32 << 10);
        // Every hit logs a digest, and so does each miss's store: 2500 + 500, the last
        // partial pool included.
        assert_eq!(m.applied, 3000);
        let none = FridgeOptions { hitmap_bits_per_item: 0, ..options };
        let mut c = FridgeCache::new(none).unwrap();
        c.get(&get(1, 100));
        assert_eq!(c.stats().metadata.bytes, 0);
    }
}
