//! Eviction metadata: reference pools in, temperatures out (Catalyst §3.2–3.3).
//!
//! ```text
//!  worker ─ GET/SET ─► own pool (1024 digests, 4 KiB) ─ full ─► submit ─┐
//!                                                                     │ lock-free queue
//!  cleaner ─ temperatures(candidates' digests) ──┐                     ▼ (bounded; dropped
//!                                                ▼              metadata worker   and counted
//!                                             hitmap ◄── record_batch ┘            when full)
//! ```
//!
//! The request path never waits: [`MetadataBackend::submit`] copies a full pool into a
//! recycled buffer and queues it; with no buffer free (the metadata worker is behind) the pool
//! is dropped and counted. Losing a pool loses a little access history, never correctness.
//!
//! The cleaner asks for the temperatures of all its survivors in one batch (Catalyst §3.3).
//! Rolling compaction runs where pools are applied, as soon as level 1 is saturated
//! ([`Hitmap::saturated`](crate::hitmap::Hitmap::saturated)): in the metadata worker, or inline in the submitting thread. While
//! one runs, queries answer "unknown" (zone 1 for all) rather than wait, so the
//! ranks fall back to recency for that pass.
//!
//! [`Pooled`] carries pools to a [`Structure`]: [`Hitmap`](crate::hitmap::Hitmap) in host
//! memory ([`CpuHitmap`]) or the same hitmap in a GPU's memory (`GpuHitmap`, `gpu.rs`, with
//! the `gpu` feature), which answers the same temperatures for the same pools.

/// Digests per reference pool (4 KiB of `u32`s; Catalyst §3.2.1).
pub const POOL_LEN: usize = 1024;

/// A key's temperature as the cleaner sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Temperature {
    /// Levels that mark the key. Zone 0 — in no level, and so not in the set counter, which
    /// only ever holds level-1 bits — is Catalyst's *zombie*: not read since it was stored,
    /// through at least one compaction (§3.1.6).
    pub zone: u8,
}

/// What a query answers when the hitmap cannot be read (a compaction is running): no key
/// looks like a zombie, so the ranks fall back to recency.
const UNKNOWN: Temperature = Temperature { zone: 1 };

/// Figures of the eviction metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetadataStats {
    /// Digests applied to the hitmap.
    pub applied: u64,
    /// Pools dropped because the metadata worker was behind.
    pub pools_dropped: u64,
    /// Rolling compactions done.
    pub compactions: u64,
    /// Bytes of the hitmap (all levels and the set counter).
    pub bytes: usize,
    /// Levels.
    pub levels: usize,
    /// Items in the last temperature query, per zone (index 0 = zone 0, the zombies).
    pub zones: Vec<u64>,
    /// Where the hitmap lives: `cpu`, `gpu: <device name>`, or empty without one.
    pub device: String,
}

