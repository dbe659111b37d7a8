//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP (count), LLEN, LINDEX, LSET,
//! LRANGE, LTRIM, LREM, LINSERT, LPOS, LMOVE, RPOPLPUSH, LMPOP (Redis 7.0's replies). A list
//! is packed as a hash with empty values, its elements in list order (`types::LIST`): a push
//! at either end copies the list once (the old elements in one piece), a pop copies the rest.
//! The blocking forms (BLPOP…) are `blocking.rs`.

use fridge_engine::{EngineError, TenantId, Update};
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_integer, write_null,
    write_null_array, write_simple, write_wrong_arity,
};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify, notify_only};
use crate::keyspace::{GENERIC, KEY_MISS, LIST as LIST_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::LIST;
use crate::types::hash::{Builder, Entry, Hash};

/// A list that would outgrow the largest item.
const TOO_LARGE: &[u8] = b"ERR list would exceed the item size limit (max-item-size)";
const MUST_BE_POSITIVE: &[u8] = b"ERR value is out of range, must be positive";

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

fn write_failed(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => write_error(out, TOO_LARGE),
        e => engine_error(out, e),
    }
}

fn element(e: &[u8]) -> Entry<'_> {
    Entry { field: e, value: b"", deadline: 0 }
}

/// A list's elements, head first.
fn elements<'a>(l: &Hash<'a>) -> impl Iterator<Item = &'a [u8]> + use<'a> {
    l.iter().map(|e| e.field)
}

/// A list's elements from the one at index `i` on: a pass over lengths to it, then only the
/// elements taken are read.
fn elements_from<'a>(l: &Hash<'a>, i: usize) -> impl Iterator<Item = &'a [u8]> + use<'a> {
    l.iter_from(l.offset_of(i)).map(|e| e.field)
}

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Left,
    Right,
}

impl End {
    pub(super) fn parse(w: &[u8]) -> Option<End> {
        if w.eq_ignore_ascii_case(b"left") {
            Some(End::Left)
        } else if w.eq_ignore_ascii_case(b"right") {
            Some(End::Right)
        } else {
            None
        }
    }

    fn push_event(self) -> &'static str {
        if self == End::Left { "lpush" } else { "rpush" }
    }

    fn pop_event(self) -> &'static str {
        if self == End::Left { "lpop" } else { "rpop" }
    }
}

/// Writes into `b` the list `old` with `new` pushed at `end` (LPUSH pushes its arguments one
/// by one, so they come out reversed at the head).
fn push_into<'e>(
    b: &mut Builder<'_>,
    old: &Hash<'_>,
    end: End,
    new: impl DoubleEndedIterator<Item = &'e [u8]>,
) {
    match end {
        End::Left => {
            new.rev().for_each(|e| b.push(element(e)));
            b.copy(old.body(), old.len() as u32);
        }
        End::Right => {
            b.copy(old.body(), old.len() as u32);
            new.for_each(|e| b.push(element(e)));
        }
    }
}

/// Pushes `new` at `end` of `key`'s list (creating it unless `only_existing`): the new length,
/// 0 when nothing was pushed for a missing key.
fn push<'e>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    end: End,
    only_existing: bool,
    new: impl DoubleEndedIterator<Item = &'e [u8]> + Clone,
) -> Result<usize, EngineError> {
    ctx.engine.update_kind_spliced(t, key, LIST, |cur, buf, splice| {
        if cur.is_none() && only_existing {
            return Ok(Update::Done(0));
        }
        let bytes = cur.map_or(&[][..], |c| c.value);
        let old = Hash::new(bytes);
        let mut b = Builder::spliced(buf, splice, bytes, false);
        push_into(&mut b, &old, end, new.clone());
        let len = b.finish() as usize;
        Ok(Update::Write {
            flags: 0,
            expires_at_ms: cur.and_then(|c| c.expires_at_ms),
            result: len,
        })
    })
}

