//! Redis 7's `INFO latencystats` (<https://redis.io/commands/info/>; Redis 7.0 `server.c`,
//! `fillPercentileDistributionLatencies`): per command, the latency percentiles named by
//! `latency-tracking-info-percentiles` (default `50 99 99.9`), in microseconds:
//!
//! ```text
//! latency_percentiles_usec_get:p50=1.003,p99=3.007,p99.9=5.023
//! ```
//!
//! Each worker records every command it runs (while `latency-tracking` is `yes`) into its
//! own fixed histograms, one per counter row of `crate::cmdstats` (subcommands apart, as
//! Redis): no lock, no allocation, two relaxed operations on a counter only that worker
//! writes, reusing the clock reads commandstats makes. `INFO` sums the workers'
//! histograms, less the baseline `CONFIG RESETSTAT` took, and reads the percentiles off the
//! sum.
//!
//! The histograms are log-linear: values under 16 ns have a bucket each, and above that each
//! power of two is cut into 16 buckets, so a bucket spans at most 1/16 (6.25%) of its values
//! (Redis's HdrHistogram keeps 2 significant digits, about 1%); up to 2^36 ns (about 69 s),
//! longer calls count in the last bucket. A percentile is the highest value of the bucket
//! that holds it, as HdrHistogram answers (`p0`: the lowest value of the first bucket). Cost:
//! [`BUCKETS`] × 8 bytes per counter row per worker (about 630 KiB per worker).

use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::cmdstats::{COMMAND_ROWS, STAT_ROWS, SUBCOMMANDS};

/// Sub-buckets per power of two: `1 << SUB_BITS`.
const SUB_BITS: u32 = 4;
const SUBS: usize = 1 << SUB_BITS;
/// Powers of two above the exact range, up to 2^36 ns.
const OCTAVES: usize = 32;
/// Buckets per histogram.
pub(crate) const BUCKETS: usize = SUBS + OCTAVES * SUBS;

/// The bucket of a latency of `nanos`.
#[inline]
const fn bucket(nanos: u64) -> usize {
    if nanos < SUBS as u64 {
        return nanos as usize;
    }
    let exp = 63 - nanos.leading_zeros(); // >= SUB_BITS
    let shift = exp - SUB_BITS;
    let sub = ((nanos >> shift) as usize) & (SUBS - 1);
    let i = SUBS + shift as usize * SUBS + sub;
    if i < BUCKETS { i } else { BUCKETS - 1 }
}

/// The lowest and highest latency (ns) bucket `i` holds.
const fn bounds(i: usize) -> (u64, u64) {
    if i < SUBS {
        return (i as u64, i as u64);
    }
    let shift = ((i - SUBS) / SUBS) as u32;
    let sub = ((i - SUBS) % SUBS) as u64;
    let low = (SUBS as u64 + sub) << shift;
    (low, low + (1u64 << shift) - 1)
}

/// The highest latency (ns) bucket `i` holds.
pub(crate) const fn bucket_highest(i: usize) -> u64 {
    bounds(i).1
}

/// One worker's histograms, one per counter row; written by that worker only.
#[derive(Debug)]
pub struct Histograms {
    counts: Box<[AtomicU64]>,
}

