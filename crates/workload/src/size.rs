//! Key and value size distributions, in bytes.
//!
//! Continuous distributions are sampled by inversion of their CDF from one open-interval
//! uniform `U ∈ (0, 1)`, rounded to the nearest byte and clamped to the `[min, max]` the caller
//! gives (a size must fit a `u32` and, for a cache, a sane item limit):
//!
//! | distribution | quantile function `Q(U)` (shape `ξ ≠ 0`; `ξ = 0` is the limit) |
//! |---|---|
//! | GEV(μ, σ, ξ) | `μ + σ((−ln U)^−ξ − 1)/ξ`, and `μ − σ ln(−ln U)` at `ξ = 0` |
//! | generalized Pareto(μ, σ, ξ) | `μ + σ(U^−ξ − 1)/ξ`, and `μ − σ ln U` at `ξ = 0` (`U` and `1 − U` are alike) |
//!
//! Presets:
//! - [`SizeDist::facebook_etc_key`] and [`SizeDist::facebook_etc_value`]: the ETC pool fit of
//!   Atikoglu et al. (SIGMETRICS'12), as given in `shared/workloads/facebook-2012-etc.md`.
//!   Key sizes are clamped to `[1, 250]` (memcached's key limit; the GEV's lower tail never
//!   reaches 1 in practice (P ≈ 1e-34) and its upper tail passes 250 with probability ≈ 6e-7).
//!   Value sizes are clamped to `[0, 1_000_000]` so that key + value + header fit memcached's
//!   default 1 MiB item limit (the Pareto tail exceeds 10^6 bytes with probability ≈ 6e-10).
//! - [`SizeDist::thesis_mix`]: the stacked-DRAM thesis's value sizes: 10 B for 50% of
//!   requests, 300 B for 45% and 1 MB for 5% (thesis §4.1.2.2, "10 bytes, 300 bytes, and 1
//!   megabyte … 50% … 45% … the remaining 5%"). The thesis counts 1 MB as 1,000,000 bytes
//!   (its address bookkeeping in Appendix B adds `1000000`); so does this preset.

use crate::discrete::Discrete;
use crate::error::Error;
use crate::rng::{Rng, mix64};

/// A distribution of sizes in bytes. Build with the constructors, which validate parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Always the same size.
    Fixed(u32),
    /// Uniform over `min..=max`.
    Uniform {
        /// Smallest size.
        min: u32,
        /// Largest size.
        max: u32,
    },
    /// Generalized extreme value, rounded and clamped.
    Gev(Continuous),
    /// Generalized Pareto, rounded and clamped.
    GenPareto(Continuous),
    /// A finite set of sizes with probabilities.
    Empirical(Discrete<u32>),
    /// Pick a component distribution by weight, then sample it.
    Mixture(Discrete<SizeDist>),
}

/// Parameters of a three-parameter continuous size distribution plus its clamp range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Continuous {
    /// Location μ.
    pub location: f64,
    /// Scale σ > 0.
    pub scale: f64,
    /// Shape ξ.
    pub shape: f64,
    /// Samples below this are raised to it.
    pub min: u32,
    /// Samples above this are lowered to it.
    pub max: u32,
}

impl Continuous {
    /// Validated parameters.
    ///
    /// # Errors
    /// [`Error::Config`] unless all are finite, `scale > 0` and `min ≤ max`.
    pub fn new(location: f64, scale: f64, shape: f64, min: u32, max: u32) -> Result<Self, Error> {
        if !(location.is_finite() && scale.is_finite() && shape.is_finite()) || scale <= 0.0 {
            return Err(Error::config("size distribution parameters must be finite, scale > 0"));
        }
        if min > max {
            return Err(Error::config(format!("size range {min}..={max} is empty")));
        }
        Ok(Self { location, scale, shape, min, max })
    }

    fn clamp(&self, x: f64) -> u32 {
        // `as` maps NaN to 0 and saturates; the clamp then applies the caller's range.
        (x.round() as u32).clamp(self.min, self.max)
    }
}

/// Shapes closer to zero than this use the `ξ = 0` (Gumbel / exponential) formula.
const SHAPE_EPSILON: f64 = 1e-12;

/// Facebook ETC value sizes 0..=14 bytes and their probabilities (the rest is Pareto).
const ETC_SMALL_VALUES: [(u32, f64); 15] = [
    (0, 0.00536),
    (1, 0.00047),
    (2, 0.17820),
    (3, 0.09239),
    (4, 0.00018),
    (5, 0.02740),
    (6, 0.00065),
    (7, 0.00606),
    (8, 0.00023),
    (9, 0.00837),
    (10, 0.00837),
    (11, 0.08989),
    (12, 0.00092),
    (13, 0.00326),
    (14, 0.01980),
];

/// Largest key memcached accepts.
pub const MAX_KEY_SIZE: u32 = 250;
/// Upper clamp of the ETC value-size preset.
pub const ETC_MAX_VALUE_SIZE: u32 = 1_000_000;

/// Salt that separates per-key size draws from other uses of a seed.
const KEYED_SALT: u64 = 0x51CE_D00D_0000_0001;

