//! String commands: GET, SET and its variants, MGET, MSET, GETDEL, GETEX, APPEND, STRLEN and
//! the counters (INCR…, INCRBYFLOAT).

use fridge_engine::{Condition, EngineError, Expiry, Kind, Store, StoreOutcome, TenantId, Update};
use fridge_proto::long_double::LongDouble;
use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_bulk_header, write_error,
    write_integer, write_null, write_simple, write_wrong_arity,
};

use super::{
    NOT_INTEGER, SYNTAX, Spec, counter_error, engine_error, expire_at, int_arg, invalid_expire,
    notify, notify_only,
};
use crate::counter::Counters;
use crate::keyspace::{GENERIC, KEY_MISS, STRING};
use crate::output::{PIN_MIN, put_value};
use crate::session::{Ctx, KEYS_PER_RUN, READ_GROUP, Session};
use crate::stats;

pub(super) fn get(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    let key = cmd.get(1).unwrap_or_default();
    // A large value is written from its segment (`crate::output`), but not into a script's
    // or EXEC's reply.
    let pin_min = if s.deny_blocking { usize::MAX } else { PIN_MIN };
    let pins = &mut s.out_pins;
    let hit = ctx.engine.get_pinned(t, key, Kind::STRING, pin_min, |item, pin| {
        write_bulk_header(out, item.value.len());
        put_value(out, pins, item.value, pin);
        out.extend_from_slice(b"\r\n");
    });
    let hit = match hit {
        Ok(hit) => hit,
        Err(e) => return engine_error(out, e),
    };
    stats::tenant_lookups(ctx.stats, t, u64::from(hit.is_some()), u64::from(hit.is_none()));
    if hit.is_none() {
        write_null(out, s.version);
        notify_only(ctx, t, KEY_MISS, "keymiss", key);
    }
}

pub(super) fn setnx(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let r = store(ctx, s.tenant, arg(1), arg(2), Expiry::Never, Condition::IfAbsent);
    if r == Ok(StoreOutcome::Stored) {
        notify(ctx, s.tenant, STRING, "set", arg(1));
    }
    match r {
        Ok(o) => write_integer(out, i64::from(o == StoreOutcome::Stored)),
        Err(e) => engine_error(out, e),
    }
}

