//! The index: 64-byte buckets of tagged slots, with localized expansion (Cavast §4.3).
//!
//! A table is an array of cache-line buckets. Word 0 of a bucket is its header, words 1–7 are
//! slots. A lookup reads one bucket line, compares 16-bit tags in cache, and touches a key
//! record only on a tag match.
//!
//! ```text
//! bucket (64 B):  │ header │ slot │ slot │ slot │ slot │ slot │ slot │ slot │
//!
//! header (u64):   │ 63 ........ 32 │ 31 ........ 8 │ 7 .. 2 │    1     │  0   │
//!                 │      CAS       │     CHILD     │ unused │ MIGRATED │ LOCK │
//!
//! slot (u64):     │ 63 .... 48 │ 47 ...... 24 │ 23 ....... 0 │   (0 = empty)
//!                 │    TAG     │  SEGMENT + 1 │    OFFSET    │
//! ```
//!
//! **Localized expansion.** When every slot on a key's path is taken, the last bucket of the
//! path gets a group of four sub-buckets from the table's pre-allocated pool (`CHILD` names
//! the group); a key descends into the sub-bucket chosen by the next two bits of its tag. The
//! result is a small tree per overloaded bucket; buckets that are not overloaded never grow.
//! Only a root bucket's `LOCK` and `CAS` are used; a root's lock guards its whole tree.
//!
//! **Global growth.** When the pool is half used, a new table is made — twice the size if
//! there are more than three items per root, otherwise the same size (a group that empties on
//! a key's path is given back and reused within the table, but churn also leaves groups
//! partly filled, and scan removals leave empty ones in place, so a rebuild is how churn gets
//! the rest of its pool back) — and old roots are
//! migrated one at a time — by writers (a few per write) and by whoever needs a root that
//! has not moved yet — so no operation does more than a bounded amount of work. Readers look
//! in the old table first and follow `MIGRATED` to the new one. Old tables are freed through
//! the epoch mechanism. If the pool runs out before growth catches up, an insert into a full
//! path replaces the path's first slot: the index evicts that item (counted; this is a cache).
//! If a new table cannot be mapped (out of memory), the growth is given up and counted ([`IndexStats::growth_failures`]), never a panic: the index goes on in the table it
//! has, evicting from full paths, and tries again a few thousand maintenance steps later.
//!
//! **CAS (the root's change counter).** Every change under a root's lock increments its `CAS`
//! after publishing the change, so a lookup that raced a change can tell and look again, and an
//! update publishes only over an unchanged root. Migration gives new roots a CAS above every
//! value the old root handed out. This is the index's own version, not the CAS clients see:
//! that one is per item, in the key record (`crate::item`).
//!
//! **Memory.** The index counts what it keeps resident: each live table's roots and its pool
//! up to the last group ever handed out (the rest of a pool is mapped but never touched), and
//! tables waiting for readers to leave them ([`Index::resident_bytes`]). An owner may limit it
//! ([`Index::set_memory_limit`]): a group past the limit is refused like an exhausted pool,
//! and a growth whose table would pass it waits, noting its size ([`Index::wanted_bytes`]).
//! With transparent huge pages a pool may be resident up to 2 MiB past its mark.
//!
//! Costs: a slot is 8 bytes; buckets hold 7 slots, so roots cost 64/7 ≈ 9.1 bytes per item at
//! full load. Hashing never fills every slot: the pool reaches half use at about five items
//! per root, when the table doubles, so roots hold 2.5–5 items and cost 13–26 bytes per item,
//! and sub-bucket groups a few more. Measured at the load the index runs at (4.2 items per
//! root plus groups), it costs 19.1 bytes per item (`docs/benchmarks.md`). The pool has room
//! for groups under a quarter of the roots (virtual memory: untouched groups are not
//! resident).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

mod lines;
mod slb;
mod walk;

pub use slb::{MAX_BYTES as SLB_MAX_BYTES, SlbProbe};

use slb::Slb;

use crate::arena::Mapping;
use crate::epoch::{Epochs, Guard};
use crate::hash::tag_of;

const LOCK_BIT: u64 = 1;
const MIGRATED_BIT: u64 = 1 << 1;
const CHILD_SHIFT: u32 = 8;
const CHILD_MASK: u64 = (1 << 24) - 1;
const CAS_SHIFT: u32 = 32;

const TAG_SHIFT: u32 = 48;
const SEGMENT_SHIFT: u32 = 24;
const SEGMENT_MASK: u64 = (1 << 24) - 1;
const OFFSET_MASK: u64 = (1 << 24) - 1;

const SLOTS: usize = 7;
const GROUP: usize = 4;
/// Items per root bucket above which a full pool doubles the table instead of compacting it.
const GROW_LOAD: u64 = 3;
/// Depth limit of a sub-bucket tree: each level consumes two tag bits.
const MAX_DEPTH: u32 = 8;
/// Roots ahead of its position that a sweep prefetches.
const SWEEP_PREFETCH: usize = 8;

/// The largest segment id a slot can name.
pub const MAX_SEGMENTS: usize = (SEGMENT_MASK - 1) as usize;

const fn header_child(h: u64) -> u32 {
    ((h >> CHILD_SHIFT) & CHILD_MASK) as u32
}
const fn header_cas(h: u64) -> u64 {
    h >> CAS_SHIFT
}
const fn slot_tag(s: u64) -> u16 {
    (s >> TAG_SHIFT) as u16
}
const fn sub_bucket(tag: u16, depth: u32) -> usize {
    ((tag >> (2 * depth)) & 3) as usize
}

