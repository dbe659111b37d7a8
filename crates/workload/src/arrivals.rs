//! Request arrival times.
//!
//! A [`Clock`] turns an [`Arrivals`] process into a non-decreasing sequence of timestamps.
//! Time is kept in microseconds as `f64` (exact to the microsecond for 285 years) and
//! reported in milliseconds; several requests may share a millisecond. The first request
//! arrives at time 0.

use crate::error::Error;
use crate::rng::Rng;

/// An arrival process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// Evenly spaced: request `i` arrives at `i / per_s` seconds.
    Constant {
        /// Requests per second.
        per_s: f64,
    },
    /// Poisson: exponential gaps with mean `1 / per_s` seconds.
    Poisson {
        /// Requests per second.
        per_s: f64,
    },
    /// Generalized-Pareto gaps in microseconds (Facebook ETC's inter-arrival fit).
    GenParetoGaps {
        /// Location μ, µs.
        location_us: f64,
        /// Scale σ > 0, µs.
        scale_us: f64,
        /// Shape ξ < 1 (so the mean gap is finite).
        shape: f64,
    },
}

impl Arrivals {
    /// Facebook ETC inter-arrival gaps: generalized Pareto(0, 16.0292 µs, 0.154971), a mean
    /// gap of 18.97 µs (about 52,700 requests per second).
    pub const FACEBOOK_ETC: Self =
        Self::GenParetoGaps { location_us: 0.0, scale_us: 16.0292, shape: 0.154971 };

    /// The long-run mean rate in requests per second.
    #[must_use]
    pub fn mean_rate(&self) -> f64 {
        match *self {
            Self::Constant { per_s } | Self::Poisson { per_s } => per_s,
            Self::GenParetoGaps { location_us, scale_us, shape } => {
                1e6 / (location_us + scale_us / (1.0 - shape))
            }
        }
    }

    fn validate(&self) -> Result<(), Error> {
        let ok = match *self {
            Self::Constant { per_s } | Self::Poisson { per_s } => per_s.is_finite() && per_s > 0.0,
            Self::GenParetoGaps { location_us, scale_us, shape } => {
                location_us.is_finite()
                    && location_us >= 0.0
                    && scale_us.is_finite()
                    && scale_us > 0.0
                    && shape.is_finite()
                    && shape < 1.0
            }
        };
        if ok { Ok(()) } else { Err(Error::config(format!("invalid arrival process {self:?}"))) }
    }
}

/// Produces the arrival times of one [`Arrivals`] process.
#[derive(Clone, Debug)]
pub struct Clock {
    arrivals: Arrivals,
    rng: Rng,
    /// Requests emitted so far.
    count: u64,
    /// Arrival time of the next request, µs.
    next_us: f64,
}

impl Clock {
    /// A clock for `arrivals`, with its own random stream from `seed`.
    ///
    /// # Errors
    /// [`Error::Config`] for non-positive rates or scales, or a shape ≥ 1.
    pub fn new(arrivals: Arrivals, seed: u64) -> Result<Self, Error> {
        arrivals.validate()?;
        Ok(Self { arrivals, rng: Rng::new(seed), count: 0, next_us: 0.0 })
    }

    /// The arrival time of the next request, in milliseconds.
    pub fn tick_ms(&mut self) -> u64 {
        let now = self.next_us;
        self.count += 1;
        self.next_us = match self.arrivals {
            // From the index, so rounding does not accumulate.
            Arrivals::Constant { per_s } => self.count as f64 * 1e6 / per_s,
            Arrivals::Poisson { per_s } => now - self.rng.next_f64_open().ln() * 1e6 / per_s,
            Arrivals::GenParetoGaps { location_us, scale_us, shape } => {
                let u = self.rng.next_f64_open();
                let z = if shape.abs() < 1e-12 { -u.ln() } else { (u.powf(-shape) - 1.0) / shape };
                now + location_us + scale_us * z
            }
        };
        (now / 1000.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_ms(arrivals: Arrivals, n: usize) -> u64 {
        let mut clock = Clock::new(arrivals, 3).unwrap();
        let mut prev = 0;
        for _ in 0..n {
            let t = clock.tick_ms();
            assert!(t >= prev, "time went backwards");
            prev = t;
        }
        prev
    }

    #[test]
    fn rates_are_respected() {
        // 100k requests at 1000/s span 100 s.
        assert_eq!(last_ms(Arrivals::Constant { per_s: 1000.0 }, 100_001), 100_000);
        let poisson = last_ms(Arrivals::Poisson { per_s: 1000.0 }, 100_000) as f64;
        assert!((poisson - 100_000.0).abs() < 1_500.0, "{poisson}");
        let etc = Arrivals::FACEBOOK_ETC;
        assert!((etc.mean_rate() - 52_700.0).abs() < 100.0, "{}", etc.mean_rate());
        let span = last_ms(etc, 527_000) as f64;
        assert!((span - 10_000.0).abs() < 300.0, "{span}");
    }

    #[test]
    fn invalid_processes_are_rejected() {
        assert!(Clock::new(Arrivals::Constant { per_s: 0.0 }, 0).is_err());
        assert!(Clock::new(Arrivals::Poisson { per_s: f64::INFINITY }, 0).is_err());
        let heavy = Arrivals::GenParetoGaps { location_us: 0.0, scale_us: 1.0, shape: 1.0 };
        assert!(Clock::new(heavy, 0).is_err());
    }
}
