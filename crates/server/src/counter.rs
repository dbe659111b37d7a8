//! Counters: memcached's `incr`/`decr` (and meta `ma`) and Redis's `INCR` family, as the
//! storage calls the two protocols need, built on the engine's generic read-modify-write.
//!
//! The engine knows nothing of numbers: [`Counters`] declares the three operations, and its
//! implementation for [`Worker`] runs each as one [`Worker::update`] whose closure reads the
//! current value with the protocol's own parser ([`fridge_proto::number`]), computes, and
//! writes the new decimal form into the engine's reusable buffer (no allocation). The update is
//! published only if the item did not change meanwhile, so an increment is atomic.
//!
//! A value that is not a number, or a result out of range, is a [`CounterError`]; each
//! protocol turns it into its own reply (`memcache.rs`, `resp/mod.rs`).

use fridge_engine::{EngineError, TenantId, Update, Worker};
use fridge_proto::long_double::LongDouble;
use fridge_proto::number::{parse_redis_i64, parse_u64_padded, write_i64, write_u64};

/// Why a counter operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CounterError {
    /// memcached: the value is not an unsigned 64-bit decimal.
    NotANumber,
    /// Redis: the value is not a 64-bit signed integer.
    NotAnInteger,
    /// Redis: the result does not fit an `i64`.
    Overflow,
    /// Redis: the value is not a float.
    NotAFloat,
    /// Redis: the result is NaN or infinite.
    NotFinite,
    /// The engine refused the write.
    Engine(EngineError),
}

impl From<EngineError> for CounterError {
    fn from(e: EngineError) -> Self {
        CounterError::Engine(e)
    }
}

/// The counter calls the protocols make on the storage.
pub(crate) trait Counters {
    /// memcached `incr`/`decr`: the value must be an unsigned 64-bit decimal (trailing spaces
    /// allowed); `incr` wraps, `decr` stops at 0. Returns the new value, or `None` if the key
    /// is missing (which is left missing). Flags and expiry are kept.
    fn incr_u64(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: u64,
        decrement: bool,
    ) -> Result<Option<u64>, CounterError> {
        self.incr_u64_with_cas(tenant, key, delta, decrement, None)
    }

    /// [`Counters::incr_u64`] giving the result this CAS value (`None`: a new one; memcached
    /// meta `ma E`).
    fn incr_u64_with_cas(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: u64,
        decrement: bool,
        cas: Option<u64>,
    ) -> Result<Option<u64>, CounterError>;

    /// Redis `INCRBY`: the value must be a signed 64-bit integer; a missing key counts as 0;
    /// overflow is an error. Returns the new value.
    fn incr_i64(&mut self, tenant: TenantId, key: &[u8], delta: i64) -> Result<i64, CounterError>;

    /// Redis `INCRBYFLOAT`, in the C `long double` as Redis 7.0 on x86-64 computes it: a
    /// missing key counts as 0; a stored value and then a `delta` that is not a float (`None`)
    /// is [`CounterError::NotAFloat`], in that order (Redis reads them so, after the type
    /// check); a sum that is infinite (an infinite operand included) is
    /// [`CounterError::NotFinite`]. `out` receives the new value as stored (Redis's
    /// `ld2string` in its human mode: `%.17Lf`, trailing zeros dropped).
    fn incr_float(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: Option<LongDouble>,
        out: &mut Vec<u8>,
    ) -> Result<(), CounterError>;
}

impl Counters for Worker {
    fn incr_u64_with_cas(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: u64,
        decrement: bool,
        cas: Option<u64>,
    ) -> Result<Option<u64>, CounterError> {
        self.update(tenant, key, |current, buf| {
            let Some(c) = current else { return Ok(Update::Done(Ok(None))) };
            let Some(n) = parse_u64_padded(c.value) else {
                return Ok(Update::Done(Err(CounterError::NotANumber)));
            };
            let n = if decrement { n.saturating_sub(delta) } else { n.wrapping_add(delta) };
            write_u64(buf, n);
            // memcached rewrites a number that is no longer in place, padded with spaces to
            // the old length and keeping the item's state (stale, win token, fetched), and makes
            // a new item of one that grew (`doc/protocol.txt`: "The number MAY be
            // space-padded").
            let in_place = buf.len() <= c.value.len();
            if in_place {
                buf.resize(c.value.len(), b' ');
            }
            let state = if in_place { c.state } else { 0 };
            Ok(Update::WriteWith {
                flags: c.flags,
                expires_at_ms: c.expires_at_ms,
                cas,
                state,
                result: Ok(Some(n)),
            })
        })?
    }

    fn incr_i64(&mut self, tenant: TenantId, key: &[u8], delta: i64) -> Result<i64, CounterError> {
        self.update(tenant, key, |current, buf| {
            let (n, flags, expires_at_ms) = match current {
                None => (0, 0, None),
                Some(c) => match parse_redis_i64(c.value) {
                    Some(n) => (n, c.flags, c.expires_at_ms),
                    None => return Ok(Update::Done(Err(CounterError::NotAnInteger))),
                },
            };
            let Some(n) = n.checked_add(delta) else {
                return Ok(Update::Done(Err(CounterError::Overflow)));
            };
            write_i64(buf, n);
            Ok(Update::Write { flags, expires_at_ms, result: Ok(n) })
        })?
    }

