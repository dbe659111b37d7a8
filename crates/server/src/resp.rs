//! Redis commands (strings and keyspace, connection and server admin), run against the engine.
//!
//! Replies and error strings follow Redis 7. RESP3 (after `HELLO 3`) changes nulls, maps and
//! `INFO`'s verbatim string; everything else is the same bytes in both versions.

use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::hash::{Hash, Hasher};
use std::io::Write as _;

use fridge_engine::{Condition, EngineError, Expiry, Store, StoreOutcome, TenantId, Update};
use fridge_proto::number::parse_redis_i64;
use fridge_proto::resp::{
    self as r, Command, Version, write_array_header, write_bulk, write_error, write_integer,
    write_map_header, write_null, write_simple, write_wrong_arity,
};

use crate::stats;
use crate::tenants::Login;
use crate::worker::{Ctx, KEYS_PER_RUN, READ_GROUP, Session};

const NOT_INTEGER: &[u8] = b"ERR value is not an integer or out of range";
const SYNTAX: &[u8] = b"ERR syntax error";
const NOAUTH: &[u8] = b"NOAUTH Authentication required.";
const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";
/// A login refused unchecked (see `auth`). Deliberately not `WRONGPASS`: nothing was checked,
/// and clients (redis-py) raise a plain error for it rather than an authentication failure.
const REFUSED: &[u8] = b"ERR too many failed login attempts; try again later";
const NO_DEFAULT_PASSWORD: &[u8] = b"ERR AUTH <password> called without any password configured \
    for the default user. Are you sure your configuration is correct?";
const HELLO_NOAUTH: &[u8] = b"NOAUTH HELLO must be called with the client already \
    authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate \
    the client and select the RESP protocol version at the same time";

/// Commands a client may send before it has logged in (Redis's `no-auth` commands).
const NO_AUTH_COMMANDS: [&[u8]; 4] = [b"auth", b"hello", b"quit", b"reset"];

/// Whether `n` arguments fit a command of Redis arity `arity` (negative: at least).
fn arity_ok(arity: i64, n: usize) -> bool {
    let n = n as i64;
    if arity >= 0 { n == arity } else { n >= -arity }
}

fn no_permission(out: &mut Vec<u8>, command: &[u8]) {
    out.extend_from_slice(b"-NOPERM this user has no permissions to run the '");
    out.extend_from_slice(command);
    out.extend_from_slice(b"' command\r\n");
}

fn engine_error(out: &mut Vec<u8>, e: EngineError) {
    write_error(
        out,
        match e {
            EngineError::TooLarge => {
                b"ERR string exceeds maximum allowed size (proto-max-bulk-len)"
            }
            EngineError::KeyTooLong => b"ERR invalid key: empty or longer than the key limit",
            EngineError::NotANumber | EngineError::NotAnInteger => NOT_INTEGER,
            EngineError::Overflow => b"ERR increment or decrement would overflow",
            EngineError::NotAFloat => b"ERR value is not a valid float",
            EngineError::NotFinite => b"ERR increment would produce NaN or Infinity",
            EngineError::OutOfMemory | EngineError::TooManyWorkers => {
                b"OOM command not allowed when used memory > 'maxmemory'."
            }
        },
    );
}

fn invalid_expire(out: &mut Vec<u8>, lname: &[u8]) {
    out.extend_from_slice(b"-ERR invalid expire time in '");
    out.extend_from_slice(lname);
    out.extend_from_slice(b"' command\r\n");
}

fn int_arg(a: &[u8]) -> Option<i64> {
    parse_redis_i64(a)
}

