//! Rank functions: which items the cleaner keeps (Memshare §3.1, `rank(t, f)`).
//!
//! The cleaner gathers the live items of its candidate segments and keeps the highest-ranked
//! ones that fit; ties keep their order in the segments, so results are deterministic. The
//! rank function is policy; the cleaner is mechanism and never looks inside it. Each tenant
//! picks one ([`RankKind`], in its [`crate::TenantPolicy`]).
//!
//! | kind | keeps first | input |
//! |---|---|---|
//! | `hitmap` (default) | higher temperature zone (zone 0, the zombies, go first), then more recent | Catalyst §3.1.6, §3.3 |
//! | `lru` | more recent | the record's coarse access stamp |
//! | `lfu` | higher hitmap count (zone); ties in log order | Catalyst's hash counters as a frequency |
//! | `slru` | items read at least twice since they cooled (zone ≥ 2), then more recent | Memshare's segmented-LRU example of `rank(t, f)` |
//! | `gdsf` | higher (zone + 1) / size, then more recent | GreedyDual-Size-Frequency's priority |
//!
//! Without eviction metadata (a zero hitmap budget) every item reads the same zone, so the
//! hitmap-based ranks fall back to recency (`lfu` to log order).

/// What a rank function may look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct RankInput {
    /// Recency-clock ticks since the item's last access (0 = this tick), saturated at 255.
    pub age: u8,
    /// Bytes the item occupies.
    pub size: u32,
    /// Owning tenant.
    pub tenant: u16,
    /// Temperature zone from the hitmap: how many levels mark the key (0 = a zombie, not
    /// read since it was stored, through at least one compaction; Catalyst §3.1.6).
    pub zone: u8,
}

/// Orders items for keeping: higher is kept first.
///
/// # Contract
///
/// The cleaner calls [`Rank::rank`] once per live item of its candidate segments, in the
/// middle of a pass (on a request thread when the cleaner runs inline, else on its own). The
/// caller guarantees that `item` describes one live item as of the pass; it does not
/// guarantee any order of calls, nor that an item is ranked only once.
///
/// An implementation:
/// - MUST be a pure function of `item`: the same input gives the same rank, with no reads of
///   wall time, randomness or shared mutable state (the simulator replays traces bit for bit,
///   and ties keep log order only if ranks are stable);
/// - MUST NOT block, take locks, or allocate per call (it runs for every item a pass moves);
/// - MUST NOT panic for any input (every field's whole range is valid);
/// - MUST be callable from any thread (`Send + Sync`): one function serves every pass.
pub trait Rank: Send + Sync + std::fmt::Debug {
    /// The item's rank: higher is kept first.
    fn rank(&self, item: &RankInput) -> u64;
}

/// Least recently used goes first: `rank(t) = t`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recency;

impl Rank for Recency {
    fn rank(&self, item: &RankInput) -> u64 {
        recency(item)
    }
}

/// The coldest zone first (zombies before all), then least recently used.
#[derive(Debug, Default, Clone, Copy)]
pub struct Zone;

impl Rank for Zone {
    fn rank(&self, item: &RankInput) -> u64 {
        u64::from(item.zone) << 8 | recency(item)
    }
}

/// Least frequently used (the hitmap count) first; ties keep log order (oldest first).
#[derive(Debug, Default, Clone, Copy)]
pub struct Frequency;

impl Rank for Frequency {
    fn rank(&self, item: &RankInput) -> u64 {
        u64::from(item.zone)
    }
}

/// Segmented LRU: a protected segment of items read at least twice since they last cooled,
/// kept ahead of the probationary rest; LRU within each.
#[derive(Debug, Default, Clone, Copy)]
pub struct Segmented;

impl Rank for Segmented {
    fn rank(&self, item: &RankInput) -> u64 {
        u64::from(item.zone >= 2) << 8 | recency(item)
    }
}

/// Size-aware (GreedyDual-Size-Frequency's `frequency / size`, Cherkasova '98): per byte, the
/// items read most often stay; recency breaks ties (the pass's own aging). Keeps more small
/// items than the other ranks — more hits per byte of cache, fewer bytes hit.
#[derive(Debug, Default, Clone, Copy)]
pub struct SizeAware;