/// `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`: `key element [element …]`.
pub(super) fn lpush(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let end = if c.name.starts_with('l') { End::Left } else { End::Right };
    let only_existing = c.name.ends_with('x');
    match push(ctx, t, key, end, only_existing, (2..cmd.len()).map(|i| arg(cmd, i))) {
        Ok(len) => {
            if len > 0 {
                notify(ctx, t, LIST_EVENTS, end.push_event(), key);
            }
            write_integer(out, len as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// Pops up to `count` elements from `end` of `key`'s list (deleting a list it empties) into
/// `into`, packed as a list in list order (one run of the old list, copied): `None` for a
/// missing key, else whether the list is gone. [`write_popped`] answers them in pop order.
fn pop(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    (end, count): (End, usize),
    into: &mut Vec<u8>,
) -> Result<Option<bool>, EngineError> {
    ctx.engine.update_kind_spliced(t, key, LIST, |cur, buf, splice| {
        let Some(c) = cur else { return Ok(Update::Done(None)) };
        let old = Hash::new(c.value);
        let n = count.min(old.len());
        // The elements kept are one run, copied whole; a pass over lengths finds where it
        // starts or ends, and only the elements taken are read.
        let (popped, kept) = match end {
            End::Left => (0..n, n..old.len()),
            End::Right => (old.len() - n..old.len(), 0..old.len() - n),
        };
        let mut taken = Builder::new(into, false);
        taken.copy(old.raw(old.offset_of(popped.start)..old.offset_of(popped.end)), n as u32);
        taken.finish();
        let kept = old.offset_of(kept.start)..old.offset_of(kept.end);
        let mut b = Builder::spliced(buf, splice, c.value, false);
        b.copy(old.raw(kept), (old.len() - n) as u32);
        let left = b.finish();
        Ok(if left == 0 {
            Update::Delete(Some(true))
        } else {
            Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: Some(false) }
        })
    })
}

/// Writes the elements [`pop`] took from `end`, in pop order: as they lie from the left, the
/// other way from the right (a one-element pop, the common case, needs no turning).
fn write_popped(out: &mut Vec<u8>, popped: &[u8], end: End) {
    let h = Hash::new(popped);
    if end == End::Left || h.len() <= 1 {
        h.iter().for_each(|e| write_bulk(out, e.field));
    } else {
        let all: Vec<&[u8]> = h.iter().map(|e| e.field).collect();
        all.iter().rev().for_each(|e| write_bulk(out, e));
    }
}

/// Publishes a pop's events: `lpop`/`rpop`, and `del` if the list is gone.
fn popped_events(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], end: End, gone: bool) {
    notify(ctx, t, LIST_EVENTS, end.pop_event(), key);
    if gone {
        notify(ctx, t, GENERIC, "del", key);
    }
}

/// `LPOP` and `RPOP`: `key [count]`.
pub(super) fn lpop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    let end = if c.name == "lpop" { End::Left } else { End::Right };
    let count = match cmd.len() {
        2 => None,
        3 => match int_arg(arg(cmd, 2)) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return write_error(out, MUST_BE_POSITIVE),
        },
        _ => return write_wrong_arity(out, c.name.as_bytes()),
    };
    if count == Some(0) {
        // Redis answers an empty array at once, whatever the key holds.
        return match ctx.engine.kind(t, key) {
            Some(k) if k != LIST => engine_error(out, EngineError::WrongKind),
            None => write_null_array(out, v),
            _ => write_array_header(out, 0),
        };
    }
    let mut popped = std::mem::take(ctx.scratch);
    match pop(ctx, t, key, (end, count.unwrap_or(1)), &mut popped) {
        Ok(None) => {
            notify_only(ctx, t, KEY_MISS, "keymiss", key);
            if count.is_some() { write_null_array(out, v) } else { write_null(out, v) }
        }
        Ok(Some(gone)) => {
            popped_events(ctx, t, key, end, gone);
            if count.is_some() {
                write_array_header(out, Hash::new(&popped).len());
            }
            write_popped(out, &popped, end);
        }
        Err(e) => write_failed(out, e),
    }
    *ctx.scratch = popped;
}

