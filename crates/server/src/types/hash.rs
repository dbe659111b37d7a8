//! A Redis hash in packed form ([`super::pack`]): entries of a field and its value (and, in
//! the `TIMED` format, the field's deadline), in insertion order, as Redis's listpack keeps
//! them (so `HGETALL` of a small hash answers in Redis's order). A field is replaced where
//! it stands; new fields go at the end.
//!
//! Lookups walk the entries: `HGET` costs a scan of the fields before the one it finds, an
//! update copies the whole hash (`docs/design.md`, "Value types"). A value may carry an index
//! after its entries ([`super::index`]: sorted sets and Redis hashes of
//! [`index::MIN_ENTRIES`] entries or more): then the lookups of one field, a rank or a place
//! ([`Hash::find`], [`Hash::rank`], [`Hash::offset_of`], [`Hash::partition_point`]) read it
//! instead of walking, and everything else sees only the entries.

use std::ops::Range;

use fridge_engine::Splice;

use super::index::{self, Index};
use super::pack::{self, INDEXED, Reader, TIMED};

/// Whether two fields are equal: lengths first, then (for 8 bytes and more) their last 8 bytes
/// as one word, so the fields of a large hash, often of one length and one prefix, are told
/// apart without a call to `memcmp` each.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() >= 8 {
        let tail = |s: &[u8]| u64::from_ne_bytes(s[s.len() - 8..].try_into().unwrap_or_default());
        if tail(a) != tail(b) {
            return false;
        }
    }
    a == b
}

/// One field of a hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    pub field: &'a [u8],
    pub value: &'a [u8],
    /// When the field expires (ms since the Unix epoch), 0 for never.
    pub deadline: u64,
}

impl Entry<'_> {
    /// Whether the field is gone at `now_ms`.
    #[inline]
    pub(crate) fn expired(&self, now_ms: u64) -> bool {
        self.deadline != 0 && self.deadline <= now_ms
    }
}

/// An entry [`Hash::find`] found, with where it lies in the packed value.
pub(crate) type Found<'a> = (std::ops::Range<usize>, Entry<'a>);

/// A packed hash, borrowed from the engine's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hash<'a> {
    /// The header and the entries (an index, if any, left out).
    bytes: &'a [u8],
    timed: bool,
    count: u32,
    index: Option<Index<'a>>,
}

impl<'a> Hash<'a> {
    /// The hash packed in `value`.
    pub(crate) fn new(value: &'a [u8]) -> Hash<'a> {
        let (format, count) = pack::header(value);
        let (bytes, index) = index::split(value);
        Hash { bytes, timed: format & TIMED != 0, count, index }
    }

    /// The value's index, if it has one ([`super::index`]).
    pub(crate) fn index(&self) -> Option<&Index<'a>> {
        self.index.as_ref()
    }

