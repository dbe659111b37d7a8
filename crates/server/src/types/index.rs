//! The index of a large packed value: a sorted set or a hash of [`MIN_ENTRIES`] entries or
//! more finds a member or a field, a sorted set its rank and the place of a new score,
//! without a pass over its entries — what Redis's dict and skiplist give its large sorted
//! sets and hashes — while adding about 1.5 bytes per entry, so that a write, which copies
//! the whole value into a new item of the log, copies little more than the entries. It
//! follows the entries, in the same item:
//!
//! ```text
//!  header │ entries … │ tags: count × u8 │ marks: m × (offset u32, rank u32) │ m: u32 │ entries_end: u32
//!
//!  header's format: INDEXED set
//!  tags:  one byte of each entry's field's hash (xxh3's top byte), in entry order
//!  marks: where some entries start, with their ranks, both ascending: the first is the first
//!         entry (rank 0), and no more than MAX_BLOCK entries lie from one mark to the next
//!         (or to the end) — a block
//!  all u32 little-endian; entries_end: where the entries end (the tags' start)
//! ```
//!
//! A lookup scans the tags for the field's (a byte compare per entry, in vector registers),
//! and for each entry whose tag matches — one in 256 of the others — finds where it starts
//! from its block's mark (at most `MAX_BLOCK - 1` entries skipped) and compares the field;
//! the rank comes with it. A place by score is a binary search of the marks, then a pass
//! within one block. A one-entry change rewrites the index in one pass ([`write_edited`]):
//! the tags with one removed and one inserted (or only one removed), each mark's offset moved
//! by the bytes removed and inserted before it and its rank by the entries; a block that
//! grows past [`MAX_BLOCK`] gets a mark in its middle.
//!
//! Writers that rebuild a value from its entries append a new index ([`build`], [`write`]);
//! readers never
//! trust it further than the bytes: an index whose sizes do not add up to its value is
//! ignored, and every offset is read through the bounds-checked reader
//! ([`super::hash::Hash`]), so a damaged value reads as a damaged collection, never a panic.

use fridge_engine::bytes;

use super::pack::{self, INDEXED};

/// Entries from which a sorted set or a hash carries an index (Redis's
/// `zset-max-listpack-entries`: where Redis leaves its listpack for a skiplist; a hash uses
/// the same, below Redis's 512 for hashes, since its writes, unlike Redis's, copy the value).
pub(crate) const MIN_ENTRIES: usize = 128;

/// Entries between marks when an index is built.
const BLOCK: usize = 16;

/// The most entries from one mark to the next.
pub(crate) const MAX_BLOCK: usize = 32;

/// Bytes of the trailer: `m`, `entries_end`.
const TRAILER: usize = 8;

/// The tag of a field: its hash's top byte.
#[inline]
pub(crate) fn tag(field: &[u8]) -> u8 {
    (xxhash_rust::xxh3::xxh3_64(field) >> 56) as u8
}

/// The u32 at `i` of `words` (little-endian), 0 past the end.
#[inline]
fn word(words: &[u8], i: usize) -> u32 {
    match words.get(4 * i..4 * i + 4) {
        Some(w) => u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
        None => 0,
    }
}

/// An index, borrowed from its value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Index<'a> {
    tags: &'a [u8],
    marks: &'a [u8],
}

/// Splits a packed value into its header and entries, and its index if it has a well-formed
/// one (the format says so, the sizes add up to the value's length, and a set with entries
/// has a first mark).
pub(crate) fn split(value: &[u8]) -> (&[u8], Option<Index<'_>>) {
    let (format, count) = pack::header(value);
    if format & INDEXED == 0 {
        return (value, None);
    }
    let parsed = (|| {
        let tail = value.len().checked_sub(TRAILER)?;
        let marks = word(&value[tail..], 0) as usize;
        let end = word(&value[tail..], 1) as usize;
        let marks_len = marks.checked_mul(8)?;
        let ok = end >= pack::HEADER_LEN
            && (marks > 0 || count == 0)
            && end.checked_add(count as usize)?.checked_add(marks_len)? == tail;
        ok.then(|| {
            let (tags, marks) = value[end..tail].split_at(count as usize);
            (end, Index { tags, marks })
        })
    })();
    match parsed {
        Some((end, index)) => (&value[..end], Some(index)),
        None => (value, None),
    }
}

