//! Hash field expiry (Redis 7.4): HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL, HPTTL,
//! HEXPIRETIME, HPEXPIRETIME, HPERSIST.
//!
//! A hash whose fields have deadlines is packed in the `TIMED` format (`types::pack`): each
//! entry carries its deadline, and readers skip the fields whose deadline has passed, so a
//! field's deadline is exact to the millisecond, like a key's. Setting a deadline registers
//! the hash with `crate::field_expiry`; when the deadline comes, worker 0 rewrites the hash
//! without its expired fields ([`expire_due`]: `hexpired`, and `del` with the key once the
//! last field went), as Redis 7.4's active expiry does. Any other write of the hash drops its
//! expired fields too.

use fridge_engine::{Kind, TenantId, Update};
use fridge_proto::resp::{Command, write_array_header, write_error, write_integer};

use super::packed::{Edit, Named};
use super::{NOT_INTEGER, Spec, engine_error, int_arg, notify};
use crate::keyspace::{GENERIC, HASH as HASH_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::HASH;
use crate::types::hash::{Builder, Hash};

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

/// Largest deadline a field takes (ms), as Redis 7.4's `HFE_MAX_ABS_TIME_MSEC` (2^48 − 1).
const MAX_DEADLINE_MS: i64 = (1 << 48) - 1;

/// Where the fields start, once `FIELDS numfields` at `at` is checked: the index of the first
/// field, or Redis's error.
fn fields_at(cmd: &Command<'_>, at: usize) -> Result<usize, &'static [u8]> {
    if !arg(cmd, at).eq_ignore_ascii_case(b"fields") {
        return Err(b"ERR Mandatory argument FIELDS is missing or not at the right position");
    }
    let n = match int_arg(arg(cmd, at + 1)) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(b"ERR Parameter `numFields` should be greater than 0"),
    };
    if cmd.len() - (at + 2) != n {
        return Err(b"ERR The `numfields` parameter must match the number of arguments");
    }
    Ok(at + 2)
}

/// When a deadline may be set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Always,
    /// NX: the field has none.
    Nx,
    /// XX: the field has one.
    Xx,
    /// GT: later than the field's (none is infinite: never).
    Gt,
    /// LT: earlier than the field's (none is infinite: always).
    Lt,
}