    /// This hash read without its index (where the index is not to be trusted).
    pub(crate) fn without_index(self) -> Hash<'a> {
        Hash { index: None, ..self }
    }

    /// Where the entries end (an index, if any, starts there).
    pub(crate) fn end(&self) -> usize {
        self.bytes.len()
    }

    /// The entry starting at `start` and its span, if one can be read there.
    pub(crate) fn entry_at(&self, start: usize) -> Option<Found<'a>> {
        let mut r = Reader::new(self.bytes);
        r.skip(start.checked_sub(pack::HEADER_LEN)?)?;
        let e = read_entry(&mut r, self.timed)?;
        Some((start..r.pos(), e))
    }

    /// [`Hash::find`] through the index: the entry and its rank.
    fn find_indexed(&self, index: &Index<'a>, field: &[u8]) -> Option<(Found<'a>, usize)> {
        let mut k = 0;
        for rank in index.candidates(index::tag(field)) {
            if rank >= self.len() {
                return None;
            }
            // The candidates ascend: each one's mark is searched from the last one's.
            k = index.mark_from(k, rank);
            let (offset, q) = index.mark(k);
            let (span, e) = self.entry_at(self.offset_in_block(offset, q, rank)?)?;
            if same(e.field, field) {
                return Some(((span, e), rank));
            }
        }
        None
    }

    /// [`Hash::find`], with the entry's rank where there is an index.
    pub(crate) fn find_ranked(&self, field: &[u8]) -> Option<(Found<'a>, Option<usize>)> {
        match &self.index {
            Some(index) => self.find_indexed(index, field).map(|(f, rank)| (f, Some(rank))),
            None => self.find(field).map(|f| (f, None)),
        }
    }

    /// Where the entry of rank `rank` starts, through the index: its block's mark, then the
    /// entries before it in the block skipped (`None` without an index, or where the bytes
    /// end first).
    pub(crate) fn offset_of_rank(&self, rank: usize) -> Option<usize> {
        let index = self.index.as_ref()?;
        if rank >= self.len() {
            return None;
        }
        let (offset, q) = index.mark_before(rank);
        self.offset_in_block(offset, q, rank)
    }

    /// Where the entry of rank `rank` starts, from the entry of rank `q` (at or before it)
    /// starting at `offset`: the entries between skipped (`None` where the bytes end first).
    fn offset_in_block(&self, offset: usize, q: usize, rank: usize) -> Option<usize> {
        // Runs of entries of one shape first ([`run_of_shape`]), then the general reader.
        let (b, extra) = (self.bytes, if self.timed { 8 } else { 0 });
        let (mut pos, mut i) = (offset, q as u32);
        let rank32 = u32::try_from(rank).ok()?;
        while i < rank32 {
            let Some(shape) = shape(b, pos) else { break };
            (pos, i) = skip_shape(b, (pos, i), rank32, shape, extra);
        }
        let mut r = Reader::new(self.bytes);
        r.skip(pos.checked_sub(pack::HEADER_LEN)?)?;
        for _ in i as usize..rank {
            r.skip_str()?;
            r.skip_str()?;
            if self.timed {
                r.skip(8)?;
            }
        }
        Some(r.pos())
    }

    /// Checks the value's index against its entries ([`index::validate`]; for tests).
    #[cfg(test)]
    pub(crate) fn validate_index(value: &[u8]) {
        let h = Hash::new(value);
        let entries: Vec<(usize, &[u8])> = h.spans().map(|(s, e)| (s.start, e.field)).collect();
        index::validate(value, &entries);
    }

    /// The number of entries, expired fields not yet removed included.
    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether any field carries a deadline format (`TIMED`).
    pub(crate) fn timed(&self) -> bool {
        self.timed
    }

    /// The entries, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Entry<'a>> + Clone + use<'a> {
        self.spans().map(|(_, e)| e)
    }

    /// The entries with where each lies in the packed value (`start..end`), for a writer that
    /// copies the runs it leaves unchanged in one piece ([`Builder::copy`]).
    pub(crate) fn spans(
        &self,
    ) -> impl Iterator<Item = (std::ops::Range<usize>, Entry<'a>)> + Clone + use<'a> {
        let (timed, mut left, mut r) = (self.timed, self.count, Reader::new(self.bytes));
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let start = r.pos();
            let e = read_entry(&mut r, timed)?;
            Some((start..r.pos(), e))
        })
    }

    /// All the entries, packed (for a writer that keeps them all, [`Builder::copy`]).
    pub(crate) fn body(&self) -> &'a [u8] {
        &self.bytes[pack::HEADER_LEN.min(self.bytes.len())..]
    }

    /// The packed bytes of `range` (a run of whole entries [`Hash::spans`] gave).
    pub(crate) fn raw(&self, range: std::ops::Range<usize>) -> &'a [u8] {
        &self.bytes[range]
    }

    /// The entries live at `now_ms`.
    pub(crate) fn live(&self, now_ms: u64) -> impl Iterator<Item = Entry<'a>> + Clone + use<'a> {
        self.iter().filter(move |e| !e.expired(now_ms))
    }

    /// `field`'s entry, if the hash has it live at `now_ms`.
    pub(crate) fn get(&self, field: &[u8], now_ms: u64) -> Option<Entry<'a>> {
        self.find(field).map(|(_, e)| e).filter(|e| !e.expired(now_ms))
    }

    /// `field`'s entry (expired or not) and where it lies in the packed value: one pass that
    /// compares lengths before bytes, skips values unread and builds an entry only for the one
    /// it returns (the lookup every single-field command makes).
    pub(crate) fn find(&self, field: &[u8]) -> Option<Found<'a>> {
        if let Some(index) = &self.index {
            return self.find_indexed(index, field).map(|(found, _)| found);
        }
        let b = self.bytes;
        let extra = if self.timed { 8 } else { 0 };
        // The common case first: runs of entries of one shape ([`run_of_shape`]), read
        // straight from the bytes; the general reader takes over at the entry found, or at
        // the first with a length of more than one byte.
        let (mut pos, mut i) = (pack::HEADER_LEN.min(b.len()), 0);
        while i < self.count {
            let Some((n, v)) = shape(b, pos) else { break };
            let same_len = usize::from(n) == field.len();
            let matches = |_, at: usize| {
                same_len && b.get(at + 1..at + 1 + usize::from(n)).is_some_and(|f| same(f, field))
            };
            let stopped;
            (pos, i, stopped) = run_of_shape(b, (pos, i), self.count, (n, v), extra, matches);
            if stopped {
                break;
            }
        }
        let mut r = Reader::new(self.bytes);
        r.skip(pos.saturating_sub(pack::HEADER_LEN))?;
        for _ in i..self.count {
            let start = r.pos();
            let f = r.str()?;
            if f.len() == field.len() && same(f, field) {
                let value = r.str()?;
                let deadline = if self.timed { r.u64()? } else { 0 };
                return Some((start..r.pos(), Entry { field: f, value, deadline }));
            }
            // The value, skipped unread.
            r.skip_str()?;
            if self.timed {
                r.skip(8)?;
            }
        }
        None
    }

    /// [`Hash::find`] of `field` and [`Hash::first_where`] of `after` in one pass, which stops
    /// once it has both (for a sorted set's member and its new place, when the new score does
    /// not depend on the old one).
    pub(crate) fn find_and_first_where(
        &self,
        field: &[u8],
        mut after: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> (Option<Found<'a>>, (usize, usize)) {
        let (b, timed) = (self.bytes, self.timed);
        let extra = if timed { 8 } else { 0 };
        let (mut found, mut place) = (None, None);
        // Runs of entries of one shape first ([`run_of_shape`]), then the general reader.
        let (mut pos, mut i) = (pack::HEADER_LEN.min(b.len()), 0);
        while i < self.count && (found.is_none() || place.is_none()) {
            let Some((n, v)) = shape(b, pos) else { break };
            let same_len = usize::from(n) == field.len();
            let (n, v) = (usize::from(n), usize::from(v));
            let visit = |i: u32, at: usize| {
                let (Some(f), Some(value)) =
                    (b.get(at + 1..at + 1 + n), b.get(at + 2 + n..at + 2 + n + v))
                else {
                    // Bytes that end early: the general reader below decides.
                    return true;
                };
                if found.is_none() && same_len && same(f, field) {
                    let end = at + 2 + n + v + extra;
                    let deadline = if timed {
                        match b.get(at + 2 + n + v..end) {
                            Some(d) => u64::from_le_bytes(d.try_into().unwrap_or_default()),
                            None => return true,
                        }
                    } else {
                        0
                    };
                    found = Some((at..end, Entry { field: f, value, deadline }));
                }
                if place.is_none() && after(f, value) {
                    place = Some((at, i as usize));
                }
                found.is_some() && place.is_some()
            };
            let stopped;
            (pos, i, stopped) =
                run_of_shape(b, (pos, i), self.count, (n as u8, v as u8), extra, visit);
            if stopped {
                break;
            }
        }
        let mut r = Reader::new(self.bytes);
        if r.skip(pos.saturating_sub(pack::HEADER_LEN)).is_some() {
            for i in i as usize..self.len() {
                if found.is_some() && place.is_some() {
                    break;
                }
                let start = r.pos();
                let (Some(f), Some(value)) = (r.str(), r.str()) else { break };
                let deadline = if self.timed { r.u64() } else { Some(0) };
                let Some(deadline) = deadline else { break };
                if found.is_none() && f.len() == field.len() && same(f, field) {
                    found = Some((start..r.pos(), Entry { field: f, value, deadline }));
                }
                if place.is_none() && after(f, value) {
                    place = Some((start, i));
                }
            }
        }
        // A pass that ended early (malformed bytes) leaves the place at the bytes' end, as
        // [`Hash::first_where`] does once it gets to the end.
        (found, place.unwrap_or((self.bytes.len(), self.len())))
    }
}

