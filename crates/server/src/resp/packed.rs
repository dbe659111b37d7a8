//! What the commands on packed collections (`hashes.rs`, `sets.rs`) share: the fields a
//! command names ([`Named`]), a rewrite that copies unchanged runs whole ([`rewrite`]), random
//! picks (HRANDFIELD, SRANDMEMBER, SPOP) and the paging of HSCAN and SSCAN.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use fridge_proto::resp::Command;

use fridge_engine::{EngineError, Kind, TenantId, Update};

use super::glob::glob_match;
use super::{NOT_INTEGER, SYNTAX, engine_error, int_arg, notify_only};
use crate::keyspace::KEY_MISS;
use crate::session::Ctx;
use crate::types::hash::{Builder, Entry, Hash, Place, same, write_one};

fn arg<'c>(cmd: &Command<'c>, i: usize) -> &'c [u8] {
    cmd.get(i).unwrap_or_default()
}

/// Fields [`Named`] compares one by one; more are looked up in a map.
pub(super) const FEW: usize = 8;

/// The fields a command names — arguments `first`, `first + step`, … — and which of them an
/// entry of the hash matches: by comparison for a few, through a map for many, so a command
/// naming m fields against a hash of n costs O(n + m), never O(n × m).
pub(super) struct Named<'c> {
    cmd: &'c Command<'c>,
    first: usize,
    step: usize,
    pub(super) n: usize,
    /// For a few fields: the fields, compared in place.
    few: [&'c [u8]; FEW],
    /// For many fields: each field's first and last mention (indexes `0..n`).
    map: Option<HashMap<&'c [u8], (usize, usize)>>,
}

impl<'c> Named<'c> {
    pub(super) fn new(cmd: &'c Command<'c>, first: usize, step: usize) -> Named<'c> {
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
    pub(super) fn field(&self, i: usize) -> &'c [u8] {
        arg(self.cmd, self.first + i * self.step)
    }

    /// The argument after the `i`-th field (its value).
    pub(super) fn value(&self, i: usize) -> &'c [u8] {
        arg(self.cmd, self.first + i * self.step + 1)
    }

    /// The last mention of `field`, if named.
    pub(super) fn last(&self, field: &[u8]) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(field).map(|e| e.1),
            None => (0..self.n).rev().find(|&i| same(self.few[i], field)),
        }
    }

    /// Whether the `i`-th field is its first mention.
    pub(super) fn is_first(&self, i: usize) -> bool {
        let f = self.field(i);
        match &self.map {
            Some(m) => m.get(f).is_some_and(|e| e.0 == i),
            None => (0..i).all(|j| self.field(j) != f),
        }
    }
}

/// What [`rewrite`] does with one entry of the old hash.
pub(super) enum Edit<'v> {
    Keep,
    Drop,
    /// Keep the field with this value and deadline.
    Replace(&'v [u8], u64),
}

/// Writes the hash `old` into `b`, each live entry as `edit` says; expired fields are
/// dropped. Runs of kept entries are copied in one piece, so an update of one field of a
/// large hash costs a scan and two copies, not a re-encoding of every field.
pub(super) fn rewrite<'a: 'v, 'v>(
    old: &Hash<'a>,
    b: &mut Builder<'_>,
    now: u64,
    mut edit: impl FnMut(&Entry<'a>) -> Edit<'v>,
) {
    // The run of kept entries not yet copied: its bytes and its number of entries. Runs are
    // copied whole only between hashes of one format.
    let mut run = 0..0;
    let mut run_len = 0;
    let same_format = old.timed() == b.timed();
    for (span, e) in old.spans() {
        let what = if e.expired(now) { Edit::Drop } else { edit(&e) };
        if let (Edit::Keep, false) = (&what, same_format) {
            b.push(e);
            continue;
        }
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

/// Removes the entry `m` from `key`'s packed value of `kind` — a set's member, a sorted set's
/// — deleting a value it empties, by one lookup (through the index of a large one) and the
/// runs around the entry copied once (`write_one`): returns 1 or 0 and whether the key was
/// deleted. Not for a hash with field deadlines, whose expired fields would stay behind.
pub(super) fn remove_one(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    (key, kind): (&[u8], Kind),
    m: &[u8],
) -> Result<(usize, bool), EngineError> {
    ctx.engine.update_kind_spliced(t, key, kind, |cur, buf, splice| {
        let Some(c) = cur else { return Ok(Update::Done((0, false))) };
        let old = Hash::new(c.value);
        let Some(((span, _), rank)) = old.find_ranked(m) else {
            return Ok(Update::Done((0, false)));
        };
        if old.len() == 1 {
            return Ok(Update::Delete((1, true)));
        }
        write_one(old, c.value, Some((span, rank)), None, Place::Last, buf, splice);
        Ok(Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: (1, false) })
    })
}

/// Which of n named fields matched an entry: bits for a few, a vector for many.
pub(super) enum Matched {
    Few(u64),
    Many(Vec<bool>),
}

impl Matched {
    pub(super) fn new(n: usize) -> Matched {
        if n <= 64 { Matched::Few(0) } else { Matched::Many(vec![false; n]) }
    }

    pub(super) fn set(&mut self, i: usize) {
        match self {
            Matched::Few(bits) => *bits |= 1 << i,
            Matched::Many(v) => v[i] = true,
        }
    }

    pub(super) fn get(&self, i: usize) -> bool {
        match self {
            Matched::Few(bits) => bits & (1 << i) != 0,
            Matched::Many(v) => v[i],
        }
    }
}

/// A random number generator for HRANDFIELD, SRANDMEMBER, SPOP (xorshift64*, seeded per call).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new() -> Rng {
        let seed = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Rng(seed | 1)
    }

    /// A number below `n` (> 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

