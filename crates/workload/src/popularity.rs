//! Key popularity: which key id in `0..n` the next request touches.
//!
//! The shapes are YCSB's (Cooper et al., SoCC'10), which the Catalyst paper uses:
//!
//! | shape | YCSB class | semantics |
//! |---|---|---|
//! | [`Popularity::Uniform`] | `UniformLongGenerator` | every key equally likely |
//! | [`Popularity::Zipf`] | `ZipfianGenerator` / `ScrambledZipfianGenerator` | rank `r` (0-based) has probability ∝ `1 / (r + 1)^θ` |
//! | [`Popularity::Hotspot`] | `HotspotIntegerGenerator` | the first `hot_keys · n` ids get `hot_ops` of the requests, uniformly; the rest share the remainder uniformly |
//! | [`Popularity::Latest`] | `SkewedLatestGenerator` | Zipf over recency: the most recently inserted key is rank 0 |
//!
//! ## The Zipf sampler
//! [`Zipf`] is rejection-inversion sampling (Hörmann & Derflinger, "Rejection-inversion to
//! generate variates from monotone discrete distributions", ACM TOMACS 1996), the method of
//! Apache Commons' `RejectionInversionZipfSampler`. It is exact, needs no table and no
//! harmonic-number sum (YCSB's generator precomputes ζ(n, θ) in `O(n)`), and draws a sample in
//! `O(1)` expected time — on average barely more than one uniform variate — for any `n` up to
//! 2^53 and any exponent `θ ≥ 0`, including `θ = 1` and `θ` near 1.
//!
//! The idea: the pmf `h(k) = k^-θ` is bounded by the area under `h` over `[k − ½, k + ½]`.
//! Drawing `u` uniformly from the integral `H` of `h` over `[1.5, n + ½]` (plus the whole mass of
//! `k = 1`), inverting `x = H⁻¹(u)`, and rounding `k = ⌊x + ½⌋` proposes `k` with probability
//! proportional to that area; the proposal is accepted when `u` falls into the part of the
//! strip that corresponds to `h(k)` itself. `H` and `H⁻¹` are written with `expm1`/`log1p`
//! helpers that stay accurate as `1 − θ → 0`, which is what makes `θ = 1` a non-special case.
//!
//! ## Scrambling
//! A plain Zipf puts the hottest keys at the smallest ids. With `scrambled: true` the rank goes
//! through a keyed pseudo-random *permutation* of `0..n` ([`Permutation`]: a 4-round Feistel
//! network with cycle walking), so hot keys are spread over the id space while the popularity
//! of each key stays exactly Zipf (YCSB's scrambled generator hashes modulo `n`, which is not a
//! bijection and merges ranks).

use crate::error::Error;
use crate::rng::{Rng, mix64};

/// A key-popularity shape. Build a sampler with [`KeySampler::new`].
#[derive(Clone, Debug, PartialEq)]
pub enum Popularity {
    /// Every key equally likely.
    Uniform,
    /// Zipf with exponent `theta ≥ 0` over ranks; `scrambled` spreads ranks over ids.
    Zipf {
        /// The exponent (YCSB's default is 0.99; Twitter's clusters report 0 … 2.7).
        theta: f64,
        /// Map ranks to ids through a pseudo-random permutation instead of `id = rank`.
        scrambled: bool,
    },
    /// A hot set of the lowest ids receiving a fixed share of requests.
    Hotspot {
        /// Fraction of keys that are hot, in `[0, 1]` (YCSB `hotspotdatafraction`).
        hot_keys: f64,
        /// Fraction of requests that go to the hot set, in `[0, 1]` (YCSB `hotspotopnfraction`).
        hot_ops: f64,
    },
    /// Zipf over recency of insertion: the newest key is the most popular.
    Latest {
        /// The Zipf exponent over recency ranks (YCSB uses 0.99).
        theta: f64,
    },
}

/// Exact rejection-inversion sampler of Zipf(n, θ) ranks in `0..n`.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    exponent: f64,
    /// `H(1.5) − 1`: the upper end of the sampled integral (includes all of rank 1).
    h_integral_x1: f64,
    /// `H(n + 0.5)`: the lower end.
    h_integral_n: f64,
    /// Squeeze constant: proposals with `k − x ≤ s` are accepted without evaluating `H`.
    s: f64,
}

