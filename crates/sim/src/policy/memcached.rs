//! A model of memcached's memory: slab classes, pages handed out on demand, one LRU per class,
//! and optionally memcached 1.4's slab automove.
//!
//! # Slab classes
//!
//! memcached never allocates per item. Memory comes in **pages** (1 MiB, `-I`), and each page
//! belongs to one **slab class** and is cut into equal chunks. Class chunk sizes grow
//! geometrically, as `slabs_init` in memcached 1.4 computes them:
//!
//! ```text
//! size = 96                       (sizeof(item) 48 + chunk_size 48, i.e. -n 48)
//! while size <= page_size / factor:   (factor -f, default 1.25)
//!     size = next multiple of 8;  add a class of chunk `size`;  size = floor(size * factor)
//! add a last class whose chunk is the whole page
//! ```
//!
//! With the defaults: 96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, … 771184,
//! 1048576 (42 classes). An object of `size` bytes needs `size + 48` bytes, where 48 is
//! `sizeof(item)` on 64-bit memcached 1.4–1.6 with CAS enabled (links, times, lengths, flags
//! and the 8-byte CAS); the key's terminator and the flags suffix are not modelled, since an
//! [`Access`] carries one total size. It is stored in the smallest class whose chunk fits
//! that; if none does (more than a page) it is refused, like memcached's "object too large".
//!
//! # Storing, evicting, refusing
//!
//! To store an object in class `c` (as `do_item_alloc` → `slabs_alloc` → `lru_pull_tail`):
//! 1. a free chunk of `c` if there is one; else
//! 2. a new page for `c` while the memory limit has pages left (`do_slabs_newslab`); else
//! 3. evict the tail of `c`'s own LRU and reuse its chunk; else
//! 4. `c` holds no item at all: the store fails (memcached replies `SERVER_ERROR out of
//!    memory storing object`). The request is a miss and nothing is admitted.
//!
//! A hit moves the item to the head of its class's LRU. If the size changed, the item is
//! stored anew in its new class (memcached allocates a new item on every `set`); the request
//! is still a hit, but the item is gone if that store fails.
//!
//! Simplifications: the LRU is the plain per-class LRU of memcached 1.4 (no 1.5+ segmented
//! HOT/WARM/COLD LRU, no 60-second bump throttle `ITEM_UPDATE_INTERVAL`), no TTLs. Memory is
//! `capacity / page_size` whole pages. memcached also lets a class that has no page yet take
//! its first page even past the limit (`p->slabs > 0` in `do_slabs_newslab`), so it can
//! overshoot `-m` by a page per class; this model never exceeds its pages and refuses instead.
//!
//! # Slab automove (memcached 1.4.11+, `slab_automove=1`)
//!
//! Pages never move between classes on their own, so a workload whose sizes shift leaves
//! memory stranded in classes that no longer need it ("slab calcification"). memcached 1.4's
//! `slab_automove_decision` runs every 10 seconds; we run it every `window` requests:
//!
//! ```text
//! for each class i:
//!     diff = evictions of i in this window
//!     if diff == 0 and pages(i) > 2: zero_windows(i) += 1
//!         the first class (lowest id) with zero_windows >= 3 is the source
//!     else: zero_windows(i) = 0; the class with the largest diff > 0 is this window's top
//! if top == last window's winner: wins += 1, and at wins >= 3 the winner is the destination
//! else: winner = top, wins = 1
//! if source and destination: move one page from source to destination
//! ```
//!
//! That is: take a page from a class that has not evicted anything for three windows and
//! give it to the class that evicted the most in each of the last three windows. Moving a
//! page evicts the source's items from that page (memcached 1.4's `slab_rebalance` evicts
//! whatever lives in the chosen page); we evict from the source's LRU tail until a page's
//! worth of chunks is free, which is the most favourable choice. These evictions are not
//! counted as the source's evictions, as in memcached. One difference: memcached's loop
//! skips the largest class (`i < power_largest`); we consider every class.

use super::hash::KeyMap;
use super::list::{Arena, List};
use super::{Access, Policy};

