//! S3-FIFO (Yang et al., SOSP '23): a small FIFO that filters one-hit wonders, a main FIFO
//! with reinsertion, and a ghost FIFO that remembers what the small queue evicted.
//!
//! ```text
//!  miss ──► small S (10% of bytes) ──evict: freq > 1──► main M (90%) ◄─┐ evict: freq > 0
//!   │          │ evict: freq ≤ 1                          │           └─ requeue, freq - 1
//!   │          ▼                                          ▼ evict: freq = 0
//!   │       ghost G (keys only, M's size in bytes)       gone
//!   └─ key in G ──► straight into M
//! ```
//!
//! - Every resident object has a frequency counter, 0 on insertion, incremented on each hit and
//!   capped at 3 (two bits).
//! - A miss whose key is in the ghost queue removes it from the ghost and inserts into M;
//!   any other miss inserts into S.
//! - To evict: if M holds more than its share or S is empty, evict from M, else from S.
//!   - From S: take the oldest object; if its frequency is above 1, move it to M (counter
//!     reset to 0) and look at the next one; otherwise evict it, remember its key (and size) in
//!     G, and stop.
//!   - From M: take the oldest object; if its frequency is above 0, decrement it and move the
//!     object to M's newest end (CLOCK-like); otherwise evict it and stop.
//! - G is a FIFO of keys whose recorded sizes total at most M's capacity in bytes, so it
//!   remembers about as many objects as M holds (exactly as many, for unit sizes). Ghost
//!   entries cost no cache capacity.
//!
//! This follows libCacheSim's `S3FIFO.c` (small ratio 0.1, move-to-main threshold 2, ghost
//! ratio 0.9 ≈ M's share), with two simplifications, both of which match the paper's pseudo
//! code: (1) libCacheSim sends new objects straight to M while S is full and nothing has been
//! evicted yet (a warm-up tweak); we always insert into S. (2) libCacheSim refuses objects
//! whose size is *equal to or larger than* S's capacity; we refuse only those larger than S's
//! capacity (an object must fit in S, where it starts).
//!
//! A removed ghost entry is left in the ghost FIFO as a tombstone (its sequence number no
//! longer matches the map) and skipped when it reaches the front; tombstones are compacted
//! away when they outnumber live entries.

use std::collections::VecDeque;

use super::hash::KeyMap;
use super::list::{Arena, List};
use super::{Access, Policy};

/// `Node::tag` of an object in the small queue.
const SMALL: u16 = 0;
/// `Node::tag` of an object in the main queue.
const MAIN: u16 = 1;
/// Frequencies saturate here (a 2-bit counter).
const MAX_FREQ: u16 = 3;
/// An object leaves S for M when its frequency is above this.
const MOVE_TO_MAIN_ABOVE: u16 = 1;

/// S3-FIFO over a byte capacity.
#[derive(Debug)]
pub struct S3Fifo {
    capacity: u64,
    small_capacity: u64,
    main_capacity: u64,
    map: KeyMap<u32>,
    arena: Arena,
    small: List,
    main: List,
    ghost: Ghost,
}

/// A FIFO of recently evicted keys, bounded by the total of their sizes.
#[derive(Debug)]
struct Ghost {
    capacity: u64,
    bytes: u64,
    /// key → sequence number of its live entry in `queue`.
    live: KeyMap<u64>,
    /// (key, size, sequence number), oldest first; includes tombstones.
    queue: VecDeque<(u64, u32, u64)>,
    next_seq: u64,
}

impl Ghost {
    fn new(capacity: u64) -> Self {
        Self { capacity, bytes: 0, live: KeyMap::default(), queue: VecDeque::new(), next_seq: 0 }
    }

    /// Forgets `key`; returns whether it was remembered.
    fn remove(&mut self, key: u64) -> bool {
        let Some(seq) = self.live.remove(&key) else {
            return false;
        };
        // The entry stays in the queue as a tombstone; find its size to keep `bytes` right.
        // Entries are in sequence order, so a binary search finds it.
        let pos = self.queue.partition_point(|&(_, _, s)| s < seq);
        self.bytes -= u64::from(self.queue[pos].1);
        if self.queue.len() > 2 * self.live.len() + 64 {
            let live = &self.live;
            self.queue.retain(|&(k, _, s)| live.get(&k) == Some(&s));
        }
        true
    }