/// `SETEX` and `PSETEX`.
pub(super) fn setex(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let lname = c.name.as_bytes();
    let Some(ttl) = int_arg(arg(2)) else { return write_error(out, NOT_INTEGER) };
    let unit = if lname == b"setex" { 1000 } else { 1 };
    let at = match expire_at(ttl, unit, false, crate::shared::precise_now_ms(ctx.shared.now_ms())) {
        Some(at) if ttl > 0 => at as u64,
        _ => return invalid_expire(out, lname),
    };
    match store(ctx, s.tenant, arg(1), arg(3), Expiry::At(at), Condition::Always) {
        Ok(_) => {
            notify(ctx, s.tenant, STRING, "set", arg(1));
            notify_only(ctx, s.tenant, GENERIC, "expire", arg(1));
            write_simple(out, b"OK");
        }
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn getset(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    set_get(out, s.tenant, s.version, ctx, arg(1), arg(2), Expiry::Never, Condition::Always);
}

/// `MSET` and `MSETNX`.
pub(super) fn mset(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let (n, t) = (cmd.len(), s.tenant);
    if n % 2 == 0 {
        return write_wrong_arity(out, c.name.as_bytes());
    }
    let nx = c.name == "msetnx";
    if nx && (1..n).step_by(2).any(|i| ctx.engine.contains(t, arg(i))) {
        return write_integer(out, 0);
    }
    for i in (1..n).step_by(2) {
        if let Err(e) = store(ctx, t, arg(i), arg(i + 1), Expiry::Never, Condition::Always) {
            return engine_error(out, e);
        }
        notify(ctx, t, STRING, "set", arg(i));
    }
    if nx { write_integer(out, 1) } else { write_simple(out, b"OK") }
}

pub(super) fn getdel(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let mark = out.len();
    let r = ctx.engine.update(s.tenant, cmd.get(1).unwrap_or_default(), |cur, _| {
        out.truncate(mark);
        Ok(match cur {
            Some(c) => {
                write_bulk(out, c.value);
                Update::Delete(true)
            }
            None => Update::Done(false),
        })
    });
    match r {
        Ok(true) => notify(ctx, s.tenant, GENERIC, "del", cmd.get(1).unwrap_or_default()),
        Ok(false) => {
            out.truncate(mark);
            write_null(out, s.version);
        }
        Err(e) => {
            out.truncate(mark);
            engine_error(out, e);
        }
    }
}

pub(super) fn append(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    stats::inc(&ctx.stats.cmd_set);
    match ctx.engine.append(s.tenant, arg(1), arg(2), false, true) {
        Ok(len) => {
            notify(ctx, s.tenant, STRING, "append", arg(1));
            write_integer(out, len.unwrap_or(0) as i64);
        }
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn strlen(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let key = cmd.get(1).unwrap_or_default();
    let len = match ctx.engine.get_kind(s.tenant, key, Kind::STRING, |item| item.value.len()) {
        Ok(len) => len,
        Err(e) => return engine_error(out, e),
    };
    if len.is_none() {
        notify_only(ctx, s.tenant, KEY_MISS, "keymiss", key);
    }
    write_integer(out, len.unwrap_or(0) as i64);
}

/// `INCR`, `DECR`, `INCRBY` and `DECRBY`.
pub(super) fn incr(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let lname = c.name.as_bytes();
    let mut delta = if lname.ends_with(b"by") {
        match int_arg(arg(2)) {
            Some(d) => d,
            None => return write_error(out, NOT_INTEGER),
        }
    } else {
        1
    };
    if lname.starts_with(b"decr") {
        match delta.checked_neg() {
            Some(d) => delta = d,
            None => return write_error(out, b"ERR decrement would overflow"),
        }
    }
    stats::inc(&ctx.stats.incr_hits);
    match ctx.engine.incr_i64(s.tenant, arg(1), delta) {
        Ok(n) => {
            notify(ctx, s.tenant, STRING, "incrby", arg(1));
            write_integer(out, n);
        }
        Err(e) => counter_error(out, e),
    }
}

pub(super) fn incrbyfloat(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    // Redis checks the key's type, then reads the stored value, then the increment: an
    // unreadable increment is answered in that order (`Counters::incr_float`).
    let delta = LongDouble::parse(arg(2));
    match ctx.engine.incr_float(s.tenant, arg(1), delta, ctx.scratch) {
        Ok(()) => {
            write_bulk(out, ctx.scratch);
            notify(ctx, s.tenant, STRING, "incrbyfloat", arg(1));
        }
        Err(e) => counter_error(out, e),
    }
}

fn store(
    ctx: &mut Ctx<'_>,
    tenant: TenantId,
    key: &[u8],
    value: &[u8],
    expiry: Expiry,
    condition: Condition,
) -> Result<StoreOutcome, EngineError> {
    stats::inc(&ctx.stats.cmd_set);
    check_sizes(ctx, key, value)?;
    ctx.engine.store(Store { expiry, condition, ..Store::new(tenant, key, value) })
}

/// The configured key and item limits (the engine's own are a little looser: they count the
/// key record too).
fn check_sizes(ctx: &Ctx<'_>, key: &[u8], value: &[u8]) -> Result<(), EngineError> {
    if key.len() > ctx.shared.config.max_resp_key_len {
        Err(EngineError::KeyTooLong)
    } else if value.len() > ctx.shared.config.max_item_size.bytes() {
        Err(EngineError::TooLarge)
    } else {
        Ok(())
    }
}

pub(super) fn set(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, v, now) = (s.tenant, s.version, ctx.shared.now_ms());
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let mut condition = Condition::Always;
    let mut expiry = Expiry::Never;
    let mut expiry_given = false;
    let mut get = false;
    let mut i = 3;
    while i < cmd.len() {
        let a = arg(i);
        let is = |s: &[u8]| a.eq_ignore_ascii_case(s);
        if is(b"nx") && condition == Condition::Always {
            condition = Condition::IfAbsent;
        } else if is(b"xx") && condition == Condition::Always {
            condition = Condition::IfPresent;
        } else if is(b"get") {
            get = true;
        } else if is(b"keepttl") && !expiry_given {
            expiry = Expiry::Keep;
            expiry_given = true;
        } else if (is(b"ex") || is(b"px") || is(b"exat") || is(b"pxat"))
            && !expiry_given
            && i + 1 < cmd.len()
        {
            i += 1;
            let Some(n) = int_arg(arg(i)) else { return write_error(out, NOT_INTEGER) };
            let unit = if is(b"ex") || is(b"exat") { 1000 } else { 1 };
            let absolute = is(b"exat") || is(b"pxat");
            match expire_at(n, unit, absolute, crate::shared::precise_now_ms(now)) {
                Some(at) if n > 0 => expiry = Expiry::At(at as u64),
                _ => return invalid_expire(out, b"set"),
            }
            expiry_given = true;
        } else {
            return write_error(out, SYNTAX);
        }
        i += 1;
    }
    if get {
        return set_get(out, t, v, ctx, arg(1), arg(2), expiry, condition);
    }
    match store(ctx, t, arg(1), arg(2), expiry, condition) {
        Ok(StoreOutcome::Stored) => {
            notify_set(ctx, t, arg(1), expiry);
            write_simple(out, b"OK");
        }
        Ok(_) => write_null(out, v),
        Err(e) => engine_error(out, e),
    }
}

/// `SET … GET` and `GETSET`: store and reply with the old value, in one engine update.
#[expect(clippy::too_many_arguments, reason = "a command's parts, passed once")]
fn set_get(
    out: &mut Vec<u8>,
    t: TenantId,
    v: Version,
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    expiry: Expiry,
    condition: Condition,
) {
    stats::inc(&ctx.stats.cmd_set);
    if let Err(e) = check_sizes(ctx, key, value) {
        return engine_error(out, e);
    }
    let mark = out.len();
    let r = ctx.engine.update(t, key, |cur, buf| {
        out.truncate(mark);
        match cur {
            Some(c) => write_bulk(out, c.value),
            None => write_null(out, v),
        }
        let proceed = match condition {
            Condition::IfAbsent => cur.is_none(),
            Condition::IfPresent => cur.is_some(),
            _ => true,
        };
        if !proceed {
            return Ok(Update::Done(false));
        }
        buf.extend_from_slice(value);
        let expires_at_ms = match expiry {
            Expiry::Never => None,
            Expiry::At(at) => Some(at),
            Expiry::Keep => cur.and_then(|c| c.expires_at_ms),
        };
        Ok(Update::Write { flags: 0, expires_at_ms, result: true })
    });
    match r {
        Ok(true) => notify_set(ctx, t, key, expiry),
        Ok(false) => {}
        Err(e) => {
            out.truncate(mark);
            engine_error(out, e);
        }
    }
}

/// The notifications of a `SET`: `set`, and `expire` when it gave the key a deadline.
fn notify_set(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], expiry: Expiry) {
    notify(ctx, t, STRING, "set", key);
    if matches!(expiry, Expiry::At(_)) {
        notify_only(ctx, t, GENERIC, "expire", key);
    }
}

pub(super) fn getex(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, v, now) = (s.tenant, s.version, ctx.shared.now_ms());
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let key = arg(1);
    let expiry = match cmd.len() {
        2 => None,
        3 if arg(2).eq_ignore_ascii_case(b"persist") => Some(None),
        4 => {
            let o = arg(2);
            let is = |s: &[u8]| o.eq_ignore_ascii_case(s);
            if !(is(b"ex") || is(b"px") || is(b"exat") || is(b"pxat")) {
                return write_error(out, SYNTAX);
            }
            let Some(n) = int_arg(arg(3)) else { return write_error(out, NOT_INTEGER) };
            let unit = if is(b"ex") || is(b"exat") { 1000 } else { 1 };
            match expire_at(n, unit, is(b"exat") || is(b"pxat"), crate::shared::precise_now_ms(now))
            {
                Some(at) if n > 0 => Some(Some(at as u64)),
                _ => return invalid_expire(out, b"getex"),
            }
        }
        _ => return write_error(out, SYNTAX),
    };
    let found = match expiry {
        None => ctx.engine.get_kind(t, key, Kind::STRING, |item| write_bulk(out, item.value)),
        Some(at) => ctx.engine.get_and_touch(t, key, at, |item| write_bulk(out, item.value)),
    };
    let found = match found {
        Ok(found) => found.is_some(),
        Err(e) => return engine_error(out, e),
    };
    match expiry {
        _ if !found => {
            write_null(out, v);
            notify_only(ctx, t, KEY_MISS, "keymiss", key);
        }
        Some(Some(_)) => notify(ctx, t, GENERIC, "expire", key),
        Some(None) => notify(ctx, t, GENERIC, "persist", key),
        None => {}
    }
}

/// `MGET`: batched lookups, answered in steps (see [`Session::suspend`]) once the reply
/// reaches the output budget or [`KEYS_PER_RUN`] keys were looked up.
// MGET's hit mask has a bit per key of a group.
const _: () = assert!(READ_GROUP <= 64);

pub(super) fn mget(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    let v = s.version;
    let n = cmd.len();
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let mut i = s.resume_at();
    if i == 0 {
        write_array_header(out, n - 1);
        i = 1;
    }
    let mut looked_up = 0;
    while i < n {
        let end = (i + READ_GROUP).min(n);
        // One batched engine call per group; misses are the indices it skips. Once the
        // reply reaches the budget, the group's later keys are left for the next run.
        let (mut next, mut hits, mut stop) = (i, 0u64, None);
        let mut hit_mask = 0u64; // READ_GROUP is 64: bit j, the group's key j was found
        ctx.engine.get_each(t, (i..end).map(arg), |j, _, item| {
            if stop.is_some() || out.len() >= ctx.out_limit {
                stop = stop.or(Some(i + j));
                return;
            }
            for _ in next..i + j {
                write_null(out, v);
            }
            write_bulk(out, item.value);
            next = i + j + 1;
            hits += 1;
            hit_mask |= 1u64.checked_shl(j as u32).unwrap_or(0);
        });
        let answered = stop.unwrap_or(end);
        for _ in next..answered {
            write_null(out, v);
        }
        if ctx.shared.notify.wants(KEY_MISS) {
            for j in (0..answered - i).filter(|j| hit_mask & (1u64 << j) == 0) {
                notify_only(ctx, t, KEY_MISS, "keymiss", arg(i + j));
            }
        }
        stats::tenant_lookups(ctx.stats, t, hits, (answered - i) as u64 - hits);
        looked_up += answered - i;
        i = answered;
        if i < n && (out.len() >= ctx.out_limit || looked_up >= KEYS_PER_RUN) {
            return s.suspend(i);
        }
    }
}