impl Rank for SizeAware {
    fn rank(&self, item: &RankInput) -> u64 {
        // (zone + 1) / size in units of 2^-32 per byte: items from 1 byte to 4 GiB differ.
        let per_byte = ((u64::from(item.zone) + 1) << 32) / u64::from(item.size.max(1));
        per_byte << 8 | recency(item)
    }
}

fn recency(item: &RankInput) -> u64 {
    u64::from(u8::MAX - item.age)
}

/// The built-in rank functions, by name.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankKind {
    /// `Zone`: zone, then recency (the default).
    #[default]
    Hitmap,
    /// [`Recency`].
    Lru,
    /// `Frequency`.
    Lfu,
    /// `Segmented`.
    Slru,
    /// `SizeAware`.
    Gdsf,
}

impl RankKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [RankKind; 5] =
        [RankKind::Hitmap, RankKind::Lru, RankKind::Lfu, RankKind::Slru, RankKind::Gdsf];

    /// The rank function.
    pub fn function(self) -> &'static dyn Rank {
        match self {
            RankKind::Hitmap => &Zone,
            RankKind::Lru => &Recency,
            RankKind::Lfu => &Frequency,
            RankKind::Slru => &Segmented,
            RankKind::Gdsf => &SizeAware,
        }
    }

    /// The name used in configuration files and stats.
    pub fn name(self) -> &'static str {
        match self {
            RankKind::Hitmap => "hitmap",
            RankKind::Lru => "lru",
            RankKind::Lfu => "lfu",
            RankKind::Slru => "slru",
            RankKind::Gdsf => "gdsf",
        }
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(code: u8) -> RankKind {
        RankKind::ALL.get(usize::from(code)).copied().unwrap_or_default()
    }
}

impl std::str::FromStr for RankKind {
    type Err = String;
    fn from_str(s: &str) -> Result<RankKind, String> {
        RankKind::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            format!("unknown rank function {s:?}: expected hitmap, lru, lfu, slru or gdsf")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(age: u8, zone: u8) -> RankInput {
        RankInput { age, zone, ..RankInput::default() }
    }

    #[test]
    fn hitmap_keeps_warm_over_recent_and_drops_zombies_first() {
        let r = RankKind::Hitmap.function();
        assert!(r.rank(&input(200, 2)) > r.rank(&input(0, 1)));
        assert!(r.rank(&input(0, 1)) > r.rank(&input(200, 1)));
        assert!(r.rank(&input(255, 1)) > r.rank(&input(0, 0)), "zombies go first");
    }

    #[test]
    fn lru_looks_at_recency_only() {
        let r = RankKind::Lru.function();
        assert!(r.rank(&input(1, 0)) > r.rank(&input(2, 4)));
    }

    #[test]
    fn lfu_and_slru_protect_frequent_items() {
        let lfu = RankKind::Lfu.function();
        assert!(lfu.rank(&input(9, 3)) > lfu.rank(&input(0, 2)));
        assert_eq!(lfu.rank(&input(9, 3)), lfu.rank(&input(0, 3)), "count only");
        let slru = RankKind::Slru.function();
        assert!(slru.rank(&input(9, 2)) > slru.rank(&input(0, 1)));
        assert!(slru.rank(&input(0, 2)) > slru.rank(&input(9, 4)), "LRU within");
    }

    #[test]
    fn gdsf_keeps_small_and_frequent_items() {
        let r = RankKind::Gdsf.function();
        let item = |zone, size| RankInput { zone, size, ..RankInput::default() };
        assert!(r.rank(&item(1, 100)) > r.rank(&item(1, 10_000)), "smaller first");
        assert!(r.rank(&item(3, 300)) > r.rank(&item(0, 100)), "4 reads on 3x the bytes win");
        assert!(r.rank(&item(4, u32::MAX)) > 0);
        assert_eq!(r.rank(&item(0, 0)), r.rank(&item(0, 1)), "a size of 0 counts as 1");
    }

    #[test]
    fn names_round_trip() {
        for k in RankKind::ALL {
            assert_eq!(k.name().parse::<RankKind>(), Ok(k));
            assert_eq!(RankKind::from_code(k.code()), k);
        }
        assert!("mru".parse::<RankKind>().is_err());
    }
}