impl<'a> Index<'a> {
    /// Marks.
    pub(crate) fn marks(&self) -> usize {
        self.marks.len() / 8
    }

    /// The tags, as the value holds them (one per entry, in entry order).
    pub(crate) fn tags(&self) -> &'a [u8] {
        self.tags
    }

    /// The marks, as the value holds them.
    pub(crate) fn marks_raw(&self) -> &'a [u8] {
        self.marks
    }

    /// Mark `k`: where its entry starts, and its rank.
    #[inline]
    pub(crate) fn mark(&self, k: usize) -> (usize, usize) {
        (word(self.marks, 2 * k) as usize, word(self.marks, 2 * k + 1) as usize)
    }

    /// The last mark at or before rank `rank` (a binary search of the marks' ranks).
    pub(crate) fn mark_before(&self, rank: usize) -> (usize, usize) {
        self.mark(self.last_mark_at_or_before(0, self.marks(), rank))
    }

    /// The last mark `k` in `lo..hi` whose rank is at most `rank`, given that mark `lo`'s is
    /// (a binary search; `lo` where the range holds no other).
    fn last_mark_at_or_before(&self, mut lo: usize, mut hi: usize, rank: usize) -> usize {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.mark(mid).1 <= rank {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The last mark at or before rank `rank`, by its number, searched from mark `from` on
    /// (one at or before `rank`): a gallop forward, then a binary search of the last step.
    /// For the candidates of one lookup, which ascend: each search starts where the last one
    /// ended, so the marks between two candidates cost a few steps, not a search of all of
    /// them (at 100,000 entries, about 390 candidates among 6,000 marks).
    pub(crate) fn mark_from(&self, from: usize, rank: usize) -> usize {
        let n = self.marks();
        let (mut lo, mut step) = (from, 1);
        let hi = loop {
            let probe = lo + step;
            if probe >= n {
                break n;
            }
            if self.mark(probe).1 > rank {
                break probe;
            }
            lo = probe;
            step *= 2;
        };
        self.last_mark_at_or_before(lo, hi, rank)
    }

    /// The ranks of the entries whose tag is `t`, ascending: 32 tags compared at a time, into
    /// a bit mask ([`fridge_engine::bytes::equal_mask`], in vector registers).
    pub(crate) fn candidates(&self, t: u8) -> impl Iterator<Item = usize> + 'a {
        let mut chunks = self.tags.chunks(32).enumerate();
        let (mut base, mut mask) = (0usize, 0u32);
        std::iter::from_fn(move || {
            loop {
                if mask != 0 {
                    let bit = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    return Some(base + bit);
                }
                let (i, chunk) = chunks.next()?;
                base = 32 * i;
                mask = match chunk.try_into() {
                    Ok(whole) => bytes::equal_mask(whole, t),
                    // The last chunk, short of 32.
                    Err(_) => {
                        chunk.iter().enumerate().fold(0, |m, (j, &b)| m | u32::from(b == t) << j)
                    }
                };
            }
        })
    }
}

/// A new index, built from a value's entries ([`build`]) to be appended to it ([`write`]).
#[derive(Debug)]
pub(crate) struct Built {
    tags: Vec<u8>,
    marks: Vec<(u32, u32)>,
}

/// The index of `count` entries given as (where each starts, its field), in order; `None`
/// where fewer can be read (malformed entries get no index: readers then pass over them).
pub(crate) fn build<'f>(
    entries: impl Iterator<Item = (usize, &'f [u8])>,
    count: usize,
    end: usize,
) -> Option<Built> {
    // Each entry takes at least two bytes: a count beyond that is not believed.
    let count_max = count.min(end / 2);
    let mut tags = Vec::with_capacity(count_max);
    let mut marks = Vec::with_capacity(count_max / BLOCK + 1);
    for (i, (start, field)) in entries.enumerate() {
        tags.push(tag(field));
        if i % BLOCK == 0 {
            marks.push((start as u32, i as u32));
        }
    }
    (tags.len() == count).then_some(Built { tags, marks })
}

/// Appends `built` to the packed value in `buf` (whose entries it was built from, ending at
/// the buffer's end) and marks its format.
pub(crate) fn write(buf: &mut Vec<u8>, built: Built) {
    let end = buf.len();
    buf.extend_from_slice(&built.tags);
    write_marks(buf, &built.marks, end);
    buf[0] |= INDEXED;
}

