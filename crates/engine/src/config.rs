//! The engine's settings, [`EngineConfig`], and their checks.

use crate::arbiter::CreditPolicy;
use crate::error::ConfigError;
use crate::{index, item};

/// The smallest segment: a quarter of a page. Segments smaller than a page let a cache of a few
/// hundred KiB keep enough segments that its free and open ones weigh little (the simulator's
/// small caches, `docs/results.md`); their pages are never given back to the kernel one
/// segment at a time (`Arena::release`).
pub const MIN_SEGMENT_SIZE: usize = 1 << 10;

/// Segment sizes are multiples of this, a cache line, so that every segment starts on one.
/// They need not be powers of two: nothing finds a segment by shifting (an index slot names
/// the segment and the offset in it), and a size that is a whole number of items leaves no
/// room at the segment's end where all items have one size (the simulator's fixed-size
/// traces, `docs/design.md`).
pub const SEGMENT_GRID: usize = 64;

/// Where the cleaner runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanerMode {
    /// In the writer that needs a segment: deterministic (simulator, tests).
    Inline,
    /// In a background thread (the server).
    Background,
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Bytes of item memory (the arena).
    pub max_memory: usize,
    /// Segment size, a multiple of [`SEGMENT_GRID`] from 1 KiB ([`MIN_SEGMENT_SIZE`]) to
    /// 8 MiB; a multiple of a page (4 KiB) where segments are given back to the kernel
    /// (`memory_includes_index`).
    pub segment_size: usize,
    /// Largest item (key record + value) accepted.
    pub max_item_size: usize,
    /// Largest value accepted, however it is written (a store, an append that grows a value,
    /// any update); 0 = only `max_item_size` limits values. The server sets it to its item
    /// size limit (`-I`), so a value can never grow past what a SET may store.
    pub max_value_len: usize,
    /// Values at least this large go to large-value segments.
    pub large_value_threshold: usize,
    /// Values at most this large are placed right after their key record instead of at the
    /// segment's high end (0 keeps every value apart from keys).
    pub inline_value_max: usize,
    /// Whether stores and relocations copy value bytes (true). False only where nobody reads
    /// a value (the simulator, whose values are zero bytes): items are laid out and accounted
    /// for exactly as with copying, but a read returns the right length of whatever the
    /// segment held before (zeros in fresh memory). Copying 38 KiB mean values was 49% of the
    /// simulator's time on CloudPhysics, and first touches of the arena's pages 34% more.
    pub copy_values: bool,
    /// Inline or background cleaning.
    pub cleaner: CleanerMode,
    /// Segments per cleaning pass (`n`).
    pub cleaner_candidates: usize,
    /// Free segments below which the cleaner runs; 0 = max(1% of segments, 2 × workers_hint,
    /// 2 with S3-FIFO's queues or 3 with Memshare's pass).
    pub free_watermark: usize,
    /// Expected writer threads (sizes the default watermark).
    pub workers_hint: usize,
    /// Most worker handles alive at once.
    pub max_participants: usize,
    /// Initial index root buckets; 0 = one per 4 KiB of `max_memory`.
    pub index_buckets: usize,
    /// Seed for the cleaner's random choices.
    pub seed: u64,
    /// Eviction metadata bits per expected item (0 = none). With Memshare's pass, the
    /// hitmap's, all levels and the set counter together (without one every item looks cold
    /// and the ranks fall back to recency); with S3-FIFO's queues, the frequency sketch's
    /// (`src/sketch.rs`; without one only reads promote from the small queue).
    pub hitmap_bits_per_item: usize,
    /// Items the hitmap or the sketch is sized for; 0 = one per 64 bytes of `max_memory`.
    pub hitmap_items: usize,
    /// Count the index and the engine's other memory outside the arena (segment headers,
    /// eviction metadata) within `max_memory`: the arena lends them whole segments, so fewer
    /// items fit and resident memory stays within `max_memory`. Off: `max_memory` is the
    /// arena alone and the rest comes on top ([`crate::EngineStats::overhead_bytes`]).
    pub memory_includes_index: bool,
    /// How a pass that must evict chooses its segments and what it keeps.
    pub eviction: Eviction,
    /// Bytes of the search lookaside buffer's cache table in front of the index (SLB §3; 0 =
    /// none): rounded down to a power of two of 64-byte buckets, at most 4 MiB; its admission
    /// log takes four times as much. Counted in the index's bytes.
    pub slb_bytes: usize,
    /// Where the arbiter's credits may come from once its pool is all assigned (tenants).
    pub credit_policy: CreditPolicy,
    /// What a shadow-queue hit is worth (tenants): a credit each, or a credit weighed by the
    /// tenant's request rate.
    pub credit_weight: crate::CreditWeight,
    /// Bytes of evicted items each tenant's shadow queue remembers (Memshare §6.1: 10 MiB,
    /// the default). Each remembered item costs a ring entry and a hash-map entry (16 bytes
    /// each before the containers' slack), outside the arena.
    pub shadow_bytes: u64,
    /// Where the hitmap lives: host memory, a GPU, or a GPU where one is usable.
    pub metadata_device: MetadataDevice,
}

