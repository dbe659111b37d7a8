//! Sorted set commands (Redis 7.0's replies): ZADD (NX XX GT LT CH INCR), ZINCRBY, ZREM,
//! ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT, ZRANGE (BYSCORE BYLEX REV LIMIT
//! WITHSCORES) and its older forms, ZRANGESTORE, ZREMRANGEBYRANK/SCORE/LEX, ZPOPMIN, ZPOPMAX,
//! ZMPOP, ZRANDMEMBER, ZSCAN, ZUNION, ZINTER, ZDIFF (and their STOREs), ZINTERCARD.
//!
//! A sorted set is packed as a hash of members and their scores ([`PackedScore`]) kept in the
//! order of (score, member), so a range by rank or by score is a walk from the start, and a
//! write builds the new order in one pass over the old (`types::ZSET`). From
//! [`index::MIN_ENTRIES`] members on it carries an index (`types::index`): a member, its rank
//! and the place of a score are found without a pass.

use std::cmp::Ordering;
use std::collections::HashMap;

use fridge_engine::{Condition, EngineError, Expiry, Splice, Store, TenantId, Update};
use fridge_proto::number::{g17, parse_redis_f64};
use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_null,
    write_null_array,
};

use super::packed::{ScanOptions, random_picks, scan_select, write_random_field, write_scan};
use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg, notify};
use crate::keyspace::{GENERIC, ZSET as ZSET_EVENTS};
use crate::session::{Ctx, Session};
use crate::types::hash::{Builder, Entry, Hash};
use crate::types::{SET, ZSET, index};

const TOO_LARGE: &[u8] = b"ERR sorted set would exceed the item size limit (max-item-size)";
const NOT_FLOAT: &[u8] = b"ERR value is not a valid float";
const BAD_SCORE_RANGE: &[u8] = b"ERR min or max is not a float";
const BAD_LEX_RANGE: &[u8] = b"ERR min or max not valid string range item";
/// Members up to this many, of up to this many bytes, are a sorted set Redis 7.0 keeps as a
/// listpack (`zset-max-listpack-entries`, `zset-max-listpack-value`).
const LISTPACK_ENTRIES: usize = 128;
const LISTPACK_VALUE: usize = 64;

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

fn write_failed(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => write_error(out, TOO_LARGE),
        e => engine_error(out, e),
    }
}

/// A member and its score.
#[derive(Debug, Clone, Copy)]
struct Scored<'a> {
    member: &'a [u8],
    score: f64,
}

/// The order of a sorted set: by score, then by the members' bytes.
fn order(a: &Scored<'_>, b: &Scored<'_>) -> Ordering {
    a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.member.cmp(b.member))
}

/// A packed score: an integer score of up to 55 bits as the fewest little-endian bytes that
/// sign-extend back to it (0 bytes for 0: Redis's listpack also keeps small integer scores
/// small), any other as the 8 bytes of its float.
pub(super) struct PackedScore {
    bytes: [u8; 8],
    len: usize,
}

impl PackedScore {
    pub(super) fn of(score: f64) -> PackedScore {
        if score.fract() == 0.0 && score.abs() < (1u64 << 55) as f64 {
            let i = score as i64;
            // At most 7 bytes: 8 would read back as a float.
            if let Some(len) = (0..8).find(|&n| sign_extend(&i.to_le_bytes()[..n]) == i) {
                return PackedScore { bytes: i.to_le_bytes(), len };
            }
        }
        PackedScore { bytes: score.to_le_bytes(), len: 8 }
    }