/// `HEXPIRE`, `HPEXPIRE`, `HEXPIREAT`, `HPEXPIREAT`: `key time [NX|XX|GT|LT] FIELDS numfields
/// field …`. Per field: -2 no such field (or key), 0 the condition failed, 1 set, 2 deleted
/// (a deadline already past).
pub(super) fn hexpire(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let name = c.name.as_bytes();
    let Some(n) = int_arg(arg(cmd, 2)) else { return write_error(out, NOT_INTEGER) };
    let unit = if name.starts_with(b"hp") { 1 } else { 1000 };
    let absolute = name.ends_with(b"at");
    let now = crate::shared::precise_now_ms(ctx.shared.now_ms());
    if n < 0 {
        return write_error(out, b"ERR invalid expire time, must be >= 0");
    }
    let at = match super::expire_at(n, unit, absolute, now) {
        Some(at) if at <= MAX_DEADLINE_MS => at as u64,
        _ => return super::invalid_expire(out, name),
    };
    let w = arg(cmd, 3);
    let when = [(b"nx", When::Nx), (b"xx", When::Xx), (b"gt", When::Gt), (b"lt", When::Lt)]
        .into_iter()
        .find(|(word, _)| w.eq_ignore_ascii_case(*word))
        .map(|(_, when)| when);
    let first = match fields_at(cmd, if when.is_some() { 4 } else { 3 }) {
        Ok(first) => first,
        Err(e) => return write_error(out, e),
    };
    let when = when.unwrap_or(When::Always);
    let named = Named::new(cmd, first, 1);
    let past = at <= now;
    let mut codes = vec![-2i64; named.n];
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        codes.iter_mut().for_each(|c| *c = -2);
        let Some(cur) = cur else { return Ok(Update::Done((false, false))) };
        let old = Hash::new(cur.value);
        let mut b = Builder::new(buf, true);
        super::packed::rewrite(&old, &mut b, now, |e| {
            let Some(i) = named.last(e.field) else { return Edit::Keep };
            let has = e.deadline != 0;
            let ok = match when {
                When::Always => true,
                When::Nx => !has,
                When::Xx => has,
                When::Gt => has && at > e.deadline,
                When::Lt => !has || at < e.deadline,
            };
            codes[i] = match (ok, past) {
                (false, _) => 0,
                (true, true) => 2,
                (true, false) => 1,
            };
            match codes[i] {
                2 => Edit::Drop,
                1 => Edit::Replace(e.value, at),
                _ => Edit::Keep,
            }
        });
        let left = b.finish_indexed();
        let deleted = codes.contains(&2);
        if !deleted && !codes.contains(&1) {
            return Ok(Update::Done((false, false)));
        }
        Ok(if left == 0 {
            Update::Delete((deleted, true))
        } else {
            Update::Write { flags: 0, expires_at_ms: cur.expires_at_ms, result: (deleted, false) }
        })
    });
    match r {
        Ok((deleted, gone)) => {
            if codes.contains(&1) {
                register(ctx, t, key, at);
            }
            // One event, as Redis 7.4's t_hash.c: `hdel` where a past deadline deleted
            // fields, else `hexpire`.
            if deleted {
                notify(ctx, t, HASH_EVENTS, "hdel", key);
            } else if codes.contains(&1) {
                notify(ctx, t, HASH_EVENTS, "hexpire", key);
            }
            if gone {
                notify(ctx, t, GENERIC, "del", key);
            }
            // Fields named twice answer the same.
            write_array_header(out, named.n);
            for i in 0..named.n {
                let last = named.last(named.field(i)).unwrap_or(i);
                write_integer(out, codes[last]);
            }
        }
        Err(e) => engine_error(out, e),
    }
}

/// Registers `key`'s field deadline `at` with `crate::field_expiry` (the key in the database
/// the engine handle has selected), waking worker 0 if it must now wake sooner.
fn register(ctx: &Ctx<'_>, t: TenantId, key: &[u8], at: u64) {
    if ctx.shared.field_deadlines.register(t, ctx.engine.db(), key, at) && ctx.worker != 0 {
        ctx.shared.wake(0);
    }
}

/// A hash stored whole under `key` by RENAME, COPY or MOVE (in the database the engine
/// handle has selected) keeps its fields' deadlines: registers the earliest still to come.
pub(super) fn register_copied(ctx: &Ctx<'_>, t: TenantId, key: &[u8], kind: Kind, value: &[u8]) {
    if kind != HASH || !Hash::new(value).timed() {
        return;
    }
    let now = ctx.engine.now_ms();
    let next = Hash::new(value).live(now).map(|e| e.deadline).filter(|&d| d != 0).min();
    if let Some(at) = next {
        register(ctx, t, key, at);
    }
}

/// Worker 0's active field expiry (`crate::field_expiry`): drops the expired fields of `key`
/// in `t`'s physical database `db`, publishing `hexpired` — and `del` when the last field
/// went with the key — and registers the hash's next field deadline. A key that is gone, is
/// not a hash or has nothing expired is left as it is (its entry was stale).
pub(crate) fn expire_due(ctx: &mut Ctx<'_>, t: TenantId, db: u8, key: &[u8]) {
    let selected = ctx.engine.db();
    ctx.engine.select(db);
    let now = ctx.engine.now_ms();
    let mut next = u64::MAX;
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        next = u64::MAX;
        let Some(cur) = cur else { return Ok(Update::Done((false, false))) };
        let old = Hash::new(cur.value);
        if !old.timed() {
            return Ok(Update::Done((false, false)));
        }
        let mut expired = false;
        for e in old.iter() {
            if e.expired(now) {
                expired = true;
            } else if e.deadline != 0 {
                next = next.min(e.deadline);
            }
        }
        if !expired {
            return Ok(Update::Done((false, false)));
        }
        let mut b = Builder::new(buf, next != u64::MAX);
        super::packed::rewrite(&old, &mut b, now, |_| Edit::Keep);
        Ok(if b.finish_indexed() == 0 {
            Update::Delete((true, true))
        } else {
            Update::Write { flags: 0, expires_at_ms: cur.expires_at_ms, result: (true, false) }
        })
    });
    if let Ok((expired, gone)) = r {
        if expired {
            notify(ctx, t, HASH_EVENTS, "hexpired", key);
        }
        if gone {
            notify(ctx, t, GENERIC, "del", key);
        }
    }
    if next != u64::MAX {
        ctx.shared.field_deadlines.register(t, db, key, next);
    }
    ctx.engine.select(selected);
}