impl Zipf {
    /// A sampler over `n ≥ 1` ranks with exponent `theta ≥ 0` (0 is uniform).
    ///
    /// # Errors
    /// [`Error::Config`] for `n = 0`, `n > 2^53` or a negative or non-finite exponent.
    pub fn new(n: u64, theta: f64) -> Result<Self, Error> {
        if n == 0 || n > 1 << 53 {
            return Err(Error::config(format!("Zipf needs 1 ≤ n ≤ 2^53 keys, got {n}")));
        }
        if !theta.is_finite() || theta < 0.0 {
            return Err(Error::config(format!("Zipf exponent must be ≥ 0, got {theta}")));
        }
        let h_integral_x1 = h_integral(1.5, theta) - 1.0;
        let h_integral_n = h_integral(n as f64 + 0.5, theta);
        let s = 2.0 - h_integral_inverse(h_integral(2.5, theta) - h(2.0, theta), theta);
        Ok(Self { n, exponent: theta, h_integral_x1, h_integral_n, s })
    }

    /// Number of ranks.
    #[must_use]
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Draws a rank in `0..n`; rank 0 is the most popular.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let e = self.exponent;
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = h_integral_inverse(u, e);
            // `as` saturates, and the clamp keeps rounding error inside 1..=n.
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s || u >= h_integral(kf + 0.5, e) - h(kf, e) {
                return k - 1;
            }
        }
    }

    /// The exact probability of rank `r` (0-based), by summing the normaliser: `O(n)`, for
    /// tests and small `n` only.
    #[must_use]
    pub fn pmf(&self, r: u64) -> f64 {
        let norm: f64 = (1..=self.n).map(|k| h(k as f64, self.exponent)).sum();
        h((r + 1) as f64, self.exponent) / norm
    }
}

/// `h(x) = x^-θ`.
fn h(x: f64, theta: f64) -> f64 {
    (-theta * x.ln()).exp()
}

/// `H(x) = (x^(1−θ) − 1) / (1 − θ)`, continuous at `θ = 1` where it is `ln x`.
fn h_integral(x: f64, theta: f64) -> f64 {
    let log_x = x.ln();
    expm1_over_x((1.0 - theta) * log_x) * log_x
}

/// The inverse of [`h_integral`].
fn h_integral_inverse(x: f64, theta: f64) -> f64 {
    // `t < −1` can only come from rounding; clamp so `log1p` stays finite.
    let t = (x * (1.0 - theta)).max(-1.0);
    (log1p_over_x(t) * x).exp()
}

/// `ln(1 + x) / x`, accurate near 0 (Taylor series below 1e-8).
fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.ln_1p() / x } else { 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)) }
}

/// `(e^x − 1) / x`, accurate near 0 (Taylor series below 1e-8).
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.exp_m1() / x } else { 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x)) }
}

/// A keyed pseudo-random bijection of `0..n`.
///
/// A balanced 4-round Feistel network permutes `0..2^b` (the smallest even `b` with
/// `2^b ≥ n`, so the domain is less than `4n`); values that land outside `0..n` are
/// encrypted again until they land inside ("cycle walking", Black & Rogaway 2002), which
/// restricts the permutation to `0..n`. Expected cost: under four Feistel evaluations.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` chosen by `seed`.
    #[must_use]
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = if n <= 1 { 0 } else { 64 - (n - 1).leading_zeros() };
        let half_bits = bits.div_ceil(2).max(1);
        let mut rng = Rng::new(seed);
        let keys = [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()];
        Self { n, half_bits, keys }
    }

    /// The image of `x`, for `x < n` (larger inputs are reduced modulo `n` first).
    #[must_use]
    pub fn apply(&self, x: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut y = x % self.n;
        loop {
            y = self.encrypt(y);
            if y < self.n {
                return y;
            }
        }
    }

    fn encrypt(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let f = mix64(right ^ key) & mask;
            (left, right) = (right, left ^ f);
        }
        (left << self.half_bits) | right
    }
}

/// Salt so that the scrambling permutation is independent of other seed uses.
const SCRAMBLE_SALT: u64 = 0x5C4A_4B1E_D0C5_0001;

/// Draws key ids for one [`Popularity`] over a key space that may grow by insertion.
///
/// Ids `0..n` exist from the start. [`KeySampler::insert`] hands out the never-used ids
/// `n, n + 1, …`; for [`Popularity::Latest`] each insert also becomes the new most popular key,
/// while the other shapes keep drawing from `0..n`.
#[derive(Clone, Debug)]
pub struct KeySampler {
    kind: Kind,
    /// Ids handed out so far: `0..count` exist.
    count: u64,
}

