//! Hot keys: the most referenced keys of a window, counted where the reference pools are
//! applied (the metadata worker, off the request path) and named from sampled references.
//!
//! ```text
//!  Worker ─ every reference ─► pool digests (1024) ──┐
//!         ─ 1 in SAMPLE_EVERY ► pool names (≤ 2 KiB) ┤ submit (the hitmap's queue)
//!                                                    ▼
//!                           metadata worker: TopK::record(digest), TopK::name(sample)
//! ```
//!
//! Counting follows ASketch (Roy, Khan and Alonso, "Augmented Sketch", SIGMOD 2016): a
//! count-min sketch with conservative update (two rows of [`CELLS`] cells) sees every
//! reference, and [`CAPACITY`] exact counters, as in Space-Saving (Metwally, Agrawal and El
//! Abbadi, ICDT 2005), hold the keys that earned them: a digest without a counter takes the
//! smallest counter's place only once its sketch estimate passes that count, and starts
//! from that estimate. So the long tail of a skewed stream costs two cell updates per
//! reference, and a count is never below the key's references in the window: exact for a
//! key that held its counter from its first reference (a skewed stream's head), otherwise
//! at most the sketch's error at the time it took its counter.
//!
//! Names: a digest cannot be turned back into a key, so workers put one reference in
//! [`SAMPLE_EVERY`] (chosen at random) into their pool with its tenant, database and key
//! (keys up to [`NAME_MAX`] bytes; longer keys are counted but never named). A sample names
//! the counter of its digest, if it has one. A key referenced `n` times in a window is
//! named with probability `1 − (1 − 1/64)^n` (0.79 at 100 references).
//!
//! Windows: counts start again every window (Valkey's `hotkeys-window-seconds` idea), a
//! window beginning with the first pool after the last one ended (an idle server opens
//! none); the last completed window is kept, frozen, for reports, which read it (or the
//! live one before any window completed). Reads and stores that hit are counted (what the pools carry);
//! misses are not.
//!
//! Memory: [`CAPACITY`] counters with room for a name (about 75 KiB), the sketch (64 KiB),
//! the frozen window's named keys, and each pool's name buffer.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::tenant::TenantId;

/// Counters kept (keys tracked at once).
pub const CAPACITY: usize = 256;
/// References per sampled name, on average.
pub const SAMPLE_EVERY: u32 = 64;
/// The longest key a sample names (memcached's key limit).
pub const NAME_MAX: usize = 250;
/// Bytes of names one reference pool carries; a sample that does not fit is skipped.
pub const NAMES_PER_POOL: usize = 2048;
/// Cells per row of the count-min sketch (`u32` each; two rows).
pub const CELLS: usize = 1 << 13;
/// Window length unless configured.
pub const DEFAULT_WINDOW_MS: u64 = 10_000;

/// One hot key of a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotKey {
    /// The tenant the key belongs to.
    pub tenant: TenantId,
    /// Its database (Redis `SELECT`).
    pub db: u8,
    /// The key.
    pub key: Vec<u8>,
    /// References counted in the window: never fewer than the key had, exact for a key that
    /// held its counter from its first reference.
    pub count: u64,
}

/// A window's hot keys, most referenced first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HotKeys {
    /// How long the window lasted (or has lasted, if it is the live one), in milliseconds.
    pub duration_ms: u64,
    /// References counted in the window (all keys).
    pub references: u64,
    /// Whether this is the live window (no window has completed since the last reset).
    pub live: bool,
    /// Named keys with a counter, most referenced first.
    pub keys: Vec<HotKey>,
}

/// Bytes of a name sample before its key.
const NAME_HEAD: usize = 8;

/// Appends one name sample to a pool's name buffer: digest (4 bytes, little-endian), tenant
/// (2 bytes, little-endian), database, key length, key. Skips keys longer than [`NAME_MAX`]
/// and samples that would take the buffer past [`NAMES_PER_POOL`].
#[inline]
pub fn push_name(names: &mut Vec<u8>, digest: u32, tenant: TenantId, db: u8, key: &[u8]) {
    if key.len() > NAME_MAX || names.len() + NAME_HEAD + key.len() > NAMES_PER_POOL {
        return;
    }
    names.extend_from_slice(&digest.to_le_bytes());
    names.extend_from_slice(&tenant.0.to_le_bytes());
    names.extend_from_slice(&[db, key.len() as u8]);
    names.extend_from_slice(key);
}

