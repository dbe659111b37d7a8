//! Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HLEN, HEXISTS, HSTRLEN, HGETALL,
//! HKEYS, HVALS, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN (Redis 7.0's replies; `types::hash`
//! is the packed form).
//!
//! A read takes the hash in place (`Worker::get_kind`) and writes its reply from engine
//! memory; a write is one read-modify-write (`Worker::update_kind`) that builds the new hash
//! in the worker's scratch buffer. A hash emptied by HDEL is deleted, as Redis deletes it.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use fridge_engine::{EngineError, TenantId, Update};
use fridge_proto::number::{parse_redis_f64, write_f64, write_i64};
use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_null, write_simple, write_wrong_arity,
};

use super::glob::glob_match;
use super::{NOT_FLOAT, NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify, notify_only};
use crate::keyspace::{GENERIC, HASH as HASH_EVENTS, KEY_MISS};
use crate::session::{Ctx, Session};
use crate::types::HASH;
use crate::types::hash::{Builder, Entry, Hash, same};

/// A hash that would outgrow the largest item.
const TOO_LARGE: &[u8] = b"ERR hash would exceed the item size limit (max-item-size)";
/// HRANDFIELD's count past what Redis takes.
const OUT_OF_RANGE: &[u8] =
    b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// Fields [`Named`] compares one by one; more are looked up in a map.
const FEW: usize = 8;
/// Fields and values up to these sizes, hashes up to this many fields, are the ones Redis 7.0
/// keeps as a listpack (`hash-max-listpack-entries`, `hash-max-listpack-value`):
/// `OBJECT ENCODING` names them so, and `HSCAN` returns them whole.
pub(super) const LISTPACK_ENTRIES: usize = 512;
pub(super) const LISTPACK_VALUE: usize = 64;

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

/// An engine error of a hash write, in Redis's words.
fn write_failed(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => write_error(out, TOO_LARGE),
        e => engine_error(out, e),
    }
}

/// The fields a command names — arguments `first`, `first + step`, … — and which of them an
/// entry of the hash matches: by comparison for a few, through a map for many, so a command
/// naming m fields against a hash of n costs O(n + m), never O(n × m).
struct Named<'c> {
    cmd: &'c Command<'c>,
    first: usize,
    step: usize,
    n: usize,
    /// For a few fields: the fields, compared in place.
    few: [&'c [u8]; FEW],
    /// For many fields: each field's first and last mention (indexes `0..n`).
    map: Option<HashMap<&'c [u8], (usize, usize)>>,
}

impl<'c> Named<'c> {
    fn new(cmd: &'c Command<'c>, first: usize, step: usize) -> Named<'c> {
        let n = (cmd.len().saturating_sub(first)).div_ceil(step);
        let mut named = Named { cmd, first, step, n, few: [&[]; FEW], map: None };
        if n <= FEW {
            for i in 0..n {
                named.few[i] = named.field(i);
            }
        } else {
            let mut map = HashMap::with_capacity(n);
            for i in 0..n {
                map.entry(named.field(i))
                    .and_modify(|e: &mut (usize, usize)| e.1 = i)
                    .or_insert((i, i));
            }
            named.map = Some(map);
        }
        named
    }

    /// The `i`-th field named.
    fn field(&self, i: usize) -> &'c [u8] {
        arg(self.cmd, self.first + i * self.step)
    }

    /// The argument after the `i`-th field (its value).
    fn value(&self, i: usize) -> &'c [u8] {
        arg(self.cmd, self.first + i * self.step + 1)
    }

    /// The last mention of `field`, if named.
    fn last(&self, field: &[u8]) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(field).map(|e| e.1),
            None => (0..self.n).rev().find(|&i| same(self.few[i], field)),
        }
    }

    /// Whether the `i`-th field is its first mention.
    fn is_first(&self, i: usize) -> bool {
        let f = self.field(i);
        match &self.map {
            Some(m) => m.get(f).is_some_and(|e| e.0 == i),
            None => (0..i).all(|j| self.field(j) != f),
        }
    }
}

/// What [`rewrite`] does with one entry of the old hash.
enum Edit<'v> {
    Keep,
    Drop,
    /// Keep the field with this value and deadline.
    Replace(&'v [u8], u64),
}