impl<'a> Hash<'a> {
    /// Where the entry at `index` starts (the end of the packed value for `index >= len()`):
    /// a pass that reads only lengths, for a list's elements by position.
    pub(crate) fn offset_of(&self, index: usize) -> usize {
        if index >= self.len() {
            return self.bytes.len();
        }
        if self.index.is_some() {
            return self.offset_of_rank(index).unwrap_or(self.bytes.len());
        }
        let b = self.bytes;
        let extra = if self.timed { 8 } else { 0 };
        // The common case first: runs of entries of one shape ([`run_of_shape`]), read
        // straight from the bytes; the general reader takes over at the first entry with a
        // length of more than one byte.
        let (mut pos, mut i) = (pack::HEADER_LEN.min(b.len()), 0);
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        while i < index {
            let Some(shape) = shape(b, pos) else { break };
            (pos, i) = skip_shape(b, (pos, i), index, shape, extra);
        }
        let mut r = Reader::new(self.bytes);
        if r.skip(pos.saturating_sub(pack::HEADER_LEN)).is_none() {
            return self.bytes.len();
        }
        for _ in i..index {
            let passed = r.skip_str().and_then(|()| r.skip_str());
            if passed.and_then(|()| if self.timed { r.skip(8) } else { Some(()) }).is_none() {
                break;
            }
        }
        r.pos()
    }

