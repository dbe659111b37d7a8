//! Operation mixes and TTL distributions.

use crate::discrete::Discrete;
use crate::error::Error;
use crate::request::Op;
use crate::rng::Rng;

/// Which operation each request performs, by fraction.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMix(Discrete<Op>);

impl OpMix {
    /// A mix from `(operation, weight)` pairs; weights are normalised.
    ///
    /// # Errors
    /// See [`Discrete::new`].
    pub fn new(pairs: impl IntoIterator<Item = (Op, f64)>) -> Result<Self, Error> {
        Discrete::new(pairs).map(Self)
    }

    /// Only `op`.
    #[must_use]
    pub fn only(op: Op) -> Self {
        Self(Discrete::single(op))
    }

    /// `get` with probability `get_fraction`, otherwise `set`.
    ///
    /// # Errors
    /// [`Error::Config`] unless `0 ≤ get_fraction ≤ 1`.
    pub fn get_set(get_fraction: f64) -> Result<Self, Error> {
        if !(0.0..=1.0).contains(&get_fraction) {
            return Err(Error::config(format!("get fraction {get_fraction} not in [0, 1]")));
        }
        Self::new([(Op::Get, get_fraction), (Op::Set, 1.0 - get_fraction)])
    }

    /// Facebook ETC's GET:SET ratio of 30:1 (also the stacked-DRAM thesis's).
    #[must_use]
    pub fn etc() -> Self {
        Self(Discrete::new([(Op::Get, 30.0), (Op::Set, 1.0)]).unwrap_or_else(|_| unreachable!()))
    }

    /// Draws one operation.
    pub fn sample(&self, rng: &mut Rng) -> Op {
        *self.0.sample(rng)
    }

    /// The operations and their probabilities.
    pub fn iter(&self) -> impl Iterator<Item = (Op, f64)> + '_ {
        self.0.iter().map(|(&op, p)| (op, p))
    }
}

/// Time to live given to storage operations, in seconds.
#[derive(Clone, Debug, PartialEq)]
pub enum TtlDist {
    /// No expiry.
    None,
    /// Always the same TTL.
    Fixed(u32),
    /// A finite mix; `None` entries mean "no expiry".
    Mix(Discrete<Option<u32>>),
}

impl TtlDist {
    /// A mix from `(ttl_seconds, weight)` pairs.
    ///
    /// # Errors
    /// See [`Discrete::new`].
    pub fn mix(pairs: impl IntoIterator<Item = (Option<u32>, f64)>) -> Result<Self, Error> {
        Discrete::new(pairs).map(Self::Mix)
    }

    /// Draws one TTL.
    pub fn sample(&self, rng: &mut Rng) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Fixed(ttl) => Some(*ttl),
            Self::Mix(d) => *d.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_mix_is_thirty_to_one() {
        let mix = OpMix::etc();
        let mut rng = Rng::new(0);
        let sets = (0..310_000).filter(|_| mix.sample(&mut rng) == Op::Set).count();
        assert!((sets as f64 - 10_000.0).abs() < 400.0, "{sets}");
        assert!(OpMix::get_set(1.5).is_err());
    }

    #[test]
    fn ttl_mix() {
        let ttl = TtlDist::mix([(Some(60), 0.75), (None, 0.25)]).unwrap();
        let mut rng = Rng::new(1);
        let none = (0..100_000).filter(|_| ttl.sample(&mut rng).is_none()).count();
        assert!((none as f64 / 100_000.0 - 0.25).abs() < 0.01);
        assert_eq!(TtlDist::Fixed(5).sample(&mut rng), Some(5));
        assert_eq!(TtlDist::None.sample(&mut rng), None);
    }
}