/// The samples of a name buffer written by [`push_name`]; stops at a malformed tail.
fn samples(mut names: &[u8]) -> impl Iterator<Item = (u32, TenantId, u8, &[u8])> {
    std::iter::from_fn(move || {
        let (head, rest) = names.split_at_checked(NAME_HEAD)?;
        let len = usize::from(head[7]);
        let (key, rest) = rest.split_at_checked(len)?;
        names = rest;
        let digest = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        Some((digest, TenantId(u16::from_le_bytes([head[4], head[5]])), head[6], key))
    })
}

/// Digests are hash bits already: the index uses them as they are (multiplied, so that the
/// table's bucket bits take all of them), not SipHash.
#[derive(Debug, Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, d: u32) {
        self.0 = u64::from(d).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type DigestMap = HashMap<u32, usize, BuildHasherDefault<DigestHasher>>;

#[derive(Debug, Clone)]
struct Counter {
    digest: u32,
    count: u64,
    name: Option<(TenantId, u8, Vec<u8>)>,
}

/// The sketch and its windows. Not thread-safe: its owner (the metadata backend) locks it.
#[derive(Debug)]
pub struct TopK {
    counters: Vec<Counter>,
    /// Digest → index in `counters`.
    index: DigestMap,
    /// The count-min sketch's two rows, one after the other.
    sketch: Box<[u32]>,
    /// No counter is below this (a lower bound of the smallest count once all are in use).
    min: u64,
    references: u64,
    /// When the live window began: at the first pool after the last one completed (`None`
    /// until then), so an idle server opens no window.
    started_ms: Option<u64>,
    window_ms: u64,
    frozen: Option<HotKeys>,
}

impl TopK {
    /// An empty sketch whose windows last `window_ms` each, the first beginning with the
    /// first pool.
    pub fn new(window_ms: u64) -> TopK {
        TopK {
            counters: Vec::with_capacity(CAPACITY),
            index: DigestMap::with_capacity_and_hasher(CAPACITY * 2, Default::default()),
            sketch: vec![0; 2 * CELLS].into_boxed_slice(),
            min: 0,
            references: 0,
            started_ms: None,
            window_ms: window_ms.max(1),
            frozen: None,
        }
    }

    /// Bytes the sketch keeps, names at their longest (the frozen window aside).
    pub fn bytes(&self) -> usize {
        CAPACITY * (std::mem::size_of::<Counter>() + NAME_MAX)
            + self.index.capacity() * (std::mem::size_of::<(u32, usize)>() + 1)
            + 2 * CELLS * 4
    }