impl Default for Histograms {
    fn default() -> Self {
        Histograms { counts: (0..STAT_ROWS * BUCKETS).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl Histograms {
    /// A call of counter row `row` took `nanos` (a row past the table is ignored).
    #[inline]
    pub(crate) fn record(&self, row: usize, nanos: u64) {
        if row < STAT_ROWS {
            let c = &self.counts[row * BUCKETS + bucket(nanos)];
            c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }
}

/// The settings and the reset baseline, shared by every thread.
#[derive(Debug)]
pub(crate) struct LatencyTracking {
    on: AtomicBool,
    percentiles: Mutex<Vec<f64>>,
    /// The sums at the last `CONFIG RESETSTAT`.
    baseline: Mutex<Option<Box<[u64]>>>,
}

impl Default for LatencyTracking {
    fn default() -> Self {
        LatencyTracking {
            on: AtomicBool::new(true),
            percentiles: Mutex::new(vec![50.0, 99.0, 99.9]),
            baseline: Mutex::new(None),
        }
    }
}

/// A percentile as Redis writes it (`%f` with its trailing zeros trimmed).
fn percentile_text(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl LatencyTracking {
    /// Whether commands are recorded (`latency-tracking`): one relaxed load.
    #[inline]
    pub(crate) fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub(crate) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// `latency-tracking-info-percentiles` as `CONFIG GET` gives it.
    pub(crate) fn percentiles_text(&self) -> String {
        let p = self.percentiles.lock().unwrap_or_else(|e| e.into_inner());
        p.iter().map(|&p| percentile_text(p)).collect::<Vec<_>>().join(" ")
    }

    pub(crate) fn set_percentiles(&self, p: Vec<f64>) {
        *self.percentiles.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }

    /// `CONFIG RESETSTAT`: counts from zero.
    pub(crate) fn reset<'a>(&self, workers: impl Iterator<Item = &'a Histograms>) {
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = Some(sums(workers));
    }

    /// Appends `INFO latencystats`'s lines (no header): one per counter row called since the
    /// last reset, in table order, while tracking is on.
    pub(crate) fn write<'a>(
        &self,
        out: &mut Vec<u8>,
        workers: impl Iterator<Item = &'a Histograms>,
        name: impl Fn(usize) -> &'static str,
    ) {
        if !self.on() {
            return;
        }
        let sum = self.merged(workers);
        let percentiles = self.percentiles.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for row in 0..STAT_ROWS {
            let h = &sum[row * BUCKETS..(row + 1) * BUCKETS];
            let total: u64 = h.iter().sum();
            if total == 0 {
                continue;
            }
            let name = if row < COMMAND_ROWS { name(row) } else { SUBCOMMANDS[row - COMMAND_ROWS] };
            let _ = write!(out, "latency_percentiles_usec_{name}:");
            for (j, &p) in percentiles.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                let ns = value_at(h, total, p);
                let _ = write!(out, "p{}={:.3}", percentile_text(p), ns as f64 / 1000.0);
            }
            out.extend_from_slice(b"\r\n");
        }
    }
}

impl LatencyTracking {
    /// The workers' histograms summed, less the baseline of the last reset: [`BUCKETS`]
    /// counts per counter row (see [`row`]).
    pub(crate) fn merged<'a>(&self, workers: impl Iterator<Item = &'a Histograms>) -> Box<[u64]> {
        let mut sum = sums(workers);
        if let Some(base) = self.baseline.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
            for (s, b) in sum.iter_mut().zip(base) {
                *s = s.saturating_sub(*b);
            }
        }
        sum
    }
}

/// Counter row `r`'s histogram in [`LatencyTracking::merged`]'s sums.
pub(crate) fn row(sum: &[u64], r: usize) -> &[u64] {
    &sum[r * BUCKETS..(r + 1) * BUCKETS]
}

/// `LATENCY HISTOGRAM`'s `histogram_usec` for one histogram: Redis 7.0's cumulative counts at
/// power-of-two levels from 1024 ns (HdrHistogram's log iteration, `fillCommandCDF`), each
/// level named by its highest value in µs (1, 2, 4, 8, …), written only where the count rose.
/// A level counts the buckets that start at or below its highest value.
pub(crate) fn cdf(h: &[u64]) -> Vec<(u64, u64)> {
    let total: u64 = h.iter().sum();
    let mut levels = Vec::new();
    let (mut seen, mut next) = (0u64, 0usize);
    let mut previous = 0;
    let mut level: u64 = 1024;
    while seen < total && level < 1 << 50 {
        // HdrHistogram (2 significant digits) holds a level's value with 1/128 of it above.
        let highest = level + (level >> 7).max(1) - 1;
        while next < BUCKETS && bounds(next).0 <= highest {
            seen += h[next];
            next += 1;
        }
        if seen > previous {
            levels.push((highest / 1000, seen));
        }
        previous = seen;
        level <<= 1;
    }
    levels
}

