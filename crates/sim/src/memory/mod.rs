//! A model of the memory hierarchy under the engine: the lines each GET reads, replayed
//! through an L2 and an L3 (set-associative LRU) and optionally a DRAM cache in front of
//! memory (direct-mapped Alloy-style or N-way, with or without the stacked-DRAM thesis's
//! priority lines), with a latency per level. Reports, per value-size class, the hit rate of
//! each level, cache-line fetches per request and latency percentiles (`fridge-memsim`).
//!
//! ```text
//!  Request ──► FridgeCache::lookup_lines ──► buckets, records, segment header, value
//!                (the real engine; reads          │ each range = one dependent step
//!                 nothing, counts nothing)        ▼
//!                                     Hierarchy: line ─► L2 ─miss─► L3 ─miss─► DRAM cache ─miss─► memory
//!                                                (every level filled on a miss, no back-invalidation)
//!                                                 │
//!                                                 ▼ level served at ─► Latency ─► per-class stats
//! ```
//!
//! Papers: Cavast (Xu et al., VLDB 2020) §4.2–4.3 for the layout being modelled (keys apart
//! from values, 64-byte tagged buckets) and §6 ("Cache-friendly hash indexing") for its
//! count of cache-line fetches per request (one per bucket, ⌈item size / 64⌉ per item read:
//! [`replay::ClassStats::cavast_clf`]); the stacked-DRAM thesis (Penn State, 2015) ch. 3 for priority
//! lines and ch. 4 (§4.1.2.2 the 10 B / 300 B / 1 MB mix, §4.3.2 Table 4.4 and the
//! associativity study) for what it measured. `docs/memory-model.md` says what counts as a
//! touched line and where the model departs from the papers.
//!
//! Modules: [`cpu`] (the set-associative LRU cache), [`dram`] (the DRAM-cache models and the
//! thesis's benefit counter), [`latency`] (the per-level costs), [`replay`] (requests through
//! the engine into several hierarchies at once, and the report).

pub mod cpu;
pub mod dram;
pub mod latency;
pub mod replay;

use cpu::{LINE, Outcome, SetAssoc};
use dram::DramCache;
use latency::Latency;

/// Where a line was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The private L2.
    L2,
    /// The shared L3.
    L3,
    /// The DRAM cache in front of memory.
    DramCache,
    /// Main memory: a cache-line fetch from memory.
    Memory,
}

/// Line accesses served at each level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Lines found in L2.
    pub l2: u64,
    /// Lines found in L3.
    pub l3: u64,
    /// Lines found in the DRAM cache.
    pub dram_cache: u64,
    /// Lines fetched from memory.
    pub memory: u64,
}

impl LevelCounts {
    /// Line accesses in all.
    pub fn total(&self) -> u64 {
        self.l2 + self.l3 + self.dram_cache + self.memory
    }

    fn add(&mut self, level: Level, n: u64) {
        match level {
            Level::L2 => self.l2 += n,
            Level::L3 => self.l3 += n,
            Level::DramCache => self.dram_cache += n,
            Level::Memory => self.memory += n,
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &LevelCounts) {
        self.l2 += other.l2;
        self.l3 += other.l3;
        self.dram_cache += other.dram_cache;
        self.memory += other.memory;
    }
}

/// Sizes of the CPU caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCaches {
    /// L2 bytes (default 1 MiB: a Skylake-SP/Ice Lake-SP core's L2 is 1–1.25 MiB).
    pub l2_bytes: u64,
    /// L2 ways (default 16).
    pub l2_ways: usize,
    /// L3 bytes (default 32 MiB: a server socket's shared L3 is tens of MiB).
    pub l3_bytes: u64,
    /// L3 ways (default 16).
    pub l3_ways: usize,
}

impl Default for CpuCaches {
    fn default() -> CpuCaches {
        CpuCaches { l2_bytes: 1 << 20, l2_ways: 16, l3_bytes: 32 << 20, l3_ways: 16 }
    }
}

