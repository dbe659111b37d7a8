//! Epoch-based reclamation of segments and index tables (Memshare §5.3).
//!
//! A request is tagged at its start with the global epoch (it *pins*); when it ends it
//! unpins. Whoever removes the last index reference to a segment (or retires a whole index
//! table) tags it with the global epoch `e` and advances the global epoch. The segment may be
//! reused once every pinned participant shows an epoch greater than `e`: anyone pinned later
//! started after the references were gone.
//!
//! Each participant publishes its epoch in its own cache line, so pinning writes no shared line.
//! All epoch operations are `SeqCst` and pins are followed by a `SeqCst` fence, which orders
//! them against the index loads that follow (the classic crossbeam-epoch arrangement).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

/// Value of a participant's slot while it is not pinned.
const IDLE: u64 = u64::MAX;

/// Per-participant counters, summed for stats. Kept beside the epoch so a worker writes only
/// its own line.
#[derive(Debug, Default)]
pub struct LocalCounters {
    /// GET-like lookups.
    pub gets: AtomicU64,
    /// Lookups that found a live item.
    pub hits: AtomicU64,
    /// Store operations.
    pub sets: AtomicU64,
    /// Updates written over the item they changed (`crate::edit`).
    pub edits_in_place: AtomicU64,
    /// Lookups the SLB answered.
    pub slb_hits: AtomicU64,
}

/// Adds one to a counter that only its owning participant writes: a plain load and store,
/// no locked instruction on the request path. Readers summing it may see a slightly old value.
#[inline]
pub fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

#[derive(Debug)]
#[repr(align(128))]
struct Participant {
    epoch: AtomicU64,
    in_use: AtomicBool,
    counters: LocalCounters,
}

/// A claimed participant slot: the right to pin as that participant. Not `Clone` or `Copy`,
/// so one slot has one owner, and [`Epochs::unregister`] takes it back by value (a slot cannot
/// be pinned after it is released, nor released twice).
#[derive(Debug)]
pub struct Slot(usize);

impl Slot {
    /// A token that names no slot, for an owner that must give its slot back from `&mut self`
    /// (a `Drop` impl) with [`std::mem::replace`]. Pinning or releasing it panics (it is out of
    /// every registry's bounds).
    pub(crate) const DETACHED: Slot = Slot(usize::MAX);

    /// The slot's index, for tests.
    #[cfg(test)]
    pub(crate) fn index(&self) -> usize {
        self.0
    }
}

/// Proof that the holder is pinned; unpins on drop.
#[derive(Debug)]
pub struct Guard<'a> {
    epochs: &'a Epochs,
    id: usize,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.epochs.participants[self.id].epoch.store(IDLE, Ordering::Release);
    }
}

/// The epoch registry.
#[derive(Debug)]
pub struct Epochs {
    global: AtomicU64,
    participants: Box<[Participant]>,
}

impl Epochs {
    /// A registry with room for `capacity` concurrent participants.
    pub fn new(capacity: usize) -> Self {
        let participants = (0..capacity)
            .map(|_| Participant {
                epoch: AtomicU64::new(IDLE),
                in_use: AtomicBool::new(false),
                counters: LocalCounters::default(),
            })
            .collect();
        Epochs { global: AtomicU64::new(1), participants }
    }

    /// Claims a participant slot, or `None` if all are taken.
    pub fn register(&self) -> Option<Slot> {
        self.participants
            .iter()
            .position(|p| {
                p.in_use.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            })
            .map(Slot)
    }

    /// Releases a slot claimed by [`Epochs::register`]. Its counters are kept (they are
    /// cumulative) and continue to be counted by the next owner.
    pub fn unregister(&self, slot: Slot) {
        let p = &self.participants[slot.0];
        p.epoch.store(IDLE, Ordering::SeqCst);
        p.in_use.store(false, Ordering::Release);
    }

    /// Marks `slot`'s participant as inside a request until the returned guard drops.
    /// References into segments and index tables may be held only while a guard is alive.
    /// The caller MUST NOT pin a slot that is already pinned: the inner guard's drop would
    /// unpin the outer one.
    #[inline]
    pub fn pin(&self, slot: &Slot) -> Guard<'_> {
        let id = slot.0;
        let e = self.global.load(Ordering::SeqCst);
        self.participants[id].epoch.store(e, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        Guard { epochs: self, id }
    }

    /// Tags something just made unreachable: returns its retirement epoch and advances the
    /// global epoch.
    pub fn retire(&self) -> u64 {
        fence(Ordering::SeqCst);
        self.global.fetch_add(1, Ordering::SeqCst)
    }

    /// Whether something retired at `epoch` can no longer be referenced by anyone.
    pub fn is_safe(&self, epoch: u64) -> bool {
        fence(Ordering::SeqCst);
        self.participants.iter().all(|p| p.epoch.load(Ordering::SeqCst) > epoch)
    }

    /// Counters of `slot`'s participant.
    #[inline]
    pub fn counters(&self, slot: &Slot) -> &LocalCounters {
        &self.participants[slot.0].counters
    }

    /// Sum of one counter over all participants ever registered.
    pub fn sum(&self, f: impl Fn(&LocalCounters) -> &AtomicU64) -> u64 {
        self.participants.iter().map(|p| f(&p.counters).load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retired_is_unsafe_while_an_older_pin_is_held() {
        let e = Epochs::new(4);
        let a = e.register().unwrap();
        let b = e.register().unwrap();
        let ga = e.pin(&a);
        let t = e.retire();
        assert!(!e.is_safe(t), "a pinned before the retirement may still hold a reference");
        let gb = e.pin(&b);
        drop(ga);
        assert!(e.is_safe(t), "b pinned after the retirement");
        drop(gb);
        let index = a.index();
        e.unregister(a);
        assert_eq!(e.register().map(|s| s.index()), Some(index));
    }
}