/// `HTTL`, `HPTTL`, `HEXPIRETIME`, `HPEXPIRETIME`: `key FIELDS numfields field …`. Per field:
/// -2 no such field (or key), -1 no deadline, else the time left or the deadline (seconds,
/// or ms for the `HP` forms).
pub(super) fn httl(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let first = match fields_at(cmd, 2) {
        Ok(first) => first,
        Err(e) => return write_error(out, e),
    };
    let name = c.name.as_bytes();
    let ms = name.starts_with(b"hp");
    let absolute = name.ends_with(b"time");
    let now = crate::shared::precise_now_ms(ctx.shared.now_ms());
    let n = cmd.len() - first;
    let answer = |deadline: Option<u64>| -> i64 {
        match deadline {
            None => -2,
            Some(0) => -1,
            Some(d) if absolute => (if ms { d } else { d / 1000 }) as i64,
            Some(d) => {
                let left = d.saturating_sub(now);
                (if ms { left } else { (left + 500) / 1000 }) as i64
            }
        }
    };
    let r = ctx.engine.get_kind(s.tenant, arg(cmd, 1), HASH, |item| {
        let h = Hash::new(item.value);
        write_array_header(out, n);
        for i in first..cmd.len() {
            write_integer(out, answer(h.get(arg(cmd, i), now).map(|e| e.deadline)));
        }
    });
    match r {
        Ok(Some(())) => {}
        Ok(None) => {
            write_array_header(out, n);
            (0..n).for_each(|_| write_integer(out, -2));
        }
        Err(e) => engine_error(out, e),
    }
}

/// `HPERSIST key FIELDS numfields field …`. Per field: -2 no such field (or key), -1 no
/// deadline, 1 removed.
pub(super) fn hpersist(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let first = match fields_at(cmd, 2) {
        Ok(first) => first,
        Err(e) => return write_error(out, e),
    };
    let (t, key) = (s.tenant, arg(cmd, 1));
    let named = Named::new(cmd, first, 1);
    let now = crate::shared::precise_now_ms(ctx.shared.now_ms());
    let mut codes = vec![-2i64; named.n];
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        codes.iter_mut().for_each(|c| *c = -2);
        let Some(cur) = cur else { return Ok(Update::Done(false)) };
        let old = Hash::new(cur.value);
        let mut b = Builder::new(buf, old.timed());
        super::packed::rewrite(&old, &mut b, now, |e| {
            let Some(i) = named.last(e.field) else { return Edit::Keep };
            if e.deadline == 0 {
                codes[i] = -1;
                Edit::Keep
            } else {
                codes[i] = 1;
                Edit::Replace(e.value, 0)
            }
        });
        b.finish_indexed();
        if !codes.contains(&1) {
            return Ok(Update::Done(false));
        }
        Ok(Update::Write { flags: 0, expires_at_ms: cur.expires_at_ms, result: true })
    });
    match r {
        Ok(changed) => {
            if changed {
                notify(ctx, t, HASH_EVENTS, "hpersist", key);
            }
            write_array_header(out, named.n);
            for i in 0..named.n {
                write_integer(out, codes[named.last(named.field(i)).unwrap_or(i)]);
            }
        }
        Err(e) => engine_error(out, e),
    }
}
