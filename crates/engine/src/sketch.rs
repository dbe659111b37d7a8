//! The frequency sketch of S3-FIFO's queues: TinyLFU's count-min sketch of 4-bit counters
//! with periodic halving (Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache
//! Admission Policy", ACM ToS 2017: its *reset*), with conservative update (an increment
//! raises only the key's counters that hold its minimum: the paper's "minimal increment"),
//! laid out as Caffeine's `FrequencySketch`: a key's four counters lie in one 64-byte block,
//! so counting or estimating a key touches one cache line.
//!
//! It counts the reference pools' digests (GET hits and SETs, `crate::metadata`) and answers,
//! for a digest, how often its key was referenced lately: the least of its four counters
//! (0–15). After ten references per item the cache holds (the cleaner tells it, once per
//! pass; until then, per item it was sized for), every counter is halved, so an estimate
//! follows the recent past (TinyLFU's *reset*; its sample of W = 10 × the cache's items).
//!
//! The cleaner promotes from the small queue an item whose estimate reaches
//! [`crate::Queues::promote_estimate`] even if it was not read while on probation: a
//! key requested often over a longer past than the small queue's (`docs/design.md`,
//! "Eviction: S3-FIFO's queues made of segments").
//!
//! ```text
//!  digest ─ splitmix64 ─► block (8 words of 16 counters) ─► 4 counters, one per word pair
//!  count:    raise those of the 4 that hold the least (up to 15); every 10 × items counts,
//!            halve all
//!  estimate: the least of the 4
//! ```

use std::sync::atomic::AtomicBool;

use crate::arena::Words;
use crate::metadata::{Structure, Temperature};

/// Counters per key.
const DEPTH: usize = 4;
/// Words (16 counters each) per block: a key's counters lie in one 64-byte block.
const BLOCK_WORDS: usize = 8;
/// References counted per item the cache holds, between halvings (TinyLFU's W/C).
const SAMPLE_PER_ITEM: usize = 10;
/// Digests looked ahead while a pool is applied (their blocks prefetched).
const PREFETCH_AHEAD: usize = 8;
/// The fewest items a sample is counted for ([`Sketch::set_items`]).
const MIN_SAMPLE_ITEMS: usize = 64;

/// A count-min sketch of 4-bit counters.
#[derive(Debug)]
pub struct Sketch {
    /// 16 counters per word, a key's four in one block of [`BLOCK_WORDS`] words, in a
    /// mapping advised for transparent huge pages: a pool's references land on random blocks
    /// of a table of megabytes, and in 4 KiB pages nearly each one missed the TLB as well as
    /// the caches (`docs/design.md`, "A frequency sketch").
    table: Words,
    /// Blocks, less one (a power of two).
    block_mask: usize,
    /// Counts since the last halving.
    size: usize,
    /// Counts between halvings.
    sample: usize,
    halvings: u64,
    /// Bits per item the table is sized at, and the most words it may grow to
    /// ([`Sketch::growing`]; its size from the start otherwise).
    bits_per_item: usize,
    most_words: usize,
}

/// Items a growing sketch is sized for at first ([`Sketch::growing`]).
const GROW_FROM_ITEMS: usize = 1 << 16;

/// Words of a table for `items` items at `bits_per_item` bits: a power of two, at least a block.
fn words_for(items: usize, bits_per_item: usize) -> usize {
    (items.saturating_mul(bits_per_item) / 64).max(BLOCK_WORDS).next_power_of_two()
}

impl Sketch {
    /// A sketch for about `items` items at `bits_per_item` bits each (32: a 16-counter word
    /// for every two items), rounded up to a power of two words and at least one block; an
    /// error if its table cannot be mapped.
    pub fn for_items(items: usize, bits_per_item: usize) -> std::io::Result<Sketch> {
        let words = words_for(items, bits_per_item);
        Ok(Sketch {
            table: Words::zeroed(words)?,
            block_mask: words / BLOCK_WORDS - 1,
            size: 0,
            sample: items.max(1).saturating_mul(SAMPLE_PER_ITEM),
            halvings: 0,
            bits_per_item,
            most_words: words,
        })
    }

    /// A sketch that starts at the size of [`Sketch::for_items`] for a few items (65,536, or
    /// `most_items` if fewer) and grows with the items the cache holds ([`Sketch::set_items`])
    /// up to that size for `most_items`: a server sizes for one item per 64 bytes of its
    /// memory, which a cache of larger items never holds, and a table of 32 bits per such item
    /// would be 1/16 of the memory. An error if its table cannot be mapped.
    pub fn growing(most_items: usize, bits_per_item: usize) -> std::io::Result<Sketch> {
        let first = most_items.min(GROW_FROM_ITEMS);
        let mut s = Sketch::for_items(first, bits_per_item)?;
        s.most_words = words_for(most_items, bits_per_item);
        Ok(s)
    }

    /// A copy of the sketch (benchmarks start each run from one); an error if its table
    /// cannot be mapped.
    pub fn try_clone(&self) -> std::io::Result<Sketch> {
        let table = self.table.try_clone()?;
        let Sketch { block_mask, size, sample, halvings, bits_per_item, most_words, .. } = *self;
        Ok(Sketch { table, block_mask, size, sample, halvings, bits_per_item, most_words })
    }