/// A field's position in HSCAN's and SSCAN's order: a fixed hash of its bytes.
pub(super) fn scan_order(field: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    h.write(field);
    // 0 is the cursor that starts (and ends) a scan.
    h.finish().max(1)
}

/// Calls HSCAN or SSCAN makes at most over a large hash, whatever its COUNT: each call returns at
/// least 1/`SCAN_CALLS` of the fields, so a whole scan costs O(fields), not O(fields²/COUNT).
const SCAN_CALLS: usize = 64;

/// Reads `key`'s collection of `kind` into `f`, or answers WRONGTYPE; for a missing key
/// `on_miss` writes the reply (after a `keymiss` notification).
pub(super) fn read(
    out: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    (t, key, kind): (TenantId, &[u8], Kind),
    f: impl FnOnce(&mut Vec<u8>, Hash<'_>),
    on_miss: impl FnOnce(&mut Vec<u8>),
) {
    match ctx.engine.get_kind(t, key, kind, |item| f(out, Hash::new(item.value))) {
        Ok(Some(())) => {}
        Ok(None) => {
            notify_only(ctx, t, KEY_MISS, "keymiss", key);
            on_miss(out);
        }
        Err(e) => engine_error(out, e),
    }
}

/// What a scan returns of `entries` (a collection of `len`): all of them, with cursor 0, for
/// a collection Redis would keep small (`whole`), else one [`scan_page`]; then those whose
/// field `MATCH`es.
pub(super) fn scan_select<'a>(
    entries: impl Iterator<Item = Entry<'a>>,
    len: usize,
    whole: bool,
    o: &ScanOptions<'_>,
) -> (u64, Vec<Entry<'a>>) {
    let keep = |e: &Entry<'_>| o.pattern.is_none_or(|p| glob_match(p, e.field));
    if whole {
        return (0, entries.filter(keep).collect());
    }
    let (next, page) = scan_page(entries, len, o.cursor, o.count);
    (next, page.into_iter().filter(keep).collect())
}

/// A scan's reply: the next cursor, then `n` strings that `body` writes.
pub(super) fn write_scan(out: &mut Vec<u8>, next: u64, n: usize, body: impl FnOnce(&mut Vec<u8>)) {
    fridge_proto::resp::write_array_header(out, 2);
    fridge_proto::resp::write_bulk(out, next.to_string().as_bytes());
    fridge_proto::resp::write_array_header(out, n);
    body(out);
}

/// Where LMPOP's and ZMPOP's arguments are: `numkeys key [key …] WHERE [COUNT count]` from
/// `at` on, `WHERE` one of `words` (`Ok.1`: whether it is the first).
pub(super) struct Mpop {
    pub keys: std::ops::Range<usize>,
    pub first_word: bool,
    pub count: usize,
}

/// Parses [`Mpop`]'s arguments with Redis 7.0's errors.
pub(super) fn parse_mpop(
    cmd: &Command<'_>,
    at: usize,
    words: (&[u8], &[u8]),
) -> Result<Mpop, &'static [u8]> {
    let numkeys = match int_arg(arg(cmd, at)) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(b"ERR numkeys should be greater than 0"),
    };
    let first = at + 1;
    if first + numkeys >= cmd.len() {
        return Err(SYNTAX);
    }
    let w = arg(cmd, first + numkeys);
    let first_word = if w.eq_ignore_ascii_case(words.0) {
        true
    } else if w.eq_ignore_ascii_case(words.1) {
        false
    } else {
        return Err(SYNTAX);
    };
    let mut count = 1;
    match cmd.len() - (first + 1 + numkeys) {
        0 => {}
        2 if arg(cmd, first + 1 + numkeys).eq_ignore_ascii_case(b"count") => {
            match int_arg(arg(cmd, first + 2 + numkeys)) {
                Some(n) if n > 0 => count = n as usize,
                _ => return Err(b"ERR count should be greater than 0"),
            }
        }
        _ => return Err(SYNTAX),
    }
    Ok(Mpop { keys: first..first + numkeys, first_word, count })
}

