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

#[cfg(test)]
use super::hash::KeyMap;
use super::list::{Arena, List, NIL};
use super::queue::{QueuePolicy, QueueRule};

/// SIEVE over a byte capacity.
pub type Sieve = QueuePolicy<SieveRule>;

/// SIEVE's rule: a hit sets the visited bit; an eviction walks the hand.
#[derive(Debug, Clone, Copy)]
pub struct SieveRule {
    /// The next object to examine, or `NIL` to start from the oldest.
    hand: u32,
}

impl Sieve {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub fn new(capacity: u64) -> Self {
        Self::with_rule(capacity, SieveRule { hand: NIL })
    }
}

impl QueueRule for SieveRule {
    fn name(&self) -> String {
        "SIEVE".to_owned()
    }

    fn on_hit(&mut self, _queue: &mut List, arena: &mut Arena, idx: u32) {
        arena[idx].meta = 1;
    }

    fn on_remove(&mut self, _queue: &List, arena: &Arena, idx: u32) {
        if self.hand == idx {
            self.hand = arena[idx].newer;
        }
    }

    fn victim(&mut self, queue: &mut List, arena: &mut Arena) -> u32 {
        let mut idx = if self.hand == NIL { queue.oldest } else { self.hand };
        while arena[idx].meta != 0 {
            arena[idx].meta = 0;
            idx = match arena[idx].newer {
                NIL => queue.oldest,
                newer => newer,
            };
        }
        self.hand = arena[idx].newer;
        idx
    }

    #[cfg(test)]
    fn validate(&self, map: &KeyMap<u32>, arena: &Arena) {
        if self.hand != NIL {
            assert_eq!(map.get(&arena[self.hand].key), Some(&self.hand));
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