    /// Counts one reference (bit 0 of a pool digest, the SET flag, is ignored).
    #[inline]
    pub fn record(&mut self, digest: u32) {
        let d = digest & !1;
        self.references += 1;
        // Conservative update: the cells below the estimate rise to it.
        let (a, b) = ((d >> 19) as usize % CELLS, CELLS + (d >> 6) as usize % CELLS);
        let estimate = self.sketch[a].min(self.sketch[b]).saturating_add(1);
        self.sketch[a] = self.sketch[a].max(estimate);
        self.sketch[b] = self.sketch[b].max(estimate);
        if let Some(&i) = self.index.get(&d) {
            self.counters[i].count += 1;
            return;
        }
        let estimate = u64::from(estimate);
        if self.counters.len() < CAPACITY {
            self.index.insert(d, self.counters.len());
            self.counters.push(Counter { digest: d, count: estimate, name: None });
            return;
        }
        if estimate <= self.min {
            return;
        }
        let (smallest, min) = self
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.count))
            .min_by_key(|&(_, count)| count)
            .unwrap_or((0, 0));
        self.min = min;
        if estimate <= min {
            return;
        }
        let old = std::mem::replace(
            &mut self.counters[smallest],
            Counter { digest: d, count: estimate, name: None },
        );
        self.index.remove(&old.digest);
        self.index.insert(d, smallest);
    }

    /// Names counters from a pool's name buffer ([`push_name`]).
    pub fn name(&mut self, names: &[u8]) {
        for (digest, tenant, db, key) in samples(names) {
            let Some(&i) = self.index.get(&(digest & !1)) else { continue };
            let c = &mut self.counters[i];
            match &mut c.name {
                Some((t, d, k)) if *t == tenant && *d == db && k == key => {}
                Some((t, d, k)) => {
                    (*t, *d) = (tenant, db);
                    k.clear();
                    k.extend_from_slice(key);
                }
                None => c.name = Some((tenant, db, key.to_vec())),
            }
        }
    }

    /// Applies one reference pool: its digests, then its names.
    pub fn apply(&mut self, digests: &[u32], names: &[u8], now_ms: u64) {
        self.rotate(now_ms);
        self.started_ms.get_or_insert(now_ms);
        for &d in digests {
            self.record(d);
        }
        self.name(names);
    }

    /// Completes the live window if it has lasted its length: it becomes the frozen one and
    /// counting starts again with the next pool. (A window completed late — no pool or
    /// report came at its end — still counts as its length.)
    pub fn rotate(&mut self, now_ms: u64) {
        match self.started_ms {
            Some(t) if now_ms.saturating_sub(t) >= self.window_ms => {
                self.frozen = Some(self.window(now_ms, false));
                self.clear();
            }
            _ => {}
        }
    }

    /// The window a report reads: the last completed one, or the live one if none has
    /// completed since the start or the last reset.
    pub fn report(&mut self, now_ms: u64) -> HotKeys {
        self.rotate(now_ms);
        match &self.frozen {
            Some(w) => w.clone(),
            None => self.window(now_ms, true),
        }
    }

    /// Forgets every count, both windows; a new window begins with the next pool.
    pub fn reset(&mut self) {
        self.frozen = None;
        self.clear();
    }

    /// Sets the window length (from the next window on).
    pub fn set_window(&mut self, window_ms: u64) {
        self.window_ms = window_ms.max(1);
    }

    /// The window length in force.
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    /// The live window's named keys, most referenced first.
    fn window(&self, now_ms: u64, live: bool) -> HotKeys {
        let mut keys: Vec<HotKey> = self
            .counters
            .iter()
            .filter_map(|c| {
                let (tenant, db, key) = c.name.as_ref()?;
                Some(HotKey { tenant: *tenant, db: *db, key: key.clone(), count: c.count })
            })
            .collect();
        keys.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        let since = self.started_ms.map_or(0, |t| now_ms.saturating_sub(t));
        HotKeys { duration_ms: since.min(self.window_ms), references: self.references, live, keys }
    }

    fn clear(&mut self) {
        self.counters.clear();
        self.index.clear();
        self.sketch.fill(0);
        self.min = 0;
        self.references = 0;
        self.started_ms = None;
    }
}

