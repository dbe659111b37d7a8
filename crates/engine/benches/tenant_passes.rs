//! What the evicting passes cost as tenants grow: the same stream of stores spread over 8, 64,
//! 255 and 1,000 tenants (each with a reservation, so Memshare's arbiter and need ordering run in
//! every pass), the engine's inline cleaner relocating and evicting, in one run.
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench tenant_passes -- [stores]
//!                                          (default: 4M stores after a fill)
//! ```
//!
//! 64 MiB of memory in 1 MiB segments, Memshare's pass, 16-byte keys drawn from 2M with 64-byte
//! values; tenant `i % n` stores key `i`'s draw. Reported per tenant count: nanoseconds per
//! store (the pass included, inline), relocated items per store, and nanoseconds per relocated
//! item (all the time over the relocations: an upper bound of a pass's cost per item), each
//! the median of three rounds, with the ratio to 8 tenants.

use std::hint::black_box;
use std::time::Instant;

use fridge_engine::{Store, TenantId};
use fridge_workload::Rng;

mod common;
mod tenancy;
use common::{arg, median};
use tenancy::reserving_engine;

const KEYS: u64 = 2_000_000;

/// One round with `tenants` tenants: (ns per store, relocated items per store).
fn round(tenants: usize, stores: usize) -> (f64, f64) {
    let engine = reserving_engine(tenants);
    let mut worker = engine.worker().unwrap();
    let mut rng = Rng::new(11);
    let value = [7u8; 64];
    let mut store = |i: usize, rng: &mut Rng| {
        let key = (rng.next_u64() % KEYS).to_le_bytes();
        let key = [key, key].concat();
        let t = TenantId((i % tenants) as u16);
        black_box(worker.store(Store::new(t, &key, &value)).unwrap());
    };
    // Fill until the cleaner is evicting.
    for i in 0..KEYS as usize {
        store(i, &mut rng);
    }
    let before = engine.stats().relocated_items;
    let start = Instant::now();
    for i in 0..stores {
        store(i, &mut rng);
    }
    let ns = start.elapsed().as_nanos() as f64 / stores as f64;
    let relocated = (engine.stats().relocated_items - before) as f64 / stores as f64;
    (ns, relocated)
}

fn main() {
    let stores = arg(0, 4_000_000);
    println!(
        "| tenants | ns per store | relocated per store | ns per relocated item | / 8 tenants |"
    );
    println!("|---:|---:|---:|---:|---:|");
    let mut base = None;
    for tenants in [8usize, 64, 255, 1000] {
        let rounds: Vec<(f64, f64)> = (0..3).map(|_| round(tenants, stores)).collect();
        let ns = median(rounds.iter().map(|r| r.0).collect());
        let relocated = median(rounds.iter().map(|r| r.1).collect());
        let per = ns / relocated.max(1e-9);
        let base = *base.get_or_insert(per);
        println!("| {tenants} | {ns:.0} | {relocated:.3} | {per:.0} | {:.2} |", per / base);
    }
}
