//! What a GET miss costs the arbiter as tenants grow: misses that find their key in the
//! tenant's shadow queue (Memshare Algorithm 2: a credit moves to the tenant, from the pool or
//! from another tenant) with 8, 64, 255 and 1,000 tenants, in one run.
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench shadow_hits -- [misses] [tenants]
//!                    (default: 1M misses after a fill; every tenant count, or only this one)
//! ```
//!
//! 64 MiB in 1 MiB segments, Memshare's pass, every tenant reserving an equal share of half the
//! memory, 16-byte keys, 200-byte values; tenant `i % n` stores key `i` until four times the
//! memory was written, then GETs 200K keys written just before the 350K most recent (evicted by
//! then, and recently enough to be in their tenant's shadow queue with any tenant count).
//! Reported per tenant count: nanoseconds per GET miss, shadow hits per miss, each the median
//! of three rounds, with the ratio to 8 tenants.

use std::hint::black_box;
use std::time::Instant;

use fridge_engine::{Store, TenantId};

mod common;
mod tenancy;
use common::{arg, median};
use tenancy::{MEMORY, reserving_engine};

const VALUE: [u8; 200] = [7; 200];

fn key(i: u64) -> [u8; 16] {
    let k = i.to_le_bytes();
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&k);
    out[8..].copy_from_slice(&k);
    out
}

/// One round with `tenants` tenants: (ns per GET miss, shadow hits per miss).
fn round(tenants: u64, misses: u64) -> (f64, f64) {
    let engine = reserving_engine(tenants as usize);
    let mut worker = engine.worker().unwrap();
    let written = 4 * MEMORY as u64 / 240;
    let tenant = |i: u64| TenantId((i % tenants) as u16);
    for i in 0..written {
        worker.store(Store::new(tenant(i), &key(i), &VALUE)).unwrap();
    }
    let hits_before: u64 =
        (0..tenants).map(|t| engine.tenant_stats(TenantId(t as u16)).shadow_hits).sum();
    let mut missed = 0u64;
    let start = Instant::now();
    for n in 0..misses {
        // Recently evicted keys, in an order that spreads over tenants and time.
        let i = written - 550_000 + n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 200_000;
        let hit = worker.get(tenant(i), &key(i), |item| black_box(item.value.len())).is_some();
        missed += u64::from(!hit);
    }
    let ns = start.elapsed().as_nanos() as f64 / misses as f64;
    let hits: u64 = (0..tenants).map(|t| engine.tenant_stats(TenantId(t as u16)).shadow_hits).sum();
    (ns, (hits - hits_before) as f64 / missed.max(1) as f64)
}

fn main() {
    let misses = arg(0, 1_000_000) as u64;
    println!("| tenants | ns per GET (miss) | shadow hits per miss | / 8 tenants |");
    println!("|---:|---:|---:|---:|");
    let mut base = None;
    let only = arg(1, 0) as u64;
    for tenants in [8u64, 64, 255, 1000].into_iter().filter(|&n| only == 0 || n == only) {
        let rounds: Vec<(f64, f64)> = (0..3).map(|_| round(tenants, misses)).collect();
        let ns = median(rounds.iter().map(|r| r.0).collect());
        let hits = median(rounds.iter().map(|r| r.1).collect());
        let base = *base.get_or_insert(ns);
        println!("| {tenants} | {ns:.0} | {hits:.3} | {:.2} |", ns / base);
    }
}
