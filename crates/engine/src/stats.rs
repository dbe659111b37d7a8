//! Engine-wide counters and the stats snapshot.
//!
//! Counters on the GET path live in each worker's own cache line ([`crate::epoch`]); the ones
//! here change on writes, evictions and background work only.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by all workers and the cleaner.
#[derive(Debug, Default)]
pub struct Counters {
    /// Items dropped by the cleaner or FIFO eviction to make room.
    pub evictions: AtomicU64,
    /// Items found expired and reclaimed.
    pub expired: AtomicU64,
    /// Expired items reclaimed by the expiry sweep (also counted in `expired`).
    pub swept: AtomicU64,
    /// Expiry sweep passes completed.
    pub sweep_passes: AtomicU64,
    /// Key records the expiry sweep read.
    pub sweep_checked: AtomicU64,
    /// Cleaner passes completed.
    pub cleaner_passes: AtomicU64,
    /// Items copied by the cleaner.
    pub relocated_items: AtomicU64,
    /// Bytes copied by the cleaner.
    pub relocated_bytes: AtomicU64,
    /// Whole segments evicted oldest-first because no cleaning pass was possible.
    pub fifo_evictions: AtomicU64,
    /// Items removed by flushes.
    pub flushed: AtomicU64,
    /// Access digests handed to the metadata sink.
    pub digests: AtomicU64,
}

impl Counters {
    /// Adds `n` to `counter`.
    #[inline]
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A point-in-time view of the engine.
#[derive(Debug, Clone, Default)]
pub struct EngineStats {
    /// `max_memory`: bytes of the arena (item memory).
    pub max_memory: usize,
    /// Segment size in bytes.
    pub segment_size: usize,
    /// Total segments.
    pub segments: usize,
    /// Free segments.
    pub segments_free: usize,
    /// Sealed segments.
    pub segments_sealed: usize,
    /// Segments waiting for readers to leave their epoch.
    pub segments_retired: usize,
    /// Retired segments that value pins still hold (`crate::pin`).
    pub segments_held: usize,
    /// Value pins held (replies being written from their segments).
    pub value_pins: usize,
    /// Segments lent to the memory outside the arena (`memory_includes_index`).
    pub segments_lent: usize,
    /// Bytes of the arena that may be resident: every segment but the lent ones. With
    /// `memory_includes_index`, this plus `overhead_bytes` stays within `max_memory`.
    pub arena_bytes: usize,
    /// Bytes of memory outside the arena: index tables, segment headers, the hitmap and the
    /// expiry sweep's per-segment state.
    pub overhead_bytes: usize,
    /// Index tables' resident bytes: roots, and pools up to the last sub-bucket group handed
    /// out, tables waiting to be freed included.
    pub index_bytes: usize,
    /// Root buckets in the current index table.
    pub index_buckets: usize,
    /// Completed index growths.
    pub index_resizes: u64,
    /// Items dropped by the index for lack of a sub-bucket.
    pub index_evictions: u64,
    /// Index growths given up because the new table could not be mapped (out of memory).
    pub index_growth_failures: u64,
    /// Live items, all tenants.
    pub items: u64,
    /// Bytes of live items (records and values), all tenants.
    pub item_bytes: u64,
    /// GET-like lookups.
    pub gets: u64,
    /// Lookups that hit.
    pub hits: u64,
    /// Store operations.
    pub sets: u64,
    /// Evicted items.
    pub evictions: u64,
    /// Expired items reclaimed.
    pub expired: u64,
    /// Expired items reclaimed by the expiry sweep (included in `expired`).
    pub expired_swept: u64,
    /// Expiry sweep passes completed.
    pub sweep_passes: u64,
    /// Key records the expiry sweep read (items it could not skip by their segment).
    pub sweep_checked: u64,
    /// Cleaner passes.
    pub cleaner_passes: u64,
    /// Items relocated by the cleaner.
    pub relocated_items: u64,
    /// Bytes relocated by the cleaner.
    pub relocated_bytes: u64,
    /// Segments evicted whole, oldest first.
    pub fifo_evictions: u64,
    /// Items removed by flushes.
    pub flushed: u64,
    /// Access digests produced.
    pub digests: u64,
    /// The eviction metadata (hitmap).
    pub metadata: crate::metadata::MetadataStats,
}
