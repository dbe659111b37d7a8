//! A DRAM cache in front of main memory, as in the stacked-DRAM thesis (ch. 3–4): a
//! direct-mapped Alloy cache (Qureshi and Loh, MICRO 2012: tag and data of a line stored
//! together, read in one probe) or an N-way set-associative one, each with or without the
//! thesis's **priority lines** (§3.2): lines of values of at least a threshold (the thesis: 1
//! MB) are priority lines, which only priority lines may evict. A non-priority line whose set
//! holds only priority lines is not cached (the thesis: "a fill request is not generated").
//!
//! The thesis's benefit counter (Figure 4.13, §4.3.2.2) is kept as written, per set: a miss
//! of a non-priority line that left a priority line in place (no fill) arms the set; a later
//! hit on a priority line of an armed set counts one benefit and disarms it; any other miss
//! disarms it. For N ways "the set's line is priority" reads "every way is priority" (the
//! only case in which a non-priority miss does not evict).
//!
//! Departures: capacity is counted in 64-byte data lines (Alloy stores 72-byte tag-and-data
//! units, 28 to a 2 KB row, so a real Alloy cache of the same size holds 8/9 as many lines);
//! addresses are the simulator's virtual addresses (the thesis's hardware sees physical
//! ones); the associative cache is simulated in full (the thesis estimated it from counters
//! inside a direct-mapped one); and the thesis's shadow "associativity counter" is not kept,
//! since the associative models' hit rates are measured directly.

use super::cpu::{Outcome, SetAssoc};

/// One DRAM-cache configuration.
#[derive(Debug, Clone)]
pub struct DramCache {
    lines: SetAssoc,
    /// Whether priority lines are on.
    priority: bool,
    /// Figure 4.13's `pBenefit`, one per set (empty without priority lines).
    armed: Vec<bool>,
    /// Figure 4.13's `count`.
    benefit: u64,
    /// Non-priority misses not cached because their set held only priority lines.
    bypassed: u64,
}

impl DramCache {
    /// A cache of `bytes` bytes in sets of `ways` lines (1: direct-mapped, Alloy-style), with
    /// or without priority lines.
    pub fn new(bytes: u64, ways: usize, priority: bool) -> DramCache {
        let lines = SetAssoc::new(bytes, ways);
        let armed = if priority { vec![false; lines.sets() as usize] } else { Vec::new() };
        DramCache { lines, priority, armed, benefit: 0, bypassed: 0 }
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.lines.ways()
    }

    /// Whether priority lines are on.
    pub fn priority(&self) -> bool {
        self.priority
    }

    /// Bytes of lines the cache holds.
    pub fn bytes(&self) -> u64 {
        self.lines.bytes()
    }

    /// Figure 4.13's counter: hits on priority lines that a non-priority miss would have
    /// evicted without the rule.
    pub fn benefit(&self) -> u64 {
        self.benefit
    }

    /// Non-priority misses left uncached by the rule.
    pub fn bypassed(&self) -> u64 {
        self.bypassed
    }

    /// Accesses line number `line`, a priority line if `is_priority`; returns whether it hit.
    #[inline]
    pub fn access(&mut self, line: u64, is_priority: bool) -> bool {
        if !self.priority {
            return self.lines.access(line, None) == Outcome::Hit;
        }
        let set = self.lines.set_of(line) as usize;
        match self.lines.access(line, Some(is_priority)) {
            Outcome::Hit => {
                if is_priority && self.armed[set] {
                    self.armed[set] = false;
                    self.benefit += 1;
                }
                true
            }
            Outcome::Bypassed => {
                self.armed[set] = true;
                self.bypassed += 1;
                false
            }
            Outcome::Filled => {
                self.armed[set] = false;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benefit_counter_follows_figure_4_13() {
        // Direct-mapped, 4 sets. Priority line 0 in set 0; line 4 (not priority) misses and
        // is not cached: the set is armed; the next hit on 0 counts one benefit.
        let mut c = DramCache::new(256, 1, true);
        assert!(!c.access(0, true));
        assert!(!c.access(4, false));
        assert_eq!(c.bypassed(), 1);
        assert!(c.access(0, true));
        assert_eq!(c.benefit(), 1);
        // Disarmed: another hit counts nothing.
        assert!(c.access(0, true));
        assert_eq!(c.benefit(), 1);
        // A miss that fills disarms: arm, then a priority fill elsewhere in the set.
        assert!(!c.access(4, false));
        assert!(!c.access(8, true));
        assert!(c.access(8, true));
        assert_eq!(c.benefit(), 1, "the fill in between disarmed the set");
    }

    #[test]
    fn without_priority_a_large_value_is_evicted_by_small_ones() {
        let mut plain = DramCache::new(256, 1, false);
        let mut prio = DramCache::new(256, 1, true);
        for c in [&mut plain, &mut prio] {
            c.access(0, true);
            c.access(4, false);
        }
        assert!(!plain.access(0, true), "evicted by line 4");
        assert!(prio.access(0, true), "kept: only a priority line may evict it");
        assert_eq!(plain.benefit(), 0);
    }
}
