//! A Redis hash in packed form ([`super::pack`]): entries of a field and its value (and, in
//! the `TIMED` format, the field's deadline), in insertion order, as Redis's listpack keeps
//! them (so `HGETALL` of a small hash answers in Redis's order). A field is replaced where
//! it stands; new fields go at the end.
//!
//! Lookups walk the entries (no index): `HGET` costs a scan of the fields before the one it
//! finds, an update copies the whole hash (`docs/design.md`, "Value types").

use super::pack::{self, Reader, TIMED};

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

/// A packed hash, borrowed from the engine's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hash<'a> {
    bytes: &'a [u8],
    timed: bool,
    count: u32,
}

impl<'a> Hash<'a> {
    /// The hash packed in `value`.
    pub(crate) fn new(value: &'a [u8]) -> Hash<'a> {
        let (format, count) = pack::header(value);
        Hash { bytes: value, timed: format & TIMED != 0, count }
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
    pub(crate) fn find(&self, field: &[u8]) -> Option<(std::ops::Range<usize>, Entry<'a>)> {
        let mut r = Reader::new(self.bytes);
        for _ in 0..self.count {
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
}

impl<'a> Hash<'a> {
    /// Where the entry at `index` starts (the end of the packed value for `index >= len()`):
    /// a pass that reads only lengths, for a list's elements by position.
    pub(crate) fn offset_of(&self, index: usize) -> usize {
        if index >= self.len() {
            return self.bytes.len();
        }
        let mut r = Reader::new(self.bytes);
        for _ in 0..index {
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

    /// Writes into `buf` this hash with the entry at `span` (from [`Hash::find`]) replaced
    /// by `e`: two copies and the new entry.
    pub(crate) fn with_replaced(
        &self,
        span: std::ops::Range<usize>,
        e: Entry<'_>,
        buf: &mut Vec<u8>,
    ) {
        buf.clear();
        buf.extend_from_slice(&self.bytes[..span.start]);
        push_entry(buf, e, self.timed);
        buf.extend_from_slice(&self.bytes[span.end..]);
    }

    /// Writes into `buf` this hash with `e` appended: one copy and the new entry.
    pub(crate) fn with_appended(&self, e: Entry<'_>, buf: &mut Vec<u8>) {
        if self.bytes.len() < pack::HEADER_LEN {
            pack::begin(buf, 0);
        } else {
            buf.clear();
            buf.extend_from_slice(self.bytes);
        }
        push_entry(buf, e, self.timed);
        pack::set_count(buf, self.count + 1);
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

/// The entry at the reader, which it passes.
#[inline]
fn read_entry<'a>(r: &mut Reader<'a>, timed: bool) -> Option<Entry<'a>> {
    let field = r.str()?;
    let value = r.str()?;
    let deadline = if timed { r.u64()? } else { 0 };
    Some(Entry { field, value, deadline })
}

/// Writes a packed hash into a buffer, entry by entry.
#[derive(Debug)]
pub(crate) struct Builder<'b> {
    buf: &'b mut Vec<u8>,
    timed: bool,
    count: u32,
}

impl<'b> Builder<'b> {
    /// A hash in `buf` (cleared); `timed`: whether entries carry deadlines (needed as soon as
    /// one field has one).
    pub(crate) fn new(buf: &'b mut Vec<u8>, timed: bool) -> Builder<'b> {
        pack::begin(buf, if timed { TIMED } else { 0 });
        Builder { buf, timed, count: 0 }
    }

    /// Appends an entry (its deadline is dropped in the untimed format).
    #[inline]
    pub(crate) fn push(&mut self, e: Entry<'_>) {
        push_entry(self.buf, e, self.timed);
        self.count += 1;
    }

    /// Whether the entries carry deadlines.
    pub(crate) fn timed(&self) -> bool {
        self.timed
    }

    /// Appends `entries` entries packed in `raw` (taken whole from a hash of the same format).
    #[inline]
    pub(crate) fn copy(&mut self, raw: &[u8], entries: u32) {
        self.buf.extend_from_slice(raw);
        self.count += entries;
    }

    /// Ends the hash: returns its number of entries.
    pub(crate) fn finish(self) -> u32 {
        pack::set_count(self.buf, self.count);
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
                let mut v = valid.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() % v.len() as u64) as usize;
                    v[at] = next() as u8;
                }
                v
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
                let mut buf = Vec::new();
                h.with_replaced(span, e(f, b"new", 0), &mut buf);
                let want: Vec<(&[u8], &[u8])> = fields
                    .iter()
                    .map(|&(g, w)| if g == f { (g, &b"new"[..]) } else { (g, w) })
                    .collect();
                assert_eq!(buf, build(&want), "replace {:?}", &f[..1]);
            }
            assert_eq!(h.find(b"zz"), None);
            let mut buf = Vec::new();
            h.with_appended(e(b"zz", b"9", 0), &mut buf);
            let mut want = fields.to_vec();
            want.push((b"zz", b"9"));
            assert_eq!(buf, build(&want));
            let mut fresh = Vec::new();
            Hash::new(b"").with_appended(e(b"k", b"v", 0), &mut fresh);
            assert_eq!(
                Hash::new(&fresh).iter().map(|x| (x.field, x.value)).collect::<Vec<_>>(),
                vec![(&b"k"[..], &b"v"[..])]
            );
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