/// Slab layout parameters (memcached's `-I`, `-f`, `-n`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlabConfig {
    /// Page size in bytes (`-I`, default 1 MiB); also the largest chunk and item.
    pub page_size: u32,
    /// Chunk size growth factor between classes (`-f`, default 1.25).
    pub growth_factor: f64,
    /// The smallest chunk in bytes (96: `sizeof(item)` + `-n 48`).
    pub smallest_chunk: u32,
    /// Bytes of item header charged on top of the object's size (48, `sizeof(item)`).
    pub item_header: u32,
}

impl Default for SlabConfig {
    fn default() -> Self {
        Self { page_size: 1 << 20, growth_factor: 1.25, smallest_chunk: 96, item_header: 48 }
    }
}

/// memcached aligns chunk sizes to this (`CHUNK_ALIGN_BYTES`).
const CHUNK_ALIGN: u32 = 8;

impl SlabConfig {
    /// Chunk sizes of all classes, smallest first, as memcached 1.4's `slabs_init`.
    pub fn chunk_sizes(&self) -> Vec<u32> {
        assert!(self.growth_factor > 1.0, "growth factor must exceed 1");
        assert!(self.smallest_chunk > 0 && self.smallest_chunk <= self.page_size);
        let mut sizes = Vec::new();
        let mut size = self.smallest_chunk;
        while f64::from(size) <= f64::from(self.page_size) / self.growth_factor {
            size = size.next_multiple_of(CHUNK_ALIGN);
            sizes.push(size);
            size = (f64::from(size) * self.growth_factor) as u32;
        }
        sizes.push(self.page_size);
        sizes
    }
}

/// Whether and how often pages move between classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Automove {
    /// Pages stay with the class that first took them (memcached's default before 1.5).
    Off,
    /// Run memcached 1.4's `slab_automove=1` decision every `window` requests.
    Every {
        /// Requests between two decisions.
        window: u64,
    },
}

#[derive(Debug)]
struct SlabClass {
    chunk: u32,
    per_page: u64,
    pages: u64,
    lru: List,
    evictions: u64,
    /// Automove bookkeeping: `evictions` at the end of the last window.
    evicted_old: u64,
    /// Automove bookkeeping: consecutive windows without evictions.
    zero_windows: u32,
}

impl SlabClass {
    fn chunks(&self) -> u64 {
        self.pages * self.per_page
    }
}

/// memcached's slab allocator with per-class LRU, over a memory limit in bytes.
#[derive(Debug)]
pub struct Memcached {
    config: SlabConfig,
    capacity: u64,
    free_pages: u64,
    classes: Vec<SlabClass>,
    map: KeyMap<u32>,
    arena: Arena,
    used: u64,
    automove: Automove,
    requests: u64,
    /// Automove: the class that evicted most in the last window(s), and for how many.
    winner: Option<usize>,
    wins: u32,
    pages_moved: u64,
    refused: u64,
}

impl Memcached {
    /// memcached with the default slab layout and a memory limit of `capacity` bytes.
    pub fn new(capacity: u64, automove: Automove) -> Self {
        Self::with_config(capacity, SlabConfig::default(), automove)
    }

    /// memcached with the given slab layout and a memory limit of `capacity` bytes.
    pub fn with_config(capacity: u64, config: SlabConfig, automove: Automove) -> Self {
        if let Automove::Every { window } = automove {
            assert!(window > 0, "automove window must be at least one request");
        }
        let classes = config
            .chunk_sizes()
            .into_iter()
            .map(|chunk| SlabClass {
                chunk,
                per_page: u64::from(config.page_size / chunk),
                pages: 0,
                lru: List::default(),
                evictions: 0,
                evicted_old: 0,
                zero_windows: 0,
            })
            .collect();
        Self {
            config,
            capacity,
            free_pages: capacity / u64::from(config.page_size),
            classes,
            map: KeyMap::default(),
            arena: Arena::new(),
            used: 0,
            automove,
            requests: 0,
            winner: None,
            wins: 0,
            pages_moved: 0,
            refused: 0,
        }
    }

    /// Pages moved between classes by automove so far.
    pub fn pages_moved(&self) -> u64 {
        self.pages_moved
    }

