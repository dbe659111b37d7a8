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
//!
//! # The run-time limit
//!
//! [`crate::Engine::set_memory_limit`] (memcached's `cache_memlimit`) moves the limit within
//! the arena mapped at start, never beyond it. Lowering it sets how many segments to
//! *withhold*: free segments beyond the limit leave the free list and give their pages back,
//! as lent ones do. The rest comes from the cleaner in its normal bounded passes: while
//! segments remain to withhold it cleans on until that many more are free, then they are
//! withheld; writers meanwhile fill the segments still handed out, so shrinking never stops a
//! request. Raising the limit returns withheld segments to the free list at once. Withholding
//! leaves the watermark's free segments alone, so it never makes writers clean by itself.

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
        let items = || self.items_held();
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

    /// Bytes outside the arena other than the index: the fixed structures, what the eviction
    /// metadata grew by, and the cleaner's buffers (at least the allowance lent for them from
    /// the start).
    pub(crate) fn outside_fixed(&self) -> usize {
        self.fixed_overhead
            + self.metadata_grown.load(Ordering::Relaxed)
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

/// Why [`crate::Engine::set_memory_limit`] refused a limit; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitError {
    /// More than the arena mapped at start (`max_memory`), which is the most there is.
    AboveMapped {
        /// The arena's bytes.
        mapped: usize,
    },
    /// Less than the engine would start with: room for the workers' heads and the cleaner
    /// besides what is lent to the index.
    TooSmall {
        /// The smallest limit accepted, in bytes.
        min: usize,
    },
}

impl Inner {
    /// See [`crate::Engine::set_memory_limit`].
    pub(crate) fn set_memory_limit(&self, bytes: usize) -> Result<(), LimitError> {
        let (count, size) = (self.segments.count(), self.config.segment_size);
        if bytes > count * size {
            return Err(LimitError::AboveMapped { mapped: count * size });
        }
        // What `Engine::new` asks of `max_memory` at start.
        let min = (self.segments.lent_count() + 4 * self.config.workers_hint.max(1) + 8) * size;
        if bytes < min.min(count * size) {
            return Err(LimitError::TooSmall { min });
        }
        let keep = bytes / size;
        self.withhold_target.store(count - keep, Ordering::Relaxed);
        let usable = keep.saturating_sub(self.watermark + self.segments.lent_count());
        self.arbiter.set_usable((usable * size) as u64);
        self.settle_limit();
        self.wake_background();
        Ok(())
    }

    /// The limit in force: the arena less what is to be withheld.
    pub(crate) fn memory_limit(&self) -> usize {
        let target = self.withhold_target.load(Ordering::Relaxed);
        (self.segments.count() - target) * self.config.segment_size
    }

    /// Segments still to withhold below a lowered limit.
    #[inline]
    pub(crate) fn withhold_deficit(&self) -> usize {
        self.withhold_target.load(Ordering::Relaxed).saturating_sub(self.segments.withheld_count())
    }