    fn incr_float(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        delta: Option<LongDouble>,
        out: &mut Vec<u8>,
    ) -> Result<(), CounterError> {
        out.clear();
        self.update(tenant, key, |current, buf| {
            let (n, flags, expires_at_ms) = match current {
                None => (LongDouble::ZERO, 0, None),
                // A stored infinity is a float (and makes the sum infinite).
                Some(c) => match LongDouble::parse(c.value) {
                    Some(n) => (n, c.flags, c.expires_at_ms),
                    None => return Ok(Update::Done(Err(CounterError::NotAFloat))),
                },
            };
            let Some(delta) = delta else {
                return Ok(Update::Done(Err(CounterError::NotAFloat)));
            };
            let Some(n) = n.checked_add(delta) else {
                return Ok(Update::Done(Err(CounterError::NotFinite)));
            };
            n.write(buf);
            out.clear();
            out.extend_from_slice(buf);
            Ok(Update::Write { flags, expires_at_ms, result: Ok(()) })
        })?
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store};

    use super::*;

    const T: TenantId = TenantId(0);

    fn engine() -> Engine {
        let config = EngineConfig {
            max_memory: 4 << 20,
            segment_size: 64 << 10,
            max_item_size: 64 << 10,
            large_value_threshold: 16 << 10,
            cleaner: CleanerMode::Inline,
            index_buckets: 16,
            ..EngineConfig::default()
        };
        Engine::with_clock(config, Arc::new(ManualClock::new(1_000))).unwrap()
    }

    #[test]
    fn counters_follow_each_protocol() {
        let engine = engine();
        let mut w = engine.worker().unwrap();
        assert_eq!(w.incr_u64(T, b"m", 1, false), Ok(None), "memcached incr on a missing key");
        assert_eq!(w.get(T, b"m", |_| ()), None, "and leaves it missing");
        w.store(Store::new(T, b"m", b"18446744073709551615")).unwrap();
        assert_eq!(w.incr_u64(T, b"m", 2, false), Ok(Some(1)), "incr wraps");
        assert_eq!(w.incr_u64(T, b"m", 5, true), Ok(Some(0)), "decr stops at 0");
        w.store(Store::new(T, b"p", b"9  ")).unwrap();
        assert_eq!(w.incr_u64(T, b"p", 1, false), Ok(Some(10)), "padded counters count");
        w.store(Store::new(T, b"s", b"abc")).unwrap();
        assert_eq!(w.incr_u64(T, b"s", 1, false), Err(CounterError::NotANumber));
        assert_eq!(w.incr_i64(T, b"r", 5), Ok(5), "Redis INCRBY creates the key");
        assert_eq!(w.incr_i64(T, b"r", -7), Ok(-2));
        w.store(Store::new(T, b"r", b"9223372036854775807")).unwrap();
        assert_eq!(w.incr_i64(T, b"r", 1), Err(CounterError::Overflow));
        assert_eq!(w.incr_i64(T, b"s", 1), Err(CounterError::NotAnInteger));
        let mut out = Vec::new();
        let ld = |s: &[u8]| LongDouble::parse(s);
        w.store(Store::new(T, b"f", b"10.5")).unwrap();
        w.incr_float(T, b"f", ld(b"0.1"), &mut out).unwrap();
        assert_eq!(out, b"10.6");
        assert_eq!(w.get(T, b"f", |i| i.value.to_vec()), Some(b"10.6".to_vec()));
        w.store(Store::new(T, b"f", b"1.6")).unwrap();
        w.incr_float(T, b"f", ld(b"1e10"), &mut out).unwrap();
        assert_eq!(out, b"10000000001.59999999962747097", "in long double, as Redis");
        assert_eq!(w.incr_float(T, b"s", ld(b"1"), &mut out), Err(CounterError::NotAFloat));
        assert_eq!(w.incr_float(T, b"f", None, &mut out), Err(CounterError::NotAFloat));
        assert_eq!(w.incr_float(T, b"s", ld(b"inf"), &mut out), Err(CounterError::NotAFloat));
        assert_eq!(w.incr_float(T, b"new", ld(b"inf"), &mut out), Err(CounterError::NotFinite));
        assert_eq!(w.get(T, b"new", |_| ()), None, "not created");
        w.store(Store::new(T, b"g", b"1e308")).unwrap();
        w.incr_float(T, b"g", ld(b"1e308"), &mut out).unwrap();
        assert!(out.starts_with(b"1999999999999999999933717") && out.len() == 309, "past f64");
        w.store(Store::new(T, b"g", b"1.18973149535723176502e+4932")).unwrap();
        let max = ld(b"1.18973149535723176502e+4932");
        assert_eq!(w.incr_float(T, b"g", max, &mut out), Err(CounterError::NotFinite));
        let kept = w.get(T, b"g", |i| i.value.to_vec());
        assert_eq!(kept, Some(b"1.18973149535723176502e+4932".to_vec()), "unchanged");
        engine.validate();
    }

    #[test]
    fn counters_keep_flags_and_expiry() {
        let engine = engine();
        let mut w = engine.worker().unwrap();
        let at = fridge_engine::Expiry::At(1_000_000);
        w.store(Store { flags: 7, expiry: at, ..Store::new(T, b"k", b"1") }).unwrap();
        assert_eq!(w.incr_u64(T, b"k", 1, false), Ok(Some(2)));
        assert_eq!(w.incr_i64(T, b"k", 1), Ok(3));
        let item = w.get(T, b"k", |i| (i.value.to_vec(), i.flags, i.expires_at_ms));
        assert_eq!(item, Some((b"3".to_vec(), 7, Some(1_000_000))));
    }
}
