//! `SORT` and `SORT_RO` (Redis 7.0's `sortCommandGeneric`): the elements of a list or a set,
//! sorted as numbers (or, with `ALPHA`, as bytes), by themselves or by the keys `BY`'s
//! pattern names (`weight_*`, or a hash field `w_*->f`; a pattern without `*` keeps the
//! element order), cut by `LIMIT`, answered as themselves or as what `GET`'s patterns name,
//! or stored as a list (`STORE`). Ties in numeric order go by the elements' bytes, as Redis
//! breaks them.

use std::cmp::Ordering;

use fridge_engine::{Condition, EngineError, Expiry, Kind, Store};
use fridge_proto::number::parse_redis_f64;
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_integer, write_null,
};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify};
use crate::keyspace::{GENERIC, LIST as LIST_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::hash::{Builder, Entry, Hash};
use crate::types::{HASH, LIST, SET, ZSET};

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

/// What `BY` or `GET` names for `element` (Redis's `lookupKeyByPattern`): `#` is the element
/// itself; otherwise the pattern's first `*` is replaced by the element and the key's string
/// is read, or with `->field` after the `*`, that field of the key's hash. `None` for a
/// pattern without `*`, a missing key or field, or a key of another type.
fn by_pattern(ctx: &mut Ctx<'_>, s: &Session, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after.windows(2).position(|w| w == b"->").filter(|&a| a + 2 < after.len());
    let (postfix, field) = match arrow {
        Some(a) => (&after[..a], Some(&after[a + 2..])),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let kind = if field.is_some() { HASH } else { Kind::STRING };
    let now = ctx.engine.now_ms();
    let found = ctx.engine.get_kind(s.tenant, &key, kind, |i| match field {
        Some(f) => Hash::new(i.value).get(f, now).map(|e| e.value.to_vec()),
        None => Some(i.value.to_vec()),
    });
    found.ok().flatten().flatten()
}

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern …] [ASC|DESC] [ALPHA]
/// [STORE destination]` and `SORT_RO` (without `STORE`).
pub(super) fn sort(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let ro = c.name == "sort_ro";
    let (mut by, mut gets, mut store) = (None, Vec::new(), None);
    let (mut desc, mut alpha, mut limit) = (false, false, (0i64, -1i64));
    let mut j = 2;
    while j < cmd.len() {
        let o = arg(cmd, j);
        let left = cmd.len() - j - 1;
        let is = |w: &[u8]| o.eq_ignore_ascii_case(w);
        if is(b"asc") {
            desc = false;
        } else if is(b"desc") {
            desc = true;
        } else if is(b"alpha") {
            alpha = true;
        } else if is(b"limit") && left >= 2 {
            let (Some(start), Some(count)) = (int_arg(arg(cmd, j + 1)), int_arg(arg(cmd, j + 2)))
            else {
                return write_error(out, NOT_INTEGER);
            };
            limit = (start, count);
            j += 2;
        } else if !ro && is(b"store") && left >= 1 {
            store = Some(arg(cmd, j + 1));
            j += 1;
        } else if is(b"by") && left >= 1 {
            by = Some(arg(cmd, j + 1));
            j += 1;
        } else if is(b"get") && left >= 1 {
            gets.push(arg(cmd, j + 1));
            j += 1;
        } else {
            return write_error(out, SYNTAX);
        }
        j += 1;
    }
    let t = s.tenant;
    let read = ctx.engine.get_any(t, arg(cmd, 1), |i| {
        (i.kind == LIST || i.kind == SET || i.kind == ZSET)
            .then(|| (i.kind, Hash::new(i.value).iter().map(|e| e.field.to_vec()).collect()))
    });
    let (kind, mut elements): (Kind, Vec<Vec<u8>>) = match read {
        None => (LIST, Vec::new()),
        Some(Some(found)) => found,
        Some(None) => return engine_error(out, EngineError::WrongKind),
    };
    // A pattern without `*` keeps the elements' order; a set's order is its own, so to store
    // it Redis sorts it by its bytes instead.
    let mut dontsort = by.is_some_and(|p| !p.contains(&b'*'));
    if dontsort && kind == SET && store.is_some() {
        (dontsort, alpha, by) = (false, true, None);
    }
    // A sorted set keeps its own order, reversed for DESC.
    if dontsort && kind == ZSET && desc {
        elements.reverse();
    }
    if !dontsort {
        let mut keyed: Vec<(Vec<u8>, Option<Vec<u8>>, f64)> = Vec::with_capacity(elements.len());
        for e in elements {
            let byval = match by {
                Some(p) => by_pattern(ctx, s, p, &e),
                None => None,
            };
            let score = if alpha {
                0.0
            } else {
                let v = if by.is_some() { byval.as_deref() } else { Some(&e[..]) };
                match v {
                    None | Some(b"") => 0.0,
                    Some(v) => match parse_redis_f64(v).filter(|x| !x.is_nan()) {
                        Some(x) => x,
                        None => {
                            return write_error(
                                out,
                                b"ERR One or more scores can't be converted into double",
                            );
                        }
                    },
                }
            };
            keyed.push((e, byval, score));
        }
        let by_pattern = by.is_some();
        keyed.sort_by(|a, b| {
            let cmp = if !alpha {
                a.2.partial_cmp(&b.2).unwrap_or(Ordering::Equal).then_with(|| a.0.cmp(&b.0))
            } else if by_pattern {
                // A missing key sorts first.
                a.1.cmp(&b.1)
            } else {
                a.0.cmp(&b.0)
            };
            if desc { cmp.reverse() } else { cmp }
        });
        elements = keyed.into_iter().map(|(e, _, _)| e).collect();
    }
    // Redis's LIMIT arithmetic.
    let len = elements.len() as i64;
    let mut start = limit.0.max(0);
    let mut end = if limit.1 < 0 { len - 1 } else { start.saturating_add(limit.1) - 1 };
    if start >= len {
        (start, end) = (len - 1, len - 2);
    }
    end = end.min(len - 1);
    let picked: &[Vec<u8>] =
        if start < 0 || end < start { &[] } else { &elements[start as usize..=end as usize] };
    let mut results: Vec<Option<Vec<u8>>> = Vec::new();
    for e in picked {
        if gets.is_empty() {
            results.push(Some(e.clone()));
        }
        for g in &gets {
            results.push(by_pattern(ctx, s, g, e));
        }
    }
    let Some(dst) = store else {
        write_array_header(out, results.len());
        for r in &results {
            match r {
                Some(v) => write_bulk(out, v),
                None => write_null(out, s.version),
            }
        }
        return;
    };
    if results.is_empty() {
        if ctx.engine.delete(t, dst) {
            notify(ctx, t, GENERIC, "del", dst);
        }
        return write_integer(out, 0);
    }
    let mut buf = Vec::new();
    let mut b = Builder::new(&mut buf, false);
    for r in &results {
        // A missing GET is stored as an empty string.
        b.push(Entry { field: r.as_deref().unwrap_or_default(), value: b"", deadline: 0 });
    }
    b.finish();
    let stored = ctx.engine.store(Store {
        tenant: t,
        key: dst,
        value: &buf,
        flags: 0,
        expiry: Expiry::Never,
        condition: Condition::Always,
        cas: None,
        state: 0,
        kind: LIST,
    });
    match stored {
        Ok(_) => {
            notify(ctx, t, LIST_EVENTS, "sortstore", dst);
            write_integer(out, results.len() as i64);
        }
        Err(EngineError::TooLarge) => {
            write_error(out, b"ERR list would exceed the item size limit (max-item-size)")
        }
        Err(e) => engine_error(out, e),
    }
}