/// Writes the hash `old` into `b`, each live entry as `edit` says; expired fields are
/// dropped. Runs of kept entries are copied in one piece, so an update of one field of a
/// large hash costs a scan and two copies, not a re-encoding of every field.
fn rewrite<'v>(
    old: &Hash<'_>,
    b: &mut Builder<'_>,
    now: u64,
    mut edit: impl FnMut(&Entry<'_>) -> Edit<'v>,
) {
    // The run of kept entries not yet copied: its bytes and its number of entries.
    let mut run = 0..0;
    let mut run_len = 0;
    for (span, e) in old.spans() {
        let what = if e.expired(now) { Edit::Drop } else { edit(&e) };
        if let Edit::Keep = what {
            if run_len == 0 {
                run.start = span.start;
            }
            run.end = span.end;
            run_len += 1;
            continue;
        }
        b.copy(old.raw(run.clone()), run_len);
        (run, run_len) = (span.end..span.end, 0);
        if let Edit::Replace(value, deadline) = what {
            b.push(Entry { field: e.field, value, deadline });
        }
    }
    b.copy(old.raw(run), run_len);
}

/// Sets the fields `named` names to their values (the last mention wins) in the hash `cur`
/// into `buf`. Returns the number of fields created.
fn set_fields(cur: Option<&[u8]>, named: &Named<'_>, now: u64, buf: &mut Vec<u8>) -> usize {
    let old = Hash::new(cur.unwrap_or_default());
    let mut b = Builder::new(buf, old.timed());
    let mut matched = Matched::new(named.n);
    rewrite(&old, &mut b, now, |e| match named.last(e.field) {
        Some(i) => {
            matched.set(i);
            // A field set again loses its deadline (Redis: HSET persists the field).
            Edit::Replace(named.value(i), 0)
        }
        None => Edit::Keep,
    });
    let mut created = 0;
    for i in 0..named.n {
        if named.is_first(i) {
            let last = named.last(named.field(i)).unwrap_or(i);
            if !matched.get(last) {
                created += 1;
                b.push(Entry { field: named.field(i), value: named.value(last), deadline: 0 });
            }
        }
    }
    b.finish();
    created
}

/// Which of n named fields matched an entry: bits for a few, a vector for many.
enum Matched {
    Few(u64),
    Many(Vec<bool>),
}

impl Matched {
    fn new(n: usize) -> Matched {
        if n <= 64 { Matched::Few(0) } else { Matched::Many(vec![false; n]) }
    }

    fn set(&mut self, i: usize) {
        match self {
            Matched::Few(bits) => *bits |= 1 << i,
            Matched::Many(v) => v[i] = true,
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Matched::Few(bits) => bits & (1 << i) != 0,
            Matched::Many(v) => v[i],
        }
    }
}

fn now_ms(ctx: &Ctx<'_>) -> u64 {
    ctx.engine.now_ms()
}

/// `HSET key field value [field value …]` and `HMSET` (which answers OK).
pub(super) fn hset(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    if cmd.len() % 2 != 0 {
        return write_wrong_arity(out, c.name.as_bytes());
    }
    let (t, key, now) = (s.tenant, arg(cmd, 1), now_ms(ctx));
    let named = Named::new(cmd, 2, 2);
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        let created = set_fields(cur.map(|c| c.value), &named, now, buf);
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        Ok(Update::Write { flags: 0, expires_at_ms, result: created })
    });
    match r {
        Ok(created) => {
            notify(ctx, t, HASH_EVENTS, "hset", key);
            if c.name == "hmset" {
                write_simple(out, b"OK");
            } else {
                write_integer(out, created as i64);
            }
        }
        Err(e) => write_failed(out, e),
    }
}

/// `HSETNX key field value`.
pub(super) fn hsetnx(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, now) = (s.tenant, arg(cmd, 1), now_ms(ctx));
    let named = Named::new(cmd, 2, 2);
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        let value = cur.map(|c| c.value);
        if Hash::new(value.unwrap_or_default()).get(named.field(0), now).is_some() {
            return Ok(Update::Done(false));
        }
        set_fields(value, &named, now, buf);
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        Ok(Update::Write { flags: 0, expires_at_ms, result: true })
    });
    match r {
        Ok(set) => {
            if set {
                notify(ctx, t, HASH_EVENTS, "hset", key);
            }
            write_integer(out, i64::from(set));
        }
        Err(e) => write_failed(out, e),
    }
}

