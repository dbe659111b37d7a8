//! The blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP
//! (Redis 7.0's replies). Each does what its non-blocking form does when there is something to
//! pop; otherwise it waits for a push until its timeout (0: for ever) and then answers nil.
//! Inside `MULTI`/`EXEC` and scripts it does not wait (Redis's rule). Each is a *look* at its
//! keys that [`block_on`] runs: again after registering as a waiter, and whenever its worker
//! wakes it. In what order waiting clients are served, and how they are woken:
//! `crate::blocking`.

use fridge_engine::{EngineError, Kind};
use fridge_proto::number::parse_redis_f64;
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_null, write_null_array,
};

use super::lists::{End, move_one};
use super::{Spec, engine_error};
use crate::blocking::{Turn, Unblock, Wants, order};
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

/// What a blocking command answers where it gives up: at its deadline or `CLIENT UNBLOCK …
/// TIMEOUT` (a null array), or where it may not wait (the third argument; BLMOVE's is a null
/// bulk there).
type Nil = fn(&mut Vec<u8>, &Session, bool);

fn null_array(out: &mut Vec<u8>, s: &Session, _: bool) {
    write_null_array(out, s.version);
}

/// A look at a command's keys with its turn (`crate::blocking::Turn`): whether it answered
/// (an element, or an error).
trait Look: Fn(&Command<'_>, &mut Vec<u8>, &mut Session, &mut Ctx<'_>, &Turn) -> bool {}
impl<F: Fn(&Command<'_>, &mut Vec<u8>, &mut Session, &mut Ctx<'_>, &Turn) -> bool> Look for F {}

/// Runs a blocking command whose keys are the arguments `keys`: `look` pops what it may;
/// finding nothing, the command registers as a waiter (its first run: then it looks once
/// more) and parks, or at its deadline answers `nil`. Run again after a wait, it first asks
/// whether `CLIENT UNBLOCK` ended it.
fn block_on(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    (timeout, wants, keys): (u64, Wants, std::ops::Range<usize>),
    look: impl Look,
    nil: Nil,
) {
    let shared = ctx.shared;
    let mut turn = Turn {
        client: s.id,
        wants,
        tenant: s.tenant,
        db: s.db,
        keys: keys.clone(),
        first: None,
        resumed: false,
    };
    if s.resume.block.is_some() {
        let resumed = shared.blocking.resume(s.id);
        if let Some(how) = resumed.unblock {
            finish(s, ctx);
            return match how {
                Unblock::Timeout => nil(out, s, false),
                Unblock::Error => {
                    write_error(out, b"UNBLOCKED client unblocked via CLIENT UNBLOCK")
                }
            };
        }
        turn.first = resumed.first;
        turn.resumed = true;
    }
    loop {
        if look(cmd, out, s, ctx, &turn) {
            return finish(s, ctx);
        }
        let now = shared.now_ms();
        let deadline = match s.resume.block {
            Some(deadline) => deadline,
            None if timeout == 0 => u64::MAX,
            None => crate::shared::precise_now_ms(now).saturating_add(timeout),
        };
        if s.deny_blocking || now >= deadline {
            nil(out, s, s.deny_blocking);
            return finish(s, ctx);
        }
        if s.resume.block.is_some() {
            shared.blocking.park(s.id);
            return s.block();
        }
        // Registered, it looks again: a push since its look found no waiter to wake.
        let args = keys.clone().map(|i| arg(cmd, i));
        let at = (ctx.worker, s.slot);
        let queue = (wants, s.tenant, s.db);
        shared.blocking.register(s.id, at, queue, args, |w| shared.wake(w));
        s.resume.block = Some(deadline);
    }
}

/// Ends a blocking command (it answered, or will not run on): its entries go, and the next
/// waiter of its keys is woken (`crate::blocking::Blocking::leave`).
pub(super) fn finish(s: &mut Session, ctx: &Ctx<'_>) {
    if s.resume.block.take().is_some() {
        let shared = ctx.shared;
        shared.blocking.leave(s.id, |w| shared.wake(w));
    }
}

/// What a blocking command finds at one of its keys.
enum Found {
    /// Nothing to pop, or not its turn.
    Nothing,
    /// Something it may pop.
    Turn,
    /// Another kind, on its first run: `WRONGTYPE`.
    WrongType,
}