/// Where the hitmap lives (`--metadata cpu|gpu|auto`; `metadata/gpu.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataDevice {
    /// Host memory (the default).
    #[default]
    Cpu,
    /// GPU 0; the engine fails to start without a usable one.
    Gpu,
    /// GPU 0 where the driver, NVRTC and a GPU are present, else host memory (the reason is
    /// kept for the log: [`crate::Engine::metadata_note`]).
    Auto,
}

impl std::str::FromStr for MetadataDevice {
    type Err = String;
    fn from_str(s: &str) -> Result<MetadataDevice, String> {
        match s {
            "cpu" => Ok(MetadataDevice::Cpu),
            "gpu" => Ok(MetadataDevice::Gpu),
            "auto" => Ok(MetadataDevice::Auto),
            _ => Err(format!("metadata device must be cpu, gpu or auto, not '{s}'")),
        }
    }
}

/// How the cleaner evicts once memory is full of live data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Memshare's pass (§3.1): `cleaner_candidates` segments, half at random, half with the
    /// most dead bytes; the best-ranked survivors fill one segment fewer, the rest go.
    Memshare,
    /// S3-FIFO's queues made of segments (see [`Queues`]); the default.
    Queues(Queues),
}

/// S3-FIFO (Yang et al., SOSP '23) in the log: writers fill a small probationary queue of
/// segments; the cleaner fills the main queue with the items it keeps. A pass takes the two
/// oldest segments of the small queue while that holds more than `small_percent` of the
/// segments (else of the main queue), and copies into the main queue, read most and
/// best-ranked first, only the items read `promote_reads` times in the small queue or
/// `keep_reads` times since they last entered the main queue (a kept item spends one read):
/// one segment's worth, or more where the pass reads on into the queue's next oldest
/// segments, which it does while earlier evictions pay for the copies (at most one copy per
/// eviction over the run). The rest are evicted, those from the small queue into the ghost,
/// which sends their keys straight to the main queue when they are written again. Where the
/// engine keeps eviction metadata, a frequency sketch of the keys' references (TinyLFU)
/// promotes from the small queue the items whose estimate reaches `promote_estimate` too.
///
/// The small queue's share adapts between `small_min_percent` and `small_percent`, as ARC
/// adapts its recency target (Megiddo & Modha, FAST '03): a write of a key the small
/// queue's ghost remembers (evicted before the reads that promote) grows the share by the item's
/// bytes; one of a key evicted from the main queue — a second ghost of its evictions —
/// shrinks it by as much and goes straight to the main queue. Measured in `docs/design.md`
/// ("An adaptive small queue").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queues {
    /// The small queue's share of the segments, in percent (15; S3-FIFO: 10); with
    /// adaptation, its largest share and the one it starts at.
    pub small_percent: u8,
    /// The small queue's smallest share, in percent (1). Equal to `small_percent` (or
    /// more): a fixed share, and no ghost of main-queue evictions.
    pub small_min_percent: u8,
    /// Reads in the small queue that earn an item the main queue (1; S3-FIFO: 2; at most 3).
    pub promote_reads: u8,
    /// Reads since it entered the main queue that keep an item there (S3-FIFO: 1).
    pub keep_reads: u8,
    /// How many evicted keys each ghost remembers, in percent of the items in memory (40;
    /// S3-FIFO: as many as the main queue holds, about 90).
    pub ghost_percent: u16,
    /// A frequency sketch's estimate (TinyLFU, `src/sketch.rs`; 1–15) at which an item
    /// leaves the small queue for the main queue even without `promote_reads` reads there;
    /// 0: reads alone promote. The sketch exists where the engine keeps eviction metadata
    /// (`hitmap_bits_per_item` > 0, its size per item).
    pub promote_estimate: u8,
}

