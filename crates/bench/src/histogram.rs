//! Latency histograms and value-size classes.
//!
//! Latencies are recorded in nanoseconds in HDR histograms (1 ns to 100 s, 3 significant
//! digits: any reported percentile is within 0.1% of the exact one). A histogram is about
//! 230 KB; each worker thread keeps one per (command, size class) and one per tenant, and the
//! run merges them at the end, so recording is a thread-local array increment.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency recorded exactly; longer ones are recorded as this.
const MAX_NS: u64 = 100_000_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct Latency(Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        // The bounds are constants that `new_with_bounds` accepts.
        Self(
            Histogram::new_with_bounds(1, MAX_NS, SIGNIFICANT_DIGITS)
                .unwrap_or_else(|_| unreachable!("constant bounds")),
        )
    }

    /// Records one latency (0 counts as 1 ns; above 100 s counts as 100 s).
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.clamp(1, MAX_NS));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The value at `quantile` (0..=1) in nanoseconds; 0 when empty.
    pub fn quantile_ns(&self, quantile: f64) -> u64 {
        if self.0.is_empty() { 0 } else { self.0.value_at_quantile(quantile) }
    }

    /// Count and the usual percentiles, in microseconds.
    pub fn summary(&self) -> Summary {
        let us = |ns: u64| ns as f64 / 1000.0;
        Summary {
            count: self.count(),
            mean_us: if self.0.is_empty() { 0.0 } else { self.0.mean() / 1000.0 },
            p50_us: us(self.quantile_ns(0.50)),
            p90_us: us(self.quantile_ns(0.90)),
            p99_us: us(self.quantile_ns(0.99)),
            p999_us: us(self.quantile_ns(0.999)),
            max_us: us(if self.0.is_empty() { 0 } else { self.0.max() }),
        }
    }
}

/// The percentiles a report shows, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest sample.
    pub max_us: f64,
}

/// Value-size classes given by ascending upper bounds: with bounds `[64, 1024]` the classes
/// are `0-64`, `65-1024` and `1025+`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeClasses {
    bounds: Vec<u32>,
}

impl SizeClasses {
    /// Classes with these upper bounds (sorted and deduplicated here).
    pub fn new(mut bounds: Vec<u32>) -> Self {
        bounds.sort_unstable();
        bounds.dedup();
        Self { bounds }
    }

    /// Number of classes (one more than the bounds).
    pub fn len(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Always false: there is at least one class.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The class of a value of `size` bytes.
    pub fn class_of(&self, size: u32) -> usize {
        self.bounds.partition_point(|&b| b < size)
    }

    /// A class's name, such as `65-1024` or `1025+`.
    pub fn name(&self, class: usize) -> String {
        let low = if class == 0 { 0 } else { self.bounds[class - 1] + 1 };
        match self.bounds.get(class) {
            Some(high) => format!("{low}-{high}"),
            None => format!("{low}+"),
        }
    }
}

impl Default for SizeClasses {
    /// `0-64`, `65-1024`, `1025-65536`, `65537+`: the thesis's 10 B, 300 B and 1 MB values
    /// each fall in their own class.
    fn default() -> Self {
        Self::new(vec![64, 1024, 65536])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fridge_workload::Rng;

    fn within(actual: f64, expected: f64, rel: f64) -> bool {
        (actual - expected).abs() <= expected * rel
    }

    #[test]
    fn uniform_percentiles_are_exact_to_three_digits() {
        let mut h = Latency::new();
        for ns in 1..=100_000 {
            h.record(ns * 10);
        }
        let s = h.summary();
        assert_eq!(s.count, 100_000);
        // Value at quantile q of 10, 20, …, 1_000_000 ns is q · 1 ms.
        for (got, q) in [(s.p50_us, 0.5), (s.p90_us, 0.9), (s.p99_us, 0.99), (s.p999_us, 0.999)] {
            assert!(within(got, q * 1000.0, 0.001), "p{q}: {got}");
        }
        assert!(within(s.max_us, 1000.0, 0.001));
        assert!(within(s.mean_us, 500.005, 0.001));
    }

    #[test]
    fn exponential_percentiles_match_the_quantile_function() {
        // Exponential with mean 100 µs: Q(q) = −100 µs · ln(1 − q).
        let mut rng = Rng::new(3);
        let mut h = Latency::new();
        for _ in 0..1_000_000 {
            let ns = -100_000.0 * rng.next_f64_open().ln();
            h.record(ns as u64);
        }
        let s = h.summary();
        for (got, q) in [(s.p50_us, 0.5), (s.p90_us, 0.9), (s.p99_us, 0.99)] {
            let exact = -100.0 * (1.0f64 - q).ln();
            assert!(within(got, exact, 0.02), "p{q}: {got} vs {exact}");
        }
        assert!(within(s.mean_us, 100.0, 0.01), "{}", s.mean_us);
    }

    #[test]
    fn merge_adds_samples_and_empty_is_zero() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        assert_eq!(a.summary(), Summary::default());
        a.record(1_000);
        b.record(3_000);
        b.record(0);
        b.record(u64::MAX);
        a.merge(&b);
        assert_eq!(a.count(), 4);
        assert!(within(a.summary().max_us, 100_000_000.0, 0.001));
    }

    #[test]
    fn size_classes() {
        let c = SizeClasses::default();
        assert_eq!(c.len(), 4);
        let got: Vec<usize> = [0, 10, 64, 65, 300, 1024, 1025, 65536, 1_000_000]
            .iter()
            .map(|&s| c.class_of(s))
            .collect();
        assert_eq!(got, [0, 0, 0, 1, 1, 1, 2, 2, 3]);
        let names: Vec<String> = (0..c.len()).map(|i| c.name(i)).collect();
        assert_eq!(names, ["0-64", "65-1024", "1025-65536", "65537+"]);
    }
}
