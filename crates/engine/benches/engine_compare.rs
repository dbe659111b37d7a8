//! In-process comparison of fridge-engine with Segcache (Pelikan's segment storage) and
//! quick_cache, on one thread and the same request stream.
//!
//! ```text
//! cargo bench -p fridge-engine --bench engine_compare -- [keys...]     (default: 1M 10M)
//! cargo bench ... -- -n 1000000 --no-capacity 100000    (fewer ops per phase; no capacity)
//! taskset -c 1 cargo bench ...                                          (pin to one core)
//! ```
//!
//! Workload: 16-byte keys, 32-byte values, Zipf(0.99) popularity over `keys` distinct keys
//! (ids scrambled so popular keys are spread). Phases, each timed over the same pre-generated
//! stream for every cache: GET-hit, GET-miss (keys never stored), then SET (overwrites of
//! loaded keys). Every GET copies the value out. GETs are issued in chunks of 64 keys; only the
//! "fridge (get_many)" row looks a chunk up with the batched call, every other row with one
//! call per key. Each cache gets memory for all keys (no evictions). Then a capacity phase:
//! 30M distinct 16 B/32 B items are written into 1 GiB and every key is probed; the hits are
//! the resident items (fridge and Segcache).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};
use fridge_workload::{Rng, Zipf, render_key};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 32;
/// Operations per phase unless `-n` says otherwise.
const OPS: usize = 10_000_000;
const T: TenantId = TenantId(0);
/// GETs are issued in chunks of this many keys (a deep request pipeline's worth).
const GET_CHUNK: usize = 64;

type Key = [u8; KEY_LEN];

fn key(id: u64) -> Key {
    let mut k = [0u8; KEY_LEN];
    render_key(id, &mut k);
    k
}

/// A Zipf(0.99) stream of key ids in `0..n`, scrambled by a multiplicative permutation.
fn zipf_stream(n: u64, ops: usize, seed: u64) -> Vec<Key> {
    let zipf = Zipf::new(n, 0.99).expect("zipf");
    let mut rng = Rng::new(seed);
    (0..ops).map(|_| key(scramble(zipf.sample(&mut rng), n))).collect()
}

fn scramble(rank: u64, n: u64) -> u64 {
    // An odd multiplier is a bijection mod 2^64; folding into 0..n keeps it a permutation only
    // approximately, which is fine for spreading popular ids.
    rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n
}

trait Cache {
    fn name(&self) -> &'static str;
    fn set(&mut self, key: &Key, value: &[u8; VALUE_LEN]);
    fn get(&mut self, key: &Key, out: &mut [u8; VALUE_LEN]) -> bool;
    /// Looks up a chunk of keys; returns the hits. One `get` per key unless the cache has a
    /// batched lookup.
    fn get_batch(&mut self, keys: &[Key], out: &mut [u8; VALUE_LEN]) -> usize {
        keys.iter().filter(|k| self.get(k, out)).count()
    }
}

struct Fridge {
    _engine: Engine,
    worker: fridge_engine::Worker,
    name: &'static str,
    /// Whether GETs go through `get_many`.
    batched: bool,
}

impl Fridge {
    /// The default engine (small values inline after their keys).
    fn new(max_memory: usize) -> Self {
        Fridge::with_inline(max_memory, EngineConfig::default().inline_value_max, "fridge-engine")
    }

    fn with_inline(max_memory: usize, inline_value_max: usize, name: &'static str) -> Self {
        let config = EngineConfig {
            max_memory,
            cleaner: CleanerMode::Inline,
            inline_value_max,
            ..EngineConfig::default()
        };
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let engine = Engine::with_clock(config, clock).unwrap();
        let worker = engine.worker().unwrap();
        Fridge { _engine: engine, worker, name, batched: false }
    }
}

impl Cache for Fridge {
    fn name(&self) -> &'static str {
        self.name
    }
    fn set(&mut self, key: &Key, value: &[u8; VALUE_LEN]) {
        self.worker.store(Store::new(T, key, value)).unwrap();
    }
    fn get(&mut self, key: &Key, out: &mut [u8; VALUE_LEN]) -> bool {
        self.worker.get(T, key, |item| out.copy_from_slice(item.value)).is_some()
    }
    fn get_batch(&mut self, keys: &[Key], out: &mut [u8; VALUE_LEN]) -> usize {
        if !self.batched {
            return keys.iter().filter(|k| self.get(k, out)).count();
        }
        let mut hits = 0;
        self.worker.get_many(T, keys, |_, item| {
            out.copy_from_slice(item.value);
            hits += 1;
        });
        hits
    }
}