fn float_arg(a: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(a).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// A relative or absolute expire argument turned into absolute ms. `unit_ms` is 1000 for
/// seconds; `absolute` for the `…AT` forms. `now` must be the precise clock
/// ([`crate::precise_now_ms`]): a deadline counted from the coarse one could come early.
/// `None` on overflow.
fn expire_at(n: i64, unit_ms: i64, absolute: bool, now: u64) -> Option<i64> {
    let ms = n.checked_mul(unit_ms)?;
    if absolute { Some(ms) } else { ms.checked_add(i64::try_from(now).ok()?) }
}

/// Runs one command, appending its reply to `out`.
pub(crate) fn execute(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let name = cmd.name();
    let mut lower = [0u8; 24];
    let lname: &[u8] = match lower.get_mut(..name.len()) {
        Some(l) => {
            l.copy_from_slice(name);
            l.make_ascii_lowercase();
            l
        }
        None => b"",
    };
    let n = cmd.len();
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    // (The command table is searched only for clients that have not logged in.)
    let info = || COMMANDS.iter().find(|c| c.0.as_bytes() == lname);
    let t = match s.user {
        Some(t) => t,
        None if s.must_login(ctx.tenants) => {
            // Redis checks that the command exists and its arity before authentication.
            match info() {
                None => return r::write_unknown_command(out, cmd),
                Some(i) if !arity_ok(i.1, n) => return write_wrong_arity(out, name),
                Some(_) if !NO_AUTH_COMMANDS.contains(&lname) => return write_error(out, NOAUTH),
                Some(_) => TenantId(0),
            }
        }
        // Not logged in, allowed: `default`, or the tenant the first key's prefix routes to.
        None if ctx.tenants.has_prefixes() && info().is_some_and(|i| i.3 > 0) => {
            ctx.tenants.route(arg(1))
        }
        None => TenantId(0),
    };
    s.tenant = t;
    let v = s.version;
    let now = ctx.shared.now_ms();
    macro_rules! arity {
        ($ok:expr) => {
            if !($ok) {
                return write_wrong_arity(out, name);
            }
        };
    }
    match lname {
        b"get" => {
            arity!(n == 2);
            let hit = ctx.engine.get(t, arg(1), |item| write_bulk(out, item.value)).is_some();
            stats::tenant_lookups(ctx.stats, t, u64::from(hit), u64::from(!hit));
            if !hit {
                write_null(out, v);
            }
        }
        b"set" => {
            arity!(n >= 3);
            set(cmd, out, t, v, ctx, now);
        }
        b"setnx" => {
            arity!(n == 3);
            let r = store(ctx, t, arg(1), arg(2), Expiry::Never, Condition::IfAbsent);
            match r {
                Ok(o) => write_integer(out, i64::from(o == StoreOutcome::Stored)),
                Err(e) => engine_error(out, e),
            }
        }
        b"setex" | b"psetex" => {
            arity!(n == 4);
            let Some(ttl) = int_arg(arg(2)) else { return write_error(out, NOT_INTEGER) };
            let unit = if lname == b"setex" { 1000 } else { 1 };
            let at = match expire_at(ttl, unit, false, crate::precise_now_ms(now)) {
                Some(at) if ttl > 0 => at as u64,
                _ => return invalid_expire(out, lname),
            };
            match store(ctx, t, arg(1), arg(3), Expiry::At(at), Condition::Always) {
                Ok(_) => write_simple(out, b"OK"),
                Err(e) => engine_error(out, e),
            }
        }
        b"getset" => {
            arity!(n == 3);
            set_get(out, t, v, ctx, arg(1), arg(2), Expiry::Never, Condition::Always);
        }
        b"mget" => {
            arity!(n >= 2);
            mget(cmd, out, s, t, ctx);
        }
        b"mset" | b"msetnx" => {
            arity!(n >= 3 && n % 2 == 1);
            if lname == b"msetnx" && (1..n).step_by(2).any(|i| ctx.engine.contains(t, arg(i))) {
                return write_integer(out, 0);
            }
            for i in (1..n).step_by(2) {
                if let Err(e) = store(ctx, t, arg(i), arg(i + 1), Expiry::Never, Condition::Always)
                {
                    return engine_error(out, e);
                }
            }
            if lname == b"msetnx" { write_integer(out, 1) } else { write_simple(out, b"OK") }
        }
        b"getdel" => {
            arity!(n == 2);
            let mark = out.len();
            let r = ctx.engine.update(t, arg(1), |cur, _| {
                out.truncate(mark);
                Ok(match cur {
                    Some(c) => {
                        write_bulk(out, c.value);
                        Update::Delete(true)
                    }
                    None => Update::Done(false),
                })
            });
            if !matches!(r, Ok(true)) {
                out.truncate(mark);
                write_null(out, v);
            }
        }
        b"getex" => {
            arity!(n >= 2);
            getex(cmd, out, t, v, ctx, now);
        }
        b"append" => {
            arity!(n == 3);
            stats::inc(&ctx.stats.cmd_set);
            match ctx.engine.append(t, arg(1), arg(2), false, true) {
                Ok(len) => write_integer(out, len.unwrap_or(0) as i64),
                Err(e) => engine_error(out, e),
            }
        }
        b"strlen" => {
            arity!(n == 2);
            let len = ctx.engine.get(t, arg(1), |item| item.value.len()).unwrap_or(0);
            write_integer(out, len as i64);
        }
        b"incr" | b"decr" | b"incrby" | b"decrby" => {
            let by = lname.len() == 6;
            arity!(n == if by { 3 } else { 2 });
            let mut delta = if by {
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
            match ctx.engine.incr_i64(t, arg(1), delta) {
                Ok(n) => write_integer(out, n),
                Err(e) => engine_error(out, e),
            }
        }
        b"incrbyfloat" => {
            arity!(n == 3);
            let Some(delta) = float_arg(arg(2)) else {
                return write_error(out, b"ERR value is not a valid float");
            };
            if delta.is_infinite() {
                return write_error(out, b"ERR increment would produce NaN or Infinity");
            }
            match ctx.engine.incr_f64(t, arg(1), delta, ctx.scratch) {
                Ok(()) => write_bulk(out, ctx.scratch),
                Err(e) => engine_error(out, e),
            }
        }
        b"del" | b"unlink" => {
            arity!(n >= 2);
            let mut count = 0;
            for i in 1..n {
                if ctx.engine.delete(t, arg(i)) {
                    count += 1;
                    stats::inc(&ctx.stats.delete_hits);
                } else {
                    stats::inc(&ctx.stats.delete_misses);
                }
            }
            write_integer(out, count);
        }
        b"exists" => {
            arity!(n >= 2);
            let count = (1..n).filter(|&i| ctx.engine.contains(t, arg(i))).count();
            write_integer(out, count as i64);
        }
        b"touch" => {
            arity!(n >= 2);
            let count = (1..n).filter(|&i| ctx.engine.get(t, arg(i), |_| ()).is_some()).count();
            write_integer(out, count as i64);
        }
        b"expire" | b"pexpire" | b"expireat" | b"pexpireat" => {
            arity!(n >= 3);
            expire(cmd, lname, out, t, ctx, now);
        }
        b"ttl" | b"pttl" => {
            arity!(n == 2);
            let exp = ctx.engine.get(t, arg(1), |item| item.expires_at_ms);
            let reply = match exp {
                None => -2,
                Some(None) => -1,
                Some(Some(at)) => {
                    let ms = at.saturating_sub(crate::precise_now_ms(now));
                    let left = if lname == b"ttl" { (ms + 500) / 1000 } else { ms };
                    i64::try_from(left).unwrap_or(i64::MAX)
                }
            };
            write_integer(out, reply);
        }
        b"persist" => {
            arity!(n == 2);
            let had = matches!(ctx.engine.set_expiry(t, arg(1), None), Ok(Some(Some(_))));
            write_integer(out, i64::from(had));
        }
        b"type" => {
            arity!(n == 2);
            write_simple(out, if ctx.engine.contains(t, arg(1)) { b"string" } else { b"none" });
        }
        b"scan" => {
            arity!(n >= 2);
            scan(cmd, out, t, ctx);
        }
        b"keys" => {
            arity!(n == 2);
            keys(cmd, out, s, t, ctx);
        }
        b"dbsize" => {
            arity!(n == 1);
            write_integer(out, ctx.shared.engine.item_count(t) as i64);
        }
        b"flushdb" | b"flushall" => {
            arity!(n <= 2);
            if n == 2
                && !arg(1).eq_ignore_ascii_case(b"async")
                && !arg(1).eq_ignore_ascii_case(b"sync")
            {
                return write_error(out, SYNTAX);
            }
            stats::inc(&ctx.stats.cmd_flush);
            ctx.engine.flush(t, 0);
            write_simple(out, b"OK");
        }
        b"ping" => {
            arity!(n <= 2);
            if n == 2 { write_bulk(out, arg(1)) } else { write_simple(out, b"PONG") }
        }
        b"echo" => {
            arity!(n == 2);
            write_bulk(out, arg(1));
        }
        b"quit" => {
            write_simple(out, b"OK");
            s.closing = true;
        }
        b"hello" => hello(cmd, out, s, ctx),
        b"auth" => {
            arity!(n >= 2);
            if n > 3 {
                return write_error(out, SYNTAX);
            }
            let (user, password) = if n == 2 { (None, arg(1)) } else { (Some(arg(1)), arg(2)) };
            match crate::auth::attempt(s, ctx, user, password) {
                Ok(Login::Ok(_)) => write_simple(out, b"OK"),
                Ok(Login::Denied) => write_error(out, WRONGPASS),
                Ok(Login::NoDefaultPassword) => write_error(out, NO_DEFAULT_PASSWORD),
                Err(crate::auth::Refused) => write_error(out, REFUSED),
            }
        }
        b"acl" => {
            arity!(n >= 2);
            if arg(1).eq_ignore_ascii_case(b"whoami") {
                arity!(n == 2);
                let name = ctx.tenants.name(s.user.unwrap_or(t)).unwrap_or_default();
                write_bulk(out, name.as_bytes());
            } else {
                unknown_subcommand(out, arg(1), b"ACL");
            }
        }
        b"select" => {
            arity!(n == 2);
            match int_arg(arg(1)) {
                Some(0) => write_simple(out, b"OK"),
                Some(_) => write_error(out, b"ERR DB index is out of range"),
                None => write_error(out, NOT_INTEGER),
            }
        }
        b"info" => {
            let sections: [&[u8]; 8] = std::array::from_fn(|i| cmd.get(i + 1).unwrap_or_default());
            let count = (n - 1).min(sections.len());
            ctx.scratch.clear();
            let view = stats::View::of(s, ctx.tenants);
            crate::stats::write_info(ctx.scratch, ctx.shared, &sections[..count], &view);
            r::write_verbatim(out, v, b"txt", ctx.scratch);
        }
        b"config" => config(cmd, out, s, ctx),
        b"client" => client(cmd, out, s, ctx),
        b"command" => command(cmd, out, v),
        b"lastsave" => write_integer(out, (ctx.shared.started_ms / 1000) as i64),
        b"time" => {
            write_array_header(out, 2);
            let mut buf = [0u8; 20];
            write_bulk(out, digits((now / 1000) as i64, &mut buf));
            write_bulk(out, digits(((now % 1000) * 1000) as i64, &mut buf));
        }
        b"reset" => {
            // Redis's RESET also logs the client out (back to `default`, or to nothing).
            s.version = Version::Resp2;
            if s.user.is_some() {
                s.user = None;
                let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(e) = clients.get_mut(&s.id) {
                    e.tenant = TenantId(0);
                }
            }
            write_simple(out, b"RESET");
        }
        _ => r::write_unknown_command(out, cmd),
    }
}

fn digits(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut cursor = &mut buf[..];
    let _ = write!(cursor, "{n}");
    let left = cursor.len();
    &buf[..20 - left]
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
    ctx.engine.store(Store { tenant, key, value, flags: 0, expiry, condition })
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

fn set(cmd: &Command<'_>, out: &mut Vec<u8>, t: TenantId, v: Version, ctx: &mut Ctx<'_>, now: u64) {
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
            match expire_at(n, unit, absolute, crate::precise_now_ms(now)) {
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
        Ok(StoreOutcome::Stored) => write_simple(out, b"OK"),
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
            return Ok(Update::Done(()));
        }
        buf.extend_from_slice(value);
        let expires_at_ms = match expiry {
            Expiry::Never => None,
            Expiry::At(at) => Some(at),
            Expiry::Keep => cur.and_then(|c| c.expires_at_ms),
        };
        Ok(Update::Write { flags: 0, expires_at_ms, result: () })
    });
    if let Err(e) = r {
        out.truncate(mark);
        engine_error(out, e);
    }
}

fn getex(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    t: TenantId,
    v: Version,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
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
            match expire_at(n, unit, is(b"exat") || is(b"pxat"), crate::precise_now_ms(now)) {
                Some(at) if n > 0 => Some(Some(at as u64)),
                _ => return invalid_expire(out, b"getex"),
            }
        }
        _ => return write_error(out, SYNTAX),
    };
    let found = match expiry {
        None => ctx.engine.get(t, key, |item| write_bulk(out, item.value)).is_some(),
        Some(at) => {
            matches!(
                ctx.engine.get_and_touch(t, key, at, |item| write_bulk(out, item.value)),
                Ok(Some(()))
            )
        }
    };
    if !found {
        write_null(out, v);
    }
}

