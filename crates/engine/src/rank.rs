//! Rank functions: which items the cleaner keeps (Memshare §3.1, `rank(t, f)`).
//!
//! The cleaner gathers the live items of its candidate segments and keeps the highest-ranked
//! ones that fit; ties keep their order in the segments, so results are deterministic. The
//! rank function is policy; the cleaner is mechanism and never looks inside it.

/// What a rank function may look at.
#[derive(Debug, Clone, Copy)]
pub struct RankInput {
    /// Recency-clock ticks since the item's last access (0 = this tick), saturated at 255.
    pub age: u8,
    /// Bytes the item occupies.
    pub size: u32,
    /// Owning tenant.
    pub tenant: u8,
}

/// Orders items for keeping: higher is kept first.
pub trait Rank: Send + Sync + std::fmt::Debug {
    /// The item's rank.
    fn rank(&self, item: &RankInput) -> u64;
}

/// Least recently used goes first: `rank(t) = t`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recency;

impl Rank for Recency {
    fn rank(&self, item: &RankInput) -> u64 {
        u64::from(u8::MAX - item.age)
    }
}