/// `HDEL key field [field …]`.
pub(super) fn hdel(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, now) = (s.tenant, arg(cmd, 1), now_ms(ctx));
    let named = Named::new(cmd, 2, 1);
    let r = ctx.engine.update_kind(t, key, HASH, |cur, buf| {
        let Some(c) = cur else { return Ok(Update::Done((0, false))) };
        let old = Hash::new(c.value);
        let mut b = Builder::new(buf, old.timed());
        let mut deleted = 0;
        rewrite(&old, &mut b, now, |e| {
            if named.last(e.field).is_some() {
                deleted += 1;
                Edit::Drop
            } else {
                Edit::Keep
            }
        });
        let left = b.finish();
        Ok(match (deleted, left) {
            (0, _) => Update::Done((0, false)),
            (_, 0) => Update::Delete((deleted, true)),
            _ => {
                Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: (deleted, false) }
            }
        })
    });
    match r {
        Ok((deleted, emptied)) => {
            if deleted > 0 {
                notify(ctx, t, HASH_EVENTS, "hdel", key);
            }
            if emptied {
                notify(ctx, t, GENERIC, "del", key);
            }
            write_integer(out, deleted as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// Reads `key`'s hash into `f` (at `now`), or answers the miss or WRONGTYPE: `f` is not
/// called for a missing key, and `on_miss` writes the reply instead (after a `keymiss`
/// notification).
fn read_hash(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&mut Vec<u8>, Hash<'_>, u64),
    on_miss: impl FnOnce(&mut Vec<u8>),
) {
    let now = now_ms(ctx);
    match ctx.engine.get_kind(t, key, HASH, |item| f(out, Hash::new(item.value), now)) {
        Ok(Some(())) => {}
        Ok(None) => {
            notify_only(ctx, t, KEY_MISS, "keymiss", key);
            on_miss(out);
        }
        Err(e) => engine_error(out, e),
    }
}

/// `HGET key field`.
pub(super) fn hget(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (v, field) = (s.version, arg(cmd, 2));
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| match h.get(field, now) {
            Some(e) => write_bulk(out, e.value),
            None => write_null(out, v),
        },
        |out| write_null(out, v),
    );
}

/// `HMGET key field [field …]`.
pub(super) fn hmget(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let v = s.version;
    let n = cmd.len() - 2;
    let nulls = |out: &mut Vec<u8>| {
        write_array_header(out, n);
        (0..n).for_each(|_| write_null(out, v));
    };
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| {
            write_array_header(out, n);
            if n > FEW {
                // Many fields: one pass over the hash into a map, not a pass per field.
                let map: HashMap<&[u8], &[u8]> = h.live(now).map(|e| (e.field, e.value)).collect();
                for i in 0..n {
                    match map.get(arg(cmd, 2 + i)) {
                        Some(value) => write_bulk(out, value),
                        None => write_null(out, v),
                    }
                }
                return;
            }
            for i in 0..n {
                match h.get(arg(cmd, 2 + i), now) {
                    Some(e) => write_bulk(out, e.value),
                    None => write_null(out, v),
                }
            }
        },
        nulls,
    );
}

/// `HLEN key`.
pub(super) fn hlen(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| {
            let n = if h.timed() { h.live(now).count() } else { h.len() };
            write_integer(out, n as i64);
        },
        |out| write_integer(out, 0),
    );
}

/// `HEXISTS key field`.
pub(super) fn hexists(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let field = arg(cmd, 2);
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| write_integer(out, i64::from(h.get(field, now).is_some())),
        |out| write_integer(out, 0),
    );
}

/// `HSTRLEN key field`.
pub(super) fn hstrlen(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let field = arg(cmd, 2);
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| write_integer(out, h.get(field, now).map_or(0, |e| e.value.len() as i64)),
        |out| write_integer(out, 0),
    );
}