/// A key's kind check and turn: run again after a wait, a command passes over a key of
/// another kind (Redis 7.0 leaves the client blocked).
fn found(ctx: &mut Ctx<'_>, s: &Session, turn: &Turn, key: &[u8], kind: Kind) -> Found {
    match ctx.engine.kind(s.tenant, key) {
        None => Found::Nothing,
        Some(k) if k != kind && turn.resumed => Found::Nothing,
        Some(k) if k != kind => Found::WrongType,
        Some(_) if turn.may_take(&ctx.shared.blocking, key) => Found::Turn,
        Some(_) => Found::Nothing,
    }
}

/// Looks at the command's keys in its turn's order: the first key of another kind on a first
/// run answers `WRONGTYPE`; each key whose turn it is goes to `pop`, which answers and returns
/// true, or returns false (nothing there after all). Returns whether the command answered.
fn pop_first(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    turn: &Turn,
    kind: Kind,
    mut pop: impl FnMut(&[u8], &mut Vec<u8>, &mut Session, &mut Ctx<'_>) -> bool,
) -> bool {
    for i in order(turn.keys.clone(), turn.first) {
        let key = arg(cmd, i);
        match found(ctx, s, turn, key, kind) {
            Found::Nothing => continue,
            Found::Turn => {}
            Found::WrongType => {
                engine_error(out, EngineError::WrongKind);
                return true;
            }
        }
        if pop(key, out, s, ctx) {
            return true;
        }
    }
    false
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
    let look = move |cmd: &Command<'_>,
                     out: &mut Vec<u8>,
                     s: &mut Session,
                     ctx: &mut Ctx<'_>,
                     turn: &Turn| {
        pop_first(cmd, out, s, ctx, turn, LIST, |key, out, s, ctx| {
            match super::lists::pop_one(ctx, s.tenant, key, end) {
                Ok(Some(())) => {
                    write_array_header(out, 2);
                    write_bulk(out, key);
                    write_bulk(out, ctx.scratch);
                    true
                }
                Ok(None) => false,
                Err(e) => {
                    engine_error(out, e);
                    true
                }
            }
        })
    };
    let keys = 1..cmd.len() - 1;
    block_on(cmd, out, s, ctx, (timeout, Wants::List, keys), look, null_array);
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
    let look = move |cmd: &Command<'_>,
                     out: &mut Vec<u8>,
                     s: &mut Session,
                     ctx: &mut Ctx<'_>,
                     turn: &Turn| {
        let src = arg(cmd, 1);
        match found(ctx, s, turn, src, LIST) {
            Found::Nothing => return false,
            Found::Turn => {}
            Found::WrongType => {
                engine_error(out, EngineError::WrongKind);
                return true;
            }
        }
        match move_one(ctx, s.tenant, (src, from), (arg(cmd, 2), to)) {
            Ok(Some(())) => write_bulk(out, ctx.scratch),
            Ok(None) => return false,
            Err(e) => engine_error(out, e),
        }
        true
    };
    // Redis answers a null bulk where it may not wait, a null array at the timeout.
    let nil: Nil = |out, s, denied| match denied {
        true => write_null(out, s.version),
        false => write_null_array(out, s.version),
    };
    block_on(cmd, out, s, ctx, (timeout, Wants::List, 1..2), look, nil);
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
    let lists = c.name == "blmpop";
    let (wants, words): (_, (&[u8], &[u8])) =
        if lists { (Wants::List, (b"left", b"right")) } else { (Wants::Zset, (b"max", b"min")) };
    // Arguments in error: the look answers the error before any wait.
    let keys = super::packed::parse_mpop(cmd, 2, words).map_or(0..0, |m| m.keys);
    let look = move |cmd: &Command<'_>,
                     out: &mut Vec<u8>,
                     s: &mut Session,
                     ctx: &mut Ctx<'_>,
                     turn: &Turn| {
        if lists {
            super::lists::lmpop_from(cmd, 2, out, s, ctx, Some(turn))
        } else {
            super::zsets::zmpop_from(cmd, 2, out, s, ctx, Some(turn))
        }
    };
    block_on(cmd, out, s, ctx, (timeout, wants, keys), look, null_array);
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
    let look = move |cmd: &Command<'_>,
                     out: &mut Vec<u8>,
                     s: &mut Session,
                     ctx: &mut Ctx<'_>,
                     turn: &Turn| {
        pop_first(cmd, out, s, ctx, turn, ZSET, |key, out, s, ctx| {
            super::zsets::pop_one(cmd, key, max, out, s, ctx)
        })
    };
    let keys = 1..cmd.len() - 1;
    block_on(cmd, out, s, ctx, (timeout, Wants::Zset, keys), look, null_array);
}