    /// Brings the withheld segments to the limit's target: withholds free segments beyond the
    /// watermark's, or returns the surplus of a raised limit. Returns whether more remain to
    /// withhold (the cleaner must free them first). Never waits: shares the lending's lock,
    /// taken with `try_lock`.
    pub(crate) fn settle_limit(&self) -> bool {
        let target = self.withhold_target.load(Ordering::Relaxed);
        if target == self.segments.withheld_count() {
            return false;
        }
        let Ok(_settling) = self.lending.try_lock() else { return true };
        let held = self.segments.withheld_count();
        if held < target {
            let ids = self.segments.take_for_lending(target - held, self.watermark + 1);
            for &id in &ids {
                self.arena.release(id);
            }
            self.segments.add_withheld(&ids) < target
        } else {
            self.segments.return_withheld(held - target);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::LimitError;
    use crate::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};

    const MIB: usize = 1 << 20;

    fn engine(cleaner: CleanerMode) -> Engine {
        let config = EngineConfig {
            max_memory: 8 * MIB,
            segment_size: 64 << 10,
            max_item_size: 16 << 10,
            cleaner,
            ..EngineConfig::default()
        };
        Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap()
    }

    fn store(w: &mut crate::Worker, i: u32) {
        let value = [i as u8; 900];
        w.store(Store::new(TenantId(0), &i.to_le_bytes(), &value)).unwrap();
    }

    #[test]
    fn a_limit_beyond_the_arena_or_below_the_minimum_is_refused() {
        let e = engine(CleanerMode::Inline);
        assert_eq!(e.set_memory_limit(9 * MIB), Err(LimitError::AboveMapped { mapped: 8 * MIB }));
        assert!(matches!(e.set_memory_limit(64 << 10), Err(LimitError::TooSmall { .. })));
        assert_eq!(e.memory_limit(), 8 * MIB);
        assert_eq!(e.set_memory_limit(8 * MIB), Ok(()));
    }

    #[test]
    fn shrinking_evicts_to_the_new_limit_while_a_worker_stores_and_reads() {
        let e = engine(CleanerMode::Inline);
        let mut w = e.worker().unwrap();
        for i in 0..8000 {
            store(&mut w, i);
        }
        assert!(e.stats().item_bytes as usize > 6 * MIB, "the arena filled");
        e.set_memory_limit(2 * MIB).unwrap();
        assert_eq!(e.memory_limit(), 2 * MIB);
        // The worker goes on: its stores make the cleaner run, which frees the segments to
        // withhold in its normal passes. Every read finds what was just written.
        for i in 8000..16000 {
            store(&mut w, i);
            let got = w.get(TenantId(0), &i.to_le_bytes(), |item| item.value[0]);
            assert_eq!(got, Some(i as u8));
        }
        let s = e.stats();
        assert!(s.item_bytes as usize <= 2 * MIB, "items take {} bytes", s.item_bytes);
        assert_eq!(e.inner().withhold_deficit(), 0);
        assert!(s.segments_free < 8 * MIB / s.segment_size - e.inner().segments.withheld_count());
        e.validate();
        // Raising it lets the cache use more again.
        e.set_memory_limit(8 * MIB).unwrap();
        assert_eq!(e.inner().segments.withheld_count(), 0);
        for i in 16000..24000 {
            store(&mut w, i);
        }
        assert!(e.stats().item_bytes as usize > 4 * MIB);
        e.validate();
    }

    #[test]
    fn the_background_cleaner_shrinks_while_a_worker_runs() {
        let e = engine(CleanerMode::Background);
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, flag) = (e.clone(), Arc::clone(&stop));
        let writer = std::thread::spawn(move || {
            let mut w = engine.worker().unwrap();
            let mut i = 0u32;
            while !flag.load(Ordering::Relaxed) || i < 20_000 {
                store(&mut w, i);
                let got = w.get(TenantId(0), &i.to_le_bytes(), |item| item.value[0]);
                assert_eq!(got, Some(i as u8));
                i += 1;
            }
        });
        e.set_memory_limit(2 * MIB).unwrap();
        // The cleaner withholds in bounded steps; the worker never waits for it.
        while e.inner().withhold_deficit() > 0 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        // (No `validate` here: the background cleaner may still be in a pass.)
        let s = e.stats();
        assert!(s.item_bytes as usize <= 2 * MIB, "items take {} bytes", s.item_bytes);
    }

    #[test]
    fn the_eviction_observer_sees_each_evicted_item() {
        let e = engine(CleanerMode::Inline);
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&seen);
        assert!(e.set_eviction_observer(Box::new(move |ev| {
            assert_eq!(ev.value_len, 900);
            assert_eq!(ev.key.len(), 4);
            counter.fetch_add(1, Ordering::Relaxed);
        })));
        assert!(!e.set_eviction_observer(Box::new(|_| {})), "set once");
        let mut w = e.worker().unwrap();
        for i in 0..20_000 {
            store(&mut w, i);
        }
        let s = e.stats();
        assert!(s.evictions > 0);
        // The cleaner's evictions, and the index's if it had to drop any.
        assert_eq!(seen.load(Ordering::Relaxed), s.evictions + s.index_evictions);
    }
}
