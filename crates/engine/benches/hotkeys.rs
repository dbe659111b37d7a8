//! What counting hot keys costs the metadata worker: digests per second through
//! `TopK::apply` (the Space-Saving counters, their filter and the name samples), beside the
//! hitmap's `record_batch` on the same pools, in one run.
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench hotkeys -- [keys] [alpha×100]
//!                                          (default: 10M keys, Zipf 0.99)
//! ```
//!
//! The stream is 10M references drawn from Zipf(alpha) over `keys` 8-byte key ids, in pools
//! of 1024 as workers send them, one reference in 64 (at random) carrying its name, as
//! `Worker::note_access` samples them. The hitmap is sized for `keys / 2` items at 32 bits.
//! Each figure is the median of three passes over the whole stream.

use std::hint::black_box;
use std::time::Instant;

use fridge_engine::TenantId;
use fridge_engine::hash::{digest_of, key_hash};
use fridge_engine::hitmap::{DEFAULT_LEVELS, Hitmap};
use fridge_engine::hotkeys::{DEFAULT_WINDOW_MS, SAMPLE_EVERY, TopK, push_name};
use fridge_workload::{Rng, Zipf};

mod common;
use common::{arg, median};

const STREAM: usize = 10_000_000;
const POOL: usize = 1024;
const ROUNDS: usize = 3;

/// Pools of digests and their name buffers.
fn pools(keys: u64, alpha: f64) -> Vec<(Vec<u32>, Vec<u8>)> {
    let zipf = Zipf::new(keys, alpha).expect("zipf");
    let mut rng = Rng::new(7);
    (0..STREAM / POOL)
        .map(|_| {
            let mut names = Vec::new();
            let digests = (0..POOL)
                .map(|i| {
                    let key = zipf.sample(&mut rng).to_le_bytes();
                    let d = digest_of(key_hash(TenantId(0), &key)) & !1;
                    if rng.next_u64() % u64::from(SAMPLE_EVERY) == 0 {
                        push_name(&mut names, d, TenantId(0), 0, &key);
                    }
                    d | u32::from(i % 10 == 0)
                })
                .collect();
            (digests, names)
        })
        .collect()
}

fn main() {
    let keys = arg(0, 10_000_000) as u64;
    let alpha = arg(1, 99) as f64 / 100.0;
    let pools = pools(keys, alpha);
    let refs = (pools.len() * POOL) as f64;
    let warm = {
        let mut h =
            Hitmap::for_items(keys as usize / 2, 32, DEFAULT_LEVELS).expect("maps the hitmap");
        pools.iter().for_each(|(d, _)| h.record_batch(d));
        h
    };
    let (mut sketch, mut hitmap) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let mut top = TopK::new(DEFAULT_WINDOW_MS);
        let start = Instant::now();
        for (d, n) in &pools {
            top.apply(d, n, 1);
        }
        sketch.push(refs / start.elapsed().as_secs_f64());
        black_box(top.report(1));

        let mut h = warm.try_clone().expect("maps the hitmap");
        let start = Instant::now();
        for (d, _) in &pools {
            h.record_batch(d);
        }
        hitmap.push(refs / start.elapsed().as_secs_f64());
        black_box(&h);
    }
    let (s, h) = (median(sketch), median(hitmap));
    let top = TopK::new(DEFAULT_WINDOW_MS);
    println!(
        "# hotkeys: Zipf({alpha}) over {keys} keys, {STREAM} references in pools of {POOL}, \
         1 in {SAMPLE_EVERY} named; sketch {} KiB",
        top.bytes() >> 10
    );
    println!();
    println!("| applying a pool to | M digests/s (median of {ROUNDS}) |");
    println!("|---|---:|");
    println!("| the hot-key sketch (`TopK::apply`) | {:.1} |", s / 1e6);
    println!("| the hitmap (`record_batch`) | {:.1} |", h / 1e6);
    println!("| both, one after the other | {:.1} |", 1.0 / (1.0 / s + 1.0 / h) / 1e6);
}