/// Reads `key`'s list into `f`, or answers WRONGTYPE; a missing key calls `on_miss`.
fn read_list(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&mut Vec<u8>, Hash<'_>),
    on_miss: impl FnOnce(&mut Vec<u8>),
) {
    super::packed::read(out, ctx, (t, key, LIST), f, on_miss);
}

/// `LLEN key`.
pub(super) fn llen(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    read_list(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, l| write_integer(out, l.len() as i64),
        |out| write_integer(out, 0),
    );
}

/// A Redis index (negative from the tail) into a list of `len`, if inside it.
fn index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { i.checked_add(len as i64)? } else { i };
    usize::try_from(i).ok().filter(|&i| i < len)
}

/// Redis's range arithmetic (LRANGE, LTRIM): the inclusive range of `start..=stop` inside a
/// list of `len`, `None` when empty.
fn range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// `LINDEX key index`.
pub(super) fn lindex(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let v = s.version;
    let Some(i) = int_arg(arg(cmd, 2)) else { return write_error(out, NOT_INTEGER) };
    read_list(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, l| match index(i, l.len()).and_then(|i| elements_from(&l, i).next()) {
            Some(e) => write_bulk(out, e),
            None => write_null(out, v),
        },
        |out| write_null(out, v),
    );
}

/// `LRANGE key start stop`.
pub(super) fn lrange(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (Some(start), Some(stop)) = (int_arg(arg(cmd, 2)), int_arg(arg(cmd, 3))) else {
        return write_error(out, NOT_INTEGER);
    };
    read_list(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, l| match range(start, stop, l.len()) {
            Some((a, b)) => {
                write_array_header(out, b - a + 1);
                elements_from(&l, a).take(b - a + 1).for_each(|e| write_bulk(out, e));
            }
            None => write_array_header(out, 0),
        },
        |out| write_array_header(out, 0),
    );
}

/// Rewrites `key`'s list through `f`, which sees the elements and pushes the new ones into the
/// builder, returning its result; an emptied list is deleted. `None` for a missing key.
fn edit_list<R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    mut f: impl FnMut(&Hash<'_>, &mut Builder<'_>) -> Option<R>,
) -> Result<Option<(R, bool)>, EngineError> {
    ctx.engine.update_kind_spliced(t, key, LIST, |cur, buf, splice| {
        let Some(c) = cur else { return Ok(Update::Done(None)) };
        let old = Hash::new(c.value);
        let mut b = Builder::spliced(buf, splice, c.value, false);
        let Some(r) = f(&old, &mut b) else { return Ok(Update::Done(None)) };
        Ok(if b.finish() == 0 {
            Update::Delete(Some((r, true)))
        } else {
            Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: Some((r, false)) }
        })
    })
}

/// `LSET key index element`.
pub(super) fn lset(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, new) = (s.tenant, arg(cmd, 1), arg(cmd, 3));
    let Some(i) = int_arg(arg(cmd, 2)) else { return write_error(out, NOT_INTEGER) };
    let r = edit_list(ctx, t, key, |l, b| {
        let i = index(i, l.len())?;
        for (j, e) in elements(l).enumerate() {
            b.push(element(if j == i { new } else { e }));
        }
        Some(())
    });
    match r {
        Ok(Some(_)) => {
            notify(ctx, t, LIST_EVENTS, "lset", key);
            write_simple(out, b"OK");
        }
        Ok(None) if ctx.engine.kind(t, key).is_some() => {
            write_error(out, b"ERR index out of range")
        }
        Ok(None) => write_error(out, b"ERR no such key"),
        Err(e) => write_failed(out, e),
    }
}

/// `LTRIM key start stop`.
pub(super) fn ltrim(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let (Some(start), Some(stop)) = (int_arg(arg(cmd, 2)), int_arg(arg(cmd, 3))) else {
        return write_error(out, NOT_INTEGER);
    };
    let r = edit_list(ctx, t, key, |l, b| {
        if let Some((a, z)) = range(start, stop, l.len()) {
            elements(l).skip(a).take(z - a + 1).for_each(|e| b.push(element(e)));
        }
        Some(())
    });
    match r {
        Ok(Some(((), gone))) => {
            notify(ctx, t, LIST_EVENTS, "ltrim", key);
            if gone {
                notify(ctx, t, GENERIC, "del", key);
            }
            write_simple(out, b"OK");
        }
        Ok(None) => write_simple(out, b"OK"),
        Err(e) => write_failed(out, e),
    }
}

