//! fridge-engine: the storage engine of the fridge cache server.
//!
//! It holds items in a log-structured arena of fixed segments (Memshare), finds them through
//! an index of 64-byte tagged buckets (Cavast), keeps keys apart from values inside segments
//! (Cavast), and makes room with a cleaner that relocates the best items of a few segments and
//! evicts the rest (Memshare). Every operation names a tenant.
//!
//! ```text
//!  Worker (one per thread) ── get ──► index (64-B buckets) ──► key record ──► value
//!     │ set: append to own head segment, then lock bucket, publish slot
//!     ▼
//!  segments: free ─► head ─► sealed ─► cleaner (n → n−1) ─► retired ─(epoch)─► free
//! ```
//!
//! Goals: lock-free reads; writes that lock one bucket only to publish; no allocation per
//! request; at most 20 bytes of metadata per small item; deterministic behaviour when the
//! cleaner runs inline on a virtual clock.
//!
//! Non-goals: sockets, protocols, persistence. The engine never reads the system clock: it is
//! given a [`Clock`].
//!
//! Memory: item memory is exactly the arena, `max_memory` bytes (rounded down to whole
//! segments), mapped once and touched lazily. Outside it: the index tables (64 bytes per root
//! bucket plus a pool a quarter that size; they grow by doubling), one 64-byte header per
//! segment, the hitmap, and a few fixed structures; [`EngineStats::overhead_bytes`] reports
//! them. With [`EngineConfig::memory_includes_index`] the arena lends segments to all of that
//! instead, so the whole stays within `max_memory` (`budget.rs`).
//!
//! `unsafe` lives in [`arena`] (the mapping), [`item`] (reading and writing records),
//! [`index`] (zeroed tables, table pointers under epochs) and the two places that write
//! items into owned segments; each block names its invariant.
//!
//! Errors: operations return the small `Copy` enum [`EngineError`]; construction returns a
//! [`ConfigError`] with a message.

mod arbiter;
pub mod arena;
mod budget;
mod cleaner;
pub mod clock;
mod engine;
pub mod epoch;
mod expiry;
pub mod hash;
pub mod hitmap;
pub mod index;
pub mod item;
pub mod metadata;
pub mod rank;
pub mod segment;
pub mod stats;
pub mod tenant;

pub use clock::{Clock, CoarseClock, ManualClock, SystemClock};
pub use engine::{
    BATCH, Condition, Current, Engine, Expiry, Item, Store, StoreOutcome, Update, Worker,
};
pub use metadata::{CpuHitmap, MetadataBackend, MetadataStats, NoMetadata, Temperature};
pub use rank::{Rank, RankInput, RankKind, Recency};
pub use stats::EngineStats;
pub use tenant::{IdleTax, TenantPolicy, TenantStats};

/// A tenant: an application sharing the cache. Tenant 0 is the default tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TenantId(pub u8);

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
    /// Segment size, a power of two between 4 KiB and 8 MiB.
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
    /// Inline or background cleaning.
    pub cleaner: CleanerMode,
    /// Segments per cleaning pass (`n`).
    pub cleaner_candidates: usize,
    /// Free segments below which the cleaner runs; 0 = max(1% of segments, 2 × workers_hint,
    /// 3).
    pub free_watermark: usize,
    /// Expected writer threads (sizes the default watermark).
    pub workers_hint: usize,
    /// Most worker handles alive at once.
    pub max_participants: usize,
    /// Initial index root buckets; 0 = one per 4 KiB of `max_memory`.
    pub index_buckets: usize,
    /// Seed for the cleaner's random choices.
    pub seed: u64,
    /// Hitmap bits per expected item, all levels and the set counter together (0 = no
    /// eviction metadata: every item looks cold, ranks fall back to recency).
    pub hitmap_bits_per_item: usize,
    /// Items the hitmap is sized for; 0 = one per 64 bytes of `max_memory`.
    pub hitmap_items: usize,
    /// Count the index and the engine's other memory outside the arena (segment headers,
    /// eviction metadata) within `max_memory`: the arena lends them whole segments, so fewer
    /// items fit and resident memory stays within `max_memory`. Off: `max_memory` is the
    /// arena alone and the rest comes on top ([`EngineStats::overhead_bytes`]).
    pub memory_includes_index: bool,
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
        }
    }
}

impl EngineConfig {
    /// Items the hitmap is sized for.
    pub fn hitmap_capacity(&self) -> usize {
        if self.hitmap_items > 0 { self.hitmap_items } else { (self.max_memory / 64).max(1) }
    }

    /// Checks the settings, explaining the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let seg = self.segment_size;
        if !seg.is_power_of_two() || !(4096..=item::MAX_SEGMENT_SIZE).contains(&seg) {
            return Err(ConfigError(format!(
                "segment_size must be a power of two from 4 KiB to 8 MiB, not {seg}"
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
        Ok(())
    }
}

/// Why an operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineError {
    /// The item (key record + value) exceeds `max_item_size` or a segment, or the value
    /// exceeds `max_value_len`. Nothing was changed.
    TooLarge,
    /// The key is longer than 65535 bytes.
    KeyTooLong,
    /// memcached incr/decr on a value that is not an unsigned decimal.
    NotANumber,
    /// Redis INCR on a value that is not a 64-bit signed integer.
    NotAnInteger,
    /// Redis INCR would overflow.
    Overflow,
    /// Redis INCRBYFLOAT on a value that is not a float.
    NotAFloat,
    /// Redis INCRBYFLOAT would produce NaN or infinity.
    NotFinite,
    /// No segment could be found: memory is too small for the number of writers.
    OutOfMemory,
    /// More worker handles than `max_participants`.
    TooManyWorkers,
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EngineError::TooLarge => "object too large for cache",
            EngineError::KeyTooLong => "key too long",
            EngineError::NotANumber => "cannot increment or decrement non-numeric value",
            EngineError::NotAnInteger => "value is not an integer or out of range",
            EngineError::Overflow => "increment or decrement would overflow",
            EngineError::NotAFloat => "value is not a valid float",
            EngineError::NotFinite => "increment would produce NaN or Infinity",
            EngineError::OutOfMemory => "out of memory",
            EngineError::TooManyWorkers => "too many worker handles",
        })
    }
}

impl std::error::Error for EngineError {}

/// A configuration problem, explained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
