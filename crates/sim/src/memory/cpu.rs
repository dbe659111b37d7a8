//! A set-associative cache of 64-byte lines with LRU replacement: the CPU's L2 and L3, and
//! the storage of the DRAM-cache models ([`super::dram`]), which add the thesis's priority
//! rule through [`SetAssoc::access`]'s `priority` argument.
//!
//! A set holds its ways in recency order, most recent first, so a hit moves a way to the
//! front and a fill drops the last; with 16 ways that is a shift of at most 16 words. A way
//! is the line's number (address / 64) plus one, 0 when empty, with [`PRIORITY_BIT`] set for
//! a priority line. Sets are chosen by the line number modulo the number of sets (real L3s
//! hash addresses to slices; a modulo is the textbook mapping and keeps hand-worked examples
//! checkable). Costs: 8 bytes per line of capacity (a 32 MiB L3: 4 MiB of model).

/// Bytes in a cache line.
pub const LINE: u64 = 64;
/// A way's bit that marks a priority line (line numbers stay far below it).
pub const PRIORITY_BIT: u64 = 1 << 63;

/// What one access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The line was present (now the most recent of its set).
    Hit,
    /// The line was absent and is now cached (evicting the set's least recent way that the
    /// rule allows, if the set was full).
    Filled,
    /// The line was absent and was not cached: every way of its set holds a priority line
    /// and it is not one (the thesis's rule, §3.2).
    Bypassed,
}

/// A set-associative LRU cache of 64-byte lines.
#[derive(Debug, Clone)]
pub struct SetAssoc {
    sets: u64,
    ways: usize,
    /// `sets × ways` ways, each set's most recent first.
    slots: Vec<u64>,
}