/// One memory hierarchy: L2, L3, an optional DRAM cache, memory.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    l2: SetAssoc,
    l3: SetAssoc,
    dram: Option<DramCache>,
    latency: Latency,
}

impl Hierarchy {
    /// A hierarchy of `cpu`'s caches in front of `dram` (or straight memory).
    pub fn new(cpu: CpuCaches, dram: Option<DramCache>, latency: Latency) -> Hierarchy {
        Hierarchy {
            l2: SetAssoc::new(cpu.l2_bytes, cpu.l2_ways),
            l3: SetAssoc::new(cpu.l3_bytes, cpu.l3_ways),
            dram,
            latency,
        }
    }

    /// The DRAM cache, if any.
    pub fn dram(&self) -> Option<&DramCache> {
        self.dram.as_ref()
    }

    /// Reads one line (a priority line in the DRAM cache if `priority`); every level it
    /// missed is filled (a DRAM cache with priority lines may decline).
    #[inline]
    pub fn line(&mut self, line: u64, priority: bool) -> Level {
        if self.l2.access(line, None) == Outcome::Hit {
            return Level::L2;
        }
        if self.l3.access(line, None) == Outcome::Hit {
            return Level::L3;
        }
        let in_dram = self.dram.as_mut().is_some_and(|d| d.access(line, priority));
        if in_dram { Level::DramCache } else { Level::Memory }
    }

    /// Reads `len` bytes from `addr` as one dependent step (at least one line, so a range of
    /// 0 bytes still reads the line it starts in): returns its cost in nanoseconds and adds
    /// the lines to `counts`.
    pub fn range(
        &mut self,
        addr: usize,
        len: usize,
        priority: bool,
        counts: &mut LevelCounts,
    ) -> f64 {
        let first = addr as u64 / LINE;
        let last = (addr as u64 + len.max(1) as u64 - 1) / LINE;
        let assoc = self.dram.as_ref().is_some_and(|d| d.ways() > 1);
        let level = self.line(first, priority);
        counts.add(level, 1);
        let mut ns = self.latency.first(level, assoc);
        for line in first + 1..=last {
            let level = self.line(line, priority);
            counts.add(level, 1);
            ns += self.latency.stream(level);
        }
        ns
    }
}

/// Lines a range of `len` bytes from `addr` spans (at least one).
pub fn lines_spanned(addr: usize, len: usize) -> u64 {
    let first = addr as u64 / LINE;
    let last = (addr as u64 + len.max(1) as u64 - 1) / LINE;
    last - first + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_misses_once_then_hits_in_l2() {
        let mut h = Hierarchy::new(CpuCaches::default(), None, Latency::default());
        let mut c = LevelCounts::default();
        // 200 bytes from 100: lines 1..=4, all from memory the first time.
        let ns = h.range(100, 200, false, &mut c);
        assert_eq!(c.memory, 4);
        assert_eq!(lines_spanned(100, 200), 4);
        let lat = Latency::default();
        assert!((ns - (lat.memory_ns + 3.0 * lat.memory_stream_ns)).abs() < 1e-9);
        let mut again = LevelCounts::default();
        let ns = h.range(100, 200, false, &mut again);
        assert_eq!(again.l2, 4);
        assert!((ns - (lat.l2_ns + 3.0 * lat.l2_stream_ns)).abs() < 1e-9);
    }

    #[test]
    fn a_line_evicted_from_l2_is_found_in_l3_then_in_the_dram_cache() {
        let cpu = CpuCaches { l2_bytes: 64, l2_ways: 1, l3_bytes: 128, l3_ways: 1 };
        let dram = DramCache::new(1 << 20, 1, false);
        let mut h = Hierarchy::new(cpu, Some(dram), Latency::default());
        assert_eq!(h.line(0, false), Level::Memory);
        assert_eq!(h.line(1, false), Level::Memory); // evicts 0 from L2 (one line)
        assert_eq!(h.line(0, false), Level::L3);
        assert_eq!(h.line(2, false), Level::Memory); // evicts 0 from L3's set 0
        assert_eq!(h.line(0, false), Level::DramCache);
    }
}
