//! Set commands: SADD, SREM, SISMEMBER, SMISMEMBER, SMEMBERS, SCARD, SPOP, SRANDMEMBER,
//! SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE, SSCAN
//! (Redis 7.0's replies). A set is packed as a hash with empty values (`types::SET`), so it
//! shares the hash's reads, rewrites and scans (`packed.rs`).
//!
//! The commands over several keys (SINTER…, SMOVE) read each set in its own engine call and
//! compute on copies: like every multi-key command here they are not one atomic step.

use std::collections::HashSet;

use fridge_engine::{Condition, EngineError, Expiry, Store, TenantId, Update};
use fridge_proto::number::parse_redis_i64;
use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_null,
    write_set_header,
};

use super::packed::{
    Edit, Named, ScanOptions, random_picks, rewrite, scan_select, write_random_field, write_scan,
};
use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify};
use crate::keyspace::{GENERIC, SET as SET_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::SET;
use crate::types::hash::{Builder, Entry, Hash, Place, write_one};

/// A set that would outgrow the largest item.
const TOO_LARGE: &[u8] = b"ERR set would exceed the item size limit (max-item-size)";
/// Members up to this many, all integers, are a set Redis 7.0 keeps as an intset
/// (`set-max-intset-entries`): `OBJECT ENCODING` names it so, and `SSCAN` returns it whole.
const INTSET_ENTRIES: usize = 512;

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

fn write_failed(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => write_error(out, TOO_LARGE),
        e => engine_error(out, e),
    }
}

fn member(field: &[u8]) -> Entry<'_> {
    Entry { field, value: b"", deadline: 0 }
}

/// Whether Redis would keep this set as an intset.
pub(super) fn is_intset(h: &Hash<'_>) -> bool {
    h.len() <= INTSET_ENTRIES && h.iter().all(|e| parse_redis_i64(e.field).is_some())
}

/// Reads `key`'s set into `f`, or answers WRONGTYPE; a missing key calls `on_miss` (after a
/// `keymiss` notification).
fn read_set(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&mut Vec<u8>, Hash<'_>),
    on_miss: impl FnOnce(&mut Vec<u8>),
) {
    super::packed::read(out, ctx, (t, key, SET), f, on_miss);
}

/// `key`'s members, copied; `None` for a missing key.
fn members_of(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
) -> Result<Option<Vec<Vec<u8>>>, EngineError> {
    ctx.engine.get_kind(t, key, SET, |item| {
        Hash::new(item.value).iter().map(|e| e.field.to_vec()).collect()
    })
}

