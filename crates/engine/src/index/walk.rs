//! Walking the index: cursor scans in Redis's reverse-binary order (SCAN, flushes, audits),
//! and sweeps in root order with an unlocked fast path (the background expiry sweep).

use std::sync::atomic::{AtomicU64, Ordering};

use super::{
    Index, Loc, Locked, MIGRATED_BIT, SWEEP_PREFETCH, header_child, lock_root, new_roots, prefetch,
    unlock_root,
};
use crate::epoch::Guard;

impl Index {
    /// Visits the slots of one cursor position and returns the next cursor (0 when a full
    /// pass is complete). The cursor follows Redis's reverse-binary order, so a pass started
    /// before a growth still sees every bucket's keys after it. `visit` gets the locked tree,
    /// so it may remove slots.
    pub fn scan(
        &self,
        guard: &Guard<'_>,
        cursor: u64,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
        visit: &mut impl FnMut(&Locked<'_>, &AtomicU64, Loc),
    ) -> u64 {
        let mask = self.visit_position(guard, cursor as usize, rehash, on_evict, visit);
        let mut v = cursor | !(mask as u64);
        v = v.reverse_bits().wrapping_add(1);
        v.reverse_bits()
    }

    /// Like [`Index::scan`], but positions go in root order (0, 1, 2, …), which the CPU's
    /// prefetchers follow, instead of the reverse-binary order that lets a client's cursor
    /// skip nothing across growths. Returns the next position, 0 when the pass is complete.
    /// Every key present for a whole pass is still visited at least once: positions count
    /// roots of the smaller live table and tables only grow; growing from `n` roots to `2n`
    /// sends the keys of root `p` to roots `p` and `p + n`, so any key found later at a
    /// position below the cursor was at that same position when the cursor passed it (keys
    /// of visited roots may be visited again at `p + n`). For background sweeps.
    ///
    /// A root with no sub-buckets is first read without its lock: if `pass` says each of its
    /// items may be passed over (having accounted for it), the root is not locked at all.
    /// Reading it unlocked may miss only items published meanwhile (an item moves between
    /// slots of a tree only when the tree has sub-buckets), which a sweep accounts for by
    /// other means. Otherwise `visit` sees the whole tree, locked, as in [`Index::scan`].
    #[expect(clippy::too_many_arguments, reason = "the callbacks of one visit, passed once")]
    pub fn sweep(
        &self,
        guard: &Guard<'_>,
        position: usize,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
        pass: &mut impl FnMut(Loc) -> bool,
        visit: &mut impl FnMut(&Locked<'_>, &AtomicU64, Loc),
        ahead: &mut impl FnMut(Loc),
    ) -> usize {
        let (current, old) = self.tables(guard);
        let unlocked = old.is_none() && {
            let root = &current.roots[position & current.mask];
            let h = root.header();
            header_child(h) == 0
                && h & MIGRATED_BIT == 0
                && root.slots().iter().all(|slot| {
                    let s = slot.load(Ordering::Acquire);
                    s == 0 || pass(Loc::unpack(s))
                })
        };
        let mask = if unlocked {
            current.mask
        } else {
            self.visit_position(guard, position, rehash, on_evict, visit)
        };
        let (current, old) = self.tables(guard);
        let table = old.unwrap_or(current);
        // Start loading the root a few positions ahead (the prefetchers stop at page
        // boundaries), and tell `ahead` about the root slots of one nearer, whose line should
        // be in by now, so the caller can prefetch what they point to.
        prefetch(&table.roots[(position + SWEEP_PREFETCH) & table.mask]);
        for slot in table.roots[(position + SWEEP_PREFETCH / 2) & table.mask].slots() {
            let s = slot.load(Ordering::Relaxed);
            if s != 0 {
                ahead(Loc::unpack(s));
            }
        }
        if position >= mask { 0 } else { position + 1 }
    }

    /// Visits position `position` of the smaller live table (its tree, and during a growth
    /// the trees it migrates to), each root locked while `visit` runs. Returns the smaller
    /// table's mask.
    fn visit_position(
        &self,
        guard: &Guard<'_>,
        position: usize,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
        visit: &mut impl FnMut(&Locked<'_>, &AtomicU64, Loc),
    ) -> usize {
        'retry: loop {
            let (current, old) = self.tables(guard);
            let small = old.unwrap_or(current);
            let i = position & small.mask;
            if let Some(old) = old {
                self.migrate_root(old, current, i, rehash, on_evict);
            }
            let roots = match old {
                Some(old) => new_roots(old, current, i),
                None => [Some(i), None],
            };
            for r in roots.into_iter().flatten() {
                let root = &current.roots[r];
                lock_root(root);
                if root.header() & MIGRATED_BIT != 0 {
                    unlock_root(root);
                    continue 'retry;
                }
                // `tag` is unused: visitors only read and remove slots.
                let locked = self.locked(current, root, 0, false);
                locked.for_each_slot(|slot, loc| visit(&locked, slot, loc));
            }
            return small.mask;
        }
    }

    /// Calls `visit` on every slot of every tree, locked (for flushes and audits).
    pub fn for_each(
        &self,
        guard: &Guard<'_>,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
        visit: &mut impl FnMut(&Locked<'_>, &AtomicU64, Loc),
    ) {
        let mut cursor = 0;
        loop {
            cursor = self.scan(guard, cursor, rehash, on_evict, visit);
            if cursor == 0 {
                break;
            }
        }
    }
}
