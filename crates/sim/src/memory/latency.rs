//! What an access costs at each level of the hierarchy, in nanoseconds.
//!
//! A request reads a chain of dependent ranges (bucket, then record, then value): each
//! range's first line pays its level's **latency**, and each further line of the same range
//! its level's **streaming** cost (a line over the level's per-core bandwidth; the CPU keeps
//! many misses of one run in flight), so a 1 MB value costs about one latency plus 16,383
//! transfers. The numbers are round figures for a server of today, not measurements of this
//! machine:
//!
//! | level | latency | per further line | basis |
//! |---|---:|---:|---|
//! | L2 hit | 4 ns | 0.5 ns | ~14 cycles at 3.5 GHz (Intel's optimization manual, Skylake-SP); ~128 GB/s |
//! | L3 hit | 20 ns | 1 ns | ~50–70 cycles on a mesh L3; ~64 GB/s per core |
//! | DRAM-cache hit | 45 ns | 1 ns | stacked DRAM: about half the off-chip latency, several times its bandwidth (the Alloy cache's premise) |
//! | memory | 90 ns | 4 ns | off-chip DDR4/DDR5 load-to-use; ~16 GB/s per core |
//!
//! An N-way DRAM cache pays [`Latency::dram_assoc_extra_ns`] more per hit: its tags must be
//! read before the way's data (Alloy's argument for direct mapping: "associativity
//! approximately doubles the burst length", thesis §4.3.2.2). A DRAM-cache miss costs what
//! memory costs, as if Alloy's miss predictor were perfect (it is near-perfect there).

use super::Level;

/// Per-level costs in nanoseconds (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// First line served by L2.
    pub l2_ns: f64,
    /// First line served by L3.
    pub l3_ns: f64,
    /// First line served by a direct-mapped DRAM cache.
    pub dram_cache_ns: f64,
    /// Added to a DRAM-cache hit when the cache has more than one way.
    pub dram_assoc_extra_ns: f64,
    /// First line served by memory.
    pub memory_ns: f64,
    /// Each further line of a range served by L2.
    pub l2_stream_ns: f64,
    /// … by L3.
    pub l3_stream_ns: f64,
    /// … by the DRAM cache.
    pub dram_cache_stream_ns: f64,
    /// … by memory.
    pub memory_stream_ns: f64,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            l2_ns: 4.0,
            l3_ns: 20.0,
            dram_cache_ns: 45.0,
            dram_assoc_extra_ns: 15.0,
            memory_ns: 90.0,
            l2_stream_ns: 0.5,
            l3_stream_ns: 1.0,
            dram_cache_stream_ns: 1.0,
            memory_stream_ns: 4.0,
        }
    }
}

impl Latency {
    /// The cost of a range's first line served at `level` (`assoc`: the DRAM cache has more
    /// than one way).
    #[inline]
    pub fn first(&self, level: Level, assoc: bool) -> f64 {
        match level {
            Level::L2 => self.l2_ns,
            Level::L3 => self.l3_ns,
            Level::DramCache => {
                self.dram_cache_ns + if assoc { self.dram_assoc_extra_ns } else { 0.0 }
            }
            Level::Memory => self.memory_ns,
        }
    }

    /// The cost of a further line of a range served at `level`.
    #[inline]
    pub fn stream(&self, level: Level) -> f64 {
        match level {
            Level::L2 => self.l2_stream_ns,
            Level::L3 => self.l3_stream_ns,
            Level::DramCache => self.dram_cache_stream_ns,
            Level::Memory => self.memory_stream_ns,
        }
    }
}
