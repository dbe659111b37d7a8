//! Segments: the unit of allocation, cleaning, reuse and accounting (Memshare §3.1, §5.1).
//!
//! A segment moves through four states:
//!
//! ```text
//!   free ──► head (one writer appends) ──► sealed ──► cleaning ──► retired ──► free
//!    │ ▲                                    │                        ▲
//!    ▼ │                                    └── FIFO eviction ───────┘
//!   lent (pages released; only with `memory_includes_index`)
//!   withheld (pages released; beyond a limit lowered at run time)
//! ```
//!
//! Inside a segment, key records grow from offset 0 up to `key_top` and values grow from the
//! end down to `value_bottom` ([`crate::item`]); the segment is full when they would meet.
//! Each segment has a one-cache-line header kept in a separate array (so scanning headers to
//! choose cleaning candidates never touches item memory).
//!
//! The lists are under one mutex, taken only when a segment changes state — once per segment
//! filled, never per request.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::epoch::Epochs;

/// Free segments writers leave to the cleaner, so it can always compact into them instead of
/// evicting live items because a writer took the last free segment.
pub const CLEANER_RESERVE: usize = 2;

/// Per-segment bookkeeping (one cache line).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct SegmentHeader {
    /// End of the key-record region (next record goes here).
    pub key_top: AtomicU32,
    /// Start of the value region.
    pub value_bottom: AtomicU32,
    /// Bytes of items no longer reachable from the index.
    pub dead_bytes: AtomicU32,
    /// Times the segment has been taken from the free list (tells its lives apart).
    pub generation: AtomicU32,
    /// Base time (ms) that expiry deltas of this segment's items are relative to.
    pub base_ms: AtomicU64,
    /// The earliest expiry of any item written into the segment since it was last taken
    /// ([`NO_EXPIRY`] if none): nothing in the segment has expired while the time is not past
    /// it, so the expiry sweep skips the segment's items without reading them. Written only by
    /// the segment's owner, before it publishes the item.
    pub min_expiry_ms: AtomicU64,
    /// The queue the segment belongs to ([`SMALL`] or [`MAIN`]), with
    /// [`crate::Eviction::Queues`]: set by whoever takes it from the free list.
    pub queue: AtomicU8,
    /// Values of the segment held past their readers' epoch guards ([`crate::ValuePin`]: a
    /// reply being written from the segment). A retired segment is not freed while any is.
    pub pins: AtomicU32,
    /// The tenants with the most bytes among the segment's first records (up to six), each
    /// as `tenant << 16 | its share of those bytes in 65,536ths`, noted by the owner as it
    /// seals the segment (`crate::cleaner::note_tenants`; zero where tenants share no
    /// memory): what a pass choosing candidates by need reads instead of the records.
    pub tenants: [AtomicU32; NOTED_TENANTS],
    /// Whether the segment has been sealed since it was last taken. Its owner seals it only
    /// after publishing (or abandoning) every item it wrote there, and stores this with
    /// `Release`: whoever loads `true` with `Acquire` finds every item of the segment in the
    /// index or gone from it (the expiry sweep relies on this, see `crate::expiry`).
    pub sealed: AtomicBool,
}

/// Tenants a segment's header names ([`SegmentHeader::tenants`]).
pub const NOTED_TENANTS: usize = 6;

/// [`SegmentHeader::queue`] of a segment writers fill with new items.
pub const SMALL: u8 = 0;
/// [`SegmentHeader::queue`] of a segment the cleaner fills with the items it keeps.
pub const MAIN: u8 = 1;

/// [`SegmentHeader::min_expiry_ms`] of a segment with no expiring item.
pub const NO_EXPIRY: u64 = u64::MAX;

const _: () = assert!(std::mem::size_of::<SegmentHeader>() == 64);

impl SegmentHeader {
    /// Bytes written into the segment (keys and values).
    pub fn used_bytes(&self, segment_size: usize) -> usize {
        self.key_top.load(Ordering::Relaxed) as usize + segment_size
            - self.value_bottom.load(Ordering::Relaxed) as usize
    }

    /// Lowers the earliest expiry to `at` (owner only, before publishing an item).
    pub fn note_expiry(&self, at: u64) {
        if at < self.min_expiry_ms.load(Ordering::Relaxed) {
            self.min_expiry_ms.store(at, Ordering::Relaxed);
        }
    }

    /// Records that `bytes` of this segment's items became unreachable.
    pub fn add_dead(&self, bytes: usize) {
        self.dead_bytes.fetch_add(bytes as u32, Ordering::Relaxed);
    }
}