/// Appends the marks and the trailer.
fn write_marks(buf: &mut Vec<u8>, marks: &[(u32, u32)], end: usize) {
    buf.reserve(8 * marks.len() + TRAILER);
    for &(offset, rank) in marks {
        buf.extend_from_slice(&offset.to_le_bytes());
        buf.extend_from_slice(&rank.to_le_bytes());
    }
    buf.extend_from_slice(&(marks.len() as u32).to_le_bytes());
    buf.extend_from_slice(&(end as u32).to_le_bytes());
}

/// Appends the marks and the trailer of the index of a value whose entry starting at `at` was
/// replaced in place by one `delta` bytes longer (shorter where negative), the entries having
/// ended at `end`: the tags (copied by the caller) and the ranks stay, and each offset past
/// `at` moves by `delta`.
pub(crate) fn write_marks_moved(
    buf: &mut Vec<u8>,
    index: &Index<'_>,
    at: usize,
    delta: isize,
    end: usize,
) {
    let moved = |x: usize| if x > at { x.wrapping_add_signed(delta) } else { x };
    buf.reserve(index.marks.len() + TRAILER);
    for k in 0..index.marks() {
        let (offset, rank) = index.mark(k);
        buf.extend_from_slice(&(moved(offset) as u32).to_le_bytes());
        buf.extend_from_slice(&(rank as u32).to_le_bytes());
    }
    buf.extend_from_slice(&(index.marks() as u32).to_le_bytes());
    buf.extend_from_slice(&(moved(end) as u32).to_le_bytes());
}

/// Appends, after the old index's tags, the new entry's tag and the old marks (copied by the
/// caller, in that order), the rest of the index of a value with one entry appended at `start`
/// (the old entries' end), ending at `end`: a mark of the new entry where the last block
/// already holds [`BLOCK`] entries, and the trailer.
pub(crate) fn write_appended(buf: &mut Vec<u8>, index: &Index<'_>, start: usize, end: usize) {
    let count = index.tags.len();
    let mut m = index.marks();
    let (_, last) = index.mark(m.saturating_sub(1));
    if m == 0 || count - last >= BLOCK {
        buf.extend_from_slice(&(start as u32).to_le_bytes());
        buf.extend_from_slice(&(count as u32).to_le_bytes());
        m += 1;
    }
    buf.extend_from_slice(&(m as u32).to_le_bytes());
    buf.extend_from_slice(&(end as u32).to_le_bytes());
}

/// A one-entry change of an indexed value: the entry at `removed` (its span and rank) goes,
/// if any, and a new entry of `len` bytes whose field has tag `tag` goes in where the entry
/// at `at` started (the entries' end for the last place), before the old entries' `before`
/// first ones — offsets and ranks of the old value. A `len` of 0 puts no entry in (every
/// entry takes two bytes or more): the change is the removal alone (`at`, `before` and `tag`
/// then unused).
#[derive(Debug, Clone)]
pub(crate) struct Edit {
    pub removed: Option<(std::ops::Range<usize>, usize)>,
    pub at: usize,
    pub before: usize,
    pub len: usize,
    pub tag: u8,
}

/// The value an index's edit starts from: where its entries end, how many there are, and
/// where the entry of a rank starts (through `index`).
pub(crate) struct Old<F: Fn(usize) -> Option<usize>> {
    pub end: usize,
    pub len: usize,
    pub offset_of_rank: F,
}

/// The marks [`write_edited`] writes, as it writes them.
struct MarkWriter {
    /// The new entry's rank, and where the entries end.
    rank: usize,
    new_end: usize,
    /// The greatest offset offered so far, and the marks written.
    last: usize,
    m: u32,
    /// The last mark at or before `rank`, and where it ends in the buffer; the first rank
    /// marked after `rank`.
    first: usize,
    first_end: usize,
    next: usize,
}

impl MarkWriter {
    /// Writes a mark of the entry of rank `q` at `offset`, unless it is not past the last one
    /// or not before the end.
    fn put(&mut self, buf: &mut Vec<u8>, offset: usize, q: usize) {
        if offset > self.last && offset < self.new_end {
            let mut mark = [0u8; 8];
            mark[..4].copy_from_slice(&(offset as u32).to_le_bytes());
            mark[4..].copy_from_slice(&(q as u32).to_le_bytes());
            buf.extend_from_slice(&mark);
            self.m += 1;
            if q <= self.rank {
                (self.first, self.first_end) = (q, buf.len());
            } else {
                self.next = self.next.min(q);
            }
        }
        self.last = self.last.max(offset);
    }
}

