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
//! `BITS_PER_KEY` bits of each filter per key it is sized for, rounded up to a power of two:
//! 1.25–2.5 bytes per item.
//!
//! **Sized for the items held** ([`Ghost::growing`]): a filter is sized again each time it
//! becomes the current one, for the items the cache holds then, never past its size for the
//! most items it was made for (where the server sizes it for one item per 64 bytes of memory,
//! which a cache of larger items never holds). Each filter's words are a mapping of that
//! largest size whose pages are touched only as far as the filter uses them, so resizing moves
//! no memory and frees none for readers to trip on: it clears the words in use and publishes
//! a new bit mask. A [`Ghost::new`] ghost keeps one size (the simulator's, sized for the items
//! its caches hold).
//!
//! Only the cleaner marks (under its mutex); writers test, lock-free. A writer testing during
//! a rotation may miss a key the cleared filter held, or test the cleared filter with its
//! mask from before — a miss of the ghost, never an error: every mask covers words of the
//! mapping, and words past the one in use are zero.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::arena::AtomicWords;

/// Bits of a filter per key it is sized to hold.
const BITS_PER_KEY: usize = 10;
/// Bit positions per key.
const PROBES: u32 = 4;
/// Keys a filter takes before a rotation, at least.
const MIN_HALF: usize = 64;
/// Items a growing ghost is sized for at the start (the frequency sketch's starting size).
const START_ITEMS: usize = 1 << 16;

/// Bits of each filter of a ghost sized for `items` keys (each filter holds half).
fn filter_bits(items: usize) -> usize {
    (items.max(128) / 2 * BITS_PER_KEY).next_power_of_two()
}

#[derive(Debug)]
pub(crate) struct Ghost {
    filters: [AtomicWords; 2],
    /// Each filter's bit-index mask (the bits it uses − 1).
    masks: [AtomicU64; 2],
    /// Bits each filter's mapping holds: the most it may use.
    most_bits: usize,
    /// Whether each rotation sizes the new current filter for the items held.
    grows: bool,
    /// How many keys the ghost remembers, in percent of the items held.
    percent: usize,
    /// The filter being marked (0 or 1).
    current: AtomicUsize,
    /// Keys marked in the current filter.
    marked: AtomicUsize,
    /// Keys the current filter takes before the next rotation: half the ghost's length when
    /// the filter became current.
    half: AtomicUsize,
    /// The most bits both filters have used together: the resident memory they take.
    peak_bits: AtomicUsize,
}

impl Ghost {
    /// A ghost of one size, for up to `items` keys, remembering `percent` of the items held.
    pub(crate) fn new(items: usize, percent: u16) -> std::io::Result<Ghost> {
        Ghost::with(filter_bits(items), filter_bits(items), false, percent)
    }

    /// A ghost sized for the items held, up to its size for `most_items` (module doc).
    pub(crate) fn growing(most_items: usize, percent: u16) -> std::io::Result<Ghost> {
        let most = filter_bits(most_items);
        Ghost::with(filter_bits(START_ITEMS).min(most), most, true, percent)
    }

    fn with(bits: usize, most_bits: usize, grows: bool, percent: u16) -> std::io::Result<Ghost> {
        let filter = || AtomicWords::zeroed(most_bits / 64);
        Ok(Ghost {
            filters: [filter()?, filter()?],
            masks: [AtomicU64::new(bits as u64 - 1), AtomicU64::new(bits as u64 - 1)],
            most_bits,
            grows,
            percent: usize::from(percent),
            current: AtomicUsize::new(0),
            marked: AtomicUsize::new(0),
            half: AtomicUsize::new(MIN_HALF),
            peak_bits: AtomicUsize::new(2 * bits),
        })
    }

    /// Bytes of both filters: the most they have used (so far; their pages stay resident).
    pub(crate) fn bytes(&self) -> usize {
        self.peak_bits.load(Ordering::Relaxed) / 8
    }

    /// Bits filter `filter` uses now.
    fn bits(&self, filter: usize) -> usize {
        self.masks[filter].load(Ordering::Relaxed) as usize + 1
    }