impl SizeDist {
    /// Uniform over `min..=max`.
    ///
    /// # Errors
    /// [`Error::Config`] if `min > max`.
    pub fn uniform(min: u32, max: u32) -> Result<Self, Error> {
        if min > max {
            return Err(Error::config(format!("size range {min}..={max} is empty")));
        }
        Ok(Self::Uniform { min, max })
    }

    /// GEV(location, scale, shape) clamped to `[min, max]`.
    ///
    /// # Errors
    /// See [`Continuous::new`].
    pub fn gev(location: f64, scale: f64, shape: f64, min: u32, max: u32) -> Result<Self, Error> {
        Continuous::new(location, scale, shape, min, max).map(Self::Gev)
    }

    /// Generalized Pareto(location, scale, shape) clamped to `[min, max]`.
    ///
    /// # Errors
    /// See [`Continuous::new`].
    pub fn gen_pareto(
        location: f64,
        scale: f64,
        shape: f64,
        min: u32,
        max: u32,
    ) -> Result<Self, Error> {
        Continuous::new(location, scale, shape, min, max).map(Self::GenPareto)
    }

    /// Sizes with the given weights.
    ///
    /// # Errors
    /// See [`Discrete::new`].
    pub fn empirical(pairs: impl IntoIterator<Item = (u32, f64)>) -> Result<Self, Error> {
        Discrete::new(pairs).map(Self::Empirical)
    }

    /// Facebook ETC key sizes: GEV(30.7984, 8.20449, 0.078688) clamped to `[1, 250]`.
    #[must_use]
    pub fn facebook_etc_key() -> Self {
        Self::Gev(Continuous {
            location: 30.7984,
            scale: 8.20449,
            shape: 0.078688,
            min: 1,
            max: MAX_KEY_SIZE,
        })
    }

    /// Facebook ETC value sizes: 0..=14 bytes with the study's probabilities (about 44% of
    /// values in all), otherwise generalized Pareto(15.0, 214.476, 0.348238) clamped to
    /// `[0, 1_000_000]`.
    #[must_use]
    pub fn facebook_etc_value() -> Self {
        let small_total: f64 = ETC_SMALL_VALUES.iter().map(|&(_, p)| p).sum();
        let pareto = Self::GenPareto(Continuous {
            location: 15.0,
            scale: 214.476,
            shape: 0.348238,
            min: 0,
            max: ETC_MAX_VALUE_SIZE,
        });
        let parts = ETC_SMALL_VALUES
            .iter()
            .map(|&(size, p)| (Self::Fixed(size), p))
            .chain([(pareto, 1.0 - small_total)]);
        // The weights are positive constants, so construction cannot fail.
        Self::Mixture(Discrete::new(parts).unwrap_or_else(|_| unreachable!("constant weights")))
    }

    /// The stacked-DRAM thesis mix: 10 B (50%), 300 B (45%), 1,000,000 B (5%).
    #[must_use]
    pub fn thesis_mix() -> Self {
        let pairs = [(10, 0.50), (300, 0.45), (1_000_000, 0.05)];
        Self::Empirical(Discrete::new(pairs).unwrap_or_else(|_| unreachable!("constant weights")))
    }