/// `LREM key count element`.
pub(super) fn lrem(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, target) = (s.tenant, arg(cmd, 1), arg(cmd, 3));
    let Some(count) = int_arg(arg(cmd, 2)) else { return write_error(out, NOT_INTEGER) };
    let r = edit_list(ctx, t, key, |l, b| {
        let all: Vec<&[u8]> = elements(l).collect();
        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
        let mut drop = vec![false; all.len()];
        let mut removed = 0;
        let order: Box<dyn Iterator<Item = usize>> =
            if count < 0 { Box::new((0..all.len()).rev()) } else { Box::new(0..all.len()) };
        for i in order {
            if removed < limit && all[i] == target {
                drop[i] = true;
                removed += 1;
            }
        }
        all.iter().zip(&drop).filter(|(_, d)| !**d).for_each(|(e, _)| b.push(element(e)));
        Some(removed)
    });
    match r {
        Ok(Some((removed, gone))) => {
            if removed > 0 {
                notify(ctx, t, LIST_EVENTS, "lrem", key);
            }
            if gone {
                notify(ctx, t, GENERIC, "del", key);
            }
            write_integer(out, removed as i64);
        }
        Ok(None) => write_integer(out, 0),
        Err(e) => write_failed(out, e),
    }
}

/// `LINSERT key BEFORE|AFTER pivot element`.
pub(super) fn linsert(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, pivot, new) = (s.tenant, arg(cmd, 1), arg(cmd, 3), arg(cmd, 4));
    let w = arg(cmd, 2);
    let after = if w.eq_ignore_ascii_case(b"after") {
        true
    } else if w.eq_ignore_ascii_case(b"before") {
        false
    } else {
        return write_error(out, SYNTAX);
    };
    let mut found = false;
    let r = edit_list(ctx, t, key, |l, b| {
        found = false;
        for e in elements(l) {
            let at = !found && e == pivot;
            if at && !after {
                b.push(element(new));
            }
            b.push(element(e));
            if at && after {
                b.push(element(new));
            }
            found |= at;
        }
        // Nothing changes without the pivot.
        found.then_some(l.len() + 1)
    });
    match r {
        Ok(Some((len, _))) => {
            notify(ctx, t, LIST_EVENTS, "linsert", key);
            write_integer(out, len as i64);
        }
        Ok(None) if ctx.engine.kind(t, key).is_some() => write_integer(out, -1),
        Ok(None) => write_integer(out, 0),
        Err(e) => write_failed(out, e),
    }
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`.
pub(super) fn lpos(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, target, v) = (s.tenant, arg(cmd, 1), arg(cmd, 2), s.version);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut i = 3;
    while i < cmd.len() {
        let w = arg(cmd, i);
        if i + 1 >= cmd.len() {
            return write_error(out, SYNTAX);
        }
        let Some(n) = int_arg(arg(cmd, i + 1)) else { return write_error(out, NOT_INTEGER) };
        if w.eq_ignore_ascii_case(b"rank") {
            if n == 0 {
                return write_error(
                    out,
                    b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                    second ... or use negative to start from the end of the list",
                );
            }
            // Redis 7.0 negates the rank in place, and the smallest one stays negative: it
            // then takes the first match from the tail.
            rank = if n == i64::MIN { -1 } else { n };
        } else if w.eq_ignore_ascii_case(b"count") {
            if n < 0 {
                return write_error(out, b"ERR COUNT can't be negative");
            }
            count = Some(n as usize);
        } else if w.eq_ignore_ascii_case(b"maxlen") {
            if n < 0 {
                return write_error(out, b"ERR MAXLEN can't be negative");
            }
            maxlen = n as usize;
        } else {
            return write_error(out, SYNTAX);
        }
        i += 2;
    }
    read_list(
        out,
        ctx,
        t,
        key,
        |out, l| {
            let all: Vec<&[u8]> = elements(&l).collect();
            let len = all.len();
            let scan = if maxlen == 0 { len } else { maxlen.min(len) };
            let want = match count {
                None => 1,
                Some(0) => usize::MAX,
                Some(c) => c,
            };
            let mut skip = rank.unsigned_abs() as usize - 1;
            let mut found = Vec::new();
            let positions: Box<dyn Iterator<Item = usize>> =
                if rank > 0 { Box::new(0..scan) } else { Box::new((len - scan..len).rev()) };
            for p in positions {
                if found.len() >= want {
                    break;
                }
                if all[p] == target {
                    if skip > 0 {
                        skip -= 1;
                    } else {
                        found.push(p);
                    }
                }
            }
            match count {
                None => match found.first() {
                    Some(&p) => write_integer(out, p as i64),
                    None => write_null(out, v),
                },
                Some(_) => {
                    write_array_header(out, found.len());
                    found.iter().for_each(|&p| write_integer(out, p as i64));
                }
            }
        },
        |out| if count.is_some() { write_array_header(out, 0) } else { write_null(out, v) },
    );
}

/// Moves one element from `from` of `src` to `to` of `dst`: `Some` with the element left in
/// `ctx.scratch` (no allocation for it), or `None` when `src` is missing. WRONGTYPE for a
/// `dst` of another type, checked before anything moves.
pub(super) fn move_one(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    (src, from): (&[u8], End),
    (dst, to): (&[u8], End),
) -> Result<Option<()>, EngineError> {
    // A rotation's one update checks the kind itself (a missing list: `None`; another type:
    // WRONGTYPE, nothing written); two lists are checked first, so that nothing moves.
    if src != dst {
        match ctx.engine.kind(t, src) {
            None => return Ok(None),
            Some(k) if k != LIST => return Err(EngineError::WrongKind),
            Some(_) => {}
        }
        if ctx.engine.kind(t, dst).is_some_and(|k| k != LIST) {
            return Err(EngineError::WrongKind);
        }
    } else {
        // A rotation: one update of the one list, the elements that stay in place copied in
        // one piece.
        let mut moved_out = std::mem::take(ctx.scratch);
        let r = edit_list(ctx, t, src, |l, b| {
            let end = crate::types::pack::HEADER_LEN + l.body().len();
            let (moved, rest) = match from {
                End::Left => {
                    let (span, e) = l.spans().next()?;
                    (e.field, span.end..end)
                }
                End::Right => {
                    // A pass over lengths to the last element.
                    let last = l.offset_of(l.len().checked_sub(1)?);
                    (l.iter_from(last).next()?.field, crate::types::pack::HEADER_LEN..last)
                }
            };
            let n = l.len() as u32 - 1;
            match to {
                End::Left => {
                    b.push(element(moved));
                    b.copy(l.raw(rest), n);
                }
                End::Right => {
                    b.copy(l.raw(rest), n);
                    b.push(element(moved));
                }
            }
            moved_out.clear();
            moved_out.extend_from_slice(moved);
            Some(())
        });
        *ctx.scratch = moved_out;
        let Some(((), _)) = r? else { return Ok(None) };
        notify(ctx, t, LIST_EVENTS, to.push_event(), dst);
        notify(ctx, t, LIST_EVENTS, from.pop_event(), src);
        return Ok(Some(()));
    }
    let Some(gone) = pop_element(ctx, t, src, from)? else { return Ok(None) };
    let e = std::mem::take(ctx.scratch);
    let pushed = push(ctx, t, dst, to, false, std::iter::once(&e[..]));
    *ctx.scratch = e;
    pushed?;
    notify(ctx, t, LIST_EVENTS, to.push_event(), dst);
    popped_events(ctx, t, src, from, gone);
    Ok(Some(()))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT` and `RPOPLPUSH source destination`.