/// `SADD key member [member …]`.
pub(super) fn sadd(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let named = Named::new(cmd, 2, 1);
    let r = ctx.engine.update_kind_spliced(t, key, SET, |cur, buf, splice| {
        let bytes = cur.map_or(&[][..], |c| c.value);
        let old = Hash::new(bytes);
        // Members the set has already: a scan, and no write (the common SADD of a cache's tag
        // set).
        if cur.is_some()
            && named.n <= super::packed::FEW
            && (0..named.n).all(|i| old.get(named.field(i), 0).is_some())
        {
            return Ok(Update::Done(0));
        }
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        if named.n == 1 {
            // One member the set lacks (just checked): appended after the runs of the old set
            // (and its index edited, from index::MIN_ENTRIES members).
            write_one(old, bytes, None, Some(member(named.field(0))), Place::Last, buf, splice);
            return Ok(Update::Write { flags: 0, expires_at_ms, result: 1 });
        }
        let mut b = Builder::new(buf, false);
        let mut present = super::packed::Matched::new(named.n);
        rewrite(&old, &mut b, 0, |e| {
            if let Some(i) = named.last(e.field) {
                present.set(i);
            }
            Edit::Keep
        });
        let mut added = 0;
        for i in 0..named.n {
            let last = named.last(named.field(i)).unwrap_or(i);
            if named.is_first(i) && !present.get(last) {
                added += 1;
                b.push(member(named.field(i)));
            }
        }
        b.finish_indexed();
        if added == 0 && cur.is_some() {
            return Ok(Update::Done(0));
        }
        Ok(Update::Write { flags: 0, expires_at_ms, result: added })
    });
    match r {
        Ok(added) => {
            if added > 0 {
                notify(ctx, t, SET_EVENTS, "sadd", key);
            }
            write_integer(out, added as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// Removes the members `pick` chooses from `key`'s set (deleting a set it empties): returns
/// the removed members' count and whether the set was deleted.
fn remove_members<F: Fn(&[u8]) -> bool>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    mut pick: impl FnMut(&Hash<'_>) -> F,
) -> Result<(usize, bool), EngineError> {
    ctx.engine.update_kind(t, key, SET, |cur, buf| {
        let Some(c) = cur else { return Ok(Update::Done((0, false))) };
        let old = Hash::new(c.value);
        let chosen = pick(&old);
        let mut b = Builder::new(buf, false);
        let mut removed = 0;
        rewrite(&old, &mut b, 0, |e| {
            if chosen(e.field) {
                removed += 1;
                Edit::Drop
            } else {
                Edit::Keep
            }
        });
        let left = b.finish_indexed();
        Ok(match (removed, left) {
            (0, _) => Update::Done((0, false)),
            (_, 0) => Update::Delete((removed, true)),
            _ => {
                Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: (removed, false) }
            }
        })
    })
}

/// Publishes a removal's events: `event` on the set, `del` if it was emptied.
fn removed_events(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], event: &str, n: usize, gone: bool) {
    if n > 0 {
        notify(ctx, t, SET_EVENTS, event, key);
    }
    if gone {
        notify(ctx, t, GENERIC, "del", key);
    }
}

/// `SREM key member [member …]`.
pub(super) fn srem(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let named = Named::new(cmd, 2, 1);
    let removed = if named.n == 1 {
        super::packed::remove_one(ctx, t, (key, SET), named.field(0))
    } else {
        remove_members(ctx, t, key, |_| |m: &[u8]| named.last(m).is_some())
    };
    match removed {
        Ok((n, gone)) => {
            removed_events(ctx, t, key, "srem", n, gone);
            write_integer(out, n as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// `SISMEMBER key member`.
pub(super) fn sismember(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let m = arg(cmd, 2);
    read_set(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| write_integer(out, i64::from(h.get(m, 0).is_some())),
        |out| write_integer(out, 0),
    );
}

/// `SMISMEMBER key member [member …]`.
pub(super) fn smismember(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let n = cmd.len() - 2;
    read_set(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            write_array_header(out, n);
            if n > super::packed::FEW {
                let all: HashSet<&[u8]> = h.iter().map(|e| e.field).collect();
                (0..n).for_each(|i| write_integer(out, i64::from(all.contains(arg(cmd, 2 + i)))));
            } else {
                (0..n).for_each(|i| {
                    write_integer(out, i64::from(h.get(arg(cmd, 2 + i), 0).is_some()))
                });
            }
        },
        |out| {
            write_array_header(out, n);
            (0..n).for_each(|_| write_integer(out, 0));
        },
    );
}

/// `SCARD key`.
pub(super) fn scard(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    read_set(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| write_integer(out, h.len() as i64),
        |out| write_integer(out, 0),
    );
}

/// Writes members as a set reply (`~` in RESP3).
fn write_members<'m>(
    out: &mut Vec<u8>,
    v: Version,
    members: impl ExactSizeIterator<Item = &'m [u8]>,
) {
    write_set_header(out, v, members.len());
    members.for_each(|m| write_bulk(out, m));
}

/// `SMEMBERS key`.
pub(super) fn smembers(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let v = s.version;
    read_set(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            write_set_header(out, v, h.len());
            h.iter().for_each(|e| write_bulk(out, e.field));
        },
        |out| write_set_header(out, v, 0),
    );
}

/// `SRANDMEMBER key [count]`.
pub(super) fn srandmember(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    if cmd.len() == 2 {
        return read_set(
            out,
            ctx,
            t,
            key,
            |out, h| write_random_field(out, v, h.iter()),
            |out| write_null(out, v),
        );
    }
    if cmd.len() > 3 {
        return write_error(out, SYNTAX);
    }
    let count = match int_arg(arg(cmd, 2)) {
        Some(n) if n > -i64::MAX => n,
        Some(_) => return write_error(out, super::hashes::OUT_OF_RANGE),
        None => return write_error(out, NOT_INTEGER),
    };
    let (unique, count) = (count >= 0, count.unsigned_abs());
    read_set(
        out,
        ctx,
        t,
        key,
        |out, h| {
            let all: Vec<&[u8]> = h.iter().map(|e| e.field).collect();
            let picks = random_picks(all.len(), count, unique);
            write_array_header(out, picks.len());
            picks.iter().for_each(|&i| write_bulk(out, all[i]));
        },
        |out| write_array_header(out, 0),
    );
}

/// `SPOP key [count]`.
pub(super) fn spop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    let count = match cmd.len() {
        2 => None,
        3 => match int_arg(arg(cmd, 2)) {
            Some(n) if n >= 0 => Some(n.unsigned_abs()),
            _ => return write_error(out, b"ERR value is out of range, must be positive"),
        },
        _ => return write_error(out, SYNTAX),
    };
    let mut popped: Vec<Vec<u8>> = Vec::new();
    let r = remove_members(ctx, t, key, |h| {
        let all: Vec<&[u8]> = h.iter().map(|e| e.field).collect();
        let picks = random_picks(all.len(), count.unwrap_or(1), true);
        popped = picks.iter().map(|&i| all[i].to_vec()).collect();
        let chosen: HashSet<Vec<u8>> = popped.iter().cloned().collect();
        move |m: &[u8]| chosen.contains(m)
    });
    match r {
        Ok((n, gone)) => {
            removed_events(ctx, t, key, "spop", n, gone);
            match count {
                None if popped.is_empty() => write_null(out, v),
                None => write_bulk(out, &popped[0]),
                Some(_) => write_members(out, v, popped.iter().map(Vec::as_slice)),
            }
        }
        Err(e) => write_failed(out, e),
    }
}

/// `SMOVE source destination member`.
pub(super) fn smove(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, src, dst, m) = (s.tenant, arg(cmd, 1), arg(cmd, 2), arg(cmd, 3));
    let has = match ctx.engine.get_kind(t, src, SET, |i| Hash::new(i.value).get(m, 0).is_some()) {
        Ok(Some(has)) => has,
        Ok(None) => return write_integer(out, 0),
        Err(e) => return engine_error(out, e),
    };
    if ctx.engine.kind(t, dst).is_some_and(|k| k != SET) {
        return engine_error(out, EngineError::WrongKind);
    }
    if src == dst || !has {
        return write_integer(out, i64::from(has));
    }
    let (n, gone) = match super::packed::remove_one(ctx, t, (src, SET), m) {
        Ok(r) => r,
        Err(e) => return write_failed(out, e),
    };
    if n == 0 {
        return write_integer(out, 0);
    }
    removed_events(ctx, t, src, "srem", n, gone);
    let added = ctx.engine.update_kind(t, dst, SET, |cur, buf| {
        let old = Hash::new(cur.map_or(&[][..], |c| c.value));
        if old.get(m, 0).is_some() {
            return Ok(Update::Done(false));
        }
        let mut b = Builder::new(buf, false);
        rewrite(&old, &mut b, 0, |_| Edit::Keep);
        b.push(member(m));
        b.finish_indexed();
        Ok(Update::Write {
            flags: 0,
            expires_at_ms: cur.and_then(|c| c.expires_at_ms),
            result: true,
        })
    });
    match added {
        Ok(added) => {
            if added {
                notify(ctx, t, SET_EVENTS, "sadd", dst);
            }
            write_integer(out, 1);
        }
        Err(e) => write_failed(out, e),
    }
}

/// Which algebra SINTER…, SUNION… and SDIFF… apply.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The sets at `keys`, each `None` where the key is missing; WRONGTYPE if any is not a set
/// (Redis checks every key before it computes).
fn read_sets(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    keys: &[&[u8]],
) -> Result<Vec<Option<Vec<Vec<u8>>>>, EngineError> {
    keys.iter().map(|k| members_of(ctx, t, k)).collect()
}

/// The result of `op` over `sets`, in the order of the first set's members (SINTER: of the
/// smallest, as Redis walks it).
fn combine(op: Op, sets: Vec<Option<Vec<Vec<u8>>>>, limit: usize) -> Vec<Vec<u8>> {
    match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return Vec::new();
            }
            let mut sets: Vec<Vec<Vec<u8>>> = sets.into_iter().flatten().collect();
            sets.sort_by_key(Vec::len);
            let mut sets = sets.into_iter();
            let Some(first) = sets.next() else { return Vec::new() };
            let others: Vec<HashSet<Vec<u8>>> = sets.map(|s| s.into_iter().collect()).collect();
            let mut out = Vec::new();
            for m in first {
                if out.len() >= limit {
                    break;
                }
                if others.iter().all(|o| o.contains(&m)) {
                    out.push(m);
                }
            }
            out
        }
        Op::Union => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for m in sets.into_iter().flatten().flatten() {
                if seen.insert(m.clone()) {
                    out.push(m);
                }
            }
            out
        }
        Op::Diff => {
            let mut sets = sets.into_iter();
            let Some(Some(first)) = sets.next() else { return Vec::new() };
            let others: HashSet<Vec<u8>> = sets.flatten().flatten().collect();
            let mut seen = HashSet::new();
            first.into_iter().filter(|m| !others.contains(m) && seen.insert(m.clone())).collect()
        }
    }
}

