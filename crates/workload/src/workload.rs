//! A synthetic single-tenant workload and the request stream it generates.
//!
//! A [`Workload`] is a plain description (popularity, sizes, operation mix, TTLs, arrivals,
//! key count, seed). [`Workload::requests`] validates it and returns [`Requests`], an endless
//! iterator; take as many requests as needed. The same description gives the same stream.
//!
//! Per request:
//! 1. the arrival time comes from the [`Clock`];
//! 2. a *fresh write* happens at the rate `fresh_writes`: a `set` of a never-used key id
//!    (`keys`, `keys + 1`, …). Fresh writes are spaced by error diffusion, not drawn at random:
//!    with `fresh_writes = 0.5` the stream alternates exactly, read, write, read, write. Under
//!    [`Popularity::Latest`] each fresh key becomes the most popular one (YCSB's inserts);
//! 3. otherwise the operation comes from the [`OpMix`] and the key from the popularity;
//! 4. sizes are per key ([`SizeDist::sample_for_key`]): every request for a key sees the same
//!    key and value size;
//! 5. operations that set an expiry ([`Op::sets_ttl`]) draw a TTL.

use crate::arrivals::{Arrivals, Clock};
use crate::error::Error;
use crate::ops::{OpMix, TtlDist};
use crate::popularity::{KeySampler, Popularity};
use crate::request::{Op, Request};
use crate::rng::{Rng, mix64};
use crate::size::SizeDist;

/// Everything that defines a synthetic request stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Number of keys that exist at the start (ids `0..keys`).
    pub keys: u64,
    /// Which keys requests touch.
    pub popularity: Popularity,
    /// Key length per key.
    pub key_size: SizeDist,
    /// Value length per key.
    pub value_size: SizeDist,
    /// Operation fractions (for requests that are not fresh writes).
    pub ops: OpMix,
    /// TTLs of storage operations.
    pub ttl: TtlDist,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Fraction of requests, in `[0, 1]`, that write a never-used key.
    pub fresh_writes: f64,
    /// Seed of every random choice.
    pub seed: u64,
}

/// Salts that give each random stream of a workload its own seed.
const CLOCK_SALT: u64 = 0xC10C_0000_0000_0001;
const KEY_SIZE_SALT: u64 = 0x4B45_5953_0000_0001;
const VALUE_SIZE_SALT: u64 = 0x5641_4C53_0000_0001;

impl Workload {
    /// A workload over `keys` keys with `popularity`, and defaults for the rest: 16-byte keys,
    /// 256-byte values, GET:SET 30:1, no TTL, 100,000 requests per second evenly spaced, no
    /// fresh writes.
    #[must_use]
    pub fn new(keys: u64, popularity: Popularity, seed: u64) -> Self {
        Self {
            keys,
            popularity,
            key_size: SizeDist::Fixed(16),
            value_size: SizeDist::Fixed(256),
            ops: OpMix::etc(),
            ttl: TtlDist::None,
            arrivals: Arrivals::Constant { per_s: 100_000.0 },
            fresh_writes: 0.0,
            seed,
        }
    }

    /// Facebook ETC: ETC key and value sizes, GET:SET 30:1, ETC's inter-arrival gaps, and
    /// Zipf(`theta`) popularity (the study reports a heavy tail without one exponent; YCSB's
    /// 0.99 is the usual choice), scrambled.
    #[must_use]
    pub fn facebook_etc(keys: u64, theta: f64, seed: u64) -> Self {
        Self {
            key_size: SizeDist::facebook_etc_key(),
            value_size: SizeDist::facebook_etc_value(),
            arrivals: Arrivals::FACEBOOK_ETC,
            ..Self::new(keys, Popularity::Zipf { theta, scrambled: true }, seed)
        }
    }

    /// The stacked-DRAM thesis workload: values of 10 B / 300 B / 1 MB (50/45/5%, thesis
    /// §4.1.2.2), GET:SET 30:1 (thesis A.1.4), Zipf(`theta`) popularity (the thesis replays
    /// Wikipedia's key sequence, which is not available here), scrambled so that size and
    /// popularity are independent.
    #[must_use]
    pub fn thesis(keys: u64, theta: f64, seed: u64) -> Self {
        Self {
            value_size: SizeDist::thesis_mix(),
            ..Self::new(keys, Popularity::Zipf { theta, scrambled: true }, seed)
        }
    }

    /// Catalyst's *Mix* (Catalyst §4.3.3): Zipf(`theta`) GETs interleaved 1:1 with one-time
    /// SETs of keys that are never used again (zombies for an LRU cache). Sizes are
    /// [`Workload::new`]'s defaults; set `value_size` for APP- or ETC-like items.
    #[must_use]
    pub fn catalyst_mix(keys: u64, theta: f64, seed: u64) -> Self {
        Self {
            ops: OpMix::only(Op::Get),
            fresh_writes: 0.5,
            ..Self::new(keys, Popularity::Zipf { theta, scrambled: true }, seed)
        }
    }

