//! The blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP
//! (Redis 7.0's replies). Each does what its non-blocking form does when there is something to
//! pop; otherwise it waits for a push until its timeout (0: for ever) and then answers nil.
//! Inside `MULTI`/`EXEC` and scripts it does not wait (Redis's rule). How a waiting client is
//! woken: `crate::blocking`.

use fridge_engine::EngineError;
use fridge_proto::number::parse_redis_f64;
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_null, write_null_array,
};

use super::lists::{End, move_one};
use super::{Spec, engine_error};
use crate::session::{Ctx, Session};
use crate::types::{LIST, ZSET};

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

/// A timeout in seconds (a float, as Redis 7.0 takes it) in ms; 0 waits for ever.
fn timeout_ms(a: &[u8]) -> Result<u64, &'static [u8]> {
    let t = parse_redis_f64(a).ok_or(&b"ERR timeout is not a float or out of range"[..])?;
    if t < 0.0 {
        return Err(b"ERR timeout is negative");
    }
    let ms = t * 1000.0;
    // Redis 7.0 converts to a 64-bit integer first: a value past its range (infinity
    // included) comes out negative there.
    if ms.is_nan() || ms >= i64::MAX as f64 {
        return Err(b"ERR timeout is negative");
    }
    // Then adds the time now.
    if ms as i64 > i64::MAX - 2_000_000_000_000 {
        return Err(b"ERR timeout is out of range");
    }
    Ok(ms as u64)
}

/// Before a blocking command looks at its keys: its worker is marked and the generation
/// noted (so a push from now on wakes it), and on its first run its deadline is set.
fn begin(s: &mut Session, ctx: &Ctx<'_>, timeout: u64) {
    let blocking = &ctx.shared.blocking;
    blocking.mark(ctx.worker);
    let generation = blocking.generation();
    let deadline = match s.resume.block {
        Some((deadline, _)) => deadline,
        None if timeout == 0 => u64::MAX,
        None => crate::shared::precise_now_ms(ctx.shared.now_ms()).saturating_add(timeout),
    };
    s.resume.block = Some((deadline, generation));
}

/// After a blocking command found nothing: it waits (parks), or at its deadline (or where it
/// may not wait) answers `nil`.
fn wait_or(s: &mut Session, ctx: &Ctx<'_>, out: &mut Vec<u8>, nil: impl FnOnce(&mut Vec<u8>)) {
    let deadline = s.resume.block.map_or(0, |(d, _)| d);
    if s.deny_blocking || ctx.shared.now_ms() >= deadline {
        s.resume.block = None;
        return nil(out);
    }
    s.block();
}

/// Ends a blocking command that answered.
fn done(s: &mut Session) {
    s.resume.block = None;
}

/// `BLPOP key [key …] timeout` and `BRPOP`.
pub(super) fn blpop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let timeout = match timeout_ms(arg(cmd, cmd.len() - 1)) {
        Ok(t) => t,
        Err(e) => return write_error(out, e),
    };
    let end = if c.name == "blpop" { End::Left } else { End::Right };
    begin(s, ctx, timeout);
    for i in 1..cmd.len() - 1 {
        let key = arg(cmd, i);
        match ctx.engine.kind(s.tenant, key) {
            None => continue,
            Some(k) if k != LIST => {
                done(s);
                return engine_error(out, EngineError::WrongKind);
            }
            Some(_) => {}
        }
        match super::lists::pop_one(ctx, s.tenant, key, end) {
            Ok(Some(e)) => {
                done(s);
                write_array_header(out, 2);
                write_bulk(out, key);
                return write_bulk(out, &e);
            }
            Ok(None) => continue,
            Err(e) => {
                done(s);
                return engine_error(out, e);
            }
        }
    }
    let v = s.version;
    wait_or(s, ctx, out, |out| write_null_array(out, v));
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout` and `BRPOPLPUSH source
/// destination timeout`.
pub(super) fn blmove(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (ends, at) = if c.name == "brpoplpush" {
        (Some((End::Right, End::Left)), 3)
    } else {
        (End::parse(arg(cmd, 3)).zip(End::parse(arg(cmd, 4))), 5)
    };
    let timeout = match timeout_ms(arg(cmd, at)) {
        Ok(t) => t,
        Err(e) => return write_error(out, e),
    };
    let Some((from, to)) = ends else { return write_error(out, super::SYNTAX) };
    begin(s, ctx, timeout);
    match move_one(ctx, s.tenant, (arg(cmd, 1), from), (arg(cmd, 2), to)) {
        Ok(Some(e)) => {
            done(s);
            write_bulk(out, &e);
        }
        // Redis answers a null bulk where it may not wait, a null array at the timeout.
        Ok(None) if s.deny_blocking => {
            done(s);
            write_null(out, s.version);
        }
        Ok(None) => {
            let v = s.version;
            wait_or(s, ctx, out, |out| write_null_array(out, v));
        }
        Err(e) => {
            done(s);
            engine_error(out, e);
        }
    }
}

/// `BLMPOP timeout numkeys key [key …] LEFT|RIGHT [COUNT count]` and `BZMPOP … MIN|MAX …`.
pub(super) fn blmpop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let timeout = match timeout_ms(arg(cmd, 1)) {
        Ok(t) => t,
        Err(e) => return write_error(out, e),
    };
    begin(s, ctx, timeout);
    let found = if c.name == "blmpop" {
        super::lists::lmpop_from(cmd, 2, out, s, ctx)
    } else {
        super::zsets::zmpop_from(cmd, 2, out, s, ctx)
    };
    if found {
        return done(s);
    }
    let v = s.version;
    wait_or(s, ctx, out, |out| write_null_array(out, v));
}

/// `BZPOPMIN key [key …] timeout` and `BZPOPMAX`: `[key, member, score]`.
pub(super) fn bzpopmin(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let timeout = match timeout_ms(arg(cmd, cmd.len() - 1)) {
        Ok(t) => t,
        Err(e) => return write_error(out, e),
    };
    let max = c.name == "bzpopmax";
    begin(s, ctx, timeout);
    for i in 1..cmd.len() - 1 {
        let key = arg(cmd, i);
        match ctx.engine.kind(s.tenant, key) {
            None => continue,
            Some(k) if k != ZSET => {
                done(s);
                return engine_error(out, EngineError::WrongKind);
            }
            Some(_) => {}
        }
        if super::zsets::pop_one(cmd, key, max, out, s, ctx) {
            return done(s);
        }
    }
    let v = s.version;
    wait_or(s, ctx, out, |out| write_null_array(out, v));
}