    fn insert(&mut self, key: u64, size: u32) {
        if u64::from(size) > self.capacity {
            return;
        }
        while self.bytes + u64::from(size) > self.capacity {
            let (k, sz, seq) = self.queue.pop_front().expect("bytes > 0 means live entries");
            if self.live.get(&k) == Some(&seq) {
                self.live.remove(&k);
                self.bytes -= u64::from(sz);
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push_back((key, size, seq));
        self.live.insert(key, seq);
        self.bytes += u64::from(size);
    }
}

impl S3Fifo {
    /// S3-FIFO with a small queue of 10% of `capacity` (rounded down), as in the paper.
    pub fn new(capacity: u64) -> Self {
        Self::with_small_ratio(capacity, 0.1)
    }

    /// S3-FIFO with a small queue of `small_ratio` of `capacity` (rounded down).
    pub fn with_small_ratio(capacity: u64, small_ratio: f64) -> Self {
        assert!((0.0..1.0).contains(&small_ratio), "small ratio in [0, 1)");
        let small_capacity = (capacity as f64 * small_ratio) as u64;
        let main_capacity = capacity - small_capacity;
        Self {
            capacity,
            small_capacity,
            main_capacity,
            map: KeyMap::default(),
            arena: Arena::new(),
            small: List::default(),
            main: List::default(),
            ghost: Ghost::new(main_capacity),
        }
    }

    fn used_bytes(&self) -> u64 {
        self.small.bytes + self.main.bytes
    }

    fn evict_one(&mut self) {
        if self.main.bytes > self.main_capacity || self.small.len == 0 {
            self.evict_main();
        } else {
            self.evict_small();
        }
    }

    /// Evicts one object from S, moving frequently used ones to M on the way. May end without
    /// evicting if everything in S moved to M; the caller's loop then evicts from M.
    fn evict_small(&mut self) {
        while self.small.len > 0 {
            let idx = self.small.oldest;
            self.small.unlink(&mut self.arena, idx);
            let node = &mut self.arena[idx];
            if node.meta > MOVE_TO_MAIN_ABOVE {
                node.meta = 0;
                node.tag = MAIN;
                self.main.push_newest(&mut self.arena, idx);
            } else {
                let (key, size) = (node.key, node.size);
                self.ghost.insert(key, size);
                self.map.remove(&key);
                self.arena.free(idx);
                return;
            }
        }
    }

    /// Evicts one object from M, giving objects with a non-zero frequency another lap.
    fn evict_main(&mut self) {
        loop {
            let idx = self.main.oldest;
            let node = &mut self.arena[idx];
            if node.meta > 0 {
                node.meta -= 1;
                self.main.move_to_newest(&mut self.arena, idx);
            } else {
                self.main.unlink(&mut self.arena, idx);
                self.map.remove(&self.arena[idx].key);
                self.arena.free(idx);
                return;
            }
        }
    }

    fn shrink_to_fit(&mut self, incoming: u64) {
        while self.used_bytes() + incoming > self.capacity && self.len() > 0 {
            self.evict_one();
        }
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> String {
        "S3-FIFO".to_owned()
    }

    fn access(&mut self, a: &Access) -> bool {
        if let Some(&idx) = self.map.get(&a.key) {
            let node = &mut self.arena[idx];
            node.meta = (node.meta + 1).min(MAX_FREQ);
            if node.size != a.size {
                let queue = if node.tag == SMALL { &mut self.small } else { &mut self.main };
                queue.set_size(&mut self.arena, idx, a.size);
                self.shrink_to_fit(0);
            }
            return true;
        }
        let was_ghost = self.ghost.remove(a.key);
        if u64::from(a.size) > self.small_capacity {
            return false;
        }
        self.shrink_to_fit(u64::from(a.size));
        let idx = self.arena.alloc(a.key, a.size);
        if was_ghost {
            self.arena[idx].tag = MAIN;
            self.main.push_newest(&mut self.arena, idx);
        } else {
            self.arena[idx].tag = SMALL;
            self.small.push_newest(&mut self.arena, idx);
        }
        self.map.insert(a.key, idx);
        false
    }

    fn remove(&mut self, a: &Access) -> bool {
        let Some(idx) = self.map.remove(&a.key) else { return false };
        match self.arena[idx].tag {
            SMALL => self.small.unlink(&mut self.arena, idx),
            _ => self.main.unlink(&mut self.arena, idx),
        }
        self.arena.free(idx);
        true
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.used_bytes()
    }

    fn len(&self) -> usize {
        self.small.len + self.main.len
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|&idx| self.arena[idx].size)
    }

    #[cfg(test)]
    fn validate(&self) {
        self.small.validate(&self.arena);
        self.main.validate(&self.arena);
        assert_eq!(self.map.len(), self.len());
        assert_eq!(self.arena.live(), self.len());
        assert!(self.used_bytes() <= self.capacity);
        for &idx in self.map.values() {
            assert!(self.arena[idx].meta <= MAX_FREQ);
            assert!(!self.ghost.live.contains_key(&self.arena[idx].key));
        }
        assert!(self.ghost.bytes <= self.ghost.capacity);
        let live_bytes: u64 = self
            .ghost
            .queue
            .iter()
            .filter(|(k, _, s)| self.ghost.live.get(k) == Some(s))
            .map(|&(_, sz, _)| u64::from(sz))
            .sum();
        assert_eq!(live_bytes, self.ghost.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::S3Fifo;
    use crate::policy::Policy;
    use crate::policy::testutil::{assert_resident, expect_sized, expect_unit};

    #[test]
    fn small_main_ghost() {
        // Capacity 10: S holds 1 object, M 9, G remembers 9 keys.
        let mut c = S3Fifo::new(10);
        assert_eq!((c.small_capacity, c.main_capacity), (1, 9));
        // 1 enters S and hits twice (freq 2). 2..=10 also enter S: S is over its share, but
        // nothing is evicted while the whole cache has room.
        expect_unit(&mut c, &[1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "M HH MMMMMMMMM");
        assert_eq!(c.small.len, 10);
        // 11: the cache is full. M is empty, S is not: evict from S. The oldest, 1, has freq 2
        // > 1: move it to M. Next, 2 (freq 0): evict it to the ghost. 11 enters S.
        expect_unit(&mut c, &[11], "M");
        assert_eq!(c.main.keys(&c.arena), [1]);
        assert!(!c.contains(2) && c.ghost.live.contains_key(&2));
        // 2 again: a ghost hit. Evict from S again (3 → ghost), then 2 goes straight to M.
        expect_unit(&mut c, &[2], "M");
        assert_eq!(c.main.keys(&c.arena), [2, 1]);
        assert!(!c.ghost.live.contains_key(&2) && c.ghost.live.contains_key(&3));
        assert_resident(&c, &[1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
        c.validate();
    }

    #[test]
    fn main_reinsertion_decrements() {
        // Capacity 4 with S = 1 byte, M = 3, G = 3 bytes.
        let mut c = S3Fifo::with_small_ratio(4, 0.25);
        assert_eq!((c.small_capacity, c.main_capacity), (1, 3));
        // 1..=4 fill the cache, all in S. 5, 6, 7 each evict S's oldest (freq 0) to G:
        // S = 4 5 6 7 (oldest first), G = 1 2 3.
        expect_unit(&mut c, &[1, 2, 3, 4, 5, 6, 7], "MMMM MMM");
        // 1, 2, 3 are ghost hits: each evicts S's oldest to G and goes into M.
        // M = 1 2 3, S = 7, G = 4 5 6.
        expect_unit(&mut c, &[1, 2, 3], "MMM");
        assert_eq!(c.main.keys(&c.arena), [3, 2, 1]);
        assert_eq!(c.small.keys(&c.arena), [7]);
        // 1 hits twice (freq 2), 2 once (freq 1). 8: S is not empty and M is within its share,
        // so evict from S: 7 (freq 0) goes to G, which drops 4. 8 hits twice (freq 2).
        expect_unit(&mut c, &[1, 1, 2, 8, 8, 8], "HHH M HH");
        assert!(c.ghost.live.contains_key(&7) && !c.ghost.live.contains_key(&4));
        // 9: evict from S: 8 has freq 2 > 1, so it moves to M (freq 0) and S is empty.
        // Still no room, and M is over its share: evict from M. 1 (freq 2): requeue with
        // freq 1. 2 (freq 1): requeue with freq 0. 3 (freq 0): evicted, not to the ghost.
        expect_unit(&mut c, &[9], "M");
        assert_eq!(c.main.keys(&c.arena), [2, 1, 8]);
        assert_eq!(c.small.keys(&c.arena), [9]);
        let freq = |k: u64| c.arena[c.map[&k]].meta;
        assert_eq!((freq(1), freq(2), freq(8)), (1, 0, 0));
        assert!(!c.ghost.live.contains_key(&3));
        assert_resident(&c, &[1, 2, 8, 9]);
        // Frequencies saturate at 3.
        expect_unit(&mut c, &[1, 1, 1, 1], "HHHH");
        assert_eq!(c.arena[c.map[&1]].meta, 3);
    }

    #[test]
    fn too_large_for_small_queue() {
        let mut c = S3Fifo::new(100);
        // S is 10 bytes: an 11-byte object is never admitted, a 10-byte one is.
        expect_sized(&mut c, &[(1, 11), (1, 11), (2, 10), (2, 10)], "MM MH");
        assert_resident(&c, &[2]);
    }
}