#[derive(Clone, Debug)]
enum Kind {
    Uniform { n: u64 },
    Zipf { zipf: Zipf, scramble: Option<Permutation> },
    Hotspot { hot: u64, cold: u64, hot_ops: f64 },
    Latest { zipf: Zipf, theta: f64 },
}

impl KeySampler {
    /// A sampler over `n ≥ 1` keys; `seed` only picks the scrambling permutation.
    ///
    /// # Errors
    /// [`Error::Config`] for `n = 0` or out-of-range parameters.
    pub fn new(popularity: &Popularity, n: u64, seed: u64) -> Result<Self, Error> {
        if n == 0 {
            return Err(Error::config("a workload needs at least one key"));
        }
        let kind = match *popularity {
            Popularity::Uniform => Kind::Uniform { n },
            Popularity::Zipf { theta, scrambled } => Kind::Zipf {
                zipf: Zipf::new(n, theta)?,
                scramble: scrambled.then(|| Permutation::new(n, seed ^ SCRAMBLE_SALT)),
            },
            Popularity::Hotspot { hot_keys, hot_ops } => {
                if !(0.0..=1.0).contains(&hot_keys) || !(0.0..=1.0).contains(&hot_ops) {
                    return Err(Error::config("hotspot fractions must lie in [0, 1]"));
                }
                // At least one hot and, when possible, one cold key.
                let hot = ((n as f64 * hot_keys).round() as u64).clamp(1, n);
                Kind::Hotspot { hot, cold: n - hot, hot_ops }
            }
            Popularity::Latest { theta } => Kind::Latest { zipf: Zipf::new(n, theta)?, theta },
        };
        Ok(Self { kind, count: n })
    }

    /// The next key id.
    pub fn sample(&mut self, rng: &mut Rng) -> u64 {
        match &self.kind {
            Kind::Uniform { n } => rng.below(*n),
            Kind::Zipf { zipf, scramble } => {
                let rank = zipf.sample(rng);
                scramble.as_ref().map_or(rank, |p| p.apply(rank))
            }
            Kind::Hotspot { hot, cold, hot_ops } => {
                if *cold == 0 || rng.chance(*hot_ops) {
                    rng.below(*hot)
                } else {
                    hot + rng.below(*cold)
                }
            }
            Kind::Latest { zipf, .. } => self.count - 1 - zipf.sample(rng),
        }
    }

    /// Hands out a never-used id (`n`, `n + 1`, …). Under [`Popularity::Latest`] it becomes
    /// the most popular key.
    pub fn insert(&mut self) -> u64 {
        let id = self.count;
        self.count += 1;
        if let Kind::Latest { zipf, theta } = &mut self.kind {
            // Re-deriving the sampler's constants is O(1): a few logarithms.
            if let Ok(z) = Zipf::new(self.count, *theta) {
                *zipf = z;
            }
        }
        id
    }