/// The workers' histograms summed.
fn sums<'a>(workers: impl Iterator<Item = &'a Histograms>) -> Box<[u64]> {
    let mut sum = vec![0u64; STAT_ROWS * BUCKETS].into_boxed_slice();
    for w in workers {
        for (s, c) in sum.iter_mut().zip(w.counts.iter()) {
            *s += c.load(Ordering::Relaxed);
        }
    }
    sum
}

/// HdrHistogram's `hdr_value_at_percentile` over one histogram of `total` calls.
pub(crate) fn value_at(h: &[u64], total: u64, p: f64) -> u64 {
    if p <= 0.0 {
        return h.iter().position(|&c| c > 0).map_or(0, |i| bounds(i).0);
    }
    let want = (((p / 100.0) * total as f64 + 0.5) as u64).max(1);
    let mut seen = 0;
    for (i, &c) in h.iter().enumerate() {
        seen += c;
        if seen >= want {
            return bounds(i).1;
        }
    }
    bounds(BUCKETS - 1).1
}

#[cfg(test)]
mod tests {
    use super::{BUCKETS, Histograms, LatencyTracking, bounds, bucket, cdf, value_at};

    #[test]
    fn the_cdf_rises_at_hdr_histogram_levels() {
        let mut h = vec![0u64; BUCKETS];
        h[bucket(500)] = 3;
        h[bucket(8000)] = 2;
        h[bucket(40_000)] = 1;
        // 1024 ns doubling; 8000 ns is under 8192; 40 µs under 65536 (named 66).
        assert_eq!(cdf(&h), [(1, 3), (8, 5), (66, 6)]);
        assert!(cdf(&[0; BUCKETS]).is_empty());
    }

    #[test]
    fn every_value_falls_in_a_bucket_that_bounds_it() {
        for v in (0..5000).chain([1 << 20, 123_456_789, 1 << 36, u64::MAX]) {
            let (low, high) = bounds(bucket(v));
            assert!(bucket(v) == BUCKETS - 1 || (low <= v && v <= high), "{v}: {low}..{high}");
            assert!(high - low <= low / 16, "a bucket spans at most 1/16 of its values");
        }
        assert_eq!(bucket(1 << 36), BUCKETS - 1, "longer calls count in the last bucket");
    }

    #[test]
    fn percentiles_are_read_as_hdr_histogram_reads_them() {
        let mut h = vec![0u64; BUCKETS];
        h[bucket(1000)] = 98;
        h[bucket(50_000)] = 2;
        assert_eq!(value_at(&h, 100, 50.0), bounds(bucket(1000)).1);
        assert_eq!(value_at(&h, 100, 99.0), bounds(bucket(50_000)).1);
        assert_eq!(value_at(&h, 100, 0.0), bounds(bucket(1000)).0);
    }

    #[test]
    fn info_lines_name_recorded_rows_and_reset_counts_from_zero() {
        let (w, t) = (Histograms::default(), LatencyTracking::default());
        w.record(0, 1000);
        w.record(usize::MAX, 5);
        let mut out = Vec::new();
        t.write(&mut out, [&w].into_iter(), |_| "get");
        assert_eq!(out, b"latency_percentiles_usec_get:p50=1.023,p99=1.023,p99.9=1.023\r\n");
        t.reset([&w].into_iter());
        out.clear();
        t.write(&mut out, [&w].into_iter(), |_| "get");
        assert!(out.is_empty());
        assert_eq!(t.percentiles_text(), "50 99 99.9");
    }
}