    /// Misses that could not be stored (too large, or no chunk for the class).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Pages held by each class, smallest chunk first.
    pub fn pages_per_class(&self) -> Vec<u64> {
        self.classes.iter().map(|c| c.pages).collect()
    }

    /// Evictions of each class so far (not counting automove's page moves).
    pub fn evictions_per_class(&self) -> Vec<u64> {
        self.classes.iter().map(|c| c.evictions).collect()
    }

    /// The class of an object of `size` bytes, if it fits in a page.
    fn class_for(&self, size: u32) -> Option<usize> {
        let need = u64::from(size) + u64::from(self.config.item_header);
        let c = self.classes.partition_point(|c| u64::from(c.chunk) < need);
        (c < self.classes.len()).then_some(c)
    }

    /// Removes the oldest item of class `c`.
    fn evict_tail(&mut self, c: usize) {
        let class = &mut self.classes[c];
        let idx = class.lru.oldest;
        class.lru.unlink(&mut self.arena, idx);
        self.used -= u64::from(self.arena[idx].size);
        self.map.remove(&self.arena[idx].key);
        self.arena.free(idx);
    }

    /// Finds a chunk in class `c` (steps 1–3 of the module doc); false if there is none.
    fn alloc_chunk(&mut self, c: usize) -> bool {
        let class = &mut self.classes[c];
        if (class.lru.len as u64) < class.chunks() {
            true
        } else if self.free_pages > 0 {
            self.free_pages -= 1;
            class.pages += 1;
            true
        } else if class.lru.len > 0 {
            class.evictions += 1;
            self.evict_tail(c);
            true
        } else {
            false
        }
    }

    /// Stores a new item; false if it was refused.
    fn store(&mut self, a: &Access) -> bool {
        let Some(c) = self.class_for(a.size) else {
            self.refused += 1;
            return false;
        };
        if !self.alloc_chunk(c) {
            self.refused += 1;
            return false;
        }
        let idx = self.arena.alloc(a.key, a.size);
        self.arena[idx].tag = c as u16;
        self.classes[c].lru.push_newest(&mut self.arena, idx);
        self.map.insert(a.key, idx);
        self.used += u64::from(a.size);
        true
    }

    /// memcached 1.4's `slab_automove_decision`, then the page move it asks for.
    fn automove_window(&mut self) {
        let mut source = None;
        let mut top = None;
        let mut top_evictions = 0;
        for (i, class) in self.classes.iter_mut().enumerate() {
            let diff = class.evictions - class.evicted_old;
            class.evicted_old = class.evictions;
            if diff == 0 && class.pages > 2 {
                class.zero_windows += 1;
                if source.is_none() && class.zero_windows >= 3 {
                    source = Some(i);
                }
            } else {
                class.zero_windows = 0;
                if diff > top_evictions {
                    top_evictions = diff;
                    top = Some(i);
                }
            }
        }
        let mut dest = None;
        if self.winner.is_some() && self.winner == top {
            self.wins += 1;
            if self.wins >= 3 {
                dest = self.winner;
            }
        } else {
            self.winner = top;
            self.wins = 1;
        }
        if let (Some(src), Some(dst)) = (source, dest) {
            self.move_page(src, dst);
        }
    }

    /// Takes one page from class `src` (evicting from its tail until a page's worth of
    /// chunks is free) and gives it to class `dst`.
    fn move_page(&mut self, src: usize, dst: usize) {
        let per_page = self.classes[src].per_page;
        while self.classes[src].chunks() - (self.classes[src].lru.len as u64) < per_page {
            self.evict_tail(src);
        }
        self.classes[src].pages -= 1;
        self.classes[dst].pages += 1;
        self.pages_moved += 1;
    }
}

impl Policy for Memcached {
    fn name(&self) -> String {
        match self.automove {
            Automove::Off => "memcached".to_owned(),
            Automove::Every { .. } => "memcached-automove".to_owned(),
        }
    }

