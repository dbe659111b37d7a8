//! A finite weighted choice, shared by size mixes, operation mixes and TTL mixes.
//!
//! Weights need not sum to one; they are normalised at construction. Sampling draws one
//! uniform double and binary-searches the cumulative weights: `O(log k)` for `k` outcomes,
//! which for the handful of outcomes used here is a few comparisons.

use crate::error::Error;
use crate::rng::Rng;

/// A finite distribution over values of `T`.
#[derive(Clone, Debug, PartialEq)]
pub struct Discrete<T> {
    items: Vec<T>,
    /// `cumulative[i]` = P(outcome ≤ i); the last entry is exactly 1.
    cumulative: Vec<f64>,
}

impl<T> Discrete<T> {
    /// Builds the distribution from `(value, weight)` pairs.
    ///
    /// # Errors
    /// [`Error::Config`] when there are no pairs, a weight is negative or not finite, or all
    /// weights are zero.
    pub fn new(pairs: impl IntoIterator<Item = (T, f64)>) -> Result<Self, Error> {
        let mut items = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0.0;
        for (item, weight) in pairs {
            if !weight.is_finite() || weight < 0.0 {
                return Err(Error::config(format!("invalid weight {weight}")));
            }
            total += weight;
            items.push(item);
            cumulative.push(total);
        }
        if items.is_empty() || total <= 0.0 {
            return Err(Error::config("a discrete distribution needs a positive total weight"));
        }
        for c in &mut cumulative {
            *c /= total;
        }
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Ok(Self { items, cumulative })
    }

    /// A distribution with one certain outcome.
    #[must_use]
    pub fn single(item: T) -> Self {
        Self { items: vec![item], cumulative: vec![1.0] }
    }

    /// Draws one outcome.
    pub fn sample(&self, rng: &mut Rng) -> &T {
        if self.items.len() == 1 {
            return &self.items[0];
        }
        let u = rng.next_f64();
        let i = self.cumulative.partition_point(|&c| c <= u);
        // `u < 1 = cumulative.last()`, so `i < len`; `min` guards rounding all the same.
        &self.items[i.min(self.items.len() - 1)]
    }

    /// The outcomes and their normalised probabilities.
    pub fn iter(&self) -> impl Iterator<Item = (&T, f64)> {
        let mut prev = 0.0;
        self.items.iter().zip(&self.cumulative).map(move |(item, &c)| {
            let p = c - prev;
            prev = c;
            (item, p)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_follow_weights() {
        let d = Discrete::new([('a', 1.0), ('b', 3.0), ('c', 0.0), ('d', 6.0)]).unwrap();
        let mut rng = Rng::new(3);
        let mut counts = [0u32; 4];
        for _ in 0..100_000 {
            counts[(*d.sample(&mut rng) as u8 - b'a') as usize] += 1;
        }
        assert_eq!(counts[2], 0, "zero weight is never drawn");
        for (i, p) in [(0, 0.1), (1, 0.3), (3, 0.6)] {
            let f = f64::from(counts[i]) / 100_000.0;
            assert!((f - p).abs() < 0.01, "outcome {i}: {f} vs {p}");
        }
        let probs: Vec<f64> = d.iter().map(|(_, p)| p).collect();
        assert!((probs[1] - 0.3).abs() < 1e-12);
    }

    #[test]
    fn rejects_bad_weights() {
        assert!(Discrete::<u8>::new([]).is_err());
        assert!(Discrete::new([(1u8, 0.0)]).is_err());
        assert!(Discrete::new([(1u8, -1.0), (2, 2.0)]).is_err());
        assert!(Discrete::new([(1u8, f64::NAN)]).is_err());
    }
}