#[derive(Debug, Default)]
struct Lists {
    free: Vec<u32>,
    /// Sealed segments in the order they were sealed (oldest first); with queues, those of
    /// the main queue.
    sealed: VecDeque<u32>,
    /// With queues ([`crate::Eviction::Queues`]): the small queue's sealed segments, oldest
    /// first (empty otherwise).
    small: VecDeque<u32>,
    /// Segments waiting for their retirement epoch to pass.
    retired: Vec<(u64, u32)>,
    /// Retired segments past their epoch that a [`crate::ValuePin`] still holds: freed once
    /// the last pin goes. Not counted as retired (nobody should wait for them).
    held: Vec<u32>,
    /// Segments lent to the memory outside the arena (`memory_includes_index`): their pages
    /// are released and they hold nothing.
    lent: Vec<u32>,
    /// Segments withheld beyond the run-time memory limit ([`crate::Engine::set_memory_limit`]):
    /// their pages are released and they hold nothing.
    withheld: Vec<u32>,
}

/// All segments' headers and lists.
#[derive(Debug)]
pub struct Segments {
    headers: Box<[SegmentHeader]>,
    lists: Mutex<Lists>,
    free_count: AtomicUsize,
    lent_count: AtomicUsize,
    withheld_count: AtomicUsize,
    segment_size: usize,
    /// Sealed segments of the small queue go to their own list (`Eviction::Queues`).
    queues: bool,
    /// Pins held ([`crate::ValuePin`]), each on one segment: at most [`Segments::max_pins`],
    /// so pins never hold more than that many retired segments back.
    pins: AtomicUsize,
}

impl Segments {
    /// `count` free segments of `segment_size` bytes; `queues`: the small queue's sealed
    /// segments are listed apart (`Eviction::Queues`).
    pub fn new(count: usize, segment_size: usize, queues: bool) -> Segments {
        let headers = (0..count).map(|_| SegmentHeader::default()).collect();
        // Hand out low ids first: pop() takes from the end.
        let free = (0..count as u32).rev().collect();
        Segments {
            headers,
            lists: Mutex::new(Lists { free, ..Lists::default() }),
            free_count: AtomicUsize::new(count),
            lent_count: AtomicUsize::new(0),
            withheld_count: AtomicUsize::new(0),
            segment_size,
            queues,
            pins: AtomicUsize::new(0),
        }
    }

    /// Pins that may be held at once: an eighth of the segments (at least one).
    pub fn max_pins(&self) -> usize {
        (self.headers.len() / 8).max(1)
    }