/// One random entry's field (HRANDFIELD, SRANDMEMBER, ZRANDMEMBER without a count), or nil for
/// none: the entries are walked twice (to count, then to the pick), nothing is collected.
pub(super) fn write_random_field<'a>(
    out: &mut Vec<u8>,
    v: fridge_proto::resp::Version,
    entries: impl Iterator<Item = Entry<'a>> + Clone,
) {
    match entries.clone().count() {
        0 => fridge_proto::resp::write_null(out, v),
        n => {
            let pick = entries.clone().nth(Rng::new().below(n));
            fridge_proto::resp::write_bulk(out, pick.map_or(&[][..], |e| e.field));
        }
    }
}

/// `count` random picks among `n` entries, as Redis's HRANDFIELD and SRANDMEMBER choose
/// them: distinct ones (`unique`; all of them when `count` is at least `n`) or `count` with
/// repetition.
pub(super) fn random_picks(n: usize, count: u64, unique: bool) -> Vec<usize> {
    if count == 0 || n == 0 {
        return Vec::new();
    }
    let mut rng = Rng::new();
    if !unique {
        return (0..count).map(|_| rng.below(n)).collect();
    }
    if count as usize >= n {
        return (0..n).collect();
    }
    // A partial Fisher–Yates shuffle: `count` distinct entries.
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..count as usize {
        let j = i + rng.below(n - i);
        order.swap(i, j);
    }
    order.truncate(count as usize);
    order
}

/// The options of HSCAN and SSCAN: `key cursor [MATCH pattern] [COUNT count]`, and for HSCAN
/// `NOVALUES` (Redis 7.4's).
pub(super) struct ScanOptions<'c> {
    pub cursor: u64,
    pub pattern: Option<&'c [u8]>,
    pub count: usize,
    /// Whether values come with the fields (not after `NOVALUES`).
    pub values: bool,
}

impl<'c> ScanOptions<'c> {
    /// Parses the options from argument `at` (the cursor) on; `novalues`: whether
    /// `NOVALUES` is taken. Errors are Redis's.
    pub(super) fn parse(
        cmd: &Command<'c>,
        at: usize,
        novalues: bool,
    ) -> Result<ScanOptions<'c>, &'static [u8]> {
        let cursor = std::str::from_utf8(arg(cmd, at))
            .ok()
            .and_then(|c| c.parse::<u64>().ok())
            .ok_or(&b"ERR invalid cursor"[..])?;
        let mut o = ScanOptions { cursor, pattern: None, count: 10, values: true };
        let mut i = at + 1;
        while i < cmd.len() {
            let w = arg(cmd, i);
            if novalues && w.eq_ignore_ascii_case(b"novalues") {
                o.values = false;
                i += 1;
                continue;
            }
            if i + 1 >= cmd.len() {
                return Err(SYNTAX);
            }
            if w.eq_ignore_ascii_case(b"match") {
                o.pattern = Some(arg(cmd, i + 1));
            } else if w.eq_ignore_ascii_case(b"count") {
                match int_arg(arg(cmd, i + 1)) {
                    Some(c) if c >= 1 => o.count = usize::try_from(c).unwrap_or(usize::MAX),
                    Some(_) => return Err(SYNTAX),
                    None => return Err(NOT_INTEGER),
                }
            } else {
                return Err(SYNTAX);
            }
            i += 2;
        }
        Ok(o)
    }
}

/// One page of a scan over a collection past Redis's small encodings: the entries whose
/// [`scan_order`] is at least `cursor`, the smallest first, at least `count` of them and at
/// least 1/[`SCAN_CALLS`] of the `len` entries, and the cursor of the next page (0 after the
/// last). Entries of one order value stay on one page.
pub(super) fn scan_page<'a>(
    entries: impl Iterator<Item = Entry<'a>>,
    len: usize,
    cursor: u64,
    count: usize,
) -> (u64, Vec<Entry<'a>>) {
    let mut next: Vec<(u64, Entry<'a>)> =
        entries.map(|e| (scan_order(e.field), e)).filter(|(o, _)| *o >= cursor).collect();
    let take = count.max(len.div_ceil(SCAN_CALLS));
    let next_cursor = if next.len() > take {
        next.select_nth_unstable_by_key(take, |(o, _)| *o);
        let rest = next[take..].iter().map(|(o, _)| *o).min().unwrap_or(0);
        next.retain(|(o, _)| *o < rest);
        rest
    } else {
        0
    };
    next.sort_unstable_by_key(|(o, _)| *o);
    (next_cursor, next.into_iter().map(|(_, e)| e).collect())
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

    #[test]
    fn a_rewrite_into_the_timed_format_re_encodes_kept_entries() {
        let old = packed(false, &[("a", "1", 0), ("b", "2", 0), ("c", "3", 0)]);
        let mut buf = Vec::new();
        let mut b = Builder::new(&mut buf, true);
        rewrite(&Hash::new(&old), &mut b, 0, |e| match e.field {
            b"b" => Edit::Replace(b"2", 99),
            _ => Edit::Keep,
        });
        b.finish();
        assert_eq!(buf, packed(true, &[("a", "1", 0), ("b", "2", 99), ("c", "3", 0)]));
    }
}
