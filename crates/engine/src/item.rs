//! The item format: a key record in a segment's low end, its value in the high end.
//!
//! Keys grow up from the start of a segment and values grow down from its end (Cavast §4.2,
//! head-to-head allocation), so the keys of neighbouring items share cache lines and comparing
//! a key never drags a large value into the CPU cache. Small values (at most the engine's
//! `inline_value_max`, 64 bytes by default) are the exception: they follow their key record
//! directly, which saves a cache miss per GET hit (measured in `docs/design.md`). A key record
//! is:
//!
//! ```text
//!  0                                   8              11      12
//!  ├──────────────── word ─────────────┼─── expiry ───┼ access┼ [flags u32] [key len u16] key…
//!
//!  word (u64, little-endian):
//!  │ 63        │ 62       │ 61 ... 54 │ 53 ... 46 │ 45 ...... 23 │ 22 ....... 0 │
//!  │ HAS_FLAGS │ LONG_KEY │  TENANT   │  KEY_LEN  │  VALUE_LEN   │ VALUE_OFFSET │
//!  │   1 bit   │  1 bit   │  8 bit    │  8 bit    │   23 bit     │    23 bit    │
//!
//!  expiry (u24): │ 23 22 │ 21 ............ 0 │
//!                │ UNIT  │ DELTA from the segment's base time, rounded up
//! ```
//!
//! - `VALUE_OFFSET` is the value's offset inside the same segment (Cavast's in-segment pointer),
//!   which bounds segments to 8 MiB.
//! - Client flags (memcached's 32-bit opaque) are stored only when non-zero (`HAS_FLAGS`).
//! - Keys longer than 255 bytes (RESP allows 64 KiB) set `LONG_KEY` and store a u16 length.
//! - Expiry units: none, 1 ms (TTLs up to 69 min are exact to the millisecond), 1 s (up to
//!   48 days, exact to the second), 1 h (up to 478 years). Rounding is always up: an item may
//!   live up to one unit longer than asked, never shorter.
//! - The access byte is a coarse last-access stamp of the engine's recency clock; it is the
//!   only byte of a published item that is ever written, and it is accessed atomically.
//!
//! **Metadata per small item**: 12 bytes here plus the item's share of the index: one 8-byte
//! slot nominally (20 bytes in all), measured at 19.1 bytes at the index's real load (4.2
//! items per root bucket plus sub-bucket groups), for 31.1 bytes in all.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes of the fixed key-record header.
pub const HEADER_LEN: usize = 12;

const VALUE_OFFSET_BITS: u32 = 23;
const VALUE_OFFSET_MASK: u64 = (1 << VALUE_OFFSET_BITS) - 1;
const VALUE_LEN_SHIFT: u32 = 23;
const VALUE_LEN_MASK: u64 = (1 << 23) - 1;
const KEY_LEN_SHIFT: u32 = 46;
const KEY_LEN_MASK: u64 = 0xFF;
const TENANT_SHIFT: u32 = 54;
const TENANT_MASK: u64 = 0xFF;
const LONG_KEY_BIT: u64 = 1 << 62;
const HAS_FLAGS_BIT: u64 = 1 << 63;

/// The largest segment whose offsets fit in `VALUE_OFFSET`.
pub const MAX_SEGMENT_SIZE: usize = 1 << VALUE_OFFSET_BITS;
/// The longest key a record can hold.
pub const MAX_KEY_LEN: usize = u16::MAX as usize;
/// Number of distinct tenant ids a record can hold.
pub const MAX_TENANTS: usize = 256;

const EXPIRY_UNIT_SHIFT: u32 = 22;
const EXPIRY_DELTA_MASK: u32 = (1 << 22) - 1;
const UNIT_NONE: u32 = 0;
/// Milliseconds per unit, indexed by the UNIT field (index 0, "no expiry", is unused).
const UNIT_MS: [u64; 4] = [0, 1, 1_000, 3_600_000];

const ACCESS_OFFSET: usize = 11;