impl HotKeys {
    /// References per second of a count over this window.
    pub fn per_second(&self, count: u64) -> u64 {
        count.saturating_mul(1000).checked_div(self.duration_ms).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{digest_of, key_hash};
    use fridge_workload::{Rng, Zipf};

    fn digest(t: TenantId, key: &[u8]) -> u32 {
        digest_of(key_hash(t, key)) & !1
    }

    /// Feeds `stream` (key ids) in pools of 1024, naming one reference in 64 as a worker does.
    fn feed(top: &mut TopK, stream: &[u64], now_ms: u64) {
        let mut rng = Rng::new(3);
        for pool in stream.chunks(1024) {
            let mut names = Vec::new();
            let digests: Vec<u32> = pool
                .iter()
                .map(|id| {
                    let key = format!("key:{id}");
                    let d = digest(TenantId(0), key.as_bytes());
                    if rng.next_u64() % u64::from(SAMPLE_EVERY) == 0 {
                        push_name(&mut names, d, TenantId(0), 0, key.as_bytes());
                    }
                    d | u32::from(id % 10 == 0)
                })
                .collect();
            top.apply(&digests, &names, now_ms);
        }
    }

    fn exact_top(stream: &[u64], n: usize) -> Vec<Vec<u8>> {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for &id in stream {
            *counts.entry(id).or_default() += 1;
        }
        let mut v: Vec<(u64, u64)> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v[..n].iter().map(|(id, _)| format!("key:{id}").into_bytes()).collect()
    }

    #[test]
    fn the_top_ten_of_a_zipf_stream_are_its_ten_most_referenced_keys() {
        for (alpha, keys) in [(0.99, 1_000_000), (0.8, 100_000), (1.2, 1_000_000)] {
            let zipf = Zipf::new(keys, alpha).unwrap();
            let mut rng = Rng::new(11);
            let stream: Vec<u64> = (0..1_000_000).map(|_| zipf.sample(&mut rng)).collect();
            let mut top = TopK::new(DEFAULT_WINDOW_MS);
            feed(&mut top, &stream, 1);
            let got = top.report(2);
            assert!(got.live);
            assert_eq!(got.references, stream.len() as u64);
            let names: Vec<Vec<u8>> = got.keys[..10].iter().map(|k| k.key.clone()).collect();
            assert_eq!(names, exact_top(&stream, 10), "zipf {alpha} over {keys}");
        }
    }

    #[test]
    fn counts_are_never_below_the_truth_and_the_head_is_exact() {
        let zipf = Zipf::new(100_000, 0.99).unwrap();
        let mut rng = Rng::new(5);
        let stream: Vec<u64> = (0..500_000).map(|_| zipf.sample(&mut rng)).collect();
        let mut top = TopK::new(DEFAULT_WINDOW_MS);
        feed(&mut top, &stream, 0);
        let got = top.report(0);
        let truth = |k: &HotKey| {
            let id: u64 = std::str::from_utf8(&k.key[4..]).unwrap().parse().unwrap();
            stream.iter().filter(|&&x| x == id).count() as u64
        };
        for k in &got.keys {
            assert!(k.count >= truth(k), "{:?} < {}", k, truth(k));
        }
        // The head took its counters early and never lost them.
        for k in &got.keys[..20] {
            assert_eq!(k.count, truth(k));
        }
    }

    #[test]
    fn a_completed_window_is_reported_until_the_next_completes() {
        let mut top = TopK::new(1_000);
        // Idle time opens no window: the first begins with the first pool.
        assert_eq!(top.report(5_000), HotKeys { live: true, ..HotKeys::default() });
        feed(&mut top, &vec![7; 5_000], 10_000);
        let got = top.report(10_500);
        assert!(got.live);
        assert_eq!((got.references, got.duration_ms), (5_000, 500));
        // The next pool comes after the window's end: the first window freezes.
        feed(&mut top, &vec![9; 3_000], 11_200);
        let got = top.report(11_500);
        assert!(!got.live);
        assert_eq!((got.references, got.duration_ms), (5_000, 1_000));
        assert_eq!(got.keys[0].key, b"key:7");
        assert_eq!(got.per_second(got.keys[0].count), 5_000);
        // A report past the second window's end freezes it, late, as one window's length.
        let got = top.report(15_000);
        assert_eq!(got.keys[0].key, b"key:9");
        assert_eq!((got.references, got.duration_ms), (3_000, 1_000));
        top.reset();
        let got = top.report(16_000);
        assert!(got.live && got.keys.is_empty() && got.references == 0);
    }

    #[test]
    fn names_keep_tenant_and_database_and_skip_long_keys() {
        let mut top = TopK::new(DEFAULT_WINDOW_MS);
        let long = vec![b'x'; NAME_MAX + 1];
        let (a, b) = (digest(TenantId(2), b"a"), digest(TenantId(0), &long));
        top.apply(&[a, a, b, b, b], &[], 0);
        let mut names = Vec::new();
        push_name(&mut names, a, TenantId(2), 3, b"a");
        push_name(&mut names, b, TenantId(0), 0, &long);
        top.name(&names);
        let got = top.report(0);
        assert_eq!(got.keys, [HotKey { tenant: TenantId(2), db: 3, key: b"a".to_vec(), count: 2 }]);
        // A full buffer skips samples; a torn buffer ends the samples.
        let mut full = vec![0; NAMES_PER_POOL - 3];
        push_name(&mut full, a, TenantId(0), 0, b"a");
        assert_eq!(full.len(), NAMES_PER_POOL - 3);
        assert_eq!(samples(&names[..names.len() - 1]).count(), 0);
    }
}