fn expire(
    cmd: &Command<'_>,
    lname: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    // The deadline and the "already past" check both count from the precise clock.
    let now = crate::precise_now_ms(now);
    let Some(n) = int_arg(arg(2)) else { return write_error(out, NOT_INTEGER) };
    let unit = if lname.starts_with(b"p") { 1 } else { 1000 };
    let absolute = lname.ends_with(b"at");
    let Some(at) = expire_at(n, unit, absolute, now) else { return invalid_expire(out, lname) };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for i in 3..cmd.len() {
        let o = arg(i);
        if o.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if o.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if o.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if o.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            out.extend_from_slice(b"-ERR Unsupported option ");
            out.extend_from_slice(o);
            return out.extend_from_slice(b"\r\n");
        }
    }
    if nx && (xx || gt || lt) {
        return write_error(
            out,
            b"ERR NX and XX, GT or LT options at the same time are not compatible",
        );
    }
    if gt && lt {
        return write_error(out, b"ERR GT and LT options at the same time are not compatible");
    }
    let at = u64::try_from(at).unwrap_or(0);
    let r = ctx.engine.update(t, arg(1), |cur, buf| {
        let Some(c) = cur else { return Ok(Update::Done(false)) };
        let ok = match c.expires_at_ms {
            None => !xx && !gt,
            Some(old) => !nx && (!gt || at > old) && (!lt || at < old),
        };
        if !ok {
            return Ok(Update::Done(false));
        }
        if at <= now {
            return Ok(Update::Delete(true));
        }
        buf.extend_from_slice(c.value);
        Ok(Update::Write { flags: c.flags, expires_at_ms: Some(at), result: true })
    });
    match r {
        Ok(done) => write_integer(out, i64::from(done)),
        Err(e) => engine_error(out, e),
    }
}