    /// `score` packed in `width` bytes where it fits there, else as [`PackedScore::of`]: a
    /// member's new score keeps its old one's width (an integer in more bytes than it needs
    /// still sign-extends back to it; any score fits the 8 bytes of a float), so the entry
    /// keeps its length and the engine edits the set in place (`docs/design.md`, "Edits in
    /// place"). Widths only grow: a set's scores settle at the widest they have needed.
    pub(super) fn within(score: f64, width: usize) -> PackedScore {
        let fewest = PackedScore::of(score);
        match width {
            8 if fewest.len < 8 => PackedScore { bytes: score.to_le_bytes(), len: 8 },
            1..8 if fewest.len < width => PackedScore { len: width, ..fewest },
            _ => fewest,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The integer in `b` (at most 8 little-endian bytes), sign-extended; byte by byte, so a
/// walk over many scores makes no call to `memcpy` per score.
#[inline]
fn sign_extend(b: &[u8]) -> i64 {
    if b.is_empty() || b.len() > 8 {
        return 0;
    }
    let v = b.iter().rev().fold(0u64, |v, &x| v << 8 | u64::from(x));
    let shift = 64 - 8 * b.len() as u32;
    ((v << shift) as i64) >> shift
}

/// The score a packed entry holds ([`PackedScore`]).
pub(super) fn score_of(e: &Entry<'_>) -> f64 {
    score_from(e.value)
}

/// The score a packed score's bytes hold.
#[inline]
fn score_from(value: &[u8]) -> f64 {
    match <[u8; 8]>::try_from(value) {
        Ok(b) => f64::from_le_bytes(b),
        Err(_) => sign_extend(value) as f64,
    }
}

/// A packed sorted set's members, in order.
fn members<'a>(h: &Hash<'a>) -> Vec<Scored<'a>> {
    h.iter().map(|e| Scored { member: e.field, score: score_of(&e) }).collect()
}

/// Packs `entries` (in order) into `buf`, with an index from [`index::MIN_ENTRIES`] on: their
/// number.
fn pack(buf: &mut Vec<u8>, entries: &[Scored<'_>]) -> u32 {
    let mut b = Builder::new(buf, false);
    for e in entries {
        b.push(Entry { field: e.member, value: PackedScore::of(e.score).bytes(), deadline: 0 });
    }
    let n = b.finish();
    if n as usize >= index::MIN_ENTRIES {
        crate::types::hash::append_index(buf);
    }
    n
}

/// Whether Redis would keep this sorted set as a listpack.
pub(super) fn is_listpack(h: &Hash<'_>) -> bool {
    h.len() <= LISTPACK_ENTRIES && h.iter().all(|e| e.field.len() <= LISTPACK_VALUE)
}

/// Appends a score as Redis 7.0 answers it: `%.17g`, a bulk string in RESP2, a double in RESP3.
fn write_score(out: &mut Vec<u8>, v: Version, score: f64) {
    let text = g17(score);
    match v {
        Version::Resp2 => write_bulk(out, text.as_bytes()),
        Version::Resp3 => {
            out.push(b',');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Members with their scores when asked: flat in RESP2, pairs in RESP3 (or always pairs,
/// `nested`, as ZMPOP answers).
fn write_scored(out: &mut Vec<u8>, v: Version, scores: bool, nested: bool, items: &[Scored<'_>]) {
    write_scored_n(out, v, (scores, nested), items.len(), items.iter().copied());
}

/// [`write_scored`] of `n` items given one by one (the reply's length written first): the
/// number written, which only a damaged value makes fewer than `n` (the caller then takes the
/// reply back).
fn write_scored_n<'a>(
    out: &mut Vec<u8>,
    v: Version,
    (scores, nested): (bool, bool),
    n: usize,
    items: impl Iterator<Item = Scored<'a>>,
) -> usize {
    let pairs = scores && (nested || v == Version::Resp3);
    write_array_header(out, if scores && !pairs { 2 * n } else { n });
    let mut written = 0;
    for e in items {
        if pairs {
            write_array_header(out, 2);
        }
        write_bulk(out, e.member);
        if scores {
            write_score(out, v, e.score);
        }
        written += 1;
    }
    written
}

/// Reads `key`'s sorted set into `f`, or answers WRONGTYPE; a missing key calls `on_miss`.
fn read_zset(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&mut Vec<u8>, Hash<'_>),
    on_miss: impl FnOnce(&mut Vec<u8>),
) {
    super::packed::read(out, ctx, (t, key, ZSET), f, on_miss);
}

/// Rewrites `key`'s sorted set through `f`, which gets its members in order and returns the
/// new ones (in any order) and its result, or `None` to change nothing. An empty result
/// deletes the key; `create`: whether `f` also runs for a missing key. The new members may
/// borrow from the old set or from anything that outlives the call (`'c`, the command's
/// arguments): `f`'s first argument only says so to the borrow checker.
fn edit_zset<'c, R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    create: bool,
    mut f: impl for<'h> FnMut(&'h &'c (), Vec<Scored<'h>>) -> Option<(Vec<Scored<'h>>, R)>,
) -> Result<Option<(R, bool)>, EngineError> {
    let outlives: &'c () = &();
    ctx.engine.update_kind(t, key, ZSET, |cur, buf| {
        if cur.is_none() && !create {
            return Ok(Update::Done(None));
        }
        let old = Hash::new(cur.map_or(&[][..], |c| c.value));
        let Some((mut new, r)) = f(&outlives, members(&old)) else {
            return Ok(Update::Done(None));
        };
        // Nearly sorted already: the merge sort finds the runs.
        new.sort_by(order);
        if new.is_empty() {
            return Ok(if cur.is_some() {
                Update::Delete(Some((r, true)))
            } else {
                Update::Done(Some((r, false)))
            });
        }
        pack(buf, &new);
        let expires_at_ms = cur.and_then(|c| c.expires_at_ms);
        Ok(Update::Write { flags: 0, expires_at_ms, result: Some((r, false)) })
    })
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …]`.
pub(super) fn zadd(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    // The options, in any case, compared in place (a lowercased copy of each argument was an
    // allocation per ZADD).
    const OPTIONS: [&[u8]; 6] = [b"nx", b"xx", b"gt", b"lt", b"ch", b"incr"];
    let mut set = [false; 6];
    let mut i = 2;
    while let Some(k) = OPTIONS.iter().position(|o| arg(cmd, i).eq_ignore_ascii_case(o)) {
        set[k] = true;
        i += 1;
    }
    let [nx, xx, gt, lt, ch, incr] = set;
    let pairs = cmd.len() - i;
    if pairs % 2 != 0 || pairs == 0 {
        return write_error(out, SYNTAX);
    }
    if nx && xx {
        return write_error(out, b"ERR XX and NX options at the same time are not compatible");
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return write_error(
            out,
            b"ERR GT, LT, and/or NX options at the same time are not compatible",
        );
    }
    if incr && pairs > 2 {
        return write_error(out, b"ERR INCR option supports a single increment-element pair");
    }
    let scored = |j: usize| {
        // -0 is stored as 0: redis-server 7.0.15 answers `0` for it (checked side by side).
        parse_redis_f64(arg(cmd, j))
            .map(|score| Scored { member: arg(cmd, j + 1), score: score + 0.0 })
    };
    // One member, the common case, without a vector of them.
    let (one, adds) = if pairs == 2 {
        (scored(i), Vec::new())
    } else {
        (
            None,
            (i..cmd.len()).step_by(2).map(scored).collect::<Option<Vec<_>>>().unwrap_or_default(),
        )
    };
    if one.is_none() && adds.is_empty() {
        return write_error(out, NOT_FLOAT);
    }
    let flags = Flags { nx, xx, gt, lt, incr };
    let mut failed = false;
    let r = if let Some(one) = one {
        add_one(ctx, t, key, one, flags, &mut failed)
    } else {
        edit_zset(ctx, t, key, !xx, |_, mut all| {
            let mut at: HashMap<&[u8], usize> = HashMap::with_capacity(all.len());
            for (n, e) in all.iter().enumerate() {
                at.insert(e.member, n);
            }
            let (mut added, mut changed, mut result) = (0, 0, None);
            let mut nan = false;
            for a in &adds {
                match at.get(a.member).copied() {
                    Some(n) => {
                        if nx {
                            continue;
                        }
                        let old = all[n].score;
                        let new = if incr { old + a.score } else { a.score };
                        if new.is_nan() {
                            nan = true;
                            break;
                        }
                        if (gt && new <= old) || (lt && new >= old) {
                            continue;
                        }
                        result = Some(new);
                        if new != old {
                            all[n].score = new;
                            changed += 1;
                        }
                    }
                    None if xx => {}
                    None => {
                        at.insert(a.member, all.len());
                        all.push(Scored { member: a.member, score: a.score });
                        result = Some(a.score);
                        added += 1;
                    }
                }
            }
            if nan {
                // Nothing changes.
                failed = true;
                return None;
            }
            Some((all, (added, changed, result)))
        })
    };
    match r {
        Ok(_) if failed => write_error(out, b"ERR resulting score is not a number (NaN)"),
        Ok(Some(((added, changed, result), _))) => {
            if added + changed > 0 {
                notify(ctx, t, ZSET_EVENTS, if incr { "zincr" } else { "zadd" }, key);
            }
            match (incr, result) {
                (true, Some(score)) => write_score(out, v, score),
                (true, None) => write_null(out, v),
                (false, _) => write_integer(out, (if ch { added + changed } else { added }) as i64),
            }
        }
        Ok(None) => {
            if incr {
                write_null(out, v)
            } else {
                write_integer(out, 0)
            }
        }
        Err(e) => write_failed(out, e),
    }
}

/// ZADD's flags.
#[derive(Clone, Copy)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    incr: bool,
}

/// What a ZADD did: members added, members whose score changed, and the member's score
/// (INCR's reply; `None` where nothing was done).
type Added = (usize, usize, Option<f64>);

/// ZADD of one member, the common case: [`add_to`] as the engine's update. Sets `failed` for
/// a NaN score.
fn add_one(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    a: Scored<'_>,
    f: Flags,
    failed: &mut bool,
) -> Result<Option<(Added, bool)>, EngineError> {
    ctx.engine.update_kind_spliced(t, key, ZSET, |cur, buf, splice| {
        if cur.is_none() && f.xx {
            return Ok(Update::Done(None));
        }
        Ok(match add_to(cur.map_or(&[][..], |c| c.value), a, f, buf, splice) {
            One::Unchanged(r) => Update::Done(r.map(|r| (r, false))),
            One::Nan => {
                *failed = true;
                Update::Done(None)
            }
            One::Written(r) => Update::Write {
                flags: 0,
                expires_at_ms: cur.and_then(|c| c.expires_at_ms),
                result: Some((r, false)),
            },
        })
    })
}

/// What [`add_to`] made of a sorted set.
#[derive(Debug, PartialEq)]
enum One {
    /// Nothing to write; ZADD's result (`None`: nothing done).
    Unchanged(Option<Added>),
    /// The new score is NaN: nothing changes.
    Nan,
    /// The new set is given in the buffer and the splice.
    Written(Added),
}

/// Whether an entry (member, packed score) orders after `new`: false, then true along a set.
fn after<'n>(new: Scored<'n>) -> impl Fn(&[u8], &[u8]) -> bool + 'n {
    move |member, value| order(&new, &Scored { member, score: score_from(value) }).is_lt()
}

/// ZADD of one member to the packed sorted set `bytes` (empty for none), the new set given
/// in `buf` and `splice` (for `Worker::update_kind_spliced`): the old entry and the new place
/// found — through the index of a large set (a probe and a binary search), else by one pass
/// that stops once it has both — and the new entry inserted at its place while the runs of
/// members around it are copied whole, once (no decoding of the others); a large set's index
/// rewritten by [`index::write_edited`].
fn add_to(bytes: &[u8], a: Scored<'_>, f: Flags, buf: &mut Vec<u8>, splice: &mut Splice) -> One {
    add_in(Hash::new(bytes), bytes, a, f, buf, splice)
}

/// [`add_to`] of the set `old` read from `bytes`.
fn add_in(
    old: Hash<'_>,
    bytes: &[u8],
    a: Scored<'_>,
    f: Flags,
    buf: &mut Vec<u8>,
    splice: &mut Splice,
) -> One {
    // The new place: before the first entry that orders after the new one. Where the new
    // score is known already (no INCR), it is found with the old entry.
    let mut place = None;
    let found = if old.index().is_some() {
        if !f.incr {
            place = Some(old.partition_point(after(a)));
        }
        old.find_ranked(a.member)
    } else if f.incr {
        old.find(a.member).map(|found| (found, None))
    } else {
        let (found, at) = old.find_and_first_where(a.member, after(a));
        place = Some(at);
        found.map(|found| (found, None))
    };
    // The old entry: where it lies, its rank (through an index), its score and its width.
    let width = found.as_ref().map_or(0, |((_, e), _)| e.value.len());
    let found = found.map(|((span, e), slot)| (span, slot, score_of(&e)));
    let score = match found {
        Some(_) if f.nx => return One::Unchanged(Some((0, 0, None))),
        Some((_, _, old)) => {
            let new = if f.incr { old + a.score } else { a.score };
            if new.is_nan() {
                return One::Nan;
            }
            if (f.gt && new <= old) || (f.lt && new >= old) {
                return One::Unchanged(Some((0, 0, None)));
            }
            if new == old {
                return One::Unchanged(Some((0, 0, Some(new))));
            }
            new
        }
        None if f.xx => return One::Unchanged(Some((0, 0, None))),
        None => a.score,
    };
    let new = Scored { member: a.member, score };
    // INCR's new place, now that its score is known.
    let (at, before) = place.unwrap_or_else(|| old.partition_point(after(new)));
    let (start, end) = (crate::types::pack::HEADER_LEN.min(bytes.len()), old.end());
    // An index that does not agree with its entries (a damaged value) is passed over: the
    // entries decide, and the set is written with an index built anew.
    let sound = (start..=end).contains(&at)
        && before <= old.len()
        && found.as_ref().is_none_or(|(span, _, _)| {
            start <= span.start
                && span.end <= end
                && before < old.len()
                && (if span.start < at { span.end <= at && before >= 1 } else { true })
        });
    if !sound && old.index().is_some() {
        return add_in(old.without_index(), bytes, a, f, buf, splice);
    }
    let packed = PackedScore::within(new.score, width);
    let entry = Entry { field: new.member, value: packed.bytes(), deadline: 0 };
    let count = old.len() + usize::from(found.is_none());
    // A set that reaches the size of an index without one is written whole and indexed anew;
    // any other as a splice (an indexed one with its index edited).
    let fresh_index = old.index().is_none() && count >= index::MIN_ENTRIES;
    let mut b = if fresh_index {
        splice.clear();
        Builder::new(buf, false)
    } else {
        Builder::spliced(buf, splice, bytes, false)
    };
    // Unchanged runs are copied whole, once: the entries before the new place and those after
    // it, less the old entry (the two runs around it count the entries they hold between
    // them).
    let len = match found.as_ref().map(|(span, _, _)| span.clone()) {
        None => {
            b.copy(old.raw(start..at), before as u32);
            let len = b.push_len(entry);
            b.copy(old.raw(at..end), (old.len() - before) as u32);
            len
        }
        Some(span) if span.start < at => {
            b.copy(old.raw(start..span.start), before as u32 - 1);
            b.copy(old.raw(span.end..at), 0);
            let len = b.push_len(entry);
            b.copy(old.raw(at..end), (old.len() - before) as u32);
            len
        }
        Some(span) => {
            b.copy(old.raw(start..at), before as u32);
            let len = b.push_len(entry);
            b.copy(old.raw(at..span.start), (old.len() - before - 1) as u32);
            b.copy(old.raw(span.end..end), 0);
            len
        }
    };
    if let Some(ix) = old.index() {
        let removed = found.as_ref().and_then(|(span, rank, _)| Some((span.clone(), (*rank)?)));
        let edit = index::Edit { removed, at, before, len, tag: index::tag(new.member) };
        b.mark_indexed();
        old.write_edited_index(b.trailer(), ix, &edit);
    }
    b.finish();
    if fresh_index {
        crate::types::hash::append_index(buf);
    }
    let added = usize::from(found.is_none());
    One::Written((added, 1 - added, Some(score)))
}

/// `ZINCRBY key increment member`.
pub(super) fn zincrby(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, m, v) = (s.tenant, arg(cmd, 1), arg(cmd, 3), s.version);
    let Some(delta) = parse_redis_f64(arg(cmd, 2)) else { return write_error(out, NOT_FLOAT) };
    // ZADD's INCR (as Redis runs it): an increment of 0 changes nothing and tells no one.
    let flags = Flags { nx: false, xx: false, gt: false, lt: false, incr: true };
    let mut failed = false;
    match add_one(ctx, t, key, Scored { member: m, score: delta }, flags, &mut failed) {
        Ok(_) if failed => write_error(out, b"ERR resulting score is not a number (NaN)"),
        Ok(Some(((added, changed, Some(score)), _))) => {
            if added + changed > 0 {
                notify(ctx, t, ZSET_EVENTS, "zincr", key);
            }
            write_score(out, v, score);
        }
        Ok(_) => write_null(out, v),
        Err(e) => write_failed(out, e),
    }
}

/// Publishes a removal's events: `event`, and `del` if the set is gone.
fn removed(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], event: &str, n: usize, gone: bool) {
    if n > 0 {
        notify(ctx, t, ZSET_EVENTS, event, key);
    }
    if gone {
        notify(ctx, t, GENERIC, "del", key);
    }
}

/// Removes the members `drop` picks (by position and member): their number.
fn remove_where(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    mut drop: impl FnMut(&[Scored<'_>]) -> Vec<bool>,
) -> Result<(usize, bool), EngineError> {
    let r = edit_zset(ctx, t, key, false, |_, all| {
        let marks = drop(&all);
        let n = marks.iter().filter(|d| **d).count();
        if n == 0 {
            return None;
        }
        let kept = all.into_iter().zip(marks).filter(|(_, d)| !d).map(|(e, _)| e).collect();
        Some((kept, n))
    })?;
    Ok(r.unwrap_or((0, false)))
}

/// `ZREM key member [member …]`.
pub(super) fn zrem(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key) = (s.tenant, arg(cmd, 1));
    let r = if cmd.len() == 3 {
        // One member: one lookup and the runs around it, no rebuild of the set.
        super::packed::remove_one(ctx, t, (key, ZSET), arg(cmd, 2))
    } else {
        let named: std::collections::HashSet<&[u8]> = (2..cmd.len()).map(|i| arg(cmd, i)).collect();
        remove_where(ctx, t, key, |all| all.iter().map(|e| named.contains(e.member)).collect())
    };
    match r {
        Ok((n, gone)) => {
            removed(ctx, t, key, "zrem", n, gone);
            write_integer(out, n as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// `ZCARD key`.
pub(super) fn zcard(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| write_integer(out, h.len() as i64),
        |out| write_integer(out, 0),
    );
}

/// `ZSCORE key member` and `ZMSCORE key member [member …]`.
pub(super) fn zscore(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let v = s.version;
    let multi = c.name == "zmscore";
    let n = cmd.len() - 2;
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            if multi {
                write_array_header(out, n);
            }
            // A large set without an index: one map instead of a pass per member.
            let map: Option<HashMap<&[u8], f64>> = (n > super::packed::FEW && h.index().is_none())
                .then(|| h.iter().map(|e| (e.field, score_of(&e))).collect());
            for i in 2..cmd.len() {
                let m = arg(cmd, i);
                let found = match &map {
                    Some(map) => map.get(m).copied(),
                    None => h.get(m, 0).map(|e| score_of(&e)),
                };
                match found {
                    Some(score) => write_score(out, v, score),
                    None => write_null(out, v),
                }
            }
        },
        |out| {
            if multi {
                write_array_header(out, n);
                (0..n).for_each(|_| write_null(out, v));
            } else {
                write_null(out, v);
            }
        },
    );
}

/// `ZRANK` and `ZREVRANK`: `key member`.
pub(super) fn zrank(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (v, m, rev) = (s.version, arg(cmd, 2), c.name == "zrevrank");
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| match h.rank(m) {
            Some(r) => write_integer(out, (if rev { h.len() - 1 - r } else { r }) as i64),
            None => write_null(out, v),
        },
        |out| write_null(out, v),
    );
}

/// A score range: `min max`, each `(`-prefixed for exclusive, `-inf`/`+inf` allowed.
#[derive(Clone, Copy)]
struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let bound = |b: &[u8]| match b.split_first() {
            Some((b'(', rest)) => parse_redis_f64(rest).map(|x| (x, true)),
            _ => parse_redis_f64(b).map(|x| (x, false)),
        };
        let ((min, minex), (max, maxex)) = (bound(min)?, bound(max)?);
        Some(ScoreRange { min, minex, max, maxex })
    }
}

/// A lexicographic bound: `-`, `+`, `[member` or `(member`.
#[derive(Clone, Copy)]
enum Lex<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

impl<'a> Lex<'a> {
    fn parse(b: &'a [u8]) -> Option<Lex<'a>> {
        match b.split_first()? {
            (b'-', []) => Some(Lex::Min),
            (b'+', []) => Some(Lex::Max),
            (b'[', m) => Some(Lex::Incl(m)),
            (b'(', m) => Some(Lex::Excl(m)),
            _ => None,
        }
    }
}

/// Whether `m` lies between the lexicographic bounds.
fn in_lex(m: &[u8], min: Lex<'_>, max: Lex<'_>) -> bool {
    let above = match min {
        Lex::Min => true,
        Lex::Max => false,
        Lex::Incl(b) => m >= b,
        Lex::Excl(b) => m > b,
    };
    let below = match max {
        Lex::Min => false,
        Lex::Max => true,
        Lex::Incl(b) => m <= b,
        Lex::Excl(b) => m < b,
    };
    above && below
}

/// Where `e` stands against a score or lex range: (past its start, not past its end).
fn bounds(by: By<'_>, e: &Scored<'_>) -> (bool, bool) {
    match by {
        By::Score(r) => (
            if r.minex { e.score > r.min } else { e.score >= r.min },
            if r.maxex { e.score < r.max } else { e.score <= r.max },
        ),
        By::Lex(min, max) => (in_lex(e.member, min, Lex::Max), in_lex(e.member, Lex::Min, max)),
        By::Rank(..) => (true, true),
    }
}

/// The positions (in order) of a score or lex range's members, found as Redis walks its
/// list: from the first member past the range's start (from the end, reversed, the first
/// below the range's end) for as long as members stay inside. For a lex range over members
/// of unequal scores this is Redis's answer, not every member whose bytes lie in the range
/// (Redis documents that result as unspecified).
fn range_positions(all: &[Scored<'_>], by: By<'_>, rev: bool) -> std::ops::Range<usize> {
    let bounds = |e: &Scored<'_>| bounds(by, e);
    if rev {
        let Some(end) = all.iter().rposition(|e| bounds(e).1) else { return 0..0 };
        let start = all[..=end].iter().rposition(|e| !bounds(e).0).map_or(0, |p| p + 1);
        start..end + 1
    } else {
        let Some(start) = all.iter().position(|e| bounds(e).0) else { return 0..0 };
        let end = all[start..].iter().position(|e| !bounds(e).1).map_or(all.len(), |p| start + p);
        start..end
    }
}

/// What a range selects by.
#[derive(Clone, Copy)]
enum By<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(Lex<'a>, Lex<'a>),
}

/// Redis's rank arithmetic (as LRANGE's): the inclusive range inside `len`, `None` if empty.
fn rank_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// The members a range selects from the sorted set `h`, reversed with `rev`, then `offset`
/// and `count` of them (`LIMIT`; a negative offset selects none, a negative count all).
/// Forward ranges walk the packed members only as far as the range goes: `ZRANGE k 0 9`
/// decodes ten members, whatever the set holds.
fn select<'a>(h: &Hash<'a>, by: By<'_>, rev: bool, limit: (i64, i64)) -> Vec<Scored<'a>> {
    let scored = |e: Entry<'a>| Scored { member: e.field, score: score_of(&e) };
    match by {
        By::Rank(start, end) => {
            let Some((a, b)) = rank_range(start, end, h.len()) else { return Vec::new() };
            let (first, last) = if rev { (h.len() - 1 - b, h.len() - 1 - a) } else { (a, b) };
            // From the first entry's place (through the index of a large set), not a walk from
            // the start.
            let from = h.iter_from(h.offset_of(first));
            let mut picked: Vec<Scored<'a>> = from.take(last - first + 1).map(scored).collect();
            if rev {
                picked.reverse();
            }
            return picked;
        }
        _ if rev => {}
        _ => {
            let (offset, count) = limit;
            if offset < 0 {
                return Vec::new();
            }
            let count = if count < 0 { usize::MAX } else { count as usize };
            let (past_start, inside) =
                (|e: &Scored<'_>| bounds(by, e).0, |e: &Scored<'_>| bounds(by, e).1);
            return h
                .iter()
                .map(scored)
                .skip_while(|e| !past_start(e))
                .take_while(|e| inside(e))
                .skip(offset as usize)
                .take(count)
                .collect();
        }
    }
    // A reversed score or lex range: from the end, as Redis walks it.
    let all = members(h);
    let (offset, count) = limit;
    if offset < 0 {
        return Vec::new();
    }
    let count = if count < 0 { usize::MAX } else { count as usize };
    all[range_positions(&all, by, true)]
        .iter()
        .rev()
        .skip(offset as usize)
        .take(count)
        .copied()
        .collect()
}

/// How a `ZRANGE` family command reads its arguments.
struct RangeCall<'c> {
    by: By<'c>,
    rev: bool,
    limit: (i64, i64),
    withscores: bool,
}

/// Parses `min max [options]` from argument `at` as `name` takes them (Redis 7.0's
/// `zrangeGenericCommand`): `ZRANGE`/`ZRANGESTORE` take BYSCORE, BYLEX, REV; the older forms
/// have theirs fixed.
fn parse_range<'c>(
    cmd: &Command<'c>,
    at: usize,
    name: &str,
) -> Result<RangeCall<'c>, &'static [u8]> {
    #[derive(PartialEq, Clone, Copy)]
    enum Type {
        Auto,
        Rank,
        Score,
        Lex,
    }
    let (mut kind, mut rev) = match name {
        "zrevrange" => (Type::Rank, Some(true)),
        "zrangebyscore" => (Type::Score, Some(false)),
        "zrevrangebyscore" => (Type::Score, Some(true)),
        "zrangebylex" => (Type::Lex, Some(false)),
        "zrevrangebylex" => (Type::Lex, Some(true)),
        _ => (Type::Auto, None),
    };
    let (mut withscores, mut limit) = (false, (0i64, -1i64));
    let mut j = at + 2;
    while j < cmd.len() {
        let w = arg(cmd, j);
        let is = |x: &[u8]| w.eq_ignore_ascii_case(x);
        let left = cmd.len() - j - 1;
        if is(b"withscores") {
            withscores = true;
        } else if is(b"limit") && left >= 2 {
            let (Some(o), Some(c)) = (int_arg(arg(cmd, j + 1)), int_arg(arg(cmd, j + 2))) else {
                return Err(NOT_INTEGER);
            };
            limit = (o, c);
            j += 2;
        } else if rev.is_none() && is(b"rev") {
            rev = Some(true);
        } else if kind == Type::Auto && is(b"bylex") {
            kind = Type::Lex;
        } else if kind == Type::Auto && is(b"byscore") {
            kind = Type::Score;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == Type::Auto {
        kind = Type::Rank;
    }
    if limit.1 != -1 && kind == Type::Rank {
        return Err(b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && kind == Type::Lex {
        return Err(b"ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut lo, mut hi) = (arg(cmd, at), arg(cmd, at + 1));
    if rev && kind != Type::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let by = match kind {
        Type::Score => By::Score(ScoreRange::parse(lo, hi).ok_or(BAD_SCORE_RANGE)?),
        Type::Lex => {
            By::Lex(Lex::parse(lo).ok_or(BAD_LEX_RANGE)?, Lex::parse(hi).ok_or(BAD_LEX_RANGE)?)
        }
        _ => {
            let (Some(a), Some(b)) = (int_arg(lo), int_arg(hi)) else { return Err(NOT_INTEGER) };
            By::Rank(a, b)
        }
    };
    Ok(RangeCall { by, rev, limit, withscores })
}

/// `ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`, and
/// `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`.
pub(super) fn zrange(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let call = match parse_range(cmd, 2, c.name) {
        Ok(call) => call,
        Err(e) => return write_error(out, e),
    };
    let v = s.version;
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            // A forward range by rank, the common case, written as it is read (no vector); a
            // damaged value that ends early is answered as the general path reads it.
            if let (By::Rank(start, end), false) = (call.by, call.rev) {
                let (a, n) =
                    rank_range(start, end, h.len()).map_or((0, 0), |(a, b)| (a, b - a + 1));
                let picked = h.iter_from(h.offset_of(a)).take(n);
                let scored = picked.map(|e| Scored { member: e.field, score: score_of(&e) });
                let mark = out.len();
                if write_scored_n(out, v, (call.withscores, false), n, scored) == n {
                    return;
                }
                out.truncate(mark);
            }
            let picked = select(&h, call.by, call.rev, call.limit);
            write_scored(out, v, call.withscores, false, &picked);
        },
        |out| write_array_header(out, 0),
    );
}

/// Stores `items` as `dst`'s sorted set (replacing whatever it held, without a TTL), or deletes
/// `dst` for none; publishes `event` or `del`; answers the count.
fn store_zset(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    t: TenantId,
    dst: &[u8],
    mut items: Vec<Scored<'_>>,
    event: &str,
) {
    if items.is_empty() {
        if ctx.engine.delete(t, dst) {
            notify(ctx, t, GENERIC, "del", dst);
        }
        return write_integer(out, 0);
    }
    items.sort_by(order);
    let mut buf = Vec::new();
    let n = pack(&mut buf, &items);
    let stored = ctx.engine.store(Store {
        tenant: t,
        key: dst,
        value: &buf,
        flags: 0,
        expiry: Expiry::Never,
        condition: Condition::Always,
        cas: None,
        state: 0,
        kind: ZSET,
    });
    match stored {
        Ok(_) => {
            notify(ctx, t, ZSET_EVENTS, event, dst);
            write_integer(out, i64::from(n));
        }
        Err(e) => write_failed(out, e),
    }
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`.
pub(super) fn zrangestore(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let call = match parse_range(cmd, 3, "zrange") {
        Ok(call) if !call.withscores => call,
        Ok(_) => return write_error(out, SYNTAX),
        Err(e) => return write_error(out, e),
    };
    let (t, dst, src) = (s.tenant, arg(cmd, 1), arg(cmd, 2));
    let picked = ctx.engine.get_kind(t, src, ZSET, |item| {
        let h = Hash::new(item.value);
        select(&h, call.by, call.rev, call.limit)
            .into_iter()
            .map(|e| (e.member.to_vec(), e.score))
            .collect::<Vec<_>>()
    });
    match picked {
        Ok(picked) => {
            let picked = picked.unwrap_or_default();
            let items = picked.iter().map(|(m, s)| Scored { member: m, score: *s }).collect();
            store_zset(out, ctx, t, dst, items, "zrangestore");
        }
        Err(e) => engine_error(out, e),
    }
}

/// `ZCOUNT key min max` and `ZLEXCOUNT key min max`.
pub(super) fn zcount(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let by = if c.name == "zlexcount" {
        match (Lex::parse(arg(cmd, 2)), Lex::parse(arg(cmd, 3))) {
            (Some(a), Some(b)) => By::Lex(a, b),
            _ => return write_error(out, BAD_LEX_RANGE),
        }
    } else {
        match ScoreRange::parse(arg(cmd, 2), arg(cmd, 3)) {
            Some(r) => By::Score(r),
            None => return write_error(out, BAD_SCORE_RANGE),
        }
    };
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| write_integer(out, select(&h, by, false, (0, -1)).len() as i64),
        |out| write_integer(out, 0),
    );
}

/// `ZREMRANGEBYRANK key start stop`, `ZREMRANGEBYSCORE key min max`, `ZREMRANGEBYLEX key min
/// max`.
pub(super) fn zremrange(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (a, b) = (arg(cmd, 2), arg(cmd, 3));
    let by = match c.name {
        "zremrangebyrank" => match (int_arg(a), int_arg(b)) {
            (Some(a), Some(b)) => By::Rank(a, b),
            _ => return write_error(out, NOT_INTEGER),
        },
        "zremrangebyscore" => match ScoreRange::parse(a, b) {
            Some(r) => By::Score(r),
            None => return write_error(out, BAD_SCORE_RANGE),
        },
        _ => match (Lex::parse(a), Lex::parse(b)) {
            (Some(a), Some(b)) => By::Lex(a, b),
            _ => return write_error(out, BAD_LEX_RANGE),
        },
    };
    let (t, key) = (s.tenant, arg(cmd, 1));
    let r = remove_where(ctx, t, key, |all| {
        let picked = match by {
            By::Rank(a, b) => rank_range(a, b, all.len()).map_or(0..0, |(a, b)| a..b + 1),
            _ => range_positions(all, by, false),
        };
        (0..all.len()).map(|i| picked.contains(&i)).collect()
    });
    match r {
        Ok((n, gone)) => {
            removed(ctx, t, key, c.name, n, gone);
            write_integer(out, n as i64);
        }
        Err(e) => write_failed(out, e),
    }
}

/// What a pop took (members and scores, in pop order) and whether the set is gone.
type Popped = (Vec<(Vec<u8>, f64)>, bool);

/// Pops up to `count` members from the low (`max` false) or high end: `None` for a missing key.
fn pop(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Popped>, EngineError> {
    let r = edit_zset(ctx, t, key, false, |_, mut all| {
        let n = count.min(all.len());
        let taken: Vec<(Vec<u8>, f64)> = if max {
            all.drain(all.len() - n..).rev().map(|e| (e.member.to_vec(), e.score)).collect()
        } else {
            all.drain(..n).map(|e| (e.member.to_vec(), e.score)).collect()
        };
        Some((all, taken))
    })?;
    Ok(r)
}

/// `ZPOPMIN` and `ZPOPMAX`: `key [count]`.
pub(super) fn zpopmin(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    let max = c.name == "zpopmax";
    let count = match cmd.len() {
        2 => None,
        3 => match int_arg(arg(cmd, 2)) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return write_error(out, b"ERR value is out of range, must be positive"),
        },
        _ => return write_error(out, SYNTAX),
    };
    if count == Some(0) {
        return match ctx.engine.kind(t, key) {
            Some(k) if k != ZSET => engine_error(out, EngineError::WrongKind),
            _ => write_array_header(out, 0),
        };
    }
    match pop(ctx, t, key, max, count.unwrap_or(1)) {
        Ok(None) => write_array_header(out, 0),
        Ok(Some((taken, gone))) => {
            removed(ctx, t, key, c.name, taken.len(), gone);
            let items: Vec<Scored<'_>> =
                taken.iter().map(|(m, s)| Scored { member: m, score: *s }).collect();
            // One member without a count is a flat pair, as Redis 7.0 answers it.
            if count.is_none() {
                write_array_header(out, 2 * items.len());
                for e in &items {
                    write_bulk(out, e.member);
                    write_score(out, v, e.score);
                }
            } else {
                write_scored(out, v, true, false, &items);
            }
        }
        Err(e) => write_failed(out, e),
    }
}

/// `ZMPOP numkeys key [key …] MIN|MAX [COUNT count]`.
pub(super) fn zmpop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if !zmpop_from(cmd, 1, out, s, ctx, None) {
        write_null_array(out, s.version);
    }
}

/// ZMPOP from its `numkeys` argument at `at` on (BZMPOP's comes after its timeout): whether
/// it answered (with the members, or an error); `false` with nothing written when every
/// sorted set is empty
/// (or, for BZMPOP, not its `turn`: `crate::blocking`).
pub(super) fn zmpop_from(
    cmd: &Command<'_>,
    at: usize,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    turn: Option<&crate::blocking::Turn>,
) -> bool {
    let (t, v) = (s.tenant, s.version);
    let (keys, max, count) = match super::packed::parse_mpop(cmd, at, (b"max", b"min")) {
        Ok(m) => (m.keys, m.first_word, m.count),
        Err(e) => {
            write_error(out, e);
            return true;
        }
    };
    for i in crate::blocking::order(keys, turn.and_then(|t| t.first)) {
        let key = arg(cmd, i);
        match ctx.engine.kind(t, key) {
            None => continue,
            // A blocked command run again passes over a key of another kind.
            Some(k) if k != ZSET && turn.is_some_and(|t| t.resumed) => continue,
            Some(k) if k != ZSET => {
                engine_error(out, EngineError::WrongKind);
                return true;
            }
            Some(_) => {}
        }
        if turn.is_some_and(|turn| !turn.may_take(&ctx.shared.blocking, key)) {
            continue;
        }
        match pop(ctx, t, key, max, count) {
            Ok(Some((taken, gone))) => {
                removed(ctx, t, key, if max { "zpopmax" } else { "zpopmin" }, taken.len(), gone);
                let items: Vec<Scored<'_>> =
                    taken.iter().map(|(m, s)| Scored { member: m, score: *s }).collect();
                write_array_header(out, 2);
                write_bulk(out, key);
                write_scored(out, v, true, true, &items);
                return true;
            }
            Ok(None) => continue,
            Err(e) => {
                write_failed(out, e);
                return true;
            }
        }
    }
    false
}

/// BZPOPMIN's pop of one member of `key` (the lowest, or the highest for `max`), answered as
/// `[key, member, score]` with its events: whether it answered (`false`, nothing written,
/// for no member).
pub(super) fn pop_one(
    _: &Command<'_>,
    key: &[u8],
    max: bool,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) -> bool {
    match pop(ctx, s.tenant, key, max, 1) {
        Ok(Some((taken, gone))) => {
            removed(ctx, s.tenant, key, if max { "zpopmax" } else { "zpopmin" }, taken.len(), gone);
            let Some((member, score)) = taken.first() else { return false };
            write_array_header(out, 3);
            write_bulk(out, key);
            write_bulk(out, member);
            write_score(out, s.version, *score);
            true
        }
        Ok(None) => false,
        Err(e) => {
            write_failed(out, e);
            true
        }
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub(super) fn zrandmember(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (t, key, v) = (s.tenant, arg(cmd, 1), s.version);
    if cmd.len() == 2 {
        return read_zset(
            out,
            ctx,
            t,
            key,
            |out, h| write_random_field(out, v, h.iter()),
            |out| write_null(out, v),
        );
    }
    let count = match int_arg(arg(cmd, 2)) {
        Some(n) if n > -i64::MAX => n,
        Some(_) => return write_error(out, super::hashes::OUT_OF_RANGE),
        None => return write_error(out, NOT_INTEGER),
    };
    let scores = match cmd.len() {
        3 => false,
        4 if arg(cmd, 3).eq_ignore_ascii_case(b"withscores") => true,
        _ => return write_error(out, SYNTAX),
    };
    let (unique, count) = (count >= 0, count.unsigned_abs());
    if scores && count > (i64::MAX / 2) as u64 {
        return write_error(out, super::hashes::OUT_OF_RANGE);
    }
    read_zset(
        out,
        ctx,
        t,
        key,
        |out, h| {
            let all = members(&h);
            let picks: Vec<Scored<'_>> =
                random_picks(all.len(), count, unique).into_iter().map(|i| all[i]).collect();
            write_scored(out, v, scores, false, &picks);
        },
        |out| write_array_header(out, 0),
    );
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: a sorted set Redis would keep as a
/// listpack whole with cursor 0, a larger one in its members' hash order (`packed.rs`).
pub(super) fn zscan(
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
    read_zset(
        out,
        ctx,
        s.tenant,
        arg(cmd, 1),
        |out, h| {
            let (next, page) = scan_select(h.iter(), h.len(), is_listpack(&h), &o);
            write_scan(out, next, 2 * page.len(), |out| {
                for e in &page {
                    write_bulk(out, e.field);
                    write_bulk(out, g17(score_of(e)).as_bytes());
                }
            });
        },
        |out| write_scan(out, 0, 0, |_| ()),
    );
}

/// How ZUNION… combines a member's scores.
#[derive(Clone, Copy, PartialEq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            // inf + -inf is NaN: Redis makes it 0.
            Aggregate::Sum => {
                let s = a + b;
                if s.is_nan() { 0.0 } else { s }
            }
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// `ZUNION`, `ZINTER`, `ZDIFF` (`numkeys key … [WEIGHTS …] [AGGREGATE …] [WITHSCORES]`), their
/// `STORE` forms (`destination numkeys key …`) and `ZINTERCARD` (`numkeys key … [LIMIT n]`).
/// Sets count as sorted sets whose scores are 1.
pub(super) fn zunion(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let name = c.name;
    let store = name.ends_with("store");
    let card = name == "zintercard";
    let op = &name[1..];
    let at = if store { 2 } else { 1 };
    let numkeys = match int_arg(arg(cmd, at)) {
        Some(n) if n > 0 => n as usize,
        Some(_) => {
            out.extend_from_slice(b"-ERR at least 1 input key is needed for '");
            out.extend_from_slice(name.as_bytes());
            return out.extend_from_slice(b"' command\r\n");
        }
        None if card => return write_error(out, b"ERR numkeys should be greater than 0"),
        None => return write_error(out, NOT_INTEGER),
    };
    if numkeys > cmd.len() - at - 1 {
        return write_error(out, SYNTAX);
    }
    let keys: Vec<&[u8]> = (at + 1..at + 1 + numkeys).map(|i| arg(cmd, i)).collect();
    let mut weights = vec![1.0; numkeys];
    let (mut aggregate, mut withscores, mut limit) = (Aggregate::Sum, false, 0usize);
    let diff = op.starts_with("diff");
    let mut j = at + 1 + numkeys;
    while j < cmd.len() {
        let w = arg(cmd, j);
        let is = |x: &[u8]| w.eq_ignore_ascii_case(x);
        let left = cmd.len() - j - 1;
        if card && is(b"limit") && left >= 1 {
            match int_arg(arg(cmd, j + 1)) {
                Some(l) if l >= 0 => limit = l as usize,
                Some(_) => return write_error(out, b"ERR LIMIT can't be negative"),
                None => return write_error(out, NOT_INTEGER),
            }
            j += 2;
        } else if !card && !diff && is(b"weights") && left >= numkeys {
            for (k, w) in weights.iter_mut().enumerate() {
                match parse_redis_f64(arg(cmd, j + 1 + k)) {
                    Some(x) => *w = x,
                    None => return write_error(out, b"ERR weight value is not a float"),
                }
            }
            j += 1 + numkeys;
        } else if !card && !diff && is(b"aggregate") && left >= 1 {
            let a = arg(cmd, j + 1);
            aggregate = if a.eq_ignore_ascii_case(b"sum") {
                Aggregate::Sum
            } else if a.eq_ignore_ascii_case(b"min") {
                Aggregate::Min
            } else if a.eq_ignore_ascii_case(b"max") {
                Aggregate::Max
            } else {
                return write_error(out, SYNTAX);
            };
            j += 2;
        } else if !card && !store && is(b"withscores") {
            withscores = true;
            j += 1;
        } else {
            return write_error(out, SYNTAX);
        }
    }
    // Every input, its members and scores copied; a missing key is empty.
    let t = s.tenant;
    let mut inputs: Vec<Vec<(Vec<u8>, f64)>> = Vec::with_capacity(numkeys);
    for key in &keys {
        let read = ctx.engine.get_any(t, key, |i| match i.kind {
            ZSET => Some(
                members(&Hash::new(i.value)).iter().map(|e| (e.member.to_vec(), e.score)).collect(),
            ),
            SET => Some(Hash::new(i.value).iter().map(|e| (e.field.to_vec(), 1.0)).collect()),
            _ => None,
        });
        match read {
            None => inputs.push(Vec::new()),
            Some(Some(m)) => inputs.push(m),
            Some(None) => return engine_error(out, EngineError::WrongKind),
        }
    }
    let weighted = |x: f64, w: f64| {
        let y = x * w;
        if y.is_nan() { 0.0 } else { y }
    };
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    if op.starts_with("union") {
        let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
        for (k, input) in inputs.into_iter().enumerate() {
            for (m, x) in input {
                let x = weighted(x, weights[k]);
                match at.get(&m) {
                    Some(&n) => result[n].1 = aggregate.apply(result[n].1, x),
                    None => {
                        at.insert(m.clone(), result.len());
                        result.push((m, x));
                    }
                }
            }
        }
    } else if op.starts_with("inter") {
        let others: Vec<HashMap<Vec<u8>, f64>> =
            inputs.iter().skip(1).map(|i| i.iter().cloned().collect()).collect();
        for (m, x) in inputs.first().cloned().unwrap_or_default() {
            let mut score = weighted(x, weights[0]);
            let mut all = true;
            for (k, o) in others.iter().enumerate() {
                match o.get(&m) {
                    Some(&y) => score = aggregate.apply(score, weighted(y, weights[k + 1])),
                    None => {
                        all = false;
                        break;
                    }
                }
            }
            if all {
                result.push((m, score));
                if card && limit > 0 && result.len() >= limit {
                    break;
                }
            }
        }
    } else {
        let others: std::collections::HashSet<Vec<u8>> =
            inputs.iter().skip(1).flat_map(|i| i.iter().map(|(m, _)| m.clone())).collect();
        result = inputs.first().cloned().unwrap_or_default();
        result.retain(|(m, _)| !others.contains(m));
    }
    if card {
        return write_integer(out, result.len() as i64);
    }
    let items: Vec<Scored<'_>> =
        result.iter().map(|(m, x)| Scored { member: m, score: *x }).collect();
    if store {
        return store_zset(out, ctx, t, arg(cmd, 1), items, name);
    }
    let mut items = items;
    items.sort_by(order);
    write_scored(out, s.version, withscores, false, &items);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use fridge_engine::Splice;

    use super::{Flags, One, PackedScore, Scored, add_to, order, pack, score_of};
    use crate::types::hash::{Entry, Hash};
    use crate::types::{damaged, index, xorshift};

    /// The set `value` holds, in its order.
    fn entries(value: &[u8]) -> Vec<(Vec<u8>, f64)> {
        Hash::new(value).iter().map(|e| (e.field.to_vec(), score_of(&e))).collect()
    }

    /// The model's set in a sorted set's order.
    fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut all: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        all.sort_by(|a, b| {
            let (a, b) = (Scored { member: &a.0, score: a.1 }, Scored { member: &b.0, score: b.1 });
            order(&a, &b)
        });
        all
    }

    #[test]
    fn one_member_writes_agree_with_a_model_and_keep_a_large_sets_index_exact() {
        // Random one-member ZADDs (every flag, INCR, new and present members, ties of score)
        // on a set that grows from nothing past the index's threshold and through several
        // doublings of its table, with members now and then removed by a rebuild (ZREM's and
        // ZPOPMIN's path, which drops the set below the threshold at times): after every
        // step the set is the model's, in order, and its index describes it exactly.
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let mut value: Vec<u8> = Vec::new();
        let (mut indexed, mut buf, mut joined, mut splice) =
            (0, Vec::new(), Vec::new(), Splice::default());
        for step in 0..12_000u64 {
            let universe = if step < 8_000 { 1 + step / 16 } else { 500 };
            let member = format!("member:{:05}", next() % universe).into_bytes();
            let score = match next() % 3 {
                0 => (next() % 50) as f64,
                1 => (next() % 4000) as f64 / 4.0 - 300.0,
                _ => next() as f64,
            };
            let bits = next();
            let (nx, xx, incr) = (bits & 7 == 0, bits & 7 == 1, bits & 24 == 0);
            let (gt, lt) = if nx { (false, false) } else { (bits & 96 == 32, bits & 96 == 64) };
            let f = Flags { nx, xx, gt, lt, incr };
            // What Redis does.
            let want = match model.get(&member).copied() {
                Some(_) if nx => One::Unchanged(Some((0, 0, None))),
                Some(old) => {
                    let new = if incr { old + score } else { score };
                    if (gt && new <= old) || (lt && new >= old) {
                        One::Unchanged(Some((0, 0, None)))
                    } else if new == old {
                        One::Unchanged(Some((0, 0, Some(new))))
                    } else {
                        model.insert(member.clone(), new);
                        One::Written((0, 1, Some(new)))
                    }
                }
                None if xx => One::Unchanged(Some((0, 0, None))),
                None => {
                    model.insert(member.clone(), score);
                    One::Written((1, 0, Some(score)))
                }
            };
            let got = add_to(&value, Scored { member: &member, score }, f, &mut buf, &mut splice);
            assert_eq!(got, want, "step {step}");
            if let One::Written(_) = got {
                if splice.is_empty() {
                    value = buf.clone();
                } else {
                    splice.join(&value, &buf, &mut joined);
                    std::mem::swap(&mut value, &mut joined);
                }
            }
            if next() % 400 == 0 {
                // A rebuild without some members.
                model.retain(|_, _| next() % 4 != 0);
                let all = sorted(&model);
                let scored: Vec<Scored<'_>> =
                    all.iter().map(|(m, s)| Scored { member: m, score: *s }).collect();
                pack(&mut buf, &scored);
                value = buf.clone();
            }
            Hash::validate_index(&value);
            let h = Hash::new(&value);
            indexed += usize::from(h.index().is_some());
            assert_eq!(h.index().is_some(), model.len() >= index::MIN_ENTRIES, "step {step}");
            let all = sorted(&model);
            assert_eq!(entries(&value), all, "step {step}");
            let rank = all.iter().position(|(m, _)| *m == member);
            assert_eq!(h.rank(&member), rank, "step {step}");
        }
        assert!(indexed > 6_000, "the index was exercised: {indexed} steps");
    }

    #[test]
    fn damaged_indexed_sets_read_and_write_without_a_panic() {
        // An indexed set with random bytes changed anywhere (entries, table, starts, trailer,
        // header): every read stays within the bytes, and a one-member write either passes
        // over the index or rebuilds it.
        let members: Vec<Vec<u8>> = (0..300).map(|i| format!("m{i:04}").into_bytes()).collect();
        let scored: Vec<Scored<'_>> = members
            .iter()
            .enumerate()
            .map(|(i, m)| Scored { member: m, score: i as f64 })
            .collect();
        let mut valid = Vec::new();
        pack(&mut valid, &scored);
        assert!(Hash::new(&valid).index().is_some());
        let mut next = xorshift(0xDEAD_BEEF_CAFE_F00D);
        let (mut buf, mut splice, mut joined) = (Vec::new(), Splice::default(), Vec::new());
        for _ in 0..6_000 {
            let v = damaged(&valid, &mut next);
            let h = Hash::new(&v);
            let m = &members[(next() % 300) as usize];
            assert!(h.find(m).is_none_or(|(span, _)| span.end <= v.len()));
            assert!(h.rank(m).is_none_or(|r| r < h.len()));
            assert!(h.offset_of((next() % 310) as usize) <= v.len());
            let (at, _) = h.partition_point(super::after(Scored { member: m, score: 7.5 }));
            assert!(at <= v.len());
            let bits = next();
            let f = Flags { nx: false, xx: false, gt: false, lt: false, incr: bits & 1 == 0 };
            let a = Scored { member: m, score: (bits % 1000) as f64 };
            if let One::Written(_) = add_to(&v, a, f, &mut buf, &mut splice) {
                if !splice.is_empty() {
                    splice.join(&v, &buf, &mut joined);
                }
            }
        }
    }

    #[test]
    fn packed_scores_read_back_exactly_and_small_integers_take_few_bytes() {
        let big = (1u64 << 54) as f64;
        for (score, len) in [
            (0.0, 0),
            (1.0, 1),
            (-1.0, 1),
            (127.0, 1),
            (128.0, 2),
            (-128.0, 1),
            (-129.0, 2),
            (big, 7),
            (-big, 7),
            (1.5, 8),
            (-0.25, 8),
            (f64::INFINITY, 8),
            (f64::NEG_INFINITY, 8),
            ((1u64 << 60) as f64, 8),
            (1e300, 8),
            (f64::MIN_POSITIVE, 8),
        ] {
            let p = PackedScore::of(score);
            assert_eq!(p.bytes().len(), len, "{score}");
            let e = Entry { field: b"m", value: p.bytes(), deadline: 0 };
            assert_eq!(score_of(&e).to_bits(), score.to_bits(), "{score}");
        }
    }

    #[test]
    fn a_new_score_keeps_the_width_of_the_old_where_it_fits() {
        for (score, width, len) in [
            (5.0, 2, 2),
            (-3.0, 7, 7),
            (-129.0, 2, 2),
            (300.0, 1, 2),
            (5.0, 8, 8),
            (-0.0 + 0.0, 8, 8),
            (1.5, 2, 8),
            (0.0, 3, 3),
            (7.0, 0, 1),
            ((1u64 << 60) as f64, 3, 8),
        ] {
            let p = PackedScore::within(score, width);
            assert_eq!(p.bytes().len(), len, "{score} in {width}");
            let e = Entry { field: b"m", value: p.bytes(), deadline: 0 };
            assert_eq!(score_of(&e).to_bits(), score.to_bits(), "{score} in {width}");
        }
        // A set, with and without an index, whose members' scores narrow keeps its length
        // (and so is edited in place); one that widens does not.
        for n in [10u32, 300] {
            let members: Vec<Vec<u8>> = (0..n).map(|i| format!("m{i:04}").into_bytes()).collect();
            let scored: Vec<Scored<'_>> = (members.iter().enumerate())
                .map(|(i, m)| Scored { member: m, score: (i * 300 / n as usize) as f64 - 150.0 })
                .collect();
            let mut value = Vec::new();
            pack(&mut value, &scored);
            let (mut buf, mut splice, mut joined) = (Vec::new(), Splice::default(), Vec::new());
            let f = Flags { nx: false, xx: false, gt: false, lt: false, incr: false };
            // -150 (2 bytes) → -100 (1 byte, kept in 2) → -140 (2) → the last member's
            // 120 or 149 (1 or 2 bytes) → 70,000 (3).
            let last = n as usize - 1;
            for (member, score, grows) in
                [(0, -100.0, false), (0, -140.0, false), (last, 70_000.0, true)]
            {
                let a = Scored { member: &members[member], score };
                let got = add_to(&value, a, f, &mut buf, &mut splice);
                assert_eq!(got, One::Written((0, 1, Some(score))));
                if splice.is_empty() {
                    joined.clone_from(&buf);
                } else {
                    splice.join(&value, &buf, &mut joined);
                }
                assert_eq!(joined.len() == value.len(), !grows, "{n} members, {score}");
                std::mem::swap(&mut value, &mut joined);
                Hash::validate_index(&value);
                let h = Hash::new(&value);
                let got = h.get(&members[member], 0).map(|e| score_of(&e));
                assert_eq!(got, Some(score), "{n} members, {score}");
            }
        }
    }
}