pub(super) fn lmove(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (from, to) = if c.name == "rpoplpush" {
        (End::Right, End::Left)
    } else {
        match (End::parse(arg(cmd, 3)), End::parse(arg(cmd, 4))) {
            (Some(f), Some(t)) => (f, t),
            _ => return write_error(out, SYNTAX),
        }
    };
    match move_one(ctx, s.tenant, (arg(cmd, 1), from), (arg(cmd, 2), to)) {
        Ok(Some(())) => write_bulk(out, ctx.scratch),
        Ok(None) => write_null(out, s.version),
        Err(e) => write_failed(out, e),
    }
}

/// `LMPOP numkeys key [key …] LEFT|RIGHT [COUNT count]`.
pub(super) fn lmpop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if !lmpop_from(cmd, 1, out, s, ctx, None) {
        write_null_array(out, s.version);
    }
}

/// LMPOP from its `numkeys` argument at `at` on (BLMPOP's comes after its timeout): whether
/// it answered (with the elements, or an error); `false` with nothing written when every
/// list is empty
/// (or, for BLMPOP, not its `turn`: `crate::blocking`).
pub(super) fn lmpop_from(
    cmd: &Command<'_>,
    at: usize,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    turn: Option<&crate::blocking::Turn>,
) -> bool {
    let t = s.tenant;
    let (keys, left, count) = match super::packed::parse_mpop(cmd, at, (b"left", b"right")) {
        Ok(m) => (m.keys, m.first_word, m.count),
        Err(e) => {
            write_error(out, e);
            return true;
        }
    };
    let end = if left { End::Left } else { End::Right };
    for i in crate::blocking::order(keys, turn.and_then(|t| t.first)) {
        let key = arg(cmd, i);
        match ctx.engine.kind(t, key) {
            None => continue,
            // A blocked command run again passes over a key of another kind.
            Some(k) if k != LIST && turn.is_some_and(|t| t.resumed) => continue,
            Some(k) if k != LIST => {
                engine_error(out, EngineError::WrongKind);
                return true;
            }
            Some(_) => {}
        }
        if turn.is_some_and(|turn| !turn.may_take(&ctx.shared.blocking, key)) {
            continue;
        }
        let mut popped = std::mem::take(ctx.scratch);
        let r = pop(ctx, t, key, (end, count), &mut popped);
        if let Ok(Some(gone)) = r {
            popped_events(ctx, t, key, end, gone);
            write_array_header(out, 2);
            write_bulk(out, key);
            write_array_header(out, Hash::new(&popped).len());
            write_popped(out, &popped, end);
        }
        *ctx.scratch = popped;
        match r {
            Ok(Some(_)) => return true,
            Ok(None) => continue,
            Err(e) => {
                write_failed(out, e);
                return true;
            }
        }
    }
    false
}

/// Pops one element from `end` of `key`'s list, with its events: `Some` with the element left
/// in `ctx.scratch`, `None` for no list.
pub(super) fn pop_one(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    end: End,
) -> Result<Option<()>, EngineError> {
    let Some(gone) = pop_element(ctx, t, key, end)? else { return Ok(None) };
    popped_events(ctx, t, key, end, gone);
    Ok(Some(()))
}

/// [`pop`] of one element, left alone in `ctx.scratch` (no allocation for it): `None` for no
/// list, else whether the list is gone. No events.
fn pop_element(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    end: End,
) -> Result<Option<bool>, EngineError> {
    let mut popped = std::mem::take(ctx.scratch);
    let r = pop(ctx, t, key, (end, 1), &mut popped);
    // The element alone: the packed list's one entry, moved to the buffer's start.
    let element = Hash::new(&popped).iter().next().map(|e| {
        let at = e.field.as_ptr() as usize - popped.as_ptr() as usize;
        at..at + e.field.len()
    });
    match element {
        Some(field) => {
            let len = field.len();
            popped.copy_within(field, 0);
            popped.truncate(len);
        }
        None => popped.clear(),
    }
    *ctx.scratch = popped;
    r
}