    /// The entries from the one starting at `offset` ([`Hash::offset_of`]) to the end.
    pub(crate) fn iter_from(&self, offset: usize) -> impl Iterator<Item = Entry<'a>> + use<'a> {
        let (timed, end, mut r) = (self.timed, self.bytes.len(), Reader::new(self.bytes));
        r.skip(offset.saturating_sub(pack::HEADER_LEN));
        std::iter::from_fn(move || if r.pos() < end { read_entry(&mut r, timed) } else { None })
    }

    /// The first entry for which `after(field, value)` holds, as where it starts and its
    /// index (the end and `len()` when none does): a pass that stops there and builds no
    /// entry, for a sorted set's place of a new member.
    pub(crate) fn first_where(
        &self,
        mut after: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Option<(usize, usize)> {
        let mut r = Reader::new(self.bytes);
        for i in 0..self.len() {
            let start = r.pos();
            let (field, value) = (r.str()?, r.str()?);
            if after(field, value) {
                return Some((start, i));
            }
            if self.timed {
                r.skip(8)?;
            }
        }
        Some((r.pos(), self.len()))
    }

    /// The rank of `field`'s entry, if the hash has it (with an index, without a pass).
    pub(crate) fn rank(&self, field: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => self.find_indexed(index, field).map(|(_, rank)| rank),
            None => self.iter().position(|e| e.field == field),
        }
    }

    /// [`Hash::first_where`] for an `after` that holds from some entry on and not before (a
    /// sorted set's place of a score): with an index a binary search of the marks, then a
    /// pass within one block; else the pass. Where an entry cannot be read, the end.
    pub(crate) fn partition_point(
        &self,
        mut after: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> (usize, usize) {
        let end = (self.bytes.len(), self.len());
        let Some(index) = &self.index else {
            return self.first_where(after).unwrap_or(end);
        };
        // The first mark whose entry orders after: the place is in the block before it.
        let (mut lo, mut hi) = (0, index.marks());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some((_, e)) = self.entry_at(index.mark(mid).0) else { return end };
            if after(e.field, e.value) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if lo == 0 {
            return (self.offset_of(0), 0);
        }
        let (offset, rank) = index.mark(lo - 1);
        let stop = if lo < index.marks() { index.mark(lo).1 } else { self.len() };
        let mut r = Reader::new(self.bytes);
        if offset.checked_sub(pack::HEADER_LEN).and_then(|n| r.skip(n)).is_none() {
            return end;
        }
        for i in rank..stop {
            let start = r.pos();
            let Some(e) = read_entry(&mut r, self.timed) else { return end };
            if after(e.field, e.value) {
                return (start, i);
            }
        }
        (r.pos(), stop)
    }

    /// Writes the index of this value's entries after it ([`index::write_edited`]): `self` is
    /// the value before `edit`.
    pub(crate) fn write_edited_index(
        &self,
        buf: &mut Vec<u8>,
        index: &Index<'_>,
        edit: &index::Edit,
    ) {
        let old = index::Old {
            end: self.end(),
            len: self.len(),
            offset_of_rank: |r| self.offset_of_rank(r),
        };
        index::write_edited(buf, old, index, edit);
    }
}

/// Where [`write_one`] puts its new entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Where the removed entry stood (after the last entry if none is removed).
    Replaced,
    /// After the last entry (Redis's place for a field that was not live).
    Last,
}