    /// Pins segment `id` for a value read from it under an epoch guard (the caller holds
    /// one): it will not be freed until [`Segments::unpin`]. Refused when
    /// [`Segments::max_pins`] are held.
    pub fn try_pin(&self, id: u32) -> bool {
        if self.pins.fetch_add(1, Ordering::SeqCst) >= self.max_pins() {
            self.pins.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        self.headers[id as usize].pins.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Releases a pin [`Segments::try_pin`] took.
    pub fn unpin(&self, id: u32) {
        self.headers[id as usize].pins.fetch_sub(1, Ordering::SeqCst);
        self.pins.fetch_sub(1, Ordering::SeqCst);
    }

    /// Pins held now.
    pub fn pins(&self) -> usize {
        self.pins.load(Ordering::Relaxed)
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of segments.
    pub fn count(&self) -> usize {
        self.headers.len()
    }

    /// Header of segment `id`.
    #[inline]
    pub fn header(&self, id: u32) -> &SegmentHeader {
        &self.headers[id as usize]
    }

    /// Free segments right now.
    #[inline]
    pub fn free_count(&self) -> usize {
        self.free_count.load(Ordering::Relaxed)
    }

    /// Sealed segments right now.
    pub fn sealed_count(&self) -> usize {
        let lists = self.lists();
        lists.sealed.len() + lists.small.len()
    }

    /// Takes a free segment, reset and ready to be a head with base time `now_ms`, unless
    /// no more than `keep` are free (writers leave [`CLEANER_RESERVE`] for the cleaner).
    pub fn take_free(&self, now_ms: u64, keep: usize) -> Option<u32> {
        let id = {
            let mut lists = self.lists();
            if lists.free.len() <= keep {
                return None;
            }
            let id = lists.free.pop()?;
            self.free_count.store(lists.free.len(), Ordering::Relaxed);
            id
        };
        let h = self.header(id);
        h.key_top.store(0, Ordering::Relaxed);
        h.value_bottom.store(self.segment_size as u32, Ordering::Relaxed);
        h.dead_bytes.store(0, Ordering::Relaxed);
        h.base_ms.store(now_ms, Ordering::Relaxed);
        h.min_expiry_ms.store(NO_EXPIRY, Ordering::Relaxed);
        h.sealed.store(false, Ordering::Relaxed);
        // `Release`: whoever sees the new life sees it unsealed (`crate::expiry`).
        h.generation.fetch_add(1, Ordering::Release);
        Some(id)
    }

    /// Adds a full head segment to the sealed list. The caller owns the segment and has
    /// published or abandoned every item it wrote there.
    pub fn seal(&self, id: u32) {
        self.header(id).sealed.store(true, Ordering::Release);
        let mut lists = self.lists();
        if self.queues && self.queue_of(id) == SMALL {
            lists.small.push_back(id);
        } else {
            lists.sealed.push_back(id);
        }
    }

    /// Where the segments are and how full, right now ([`crate::Engine::segment_usage`]). A
    /// segment on no list is some writer's or the cleaner's open head (or a pass's candidate,
    /// while one runs). Takes the lists' mutex and reads every header: for reports, not for
    /// the hot path.
    pub fn usage(&self) -> crate::stats::SegmentUsage {
        use crate::stats::{QueueUsage, SegmentUsage};
        let lists = self.lists();
        let mut listed = vec![false; self.count()];
        let others = lists
            .retired
            .iter()
            .map(|&(_, id)| id)
            .chain(lists.held.iter().chain(&lists.lent).chain(&lists.withheld).copied());
        let mut other = 0;
        for id in others {
            listed[id as usize] = true;
            other += 1;
        }
        for &id in &lists.free {
            listed[id as usize] = true;
        }
        let queue = |list: &VecDeque<u32>, listed: &mut [bool]| {
            let mut q = QueueUsage::default();
            for &id in list {
                listed[id as usize] = true;
                let h = self.header(id);
                q.segments += 1;
                q.used_bytes += h.used_bytes(self.segment_size);
                q.dead_bytes += h.dead_bytes.load(Ordering::Relaxed) as usize;
            }
            q
        };
        let small = queue(&lists.small, &mut listed);
        let main = queue(&lists.sealed, &mut listed);
        let open = queue(
            &(0..self.count() as u32).filter(|&id| !listed[id as usize]).collect(),
            &mut listed,
        );
        SegmentUsage {
            segments: self.count(),
            segment_size: self.segment_size,
            free: lists.free.len(),
            open,
            small,
            main,
            other,
        }
    }

    /// Sealed segments of `queue` right now (with queues; O(1)).
    pub fn queue_count(&self, queue: u8) -> usize {
        let lists = self.lists();
        if queue == SMALL { lists.small.len() } else { lists.sealed.len() }
    }

    fn queue_of(&self, id: u32) -> u8 {
        self.header(id).queue.load(Ordering::Relaxed)
    }

    /// Removes and returns the `n` oldest sealed segments of `queue` (with queues).
    pub fn take_oldest_of(&self, queue: u8, n: usize) -> Vec<u32> {
        let mut lists = self.lists();
        let list = if queue == SMALL { &mut lists.small } else { &mut lists.sealed };
        let n = n.min(list.len());
        list.drain(..n).collect()
    }

    /// Removes up to `n` of the `window` oldest segments of `queue`: those with the highest
    /// `score`, ties to the older. Where one taken scores above 0, the others in the window
    /// that score 0 go to the queue's newest end (another lap, without copying); the rest
    /// stay where they were. `score` runs under the list lock, as in
    /// [`Segments::take_candidates`].
    pub fn take_oldest_scored(
        &self,
        queue: u8,
        n: usize,
        window: usize,
        score: &mut impl FnMut(u32, &SegmentHeader) -> u64,
    ) -> Vec<u32> {
        let mut lists = self.lists();
        let list = if queue == SMALL { &mut lists.small } else { &mut lists.sealed };
        let w = window.max(n).min(list.len());
        let ids: Vec<u32> = list.drain(..w).collect();
        let scores: Vec<u64> = ids.iter().map(|&id| score(id, self.header(id))).collect();
        let mut best: Vec<usize> = (0..w).collect();
        best.sort_by(|&a, &b| scores[b].cmp(&scores[a]).then(a.cmp(&b)));
        best.truncate(n);
        let lap = best.iter().any(|&i| scores[i] > 0);
        let mut front = Vec::new();
        for i in (0..w).filter(|i| !best.contains(i)) {
            if lap && scores[i] == 0 {
                list.push_back(ids[i]);
            } else {
                front.push(ids[i]);
            }
        }
        for &id in front.iter().rev() {
            list.push_front(id);
        }
        best.sort_unstable();
        best.into_iter().map(|i| ids[i]).collect()
    }

    /// Puts a sealed segment taken from `queue` back at that queue's newest end.
    pub fn requeue_newest(&self, queue: u8, id: u32) {
        let mut lists = self.lists();
        let list = if queue == SMALL { &mut lists.small } else { &mut lists.sealed };
        list.push_back(id);
    }

    /// Removes and returns the oldest sealed segment.
    pub fn take_oldest_sealed(&self) -> Option<u32> {
        // With queues, the small queue's oldest first, as S3-FIFO would evict.
        let mut lists = self.lists();
        lists.small.pop_front().or_else(|| lists.sealed.pop_front())
    }

    /// Estimated live bytes of a sealed segment: written minus known dead. (Expired items are
    /// not known until the cleaner reads them, so this is an upper bound.)
    fn live_estimate(&self, id: u32) -> usize {
        let h = self.header(id);
        h.used_bytes(self.segment_size)
            .saturating_sub(h.dead_bytes.load(Ordering::Relaxed) as usize)
    }

    /// Removes sealed segments (of either queue) whose live data can be compacted without
    /// evicting anything:
    /// the segments with the fewest live bytes, as many as fit (at most `n`) while their live
    /// bytes stay within `output_bytes` and within one segment fewer than they occupy.
    /// Returns nothing if no such set exists (memory is full of live data). With queues, a
    /// small-queue segment's survivors land in the main queue: only overwritten or deleted
    /// versions make one reclaimable, and a writer overwriting a working set that fits must
    /// not see live items evicted for the dead ones.
    pub fn take_reclaimable(&self, n: usize, output_bytes: usize) -> Vec<u32> {
        let mut lists = self.lists();
        // (live bytes, in the small queue, position)
        let mut by_live: Vec<(usize, bool, usize)> = lists
            .sealed
            .iter()
            .enumerate()
            .map(|(i, &id)| (self.live_estimate(id), false, i))
            .chain(lists.small.iter().enumerate().map(|(i, &id)| (self.live_estimate(id), true, i)))
            .collect();
        by_live.sort_unstable();
        let mut live = 0;
        let mut count = 0;
        for &(l, ..) in by_live.iter().take(n) {
            if live + l > output_bytes {
                break;
            }
            live += l;
            count += 1;
        }
        // Worth a pass only if the survivors fit in one segment fewer than the candidates.
        while count > 0 && live > (count - 1) * self.segment_size {
            count -= 1;
            live -= by_live[count].0;
        }
        let mut take: Vec<(bool, usize)> =
            by_live[..count].iter().map(|&(_, q, i)| (q, i)).collect();
        take.sort_unstable_by_key(|t| std::cmp::Reverse(t.1));
        take.into_iter()
            .filter_map(
                |(small, i)| if small { lists.small.remove(i) } else { lists.sealed.remove(i) },
            )
            .collect()
    }

    /// Removes up to `n` sealed segments for a pass that must evict: half chosen at random
    /// (with `random`, a source of u64s), half with the highest `score` (Memshare §3.1: most
    /// dead bytes, plus, with several tenants, most bytes of tenants over their target). With
    /// `sample` set, only that many random sealed segments are scored (bounded work when
    /// scoring reads records); otherwise all are. `score` runs under the list lock, so the
    /// segment it looks at stays sealed and unchanged meanwhile.
    pub fn take_candidates(
        &self,
        n: usize,
        random: &mut impl FnMut() -> u64,
        sample: Option<usize>,
        score: &mut impl FnMut(u32, &SegmentHeader) -> u64,
    ) -> Vec<u32> {
        let mut lists = self.lists();
        let n = n.min(lists.sealed.len());
        let mut chosen = Vec::with_capacity(n);
        for _ in 0..n / 2 {
            let i = (random() % lists.sealed.len() as u64) as usize;
            if let Some(id) = lists.sealed.remove(i) {
                chosen.push(id);
            }
        }
        let len = lists.sealed.len();
        let mut positions: Vec<usize> = match sample {
            Some(k) if k < len => (0..k).map(|_| (random() % len as u64) as usize).collect(),
            _ => (0..len).collect(),
        };
        positions.sort_unstable();
        positions.dedup();
        let mut scored: Vec<(u64, usize)> = positions
            .into_iter()
            .map(|i| {
                let id = lists.sealed[i];
                (score(id, self.header(id)), i)
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut take: Vec<usize> = scored.iter().take(n - chosen.len()).map(|&(_, i)| i).collect();
        take.sort_unstable_by(|a, b| b.cmp(a));
        for i in take {
            if let Some(id) = lists.sealed.remove(i) {
                chosen.push(id);
            }
        }
        chosen
    }

    /// Puts segments that no index slot references any more on the retired list, tagged
    /// with a fresh retirement epoch.
    pub fn retire(&self, ids: &[u32], epochs: &Epochs) {
        let epoch = epochs.retire();
        self.lists().retired.extend(ids.iter().map(|&id| (epoch, id)));
    }

    /// Moves retired segments that no reader can reference to the free list. Returns how
    /// many were freed.
    pub fn reclaim(&self, epochs: &Epochs) -> usize {
        let mut lists = self.lists();
        if lists.retired.is_empty() && lists.held.is_empty() {
            return 0;
        }
        let before = lists.free.len();
        let Lists { free, retired, held, .. } = &mut *lists;
        let headers = &self.headers;
        let pinned = |id: u32| headers[id as usize].pins.load(Ordering::SeqCst) > 0;
        held.retain(|&id| {
            if pinned(id) {
                return true;
            }
            free.push(id);
            false
        });
        retired.retain(|&(epoch, id)| {
            if !epochs.is_safe(epoch) {
                return true;
            }
            // No reader of the epoch is left; a pin taken under one may be.
            if pinned(id) {
                held.push(id)
            } else {
                free.push(id)
            }
            false
        });
        self.free_count.store(free.len(), Ordering::Relaxed);
        free.len() - before
    }

    /// Retired segments waiting for their epoch.
    pub fn retired_count(&self) -> usize {
        self.lists().retired.len()
    }

    /// Retired segments past their epoch that pins still hold.
    pub fn held_count(&self) -> usize {
        self.lists().held.len()
    }

    /// Takes up to `n` free segments to lend, leaving at least `keep` free. The caller owns
    /// them until it passes them to [`Segments::add_lent`] (after releasing their pages).
    pub fn take_for_lending(&self, n: usize, keep: usize) -> Vec<u32> {
        let mut lists = self.lists();
        let n = n.min(lists.free.len().saturating_sub(keep));
        let at = lists.free.len() - n;
        let taken = lists.free.split_off(at);
        self.free_count.store(lists.free.len(), Ordering::Relaxed);
        taken
    }

    /// Records segments taken with [`Segments::take_for_lending`] as lent. Returns how many
    /// are lent now.
    pub fn add_lent(&self, ids: &[u32]) -> usize {
        let mut lists = self.lists();
        lists.lent.extend_from_slice(ids);
        self.lent_count.store(lists.lent.len(), Ordering::Relaxed);
        lists.lent.len()
    }

    /// Returns up to `n` lent segments to the free list. Returns how many are lent now.
    pub fn return_lent(&self, n: usize) -> usize {
        let mut lists = self.lists();
        let Lists { free, lent, .. } = &mut *lists;
        let at = lent.len().saturating_sub(n);
        free.extend(lent.drain(at..));
        self.free_count.store(free.len(), Ordering::Relaxed);
        self.lent_count.store(lent.len(), Ordering::Relaxed);
        lent.len()
    }

    /// Records segments taken with [`Segments::take_for_lending`] as withheld beyond the
    /// run-time limit. Returns how many are withheld now.
    pub fn add_withheld(&self, ids: &[u32]) -> usize {
        let mut lists = self.lists();
        lists.withheld.extend_from_slice(ids);
        self.withheld_count.store(lists.withheld.len(), Ordering::Relaxed);
        lists.withheld.len()
    }

    /// Returns up to `n` withheld segments to the free list. Returns how many are withheld
    /// now.
    pub fn return_withheld(&self, n: usize) -> usize {
        let mut lists = self.lists();
        let Lists { free, withheld, .. } = &mut *lists;
        let at = withheld.len().saturating_sub(n);
        free.extend(withheld.drain(at..));
        self.free_count.store(free.len(), Ordering::Relaxed);
        self.withheld_count.store(withheld.len(), Ordering::Relaxed);
        withheld.len()
    }

    /// Segments withheld right now.
    #[inline]
    pub fn withheld_count(&self) -> usize {
        self.withheld_count.load(Ordering::Relaxed)
    }

    /// Segments lent right now.
    #[inline]
    pub fn lent_count(&self) -> usize {
        self.lent_count.load(Ordering::Relaxed)
    }
}