/// Everything needed to write one item.
#[derive(Debug, Clone, Copy)]
pub struct NewItem<'a> {
    /// Owning tenant.
    pub tenant: u8,
    /// Key bytes (1..=[`MAX_KEY_LEN`]).
    pub key: &'a [u8],
    /// Client flags; stored only when non-zero.
    pub flags: u32,
    /// Absolute expiry in ms since the Unix epoch, or `None` for never.
    pub expires_at_ms: Option<u64>,
    /// Initial access stamp.
    pub access: u8,
}

impl NewItem<'_> {
    /// Bytes this item's key record takes.
    pub fn record_len(&self) -> usize {
        record_len(self.key.len(), self.flags != 0)
    }
}

/// Bytes of a key record for a key of `key_len` bytes.
pub const fn record_len(key_len: usize, has_flags: bool) -> usize {
    HEADER_LEN + if has_flags { 4 } else { 0 } + if key_len > 255 { 2 } else { 0 } + key_len
}

/// Encodes an absolute expiry relative to a segment's base time.
pub fn encode_expiry(expires_at_ms: Option<u64>, base_ms: u64) -> u32 {
    let Some(at) = expires_at_ms else { return UNIT_NONE };
    let delta = at.saturating_sub(base_ms);
    for (unit, &ms) in UNIT_MS.iter().enumerate().skip(1) {
        let units = delta.div_ceil(ms);
        if units <= u64::from(EXPIRY_DELTA_MASK) {
            return ((unit as u32) << EXPIRY_UNIT_SHIFT) | units as u32;
        }
    }
    (3 << EXPIRY_UNIT_SHIFT) | EXPIRY_DELTA_MASK
}

/// Decodes an expiry written by [`encode_expiry`].
pub fn decode_expiry(code: u32, base_ms: u64) -> Option<u64> {
    let unit = (code >> EXPIRY_UNIT_SHIFT) as usize & 3;
    if unit as u32 == UNIT_NONE {
        return None;
    }
    Some(base_ms + u64::from(code & EXPIRY_DELTA_MASK) * UNIT_MS[unit])
}

/// Writes a key record at `record` and the value at `value`; `value_offset` is the value's
/// offset within the segment.
///
/// # Safety
/// `record` must be valid for writes of `item.record_len()` bytes and `value` for writes of
/// `value_len` bytes, both inside one segment that no other thread reads or writes at those
/// addresses until the item is published; the ranges must not overlap.
pub unsafe fn write(
    record: *mut u8,
    value: *mut u8,
    item: &NewItem<'_>,
    value_offset: usize,
    value_parts: &[&[u8]],
    base_ms: u64,
) {
    let value_len: usize = value_parts.iter().map(|p| p.len()).sum();
    debug_assert!(value_offset as u64 <= VALUE_OFFSET_MASK && value_len as u64 <= VALUE_LEN_MASK);
    let long = item.key.len() > 255;
    let mut word = value_offset as u64
        | (value_len as u64) << VALUE_LEN_SHIFT
        | (u64::from(item.tenant) & TENANT_MASK) << TENANT_SHIFT;
    if !long {
        word |= (item.key.len() as u64) << KEY_LEN_SHIFT;
    } else {
        word |= LONG_KEY_BIT;
    }
    if item.flags != 0 {
        word |= HAS_FLAGS_BIT;
    }
    let expiry = encode_expiry(item.expires_at_ms, base_ms);
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&word.to_le_bytes());
    header[8..11].copy_from_slice(&expiry.to_le_bytes()[..3]);
    header[ACCESS_OFFSET] = item.access;
    // SAFETY: the caller guarantees `record` is writable for the whole record and unshared;
    // every write below stays inside `record_len()` bytes, in order: header, flags, key length,
    // key.
    unsafe {
        std::ptr::copy_nonoverlapping(header.as_ptr(), record, HEADER_LEN);
        let mut at = record.add(HEADER_LEN);
        if item.flags != 0 {
            std::ptr::copy_nonoverlapping(item.flags.to_le_bytes().as_ptr(), at, 4);
            at = at.add(4);
        }
        if long {
            let len = item.key.len() as u16;
            std::ptr::copy_nonoverlapping(len.to_le_bytes().as_ptr(), at, 2);
            at = at.add(2);
        }
        std::ptr::copy_nonoverlapping(item.key.as_ptr(), at, item.key.len());
    }
    let mut at = value;
    for part in value_parts {
        // SAFETY: the parts add up to `value_len`, for which `value` is writable and unshared.
        unsafe {
            std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
            at = at.add(part.len());
        }
    }
}