    /// The endless request stream of tenant 0.
    ///
    /// # Errors
    /// [`Error::Config`] for zero keys, out-of-range fractions or invalid distributions.
    pub fn requests(&self) -> Result<Requests, Error> {
        if !(0.0..=1.0).contains(&self.fresh_writes) {
            return Err(Error::config(format!("fresh_writes {} not in [0, 1]", self.fresh_writes)));
        }
        Ok(Requests {
            keys: KeySampler::new(&self.popularity, self.keys, self.seed)?,
            clock: Clock::new(self.arrivals, mix64(self.seed ^ CLOCK_SALT))?,
            rng: Rng::new(self.seed),
            key_size: self.key_size.clone(),
            value_size: self.value_size.clone(),
            ops: self.ops.clone(),
            ttl: self.ttl.clone(),
            fresh_writes: self.fresh_writes,
            fresh_credit: 0.0,
            seed: self.seed,
        })
    }
}

/// The endless request stream of a [`Workload`]. Every item is `Some`.
#[derive(Clone, Debug)]
pub struct Requests {
    keys: KeySampler,
    clock: Clock,
    rng: Rng,
    key_size: SizeDist,
    value_size: SizeDist,
    ops: OpMix,
    ttl: TtlDist,
    fresh_writes: f64,
    /// Error-diffusion accumulator: a fresh write is due when it reaches 1.
    fresh_credit: f64,
    seed: u64,
}

impl Requests {
    /// The next request without its time (for callers with their own clock, such as a mix).
    pub(crate) fn next_untimed(&mut self) -> Request {
        self.fresh_credit += self.fresh_writes;
        // The tolerance keeps exact fractions such as 1/3 from drifting a step late.
        let (op, key) = if self.fresh_credit >= 1.0 - 1e-9 {
            self.fresh_credit -= 1.0;
            (Op::Set, self.keys.insert())
        } else {
            (self.ops.sample(&mut self.rng), self.keys.sample(&mut self.rng))
        };
        let ttl_s = if op.sets_ttl() { self.ttl.sample(&mut self.rng) } else { None };
        Request {
            time_ms: 0,
            tenant: 0,
            key,
            key_size: self.key_size.sample_for_key(key, self.seed ^ KEY_SIZE_SALT),
            value_size: self.value_size.sample_for_key(key, self.seed ^ VALUE_SIZE_SALT),
            op,
            ttl_s,
            next_access: None,
        }
    }

    /// Key ids handed out so far (`keys` plus fresh writes).
    #[must_use]
    pub fn key_count(&self) -> u64 {
        self.keys.key_count()
    }
}

impl Iterator for Requests {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        let time_ms = self.clock.tick_ms();
        Some(Request { time_ms, ..self.next_untimed() })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let w = Workload::facebook_etc(1_000_000, 0.99, 42);
        let a: Vec<Request> = w.requests().unwrap().take(5_000).collect();
        let b: Vec<Request> = w.requests().unwrap().take(5_000).collect();
        assert_eq!(a, b);
        let c: Vec<Request> =
            Workload { seed: 43, ..w.clone() }.requests().unwrap().take(5_000).collect();
        assert_ne!(a, c);
    }

    #[test]
    fn sizes_are_per_key_and_ttls_only_on_storage() {
        let w = Workload {
            ttl: TtlDist::Fixed(300),
            ops: OpMix::new([(Op::Get, 0.6), (Op::Set, 0.3), (Op::Delete, 0.1)]).unwrap(),
            ..Workload::facebook_etc(1_000, 1.0, 7)
        };
        let mut sizes = std::collections::HashMap::new();
        for r in w.requests().unwrap().take(20_000) {
            let s = *sizes.entry(r.key).or_insert((r.key_size, r.value_size));
            assert_eq!(s, (r.key_size, r.value_size));
            assert_eq!(r.ttl_s.is_some(), r.op == Op::Set, "{r:?}");
            assert!(r.key < 1_000);
        }
    }

    #[test]
    fn catalyst_mix_alternates_with_fresh_keys() {
        let w = Workload::catalyst_mix(10_000, 0.99, 3);
        let reqs: Vec<Request> = w.requests().unwrap().take(1_000).collect();
        for (i, r) in reqs.iter().enumerate() {
            if i % 2 == 0 {
                assert_eq!(r.op, Op::Get);
                assert!(r.key < 10_000);
            } else {
                assert_eq!(r.op, Op::Set);
                assert_eq!(r.key, 10_000 + i as u64 / 2, "never reused");
            }
        }
    }

    #[test]
    fn latest_reads_follow_inserts() {
        let w = Workload {
            fresh_writes: 0.1,
            ..Workload::new(1_000, Popularity::Latest { theta: 0.99 }, 5)
        };
        let mut stream = w.requests().unwrap();
        let reqs: Vec<Request> = stream.by_ref().take(10_000).collect();
        assert_eq!(stream.key_count(), 2_000);
        // Reads in the last tenth concentrate on keys inserted recently.
        let recent = reqs[9_000..].iter().filter(|r| r.op == Op::Get && r.key >= 1_800).count();
        let reads = reqs[9_000..].iter().filter(|r| r.op == Op::Get).count();
        assert!(recent * 2 > reads, "{recent} of {reads}");
    }

    #[test]
    fn invalid_workloads_are_errors() {
        assert!(Workload::new(0, Popularity::Uniform, 0).requests().is_err());
        let w = Workload { fresh_writes: 2.0, ..Workload::new(10, Popularity::Uniform, 0) };
        assert!(w.requests().is_err());
    }
}