    fn access(&mut self, a: &Access) -> bool {
        let hit = if let Some(&idx) = self.map.get(&a.key) {
            let c = usize::from(self.arena[idx].tag);
            if self.arena[idx].size == a.size {
                self.classes[c].lru.move_to_newest(&mut self.arena, idx);
            } else if self.class_for(a.size) == Some(c) {
                self.classes[c].lru.move_to_newest(&mut self.arena, idx);
                self.used = self.used - u64::from(self.arena[idx].size) + u64::from(a.size);
                self.classes[c].lru.set_size(&mut self.arena, idx, a.size);
            } else {
                // Another class: free the old chunk and store a new item.
                self.classes[c].lru.unlink(&mut self.arena, idx);
                self.used -= u64::from(self.arena[idx].size);
                self.map.remove(&a.key);
                self.arena.free(idx);
                self.store(a);
            }
            true
        } else {
            self.store(a);
            false
        };
        self.requests += 1;
        if let Automove::Every { window } = self.automove {
            if self.requests % window == 0 {
                self.automove_window();
            }
        }
        hit
    }

    fn remove(&mut self, a: &Access) -> bool {
        let Some(idx) = self.map.remove(&a.key) else { return false };
        // The chunk goes back to its class (the page stays the class's).
        let c = usize::from(self.arena[idx].tag);
        self.classes[c].lru.unlink(&mut self.arena, idx);
        self.used -= u64::from(self.arena[idx].size);
        self.arena.free(idx);
        true
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|&idx| self.arena[idx].size)
    }

    #[cfg(test)]
    fn validate(&self) {
        let mut pages = self.free_pages;
        let mut len = 0;
        let mut bytes = 0;
        for (i, c) in self.classes.iter().enumerate() {
            c.lru.validate(&self.arena);
            assert!(c.lru.len as u64 <= c.chunks(), "class {i} over its chunks");
            pages += c.pages;
            len += c.lru.len;
            bytes += c.lru.bytes;
        }
        assert_eq!(pages, self.capacity / u64::from(self.config.page_size));
        assert_eq!(len, self.map.len());
        assert_eq!(bytes, self.used);
        assert!(self.used <= self.capacity);
        for &idx in self.map.values() {
            let n = self.arena[idx];
            assert_eq!(self.class_for(n.size), Some(usize::from(n.tag)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Automove, Memcached, SlabConfig};
    use crate::policy::Policy;
    use crate::policy::testutil::expect_sized;

    /// 1 KiB pages so that tests need few objects. Classes: 96 120 152 192 240 304 384 480
    /// 600 752 1024 (ids 0..=10); 10 chunks of 96 per page, 6 of 152, 1 of 1024.
    fn small_pages() -> SlabConfig {
        SlabConfig { page_size: 1024, ..SlabConfig::default() }
    }

    #[test]
    fn default_classes_match_memcached() {
        // `memcached -vv` (1.4, -f 1.25 -n 48) prints these chunk sizes.
        let sizes = SlabConfig::default().chunk_sizes();
        assert_eq!(
            &sizes[..13],
            &[96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480]
        );
        assert_eq!(sizes.len(), 42);
        assert_eq!(sizes[40], 771_184);
        assert_eq!(sizes[41], 1 << 20);
        assert_eq!(
            small_pages().chunk_sizes(),
            [96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 1024]
        );
    }

    #[test]
    fn per_class_lru_and_refusal() {
        // 3 pages of 1 KiB. Sizes: 48 B → 96-B chunks (class 0), 100 B → 152-B chunks
        // (class 2), 900 B → 1024-B chunks (class 10).
        let mut c = Memcached::with_config(3 * 1024, small_pages(), Automove::Off);
        let mut reqs: Vec<(u64, u32)> = (1..=11).map(|k| (k, 48)).collect();
        reqs.extend((101..=106).map(|k| (k, 100)));
        // 1..=10 fill one page of class 0; 11 takes a second page. 101..=106 fill the third
        // and last page, in class 2.
        expect_sized(&mut c, &reqs, "MMMMMMMMMMM MMMMMM");
        assert_eq!(c.pages_per_class()[..3], [2, 0, 1]);
        // 107 (class 2): no free chunk, no free page: evict class 2's LRU tail, 101, even
        // though class 0 has 9 free chunks. 102 hits and becomes class 2's newest; 108
        // evicts 103. 201 (900 B, class 10) has no page and none is left: refused, twice.
        // 5000 B is larger than a page: refused.
        expect_sized(
            &mut c,
            &[(107, 100), (102, 100), (108, 100), (201, 900), (201, 900), (1, 48), (7000, 5000)],
            "M H M MM H M",
        );
        assert!(!c.contains(101) && !c.contains(103) && c.contains(102));
        assert!(!c.contains(201) && !c.contains(7000));
        assert_eq!(c.refused(), 3);
        assert_eq!(c.evictions_per_class()[2], 2);
        assert_eq!(c.len(), 17);
        assert_eq!(c.used(), 11 * 48 + 6 * 100);
    }

    #[test]
    fn size_change_moves_class() {
        let mut c = Memcached::with_config(2 * 1024, small_pages(), Automove::Off);
        let mut reqs: Vec<(u64, u32)> = (1..=10).map(|k| (k, 48)).collect();
        reqs.extend((101..=106).map(|k| (k, 100)));
        expect_sized(&mut c, &reqs, "MMMMMMMMMM MMMMMM");
        // Key 1 grows to 100 B: a hit, stored anew in class 2, which is full: evicts 101.
        expect_sized(&mut c, &[(1, 100), (1, 100), (101, 100)], "HH M");
        assert_eq!(c.classes[0].lru.len, 9);
        assert_eq!(c.classes[2].lru.len, 6);
        // 101 came back by evicting 102, the class-2 tail.
        assert!(c.contains(1) && c.contains(101) && !c.contains(102));
    }

    /// Class 0 takes 3 of 4 pages, then the workload moves to class 2.
    fn shifting_workload() -> Vec<(u64, u32)> {
        let mut reqs: Vec<(u64, u32)> = (1..=30).map(|k| (k, 48)).collect();
        reqs.extend((1001..=1036).map(|k| (k, 100)));
        reqs
    }

    #[test]
    fn without_automove_pages_stay() {
        let mut c = Memcached::with_config(4 * 1024, small_pages(), Automove::Off);
        let reqs = shifting_workload();
        expect_sized(&mut c, &reqs, &"M".repeat(reqs.len()));
        // Class 2 has one page: 6 objects, the newest. Class 0 keeps all 30.
        assert_eq!(c.pages_per_class()[..3], [3, 0, 1]);
        assert!((1..=30).all(|k| c.contains(k)));
        assert!((1031..=1036).all(|k| c.contains(k)) && !c.contains(1030));
    }

    #[test]
    fn automove_moves_a_page() {
        let mut c = Memcached::with_config(4 * 1024, small_pages(), Automove::Every { window: 10 });
        let reqs = shifting_workload();
        // Requests 1..=30 put 1..=30 in class 0 (3 pages); requests 31..=36 fill class 2's one
        // page; from 37 on, every request evicts class 2's tail.
        // Window ends (every 10 requests):
        //   30: class 0 (3 pages) evicted nothing: zero_windows 1. No top evicter.
        //   40: class 0 zero_windows 2; class 2 evicted 4: top, winner (wins 1).
        //   50: class 0 zero_windows 3: source. Class 2 top again: wins 2.
        //   60: class 0 still the source; class 2 wins 3: destination. Move one page: class 0
        //       is full, so its 10 oldest items (1..=10) are evicted to free a page.
        // Class 2 now has 2 pages (12 chunks); 1031..=1036 fill it without evicting.
        expect_sized(&mut c, &reqs, &"M".repeat(reqs.len()));
        assert_eq!(c.pages_moved(), 1);
        assert_eq!(c.pages_per_class()[..3], [2, 0, 2]);
        assert!((1..=10).all(|k| !c.contains(k)) && (11..=30).all(|k| c.contains(k)));
        assert!((1025..=1036).all(|k| c.contains(k)) && !c.contains(1024));
        assert_eq!(c.evictions_per_class()[..3], [0, 0, 24]);
    }
}