/// `HGETALL` (a map in RESP3), `HKEYS` and `HVALS`.
pub(super) fn hgetall(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let v = s.version;
    let (fields, values) = match c.name {
        "hkeys" => (true, false),
        "hvals" => (false, true),
        _ => (true, true),
    };
    let header = move |out: &mut Vec<u8>, n: usize| {
        if fields && values { write_map_header(out, v, n) } else { write_array_header(out, n) }
    };
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| {
            header(out, if h.timed() { h.live(now).count() } else { h.len() });
            for e in h.live(now) {
                if fields {
                    write_bulk(out, e.field);
                }
                if values {
                    write_bulk(out, e.value);
                }
            }
        },
        |out| header(out, 0),
    );
}

/// `HINCRBY key field increment`.
pub(super) fn hincrby(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(delta) = int_arg(arg(cmd, 3)) else { return write_error(out, NOT_INTEGER) };
    let mut result = 0;
    let r = incr_field(ctx, s.tenant, cmd, |old, text| {
        let n = match old {
            None => 0,
            Some(v) => int_arg(v).ok_or(&b"ERR hash value is not an integer"[..])?,
        };
        result = n.checked_add(delta).ok_or(&b"ERR increment or decrement would overflow"[..])?;
        write_i64(text, result);
        Ok(())
    });
    match r {
        Ok(Ok(())) => {
            notify(ctx, s.tenant, HASH_EVENTS, "hincrby", arg(cmd, 1));
            write_integer(out, result);
        }
        Ok(Err(reason)) => write_error(out, reason),
        Err(e) => write_failed(out, e),
    }
}

/// `HINCRBYFLOAT key field increment`.
pub(super) fn hincrbyfloat(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(delta) = parse_redis_f64(arg(cmd, 3)) else { return write_error(out, NOT_FLOAT) };
    if !delta.is_finite() {
        return write_error(out, b"ERR value is NaN or Infinity");
    }
    let r = incr_field(ctx, s.tenant, cmd, |old, text| {
        let n = match old {
            None => 0.0,
            Some(v) => parse_redis_f64(v)
                .filter(|n| n.is_finite())
                .ok_or(&b"ERR hash value is not a float"[..])?,
        };
        let n = n + delta;
        if !n.is_finite() {
            return Err(&b"ERR increment would produce NaN or Infinity"[..]);
        }
        write_f64(text, n);
        Ok(())
    });
    match r {
        Ok(Ok(())) => {
            notify(ctx, s.tenant, HASH_EVENTS, "hincrbyfloat", arg(cmd, 1));
            write_bulk(out, ctx.scratch);
        }
        Ok(Err(reason)) => write_error(out, reason),
        Err(e) => write_failed(out, e),
    }
}

/// Replaces the field `cmd` names (argument 2) of the hash at argument 1 with the text `f`
/// writes (into `ctx.scratch`, where it stays) from its current value (`None` if the hash
/// lacks it), or returns `f`'s refusal.
fn incr_field(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    cmd: &Command<'_>,
    mut f: impl FnMut(Option<&[u8]>, &mut Vec<u8>) -> Result<(), &'static [u8]>,
) -> Result<Result<(), &'static [u8]>, EngineError> {
    let (key, field, now) = (arg(cmd, 1), arg(cmd, 2), now_ms(ctx));
    let (engine, text) = (&mut *ctx.engine, &mut *ctx.scratch);
    engine.update_kind(t, key, HASH, |cur, buf| {
        let old = Hash::new(cur.map_or(&[][..], |c| c.value));
        text.clear();
        if let Err(reason) = f(old.get(field, now).map(|e| e.value), text) {
            return Ok(Update::Done(Err(reason)));
        }
        let mut b = Builder::new(buf, old.timed());
        let mut found = false;
        rewrite(&old, &mut b, now, |e| {
            if same(e.field, field) {
                found = true;
                // The field keeps its deadline (Redis: HINCRBY does not persist it).
                Edit::Replace(text, e.deadline)
            } else {
                Edit::Keep
            }
        });
        if !found {
            b.push(Entry { field, value: text, deadline: 0 });
        }
        b.finish();
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        Ok(Update::Write { flags: 0, expires_at_ms, result: Ok(()) })
    })
}

