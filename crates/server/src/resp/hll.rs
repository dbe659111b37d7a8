//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE (Redis 7.0's replies and bytes; the format
//! and the algorithms are `types::hll`). A HyperLogLog is a string, as in Redis: `GET` returns
//! it, `SET` of Redis's bytes makes one.

use fridge_engine::{EngineError, Kind, TenantId, Update};
use fridge_proto::resp::{Command, write_error, write_integer, write_simple};

use super::{Spec, engine_error, notify};
use crate::keyspace::STRING;
use crate::session::{Ctx, Session};
use crate::types::hll::{self, HllError};

const NOT_HLL: &[u8] = b"WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &[u8] = b"INVALIDOBJ Corrupted HLL object detected";

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

fn hll_error(out: &mut Vec<u8>, e: HllError) {
    write_error(out, if e == HllError::NotHll { NOT_HLL } else { CORRUPT });
}

/// `PFADD key [element …]`: 1 if a register changed (or the key was created), else 0.
pub(super) fn pfadd(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let r = ctx.engine.update(t, key, |cur, buf| {
        let mut updated = cur.is_none();
        match cur {
            None => buf.extend_from_slice(&hll::new_empty()),
            Some(c) => {
                if let Err(e) = hll::check(c.value) {
                    return Ok(Update::Done(Err(e)));
                }
                buf.extend_from_slice(c.value);
            }
        }
        for i in 2..cmd.len() {
            match hll::add(buf, arg(cmd, i)) {
                Ok(changed) => updated |= changed,
                Err(e) => return Ok(Update::Done(Err(e))),
            }
        }
        if !updated {
            return Ok(Update::Done(Ok(false)));
        }
        hll::invalidate(buf);
        let (flags, expires_at_ms) = cur.map_or((0, None), |c| (c.flags, c.expires_at_ms));
        Ok(Update::Write { flags, expires_at_ms, result: Ok(true) })
    });
    match r {
        Ok(Ok(updated)) => {
            if updated {
                notify(ctx, t, STRING, "pfadd", key);
            }
            write_integer(out, i64::from(updated));
        }
        Ok(Err(e)) => hll_error(out, e),
        Err(e) => engine_error(out, e),
    }
}

/// Reads the HyperLogLogs at `keys` into `max` (missing keys are empty): whether any was dense.
fn merge<'k>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    keys: impl Iterator<Item = &'k [u8]>,
    max: &mut [u8; 1 << 14],
) -> Result<bool, Result<HllError, EngineError>> {
    let mut dense = false;
    for key in keys {
        let r = ctx.engine.get_kind(t, key, Kind::STRING, |i| {
            hll::check(i.value)?;
            hll::merge_into(max, i.value)?;
            Ok(hll::is_dense(i.value))
        });
        match r {
            Ok(None) => {}
            Ok(Some(Ok(d))) => dense |= d,
            Ok(Some(Err(e))) => return Err(Ok(e)),
            Err(e) => return Err(Err(e)),
        }
    }
    Ok(dense)
}

/// `PFCOUNT key [key …]`: one key's estimate (cached in the value, as Redis caches it), or
/// the estimate of the union of several.
pub(super) fn pfcount(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    if cmd.len() > 2 {
        let mut max = hll::no_registers();
        return match merge(ctx, t, (1..cmd.len()).map(|i| arg(cmd, i)), &mut max) {
            Ok(_) => write_integer(out, hll::count_registers(&max[..]) as i64),
            Err(Ok(e)) => hll_error(out, e),
            Err(Err(e)) => engine_error(out, e),
        };
    }
    let key = arg(cmd, 1);
    let r = ctx.engine.update(t, key, |cur, buf| {
        let Some(c) = cur else { return Ok(Update::Done(Ok(0))) };
        if let Err(e) = hll::check(c.value) {
            return Ok(Update::Done(Err(e)));
        }
        if let Some(n) = hll::cached(c.value) {
            return Ok(Update::Done(Ok(n)));
        }
        let n = match hll::count(c.value) {
            Ok(n) => n,
            Err(e) => return Ok(Update::Done(Err(e))),
        };
        // The count is cached in the value, which changes it (as in Redis).
        buf.extend_from_slice(c.value);
        hll::set_cached(buf, n);
        Ok(Update::Write { flags: c.flags, expires_at_ms: c.expires_at_ms, result: Ok(n) })
    });
    match r {
        Ok(Ok(n)) => write_integer(out, n as i64),
        Ok(Err(e)) => hll_error(out, e),
        Err(e) => engine_error(out, e),
    }
}

/// `PFMERGE destkey [sourcekey …]`: the destination (itself an input) gets every register's
/// maximum; dense if any input is.
pub(super) fn pfmerge(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, dst) = (s.tenant, arg(cmd, 1));
    let mut max = hll::no_registers();
    let dense = match merge(ctx, t, (1..cmd.len()).map(|i| arg(cmd, i)), &mut max) {
        Ok(dense) => dense,
        Err(Ok(e)) => return hll_error(out, e),
        Err(Err(e)) => return engine_error(out, e),
    };
    let r = ctx.engine.update(t, dst, |cur, buf| {
        match cur {
            None => buf.extend_from_slice(&hll::new_empty()),
            Some(c) => {
                if let Err(e) = hll::check(c.value) {
                    return Ok(Update::Done(Err(e)));
                }
                buf.extend_from_slice(c.value);
            }
        }
        if let Err(e) = hll::write_registers(buf, &max, dense) {
            return Ok(Update::Done(Err(e)));
        }
        let (flags, expires_at_ms) = cur.map_or((0, None), |c| (c.flags, c.expires_at_ms));
        Ok(Update::Write { flags, expires_at_ms, result: Ok(()) })
    });
    match r {
        Ok(Ok(())) => {
            notify(ctx, t, STRING, "pfadd", dst);
            write_simple(out, b"OK");
        }
        Ok(Err(e)) => hll_error(out, e),
        Err(e) => engine_error(out, e),
    }
}