/// Where an item's key record lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    /// Segment id.
    pub segment: u32,
    /// Byte offset of the key record in the segment.
    pub offset: u32,
}

impl Loc {
    const fn pack(self, tag: u16) -> u64 {
        (tag as u64) << TAG_SHIFT
            | (self.segment as u64 + 1) << SEGMENT_SHIFT
            | (self.offset as u64 & OFFSET_MASK)
    }
    const fn unpack(s: u64) -> Loc {
        Loc {
            segment: ((s >> SEGMENT_SHIFT) & SEGMENT_MASK) as u32 - 1,
            offset: (s & OFFSET_MASK) as u32,
        }
    }
}

#[derive(Debug)]
#[repr(C, align(64))]
struct Bucket {
    words: [AtomicU64; 1 + SLOTS],
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);
const _: () = assert!(std::mem::align_of::<Bucket>() == 64);

impl Bucket {
    #[inline]
    fn header(&self) -> u64 {
        self.words[0].load(Ordering::Acquire)
    }
    #[inline]
    fn slots(&self) -> &[AtomicU64] {
        &self.words[1..]
    }
}

/// `n` zeroed buckets in a mapping of their own (advised for huge pages: a large index
/// touched at random would otherwise pay a TLB miss on most lookups).
#[derive(Debug)]
struct Buckets {
    mapping: Mapping,
    len: usize,
}

impl Buckets {
    /// Maps `n` zeroed buckets; an error (out of memory or address space) if they cannot be
    /// mapped.
    fn zeroed(n: usize) -> std::io::Result<Buckets> {
        let bytes = n
            .checked_mul(std::mem::size_of::<Bucket>())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        let mapping = Mapping::new(bytes)?;
        Ok(Buckets { mapping, len: n })
    }
}

impl std::ops::Deref for Buckets {
    type Target = [Bucket];
    fn deref(&self) -> &[Bucket] {
        // SAFETY: the mapping is page-aligned (so 64-byte aligned), zero-filled, and at least
        // `len` buckets long; an all-zero `[AtomicU64; 8]` is a valid Bucket, and buckets are
        // only accessed through atomics. The slice borrows `self`, which owns the mapping.
        unsafe { std::slice::from_raw_parts(self.mapping.as_ptr().cast::<Bucket>(), self.len) }
    }
}

#[derive(Debug)]
struct Table {
    roots: Buckets,
    mask: usize,
    /// Sub-bucket groups; group 0 is never handed out (CHILD = 0 means "no children").
    pool: Buckets,
    /// Groups never handed out start here.
    pool_next: AtomicU32,
    /// Groups handed out, emptied and unlinked again, ready for reuse.
    free_groups: Mutex<Vec<u32>>,
    free_group_count: AtomicU32,
}

impl Table {
    /// A table of `roots` roots and its pool; an error if they cannot be mapped.
    fn new(roots: usize) -> std::io::Result<Table> {
        let groups = (roots / 4).max(16);
        Ok(Table {
            roots: Buckets::zeroed(roots)?,
            mask: roots - 1,
            pool: Buckets::zeroed(groups * GROUP)?,
            pool_next: AtomicU32::new(1),
            free_groups: Mutex::new(Vec::new()),
            free_group_count: AtomicU32::new(0),
        })
    }

    fn groups(&self) -> u32 {
        (self.pool.len() / GROUP) as u32
    }

    /// Bytes resident: the roots and the pool up to the last group ever handed out (a given
    /// back group's lines stay resident for reuse; the pool past the mark is mapped but was
    /// never touched).
    fn resident_bytes(&self) -> usize {
        let groups = self.pool_next.load(Ordering::Relaxed).min(self.groups()) as usize;
        (self.roots.len() + groups * GROUP) * 64
    }

    #[inline]
    fn root(&self, hash: u64) -> &Bucket {
        &self.roots[hash as usize & self.mask]
    }

    #[inline]
    fn child(&self, group: u32, tag: u16, depth: u32) -> &Bucket {
        &self.pool[group as usize * GROUP + sub_bucket(tag, depth)]
    }

    /// A sub-bucket group: a given back one, or the next never used, if `memory` allows
    /// the bytes it takes.
    fn alloc_group(&self, memory: &MemoryBudget) -> Option<u32> {
        if self.free_group_count.load(Ordering::Relaxed) > 0 {
            let mut free = self.free_groups.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(g) = free.pop() {
                self.free_group_count.store(free.len() as u32, Ordering::Relaxed);
                return Some(g);
            }
        }
        if self.pool_next.load(Ordering::Relaxed) >= self.groups() || !memory.reserve(GROUP_BYTES) {
            return None;
        }
        let g = self.pool_next.fetch_add(1, Ordering::Relaxed);
        if g < self.groups() {
            Some(g)
        } else {
            memory.release(GROUP_BYTES);
            None
        }
    }

    fn free_group(&self, g: u32) {
        let mut free = self.free_groups.lock().unwrap_or_else(|e| e.into_inner());
        free.push(g);
        self.free_group_count.store(free.len() as u32, Ordering::Relaxed);
    }

    /// An occupied slot in a leaf sub-bucket (one without children) of `root`'s tree, found
    /// depth first; `None` if the tree has no sub-buckets or they are empty.
    fn deepest_slot<'t>(&'t self, root: &'t Bucket) -> Option<&'t AtomicU64> {
        let child = header_child(root.header());
        if child == 0 {
            return None;
        }
        for i in 0..GROUP {
            let b = &self.pool[child as usize * GROUP + i];
            if let Some(s) = self.deepest_slot(b) {
                return Some(s);
            }
            if let Some(s) = b.slots().iter().find(|s| s.load(Ordering::Relaxed) != 0) {
                return Some(s);
            }
        }
        None
    }

