//! SIEVE (Zhang et al., NSDI '24): a FIFO queue with a visited bit and a moving hand.
//!
//! New objects enter at the newest end with the visited bit clear; a hit only sets the bit.
//! To evict, the hand (starting at the oldest object the first time) walks towards the newest
//! end, clearing visited bits as it goes, and evicts the first object whose bit was already
//! clear. The hand then stays where it stopped (at the evicted object's newer neighbour) for
//! the next eviction; when it runs off the newest end it wraps to the oldest. Unlike CLOCK,
//! survivors are never moved, so new objects stay near the newest end and one-hit wonders are
//! evicted quickly. As libCacheSim's `Sieve.c`.
//!
//! Each eviction is O(1) amortised: the hand clears one bit per step and only hits set them.

use super::hash::KeyMap;
use super::list::{Arena, List, NIL};
use super::{Access, Policy};

/// SIEVE over a byte capacity.
#[derive(Debug)]
pub struct Sieve {
    capacity: u64,
    map: KeyMap<u32>,
    arena: Arena,
    queue: List,
    /// The next object to examine, or `NIL` to start from the oldest.
    hand: u32,
}

impl Sieve {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            map: KeyMap::default(),
            arena: Arena::new(),
            queue: List::default(),
            hand: NIL,
        }
    }

    fn evict_one(&mut self) {
        let mut idx = if self.hand == NIL { self.queue.oldest } else { self.hand };
        while self.arena[idx].meta != 0 {
            self.arena[idx].meta = 0;
            idx = match self.arena[idx].newer {
                NIL => self.queue.oldest,
                newer => newer,
            };
        }
        self.hand = self.arena[idx].newer;
        self.queue.unlink(&mut self.arena, idx);
        self.map.remove(&self.arena[idx].key);
        self.arena.free(idx);
    }

    fn shrink_to_fit(&mut self, incoming: u64) {
        while self.queue.bytes + incoming > self.capacity && self.queue.len > 0 {
            self.evict_one();
        }
    }
}

impl Policy for Sieve {
    fn name(&self) -> String {
        "SIEVE".to_owned()
    }

    fn access(&mut self, a: &Access) -> bool {
        if let Some(&idx) = self.map.get(&a.key) {
            self.arena[idx].meta = 1;
            if self.arena[idx].size != a.size {
                self.queue.set_size(&mut self.arena, idx, a.size);
                self.shrink_to_fit(0);
            }
            return true;
        }
        if u64::from(a.size) > self.capacity {
            return false;
        }
        self.shrink_to_fit(u64::from(a.size));
        let idx = self.arena.alloc(a.key, a.size);
        self.queue.push_newest(&mut self.arena, idx);
        self.map.insert(a.key, idx);
        false
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.queue.bytes
    }

    fn len(&self) -> usize {
        self.queue.len
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    #[cfg(test)]
    fn validate(&self) {
        self.queue.validate(&self.arena);
        assert_eq!(self.map.len(), self.queue.len);
        assert_eq!(self.arena.live(), self.queue.len);
        assert!(self.queue.bytes <= self.capacity);
        if self.hand != NIL {
            assert_eq!(self.map.get(&self.arena[self.hand].key), Some(&self.hand));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Sieve;
    use crate::policy::testutil::{assert_resident, expect_unit};

    #[test]
    fn hand_stays_put() {
        let mut c = Sieve::new(3);
        // 1 2 3 fill the cache (oldest first: 1 2 3). 1 and 2 hit (visited).
        // 4: hand starts at 1: visited → clear; 2: visited → clear; 3: evict. Hand → 3's newer
        //    neighbour, none: it will wrap. Queue 1 2 4.
        // 5: hand wraps to 1 (clear): evict 1; hand → 2. Queue 2 4 5.
        // 2 hits (visited again). 6: hand at 2: clear; 4: evict; hand → 5. Queue 2 5 6.
        // 7: hand at 5 (not visited): evict 5. Queue 2 6 7: 2 survives, unlike FIFO.
        expect_unit(&mut c, &[1, 2, 3, 1, 2, 4, 5, 2, 6, 7], "MMM HH M M H M M");
        assert_eq!(c.queue.keys(&c.arena), [7, 6, 2]);
        assert_resident(&c, &[2, 6, 7]);
    }
}