/// Receives access digests and answers temperature queries.
///
/// # Contract
///
/// The caller (the engine) guarantees:
/// - [`submit`](MetadataBackend::submit) gets at most `POOL_LEN` (1024) digests and
///   `hotkeys::NAMES_PER_POOL` bytes of name samples per call, from any worker thread, on
///   the request path, concurrently with other calls;
/// - [`temperatures`](MetadataBackend::temperatures) is called by the cleaner with the
///   digests of one pass's survivors, and `out` is a buffer the cleaner reuses between passes;
/// - [`stats`](MetadataBackend::stats) and the hot-key calls are made on the control path
///   only.
///
/// An implementation:
/// - MUST NOT wait for another thread in `submit`: a threaded backend queues the pool or,
///   when it cannot keep up, drops it and counts it in [`MetadataStats::pools_dropped`]; an
///   inline backend applies it in the caller, doing work bounded by the pool (plus a
///   compaction when one is due);
/// - MUST NOT allocate per call in `submit` or `temperatures` (recycle buffers; `out` may
///   grow to the largest batch, once);
/// - MUST NOT wait for a compaction in `temperatures`: while one runs on the host it answers
///   "unknown" (zone 1 for every digest); a GPU's query waits only for the work queued on
///   its stream before it (one batch and its compaction steps: a full 256-pool batch is
///   about 0.2 ms at the 1.3–1.6G digests/s measured on an H100);
/// - MUST write exactly one [`Temperature`] per digest into `out`, in order, after clearing
///   it;
/// - MUST, when applied inline (the submitting thread applies the pool), depend only on the
///   digests it was given — never on wall time, thread timing or randomness — so that the
///   simulator's results are the same run after run;
/// - MUST treat losing history as harmless: a dropped pool changes eviction quality, never
///   correctness;
/// - MAY count hot keys from the pools it applies (`hotkeys.rs`); one that does not answers
///   `None` from [`hot_keys`](MetadataBackend::hot_keys).
pub trait MetadataBackend: Send + Sync + std::fmt::Debug {
    /// Takes one reference pool (a digest is `digest_of(hash)` with bit 0 set for a SET)
    /// and its name samples (`hotkeys::push_name`). Never waits for another thread and
    /// never allocates.
    fn submit(&self, digests: &[u32], names: &[u8]);
    /// Writes the temperature of each digest into `out` (cleared first, same order); the
    /// batch also serves as the compaction sample. Never waits for a compaction.
    fn temperatures(&self, digests: &[u32], out: &mut Vec<Temperature>);
    /// Current figures (control path; may allocate, and may scan the whole structure).
    fn stats(&self) -> MetadataStats;
    /// Bytes the backend keeps; MUST NOT scan (it is asked at startup for the memory
    /// accounting).
    fn bytes(&self) -> usize;
    /// Whether [`temperatures`](MetadataBackend::temperatures) answers each key's estimated
    /// references lately (a frequency sketch, `src/sketch.rs`) rather than hitmap zones.
    fn estimates_frequencies(&self) -> bool {
        false
    }
    /// Tells the backend how many items the cache holds now (the cleaner, once per pass,
    /// where [`estimates_frequencies`](MetadataBackend::estimates_frequencies)): a frequency
    /// sketch's memory of the past is ten references per item held.
    fn set_items(&self, _items: usize) {}
    /// The hot keys of the last completed window (or the live one), if counted.
    fn hot_keys(&self) -> Option<HotKeys> {
        None
    }
    /// Forgets the hot keys counted so far.
    fn reset_hot_keys(&self) {}
    /// Sets the hot-key window's length.
    fn set_hot_window(&self, _window_ms: u64) {}
    /// The hot-key window's length, if hot keys are counted.
    fn hot_window(&self) -> Option<u64> {
        None
    }
}

/// A GPU hitmap (`gpu.rs`) as a backend, inline or threaded; an error naming what is missing
/// where there is no usable GPU, or where the engine was built without the `gpu` feature. A
/// panic in the CUDA bindings (a driver too old for a symbol they load) is an error too.
pub(crate) fn open_gpu(
    items: usize,
    bits_per_item: usize,
    inline: bool,
) -> Result<Box<dyn MetadataBackend>, String> {
    #[cfg(feature = "gpu")]
    {
        let open = move || -> Result<Box<dyn MetadataBackend>, String> {
            Ok(if inline {
                Box::new(GpuHitmap::inline(items, bits_per_item)?)
            } else {
                Box::new(GpuHitmap::threaded(items, bits_per_item)?)
            })
        };
        std::panic::catch_unwind(open).unwrap_or_else(|p| {
            let why = p.downcast_ref::<String>().cloned();
            let why = why.or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("CUDA failed: {}", why.unwrap_or_default()))
        })
    }
    #[cfg(not(feature = "gpu"))]
    {
        let _ = (items, bits_per_item, inline);
        Err("built without the gpu feature".into())
    }
}

mod cpu;
#[cfg(feature = "gpu")]
mod gpu;
mod none;
mod pooled;

use crate::hotkeys::HotKeys;

#[cfg(feature = "gpu")]
pub use gpu::{GpuHitmap, GpuMemory};
pub use none::NoMetadata;
pub use pooled::{CpuHitmap, HotKeysOnly, NoHitmap, Pooled, Structure};