/// A decoded key record inside a segment, valid for `'g`: the life of the epoch guard (or the
/// exclusive ownership of the segment) that keeps the segment from being reused. Everything
/// borrowed from it (key, value, access byte) carries the same lifetime, so none of it can
/// outlive the guard.
#[derive(Debug, Clone, Copy)]
pub struct Record<'g> {
    record: *const u8,
    segment: *const u8,
    word: u64,
    expiry: u32,
    live: PhantomData<&'g ()>,
}

impl<'g> Record<'g> {
    /// Decodes the record at `offset` in the segment starting at `segment`.
    ///
    /// # Safety
    /// A complete, published record must start at `offset`, and the segment must stay
    /// allocated and unreused for as long as the returned value (and anything borrowed from it)
    /// is used — that is, for `'g` the caller is pinned in an epoch in which the segment is
    /// live (or owns the segment outright).
    #[inline]
    pub unsafe fn at(segment: *const u8, offset: usize) -> Record<'g> {
        // SAFETY: the caller guarantees a whole record is published at `offset`; the header is
        // the first HEADER_LEN bytes of it and is never written after publication (except the
        // access byte, which is not read here).
        unsafe {
            let record = segment.add(offset);
            let word = u64::from_le_bytes(std::ptr::read_unaligned(record.cast::<[u8; 8]>()));
            let e = std::ptr::read_unaligned(record.add(8).cast::<[u8; 3]>());
            let expiry = u32::from_le_bytes([e[0], e[1], e[2], 0]);
            Record { record, segment, word, expiry, live: PhantomData }
        }
    }

    /// Owning tenant id.
    #[inline]
    pub fn tenant(&self) -> u8 {
        ((self.word >> TENANT_SHIFT) & TENANT_MASK) as u8
    }

    /// Client flags.
    #[inline]
    pub fn flags(&self) -> u32 {
        if self.word & HAS_FLAGS_BIT == 0 {
            return 0;
        }
        // SAFETY: HAS_FLAGS says four flag bytes follow the header inside the record.
        let b = unsafe { std::ptr::read_unaligned(self.record.add(HEADER_LEN).cast::<[u8; 4]>()) };
        u32::from_le_bytes(b)
    }

    #[inline]
    fn key_start(&self) -> usize {
        HEADER_LEN + if self.word & HAS_FLAGS_BIT != 0 { 4 } else { 0 }
    }

    /// Key bytes.
    #[inline]
    pub fn key(&self) -> &'g [u8] {
        let start = self.key_start();
        // SAFETY: the record is published and complete (see `at`); its key length field, then
        // its key bytes, lie inside it, and they are never written while the segment is live.
        unsafe {
            if self.word & LONG_KEY_BIT != 0 {
                let len = u16::from_le_bytes(std::ptr::read_unaligned(
                    self.record.add(start).cast::<[u8; 2]>(),
                ));
                std::slice::from_raw_parts(self.record.add(start + 2), len as usize)
            } else {
                let len = ((self.word >> KEY_LEN_SHIFT) & KEY_LEN_MASK) as usize;
                std::slice::from_raw_parts(self.record.add(start), len)
            }
        }
    }

    /// Length of the whole key record.
    #[inline]
    pub fn record_len(&self) -> usize {
        record_len(self.key().len(), self.word & HAS_FLAGS_BIT != 0)
    }

    /// Value length.
    #[inline]
    pub fn value_len(&self) -> usize {
        ((self.word >> VALUE_LEN_SHIFT) & VALUE_LEN_MASK) as usize
    }

    /// Offset of the value in the segment.
    #[inline]
    pub fn value_offset(&self) -> usize {
        (self.word & VALUE_OFFSET_MASK) as usize
    }

    /// Value bytes.
    #[inline]
    pub fn value(&self) -> &'g [u8] {
        let offset = (self.word & VALUE_OFFSET_MASK) as usize;
        // SAFETY: the value was written before the record was published, lies in the same
        // segment at `offset`, and is never written while the segment is live.
        unsafe { std::slice::from_raw_parts(self.segment.add(offset), self.value_len()) }
    }

    /// Bytes this item occupies in its segment (record plus value).
    #[inline]
    pub fn size(&self) -> usize {
        self.record_len() + self.value_len()
    }

    /// Whether the item has an expiry (without decoding it).
    #[inline]
    pub fn has_expiry(&self) -> bool {
        self.expiry >> EXPIRY_UNIT_SHIFT != UNIT_NONE
    }

    /// Absolute expiry, given the segment's base time.
    #[inline]
    pub fn expires_at_ms(&self, base_ms: u64) -> Option<u64> {
        decode_expiry(self.expiry, base_ms)
    }

    fn access_byte(&self) -> &'g AtomicU8 {
        // SAFETY: the access byte lies inside the published record; it is only ever accessed
        // through this atomic view, so concurrent loads and stores do not race. AtomicU8 has
        // alignment 1.
        unsafe { AtomicU8::from_ptr(self.record.add(ACCESS_OFFSET).cast_mut()) }
    }

    /// The coarse last-access stamp.
    #[inline]
    pub fn access(&self) -> u8 {
        self.access_byte().load(Ordering::Relaxed)
    }

    /// Records an access at stamp `now`, writing only if the stamp changes (so a hot item's
    /// line is not written by every reader).
    #[inline]
    pub fn touch_access(&self, now: u8) {
        let byte = self.access_byte();
        if byte.load(Ordering::Relaxed) != now {
            byte.store(now, Ordering::Relaxed);
        }
    }
}

