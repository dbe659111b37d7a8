//! CLOCK (FIFO-reinsertion, second chance) with an n-bit access counter.
//!
//! Objects sit in a FIFO queue with a small counter that starts at 0. A hit increments the
//! counter, saturating at `2^bits - 1`. To evict, look at the oldest object: if its counter is
//! non-zero, decrement it and move the object to the newest end (it gets another lap);
//! otherwise evict it. With `bits = 1` this is the classic CLOCK, whose counter is the
//! reference bit. Moving the object to the newest end is the same as advancing a clock hand
//! past it. As libCacheSim's `Clock.c` (`n-bit-counter`, default 1).
//!
//! Each eviction is O(1) amortised: every lap past an object costs one decrement of a counter
//! that only hits can raise.

use super::list::{Arena, List};
use super::queue::{QueuePolicy, QueueRule};

/// CLOCK over a byte capacity.
pub type Clock = QueuePolicy<ClockRule>;

/// CLOCK's rule: a hit increments the object's counter (saturating); an eviction gives each
/// oldest object with a non-zero counter another lap, one decrement each, and evicts the
/// first whose counter is zero.
#[derive(Debug, Clone, Copy)]
pub struct ClockRule {
    max_freq: u16,
    bits: u32,
}

impl Clock {
    /// Classic CLOCK: one reference bit per object.
    pub fn new(capacity: u64) -> Self {
        Self::with_bits(capacity, 1)
    }

    /// CLOCK with a `bits`-bit counter per object (`1..=15`).
    pub fn with_bits(capacity: u64, bits: u32) -> Self {
        assert!((1..=15).contains(&bits), "counter bits must be 1..=15");
        Self::with_rule(capacity, ClockRule { max_freq: (1u16 << bits) - 1, bits })
    }
}

impl QueueRule for ClockRule {
    fn name(&self) -> String {
        if self.bits == 1 { "CLOCK".to_owned() } else { format!("CLOCK-{}bit", self.bits) }
    }

    fn on_hit(&mut self, _queue: &mut List, arena: &mut Arena, idx: u32) {
        let node = &mut arena[idx];
        node.meta = (node.meta + 1).min(self.max_freq);
    }

    fn victim(&mut self, queue: &mut List, arena: &mut Arena) -> u32 {
        loop {
            let idx = queue.oldest;
            let node = &mut arena[idx];
            if node.meta == 0 {
                return idx;
            }
            node.meta -= 1;
            queue.move_to_newest(arena, idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Clock;
    use crate::policy::Policy;
    use crate::policy::testutil::{assert_resident, expect_unit};

    #[test]
    fn one_bit() {
        let mut c = Clock::new(3);
        // 1 2 3 fill the cache (oldest first: 1 2 3); 1 hits and gets its bit.
        // 4: the oldest, 1, has its bit: clear it, move it to the newest end (2 3 1); 2 has
        // no bit: evict 2 → 3 1 4. 2 misses again: 3 has no bit, evict 3 → 1 4 2.
        // 1 hits (bit set); 5: 1 has its bit, clear and requeue (4 2 1); evict 4 → 2 1 5.
        expect_unit(&mut c, &[1, 2, 3, 1, 4, 2, 1, 5], "MMM H M M H M");
        assert_eq!(c.queue.keys(&c.arena), [5, 1, 2]);
        assert_resident(&c, &[1, 2, 5]);
    }

    #[test]
    fn two_bits_saturate_at_three() {
        let mut c = Clock::with_bits(2, 2);
        // 1 is hit four times: its counter saturates at 3. 2 is hit once (counter 1).
        // 3: 1 (3) → 2, requeue; 2 (1) → 0, requeue; 1 (2) → 1; 2 (0): evicted → 1 3.
        // 2 misses: 1 (1) → 0, requeue; 3 (0): evicted → 1 2. 1 hits.
        expect_unit(&mut c, &[1, 2, 1, 1, 1, 1, 2, 3, 2, 1], "MM HHHH H M M H");
        assert_resident(&c, &[1, 2]);
        assert_eq!(c.name(), "CLOCK-2bit");
    }
}
