//! Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HLEN, HEXISTS, HSTRLEN, HGETALL,
//! HKEYS, HVALS, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN (Redis 7.0's replies; `types::hash`
//! is the packed form).
//!
//! A read takes the hash in place (`Worker::get_kind`) and writes its reply from engine
//! memory; a write is one read-modify-write (`Worker::update_kind`) that builds the new hash
//! in the worker's scratch buffer. A hash emptied by HDEL is deleted, as Redis deletes it.

use std::collections::HashMap;

use fridge_engine::{EngineError, Splice, TenantId, Update};
use fridge_proto::long_double::LongDouble;
use fridge_proto::number::write_i64;
use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_null, write_simple, write_wrong_arity,
};

use super::packed::{
    Edit, FEW, Matched, Named, ScanOptions, random_picks, rewrite, scan_select, write_random_field,
    write_scan,
};
use super::{NOT_FLOAT, NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify};
use crate::keyspace::{GENERIC, HASH as HASH_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::HASH;
use crate::types::hash::{Builder, Entry, Hash, Place, write_one};

/// A hash that would outgrow the largest item.
const TOO_LARGE: &[u8] = b"ERR hash would exceed the item size limit (max-item-size)";
/// HRANDFIELD's count past what Redis takes.
pub(super) const OUT_OF_RANGE: &[u8] =
    b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
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

/// HSET of one field, the common case: the field found by one tight pass (or through the
/// index), the new hash written as the old one with that entry replaced (or one appended).
/// Returns whether the field was created.
fn set_one(
    cur: Option<&[u8]>,
    field: &[u8],
    value: &[u8],
    now: u64,
    buf: &mut Vec<u8>,
    splice: &mut Splice,
) -> usize {
    let bytes = cur.unwrap_or_default();
    let old = Hash::new(bytes);
    // A field set again loses its deadline (Redis: HSET persists the field).
    let new = Entry { field, value, deadline: 0 };
    let found = old.find_ranked(field);
    let created = found.as_ref().is_none_or(|((_, e), _)| e.expired(now));
    let removed = found.map(|((span, _), rank)| (span, rank));
    write_one(old, bytes, removed, Some(new), Place::Replaced, buf, splice);
    usize::from(created)
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
    b.finish_indexed();
    created
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
    let r = ctx.engine.update_kind_spliced(t, key, HASH, |cur, buf, splice| {
        let created = if named.n == 1 {
            set_one(cur.map(|c| c.value), named.field(0), named.value(0), now, buf, splice)
        } else {
            set_fields(cur.map(|c| c.value), &named, now, buf)
        };
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
    let (field, value) = (named.field(0), named.value(0));
    let r = ctx.engine.update_kind_spliced(t, key, HASH, |cur, buf, splice| {
        let bytes = cur.map_or(&[][..], |c| c.value);
        let old = Hash::new(bytes);
        let found = old.find_ranked(field);
        if found.as_ref().is_some_and(|((_, e), _)| !e.expired(now)) {
            return Ok(Update::Done(false));
        }
        // An expired field is taken out and the new one goes last, as in Redis.
        let removed = found.map(|((span, _), rank)| (span, rank));
        let new = Entry { field, value, deadline: 0 };
        write_one(old, bytes, removed, Some(new), Place::Last, buf, splice);
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
    let r = ctx.engine.update_kind_spliced(t, key, HASH, |cur, buf, splice| {
        let Some(c) = cur else { return Ok(Update::Done((0, false))) };
        let old = Hash::new(c.value);
        if named.n == 1 && !old.timed() {
            // One field of a hash without deadlines (where no other field can be found expired
            // and go with it): the runs around it copied, its index edited.
            let Some(((span, _), rank)) = old.find_ranked(named.field(0)) else {
                return Ok(Update::Done((0, false)));
            };
            if old.len() == 1 {
                return Ok(Update::Delete((1, true)));
            }
            write_one(old, c.value, Some((span, rank)), None, Place::Last, buf, splice);
            return Ok(Update::Write {
                flags: 0,
                expires_at_ms: c.expires_at_ms,
                result: (1, false),
            });
        }
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
        let left = b.finish_indexed();
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
    super::packed::read(out, ctx, (t, key, HASH), |out, h| f(out, h, now), on_miss);
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
    // In the C `long double`, as Redis 7.0 on x86-64 (`fridge_proto::long_double`); the
    // increment is read before the key's type is checked.
    let Some(delta) = LongDouble::parse(arg(cmd, 3)) else { return write_error(out, NOT_FLOAT) };
    if !delta.is_finite() {
        return write_error(out, b"ERR value is NaN or Infinity");
    }
    let r = incr_field(ctx, s.tenant, cmd, |old, text| {
        let n = match old {
            None => LongDouble::ZERO,
            // A stored infinity is a float (and makes the sum infinite).
            Some(v) => LongDouble::parse(v).ok_or(&b"ERR hash value is not a float"[..])?,
        };
        let n = n.checked_add(delta).ok_or(&b"ERR increment would produce NaN or Infinity"[..])?;
        n.write(text);
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
    engine.update_kind_spliced(t, key, HASH, |cur, buf, splice| {
        let bytes = cur.map_or(&[][..], |c| c.value);
        let old = Hash::new(bytes);
        let found = old.find_ranked(field);
        let live = found.as_ref().filter(|((_, e), _)| !e.expired(now)).map(|((_, e), _)| *e);
        text.clear();
        if let Err(reason) = f(live.map(|e| e.value), text) {
            return Ok(Update::Done(Err(reason)));
        }
        // The field keeps its place and its deadline (Redis: HINCRBY does not persist it); an
        // expired one is taken out and the new one goes last.
        let (deadline, place) = live.map_or((0, Place::Last), |e| (e.deadline, Place::Replaced));
        let removed = found.map(|((span, _), rank)| (span, rank));
        let new = Entry { field, value: text, deadline };
        write_one(old, bytes, removed, Some(new), place, buf, splice);
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        Ok(Update::Write { flags: 0, expires_at_ms, result: Ok(()) })
    })
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
            |out, h, now| write_random_field(out, v, h.live(now)),
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
            let picks = random_picks(live.len(), count, unique);
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
    let o = match ScanOptions::parse(cmd, 2, true) {
        Ok(o) => o,
        Err(e) => return write_error(out, e),
    };
    let per = if o.values { 2 } else { 1 };
    read_hash(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h, now| {
            let (next, page) = scan_select(h.live(now), h.len(), is_listpack(&h), &o);
            write_scan(out, next, per * page.len(), |out| {
                for e in &page {
                    write_bulk(out, e.field);
                    if o.values {
                        write_bulk(out, e.value);
                    }
                }
            });
        },
        |out| write_scan(out, 0, 0, |_| ()),
    );
}

#[cfg(test)]
mod tests {
    use fridge_engine::Splice;

    use super::set_one;
    use crate::resp::packed::{Edit, rewrite};
    use crate::types::hash::{Builder, Hash, Place, write_one};
    use crate::types::{damaged, index, xorshift};

    /// The hash `value` holds, in its order.
    fn entries(value: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        Hash::new(value).iter().map(|e| (e.field.to_vec(), e.value.to_vec())).collect()
    }

    /// The value a write left in `buf` and `splice`, made from `old`.
    fn written(old: &[u8], buf: &[u8], splice: &Splice) -> Vec<u8> {
        if splice.is_empty() {
            return buf.to_vec();
        }
        let mut joined = Vec::new();
        splice.join(old, buf, &mut joined);
        joined
    }

    #[test]
    fn one_field_writes_agree_with_a_model_and_keep_a_large_hashs_index_exact() {
        // Random one-field writes as the commands make them — HSET of a new or present field
        // (replaced where it stands), a field taken out and put last (HSETNX or HINCRBY over an
        // expired field), HDEL of one field — on a hash that grows from nothing past the
        // index's threshold and back below it, with fields now and then dropped by a whole
        // rewrite (HDEL of several fields, HEXPIRE): after every step the hash is the model's,
        // in insertion order, its index describes it exactly, and it has one just when it
        // has the threshold's entries. Both formats, short and long fields and values.
        for timed in [false, true] {
            let mut next = xorshift(0x2545_F491_4F6C_DD1D ^ u64::from(timed));
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut value: Vec<u8> = Vec::new();
            Builder::new(&mut value, timed).finish();
            let (mut indexed, mut buf, mut splice) = (0, Vec::new(), Splice::default());
            let (mut was_indexed, mut crossings) = (false, 0);
            for step in 0..12_000u64 {
                let universe = match step {
                    0..6_000 => 1 + step / 16,
                    6_000..9_000 => 140,
                    _ => 400,
                };
                let n = next() % universe;
                let field = if n % 17 == 0 {
                    format!("{n}:{}", "f".repeat(150)).into_bytes()
                } else {
                    format!("field:{n:05}").into_bytes()
                };
                let len = if next() % 9 == 0 { 200 } else { (next() % 12) as usize };
                let v = vec![b'a' + (step % 26) as u8; len];
                let at = model.iter().position(|(f, _)| *f == field);
                let h = Hash::new(&value);
                let found = h.find_ranked(&field);
                assert_eq!(found.as_ref().map(|((_, e), _)| e.field), at.map(|_| &field[..]));
                let removed = found.map(|((span, _), rank)| (span, rank));
                match next() % 100 {
                    0..55 => {
                        let created = set_one(Some(&value), &field, &v, 0, &mut buf, &mut splice);
                        assert_eq!(created, usize::from(at.is_none()), "step {step}");
                        match at {
                            Some(i) => model[i].1 = v,
                            None => model.push((field, v)),
                        }
                    }
                    55..75 => {
                        let new =
                            crate::types::hash::Entry { field: &field, value: &v, deadline: 0 };
                        write_one(
                            h,
                            &value,
                            removed,
                            Some(new),
                            Place::Last,
                            &mut buf,
                            &mut splice,
                        );
                        if let Some(i) = at {
                            model.remove(i);
                        }
                        model.push((field, v));
                    }
                    75..99 => {
                        if at.is_none() {
                            continue;
                        }
                        write_one(h, &value, removed, None, Place::Last, &mut buf, &mut splice);
                        model.retain(|(f, _)| *f != field);
                    }
                    _ => {
                        let drop = next() % 7;
                        let mut i = 0u64;
                        let mut b = Builder::new(&mut buf, timed);
                        rewrite(&h, &mut b, 0, |_| {
                            i += 1;
                            if i % 7 == drop { Edit::Drop } else { Edit::Keep }
                        });
                        b.finish_indexed();
                        splice.clear();
                        let mut i = 0u64;
                        model.retain(|_| {
                            i += 1;
                            i % 7 != drop
                        });
                    }
                }
                value = written(&value, &buf, &splice);
                Hash::validate_index(&value);
                let h = Hash::new(&value);
                assert_eq!(h.timed(), timed);
                indexed += usize::from(h.index().is_some());
                crossings += usize::from(h.index().is_some() != was_indexed);
                was_indexed = h.index().is_some();
                assert_eq!(h.index().is_some(), model.len() >= index::MIN_ENTRIES, "step {step}");
                assert_eq!(entries(&value), model, "step {step}");
                for (f, v) in model.iter().rev().take(3) {
                    assert_eq!(h.get(f, 0).map(|e| e.value), Some(&v[..]));
                }
            }
            assert!(indexed > 4_000, "the index was exercised: {indexed} steps");
            assert!(crossings >= 4, "the threshold crossed both ways: {crossings} times");
        }
    }

    #[test]
    fn damaged_indexed_hashes_read_and_write_without_a_panic() {
        // An indexed hash with random bytes changed anywhere: every read stays within the
        // bytes, and a one-field write or removal either passes over the index or rebuilds it.
        let fields: Vec<Vec<u8>> = (0..300).map(|i| format!("f{i:04}").into_bytes()).collect();
        let mut valid = Vec::new();
        let mut b = Builder::new(&mut valid, false);
        for f in &fields {
            b.push(crate::types::hash::Entry { field: f, value: b"value", deadline: 0 });
        }
        b.finish_indexed();
        assert!(Hash::new(&valid).index().is_some());
        let mut next = xorshift(0xDEAD_BEEF_CAFE_F00D);
        let (mut buf, mut splice) = (Vec::new(), Splice::default());
        for _ in 0..6_000 {
            let v = damaged(&valid, &mut next);
            let h = Hash::new(&v);
            let f = &fields[(next() % 300) as usize];
            assert!(h.find(f).is_none_or(|(span, _)| span.end <= v.len()));
            if next() % 2 == 0 {
                set_one(Some(&v), f, b"new", 0, &mut buf, &mut splice);
            } else if let Some(((span, _), rank)) = h.find_ranked(f) {
                write_one(h, &v, Some((span, rank)), None, Place::Last, &mut buf, &mut splice);
            }
            let out = written(&v, &buf, &splice);
            let _ = Hash::new(&out).iter().count();
        }
    }
}