struct Seg(segcache::Segcache);

impl Seg {
    fn new(heap: usize, keys: u64) -> Self {
        let hash_power = keys.max(1 << 16).next_power_of_two().trailing_zeros() as u8;
        let cache = segcache::Segcache::builder()
            .heap_size(heap)
            .segment_size(1 << 20)
            .hash_power(hash_power)
            .overflow_factor(1.0)
            .build()
            .expect("segcache");
        Seg(cache)
    }
}

impl Cache for Seg {
    fn name(&self) -> &'static str {
        "segcache"
    }
    fn set(&mut self, key: &Key, value: &[u8; VALUE_LEN]) {
        let _ = self.0.insert(key, &value[..], None, Duration::ZERO);
    }
    fn get(&mut self, key: &Key, out: &mut [u8; VALUE_LEN]) -> bool {
        match self.0.get(key) {
            Some(item) => match item.value() {
                segcache::Value::Bytes(b) => {
                    out.copy_from_slice(b);
                    true
                }
                segcache::Value::U64(_) => true,
            },
            None => false,
        }
    }
}

struct Quick(quick_cache::sync::Cache<Key, [u8; VALUE_LEN]>);

impl Cache for Quick {
    fn name(&self) -> &'static str {
        "quick_cache"
    }
    fn set(&mut self, key: &Key, value: &[u8; VALUE_LEN]) {
        self.0.insert(*key, *value);
    }
    fn get(&mut self, key: &Key, out: &mut [u8; VALUE_LEN]) -> bool {
        match self.0.get(key) {
            Some(v) => {
                *out = v;
                true
            }
            None => false,
        }
    }
}

struct Rates {
    set: f64,
    get_hit: f64,
    get_miss: f64,
    hit_ratio: f64,
}

fn run(cache: &mut dyn Cache, n: u64, hits: &[Key], misses: &[Key]) -> Rates {
    let value = [7u8; VALUE_LEN];
    for id in 0..n {
        cache.set(&key(id), &value);
    }

    let mut out = [0u8; VALUE_LEN];
    let mut found = 0usize;
    let start = Instant::now();
    for chunk in hits.chunks(GET_CHUNK) {
        found += cache.get_batch(chunk, &mut out);
        black_box(&out);
    }
    let get_hit = hits.len() as f64 / start.elapsed().as_secs_f64();

    let start = Instant::now();
    for chunk in misses.chunks(GET_CHUNK) {
        black_box(cache.get_batch(chunk, &mut out));
    }
    let get_miss = misses.len() as f64 / start.elapsed().as_secs_f64();

    // Overwrites last: they turn the loaded items into dead bytes, which some caches reclaim
    // by evicting live items, and the GET phases must see the same items everywhere.
    let start = Instant::now();
    for k in hits {
        cache.set(k, &value);
    }
    let set = hits.len() as f64 / start.elapsed().as_secs_f64();
    Rates { set, get_hit, get_miss, hit_ratio: found as f64 / hits.len() as f64 }
}

/// Writes `total` distinct 16 B/32 B items, then probes every one: the hits are the items
/// resident (the same count for every cache, whatever its internal statistics).
fn capacity(cache: &mut dyn Cache, total: u64) -> u64 {
    let value = [1u8; VALUE_LEN];
    for id in 0..total {
        cache.set(&key(1 << 40 | id), &value);
    }
    let mut out = [0u8; VALUE_LEN];
    (0..total).filter(|&id| cache.get(&key(1 << 40 | id), &mut out)).count() as u64
}

