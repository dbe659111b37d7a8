//! The ghost: which keys the small queue evicted lately (S3-FIFO's ghost queue, Yang et al.,
//! SOSP '23, §4), for [`crate::Eviction::Queues`]. A key written again while the ghost
//! remembers it skips the small queue and goes straight to the main queue.
//!
//! S3-FIFO keeps the evicted keys themselves in a FIFO as long as the main queue. Here the
//! ghost is two Bloom filters of hashes, a current one and the previous one: evictions mark
//! the current filter; once it holds half the ghost's length, the previous one is cleared and
//! becomes the current. A key is remembered while it is in either, so for between half and
//! all of the ghost's length of later evictions, as a FIFO would remember it; a false
//! positive (one in a few hundred at this load) only admits a new key to the main queue.
//! `BITS_PER_KEY` bits of each filter per key it holds, rounded up to a power of two: 1.25–2.5
//! bytes per expected item.
//!
//! Only the cleaner marks (under its mutex); writers test, lock-free. A writer testing during
//! a rotation may miss a key the cleared filter held — a miss of the ghost, never an error.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bits of a filter per key it is sized to hold.
const BITS_PER_KEY: usize = 10;
/// Bit positions per key.
const PROBES: u32 = 4;
/// Keys a filter takes before a rotation, at least.
const MIN_HALF: usize = 64;

#[derive(Debug)]
pub(crate) struct Ghost {
    filters: [Box<[AtomicU64]>; 2],
    /// Bit-index mask (each filter's bits − 1).
    mask: u64,
    /// The filter being marked (0 or 1).
    current: AtomicUsize,
    /// Keys marked in the current filter.
    marked: AtomicUsize,
    /// Keys the current filter takes before the next rotation: half the ghost's length when
    /// the filter became current.
    half: AtomicUsize,
}

impl Ghost {
    /// A ghost sized for up to `keys` keys (each filter holds half).
    pub(crate) fn new(keys: usize) -> Ghost {
        let bits = (keys.max(128) / 2 * BITS_PER_KEY).next_power_of_two();
        let filter = || (0..bits / 64).map(|_| AtomicU64::new(0)).collect();
        Ghost {
            filters: [filter(), filter()],
            mask: bits as u64 - 1,
            current: AtomicUsize::new(0),
            marked: AtomicUsize::new(0),
            half: AtomicUsize::new(MIN_HALF),
        }
    }

    /// Bytes of both filters.
    pub(crate) fn bytes(&self) -> usize {
        2 * self.filters[0].len() * 8
    }

    /// Bit positions of `hash` (double hashing from its two halves).
    fn probes(&self, hash: u64) -> impl Iterator<Item = u64> + '_ {
        let (h1, h2) = (hash, hash.rotate_left(32) | 1);
        (0..u64::from(PROBES)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) & self.mask)
    }

    fn has(&self, filter: usize, hash: u64) -> bool {
        let f = &self.filters[filter];
        self.probes(hash).all(|b| f[(b / 64) as usize].load(Ordering::Relaxed) & 1 << (b % 64) != 0)
    }

    /// Whether `hash` was marked lately.
    pub(crate) fn contains(&self, hash: u64) -> bool {
        self.has(0, hash) || self.has(1, hash)
    }

    /// Marks `hash`. `length` says how many keys the ghost should remember now (S3-FIFO: as
    /// many as the main queue holds); it is asked only when the current filter is full and
    /// the ghost rotates, so it may be costly. Called by the cleaner only.
    pub(crate) fn mark(&self, hash: u64, length: impl FnOnce() -> usize) {
        let mut cur = self.current.load(Ordering::Relaxed);
        if self.marked.load(Ordering::Relaxed) >= self.half.load(Ordering::Relaxed) {
            // Rotate: forget the previous filter, mark into it from now on.
            cur ^= 1;
            self.filters[cur].iter().for_each(|w| w.store(0, Ordering::Relaxed));
            self.current.store(cur, Ordering::Relaxed);
            self.marked.store(0, Ordering::Relaxed);
            self.half.store((length() / 2).max(MIN_HALF), Ordering::Relaxed);
        }
        let f = &self.filters[cur];
        for b in self.probes(hash) {
            f[(b / 64) as usize].fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
        self.marked.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: u64) -> u64 {
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 29)
    }

    #[test]
    fn remembers_the_last_evictions_and_forgets_older_ones() {
        let g = Ghost::new(10_000);
        for i in 0..10_000 {
            g.mark(hash(i), || 1_000);
        }
        // The last 500 (at least) are remembered; those 2,000 back are gone.
        assert!((9_500..10_000).all(|i| g.contains(hash(i))));
        let old = (0..8_000).filter(|&i| g.contains(hash(i))).count();
        assert!(old < 80, "{old} false positives among 8,000 forgotten keys");
    }
}
