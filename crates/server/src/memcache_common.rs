//! What memcached's text commands (`memcache.rs`) and meta commands (`meta.rs`) share:
//! exptimes (memcached `doc/protocol.txt`, "Expiration times"), TTLs as replies report them,
//! the error replies for engine failures, and `append`'s memcached semantics.

use std::cell::Cell;

use fridge_engine::{EngineError, Expiry, StoreOutcome, TenantId};
use fridge_proto::memcache as mc;

use crate::counter::CounterError;
use crate::session::Ctx;
use crate::shared::Shared;

/// memcached treats exptimes above 30 days as absolute Unix times.
const RELATIVE_EXPTIME_MAX: i64 = 60 * 60 * 24 * 30;

/// Converts a memcached exptime to an absolute expiry: 0 never, negative already expired,
/// up to 30 days relative seconds, beyond that an absolute Unix time. `now_ms` is the coarse
/// clock; relative deadlines count from the precise one ([`crate::shared::precise_now_ms`]), so an
/// item is never gone before its time.
pub(crate) fn expiry(exptime: i32, now_ms: u64) -> Expiry {
    let e = i64::from(exptime);
    if e == 0 {
        Expiry::Never
    } else if e < 0 {
        Expiry::At(now_ms.saturating_sub(1).max(1))
    } else if e > RELATIVE_EXPTIME_MAX {
        // An absolute Unix time; one in the past expires at once.
        Expiry::At(e as u64 * 1000)
    } else {
        Expiry::At(crate::shared::precise_now_ms(now_ms) + e as u64 * 1000)
    }
}

/// A request's coarse time (ms), read the first time the request asks for it: an exptime
/// other than 0, a TTL reported, a flush's delay. A `get`, a store without an expiry and a
/// plain `mg <key> v` never read the clock.
pub(crate) struct Now<'s> {
    shared: &'s Shared,
    ms: Cell<Option<u64>>,
}

impl<'s> Now<'s> {
    pub(crate) fn new(shared: &'s Shared) -> Self {
        Now { shared, ms: Cell::new(None) }
    }

    pub(crate) fn get(&self) -> u64 {
        match self.ms.get() {
            Some(ms) => ms,
            None => {
                let ms = self.shared.now_ms();
                self.ms.set(Some(ms));
                ms
            }
        }
    }

    /// [`expiry`] of `exptime`, reading the clock only for one that counts from it (0 is no
    /// expiry).
    pub(crate) fn expiry(&self, exptime: i32) -> Expiry {
        if exptime == 0 { Expiry::Never } else { expiry(exptime, self.get()) }
    }

    /// [`Now::expiry`] as a deadline, if there is one.
    pub(crate) fn expiry_ms(&self, exptime: i32) -> Option<u64> {
        match self.expiry(exptime) {
            Expiry::At(at) => Some(at),
            _ => None,
        }
    }
}

pub(crate) fn engine_error(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => mc::write_server_error(out, b"object too large for cache"),
        EngineError::KeyTooLong => mc::write_client_error(out, b"bad command line format"),
        EngineError::OutOfMemory | EngineError::TooManyWorkers => {
            mc::write_server_error(out, b"out of memory storing object");
        }
        EngineError::WrongKind => mc::write_client_error(out, WRONG_KIND),
        EngineError::KeyLimit => mc::write_server_error(out, TOO_MANY_KEYS),
        EngineError::ByteLimit => mc::write_server_error(out, TOO_MANY_BYTES),
    }
}

/// memcached's reply to a write that would add a key to a tenant holding its `max_keys`
/// keys (`docs/tenants.md`, "Limits"), worded as the other per-tenant limits are.
pub(crate) const TOO_MANY_KEYS: &[u8] = b"too many keys for this tenant";

/// memcached's reply to a write that would take a tenant past its `max_bytes`.
pub(crate) const TOO_MANY_BYTES: &[u8] = b"too many bytes for this tenant";

/// The error for a memcached command that would read or change a Redis collection (a hash, a
/// list…) stored under its key; memcached's reads see such a key as absent.
pub(crate) const WRONG_KIND: &[u8] =
    b"WRONGTYPE Operation against a key holding the wrong kind of value";

pub(crate) fn counter_error(out: &mut Vec<u8>, e: CounterError) {
    match e {
        CounterError::Engine(e) => engine_error(out, e),
        // memcached's counters fail only one way; the Redis reasons cannot arise here.
        _ => mc::write_client_error(out, b"cannot increment or decrement non-numeric value"),
    }
}

/// `append`/`prepend` (text, and meta `MA`/`MP`). A result over the item size limit is not
/// stored and the old value stays: memcached 1.6.18 answers `NOT_STORED` (`NS`) there, not an
/// error.
pub(crate) fn append(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    data: &[u8],
    prepend: bool,
) -> Result<StoreOutcome, EngineError> {
    match ctx.engine.append(t, key, data, prepend, false) {
        Ok(Some(_)) => Ok(StoreOutcome::Stored),
        Ok(None) | Err(EngineError::TooLarge) => Ok(StoreOutcome::NotStored),
        Err(e) => Err(e),
    }
}

/// Seconds left before `expires_at_ms`, memcached style: -1 for never. Counted from the
/// precise clock deadlines are set from (the coarse `now` may lag it and add a second).
pub(crate) fn ttl_secs(expires_at_ms: Option<u64>, now: u64) -> i64 {
    match expires_at_ms {
        None => -1,
        Some(at) => {
            let left = at.saturating_sub(crate::shared::precise_now_ms(now));
            i64::try_from(left.div_ceil(1000)).unwrap_or(i64::MAX)
        }
    }
}