fn mops(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ops = args
        .iter()
        .position(|a| a == "-n")
        .and_then(|i| args.get(i + 1)?.replace('_', "").parse().ok())
        .unwrap_or(OPS);
    let with_capacity = !args.iter().any(|a| a == "--no-capacity");
    let mut keys: Vec<u64> = args
        .iter()
        .enumerate()
        .filter(|&(i, _)| i == 0 || args[i - 1] != "-n")
        .filter_map(|(_, a)| a.replace('_', "").parse().ok())
        .collect();
    if keys.is_empty() {
        keys = vec![1_000_000, 10_000_000];
    }
    println!(
        "# engine_compare: one thread, Zipf(0.99), 16 B keys, 32 B values, {ops} ops per phase"
    );
    println!();
    println!("| keys | cache | SET Mops/s | GET-hit Mops/s | GET-miss Mops/s | hit ratio |");
    println!("|---:|---|---:|---:|---:|---:|");
    let mut by_keys = Vec::new();
    for &n in &keys {
        let hits = zipf_stream(n, ops, 42);
        let misses: Vec<Key> = (0..ops as u64).map(|i| key(n + 1 + (i % n))).collect();
        let heap = ((n as usize * 120).next_power_of_two()).max(256 << 20);
        let mut rows = Vec::new();
        let caches: Vec<Box<dyn Fn() -> Box<dyn Cache>>> = vec![
            Box::new(move || Box::new(Fridge::new(heap))),
            Box::new(move || Box::new(Fridge::with_inline(heap, 0, "fridge (values apart)"))),
            Box::new(move || {
                let mut f = Fridge::new(heap);
                f.name = "fridge (get_many)";
                f.batched = true;
                Box::new(f)
            }),
            Box::new(move || Box::new(Seg::new(heap, n))),
            Box::new(move || Box::new(Quick(quick_cache::sync::Cache::new(n as usize * 2)))),
        ];
        for make in &caches {
            let mut cache = make();
            let r = run(cache.as_mut(), n, &hits, &misses);
            println!(
                "| {n} | {} | {} | {} | {} | {:.4} |",
                cache.name(),
                mops(r.set),
                mops(r.get_hit),
                mops(r.get_miss),
                r.hit_ratio
            );
            rows.push((cache.name(), r));
        }
        by_keys.push((n, rows));
    }
    println!();
    println!("| keys | ratio | SET | GET-hit | GET-miss |");
    println!("|---:|---|---:|---:|---:|");
    for (n, rows) in &by_keys {
        let f = &rows[0].1;
        for (name, r) in &rows[1..] {
            println!(
                "| {n} | fridge / {name} | {:.2} | {:.2} | {:.2} |",
                f.set / r.set,
                f.get_hit / r.get_hit,
                f.get_miss / r.get_miss
            );
        }
    }
    if by_keys.len() >= 2 {
        let (small, large) = (&by_keys[0], &by_keys[by_keys.len() - 1]);
        println!();
        for (i, (name, _)) in small.1.iter().enumerate() {
            let (s, l) = (&small.1[i].1, &large.1[i].1);
            println!(
                "{name} at {} keys / at {} keys: SET {:.2}, GET-hit {:.2}, GET-miss {:.2}",
                large.0,
                small.0,
                l.set / s.set,
                l.get_hit / s.get_hit,
                l.get_miss / s.get_miss
            );
        }
    }
    if !with_capacity {
        return;
    }
    println!();
    println!("## capacity: distinct 16 B/32 B items resident in 1 GiB");
    println!();
    println!("| cache | items | item-memory bytes per item | metadata bytes per item |");
    println!("|---|---:|---:|---:|");
    let gib = 1usize << 30;
    // More than 1 GiB can hold even at 48 bytes per item.
    let total = 30_000_000;
    let mut fridge = Fridge::new(gib);
    let items = capacity(&mut fridge, total);
    let s = fridge._engine.stats();
    let in_segments = s.item_bytes as f64 / s.items as f64 - (KEY_LEN + VALUE_LEN) as f64;
    let index = s.index_bytes as f64 / s.items as f64;
    println!(
        "| fridge-engine | {items} | {:.1} | {:.1}: record header {in_segments:.1} + index {index:.1} (nominal {} + 8) |",
        gib as f64 / items as f64,
        in_segments + index,
        fridge_engine::item::HEADER_LEN
    );
    drop(fridge);
    let mut seg = Seg::new(gib, total);
    let seg_items = capacity(&mut seg, total);
    println!(
        "| segcache | {seg_items} | {:.1} | {:.1} in segments, plus its hash table |",
        gib as f64 / seg_items as f64,
        gib as f64 / seg_items as f64 - (KEY_LEN + VALUE_LEN) as f64
    );
}