    /// Bit positions of `hash` under `mask` (double hashing from its two halves).
    fn probes(hash: u64, mask: u64) -> impl Iterator<Item = u64> {
        let (h1, h2) = (hash, hash.rotate_left(32) | 1);
        (0..u64::from(PROBES)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) & mask)
    }

    fn has(&self, filter: usize, hash: u64) -> bool {
        let (f, mask) = (&self.filters[filter], self.masks[filter].load(Ordering::Relaxed));
        Ghost::probes(hash, mask)
            .all(|b| f[(b / 64) as usize].load(Ordering::Relaxed) & 1 << (b % 64) != 0)
    }

    /// Whether `hash` was marked lately.
    pub(crate) fn contains(&self, hash: u64) -> bool {
        self.has(0, hash) || self.has(1, hash)
    }

    /// Marks `hash`. `held` says how many items the cache holds now (the ghost remembers its
    /// `percent` of them; S3-FIFO: as many as the main queue holds); it is asked only when
    /// the current filter is full and the ghost rotates, so it may be costly. Called by the
    /// cleaner only.
    pub(crate) fn mark(&self, hash: u64, held: impl FnOnce() -> usize) {
        let mut cur = self.current.load(Ordering::Relaxed);
        if self.marked.load(Ordering::Relaxed) >= self.half.load(Ordering::Relaxed) {
            // Rotate: forget the previous filter (the words it used: those past them are
            // zero), size it anew where the ghost grows, mark into it from now on.
            cur ^= 1;
            let held = held();
            let words = self.bits(cur) / 64;
            self.filters[cur][..words].iter().for_each(|w| w.store(0, Ordering::Relaxed));
            if self.grows {
                let bits = filter_bits(held).min(self.most_bits);
                self.masks[cur].store(bits as u64 - 1, Ordering::Relaxed);
                self.peak_bits.fetch_max(bits + self.bits(cur ^ 1), Ordering::Relaxed);
            }
            self.current.store(cur, Ordering::Relaxed);
            self.marked.store(0, Ordering::Relaxed);
            self.half.store((held * self.percent / 100 / 2).max(MIN_HALF), Ordering::Relaxed);
        }
        let (f, mask) = (&self.filters[cur], self.masks[cur].load(Ordering::Relaxed));
        for b in Ghost::probes(hash, mask) {
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
        // 2,500 items held, 40% of them: 1,000 keys remembered.
        for g in [Ghost::new(10_000, 40).unwrap(), Ghost::growing(10_000, 40).unwrap()] {
            for i in 0..10_000 {
                g.mark(hash(i), || 2_500);
            }
            // The last 500 (at least) are remembered; those 2,000 back are gone.
            assert!((9_500..10_000).all(|i| g.contains(hash(i))));
            let old = (0..8_000).filter(|&i| g.contains(hash(i))).count();
            assert!(old < 80, "{old} false positives among 8,000 forgotten keys");
        }
    }

    #[test]
    fn a_growing_ghost_follows_the_items_held_up_to_its_largest_size() {
        let most = 1 << 20;
        let g = Ghost::growing(most, 40).unwrap();
        // It starts at its size for 65,536 items: 327,680 bits a filter, rounded to 2^19.
        assert_eq!(g.bytes(), 2 * (1 << 19) / 8);
        let (mut next, mut remembered, mut before) = (0u64, 0usize, 0usize);
        for held in [100_000, 300_000, 1_500_000, 20_000] {
            // The current filter fills to the half it was given, then two rotations at these
            // items held size both filters for them, and two more pass what they remembered.
            let length = held * 40 / 100;
            for _ in 0..before + 6 * length {
                g.mark(hash(next), || held);
                next += 1;
            }
            for f in 0..2 {
                assert_eq!(g.bits(f), filter_bits(held.min(most)), "{held} items, filter {f}");
            }
            // What it remembers is a FIFO of about its length: the last half-length always.
            remembered = (next - length as u64 / 2..next).filter(|&i| g.contains(hash(i))).count();
            assert_eq!(remembered, length / 2, "{held} items");
            let gone = (next - 4 * length as u64..next - 2 * length as u64)
                .filter(|&i| g.contains(hash(i)))
                .count();
            // (Past `most` items each filter holds more keys than it was sized for.)
            if held <= most {
                assert!(gone < length / 50, "{gone} of {} forgotten keys remain", 2 * length);
            }
            before = length;
        }
        assert!(remembered > 0);
        // Its memory is the most both filters used together: the size for `most` items,
        // reached at 1.5M items held and kept (the pages stay resident) after it shrank.
        assert_eq!(g.bytes(), 2 * filter_bits(most) / 8);
        // A ghost of one size never moves.
        let fixed = Ghost::new(most, 40).unwrap();
        for i in 0..100_000 {
            fixed.mark(hash(i), || 1_000);
        }
        assert_eq!((fixed.bits(0), fixed.bits(1)), (filter_bits(most), filter_bits(most)));
        assert_eq!(fixed.bytes(), 2 * filter_bits(most) / 8);
    }
}