/// The hash (or set) `old`, read from `bytes`, with one change, written into `buf` and `splice`: the
/// entry at `removed` (a span and, where `old` has an index, the rank [`Hash::find_ranked`]
/// gave) taken out, if any, and `new` put in, if any, at `place`. The runs around the change
/// are copied whole, once. An index is edited in one pass where `old` has one and the hash
/// keeps [`index::MIN_ENTRIES`] entries, built where one without reaches that many (written
/// whole, then), and dropped below. Returns the number of entries written.
pub(crate) fn write_one(
    old: Hash<'_>,
    bytes: &[u8],
    removed: Option<(Range<usize>, Option<usize>)>,
    new: Option<Entry<'_>>,
    place: Place,
    buf: &mut Vec<u8>,
    splice: &mut Splice,
) -> usize {
    let (start, end) = (pack::HEADER_LEN.min(bytes.len()), old.end());
    // A span outside the entries, which the reads of `old` never give, removes nothing.
    let removed = removed.filter(|(span, _)| start <= span.start && span.end <= end);
    // A rank the index cannot have (a damaged value) makes the index passed over: the entries
    // decide, and the hash is written with an index built anew.
    if removed.as_ref().is_some_and(|(_, rank)| rank.is_some_and(|r| r >= old.len())) {
        let removed = removed.map(|(span, _)| (span, None));
        return write_one(old.without_index(), bytes, removed, new, place, buf, splice);
    }
    let edited = old.index().and_then(|ix| {
        let rank = match &removed {
            Some((_, rank)) => (*rank)?,
            None => 0,
        };
        Some((ix, rank))
    });
    let kept = old.len() - usize::from(removed.is_some());
    let count = kept + usize::from(new.is_some());
    let indexed = count >= index::MIN_ENTRIES;
    // A hash that reaches the size of an index without one is written whole and indexed
    // anew; any other as a splice.
    let fresh = indexed && edited.is_none();
    let mut b = if fresh {
        splice.clear();
        Builder::new(buf, old.timed())
    } else {
        Builder::spliced(buf, splice, bytes, old.timed())
    };
    let (cut, resume) = removed.as_ref().map_or((end, end), |(span, _)| (span.start, span.end));
    let in_place = place == Place::Replaced && removed.is_some();
    b.copy(old.raw(start..cut), 0);
    let mut len = 0;
    if let (Some(e), true) = (new, in_place) {
        len = b.push_len(e);
    }
    b.copy(old.raw(resume..end), kept as u32);
    if let (Some(e), false) = (new, in_place) {
        len = b.push_len(e);
    }
    if let (Some((ix, rank)), true) = (edited, indexed) {
        b.mark_indexed();
        match (&removed, new) {
            // A field's value replaced where it stands, HSET's usual case: the tags stay, and
            // so do the marks where the length does (the whole index then copied as it is).
            (Some((span, _)), Some(_)) if in_place => {
                let delta = len as isize - span.len() as isize;
                if delta == 0 {
                    b.copy(&bytes[end..], 0);
                } else {
                    b.copy(ix.tags(), 0);
                    index::write_marks_moved(b.trailer(), ix, cut, delta, end);
                }
            }
            // A new field appended: one tag more, the marks as they are, perhaps one more.
            (None, Some(e)) => {
                b.copy(ix.tags(), 0);
                b.trailer().push(index::tag(e.field));
                b.copy(ix.marks_raw(), 0);
                index::write_appended(b.trailer(), ix, end, end + len);
            }
            _ => {
                let (at, before) = if in_place { (cut, rank) } else { (end, old.len()) };
                let removed = removed.map(|(span, _)| (span, rank));
                let tag = new.map_or(0, |e| index::tag(e.field));
                let edit = index::Edit { removed, at, before, len, tag };
                old.write_edited_index(b.trailer(), ix, &edit);
            }
        }
    }
    b.finish();
    if fresh {
        append_index(buf);
    }
    count
}

/// Appends an index to the packed value in `buf` (which has none) and marks its format, where
/// its entries can all be read ([`index::build`]).
pub(crate) fn append_index(buf: &mut Vec<u8>) {
    let h = Hash::new(buf);
    let entries = h.spans().map(|(span, e)| (span.start, e.field));
    if let Some(built) = index::build(entries, h.len(), buf.len()) {
        index::write(buf, built);
    }
}

/// Appends an entry in the format `timed` says.
#[inline]
fn push_entry(buf: &mut Vec<u8>, e: Entry<'_>, timed: bool) {
    pack::put_str(buf, e.field);
    pack::put_str(buf, e.value);
    if timed {
        pack::put_u64(buf, e.deadline);
    }
}

/// The shape of the entry at `pos` of `b`: the lengths of its field and value where both are
/// one byte (under 128), else `None` (a longer string, or the bytes end).
#[inline]
fn shape(b: &[u8], pos: usize) -> Option<(u8, u8)> {
    let n = *b.get(pos).filter(|&&n| n < 0x80)?;
    let v = *b.get(pos + 1 + usize::from(n)).filter(|&&v| v < 0x80)?;
    Some((n, v))
}

/// Passes the entries from `pos` (entry `i`, below `count`) for as long as they have the shape
/// `(n, v)` ([`shape`]), or until `stop(i, pos)` holds for one (then it returns there, and
/// `true`): where it stopped, and that entry's number. Within a run of one shape, as a
/// collection's entries often are (members of one length, values of one length), the next
/// entry's place does not wait for this one's lengths to load (they are only checked against
/// the shape, by a branch), so a pass runs at the speed of its comparisons, not of a chain
/// of loads.
#[inline(always)]
fn run_of_shape(
    b: &[u8],
    (mut pos, mut i): (usize, u32),
    count: u32,
    (n, v): (u8, u8),
    extra: usize,
    mut stop: impl FnMut(u32, usize) -> bool,
) -> (usize, u32, bool) {
    let at_value = 1 + usize::from(n);
    let stride = 2 + usize::from(n) + usize::from(v) + extra;
    while i < count {
        if b.get(pos) != Some(&n) || b.get(pos + at_value) != Some(&v) {
            break;
        }
        if stop(i, pos) {
            return (pos, i, true);
        }
        pos += stride;
        i += 1;
    }
    (pos, i, false)
}