fn scan(cmd: &Command<'_>, out: &mut Vec<u8>, t: TenantId, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let Some(cursor) = std::str::from_utf8(arg(1)).ok().and_then(|c| c.parse::<u64>().ok()) else {
        return write_error(out, b"ERR invalid cursor");
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut strings = true;
    let mut i = 2;
    while i < cmd.len() {
        let o = arg(i);
        if i + 1 >= cmd.len() {
            return write_error(out, SYNTAX);
        }
        if o.eq_ignore_ascii_case(b"match") {
            pattern = Some(arg(i + 1));
        } else if o.eq_ignore_ascii_case(b"count") {
            match int_arg(arg(i + 1)) {
                Some(c) if c >= 1 => count = usize::try_from(c).unwrap_or(usize::MAX).min(1 << 20),
                Some(_) => return write_error(out, SYNTAX),
                None => return write_error(out, NOT_INTEGER),
            }
        } else if o.eq_ignore_ascii_case(b"type") {
            strings = arg(i + 1).eq_ignore_ascii_case(b"string");
        } else {
            return write_error(out, SYNTAX);
        }
        i += 2;
    }
    ctx.keys.clear();
    // The pass visits a bounded number of buckets per call and stops early once the reply
    // is long, so one SCAN's work is bounded whatever the tenant owns.
    let mut next = cursor;
    let mut buckets = count.saturating_mul(SCAN_BUCKETS_PER_KEY).max(SCAN_MIN_BUCKETS);
    let mut bytes = 0;
    while buckets > 0 {
        let step = buckets.min(SCAN_MIN_BUCKETS);
        let before = ctx.keys.len();
        let wanted = count - before.min(count);
        next = ctx.engine.scan_bounded(t, next, wanted, step, ctx.keys);
        bytes += ctx.keys[before..].iter().map(Vec::len).sum::<usize>();
        buckets -= step;
        if next == 0 || ctx.keys.len() >= count || bytes >= SCAN_REPLY_BYTES {
            break;
        }
    }
    if let Some(p) = pattern {
        ctx.keys.retain(|k| glob_match(p, k));
    }
    if !strings {
        ctx.keys.clear();
    }
    write_array_header(out, 2);
    let mut buf = [0u8; 20];
    let mut cursor_text = &mut buf[..];
    let _ = write!(cursor_text, "{next}");
    let left = cursor_text.len();
    write_bulk(out, &buf[..20 - left]);
    write_array_header(out, ctx.keys.len());
    for k in ctx.keys.iter() {
        write_bulk(out, k);
    }
    ctx.keys.clear();
}

/// SCAN visits up to this many index buckets per key of its COUNT…
const SCAN_BUCKETS_PER_KEY: usize = 64;
/// …and at least this many (a bucket holds a few keys of any tenant).
const SCAN_MIN_BUCKETS: usize = 1024;
/// SCAN stops early once its keys take this many bytes.
const SCAN_REPLY_BYTES: usize = 64 * 1024;
/// Index buckets KEYS visits per step before other connections get a turn.
const KEYS_STEP_BUCKETS: usize = 256;

/// `MGET`: batched lookups, answered in steps (see [`Session::suspend`]) once the reply
/// reaches the output budget or [`KEYS_PER_RUN`] keys were looked up.
fn mget(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, t: TenantId, ctx: &mut Ctx<'_>) {
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
        });
        let answered = stop.unwrap_or(end);
        for _ in next..answered {
            write_null(out, v);
        }
        stats::tenant_lookups(ctx.stats, t, hits, (answered - i) as u64 - hits);
        looked_up += answered - i;
        i = answered;
        if i < n && (out.len() >= ctx.out_limit || looked_up >= KEYS_PER_RUN) {
            return s.suspend(i);
        }
    }
}