    /// Whether a group has no slots and no children.
    fn group_is_empty(&self, g: u32) -> bool {
        (0..GROUP).all(|i| {
            let b = &self.pool[g as usize * GROUP + i];
            header_child(b.header()) == 0
                && b.slots().iter().all(|s| s.load(Ordering::Relaxed) == 0)
        })
    }

    /// Groups handed out and not given back.
    fn groups_in_use(&self) -> u32 {
        let handed_out = self.pool_next.load(Ordering::Relaxed).min(self.groups());
        handed_out.saturating_sub(self.free_group_count.load(Ordering::Relaxed))
    }

    fn pool_half_used(&self) -> bool {
        self.groups_in_use() > self.groups() / 2
    }

    /// Every bucket of a root's tree, depth first.
    fn for_each_in_tree(&self, root: &Bucket, f: &mut impl FnMut(&Bucket)) {
        f(root);
        let child = header_child(root.header());
        if child != 0 {
            for i in 0..GROUP {
                self.for_each_in_tree(&self.pool[child as usize * GROUP + i], f);
            }
        }
    }
}

fn lock_root(root: &Bucket) {
    let mut spins = 0u32;
    loop {
        let h = root.words[0].load(Ordering::Relaxed);
        if h & LOCK_BIT == 0
            && root.words[0]
                .compare_exchange_weak(h, h | LOCK_BIT, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn unlock_root(root: &Bucket) {
    root.words[0].fetch_and(!LOCK_BIT, Ordering::Release);
}

/// Index statistics.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexStats {
    /// Bytes resident ([`Index::resident_bytes`]).
    pub bytes: usize,
    /// Root buckets of the current table.
    pub buckets: usize,
    /// Completed global growths.
    pub resizes: u64,
    /// Items dropped because a full path found no sub-bucket to grow into.
    pub evictions: u64,
    /// Growths given up because their new table could not be mapped (out of memory): the
    /// index went on in its current table, evicting from full paths.
    pub growth_failures: u64,
    /// Bytes of the SLB's tables (0: no SLB), included in `bytes`.
    pub slb_bytes: usize,
    /// Keys the SLB admitted.
    pub slb_admissions: u64,
}

/// Maintenance steps without a growth attempt after a growth could not map its table.
const GROWTH_BACKOFF: u32 = 4096;

/// Bytes of one sub-bucket group.
const GROUP_BYTES: usize = GROUP * std::mem::size_of::<Bucket>();

/// The memory the index may keep resident, and what it keeps. Without a limit (the default)
/// it only counts; with one (`memory_includes_index`), a new group or table that would pass
/// the limit is refused: an insert then evicts as when the pool is used up, and a growth waits
/// until the owner raises the limit.
#[derive(Debug)]
struct MemoryBudget {
    /// Bytes the tables may have resident (`usize::MAX`: no limit).
    limit: AtomicUsize,
    /// Bytes resident: each live table's roots and its pool up to the last group handed
    /// out, tables waiting to be freed included.
    resident: AtomicUsize,
    /// Bytes of a table that a growth is waiting to map (0: none waits).
    wanted: AtomicUsize,
}

impl MemoryBudget {
    /// Counts `bytes` more if the limit allows; returns whether it did.
    fn reserve(&self, bytes: usize) -> bool {
        let before = self.resident.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > self.limit.load(Ordering::Relaxed) {
            self.resident.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn release(&self, bytes: usize) {
        self.resident.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The hash index. All methods that return or use references into tables take a [`Guard`].
#[derive(Debug)]
pub struct Index {
    current: AtomicPtr<Table>,
    /// The table being migrated from, or null.
    old: AtomicPtr<Table>,
    /// Next old root to migrate.
    migrate_next: AtomicUsize,
    max_roots: usize,
    /// Serializes starting and finishing growths (rare).
    growth: Mutex<()>,
    retired: Mutex<Vec<(u64, *mut Table)>>,
    has_retired: AtomicBool,
    resizes: AtomicU64,
    evictions: AtomicU64,
    /// Growths that could not map their new table.
    growth_failures: AtomicU64,
    /// Maintenance steps to let pass before trying a growth again after one failed to map
    /// its table (so an out-of-memory system is not asked for a mapping on every write).
    growth_backoff: AtomicU32,
    memory: MemoryBudget,
    /// The search lookaside buffer, if enabled ([`Index::enable_slb`]).
    slb: Option<Slb>,
    /// Whether lookups consult it ([`Index::use_slb`]).
    slb_lookups: AtomicBool,
}

// SAFETY: the raw table pointers are owned by the index (created from Box, freed once) and
// tables contain only atomics; `retired` holds pointers no thread dereferences except to free.
unsafe impl Send for Index {}
// SAFETY: as above; shared access goes through atomics and the epoch protocol.
unsafe impl Sync for Index {}

/// A locked root bucket: the right to change one tree of slots.
#[derive(Debug)]
pub struct Locked<'g> {
    table: &'g Table,
    root: &'g Bucket,
    tag: u16,
    /// Whether `tag` names the path of the slots being changed (not so for scan visitors,
    /// which see the whole tree; their removals leave empty groups to the next rebuild).
    prune_path: bool,
    evictions: &'g AtomicU64,
    memory: &'g MemoryBudget,
    /// The SLB, kept true for every slot this lock changes (`slb.rs`, "Consistency").
    slb: Option<&'g Slb>,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        unlock_root(self.root);
    }
}

impl<'g> Locked<'g> {
    /// The slot on this key's path whose location satisfies `is_key`.
    pub fn find(&self, mut is_key: impl FnMut(Loc) -> bool) -> Option<(&'g AtomicU64, Loc)> {
        let mut bucket = self.root;
        for depth in 0..=MAX_DEPTH {
            for slot in bucket.slots() {
                let s = slot.load(Ordering::Acquire);
                if s != 0 && slot_tag(s) == self.tag && is_key(Loc::unpack(s)) {
                    return Some((slot, Loc::unpack(s)));
                }
            }
            let child = header_child(bucket.header());
            if child == 0 {
                break;
            }
            bucket = self.table.child(child, self.tag, depth);
        }
        None
    }

    /// Points a found slot at a new location.
    pub fn replace(&self, slot: &AtomicU64, loc: Loc) {
        let new = loc.pack(self.tag);
        let taken = self.slb.and_then(|slb| slb.take(slot.load(Ordering::Relaxed)));
        slot.store(new, Ordering::Release);
        if let (Some(slb), Some(taken)) = (self.slb, taken) {
            slb.put_back(taken, new);
        }
    }

    /// Empties a found slot. If the slot is in the root and the tree has sub-buckets, the
    /// deepest item of the tree moves up into it, so sub-bucket groups drain as the tree
    /// shrinks; groups left empty are given back for reuse.
    ///
    /// Moving an item up runs against the direction lookups scan (root first), so the root's
    /// CAS is bumped between storing the item in its new slot and clearing the old one, and
    /// lookups that miss re-check the CAS and go again (`find_in`). A reader still inside a
    /// group that is given back and reused by another root sees only other keys' valid slots
    /// (which fail the key comparison) and stops within the depth limit.
    pub fn remove(&self, slot: &AtomicU64) {
        if let Some(slb) = self.slb {
            slb.take(slot.load(Ordering::Relaxed));
        }
        slot.store(0, Ordering::Release);
        if !self.prune_path {
            return;
        }
        let in_root = self.root.slots().iter().any(|s| std::ptr::eq(s, slot));
        if in_root && header_child(self.root.header()) != 0 {
            if let Some(donor) = self.table.deepest_slot(self.root) {
                let moved = donor.load(Ordering::Relaxed);
                slot.store(moved, Ordering::Release);
                self.bump_cas();
                donor.store(0, Ordering::Release);
                self.prune(slot_tag(moved));
            }
        }
        self.prune(self.tag);
    }

    /// Unlinks empty leaf groups on `tag`'s path, deepest first.
    fn prune(&self, tag: u16) {
        let mut path = [self.root; MAX_DEPTH as usize + 1];
        let mut len = 1;
        while len <= MAX_DEPTH as usize {
            let child = header_child(path[len - 1].header());
            if child == 0 {
                break;
            }
            path[len] = self.table.child(child, tag, len as u32 - 1);
            len += 1;
        }
        for parent in path[..len].iter().rev().skip(1) {
            let header = parent.header();
            let g = header_child(header);
            if g == 0 || !self.table.group_is_empty(g) {
                break;
            }
            // Only the lock holder writes CHILD; the store keeps LOCK and CAS.
            parent.words[0].store(header & !(CHILD_MASK << CHILD_SHIFT), Ordering::Release);
            self.table.free_group(g);
        }
    }

    /// Adds a slot for `loc`. Returns the location of an item the index had to drop to make
    /// room (see the module doc), if any.
    pub fn insert(&self, loc: Loc) -> Option<Loc> {
        let evicted = insert_locked(
            self.table,
            self.root,
            self.tag,
            loc.pack(self.tag),
            self.memory,
            self.slb,
        );
        if evicted.is_some() {
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        evicted
    }

    /// The root's CAS value.
    pub fn cas(&self) -> u64 {
        header_cas(self.root.header())
    }

    /// Marks a change: called after publishing it.
    pub fn bump_cas(&self) {
        self.root.words[0].fetch_add(1 << CAS_SHIFT, Ordering::Release);
    }

    /// Calls `f` for every slot in the tree (any tag).
    fn for_each_slot(&self, mut f: impl FnMut(&AtomicU64, Loc)) {
        self.table.for_each_in_tree(self.root, &mut |b| {
            for slot in b.slots() {
                let s = slot.load(Ordering::Acquire);
                if s != 0 {
                    f(slot, Loc::unpack(s));
                }
            }
        });
    }
}

/// Stores `packed` on `tag`'s path under `root` (locked by the caller).
fn insert_locked(
    table: &Table,
    root: &Bucket,
    tag: u16,
    packed: u64,
    memory: &MemoryBudget,
    slb: Option<&Slb>,
) -> Option<Loc> {
    let mut bucket = root;
    let mut depth = 0;
    loop {
        for slot in bucket.slots() {
            if slot.load(Ordering::Relaxed) == 0 {
                slot.store(packed, Ordering::Release);
                return None;
            }
        }
        let header = bucket.header();
        let mut child = header_child(header);
        if child == 0 {
            match (depth < MAX_DEPTH).then(|| table.alloc_group(memory)).flatten() {
                Some(g) => {
                    // Only the lock holder writes CHILD, so a load-modify-store is enough; the
                    // store keeps LOCK and CAS as they are.
                    bucket.words[0].store(
                        header & !(CHILD_MASK << CHILD_SHIFT) | u64::from(g) << CHILD_SHIFT,
                        Ordering::Release,
                    );
                    child = g;
                }
                None => {
                    let first = &bucket.slots()[0];
                    let old = first.load(Ordering::Relaxed);
                    if let Some(slb) = slb {
                        slb.take(old);
                    }
                    first.store(packed, Ordering::Release);
                    return Some(Loc::unpack(old));
                }
            }
        }
        bucket = table.child(child, tag, depth);
        depth += 1;
    }
}

impl Index {
    /// An index whose first table has `roots` buckets (rounded up to a power of two) and which
    /// never grows beyond `max_roots`; an error if the first table cannot be mapped.
    pub fn new(roots: usize, max_roots: usize) -> std::io::Result<Index> {
        let roots = roots.next_power_of_two().max(16);
        let table = Box::new(Table::new(roots)?);
        let memory = MemoryBudget {
            limit: AtomicUsize::new(usize::MAX),
            resident: AtomicUsize::new(table.resident_bytes()),
            wanted: AtomicUsize::new(0),
        };
        let table = Box::into_raw(table);
        Ok(Index {
            current: AtomicPtr::new(table),
            old: AtomicPtr::new(std::ptr::null_mut()),
            migrate_next: AtomicUsize::new(0),
            max_roots: max_roots.next_power_of_two().max(roots),
            growth: Mutex::new(()),
            retired: Mutex::new(Vec::new()),
            has_retired: AtomicBool::new(false),
            resizes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            growth_failures: AtomicU64::new(0),
            growth_backoff: AtomicU32::new(0),
            memory,
            slb: None,
            slb_lookups: AtomicBool::new(false),
        })
    }

    fn tables<'g>(&self, _guard: &'g Guard<'_>) -> (&'g Table, Option<&'g Table>) {
        let current = self.current.load(Ordering::SeqCst);
        let old = self.old.load(Ordering::SeqCst);
        // SAFETY: table pointers come from Box::into_raw and are freed only after being
        // retired and `Epochs::is_safe` says no pinned participant can hold them; the guard
        // proves the caller is pinned, and it was pinned before these loads.
        // While a growth is being started, `old` may already name the current table: that is
        // no growth yet.
        unsafe { (&*current, if old == current { None } else { old.as_ref() }) }
    }

    /// Looks `hash` up; `is_key` is asked about each location whose tag matches.
    pub fn find(
        &self,
        guard: &Guard<'_>,
        hash: u64,
        mut is_key: impl FnMut(Loc) -> bool,
    ) -> Option<Loc> {
        let (current, old) = self.tables(guard);
        if let Some(old) = old {
            let root = old.root(hash);
            if root.header() & MIGRATED_BIT == 0 {
                if let Some(loc) = find_in(old, root, hash, &mut is_key) {
                    return Some(loc);
                }
                if root.header() & MIGRATED_BIT == 0 {
                    return None;
                }
            }
        }
        find_in(current, current.root(hash), hash, &mut is_key)
    }

    /// [`Index::find`] through the SLB when it is enabled: a key the SLB holds is found
    /// there (counted in `slb_hits`) without reading its index bucket; one found in the index
    /// is noted as a sighting, which may admit it (`slb.rs`, "Admission"). `probe` is the
    /// caller's own SLB state: its sampling, and whether the SLB pays for its lookups
    /// ([`SlbProbe`]; a reader whose lookups rarely hit goes to the index directly).
    #[inline]
    pub fn find_hot(
        &self,
        guard: &Guard<'_>,
        hash: u64,
        is_key: impl FnMut(Loc) -> bool,
        probe: &mut SlbProbe,
        slb_hits: &AtomicU64,
    ) -> Option<Loc> {
        match &self.slb {
            Some(slb) if self.slb_lookups.load(Ordering::Relaxed) && probe.consults() => {
                self.find_through_slb(slb, guard, hash, is_key, probe, slb_hits)
            }
            _ => self.find(guard, hash, is_key),
        }
    }

    /// The SLB's part of [`Index::find_hot`], out of line: without an SLB (the default) the
    /// read path stays small enough for callers to inline (keeping it inline cost 58
    /// instructions per RESP GET in `bench/cachegrind`, where the server's GET handler
    /// stopped inlining the read).
    #[inline(never)]
    fn find_through_slb(
        &self,
        slb: &Slb,
        guard: &Guard<'_>,
        hash: u64,
        mut is_key: impl FnMut(Loc) -> bool,
        probe: &mut SlbProbe,
        slb_hits: &AtomicU64,
    ) -> Option<Loc> {
        if let Some(loc) = slb.find(hash, &mut is_key, probe) {
            crate::epoch::bump(slb_hits);
            probe.counted(true);
            return Some(loc);
        }
        // A lookup of an absent key pays for the SLB as much as one the index then finds.
        probe.counted(false);
        let loc = self.find(guard, hash, &mut is_key)?;
        if slb.sighted(hash, probe) {
            self.admit(guard, hash, loc);
        }
        Some(loc)
    }

    /// Caches `loc` for `hash`'s key in the SLB if the index still maps the key to it, seen
    /// under the key's root lock (the SLB's invariant, `slb.rs`). Not while a growth is
    /// under way (locking would first migrate the root; admissions can wait).
    fn admit(&self, guard: &Guard<'_>, hash: u64, loc: Loc) {
        let (Some(slb), (current, None)) = (&self.slb, self.tables(guard)) else {
            return;
        };
        let root = current.root(hash);
        lock_root(root);
        let locked = self.locked(current, root, tag_of(hash), true);
        // A root that migrated meanwhile no longer holds its keys' slots.
        if root.header() & MIGRATED_BIT == 0 && locked.find(|l| l == loc).is_some() {
            slb.insert(hash, loc);
        }
    }

    /// Puts a search lookaside buffer of `bytes` of cache table (at most 2¹⁶ 64-byte
    /// buckets; `slb.rs`) in front of the index, counted in its resident bytes. Returns whether it was made (0 bytes, or tables that cannot be
    /// mapped, leave the index without one).
    pub fn enable_slb(&mut self, bytes: usize) -> bool {
        self.slb = Slb::new(bytes);
        self.slb_lookups.store(self.slb.is_some(), Ordering::Relaxed);
        if let Some(slb) = &self.slb {
            self.memory.resident.fetch_add(slb.bytes(), Ordering::Relaxed);
        }
        self.slb.is_some()
    }

    /// Checks the SLB's invariant (`slb.rs`, "Consistency"): every cached location is
    /// indexed, for a key whose hash (`rehash`) chooses the entry's bucket and discriminant.
    /// For audits of a quiet engine.
    ///
    /// # Panics
    /// If an entry breaks it.
    pub fn validate_slb(&self, guard: &Guard<'_>, rehash: &impl Fn(Loc) -> u64) {
        let Some(slb) = &self.slb else { return };
        slb.for_each_entry(|fits, loc| {
            let hash = rehash(loc);
            assert!(fits(hash), "SLB entry {loc:?} is in the wrong bucket for its key");
            assert_eq!(
                self.find(guard, hash, |l| l == loc),
                Some(loc),
                "SLB entry {loc:?} names a location the index does not hold"
            );
        });
    }

    /// Whether [`Index::find_hot`] consults the SLB (there is one, and lookups use it).
    pub fn slb_consulted(&self) -> bool {
        self.slb.is_some() && self.slb_lookups.load(Ordering::Relaxed)
    }

    /// Whether [`Index::find_hot`] consults the SLB. Slot changes keep it true either way.
    pub fn use_slb(&self, on: bool) {
        self.slb_lookups.store(on && self.slb.is_some(), Ordering::Relaxed);
    }

    /// Starts loading the root bucket for `hash` into the CPU cache (batched lookups issue this
    /// for every key first, so their memory misses overlap).
    #[inline]
    pub fn prefetch_root(&self, guard: &Guard<'_>, hash: u64) {
        let (current, old) = self.tables(guard);
        prefetch(old.unwrap_or(current).root(hash));
    }

    /// The location of the first slot in `hash`'s root bucket whose tag matches, without
    /// comparing keys: the record a lookup will most likely read, for prefetching.
    #[inline]
    pub fn probable(&self, guard: &Guard<'_>, hash: u64) -> Option<Loc> {
        let (current, old) = self.tables(guard);
        let root = old.unwrap_or(current).root(hash);
        let tag = tag_of(hash);
        root.slots()
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .find(|&s| s != 0 && slot_tag(s) == tag)
            .map(Loc::unpack)
    }

    /// Like [`Index::find`], also returning the root's CAS value read consistently with the
    /// location: retried until no change happened in between.
    pub fn find_with_cas(
        &self,
        guard: &Guard<'_>,
        hash: u64,
        mut is_key: impl FnMut(Loc) -> bool,
    ) -> Option<(Loc, u64)> {
        loop {
            let (current, old) = self.tables(guard);
            let (table, root) = match old {
                Some(old) if old.root(hash).header() & MIGRATED_BIT == 0 => (old, old.root(hash)),
                _ => (current, current.root(hash)),
            };
            let before = root.header();
            let found = find_in(table, root, hash, &mut is_key);
            let after = root.header();
            if header_cas(before) == header_cas(after) && after & MIGRATED_BIT == 0 {
                return found.map(|loc| (loc, header_cas(after)));
            }
        }
    }

    /// Locks the root for `hash`, migrating it first if a growth is under way. `rehash` gives
    /// the full hash of the item at a location (migration needs it); `on_evict` is told of
    /// items the index drops.
    pub fn lock<'g>(
        &'g self,
        guard: &'g Guard<'_>,
        hash: u64,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
    ) -> Locked<'g> {
        loop {
            let (current, old) = self.tables(guard);
            if let Some(old) = old {
                self.migrate_root(old, current, hash as usize & old.mask, rehash, on_evict);
            }
            let root = current.root(hash);
            lock_root(root);
            if root.header() & MIGRATED_BIT != 0 {
                // A growth started after `tables` was read: this root is frozen; go again.
                unlock_root(root);
                continue;
            }
            return self.locked(current, root, tag_of(hash), true);
        }
    }

    /// The change rights over `root`'s tree, which the caller has just locked (unlocked when
    /// they drop); `prune_path`: whether `tag` names the path of the slots to change.
    fn locked<'g>(
        &'g self,
        table: &'g Table,
        root: &'g Bucket,
        tag: u16,
        prune_path: bool,
    ) -> Locked<'g> {
        Locked {
            table,
            root,
            tag,
            prune_path,
            evictions: &self.evictions,
            memory: &self.memory,
            slb: self.slb.as_ref(),
        }
    }

    /// Moves one old root's tree into the new table (no-op if already moved).
    fn migrate_root(
        &self,
        old: &Table,
        new: &Table,
        i: usize,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
    ) {
        let root = &old.roots[i];
        if root.header() & MIGRATED_BIT != 0 {
            return;
        }
        lock_root(root);
        if root.header() & MIGRATED_BIT != 0 {
            unlock_root(root);
            return;
        }
        let old_cas = header_cas(root.header());
        for j in new_roots(old, new, i).into_iter().flatten() {
            let r = &new.roots[j];
            lock_root(r);
            let cas = header_cas(r.header()).max(old_cas) + 1;
            let h = r.words[0].load(Ordering::Relaxed);
            r.words[0].store(h & !(u64::MAX << CAS_SHIFT) | cas << CAS_SHIFT, Ordering::Release);
            unlock_root(r);
        }
        old.for_each_in_tree(root, &mut |b| {
            for slot in b.slots() {
                let s = slot.load(Ordering::Acquire);
                if s == 0 {
                    continue;
                }
                let hash = rehash(Loc::unpack(s));
                let r = new.root(hash);
                lock_root(r);
                let slb = self.slb.as_ref();
                if let Some(evicted) = insert_locked(new, r, tag_of(hash), s, &self.memory, slb) {
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                    on_evict(evicted);
                }
                r.words[0].fetch_add(1 << CAS_SHIFT, Ordering::Release);
                unlock_root(r);
            }
        });
        root.words[0].fetch_or(MIGRATED_BIT, Ordering::Release);
        unlock_root(root);
    }

    /// Does a bounded step of background work: starts a growth when the pool is half used,
    /// and migrates up to `budget` old roots. Returns true while a growth is under way.
    pub fn maintain(
        &self,
        guard: &Guard<'_>,
        epochs: &Epochs,
        budget: usize,
        items: &impl Fn() -> u64,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
    ) -> bool {
        if self.has_retired.load(Ordering::Relaxed) {
            self.free_retired(epochs);
        }
        let (current, old) = self.tables(guard);
        let Some(old) = old else {
            if current.pool_half_used() {
                // Churn alone can use the pool up (groups emptied on a key's path are reused,
                // but partly filled groups and those emptied by scans are not): double only
                // if the load calls for it, otherwise rebuild at the same size, which
                // compacts every tree into a fresh pool.
                let loaded = items() > GROW_LOAD * current.roots.len() as u64;
                let roots = current.roots.len() * if loaded { 2 } else { 1 };
                let backoff = self.growth_backoff.load(Ordering::Relaxed);
                if backoff > 0 {
                    // A recent growth could not map its table: wait before asking again.
                    self.growth_backoff.store(backoff - 1, Ordering::Relaxed);
                } else if roots <= self.max_roots {
                    return self.start_growth(current, roots);
                }
            }
            // No growth is called for (any longer): nothing to wait for.
            self.memory.wanted.store(0, Ordering::Relaxed);
            return false;
        };
        for _ in 0..budget {
            let i = self.migrate_next.fetch_add(1, Ordering::Relaxed);
            if i >= old.roots.len() {
                self.finish_growth(old, current, epochs, rehash, on_evict);
                return false;
            }
            self.migrate_root(old, current, i, rehash, on_evict);
        }
        true
    }

    /// Starts a growth into a table of `roots` roots, if none started meanwhile and the
    /// memory budget allows the new table (otherwise the bytes it needs are noted as
    /// wanted). Returns whether a growth is under way.
    fn start_growth(&self, current: &Table, roots: usize) -> bool {
        // Serialized, and re-checked under the lock: between reading the tables and here,
        // another thread may have started and even finished a growth, and publishing the
        // table we read as `old` again would resurrect a retired table.
        let _growth = self.growth.lock().unwrap_or_else(|e| e.into_inner());
        let current_ptr = std::ptr::from_ref(current).cast_mut();
        if self.current.load(Ordering::SeqCst) != current_ptr
            || !self.old.load(Ordering::SeqCst).is_null()
        {
            return !self.old.load(Ordering::SeqCst).is_null();
        }
        // A new table starts with its roots and pool group 0 (never handed out) counted.
        let bytes = (roots + GROUP) * std::mem::size_of::<Bucket>();
        if !self.memory.reserve(bytes) {
            self.memory.wanted.store(bytes, Ordering::Relaxed);
            return false;
        }
        self.memory.wanted.store(0, Ordering::Relaxed);
        let Ok(table) = Table::new(roots) else {
            // Out of memory (or address space) for the new table: no growth. The index keeps
            // working in the table it has; a full path evicts its first slot, as when the
            // pool runs out, and a later maintenance step tries again.
            self.memory.release(bytes);
            self.growth_failures.fetch_add(1, Ordering::Relaxed);
            self.growth_backoff.store(GROWTH_BACKOFF, Ordering::Relaxed);
            return false;
        };
        let new = Box::into_raw(Box::new(table));
        self.migrate_next.store(0, Ordering::SeqCst);
        self.old.store(current_ptr, Ordering::SeqCst);
        self.current.store(new, Ordering::SeqCst);
        true
    }

    /// Limits the bytes the index may keep resident (see [`Index::resident_bytes`]); tables
    /// and groups it already has stay.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.memory.limit.store(bytes, Ordering::Relaxed);
    }

    /// Bytes resident: every live table's roots and its pool up to the last group ever
    /// handed out, tables waiting for readers to leave them included.
    pub fn resident_bytes(&self) -> usize {
        self.memory.resident.load(Ordering::Relaxed)
    }

    /// Bytes a growth waits for the memory limit to allow (0: none waits).
    pub fn wanted_bytes(&self) -> usize {
        self.memory.wanted.load(Ordering::Relaxed)
    }

    fn finish_growth(
        &self,
        old: &Table,
        new: &Table,
        epochs: &Epochs,
        rehash: &impl Fn(Loc) -> u64,
        on_evict: &mut impl FnMut(Loc),
    ) {
        // Every root must have moved before the old table goes, including roots whose turn
        // another thread claimed: migrate any stragglers here (migration is idempotent).
        for i in 0..old.roots.len() {
            self.migrate_root(old, new, i, rehash, on_evict);
        }
        let old_ptr = std::ptr::from_ref(old).cast_mut();
        let _growth = self.growth.lock().unwrap_or_else(|e| e.into_inner());
        if self
            .old
            .compare_exchange(old_ptr, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let epoch = epochs.retire();
            self.retired.lock().unwrap_or_else(|e| e.into_inner()).push((epoch, old_ptr));
            self.has_retired.store(true, Ordering::Relaxed);
            self.resizes.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn free_retired(&self, epochs: &Epochs) {
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        self.has_retired.store(false, Ordering::Relaxed);
        retired.retain(|&(epoch, table)| {
            if epochs.is_safe(epoch) {
                // SAFETY: the table was unpublished before `epoch` and no pinned participant
                // is older than that epoch, so nobody references it; it came from Box::into_raw
                // and is in the retired list exactly once.
                let table = unsafe { Box::from_raw(table) };
                self.memory.release(table.resident_bytes());
                drop(table);
                false
            } else {
                self.has_retired.store(true, Ordering::Relaxed);
                true
            }
        });
    }

    /// Root buckets of the current table.
    pub fn roots(&self, guard: &Guard<'_>) -> usize {
        self.tables(guard).0.roots.len()
    }

    /// Current statistics.
    pub fn stats(&self, guard: &Guard<'_>) -> IndexStats {
        let (current, _) = self.tables(guard);
        IndexStats {
            bytes: self.resident_bytes(),
            buckets: current.roots.len(),
            resizes: self.resizes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            growth_failures: self.growth_failures.load(Ordering::Relaxed),
            slb_bytes: self.slb.as_ref().map_or(0, Slb::bytes),
            slb_admissions: self.slb.as_ref().map_or(0, Slb::admissions),
        }
    }
}

/// Asks the CPU to start loading the cache line at `p` (a hint; no effect on other
/// architectures).
#[inline]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, even on an invalid address, and
    // reads nothing into the program. SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The roots of `new` that old root `i`'s keys move to: `i`, and `i + old size` when the new
/// table is twice as large.
fn new_roots(old: &Table, new: &Table, i: usize) -> [Option<usize>; 2] {
    let doubled = new.roots.len() > old.roots.len();
    [Some(i), doubled.then(|| i + old.roots.len())]
}

fn find_in(
    table: &Table,
    root: &Bucket,
    hash: u64,
    is_key: &mut impl FnMut(Loc) -> bool,
) -> Option<Loc> {
    let tag = tag_of(hash);
    loop {
        let before = header_cas(root.header());
        if let Some(loc) = walk_path(table, root, tag, |_| {}, is_key) {
            return Some(loc);
        }
        // A miss is an answer only if no item moved up the tree meanwhile (see
        // `Locked::remove`): otherwise look again.
        if header_cas(root.header()) == before {
            return None;
        }
    }
}

/// One pass down `tag`'s path from `root`: `visit` sees each bucket read, `is_key` each
/// location whose tag matches, until it accepts one.
#[inline]
fn walk_path(
    table: &Table,
    root: &Bucket,
    tag: u16,
    mut visit: impl FnMut(&Bucket),
    is_key: &mut impl FnMut(Loc) -> bool,
) -> Option<Loc> {
    let mut bucket = root;
    for depth in 0..=MAX_DEPTH {
        visit(bucket);
        for slot in bucket.slots() {
            let s = slot.load(Ordering::Acquire);
            if s != 0 && slot_tag(s) == tag {
                let loc = Loc::unpack(s);
                if is_key(loc) {
                    return Some(loc);
                }
            }
        }
        let child = header_child(bucket.header());
        if child == 0 {
            break;
        }
        bucket = table.child(child, tag, depth);
    }
    None
}

impl Drop for Index {
    fn drop(&mut self) {
        let current = *self.current.get_mut();
        let old = *self.old.get_mut();
        // SAFETY: `&mut self` means no other reference to any table exists. Each pointer came
        // from Box::into_raw and is freed once: current, old (if distinct and not null), and
        // the retired ones (never equal to current or old).
        unsafe {
            drop(Box::from_raw(current));
            if !old.is_null() && old != current {
                drop(Box::from_raw(old));
            }
            for (_, t) in self.retired.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
                drop(Box::from_raw(t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets past any address space: the size overflows, or the mapping cannot be made.
    const UNMAPPABLE: usize = 1 << 56;

    #[test]
    fn a_table_that_cannot_be_mapped_is_an_error_not_a_panic() {
        assert!(Buckets::zeroed(usize::MAX).is_err(), "size overflow");
        assert!(Table::new(UNMAPPABLE).is_err(), "out of address space");
        assert!(Index::new(UNMAPPABLE, UNMAPPABLE).is_err());
    }

    #[test]
    fn a_growth_that_cannot_map_its_table_leaves_the_index_working() {
        let epochs = Epochs::new(2);
        let id = epochs.register().unwrap();
        let index = Index::new(16, UNMAPPABLE).unwrap();
        let resident = index.resident_bytes();
        let loc = Loc { segment: 3, offset: 64 };
        let rehash = |_: Loc| 7u64;
        {
            let guard = epochs.pin(&id);
            let (current, _) = index.tables(&guard);
            assert!(!index.start_growth(current, UNMAPPABLE), "no growth under way");
            assert_eq!(index.stats(&guard).growth_failures, 1);
            assert_eq!(index.resident_bytes(), resident, "the reserved bytes are given back");
            assert_eq!(index.wanted_bytes(), 0);
            let locked = index.lock(&guard, 7, &rehash, &mut |_| {});
            assert_eq!(locked.insert(loc), None);
        }
        let guard = epochs.pin(&id);
        assert_eq!(index.find(&guard, 7, |l| l == loc), Some(loc));
    }
}