/// [`run_of_shape`] with nothing to stop at, for a pass to an entry by its number: eight
/// entries checked against the shape at a time (one branch for the eight), then one at a time.
/// A list rotation at 1,000 elements, which passes them all to find the last, ran at 474k–490k
/// requests a second one entry at a time, 616k–636k four at a time, 655k–675k eight at a time
/// (`COMMAND=rotate bench/ab_collection`, pipelined).
#[inline(always)]
fn skip_shape(
    b: &[u8],
    (mut pos, mut i): (usize, u32),
    count: u32,
    (n, v): (u8, u8),
    extra: usize,
) -> (usize, u32) {
    let at_value = 1 + usize::from(n);
    let stride = 2 + usize::from(n) + usize::from(v) + extra;
    while count.saturating_sub(i) >= 8 {
        let Some(eight) = b.get(pos..pos + 8 * stride) else { break };
        let of_shape = |k: usize| (eight[k * stride] == n) & (eight[k * stride + at_value] == v);
        if !((0..8).fold(true, |all, k| all & of_shape(k))) {
            break;
        }
        pos += 8 * stride;
        i += 8;
    }
    let (pos, i, _) = run_of_shape(b, (pos, i), count, (n, v), extra, |_, _| false);
    (pos, i)
}

/// The entry at the reader, which it passes.
#[inline]
fn read_entry<'a>(r: &mut Reader<'a>, timed: bool) -> Option<Entry<'a>> {
    let field = r.str()?;
    let value = r.str()?;
    let deadline = if timed { r.u64()? } else { 0 };
    Some(Entry { field, value, deadline })
}

/// Writes a packed hash into a buffer, entry by entry; or, [`Builder::spliced`], as a
/// [`Splice`] of the runs it copies from the current value and the entries it writes into the
/// buffer, so that the engine copies those runs once, straight into the new item.
#[derive(Debug)]
pub(crate) struct Builder<'b> {
    buf: &'b mut Vec<u8>,
    timed: bool,
    count: u32,
    /// The splice and the current value whose runs [`Builder::copy`] may name.
    splice: Option<(&'b mut Splice, &'b [u8])>,
    /// Where the entries written into `buf` since the last piece start.
    written: usize,
}

impl<'b> Builder<'b> {
    /// A hash in `buf` (cleared); `timed`: whether entries carry deadlines (needed as soon as
    /// one field has one).
    pub(crate) fn new(buf: &'b mut Vec<u8>, timed: bool) -> Builder<'b> {
        pack::begin(buf, if timed { TIMED } else { 0 });
        Builder { buf, timed, count: 0, splice: None, written: pack::HEADER_LEN }
    }

    /// A hash given as `splice` (for `Worker::update_kind_spliced`): its header and the
    /// entries pushed go into `buf` (cleared), runs [`Builder::copy`] takes from `current` (the
    /// value the update sees) are named by where they lie in it.
    pub(crate) fn spliced(
        buf: &'b mut Vec<u8>,
        splice: &'b mut Splice,
        current: &'b [u8],
        timed: bool,
    ) -> Builder<'b> {
        pack::begin(buf, if timed { TIMED } else { 0 });
        splice.clear();
        Builder { buf, timed, count: 0, splice: Some((splice, current)), written: 0 }
    }

    /// Appends an entry (its deadline is dropped in the untimed format).
    #[inline]
    pub(crate) fn push(&mut self, e: Entry<'_>) {
        push_entry(self.buf, e, self.timed);
        self.count += 1;
    }

    /// [`Builder::push`], answering the entry's length in bytes.
    pub(crate) fn push_len(&mut self, e: Entry<'_>) -> usize {
        let before = self.buf.len();
        self.push(e);
        self.buf.len() - before
    }

    /// Marks the value as carrying an index, which the caller appends after the last entry
    /// ([`Builder::trailer`]).
    pub(crate) fn mark_indexed(&mut self) {
        self.buf[0] |= INDEXED;
    }

    /// The buffer, to append what follows the entries (an index) once the last is in.
    pub(crate) fn trailer(&mut self) -> &mut Vec<u8> {
        self.buf
    }

    /// Whether the entries carry deadlines.
    pub(crate) fn timed(&self) -> bool {
        self.timed
    }