/// KEYS between its steps: the pass over the index, then the reply being written.
#[derive(Debug, Default)]
pub(crate) struct KeysJob {
    cursor: u64,
    /// Matching keys found so far.
    keys: Vec<Box<[u8]>>,
    /// The keys' hashes, each to the index of a key with that hash: a key the index moved
    /// during the pass may be seen twice, and is kept once. (Hashes, not keys, so growing
    /// the map rehashes eight bytes per key; a hash shared by two different keys keeps both.)
    seen: HashMap<u64, u32>,
    /// Bytes the keys take.
    bytes: usize,
    /// Once the pass is over: how many keys are written.
    written: Option<usize>,
}

impl KeysJob {
    /// Memory the job holds, for the clients' memory limit.
    pub(crate) fn memory_bytes(&self) -> usize {
        let per_key = std::mem::size_of::<Box<[u8]>>() + 16;
        self.bytes + self.keys.capacity() * per_key
    }

    fn add(&mut self, key: Vec<u8>) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let index = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        match self.seen.entry(h.finish()) {
            Entry::Occupied(e) if *self.keys[*e.get() as usize] == key[..] => return,
            Entry::Occupied(_) => {}
            Entry::Vacant(e) => {
                e.insert(index);
            }
        }
        self.bytes += key.len();
        self.keys.push(key.into_boxed_slice());
    }
}

/// `KEYS pattern`: a pass over the index in bounded steps, yielding to the worker's other
/// connections between them, then the reply written in steps. Linear in the keys visited.
/// The keys found may take at most `max_output_buffer` bytes; a larger reply is refused
/// (SCAN walks any key space).
fn keys(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, t: TenantId, ctx: &mut Ctx<'_>) {
    let pattern = cmd.get(1).unwrap_or_default();
    let mut job = s.resume.keys.take().unwrap_or_default();
    if job.written.is_none() {
        ctx.keys.clear();
        job.cursor =
            ctx.engine.scan_bounded(t, job.cursor, usize::MAX, KEYS_STEP_BUCKETS, ctx.keys);
        for k in ctx.keys.drain(..) {
            if glob_match(pattern, &k) {
                job.add(k);
            }
        }
        if job.bytes > ctx.shared.config.max_output_buffer.bytes() {
            return write_error(
                out,
                b"ERR KEYS reply would exceed max_output_buffer; use SCAN to walk the keys",
            );
        }
        if job.cursor != 0 {
            s.resume.keys = Some(job);
            return s.suspend(1);
        }
        job.seen = HashMap::new();
        write_array_header(out, job.keys.len());
        job.written = Some(0);
    }
    let mut written = job.written.unwrap_or(0);
    while let Some(k) = job.keys.get(written) {
        write_bulk(out, k);
        written += 1;
        if out.len() >= ctx.out_limit && written < job.keys.len() {
            job.written = Some(written);
            s.resume.keys = Some(job);
            return s.suspend(1);
        }
    }
}

fn hello(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let mut version = s.version;
    let mut i = 1;
    if cmd.len() >= 2 {
        match int_arg(arg(1)) {
            Some(2) => version = Version::Resp2,
            Some(3) => version = Version::Resp3,
            Some(_) => return write_error(out, b"NOPROTO unsupported protocol version"),
            None => {
                return write_error(out, b"ERR Protocol version is not an integer or out of range");
            }
        }
        i = 2;
    }
    let mut name = None;
    let mut login = None;
    while i < cmd.len() {
        let o = arg(i);
        if o.eq_ignore_ascii_case(b"auth") && i + 2 < cmd.len() {
            login = Some((arg(i + 1), arg(i + 2)));
            i += 3;
        } else if o.eq_ignore_ascii_case(b"setname") && i + 1 < cmd.len() {
            name = Some(arg(i + 1));
            i += 2;
        } else {
            out.extend_from_slice(b"-ERR Syntax error in HELLO option '");
            out.extend_from_slice(o);
            return out.extend_from_slice(b"'\r\n");
        }
    }
    match login {
        Some((user, password)) => match crate::auth::attempt(s, ctx, Some(user), password) {
            Ok(Login::Ok(_)) => {}
            Ok(Login::Denied | Login::NoDefaultPassword) => return write_error(out, WRONGPASS),
            Err(crate::auth::Refused) => return write_error(out, REFUSED),
        },
        None if s.must_login(ctx.tenants) => return write_error(out, HELLO_NOAUTH),
        None => {}
    }
    if let Some(name) = name {
        if !set_client_name(ctx, s.id, name) {
            return write_error(out, BAD_NAME);
        }
    }
    s.version = version;
    write_map_header(out, version, 7);
    write_bulk(out, b"server");
    write_bulk(out, b"redis");
    write_bulk(out, b"version");
    write_bulk(out, crate::REDIS_VERSION.as_bytes());
    write_bulk(out, b"proto");
    write_integer(out, if version == Version::Resp3 { 3 } else { 2 });
    write_bulk(out, b"id");
    write_integer(out, i64::try_from(s.id).unwrap_or(i64::MAX));
    write_bulk(out, b"mode");
    write_bulk(out, b"standalone");
    write_bulk(out, b"role");
    write_bulk(out, b"master");
    write_bulk(out, b"modules");
    write_array_header(out, 0);
}

const BAD_NAME: &[u8] = b"ERR Client names cannot contain spaces, newlines or special characters.";

