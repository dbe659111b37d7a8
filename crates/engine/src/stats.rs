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
    /// Bytes of the SLB's tables (0: no SLB); included in `index_bytes`.
    pub slb_bytes: usize,
    /// Lookups the SLB answered without reading the index.
    pub slb_hits: u64,
    /// Keys the SLB admitted.
    pub slb_admissions: u64,
    /// Bytes the tenants' shadow queues hold (ring and hash-map entries of recently evicted
    /// items, outside the arena and not in `overhead_bytes`; at most 1/32 of the arena,
    /// `crate::arbiter`). 0 with one tenant.
    pub shadow_bytes: usize,
    /// Recently evicted items the tenants' shadow queues remember.
    pub shadow_items: usize,
    /// Bytes of the queues' ghosts (`Eviction::Queues`: Bloom filters of recently evicted
    /// keys, outside the arena and in `overhead_bytes`; the most they have used, where they
    /// grow with the items held).
    pub ghost_bytes: usize,
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
    /// Updates of collections written over the item they changed instead of as a new one
    /// (the value kept its length: `crate::edit`).
    pub edits_in_place: u64,
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
    /// The small queue's target share of memory, bytes of its sealed segments
    /// (`Eviction::Queues`; it adapts between `small_min_percent` and `small_percent`).
    pub small_queue_target: u64,
    /// Items removed by flushes.
    pub flushed: u64,
    /// Access digests produced.
    pub digests: u64,
    /// The eviction metadata (hitmap).
    pub metadata: crate::metadata::MetadataStats,
}

/// Where the arena's segments are and how full ([`crate::Engine::segment_usage`]): what
/// part of `max_memory` holds items, and where the rest goes (free segments kept for the
/// cleaner, the unused end of open heads and of sealed segments, dead versions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentUsage {
    /// All segments of the arena.
    pub segments: usize,
    /// Bytes per segment.
    pub segment_size: usize,
    /// Free segments (the cleaner's watermark and reserve).
    pub free: usize,
    /// Open heads: segments a writer or the cleaner is filling (with the inline cleaner, no
    /// pass is under way between requests, so these are all heads).
    pub open: QueueUsage,
    /// Sealed segments of the small queue (with [`crate::Eviction::Queues`]).
    pub small: QueueUsage,
    /// Sealed segments of the main queue; with Memshare's pass, every sealed segment.
    pub main: QueueUsage,
    /// Retired, pinned, lent or withheld segments.
    pub other: usize,
}

/// Segments of one kind and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueUsage {
    /// Segments.
    pub segments: usize,
    /// Bytes written into them (records and values, live or dead).
    pub used_bytes: usize,
    /// Of which bytes of items no longer reachable (overwritten, deleted).
    pub dead_bytes: usize,
}

impl QueueUsage {
    /// Bytes at the segments' ends that hold nothing (room a head has left; a sealed
    /// segment's tail that the next item did not fit in).
    pub fn unused_bytes(&self, segment_size: usize) -> usize {
        (self.segments * segment_size).saturating_sub(self.used_bytes)
    }
}