/// The first `k` in `lo..hi` where `below(k)` no longer holds (a binary search: `below` holds
/// on a prefix).
fn partition_point(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Appends to `buf` the index of the value `edit` makes of `old` (indexed by `index`): the
/// tags with the removed entry's taken out and the new one's put in at its rank; each mark
/// moved by the bytes and entries removed and inserted before it (a mark of the removed entry
/// then marks what takes its place); a first mark where a new first entry went in; and, where
/// the new entry's block grew past [`MAX_BLOCK`], a mark in its middle. A removal alone only
/// shrinks blocks.
pub(crate) fn write_edited<F: Fn(usize) -> Option<usize>>(
    buf: &mut Vec<u8>,
    old: Old<F>,
    index: &Index<'_>,
    edit: &Edit,
) {
    let (removed_len, removed_end) = match &edit.removed {
        Some((span, _)) => (span.len(), span.end),
        None => (0, usize::MAX),
    };
    let (at, len) = (edit.at, edit.len);
    let inserted = len > 0;
    // Where an old entry starting at `x` starts now (none starts inside the removed one).
    let moved = |x: usize| {
        x - if x >= removed_end { removed_len } else { 0 } + if x >= at { len } else { 0 }
    };
    let new_start = moved(at) - len;
    let new_end = moved(old.end);
    let removed = edit.removed.as_ref().map(|(_, d)| *d);
    let count = old.len + usize::from(inserted) - usize::from(removed.is_some());
    let rank = match (inserted, removed) {
        (true, _) => edit.before - usize::from(removed.is_some_and(|d| d < edit.before)),
        (false, d) => d.unwrap_or(0),
    };
    // Tags: the old ones but the removed, with the new one at `rank` (of the ones kept).
    let tag = [edit.tag];
    let (tags, new) = (index.tags, if inserted { &tag[..] } else { &[][..] });
    let pieces: [&[u8]; 4] = match removed {
        None => [&tags[..rank], new, &tags[rank..], &[]],
        Some(d) if rank <= d => [&tags[..rank], new, &tags[rank..d], &tags[d + 1..]],
        Some(d) => [&tags[..d], &tags[d + 1..=rank], new, &tags[rank + 1..]],
    };
    let base = buf.len();
    pieces.iter().for_each(|piece| buf.extend_from_slice(piece));
    debug_assert_eq!(buf.len() - base, count);
    // Marks: each moved; one of the removed entry marks what now starts there, at its rank;
    // the first entry always marked; none past the end. Written in one pass, which also finds
    // the new entry's block: the last mark at or before its rank (`first`, and where that
    // mark was written) and the first after it (`next`).
    let marks_at = buf.len();
    buf.reserve(8 * (index.marks() + 2) + TRAILER);
    let mut w =
        MarkWriter { rank, new_end, last: 0, m: 0, first: 0, first_end: marks_at, next: count };
    w.put(buf, pack::HEADER_LEN, 0);
    let edited = |k: usize| {
        let (x, q) = index.mark(k);
        let offset = moved(x);
        let q = q - usize::from(removed.is_some_and(|d| d < q));
        (offset, q + usize::from(inserted && new_start < offset))
    };
    // Only the marks between the change's two places (where the entry went out and where one
    // came in) move in their own ways: those before both keep their offset and rank, those
    // after both move by the same bytes and entries. The runs on either side are copied whole
    // (shifted), and only the marks between and the one next to each run go through `put`
    // (which, for runs of one kind, would find nothing more): an edit in place of a member
    // moving a few ranks rewrites a few marks, not all.
    let (lo, hi) = match (&edit.removed, inserted) {
        (Some((span, _)), true) => (span.start.min(at), span.end.max(at)),
        (Some((span, _)), false) => (span.start, span.end),
        (None, _) => (at, at),
    };
    let n = index.marks();
    let offset = |k: usize| index.mark(k).0;
    let before = partition_point(0, n, |k| offset(k) < lo);
    let after = partition_point(before, n, |k| offset(k) < hi);
    let mut k = 0;
    // Marks 1 … before − 2 as they are (mark 0 is the first entry's, put above), where the
    // last of the run before is at or before the new entry's rank (then so are all of them).
    if before >= 3 && offset(0) == pack::HEADER_LEN && edited(before - 1).1 <= rank {
        buf.extend_from_slice(&index.marks[8..8 * (before - 1)]);
        w.m += (before - 2) as u32;
        k = before - 1;
    }
    // Then each mark to the first of the run after, which `put` finds past the new entry's
    // rank where the run's others are too.
    let tail = after + 1;
    let bulk_after = tail < n && edited(after).1 > rank;
    for k in k..if bulk_after { tail } else { n } {
        let (offset, q) = edited(k);
        w.put(buf, offset, q);
    }
    if bulk_after {
        let (x, q) = index.mark(after);
        let (to, q_to) = edited(after);
        let (dx, dq) = (to.wrapping_sub(x) as u32, q_to.wrapping_sub(q) as u32);
        let run = &index.marks[8 * tail..8 * n];
        if dx == 0 && dq == 0 {
            buf.extend_from_slice(run);
        } else {
            for mark in run.chunks_exact(8) {
                let x = u32::from_le_bytes([mark[0], mark[1], mark[2], mark[3]]).wrapping_add(dx);
                let q = u32::from_le_bytes([mark[4], mark[5], mark[6], mark[7]]).wrapping_add(dq);
                buf.extend_from_slice(&x.to_le_bytes());
                buf.extend_from_slice(&q.to_le_bytes());
            }
        }
        w.m += (n - tail) as u32;
    }
    let MarkWriter { mut m, first, first_end, next, .. } = w;
    // The new entry's block past MAX_BLOCK: a mark goes in its middle, at the entry now of
    // that rank (the new one, or an old one by its old rank), right after `first`'s.
    let middle = (inserted && next - first > MAX_BLOCK).then(|| first + (next - first) / 2);
    let middle = middle.and_then(|middle| {
        if middle == rank {
            return Some((new_start, middle));
        }
        let o = middle - usize::from(middle > rank);
        let o = o + usize::from(removed.is_some_and(|d| d <= o));
        (old.offset_of_rank)(o).map(|offset| (moved(offset), middle))
    });
    if let Some((offset, q)) = middle.filter(|_| m > 0) {
        let end = buf.len();
        buf.extend_from_slice(&[0; 8]);
        buf.copy_within(first_end..end, first_end + 8);
        buf[first_end..first_end + 4].copy_from_slice(&(offset as u32).to_le_bytes());
        buf[first_end + 4..first_end + 8].copy_from_slice(&(q as u32).to_le_bytes());
        m += 1;
    }
    buf.extend_from_slice(&m.to_le_bytes());
    buf.extend_from_slice(&(new_end as u32).to_le_bytes());
}

/// Checks that `value`'s index, if it says it has one, describes its entries — given as
/// (where each starts, its field), in order — exactly: it is well formed, each tag is its
/// entry's, and each mark gives where the entry of its rank starts, the first at rank 0, ranks
/// and offsets ascending, blocks no longer than [`MAX_BLOCK`]. Panics otherwise (for tests,
/// after every step of a model).
#[cfg(test)]
pub(crate) fn validate(value: &[u8], entries: &[(usize, &[u8])]) {
    let (format, count) = pack::header(value);
    if format & INDEXED == 0 {
        return;
    }
    let (_, index) = split(value);
    let index = index.expect("an index that fits its value");
    assert_eq!(entries.len(), count as usize, "entries readable");
    let tags: Vec<u8> = entries.iter().map(|(_, field)| tag(field)).collect();
    assert_eq!(index.tags, &tags[..], "tags");
    let mut last: Option<(usize, usize)> = None;
    for k in 0..index.marks() {
        let (offset, rank) = index.mark(k);
        assert_eq!(entries[rank].0, offset, "mark {k} gives its entry's start");
        match last {
            None => assert_eq!(rank, 0, "the first mark is the first entry"),
            Some((o, q)) => {
                assert!(o < offset && q < rank, "marks ascend");
                assert!(rank - q <= MAX_BLOCK, "block of {}", rank - q);
            }
        }
        last = Some((offset, rank));
    }
    if let Some((_, q)) = last {
        assert!(entries.len() - q <= MAX_BLOCK, "last block of {}", entries.len() - q);
    }
}