    /// Follows the items the cache holds now: counters are halved every ten references per
    /// item held (at least 64), whatever the table was sized for. A cache of items larger
    /// than it expected holds fewer, and a past of ten references per expected item would be
    /// many times the cache's: estimates would saturate and promote nearly every key that
    /// came back. A [growing](Sketch::growing) sketch also grows to its size for `items`
    /// (never shrinks, never past its largest), each estimate unchanged.
    pub fn set_items(&mut self, items: usize) {
        self.sample = items.max(MIN_SAMPLE_ITEMS).saturating_mul(SAMPLE_PER_ITEM);
        if self.size >= self.sample {
            self.halve();
        }
        let want = words_for(items, self.bits_per_item).min(self.most_words);
        if want > self.table.len() {
            // Without memory for the larger table the sketch keeps its size: estimates of a
            // smaller table, never an error on the cleaner's path.
            let _ = self.grow(want);
        }
    }

    /// Grows the table to `words` (a power of two, a multiple of its length) by copies of
    /// itself: a key's block is its hash's low bits, so in the larger table it is one of the
    /// copies of the block it had, and every estimate stays what it was.
    fn grow(&mut self, words: usize) -> std::io::Result<()> {
        let mut table = Words::zeroed(words)?;
        for copy in table.chunks_mut(self.table.len()) {
            copy.copy_from_slice(&self.table);
        }
        self.table = table;
        self.block_mask = words / BLOCK_WORDS - 1;
        Ok(())
    }

    /// Bytes of the table.
    pub fn bytes(&self) -> usize {
        self.table.len() * 8
    }

    /// The first word of `digest`'s block.
    #[inline]
    fn block(&self, h: u64) -> usize {
        (h as usize & self.block_mask) * BLOCK_WORDS
    }

    /// The word and the shift of each of the key's four counters: row `i` takes word `i` or
    /// `i + 4` of the block and one of its 16 counters, by its own byte of the hash.
    #[inline]
    fn counters(&self, digest: u32) -> [(usize, u32); DEPTH] {
        let h = spread(digest & !1);
        let block = self.block(h);
        std::array::from_fn(|i| {
            let bits = (h >> (32 + 8 * i)) as u32;
            (block + i + 4 * (bits as usize & 1), ((bits >> 1) & 15) * 4)
        })
    }

    /// Counts one reference of `digest`'s key (bit 0, the SET mark, is ignored).
    pub fn increment(&mut self, digest: u32) {
        let counters = self.counters(digest);
        let value = |table: &[u64], (word, shift): (usize, u32)| (table[word] >> shift) & 15;
        let least = counters.iter().map(|&c| value(&self.table, c)).min().unwrap_or(0);
        if least == 15 {
            return;
        }
        for c in counters {
            if value(&self.table, c) == least {
                self.table[c.0] += 1 << c.1;
            }
        }
        self.size += 1;
        if self.size >= self.sample {
            self.halve();
        }
    }

    /// The estimated references of `digest`'s key lately (0–15): never fewer than were
    /// counted since the last halving (up to 15), more where other keys share all four of its
    /// counters.
    pub fn estimate(&self, digest: u32) -> u8 {
        let counters = self.counters(digest);
        counters
            .iter()
            .map(|&(word, shift)| ((self.table[word] >> shift) & 15) as u8)
            .min()
            .unwrap_or(0)
    }

    /// Counts a reference pool, fetching the blocks of the digests a few ahead of the one
    /// being counted (a pool's blocks are random lines of a table larger than the caches).
    pub fn append_pool(&mut self, digests: &[u32]) {
        for (i, &d) in digests.iter().enumerate() {
            if let Some(&ahead) = digests.get(i + PREFETCH_AHEAD) {
                let block = self.block(spread(ahead & !1));
                crate::index::prefetch(self.table[block..].as_ptr());
            }
            self.increment(d);
        }
    }

    /// Halves every counter (TinyLFU's reset).
    fn halve(&mut self) {
        for w in self.table.iter_mut() {
            *w = (*w >> 1) & 0x7777_7777_7777_7777;
        }
        self.size /= 2;
        self.halvings += 1;
    }
}