const _: () = assert!(HEADER_LEN == 12);
const _: () = assert!(MAX_SEGMENT_SIZE as u64 - 1 == VALUE_OFFSET_MASK);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_exact_to_the_millisecond_below_69_minutes() {
        let base = 1_700_000_000_000;
        for ttl in [0, 1, 999, 60_000, 4_194_303] {
            assert_eq!(
                decode_expiry(encode_expiry(Some(base + ttl), base), base),
                Some(base + ttl)
            );
        }
    }

    #[test]
    fn long_expiry_rounds_up_never_down() {
        let base = 5_000;
        for ttl in [4_194_304u64, 86_400_123, 30 * 86_400_000 + 1, 10 * 365 * 86_400_000] {
            let got = decode_expiry(encode_expiry(Some(base + ttl), base), base).unwrap();
            assert!(got >= base + ttl, "ttl {ttl} decoded early");
            let unit = if ttl < 4_194_304_000 { 1_000 } else { 3_600_000 };
            assert!(got - (base + ttl) < unit, "ttl {ttl} rounded by more than one unit");
        }
        assert_eq!(decode_expiry(encode_expiry(None, base), base), None);
    }

    #[test]
    fn record_round_trips() {
        let mut seg = vec![0u8; 4096];
        for (key, flags, value) in [
            (&b"k"[..], 0u32, &b"v"[..]),
            (&b"flagged"[..], 0xDEAD_BEEF, &b""[..]),
            (&[7u8; 300][..], 5, &[1u8; 100][..]),
        ] {
            let item = NewItem { tenant: 9, key, flags, expires_at_ms: Some(1234), access: 3 };
            let value_offset = 4096 - value.len();
            let base = seg.as_mut_ptr();
            // SAFETY: both ranges lie inside `seg`, which nothing else uses.
            let rec = unsafe {
                write(base, base.add(value_offset), &item, value_offset, &[value], 1000);
                Record::at(base, 0)
            };
            assert_eq!(rec.key(), key);
            assert_eq!(rec.value(), value);
            assert_eq!(rec.flags(), flags);
            assert_eq!(rec.tenant(), 9);
            assert_eq!(rec.access(), 3);
            assert_eq!(rec.expires_at_ms(1000), Some(1234));
            assert!(rec.has_expiry());
            assert_eq!(rec.record_len(), item.record_len());
        }
    }
}
