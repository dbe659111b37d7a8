//! The memory budget with `memory_includes_index`: everything the engine keeps resident —
//! the arena's segments, the index, the segment headers and the eviction metadata — stays
//! within `max_memory`, as memcached users expect of `-m`.
//!
//! Without the setting, `max_memory` is the arena alone and the rest comes on top
//! ([`crate::EngineStats::overhead_bytes`]). With it, the arena *lends* whole segments to the
//! memory outside it: a lent segment leaves the free list, its pages are given back to the
//! kernel ([`crate::arena::Arena::release`]), and the index may keep resident only as many
//! bytes as the lent segments cover, less the fixed structures:
//!
//! ```text
//!  max_memory = segments × segment_size
//!             ≥ (segments − lent) × segment_size   arena: segments that may hold items
//!             + fixed                               headers, hitmap, sweep state, the
//!                                                   cleaner's buffers
//!             + index resident                      ≤ lent × segment_size − fixed
//! ```
//!
//! The index enforces its side ([`crate::index::Index::set_memory_limit`]): a sub-bucket group
//! past the limit is refused (the insert evicts, as when the pool is used up) and a growth
//! waits, noting the table it wants. The engine lends ahead of the index's needs: enough
//! segments to cover what is resident, a waiting growth's table, and [`LEND_AHEAD`] bytes of
//! groups; it returns segments once a freed table leaves more than a segment to spare. Lending
//! never waits: it takes only segments free beyond the cleaner's reserve, and the cleaner,
//! finding free segments short, makes more by evicting (the memory the index takes comes
//! out of the items'). Writers settle the lending after their index maintenance, a few
//! segments at most and only if no one else is settling it; the background thread settles
//! all that is free.
//!
//! Costs: the check on the write path is a few loads; the items that fit are fewer by the
//! index's size (about 19 bytes per small item at full load).

use std::sync::atomic::Ordering;

use crate::cache::Inner;
use crate::epoch::Guard;
use crate::segment::CLEANER_RESERVE;

/// Old index roots migrated per write while the index grows.
const MIGRATE_PER_WRITE: usize = 2;
/// Bytes lent beyond what the index holds now, so that sub-bucket groups handed out between
/// two settlements find room (a write adds at most a few).
pub(crate) const LEND_AHEAD: usize = 16 << 10;
/// Most segments a writer lends in one settlement (releasing pages is a system call each).
pub(crate) const LEND_PER_WRITE: usize = 4;

/// Bytes lent from the start for the cleaner's buffers (about 40 bytes per live item of an
/// evicting pass's candidates): 1/64 of `max_memory`, at least two segments. A pass that
/// needs more grows them, and the lending follows right after the pass.
pub(crate) fn scratch_allowance(max_memory: usize, segment_size: usize) -> usize {
    (max_memory / 64).max(2 * segment_size)
}

impl Inner {
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

    /// Segments the lending should stand at now.
    fn lending_target(&self) -> usize {
        let need = self.outside_fixed()
            + self.index.resident_bytes()
            + self.index.wanted_bytes()
            + LEND_AHEAD;
        need.div_ceil(self.config.segment_size)
    }

    /// Bytes outside the arena other than the index: the fixed structures and the cleaner's
    /// buffers (at least the allowance lent for them from the start).
    pub(crate) fn outside_fixed(&self) -> usize {
        self.fixed_overhead
            + self.cleaner_scratch.load(Ordering::Relaxed).max(self.scratch_allowance)
    }

    /// The index's limit when `lent` segments are lent.
    fn index_limit(&self, lent: usize) -> usize {
        (lent * self.config.segment_size).saturating_sub(self.outside_fixed())
    }

    /// With `memory_includes_index`, brings the segments lent to the memory outside the arena
    /// to what it needs: lends up to `most` free segments beyond the cleaner's reserve, or
    /// returns a surplus of more than one segment. Returns whether the lending falls short
    /// (more segments must be freed first). Never waits: if another thread is settling, this
    /// one leaves it to that one.
    pub(crate) fn settle_lending(&self, most: usize) -> bool {
        if !self.config.memory_includes_index {
            return false;
        }
        let (target, lent) = (self.lending_target(), self.segments.lent_count());
        if target <= lent && lent <= target + 1 {
            return false;
        }
        let Ok(_settling) = self.lending.try_lock() else { return false };
        let (target, lent) = (self.lending_target(), self.segments.lent_count());
        if lent < target {
            let ids = self.segments.take_for_lending((target - lent).min(most), CLEANER_RESERVE);
            for &id in &ids {
                self.arena.release(id);
            }
            let lent = self.segments.add_lent(&ids);
            self.index.set_memory_limit(self.index_limit(lent));
            lent < target
        } else {
            if lent > target + 1 {
                // Lower the limit first, then check the index still fits under it (it may have
                // grown since `target` was read), and only then hand the segments back.
                self.index.set_memory_limit(self.index_limit(target));
                let outside = self.outside_fixed() + self.index.resident_bytes();
                if outside > target * self.config.segment_size {
                    self.index.set_memory_limit(self.index_limit(lent));
                    return false;
                }
                self.segments.return_lent(lent - target);
            }
            false
        }
    }
}