/// A random number generator for HRANDFIELD (xorshift64*, seeded per call).
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Rng(seed | 1)
    }

    /// A number below `n` (> 0).
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
pub(super) fn hrandfield(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    if cmd.len() == 2 {
        return read_hash(
            out,
            ctx,
            t,
            key,
            |out, h, now| {
                let live: Vec<Entry<'_>> = h.live(now).collect();
                match live.len() {
                    0 => write_null(out, v),
                    n => write_bulk(out, live[Rng::new().below(n)].field),
                }
            },
            |out| write_null(out, v),
        );
    }
    let count = match int_arg(arg(cmd, 2)) {
        Some(n) if n > -i64::MAX => n,
        Some(_) => return write_error(out, OUT_OF_RANGE),
        None => return write_error(out, NOT_INTEGER),
    };
    let with_values = match cmd.len() {
        3 => false,
        4 if arg(cmd, 3).eq_ignore_ascii_case(b"withvalues") => true,
        _ => return write_error(out, SYNTAX),
    };
    let (unique, count) = (count >= 0, count.unsigned_abs());
    if with_values && count > (i64::MAX / 2) as u64 {
        return write_error(out, OUT_OF_RANGE);
    }
    read_hash(
        out,
        ctx,
        t,
        key,
        |out, h, now| {
            let live: Vec<Entry<'_>> = h.live(now).collect();
            let picks: Vec<usize> = if count == 0 || live.is_empty() {
                Vec::new()
            } else if !unique {
                let mut rng = Rng::new();
                (0..count).map(|_| rng.below(live.len())).collect()
            } else if count as usize >= live.len() {
                (0..live.len()).collect()
            } else {
                // A partial Fisher–Yates shuffle: `count` distinct entries.
                let mut rng = Rng::new();
                let mut order: Vec<usize> = (0..live.len()).collect();
                for i in 0..count as usize {
                    let j = i + rng.below(live.len() - i);
                    order.swap(i, j);
                }
                order.truncate(count as usize);
                order
            };
            write_pairs(out, v, with_values, picks.iter().map(|&i| live[i]));
        },
        |out| write_array_header(out, 0),
    );
}

/// Fields (with their values: pairs in RESP3, flat in RESP2) as HRANDFIELD answers them.
fn write_pairs<'e>(
    out: &mut Vec<u8>,
    v: Version,
    with_values: bool,
    entries: impl ExactSizeIterator<Item = Entry<'e>>,
) {
    let n = entries.len();
    let resp3_pairs = with_values && v == Version::Resp3;
    write_array_header(out, if with_values && !resp3_pairs { 2 * n } else { n });
    for e in entries {
        if resp3_pairs {
            write_array_header(out, 2);
        }
        write_bulk(out, e.field);
        if with_values {
            write_bulk(out, e.value);
        }
    }
}

/// Whether Redis would keep this hash as a listpack: few fields, all short.
pub(super) fn is_listpack(h: &Hash<'_>) -> bool {
    h.len() <= LISTPACK_ENTRIES
        && h.iter().all(|e| e.field.len() <= LISTPACK_VALUE && e.value.len() <= LISTPACK_VALUE)
}

/// A field's position in HSCAN's order: a fixed hash of its bytes.
fn scan_order(field: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    h.write(field);
    // 0 is the cursor that starts (and ends) a scan.
    h.finish().max(1)
}

/// Calls HSCAN makes at most over a large hash, whatever its COUNT: each call returns at
/// least 1/`SCAN_CALLS` of the fields, so a whole scan costs O(fields), not O(fields²/COUNT).
const SCAN_CALLS: usize = 64;