/// splitmix64's finaliser: spreads a 32-bit digest over the word (the low bits pick the
/// block, the high bytes the counters).
#[inline]
fn spread(digest: u32) -> u64 {
    let mut x = u64::from(digest).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Structure for Sketch {
    fn append(&mut self, digests: &[u32], _compacting: &AtomicBool) {
        self.append_pool(digests);
    }

    fn zones(&mut self, digests: &[u32], out: &mut Vec<Temperature>) {
        out.clear();
        out.extend(digests.iter().map(|&d| Temperature { zone: self.estimate(d) }));
    }

    /// Bytes, the largest estimate (the zones a temperature query can answer, less zone 0)
    /// and the halvings done.
    fn shape(&mut self) -> (usize, usize, u64) {
        (self.bytes(), 15, self.halvings)
    }

    fn device(&self) -> String {
        "sketch".into()
    }

    const ESTIMATES: bool = true;

    fn set_items(&mut self, items: usize) {
        Sketch::set_items(self, items);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn counts_up_to_fifteen_and_halves() {
        let mut s = Sketch::for_items(1024, 64).unwrap();
        for _ in 0..20 {
            s.increment(42);
        }
        assert_eq!(s.estimate(42), 15);
        assert_eq!(s.estimate(44), 0);
        s.halve();
        assert_eq!(s.estimate(42), 7);
    }

    #[test]
    fn the_set_mark_is_the_same_key() {
        let mut s = Sketch::for_items(1024, 64).unwrap();
        s.increment(42);
        s.increment(43);
        assert_eq!(s.estimate(42), 2);
    }

    #[test]
    fn ten_counts_per_item_halve_the_counters() {
        let mut s = Sketch::for_items(64, 64).unwrap();
        for i in 0..639u32 {
            s.increment(i * 2);
        }
        assert_eq!(s.halvings, 0);
        s.increment(2_000);
        assert_eq!(s.halvings, 1);
        assert_eq!(s.size, 320);
    }

    #[test]
    fn a_copy_estimates_as_the_original_and_counts_on_its_own() {
        let mut s = Sketch::for_items(1024, 32).unwrap();
        for _ in 0..3 {
            s.increment(42);
        }
        let mut copy = s.try_clone().unwrap();
        assert_eq!((copy.estimate(42), copy.size, copy.sample), (3, 3, s.sample));
        copy.increment(42);
        assert_eq!((copy.estimate(42), s.estimate(42)), (4, 3));
    }

    #[test]
    fn the_past_follows_the_items_held() {
        let mut s = Sketch::for_items(1 << 16, 32).unwrap();
        for i in 0..1_000u32 {
            s.increment(i * 2);
        }
        assert_eq!(s.halvings, 0, "sized for 65,536 items: 655,360 counts a sample");
        // Ten items held count as 64, the fewest a sample is counted for: 640 counts a
        // sample, already past.
        s.set_items(10);
        assert_eq!((s.halvings, s.size), (1, 500));
        for i in 0..140u32 {
            s.increment(i * 2 + 100_000);
        }
        assert_eq!(s.halvings, 2);
    }

    /// Count-min: an estimate is never below the key's count (until a halving), and with
    /// conservative update few keys are overestimated much even at 2 bits an item.
    #[test]
    fn estimates_bound_the_counts_from_above() {
        let items = 4096;
        let mut s = Sketch::for_items(items, 32).unwrap();
        let mut truth: HashMap<u32, u8> = HashMap::new();
        let mut x = 7u64;
        // Fewer counts than a sample, so nothing halves; a skewed stream over 8 × items keys.
        for _ in 0..items * 9 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = (x % 1_000_000) as f64 / 1_000_000.0;
            let key = ((r * r * r) * (items * 8) as f64) as u32 * 2;
            s.increment(key);
            let t = truth.entry(key).or_default();
            *t = (*t + 1).min(15);
        }
        assert_eq!(s.halvings, 0);
        let mut over = 0;
        for (&key, &count) in &truth {
            let e = s.estimate(key);
            assert!(e >= count, "key {key}: estimate {e} below its count {count}");
            over += usize::from(e > count + 2);
        }
        assert!(
            over * 20 < truth.len(),
            "{over} of {} keys overestimated by 3 or more",
            truth.len()
        );
    }

    #[test]
    fn a_growing_sketch_grows_with_the_items_held_and_keeps_every_estimate() {
        let mut s = Sketch::growing(1 << 20, 32).unwrap();
        assert_eq!(s.bytes(), (1 << 16) * 32 / 8, "sized for 65,536 items at first");
        let mut x = 11u64;
        let keys: Vec<u32> = (0..50_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x as u32) & !1
            })
            .collect();
        for (i, &k) in keys.iter().enumerate() {
            for _ in 0..i % 5 {
                s.increment(k);
            }
        }
        let before: Vec<u8> = keys.iter().map(|&k| s.estimate(k)).collect();
        s.set_items(300_000);
        assert_eq!(s.bytes(), (1 << 18) * 8, "300,000 items at 32 bits, rounded up: 2^18 words");
        assert_eq!(keys.iter().map(|&k| s.estimate(k)).collect::<Vec<_>>(), before);
        s.set_items(50_000_000);
        assert_eq!(s.bytes(), (1 << 20) * 32 / 8, "never past its size for its most items");
        assert_eq!(keys.iter().map(|&k| s.estimate(k)).collect::<Vec<_>>(), before);
        s.set_items(100);
        assert_eq!(s.bytes(), (1 << 20) * 32 / 8, "never shrinks");
        let mut fixed = Sketch::for_items(1 << 16, 32).unwrap();
        fixed.set_items(1 << 20);
        assert_eq!(fixed.bytes(), (1 << 16) * 32 / 8, "a sketch for_items keeps its size");
    }
}