    /// Draws one size.
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        match self {
            Self::Fixed(size) => *size,
            Self::Uniform { min, max } => {
                min + rng.below(u64::from(max - min) + 1) as u32 // < 2^32 by construction
            }
            Self::Gev(c) => {
                let w = -rng.next_f64_open().ln(); // standard exponential, > 0
                let z = if c.shape.abs() < SHAPE_EPSILON {
                    -w.ln()
                } else {
                    (w.powf(-c.shape) - 1.0) / c.shape
                };
                c.clamp(c.location + c.scale * z)
            }
            Self::GenPareto(c) => {
                let u = rng.next_f64_open();
                let z = if c.shape.abs() < SHAPE_EPSILON {
                    -u.ln()
                } else {
                    (u.powf(-c.shape) - 1.0) / c.shape
                };
                c.clamp(c.location + c.scale * z)
            }
            Self::Empirical(d) => *d.sample(rng),
            Self::Mixture(d) => d.sample(rng).sample(rng),
        }
    }

    /// The size of `key`: a deterministic draw seeded by `(key, seed)`, so every request for
    /// the same key under the same seed sees the same size, without remembering sizes.
    #[must_use]
    pub fn sample_for_key(&self, key: u64, seed: u64) -> u32 {
        if let Self::Fixed(size) = self {
            return *size;
        }
        let mut rng = Rng::new(mix64(key ^ mix64(seed ^ KEYED_SALT)));
        self.sample(&mut rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(d: &SizeDist, n: usize, seed: u64) -> Vec<u32> {
        let mut rng = Rng::new(seed);
        let mut v: Vec<u32> = (0..n).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        v
    }

    fn mean(v: &[u32]) -> f64 {
        v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64
    }

    fn quantile(sorted: &[u32], p: f64) -> f64 {
        f64::from(sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)])
    }

    #[test]
    fn fixed_and_uniform() {
        assert!(draw(&SizeDist::Fixed(77), 100, 0).iter().all(|&x| x == 77));
        let v = draw(&SizeDist::uniform(100, 200).unwrap(), 100_000, 1);
        assert_eq!((v[0], v[v.len() - 1]), (100, 200));
        assert!((mean(&v) - 150.0).abs() < 0.5, "{}", mean(&v));
        assert!(SizeDist::uniform(2, 1).is_err());
        let full = SizeDist::uniform(0, u32::MAX).unwrap();
        let _ = draw(&full, 10, 2);
    }

    #[test]
    fn gev_quantiles_and_mean() {
        // GEV(100, 10, 0.1): median μ + σ((ln 2)^−ξ − 1)/ξ = 103.7331;
        // mean μ + σ(Γ(1 − ξ) − 1)/ξ = 106.8629 (Γ(0.9) = 1.068629).
        let d = SizeDist::gev(100.0, 10.0, 0.1, 0, 100_000).unwrap();
        let v = draw(&d, 200_000, 3);
        assert!((quantile(&v, 0.5) - 103.7331).abs() <= 1.0, "median {}", quantile(&v, 0.5));
        assert!((mean(&v) - 106.8629).abs() < 0.2, "mean {}", mean(&v));
        // Gumbel limit (ξ = 0): mean μ + γσ = 105.7722.
        let g = SizeDist::gev(100.0, 10.0, 0.0, 0, 100_000).unwrap();
        assert!((mean(&draw(&g, 200_000, 4)) - 105.7722).abs() < 0.2);
    }

    #[test]
    fn gen_pareto_quantiles_and_mean() {
        // GPD(50, 100, 0.2): mean μ + σ/(1 − ξ) = 175; p90 = μ + σ(10^ξ − 1)/ξ = 342.4466.
        let d = SizeDist::gen_pareto(50.0, 100.0, 0.2, 0, 10_000_000).unwrap();
        let v = draw(&d, 400_000, 5);
        assert!((mean(&v) - 175.0).abs() < 1.5, "mean {}", mean(&v));
        assert!((quantile(&v, 0.9) - 342.4466).abs() < 3.0, "p90 {}", quantile(&v, 0.9));
        assert!(v[0] >= 50);
        // Exponential limit: mean μ + σ.
        let e = SizeDist::gen_pareto(0.0, 100.0, 0.0, 0, 10_000_000).unwrap();
        assert!((mean(&draw(&e, 200_000, 6)) - 100.0).abs() < 1.0);
        assert!(SizeDist::gen_pareto(0.0, -1.0, 0.0, 0, 1).is_err());
        assert!(SizeDist::gen_pareto(0.0, 1.0, f64::NAN, 0, 1).is_err());
    }

    #[test]
    fn facebook_etc_fit() {
        // Keys: GEV(30.7984, 8.20449, 0.078688): mean 30.7984 + 8.20449(Γ(0.921312) − 1)/ξ
        // = 36.2231 (Γ(0.921312) = 1.052027), median 33.8492.
        let keys = draw(&SizeDist::facebook_etc_key(), 200_000, 7);
        assert!((mean(&keys) - 36.2231).abs() < 0.15, "key mean {}", mean(&keys));
        assert!((quantile(&keys, 0.5) - 33.8492).abs() <= 1.0);
        assert!(keys[0] >= 1 && keys[keys.len() - 1] <= MAX_KEY_SIZE);
        // Values: P(size ≤ 14) = 0.44155 exactly from the table; Pareto mean 15 + σ/(1 − ξ).
        let values = draw(&SizeDist::facebook_etc_value(), 400_000, 8);
        let small = values.iter().filter(|&&x| x <= 14).count() as f64 / values.len() as f64;
        assert!((small - 0.44155).abs() < 0.003, "small fraction {small}");
        let twos = values.iter().filter(|&&x| x == 2).count() as f64 / values.len() as f64;
        assert!((twos - 0.1782).abs() < 0.003);
        let big: Vec<u32> = values.iter().copied().filter(|&x| x >= 15).collect();
        let pareto_mean = 15.0 + 214.476 / (1.0 - 0.348238);
        assert!((mean(&big) - pareto_mean).abs() / pareto_mean < 0.03, "{}", mean(&big));
        assert!(values[values.len() - 1] <= ETC_MAX_VALUE_SIZE);
    }

    #[test]
    fn thesis_mix_probabilities() {
        let v = draw(&SizeDist::thesis_mix(), 200_000, 9);
        let frac = |s| v.iter().filter(|&&x| x == s).count() as f64 / v.len() as f64;
        assert!((frac(10) - 0.50).abs() < 0.005);
        assert!((frac(300) - 0.45).abs() < 0.005);
        assert!((frac(1_000_000) - 0.05).abs() < 0.002);
    }

    #[test]
    fn per_key_sizes_are_stable() {
        let d = SizeDist::facebook_etc_value();
        for key in 0..1000 {
            assert_eq!(d.sample_for_key(key, 1), d.sample_for_key(key, 1));
        }
        let differs = (0..1000).any(|k| d.sample_for_key(k, 1) != d.sample_for_key(k, 2));
        assert!(differs, "the seed matters");
    }
}
