//! Key space commands: DEL, EXISTS, TOUCH, the expiry commands (EXPIRE…, TTL, PERSIST), TYPE,
//! SCAN, KEYS, DBSIZE and FLUSHDB/FLUSHALL.

use std::collections::HashMap;
use std::io::Write as _;

use fridge_engine::Update;
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_integer, write_simple,
};

use super::glob::glob_match;
use super::{
    NOT_INTEGER, SYNTAX, Spec, engine_error, expire_at, int_arg, invalid_expire, notify,
    notify_only,
};
use crate::keyspace::{GENERIC, KEY_MISS};
use crate::session::{Ctx, Session};
use crate::stats;

/// `DEL` and `UNLINK`.
pub(super) fn del(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let mut count = 0;
    for i in 1..cmd.len() {
        let key = cmd.get(i).unwrap_or_default();
        if ctx.engine.delete(s.tenant, key) {
            notify(ctx, s.tenant, GENERIC, "del", key);
            count += 1;
            stats::inc(&ctx.stats.delete_hits);
        } else {
            stats::inc(&ctx.stats.delete_misses);
        }
    }
    write_integer(out, count);
}

pub(super) fn exists(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let count = (1..cmd.len()).filter(|&i| ctx.engine.contains(s.tenant, arg(i))).count();
    write_integer(out, count as i64);
}

pub(super) fn touch(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let count =
        (1..cmd.len()).filter(|&i| ctx.engine.get_any(s.tenant, arg(i), |_| ()).is_some()).count();
    write_integer(out, count as i64);
}

/// `TTL` and `PTTL`.
pub(super) fn ttl(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let now = ctx.shared.now_ms();
    let key = cmd.get(1).unwrap_or_default();
    let exp = ctx.engine.get_any(s.tenant, key, |item| item.expires_at_ms);
    let reply = match exp {
        None => {
            notify_only(ctx, s.tenant, KEY_MISS, "keymiss", key);
            -2
        }
        Some(None) => -1,
        Some(Some(at)) => {
            let ms = at.saturating_sub(crate::shared::precise_now_ms(now));
            let left = if c.name == "ttl" { (ms + 500) / 1000 } else { ms };
            i64::try_from(left).unwrap_or(i64::MAX)
        }
    };
    write_integer(out, reply);
}

pub(super) fn persist(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let key = cmd.get(1).unwrap_or_default();
    let had = matches!(ctx.engine.set_expiry(s.tenant, key, None), Ok(Some(Some(_))));
    if had {
        notify(ctx, s.tenant, GENERIC, "persist", key);
    }
    write_integer(out, i64::from(had));
}

pub(super) fn type_(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let key = cmd.get(1).unwrap_or_default();
    match ctx.engine.kind(s.tenant, key) {
        Some(kind) => write_simple(out, crate::types::name(kind)),
        None => {
            notify_only(ctx, s.tenant, KEY_MISS, "keymiss", key);
            write_simple(out, b"none");
        }
    }
}

pub(super) fn dbsize(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let dbs = ctx.shared.engine.db_stats(s.tenant);
    write_integer(out, dbs[usize::from(ctx.engine.db())].keys as i64);
}

/// `FLUSHDB`: the keys of the client's database; `FLUSHALL`: of all the tenant's databases.
pub(super) fn flush(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    // Redis 7.0's `getFlushCommandFlags`: one optional ASYNC or SYNC, anything else a
    // syntax error.
    let n = cmd.len();
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    if n > 2
        || n == 2 && !arg(1).eq_ignore_ascii_case(b"async") && !arg(1).eq_ignore_ascii_case(b"sync")
    {
        return write_error(out, SYNTAX);
    }
    stats::inc(&ctx.stats.cmd_flush);
    if c.name == "flushdb" {
        ctx.engine.flush_db(s.tenant);
    } else {
        ctx.engine.flush(s.tenant, 0);
    }
    crate::notify::flushed(ctx, s.tenant, s.id);
    write_simple(out, b"OK");
}

/// `EXPIRE`, `PEXPIRE`, `EXPIREAT` and `PEXPIREAT`.
pub(super) fn expire(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, now, lname) = (s.tenant, ctx.shared.now_ms(), c.name.as_bytes());
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    // The deadline and the "already past" check both count from the precise clock.
    let now = crate::shared::precise_now_ms(now);
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
    let r = ctx.engine.update_any(t, arg(1), |cur, _| {
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
        // A TTL change keeps the value, flags and CAS.
        Ok(Update::Retime { expires_at_ms: Some(at), result: true })
    });
    match r {
        Ok(done) => {
            if done {
                // A deadline already past deletes the key (Redis: `del`).
                notify(ctx, t, GENERIC, if at <= now { "del" } else { "expire" }, arg(1));
            }
            write_integer(out, i64::from(done));
        }
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn scan(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    // Redis reads the cursor with `strtoul`, which takes a leading `+`; so does `str::parse`.
    let Some(cursor) = std::str::from_utf8(arg(1)).ok().and_then(|c| c.parse::<u64>().ok()) else {
        return write_error(out, b"ERR invalid cursor");
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    // `TYPE name`: only keys of that type (none for a name Redis 7.0 does not know).
    let mut only: Option<Option<fridge_engine::Kind>> = None;
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
            only = Some(crate::types::by_name(arg(i + 1)));
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
    match only {
        None => {}
        Some(None) => ctx.keys.clear(),
        Some(Some(kind)) => {
            let (engine, keys) = (&mut *ctx.engine, &mut *ctx.keys);
            keys.retain(|k| engine.kind(t, k) == Some(kind));
        }
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

/// `KEYS pattern`: a pass over the index in bounded steps, yielding to the worker's other
/// connections between them, then the reply written in steps. Linear in the keys visited.
/// The keys found may take at most `max_output_buffer` bytes; a larger reply is refused
/// (SCAN walks any key space).
pub(super) fn keys(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
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