/// `HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]`. A hash Redis would keep as a
/// listpack comes back whole with cursor 0, as Redis answers; a larger one in the order of
/// its fields' hashes, the cursor being the next hash to return — so a field present for the
/// whole scan is returned, however the hash changes between calls.
pub(super) fn hscan(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(cursor) = std::str::from_utf8(arg(cmd, 2)).ok().and_then(|c| c.parse::<u64>().ok())
    else {
        return write_error(out, b"ERR invalid cursor");
    };
    let (mut pattern, mut count, mut values) = (None, 10usize, true);
    let mut i = 3;
    while i < cmd.len() {
        let o = arg(cmd, i);
        if o.eq_ignore_ascii_case(b"novalues") {
            values = false;
            i += 1;
            continue;
        }
        if i + 1 >= cmd.len() {
            return write_error(out, SYNTAX);
        }
        if o.eq_ignore_ascii_case(b"match") {
            pattern = Some(arg(cmd, i + 1));
        } else if o.eq_ignore_ascii_case(b"count") {
            match int_arg(arg(cmd, i + 1)) {
                Some(c) if c >= 1 => count = usize::try_from(c).unwrap_or(usize::MAX),
                Some(_) => return write_error(out, SYNTAX),
                None => return write_error(out, NOT_INTEGER),
            }
        } else {
            return write_error(out, SYNTAX);
        }
        i += 2;
    }
    let keep = |e: &Entry<'_>| pattern.is_none_or(|p| glob_match(p, e.field));
    let write = |out: &mut Vec<u8>, next: u64, picked: &[Entry<'_>]| {
        write_array_header(out, 2);
        write_bulk(out, next.to_string().as_bytes());
        write_array_header(out, picked.len() * if values { 2 } else { 1 });
        for e in picked {
            write_bulk(out, e.field);
            if values {
                write_bulk(out, e.value);
            }
        }
    };
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| {
            if is_listpack(&h) {
                let all: Vec<Entry<'_>> = h.live(now).filter(keep).collect();
                return write(out, 0, &all);
            }
            let mut next: Vec<(u64, Entry<'_>)> = h
                .live(now)
                .map(|e| (scan_order(e.field), e))
                .filter(|(o, _)| *o >= cursor)
                .collect();
            let take = count.max(h.len().div_ceil(SCAN_CALLS));
            if next.len() > take {
                next.select_nth_unstable_by_key(take, |(o, _)| *o);
            }
            let mut picked = next;
            let cut = picked.len().min(take);
            // Fields with the hash of the first one left out are left out together.
            let next_cursor = if picked.len() > take {
                let rest = picked[cut..].iter().map(|(o, _)| *o).min().unwrap_or(0);
                picked.retain(|(o, _)| *o < rest);
                rest
            } else {
                0
            };
            picked.sort_unstable_by_key(|(o, _)| *o);
            let entries: Vec<Entry<'_>> =
                picked.into_iter().map(|(_, e)| e).filter(|e| keep(e)).collect();
            write(out, next_cursor, &entries);
        },
        |out| write(out, 0, &[]),
    );
}

#[cfg(test)]
mod tests {
    use super::{Edit, rewrite};
    use crate::types::hash::{Builder, Entry, Hash};

    fn packed(timed: bool, fields: &[(&str, &str, u64)]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut b = Builder::new(&mut buf, timed);
        for &(field, value, deadline) in fields {
            b.push(Entry { field: field.as_bytes(), value: value.as_bytes(), deadline });
        }
        b.finish();
        buf
    }

    #[test]
    fn a_rewrite_copies_kept_runs_whole_and_equals_an_entry_by_entry_build() {
        for timed in [false, true] {
            let d = |n: u64| if timed { n } else { 0 };
            let old = packed(
                timed,
                &[
                    ("a", "1", 0),
                    ("b", "2", d(5)),
                    ("c", "3", 0),
                    ("d", "4", 0),
                    ("e", "5", d(50)),
                    ("f", "6", 0),
                ],
            );
            let mut buf = Vec::new();
            let mut b = Builder::new(&mut buf, timed);
            rewrite(&Hash::new(&old), &mut b, 10, |e| match e.field {
                b"c" => Edit::Drop,
                b"e" => Edit::Replace(b"five", 7),
                _ => Edit::Keep,
            });
            b.finish();
            // "b" expired at 5 when timed.
            let want = if timed {
                packed(true, &[("a", "1", 0), ("d", "4", 0), ("e", "five", 7), ("f", "6", 0)])
            } else {
                packed(
                    false,
                    &[("a", "1", 0), ("b", "2", 0), ("d", "4", 0), ("e", "five", 0), ("f", "6", 0)],
                )
            };
            assert_eq!(buf, want, "timed: {timed}");
        }
    }
}