    /// Appends `entries` entries packed in `raw` (taken whole from a hash of the same format).
    #[inline]
    pub(crate) fn copy(&mut self, raw: &[u8], entries: u32) {
        self.count += entries;
        if let Some((splice, current)) = &mut self.splice {
            // Where `raw` lies in the current value, if it does.
            let at = (raw.as_ptr() as usize).wrapping_sub(current.as_ptr() as usize);
            if at <= current.len() && raw.len() <= current.len() - at {
                splice.buf(self.written..self.buf.len());
                self.written = self.buf.len();
                splice.current(at..at + raw.len());
                return;
            }
        }
        self.buf.extend_from_slice(raw);
    }

    /// [`Builder::finish`] of a Redis hash written whole, with an index appended where it
    /// has [`index::MIN_ENTRIES`] entries or more ([`append_index`]): how every hash writer
    /// that rewrites the whole value ends (one-field writers edit the index instead). A
    /// splice's buffer holds only part of the value: it ends as [`Builder::finish`] ends it.
    pub(crate) fn finish_indexed(self) -> u32 {
        if self.splice.is_some() {
            return self.finish();
        }
        pack::set_count(self.buf, self.count);
        if self.count as usize >= index::MIN_ENTRIES {
            append_index(self.buf);
        }
        self.count
    }