    /// How many ids exist: the initial `n` plus all inserts.
    #[must_use]
    pub fn key_count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pearson's chi-square statistic of `counts` against `pmf`.
    fn chi_square(counts: &[u64], pmf: impl Fn(usize) -> f64) -> f64 {
        let total: u64 = counts.iter().sum();
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let e = pmf(i) * total as f64;
                (c as f64 - e).powi(2) / e
            })
            .sum()
    }

    #[test]
    fn zipf_matches_exact_pmf_for_small_n() {
        // 20 ranks → 19 degrees of freedom; the 99.9% quantile of χ²(19) is 43.8.
        for theta in [0.0, 0.5, 0.99, 1.0, 1.0 + 1e-10, 1.01, 1.5, 2.7] {
            let zipf = Zipf::new(20, theta).unwrap();
            let mut rng = Rng::new(11);
            let mut counts = [0u64; 20];
            for _ in 0..200_000 {
                counts[zipf.sample(&mut rng) as usize] += 1;
            }
            let stat = chi_square(&counts, |i| zipf.pmf(i as u64));
            assert!(stat < 43.8, "theta {theta}: chi-square {stat}, counts {counts:?}");
        }
    }

    #[test]
    fn zipf_single_key_and_bad_parameters() {
        let z = Zipf::new(1, 1.0).unwrap();
        let mut rng = Rng::new(0);
        assert!((0..100).all(|_| z.sample(&mut rng) == 0));
        assert!(Zipf::new(0, 1.0).is_err());
        assert!(Zipf::new(10, -0.5).is_err());
        assert!(Zipf::new(10, f64::NAN).is_err());
    }

    #[test]
    fn zipf_works_for_a_billion_keys() {
        // No table: construction is instant. P(rank 0) = 1 / H(10^9, 1) ≈ 1 / 21.3005.
        let n = 1_000_000_000;
        let zipf = Zipf::new(n, 1.0).unwrap();
        let mut rng = Rng::new(5);
        let draws = 200_000;
        let mut top = 0;
        for _ in 0..draws {
            let r = zipf.sample(&mut rng);
            assert!(r < n);
            top += u64::from(r == 0);
        }
        let expected = 1.0 / 21.300_481_502_347_942;
        let observed = top as f64 / f64::from(draws);
        assert!((observed - expected).abs() < 0.002, "{observed} vs {expected}");
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let p = Permutation::new(n, 99);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n);
                assert!(!seen[y as usize], "n {n}: {y} hit twice");
                seen[y as usize] = true;
            }
        }
        // It actually moves things.
        let p = Permutation::new(1000, 1);
        assert!((0..10).any(|x| p.apply(x) >= 10));
    }

    #[test]
    fn scrambled_zipf_keeps_frequencies() {
        let n = 50;
        let mut plain =
            KeySampler::new(&Popularity::Zipf { theta: 1.2, scrambled: false }, n, 8).unwrap();
        let mut scrambled =
            KeySampler::new(&Popularity::Zipf { theta: 1.2, scrambled: true }, n, 8).unwrap();
        let (mut a, mut b) = (Rng::new(2), Rng::new(2));
        let mut ca = vec![0u64; n as usize];
        let mut cb = vec![0u64; n as usize];
        for _ in 0..50_000 {
            ca[plain.sample(&mut a) as usize] += 1;
            cb[scrambled.sample(&mut b) as usize] += 1;
        }
        // The same random stream: the sorted histograms are identical, the hottest id moved.
        assert_ne!(ca, cb);
        let hottest = cb.iter().enumerate().max_by_key(|&(_, c)| *c).map(|(i, _)| i);
        assert_ne!(hottest, Some(0));
        ca.sort_unstable();
        cb.sort_unstable();
        assert_eq!(ca, cb);
    }

    #[test]
    fn uniform_covers_every_key() {
        let n = 100;
        let mut s = KeySampler::new(&Popularity::Uniform, n, 0).unwrap();
        let mut rng = Rng::new(4);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..100_000 {
            counts[s.sample(&mut rng) as usize] += 1;
        }
        // 99 degrees of freedom; the 99.9% quantile of χ²(99) is 148.2.
        let stat = chi_square(&counts, |_| 1.0 / n as f64);
        assert!(stat < 148.2, "chi-square {stat}");
    }

    #[test]
    fn hotspot_fractions() {
        let n = 10_000;
        let pop = Popularity::Hotspot { hot_keys: 0.2, hot_ops: 0.8 };
        let mut s = KeySampler::new(&pop, n, 0).unwrap();
        let mut rng = Rng::new(9);
        let draws = 100_000;
        let mut hot = 0;
        let mut hot_ids = std::collections::HashSet::new();
        for _ in 0..draws {
            let k = s.sample(&mut rng);
            assert!(k < n);
            if k < 2_000 {
                hot += 1;
                hot_ids.insert(k);
            }
        }
        let frac = f64::from(hot) / f64::from(draws);
        assert!((frac - 0.8).abs() < 0.01, "hot fraction {frac}");
        assert!(hot_ids.len() > 1_990, "hot set covered: {}", hot_ids.len());
    }

    #[test]
    fn latest_prefers_recent_inserts() {
        let mut s = KeySampler::new(&Popularity::Latest { theta: 0.99 }, 100, 0).unwrap();
        let mut rng = Rng::new(1);
        assert_eq!(s.insert(), 100);
        assert_eq!(s.insert(), 101);
        assert_eq!(s.key_count(), 102);
        let draws = 20_000;
        let mut newest = 0;
        for _ in 0..draws {
            let k = s.sample(&mut rng);
            assert!(k < 102);
            newest += u32::from(k == 101);
        }
        let expected = Zipf::new(102, 0.99).unwrap().pmf(0);
        let observed = f64::from(newest) / f64::from(draws);
        assert!((observed - expected).abs() < 0.01, "{observed} vs {expected}");
    }
}