impl Queues {
    /// Whether the small queue's share adapts (a smallest share below the largest).
    pub fn adapts(&self) -> bool {
        self.small_min_percent < self.small_percent
    }
}

impl Default for Queues {
    fn default() -> Self {
        Queues {
            small_percent: 15,
            small_min_percent: 1,
            promote_reads: 1,
            keep_reads: 1,
            ghost_percent: 40,
            promote_estimate: 3,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_memory: 1 << 30,
            segment_size: 1 << 20,
            max_item_size: 1 << 20,
            max_value_len: 0,
            large_value_threshold: 256 << 10,
            inline_value_max: 64,
            copy_values: true,
            cleaner: CleanerMode::Background,
            cleaner_candidates: 40,
            free_watermark: 0,
            workers_hint: 2,
            max_participants: 256,
            index_buckets: 0,
            seed: 0x5eed,
            hitmap_bits_per_item: 32,
            hitmap_items: 0,
            memory_includes_index: false,
            eviction: Eviction::Queues(Queues::default()),
            slb_bytes: 0,
            credit_policy: CreditPolicy::default(),
            credit_weight: crate::CreditWeight::default(),
            shadow_bytes: crate::arbiter::SHADOW_BYTES,
            metadata_device: MetadataDevice::default(),
        }
    }
}

impl EngineConfig {
    /// Items the hitmap is sized for.
    pub fn hitmap_capacity(&self) -> usize {
        if self.hitmap_items > 0 { self.hitmap_items } else { (self.max_memory / 64).max(1) }
    }

    /// Whether S3-FIFO's frequency sketch and ghosts start small and grow with the items
    /// held, up to their sizes for [`hitmap_capacity`](EngineConfig::hitmap_capacity) items
    /// (`sketch::Sketch::growing`, `ghost::Ghost::growing`): where `hitmap_items` is left to
    /// its default of one item per 64 bytes, which a cache of larger items never holds, and
    /// the memory outside the arena is not counted in `max_memory` (with
    /// `memory_includes_index` it is set aside at the start, so they keep their sizes).
    pub fn metadata_grows(&self) -> bool {
        self.hitmap_items == 0 && !self.memory_includes_index
    }

    /// Checks the settings, explaining the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let seg = self.segment_size;
        if seg % SEGMENT_GRID != 0 || !(MIN_SEGMENT_SIZE..=item::MAX_SEGMENT_SIZE).contains(&seg) {
            return Err(ConfigError(format!(
                "segment_size must be a multiple of {SEGMENT_GRID} from 1 KiB to 8 MiB, not {seg}"
            )));
        }
        if self.memory_includes_index && seg % crate::arena::PAGE != 0 {
            return Err(ConfigError(format!(
                "memory_includes_index needs segments of whole pages (multiples of 4 KiB), not \
                 {seg}: segments lent to the index give their pages back"
            )));
        }
        let segments = self.max_memory / seg;
        let needed = 4 * self.workers_hint.max(1) + 8;
        if segments < needed {
            return Err(ConfigError(format!(
                "max_memory {} holds {segments} segments of {seg} bytes; at least {needed} are \
                 needed for {} workers",
                self.max_memory, self.workers_hint
            )));
        }
        if segments > index::MAX_SEGMENTS {
            return Err(ConfigError(format!("too many segments ({segments}): raise segment_size")));
        }
        if self.max_item_size > seg {
            return Err(ConfigError(format!(
                "max_item_size {} exceeds segment_size {seg}",
                self.max_item_size
            )));
        }
        if self.cleaner_candidates == 0 {
            return Err(ConfigError("cleaner_candidates must be at least 1".into()));
        }
        if self.slb_bytes != 0 && !(64..=index::SLB_MAX_BYTES).contains(&self.slb_bytes) {
            return Err(ConfigError(format!(
                "slb_bytes must be 0 or from 64 to {}, not {}",
                index::SLB_MAX_BYTES,
                self.slb_bytes
            )));
        }
        Ok(())
    }
}