    /// Ends the hash: returns its number of entries.
    pub(crate) fn finish(self) -> u32 {
        pack::set_count(self.buf, self.count);
        if let Some((splice, _)) = self.splice {
            splice.buf(self.written..self.buf.len());
        }
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e<'a>(field: &'a [u8], value: &'a [u8], deadline: u64) -> Entry<'a> {
        Entry { field, value, deadline }
    }

    #[test]
    fn entries_round_trip_in_order_in_both_formats() {
        for timed in [false, true] {
            let mut buf = Vec::new();
            let mut b = Builder::new(&mut buf, timed);
            b.push(e(b"a", b"1", 0));
            b.push(e(b"", b"", 0));
            b.push(e(b"long", &[7u8; 200], if timed { 99 } else { 0 }));
            assert_eq!(b.finish(), 3);
            let h = Hash::new(&buf);
            assert_eq!(h.len(), 3);
            let got: Vec<_> = h.iter().collect();
            assert_eq!(got[0], e(b"a", b"1", 0));
            assert_eq!(got[1], e(b"", b"", 0));
            assert_eq!(got[2].value.len(), 200);
            assert_eq!(h.get(b"a", 0).map(|e| e.value), Some(&b"1"[..]));
            assert_eq!(h.get(b"b", 0), None);
            if timed {
                assert_eq!(h.get(b"long", 99), None, "expired at its deadline");
                assert_eq!(h.live(99).count(), 2);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_read_without_a_panic_and_within_their_length() {
        // Random values, and valid hashes with random bytes flipped: every read stops at the
        // bytes' end (a value can come from RESTORE or, once, from a bug).
        let mut next = crate::types::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let mut valid = Vec::new();
        let mut b = Builder::new(&mut valid, true);
        for i in 0..20u8 {
            b.push(e(&[i; 3], &[i; 200], u64::from(i)));
        }
        b.finish();
        for round in 0..20_000 {
            let bytes: Vec<u8> = if round % 2 == 0 {
                (0..next() % 64).map(|_| next() as u8).collect()
            } else {
                crate::types::damaged(&valid, &mut next)
            };
            let h = Hash::new(&bytes);
            let mut total = 0;
            for (span, entry) in h.spans() {
                assert!(
                    span.end <= bytes.len() && entry.field.len() + entry.value.len() <= bytes.len()
                );
                total += 1;
            }
            assert!(total <= h.len());
            let _ = h.get(&[3; 3], 5);
            for i in [0, 1, 7, 19, 20] {
                assert!(h.offset_of(i) <= bytes.len());
            }
            let (found, (at, _)) = h.find_and_first_where(&[4; 3], |_, v| v.len() > 100);
            assert!(at <= bytes.len() && found.is_none_or(|(span, _)| span.end <= bytes.len()));
            assert!(h.body().len() <= bytes.len());
        }
    }

    #[test]
    fn find_replace_and_append_equal_a_rebuild_in_both_formats() {
        for timed in [false, true] {
            let long = vec![b'L'; 300];
            let fields: [(&[u8], &[u8]); 4] =
                [(b"a", b"1"), (&long, b"2"), (b"c", &[7; 200]), (b"d", b"")];
            let build = |entries: &[(&[u8], &[u8])]| {
                let mut buf = Vec::new();
                let mut b = Builder::new(&mut buf, timed);
                entries.iter().for_each(|&(f, v)| b.push(e(f, v, 0)));
                b.finish();
                buf
            };
            let old = build(&fields);
            let h = Hash::new(&old);
            for &(f, v) in &fields {
                let (span, found) = h.find(f).expect("found");
                assert_eq!((found.field, found.value), (f, v));
                // Replaced as HSET does: the runs around the entry named in a splice.
                let (mut buf, mut splice, mut joined) = (Vec::new(), Splice::default(), Vec::new());
                let mut b = Builder::spliced(&mut buf, &mut splice, &old, timed);
                b.copy(h.raw(pack::HEADER_LEN..span.start), 0);
                b.push(e(f, b"new", 0));
                b.copy(h.raw(span.end..old.len()), h.len() as u32 - 1);
                b.finish();
                splice.join(&old, &buf, &mut joined);
                let buf = joined;
                let want: Vec<(&[u8], &[u8])> = fields
                    .iter()
                    .map(|&(g, w)| if g == f { (g, &b"new"[..]) } else { (g, w) })
                    .collect();
                assert_eq!(buf, build(&want), "replace {:?}", &f[..1]);
            }
            assert_eq!(h.find(b"zz"), None);
            let (mut buf, mut splice, mut joined) = (Vec::new(), Splice::default(), Vec::new());
            write_one(h, &old, None, Some(e(b"zz", b"9", 0)), Place::Last, &mut buf, &mut splice);
            splice.join(&old, &buf, &mut joined);
            let mut want = fields.to_vec();
            want.push((b"zz", b"9"));
            assert_eq!(joined, build(&want));
            let mut fresh = Vec::new();
            write_one(
                Hash::new(b""),
                b"",
                None,
                Some(e(b"k", b"v", 0)),
                Place::Last,
                &mut fresh,
                &mut splice,
            );
            splice.join(b"", &fresh, &mut joined);
            let fresh = joined.clone();
            assert_eq!(
                Hash::new(&fresh).iter().map(|x| (x.field, x.value)).collect::<Vec<_>>(),
                vec![(&b"k"[..], &b"v"[..])]
            );
        }
    }

    #[test]
    fn fast_passes_agree_with_the_entries_at_every_length() {
        // Short and long fields and values (one- and two-byte lengths), empty values as a
        // list's or a set's, in both formats: offset_of, find and find_and_first_where give
        // what the entries say.
        // Shapes that change at every entry, and runs of one shape (as the fast passes
        // expect) broken now and then: runs of 8, 9, 10, … entries, so that a run ends at
        // every place of the eight entries a pass checks at a time.
        let run_of = |i: usize| {
            let (mut k, mut start) = (0, 0);
            while start + 8 + k <= i {
                start += 8 + k;
                k += 1;
            }
            k
        };
        for (timed, runs) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut buf = Vec::new();
            let mut b = Builder::new(&mut buf, timed);
            let mut fields = Vec::new();
            for i in 0..300usize {
                let len = if runs {
                    run_of(i) % 3 + if i == 200 { 130 } else { 0 }
                } else {
                    1 + (i * 7) % 200
                };
                let mut field = vec![b'a' + (i % 26) as u8; len];
                field.extend_from_slice(&i.to_le_bytes());
                let value_len = if runs { ((i / 50) % 2) * 8 } else { (i * 13) % 150 };
                let value = vec![b'v'; if i % 3 == 0 && !runs { 0 } else { value_len }];
                b.push(e(&field, &value, i as u64));
                fields.push(field);
            }
            b.finish();
            let h = Hash::new(&buf);
            let spans: Vec<_> = h.spans().collect();
            for (i, (span, entry)) in spans.iter().enumerate() {
                assert_eq!(h.offset_of(i), span.start);
                assert_eq!(h.find(entry.field), Some((span.clone(), *entry)));
                // The entries from the 150th on (each field ends with its number).
                let after = |f: &[u8], _: &[u8]| {
                    let tail = f.get(f.len().saturating_sub(8)..).unwrap_or_default();
                    u64::from_le_bytes(tail.try_into().unwrap_or_default()) >= 150
                };
                let (found, place) = h.find_and_first_where(entry.field, after);
                assert_eq!(found, Some((span.clone(), *entry)));
                assert_eq!(Some(place), h.first_where(after));
            }
            assert_eq!(h.offset_of(spans.len()), buf.len());
            assert_eq!(h.find(b"missing"), None);
            let (found, place) = h.find_and_first_where(b"missing", |_, _| false);
            assert_eq!((found, place), (None, (buf.len(), 300)));
        }
    }

    #[test]
    fn a_count_larger_than_the_entries_ends_at_the_bytes() {
        let mut buf = Vec::new();
        let mut b = Builder::new(&mut buf, false);
        b.push(e(b"f", b"v", 0));
        b.finish();
        pack::set_count(&mut buf, 1000);
        assert_eq!(Hash::new(&buf).iter().count(), 1);
        assert_eq!(Hash::new(b"").iter().count(), 0);
    }
}