fn op_of(name: &str) -> Op {
    match name.as_bytes()[1] {
        b'i' => Op::Inter,
        b'u' => Op::Union,
        _ => Op::Diff,
    }
}

/// `SINTER`, `SUNION`, `SDIFF`: `key [key …]`.
pub(super) fn sinter(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let keys: Vec<&[u8]> = (1..cmd.len()).map(|i| arg(cmd, i)).collect();
    match read_sets(ctx, s.tenant, &keys) {
        Ok(sets) => {
            let result = combine(op_of(c.name), sets, usize::MAX);
            write_members(out, s.version, result.iter().map(Vec::as_slice));
        }
        Err(e) => engine_error(out, e),
    }
}

/// `SINTERSTORE`, `SUNIONSTORE`, `SDIFFSTORE`: `destination key [key …]`. The destination is
/// replaced whatever it held, without a TTL; an empty result deletes it.
pub(super) fn sinterstore(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, dst) = (s.tenant, arg(cmd, 1));
    let keys: Vec<&[u8]> = (2..cmd.len()).map(|i| arg(cmd, i)).collect();
    let sets = match read_sets(ctx, t, &keys) {
        Ok(sets) => sets,
        Err(e) => return engine_error(out, e),
    };
    let result = combine(op_of(c.name), sets, usize::MAX);
    if result.is_empty() {
        if ctx.engine.delete(t, dst) {
            notify(ctx, t, GENERIC, "del", dst);
        }
        return write_integer(out, 0);
    }
    let mut buf = Vec::new();
    let mut b = Builder::new(&mut buf, false);
    result.iter().for_each(|m| b.push(member(m)));
    b.finish_indexed();
    let stored = ctx.engine.store(Store {
        tenant: t,
        key: dst,
        value: &buf,
        flags: 0,
        expiry: Expiry::Never,
        condition: Condition::Always,
        cas: None,
        state: 0,
        kind: SET,
    });
    match stored {
        Ok(_) => {
            notify(ctx, t, SET_EVENTS, c.name, dst);
            write_integer(out, result.len() as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// `SINTERCARD numkeys key [key …] [LIMIT limit]`.
pub(super) fn sintercard(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let numkeys = match int_arg(arg(cmd, 1)) {
        Some(n) if n > 0 => n as usize,
        Some(_) => return write_error(out, b"ERR numkeys should be greater than 0"),
        None => return write_error(out, b"ERR numkeys should be greater than 0"),
    };
    if numkeys > cmd.len() - 2 {
        return write_error(out, b"ERR Number of keys can't be greater than number of args");
    }
    let mut limit = usize::MAX;
    let mut i = 2 + numkeys;
    while i < cmd.len() {
        if arg(cmd, i).eq_ignore_ascii_case(b"limit") && i + 1 < cmd.len() {
            match int_arg(arg(cmd, i + 1)) {
                Some(l) if l >= 0 => limit = if l == 0 { usize::MAX } else { l as usize },
                Some(_) => return write_error(out, b"ERR LIMIT can't be negative"),
                None => return write_error(out, NOT_INTEGER),
            }
            i += 2;
        } else {
            return write_error(out, SYNTAX);
        }
    }
    let keys: Vec<&[u8]> = (2..2 + numkeys).map(|i| arg(cmd, i)).collect();
    match read_sets(ctx, s.tenant, &keys) {
        Ok(sets) => write_integer(out, combine(Op::Inter, sets, limit).len() as i64),
        Err(e) => engine_error(out, e),
    }
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`. A set Redis would keep as an intset
/// comes back whole with cursor 0, as from Redis; any other in the order of its members'
/// hashes (`packed::scan_page`).
pub(super) fn sscan(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let o = match ScanOptions::parse(cmd, 2, false) {
        Ok(o) => o,
        Err(e) => return write_error(out, e),
    };
    read_set(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            let (next, page) = scan_select(h.iter(), h.len(), is_intset(&h), &o);
            write_scan(out, next, page.len(), |out| {
                page.iter().for_each(|e| write_bulk(out, e.field))
            });
        },
        |out| write_scan(out, 0, 0, |_| ()),
    );
}