fn set_client_name(ctx: &Ctx<'_>, id: u64, name: &[u8]) -> bool {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return false;
    }
    let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = clients.get_mut(&id) {
        e.name = String::from_utf8_lossy(name).into_owned();
    }
    true
}

/// Parameters `CONFIG GET` reports, with their values.
fn config_params(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let c = &ctx.shared.config;
    vec![
        ("maxmemory", c.memory.0.to_string()),
        ("memory-includes-index", if c.memory_includes_index { "yes" } else { "no" }.into()),
        ("maxmemory-policy", "allkeys-lru".into()),
        ("maxclients", c.max_connections.to_string()),
        ("timeout", c.idle_timeout.to_string()),
        ("port", ctx.shared.resp_port.unwrap_or(ctx.shared.main_port).to_string()),
        ("bind", c.listen.clone()),
        ("databases", "1".into()),
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("proto-max-bulk-len", c.resp_limits().max_bulk_len.to_string()),
        ("client-query-buffer-limit", c.query_buffer_limit().to_string()),
        ("io-threads", ctx.shared.workers.len().to_string()),
    ]
}

fn config(cmd: &Command<'_>, out: &mut Vec<u8>, s: &Session, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let v = s.version;
    let sub = arg(1);
    if sub.eq_ignore_ascii_case(b"reload") {
        // fridge's own: reread the tenants from the configuration file (as SIGHUP does).
        if cmd.len() != 2 {
            return write_wrong_arity(out, b"config|reload");
        }
        if !s.is_admin(ctx.tenants) {
            return no_permission(out, b"config|reload");
        }
        match ctx.shared.reload() {
            Ok(table) => {
                *ctx.tenants = table;
                write_simple(out, b"OK");
            }
            Err(e) => {
                out.extend_from_slice(b"-ERR CONFIG RELOAD failed: ");
                out.extend(e.bytes().map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
                out.extend_from_slice(b"\r\n");
            }
        }
    } else if sub.eq_ignore_ascii_case(b"set") && !s.is_admin(ctx.tenants) {
        no_permission(out, b"config|set");
    } else if sub.eq_ignore_ascii_case(b"get") {
        if cmd.len() < 3 {
            return write_wrong_arity(out, b"config|get");
        }
        let params = config_params(ctx);
        let matched: Vec<&(&str, String)> = params
            .iter()
            .filter(|(name, _)| (2..cmd.len()).any(|i| glob_match_nocase(arg(i), name.as_bytes())))
            .collect();
        write_map_header(out, v, matched.len());
        for (name, value) in matched {
            write_bulk(out, name.as_bytes());
            write_bulk(out, value.as_bytes());
        }
    } else if sub.eq_ignore_ascii_case(b"set") {
        if cmd.len() < 4 || cmd.len() % 2 != 0 {
            return write_wrong_arity(out, b"config|set");
        }
        // Settings with no effect on a cache without persistence are accepted.
        const NO_OPS: [&str; 6] = [
            "save",
            "appendonly",
            "appendfsync",
            "maxmemory-policy",
            "maxmemory-samples",
            "notify-keyspace-events",
        ];
        for i in (2..cmd.len()).step_by(2) {
            let p = arg(i);
            if !NO_OPS.iter().any(|n| p.eq_ignore_ascii_case(n.as_bytes())) {
                out.extend_from_slice(
                    b"-ERR Unknown option or number of arguments for CONFIG SET - '",
                );
                out.extend_from_slice(p);
                return out.extend_from_slice(b"'\r\n");
            }
        }
        write_simple(out, b"OK");
    } else if sub.eq_ignore_ascii_case(b"resetstat") {
        write_simple(out, b"OK");
    } else if cmd.len() < 2 {
        write_wrong_arity(out, b"config");
    } else {
        unknown_subcommand(out, sub, b"CONFIG");
    }
}

fn unknown_subcommand(out: &mut Vec<u8>, sub: &[u8], command: &[u8]) {
    out.extend_from_slice(b"-ERR unknown subcommand '");
    out.extend(sub.iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
    out.extend_from_slice(b"'. Try ");
    out.extend_from_slice(command);
    out.extend_from_slice(b" HELP.\r\n");
}

fn client_line(out: &mut Vec<u8>, id: u64, e: &crate::ClientEntry, user: &str, now: u64, resp: u8) {
    let _ = writeln!(
        out,
        "id={id} addr={} laddr={} fd=0 name={} age={} idle=0 flags=N db=0 sub=0 psub=0 \
         ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 \
         tot-mem={} events=r cmd=client user={user} redir=-1 resp={resp}",
        e.peer,
        e.local,
        e.name,
        now.saturating_sub(e.created_ms) / 1000,
        e.memory,
    );
}

fn client(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    if n < 2 {
        return write_wrong_arity(out, b"client");
    }
    let sub = arg(1);
    let is = |name: &[u8]| sub.eq_ignore_ascii_case(name);
    let now = ctx.shared.now_ms();
    let resp = if s.version == Version::Resp3 { 3 } else { 2 };
    if is(b"id") {
        write_integer(out, i64::try_from(s.id).unwrap_or(i64::MAX));
    } else if is(b"setname") {
        if n != 3 {
            return write_wrong_arity(out, b"client|setname");
        }
        if set_client_name(ctx, s.id, arg(2)) {
            write_simple(out, b"OK");
        } else {
            write_error(out, BAD_NAME);
        }
    } else if is(b"getname") {
        let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        match clients.get(&s.id).map(|e| e.name.as_str()) {
            Some(name) if !name.is_empty() => write_bulk(out, name.as_bytes()),
            _ => write_null(out, s.version),
        }
    } else if is(b"info") || is(b"list") {
        ctx.scratch.clear();
        {
            let view = stats::View::of(s, ctx.tenants);
            let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
            let mut ids: Vec<&u64> = clients.keys().collect();
            ids.sort_unstable();
            for id in ids {
                if is(b"info") && *id != s.id {
                    continue;
                }
                if let Some(e) = clients.get(id).filter(|e| view.sees_client(*id, e)) {
                    let user = ctx.tenants.name(e.tenant).unwrap_or_default();
                    client_line(ctx.scratch, *id, e, user, now, resp);
                }
            }
        }
        r::write_verbatim(out, s.version, b"txt", ctx.scratch);
    } else if is(b"kill") {
        client_kill(cmd, out, s, ctx);
    } else if is(b"setinfo") || is(b"no-evict") || is(b"no-touch") {
        // SETINFO takes an attribute and a value; NO-EVICT and NO-TOUCH take on|off.
        let wanted = if is(b"setinfo") { 4 } else { 3 };
        if n != wanted {
            let mut name = [0u8; 32];
            let full = b"client|";
            name[..full.len()].copy_from_slice(full);
            let len = full.len() + sub.len().min(24);
            name[full.len()..len].copy_from_slice(&sub[..len - full.len()]);
            return write_wrong_arity(out, &name[..len]);
        }
        write_simple(out, b"OK");
    } else {
        unknown_subcommand(out, sub, b"CLIENT");
    }
}

fn client_kill(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    // Old form: CLIENT KILL ip:port. New form: filters.
    let (mut by_id, mut by_addr, mut skipme) = (None, None, true);
    if n == 3 {
        by_addr = Some(arg(2));
    } else if n >= 4 && n % 2 == 0 {
        for i in (2..n).step_by(2) {
            let (f, val) = (arg(i), arg(i + 1));
            if f.eq_ignore_ascii_case(b"id") {
                match std::str::from_utf8(val).ok().and_then(|v| v.parse::<u64>().ok()) {
                    Some(id) => by_id = Some(id),
                    None => return write_error(out, b"ERR client-id should be greater than 0"),
                }
            } else if f.eq_ignore_ascii_case(b"addr") {
                by_addr = Some(val);
            } else if f.eq_ignore_ascii_case(b"skipme") {
                skipme = !val.eq_ignore_ascii_case(b"no");
            } else {
                return write_error(out, SYNTAX);
            }
        }
    } else {
        return write_error(out, SYNTAX);
    }
    // A client the session may not see (another tenant's, or anyone else's for a client that
    // has not logged in) does not exist for it: `No such client`, or 0 killed.
    let mut killed = 0;
    let mut workers = Vec::new();
    {
        let view = stats::View::of(s, ctx.tenants);
        let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        for (id, e) in clients.iter_mut() {
            let addr_ok = by_addr.is_none_or(|a| e.peer.to_string().as_bytes() == a);
            let id_ok = by_id.is_none_or(|want| want == *id);
            let me = *id == s.id;
            if view.sees_client(*id, e) && addr_ok && id_ok && !(me && skipme && n != 3) {
                killed += 1;
                if me {
                    s.closing = true;
                } else {
                    e.killed = true;
                    workers.push(e.worker);
                }
            }
        }
    }
    for w in workers {
        if let Some(flag) = ctx.shared.kill_pending.get(w) {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        ctx.shared.wake(w);
    }
    if n == 3 {
        if killed == 0 {
            write_error(out, b"ERR No such client");
        } else {
            write_simple(out, b"OK");
        }
    } else {
        write_integer(out, killed);
    }
}

/// name, arity, flags, first key, last key, step.
type CommandInfo = (&'static str, i64, &'static [&'static str], i64, i64, i64);

const COMMANDS: &[CommandInfo] = &[
    ("get", 2, &["readonly", "fast"], 1, 1, 1),
    ("set", -3, &["write", "denyoom"], 1, 1, 1),
    ("setnx", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("setex", 4, &["write", "denyoom"], 1, 1, 1),
    ("psetex", 4, &["write", "denyoom"], 1, 1, 1),
    ("mget", -2, &["readonly", "fast"], 1, -1, 1),
    ("mset", -3, &["write", "denyoom"], 1, -1, 2),
    ("msetnx", -3, &["write", "denyoom"], 1, -1, 2),
    ("getset", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("getdel", 2, &["write", "fast"], 1, 1, 1),
    ("getex", -2, &["write", "fast"], 1, 1, 1),
    ("append", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("strlen", 2, &["readonly", "fast"], 1, 1, 1),
    ("incr", 2, &["write", "denyoom", "fast"], 1, 1, 1),
    ("incrby", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("decr", 2, &["write", "denyoom", "fast"], 1, 1, 1),
    ("decrby", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("incrbyfloat", 3, &["write", "denyoom", "fast"], 1, 1, 1),
    ("del", -2, &["write"], 1, -1, 1),
    ("unlink", -2, &["write", "fast"], 1, -1, 1),
    ("exists", -2, &["readonly", "fast"], 1, -1, 1),
    ("expire", -3, &["write", "fast"], 1, 1, 1),
    ("pexpire", -3, &["write", "fast"], 1, 1, 1),
    ("expireat", -3, &["write", "fast"], 1, 1, 1),
    ("pexpireat", -3, &["write", "fast"], 1, 1, 1),
    ("ttl", 2, &["readonly", "fast"], 1, 1, 1),
    ("pttl", 2, &["readonly", "fast"], 1, 1, 1),
    ("persist", 2, &["write", "fast"], 1, 1, 1),
    ("touch", -2, &["readonly", "fast"], 1, -1, 1),
    ("type", 2, &["readonly", "fast"], 1, 1, 1),
    ("scan", -2, &["readonly"], 0, 0, 0),
    ("keys", 2, &["readonly"], 0, 0, 0),
    ("dbsize", 1, &["readonly", "fast"], 0, 0, 0),
    ("flushdb", -1, &["write"], 0, 0, 0),
    ("flushall", -1, &["write"], 0, 0, 0),
    ("ping", -1, &["fast"], 0, 0, 0),
    ("echo", 2, &["fast"], 0, 0, 0),
    ("quit", -1, &["fast"], 0, 0, 0),
    ("hello", -1, &["fast"], 0, 0, 0),
    ("auth", -2, &["fast"], 0, 0, 0),
    ("select", 2, &["fast"], 0, 0, 0),
    ("info", -1, &[], 0, 0, 0),
    ("config", -2, &[], 0, 0, 0),
    ("client", -2, &[], 0, 0, 0),
    ("command", -1, &[], 0, 0, 0),
    ("acl", -2, &[], 0, 0, 0),
    ("time", 1, &["fast"], 0, 0, 0),
    ("lastsave", 1, &["fast"], 0, 0, 0),
    ("reset", 1, &["fast"], 0, 0, 0),
];

fn command_info(out: &mut Vec<u8>, info: &CommandInfo) {
    let (name, arity, flags, first, last, step) = *info;
    write_array_header(out, 10);
    write_bulk(out, name.as_bytes());
    write_integer(out, arity);
    write_array_header(out, flags.len());
    for f in flags {
        write_simple(out, f.as_bytes());
    }
    write_integer(out, first);
    write_integer(out, last);
    write_integer(out, step);
    for _ in 0..4 {
        write_array_header(out, 0); // ACL categories, tips, key specs, subcommands
    }
}

fn command(cmd: &Command<'_>, out: &mut Vec<u8>, v: Version) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let find = |name: &[u8]| COMMANDS.iter().find(|c| name.eq_ignore_ascii_case(c.0.as_bytes()));
    if cmd.len() == 1 {
        write_array_header(out, COMMANDS.len());
        for c in COMMANDS {
            command_info(out, c);
        }
        return;
    }
    let sub = arg(1);
    if sub.eq_ignore_ascii_case(b"count") {
        write_integer(out, COMMANDS.len() as i64);
    } else if sub.eq_ignore_ascii_case(b"list") {
        write_array_header(out, COMMANDS.len());
        for c in COMMANDS {
            write_bulk(out, c.0.as_bytes());
        }
    } else if sub.eq_ignore_ascii_case(b"info") {
        write_array_header(out, cmd.len() - 2);
        for i in 2..cmd.len() {
            match find(arg(i)) {
                Some(c) => command_info(out, c),
                None => write_null(out, v),
            }
        }
    } else if sub.eq_ignore_ascii_case(b"docs") {
        let names: Vec<&CommandInfo> = if cmd.len() == 2 {
            COMMANDS.iter().collect()
        } else {
            (2..cmd.len()).filter_map(|i| find(arg(i))).collect()
        };
        write_map_header(out, v, names.len());
        for c in names {
            write_bulk(out, c.0.as_bytes());
            write_map_header(out, v, 2);
            write_bulk(out, b"summary");
            write_bulk(out, b"");
            write_bulk(out, b"group");
            write_bulk(out, if c.3 > 0 { b"string".as_slice() } else { b"server".as_slice() });
        }
    } else {
        unknown_subcommand(out, sub, b"COMMAND");
    }
}

fn glob_match_nocase(pattern: &[u8], s: &[u8]) -> bool {
    glob(pattern, s, true)
}

/// Redis's glob-style matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`, `\x`.
pub(crate) fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    glob(pattern, s, false)
}

fn glob(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    let (mut p, mut i) = (0, 0);
    // Backtracking point: the last `*` seen and the input position it stood for.
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let c = s[i];
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, i));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => class(pattern, p, c, nocase).and_then(|(ok, len)| ok.then_some(len)),
            Some(b'\\') if p + 1 < pattern.len() => eq(pattern[p + 1], c).then_some(2),
            Some(&pc) => eq(pc, c).then_some(1),
            None => None,
        };
        match step {
            Some(len) => {
                p += len;
                i += 1;
            }
            None => match star {
                Some((sp, si)) => {
                    p = sp + 1;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class starting at `pattern[p] == b'['`. Returns whether it
/// matched and the class's length in the pattern.
fn class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let lower = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = lower(c);
    let mut matched = false;
    loop {
        let &pc = pattern.get(j)?;
        if pc == b']' {
            break;
        }
        if pc == b'\\' && j + 1 < pattern.len() {
            matched |= lower(pattern[j + 1]) == c;
            j += 2;
        } else if pattern.get(j + 1) == Some(&b'-')
            && j + 2 < pattern.len()
            && pattern[j + 2] != b']'
        {
            let (a, b) = (lower(pc), lower(pattern[j + 2]));
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            matched |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            matched |= lower(pc) == c;
            j += 1;
        }
    }
    Some((matched != negate, j + 1 - p))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_patterns_match_like_redis() {
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"h?llo", b"hello"));
        assert!(glob_match(b"h*llo", b"heeeello"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(b"user:*:name", b"user:42:name"));
        assert!(!glob_match(b"user:*:name", b"user:42:age"));
        assert!(glob_match(b"a\\*b", b"a*b"));
        assert!(!glob_match(b"a\\*b", b"axb"));
        assert!(!glob_match(b"[", b"a"), "an unclosed class matches nothing");
        assert!(glob_match(b"", b""));
    }
}
