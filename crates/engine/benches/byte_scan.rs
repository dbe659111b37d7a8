//! The tag scan of a collection's index (`crates/server/src/types/index.rs`): the positions
//! of one byte among 1,000, 32 at a time, as a fold of byte compares (how the index compared
//! them before) and through [`fridge_engine::bytes::equal_mask`].
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench byte_scan -- [tags] [scans]   (default: 1000 2M)
//! ```
//!
//! Prints the nanoseconds a scan of each way (the median of five rounds) and their ratio.

use std::hint::black_box;
use std::time::Instant;

use fridge_engine::bytes::equal_mask;

mod common;
use common::{arg, median};

/// The candidates' ranks summed, so that no scan is optimized away.
fn by_fold(tags: &[u8], t: u8) -> usize {
    let mut sum = 0;
    for (i, chunk) in tags.chunks(32).enumerate() {
        let mut mask = chunk.iter().enumerate().fold(0u32, |m, (j, &b)| m | u32::from(b == t) << j);
        while mask != 0 {
            sum += 32 * i + mask.trailing_zeros() as usize;
            mask &= mask - 1;
        }
    }
    sum
}

fn by_mask(tags: &[u8], t: u8) -> usize {
    let mut sum = 0;
    for (i, chunk) in tags.chunks(32).enumerate() {
        let mut mask = match chunk.try_into() {
            Ok(whole) => equal_mask(whole, t),
            Err(_) => chunk.iter().enumerate().fold(0, |m, (j, &b)| m | u32::from(b == t) << j),
        };
        while mask != 0 {
            sum += 32 * i + mask.trailing_zeros() as usize;
            mask &= mask - 1;
        }
    }
    sum
}

fn main() {
    let tags_len = arg(0, 1000);
    let scans = arg(1, 2_000_000);
    let tags: Vec<u8> =
        (0..tags_len as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let time = |f: fn(&[u8], u8) -> usize| {
        let start = Instant::now();
        let mut sum = 0;
        for k in 0..scans {
            sum += f(black_box(&tags), (k % 251) as u8);
        }
        black_box(sum);
        start.elapsed().as_nanos() as f64 / scans as f64
    };
    assert_eq!(by_fold(&tags, 7), by_mask(&tags, 7));
    let (mut fold, mut mask) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        fold.push(time(by_fold));
        mask.push(time(by_mask));
    }
    let (fold, mask) = (median(fold), median(mask));
    println!(
        "{tags_len} tags: fold of byte compares {fold:.1} ns, equal_mask {mask:.1} ns, {:.2}x",
        fold / mask
    );
}