impl SetAssoc {
    /// A cache of `bytes` bytes in sets of `ways` lines (at least one set; `bytes` rounded
    /// down to whole sets).
    pub fn new(bytes: u64, ways: usize) -> SetAssoc {
        let ways = ways.max(1);
        let sets = (bytes / LINE / ways as u64).max(1);
        SetAssoc { sets, ways, slots: vec![0; sets as usize * ways] }
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.sets
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Bytes of lines the cache holds.
    pub fn bytes(&self) -> u64 {
        self.sets * self.ways as u64 * LINE
    }

    /// The set line number `line` maps to.
    #[inline]
    pub fn set_of(&self, line: u64) -> u64 {
        // A mask where the sets are a power of two (a division costs tens of cycles).
        if self.sets.is_power_of_two() { line & (self.sets - 1) } else { line % self.sets }
    }

    /// Whether `line` is cached (no recency change).
    pub fn contains(&self, line: u64) -> bool {
        let tag = line + 1;
        self.set(line).iter().any(|&w| w & !PRIORITY_BIT == tag)
    }

    /// Whether every way of `line`'s set holds a priority line.
    pub fn set_all_priority(&self, line: u64) -> bool {
        self.set(line).iter().all(|&w| w & PRIORITY_BIT != 0)
    }

    fn set(&self, line: u64) -> &[u64] {
        let start = self.set_of(line) as usize * self.ways;
        &self.slots[start..start + self.ways]
    }

    /// Accesses line number `line`. With `priority` `None` the cache is plain LRU. With
    /// `Some(p)` the thesis's rule applies (§3.2: "a priority cacheline can only be evicted
    /// by another priority cacheline, whereas a non-priority cacheline can be evicted by any
    /// cacheline"): the line is cached as priority if `p`; a priority line's fill evicts the
    /// least recent way, a non-priority line's fill the least recent non-priority way, and it
    /// is not cached ([`Outcome::Bypassed`]) when there is none. Empty ways are taken first.
    #[inline]
    pub fn access(&mut self, line: u64, priority: Option<bool>) -> Outcome {
        let tag = line + 1;
        let start = self.set_of(line) as usize * self.ways;
        let set = &mut self.slots[start..start + self.ways];
        // Empty ways are always a set's last (fills go to the front, hits move a prefix), so
        // one scan finds the line, or the first empty way, or that the set is full.
        let mut empty = None;
        for i in 0..set.len() {
            let w = set[i];
            if w == 0 {
                empty = Some(i);
                break;
            }
            if w & !PRIORITY_BIT == tag {
                set[..=i].rotate_right(1);
                return Outcome::Hit;
            }
        }
        let is_priority = priority == Some(true);
        let victim = match empty {
            Some(empty) => empty,
            None if priority == Some(false) => {
                match set.iter().rposition(|&w| w & PRIORITY_BIT == 0) {
                    Some(i) => i,
                    None => return Outcome::Bypassed,
                }
            }
            None => set.len() - 1,
        };
        set[..=victim].rotate_right(1);
        set[0] = if is_priority { tag | PRIORITY_BIT } else { tag };
        Outcome::Filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_within_a_set() {
        // One set of 4 ways (256 bytes): lines 0..4 fill it, a hit on 0 makes 1 the least
        // recent, so line 4 evicts 1, not 0.
        let mut c = SetAssoc::new(256, 4);
        assert_eq!(c.sets(), 1);
        for line in 0..4 {
            assert_eq!(c.access(line, None), Outcome::Filled);
        }
        assert_eq!(c.access(0, None), Outcome::Hit);
        assert_eq!(c.access(4, None), Outcome::Filled);
        assert!(c.contains(0), "recently used: kept");
        assert!(!c.contains(1), "least recently used: evicted");
        assert!(c.contains(2) && c.contains(3) && c.contains(4));
        // Now 2 is the least recent.
        assert_eq!(c.access(5, None), Outcome::Filled);
        assert!(!c.contains(2));
    }

    #[test]
    fn conflict_misses_in_a_direct_mapped_cache() {
        // 4 sets of one way: lines 0 and 4 share set 0 and evict each other on every access,
        // although the cache has room for four lines.
        let mut c = SetAssoc::new(256, 1);
        assert_eq!(c.sets(), 4);
        let mut misses = 0;
        for _ in 0..10 {
            for line in [0, 4] {
                misses += usize::from(c.access(line, None) != Outcome::Hit);
            }
        }
        assert_eq!(misses, 20, "every access misses");
        // Lines of distinct sets coexist.
        assert_eq!(c.access(1, None), Outcome::Filled);
        assert_eq!(c.access(4, None), Outcome::Hit);
        assert_eq!(c.access(1, None), Outcome::Hit);
    }

    #[test]
    fn associativity_removes_those_conflict_misses() {
        // The same 256 bytes as 2 sets of 2 ways: 0 and 4 share set 0 and both stay.
        let mut c = SetAssoc::new(256, 2);
        let mut misses = 0;
        for _ in 0..10 {
            for line in [0, 4] {
                misses += usize::from(c.access(line, None) != Outcome::Hit);
            }
        }
        assert_eq!(misses, 2, "only the two cold misses");
    }

    #[test]
    fn priority_lines_are_not_evicted_by_other_lines() {
        // Direct-mapped, 4 sets: priority line 0 holds set 0 against line 4.
        let mut c = SetAssoc::new(256, 1);
        assert_eq!(c.access(0, Some(true)), Outcome::Filled);
        assert_eq!(c.access(4, Some(false)), Outcome::Bypassed);
        assert!(c.contains(0) && !c.contains(4));
        assert_eq!(c.access(0, Some(true)), Outcome::Hit);
        // Another priority line may evict it.
        assert_eq!(c.access(8, Some(true)), Outcome::Filled);
        assert!(!c.contains(0) && c.contains(8));
        // A non-priority line is evicted by anything.
        assert_eq!(c.access(1, Some(false)), Outcome::Filled);
        assert_eq!(c.access(5, Some(false)), Outcome::Filled);
        assert!(!c.contains(1));
        assert_eq!(c.access(9, Some(true)), Outcome::Filled);
        assert!(!c.contains(5));
    }

    #[test]
    fn in_a_set_a_non_priority_fill_takes_the_least_recent_non_priority_way() {
        // One set of 4 ways: priority 0 and 1 oldest, then 2 and 3. Line 4 (not priority)
        // evicts 2, the least recent non-priority way, though 0 is the least recent.
        let mut c = SetAssoc::new(256, 4);
        c.access(0, Some(true));
        c.access(1, Some(true));
        c.access(2, Some(false));
        c.access(3, Some(false));
        assert_eq!(c.access(4, Some(false)), Outcome::Filled);
        assert!(c.contains(0) && c.contains(1) && !c.contains(2));
        assert!(!c.set_all_priority(0));
        // Priority fills take the least recent way whatever it holds: 0, then 1.
        c.access(5, Some(true));
        c.access(6, Some(true));
        assert!(!c.contains(0) && !c.contains(1));
        c.access(7, Some(true));
        c.access(8, Some(true));
        assert!(c.set_all_priority(0));
        assert_eq!(c.access(9, Some(false)), Outcome::Bypassed);
    }
}
