//! Digest updates per second of the hitmap on one core (Catalyst §3.2.2, Algorithm 2): a pool
//! as one step (`Hitmap::record_pool`, what the engine applies), one access at a time with and
//! without the prefetching of `Hitmap::record_batch`, and the time of one rolling compaction.
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench hitmap_update -- [keys] [items] [bits]
//!                                          (default: 50M keys, 25M items, 32 bits per item)
//! ```
//!
//! The hitmap is `Hitmap::for_items(items, bits, 4)`: at the defaults level 1 has 2^26 bits
//! and the four levels with the set counter take 128 MiB. The stream is 20M accesses drawn
//! from Zipf(0.99) over `keys` key ids; each access is the digest the engine would log for
//! the id's 8-byte key (`digest_of(key_hash(..))`), one in ten a SET (bit 0). Digests are
//! applied in reference pools of 1024, as the engine's metadata worker receives them.
//!
//! Each measurement starts from a copy of one warmed hitmap (the whole stream applied once),
//! so every page is mapped and the fill is a steady state's; `record_pool` (zones of the whole
//! pool first, prefetching 8 ahead, then the pool's keys sorted and marked), `record_batch`
//! (prefetching the key's block in every level 8 digests ahead) and `record` (one digest at a
//! time) alternate, three rounds each, and the median is printed. Beside them, the frequency
//! sketch S3-FIFO's queues keep instead of a hitmap (`fridge_engine::sketch`, the same items
//! and bits per item), warmed and measured the same way.

use std::hint::black_box;
use std::time::Instant;

use fridge_engine::TenantId;
use fridge_engine::hash::{digest_of, key_hash};
use fridge_engine::hitmap::{DEFAULT_LEVELS, Hitmap};
use fridge_engine::sketch::Sketch;
use fridge_workload::{Rng, Zipf};

mod common;
use common::{arg, median};

const STREAM: usize = 20_000_000;
const POOL: usize = 1024;
const ROUNDS: usize = 3;

fn stream(keys: u64) -> Vec<u32> {
    let zipf = Zipf::new(keys, 0.99).expect("zipf");
    let mut rng = Rng::new(7);
    (0..STREAM)
        .map(|i| {
            let id = zipf.sample(&mut rng);
            let digest = digest_of(key_hash(TenantId(0), &id.to_le_bytes())) & !1;
            digest | u32::from(i % 10 == 0)
        })
        .collect()
}

/// How a pool is applied.
#[derive(Clone, Copy)]
enum Method {
    Pool,
    Batch,
    Single,
}

/// Digests per second applying `digests` to a copy of `warm`.
fn measure(warm: &Hitmap, digests: &[u32], method: Method) -> f64 {
    let mut h = warm.try_clone().expect("maps the hitmap");
    let start = Instant::now();
    for pool in digests.chunks(POOL) {
        match method {
            Method::Pool => h.record_pool(pool),
            Method::Batch => h.record_batch(pool),
            Method::Single => pool.iter().for_each(|&d| h.record(d)),
        }
    }
    let s = start.elapsed().as_secs_f64();
    black_box(&h);
    digests.len() as f64 / s
}

/// Digests per second applying `digests` to a copy of `warm`, a pool at a time.
fn measure_sketch(warm: &Sketch, digests: &[u32]) -> f64 {
    let mut s = warm.try_clone().expect("maps the sketch");
    let start = Instant::now();
    for pool in digests.chunks(POOL) {
        s.append_pool(pool);
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(&s);
    digests.len() as f64 / secs
}

fn main() {
    let keys = arg(0, 50_000_000) as u64;
    let items = arg(1, 25_000_000);
    let bits = arg(2, 32);
    let digests = stream(keys);
    let mut warm = Hitmap::for_items(items, bits, DEFAULT_LEVELS).expect("maps the hitmap");
    for pool in digests.chunks(POOL) {
        warm.record_pool(pool);
    }
    let stats = warm.stats();
    let fill: Vec<String> = stats.fill.iter().map(|f| format!("{f:.3}")).collect();
    println!(
        "# hitmap_update: {} MiB hitmap ({items} items x {bits} bits, {DEFAULT_LEVELS} levels), \
         Zipf(0.99) over {keys} keys, {STREAM} digests in pools of {POOL}, fill per level \
         after warm-up: {}",
        stats.bytes >> 20,
        fill.join(" / ")
    );
    let mut warm_sketch = Sketch::for_items(items, bits).expect("maps the sketch");
    for pool in digests.chunks(POOL) {
        warm_sketch.append_pool(pool);
    }
    let (mut pool, mut batch, mut single, mut sketch) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        pool.push(measure(&warm, &digests, Method::Pool));
        batch.push(measure(&warm, &digests, Method::Batch));
        single.push(measure(&warm, &digests, Method::Single));
        sketch.push(measure_sketch(&warm_sketch, &digests));
    }
    let (p, b, s) = (median(pool), median(batch), median(single));
    println!();
    println!("| method | M digests/s (median of {ROUNDS}) |");
    println!("|---|---:|");
    println!("| `record_pool` (a pool as one step; the engine's) | {:.2} |", p / 1e6);
    println!("| `record_batch` (prefetch 8 ahead) | {:.2} |", b / 1e6);
    println!("| `record` (one at a time) | {:.2} |", s / 1e6);
    println!("| batch / single | {:.2}x |", b / s);
    println!(
        "| the frequency sketch (`Sketch`, {} MiB: the queues' metadata) | {:.2} |",
        warm_sketch.bytes() >> 20,
        median(sketch) / 1e6
    );

    let mut h = warm.try_clone().expect("maps the hitmap");
    let start = Instant::now();
    h.compact();
    let ms = start.elapsed().as_secs_f64() * 1e3;
    black_box(&h);
    println!();
    println!("one rolling compaction of the {} MiB hitmap: {ms:.1} ms", stats.bytes >> 20);
}
