//! The packed form every collection shares: a header, then its entries one after another.
//!
//! ```text
//!  0        1               5
//!  ├ format ┼──── count ────┼ entry, entry, …
//!
//!  format (u8): bit 0 TIMED: every entry ends with a deadline (u64 LE, ms since the Unix
//!               epoch; 0 for none) — a hash's field expiry
//!               bit 1 INDEXED: an index follows the entries (`super::index`)
//!  count (u32 LE): number of entries
//!  a string inside an entry: its length (LEB128: one byte up to 127), then its bytes
//! ```
//!
//! What an entry holds is its type's business (a hash's: field and value). Readers never
//! panic on bytes they did not write (a truncated or corrupt value reads as ending early),
//! because a value can also arrive through `RESTORE`.

/// Bytes of the header.
pub(crate) const HEADER_LEN: usize = 5;
/// Format bit: each entry ends with a deadline.
pub(crate) const TIMED: u8 = 1;
/// Format bit: an index follows the entries.
pub(crate) const INDEXED: u8 = 2;

/// The header of a packed value: `(format, count)`; a value too short for one is an empty
/// collection.
pub(crate) fn header(bytes: &[u8]) -> (u8, u32) {
    match bytes {
        [format, a, b, c, d, ..] => (*format, u32::from_le_bytes([*a, *b, *c, *d])),
        _ => (0, 0),
    }
}

/// Starts a packed value in `buf` (cleared first) with `format` and a count of 0.
pub(crate) fn begin(buf: &mut Vec<u8>, format: u8) {
    buf.clear();
    buf.push(format);
    buf.extend_from_slice(&0u32.to_le_bytes());
}

/// Sets the count of the packed value in `buf` (which [`begin`] started).
pub(crate) fn set_count(buf: &mut [u8], count: u32) {
    buf[1..HEADER_LEN].copy_from_slice(&count.to_le_bytes());
}

/// Appends a string: its length, then its bytes.
#[inline]
pub(crate) fn put_str(buf: &mut Vec<u8>, s: &[u8]) {
    let mut n = s.len();
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
    buf.extend_from_slice(s);
}

/// Appends a deadline.
#[inline]
pub(crate) fn put_u64(buf: &mut Vec<u8>, n: u64) {
    buf.extend_from_slice(&n.to_le_bytes());
}

/// A cursor over a packed value's entries.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader of the entries of `value`, a whole packed value.
    pub(crate) fn new(value: &'a [u8]) -> Reader<'a> {
        Reader { bytes: value, pos: HEADER_LEN.min(value.len()) }
    }

    /// The next string's length, its bytes left unread (the reader stands at them).
    fn str_len(&mut self) -> Option<usize> {
        let mut n = 0usize;
        let mut shift = 0;
        loop {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            n |= usize::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
            shift += 7;
            if shift > 28 {
                self.pos = self.bytes.len();
                return None;
            }
        }
    }

    /// The next string, `None` at the end or where the bytes are malformed (and from then
    /// on).
    #[inline]
    pub(crate) fn str(&mut self) -> Option<&'a [u8]> {
        let n = self.str_len()?;
        let Some(s) = self.bytes.get(self.pos..self.pos.saturating_add(n)) else {
            self.pos = self.bytes.len();
            return None;
        };
        self.pos += n;
        Some(s)
    }

    /// Passes the next string without reading it.
    #[inline]
    pub(crate) fn skip_str(&mut self) -> Option<()> {
        let n = self.str_len()?;
        self.skip(n)
    }

    /// Passes `n` bytes.
    #[inline]
    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                self.pos = end;
                Some(())
            }
            None => {
                self.pos = self.bytes.len();
                None
            }
        }
    }

    /// Where the next entry starts (its offset in the value).
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The next u64.
    #[inline]
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let Some(b) = self.bytes.get(self.pos..self.pos + 8) else {
            self.pos = self.bytes.len();
            return None;
        };
        self.pos += 8;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_deadlines_round_trip_at_every_length_boundary() {
        let mut buf = Vec::new();
        begin(&mut buf, TIMED);
        let lens = [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000];
        for &n in &lens {
            put_str(&mut buf, &vec![n as u8; n]);
            put_u64(&mut buf, n as u64 * 3);
        }
        set_count(&mut buf, lens.len() as u32);
        assert_eq!(header(&buf), (TIMED, lens.len() as u32));
        let mut r = Reader::new(&buf);
        for &n in &lens {
            assert_eq!(r.str(), Some(&vec![n as u8; n][..]));
            assert_eq!(r.u64(), Some(n as u64 * 3));
        }
        assert_eq!(r.str(), None);
    }

    #[test]
    fn malformed_bytes_end_the_reading_without_a_panic() {
        assert_eq!(header(b"\x00\x01"), (0, 0));
        for bad in [
            &b"\x00\x01\x00\x00\x00\x05ab"[..],
            b"\x00\x01\x00\x00\x00\xff\xff\xff\xff\xff\x01",
            b"\x00",
        ] {
            let mut r = Reader::new(bad);
            assert_eq!(r.str(), None);
            assert_eq!(r.str(), None);
            assert_eq!(r.u64(), None);
        }
    }
}
