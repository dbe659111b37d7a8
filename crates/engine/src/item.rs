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
//!  0             8                      15     16       17      18            21
//!  ├──── word ───┼───── cas (56 bits) ──┼ HIGH ┼ access ┼ state ┼── touched ──┼ [expiry u32]
//!                                                                              [expires_at u64]
//!                                                                              [flags u32]
//!                                                                              [kind u8]
//!                                                                              [key len u16] key…
//!
//!  word (u64, little-endian):
//!  │ 63        │ 62       │ 61 ... 54 │  53   │ 52 ... 46 │ 45 ...... 23 │ 22 ....... 0 │
//!  │ HAS_FLAGS │ LONG_KEY │ TENANT_LO │ TYPED │  KEY_LEN  │  VALUE_LEN   │ VALUE_OFFSET │
//!  │   1 bit   │  1 bit   │  8 bit    │ 1 bit │  7 bit    │   23 bit     │    23 bit    │
//!
//!  HIGH (u8): │     7      │ 6 ...... 0 │
//!             │ HAS_EXPIRY │ TENANT_HI  │
//!
//!  expiry (u32): │ 31 30 │ 29 ................ 0 │
//!                │ KIND  │ DELTA ms from the segment's base time (KIND = COMPACT)
//!
//!  state (u8, atomic): │ 7 ... 4 │     3      │    2    │    1     │   0   │
//!                      │   DB    │ KEY_BINARY │ FETCHED │ WIN_SENT │ STALE │
//!
//!  touched (24 bits, little-endian, bytes atomic): │ 23 22 │ 21 ........... 0 │
//!                                                  │ FREQ  │ seconds mod 2^22 │
//! ```
//!
//! - `VALUE_OFFSET` is the value's offset inside the same segment (Cavast's in-segment pointer),
//!   which bounds segments to 8 MiB.
//! - The tenant id is 15 bits: its low byte in the word (`TENANT_LO`), its high bits in the
//!   CAS field's top byte (`HIGH`), so ids wider than a byte cost no header byte; CAS values
//!   are 56 bits ([`MAX_CAS`]).
//! - `cas` is the item's own CAS value (memcached's "unique"), given when the value is written
//!   and kept by everything that leaves the value as it is: a TTL change (which rewrites the
//!   record with the same CAS) and the cleaner's relocation. Values come from one engine-wide
//!   counter, so they are unique per item and grow with time (memcached's `ms I` compares
//!   them); a client may also set one explicitly (memcached meta `E`).
//! - Expiry is exact to the millisecond, and stored only by an item that has one
//!   (`HAS_EXPIRY`): a cache of items that never expire pays nothing for it. KIND `COMPACT`
//!   holds the delta from the segment's base time (up to 2^30 ms, 12.4 days); `WIDE` means
//!   the delta does not fit and the absolute expiry (ms since the Unix epoch) follows as a
//!   u64, 8 bytes more paid only by items that expire more than 12.4 days after their
//!   segment was opened. Nothing is rounded: an item expires at the millisecond asked.
//! - Client flags (memcached's 32-bit opaque) are stored only when non-zero (`HAS_FLAGS`).
//! - Keys longer than 127 bytes (RESP allows 64 KiB) set `LONG_KEY` and store a u16 length.
//! - The value's kind ([`Kind`]: what the value's bytes encode, a string or one of a
//!   server's collections) is stored only when it is not [`Kind::STRING`] (`TYPED`, one byte),
//!   so a plain cache pays nothing for it.
//! - The access byte is a coarse last-access stamp of the engine's recency clock (for the
//!   eviction ranks); the state byte holds the meta protocol's per-item bits (memcached
//!   `doc/new_lru.txt`: stale, win token handed out, fetched since written); `touched` is the
//!   last access in whole seconds of the engine's clock, modulo 2^22 (48.5 days; memcached
//!   meta `l`), under `FREQ`, the reads since the item entered its eviction queue (at most 3,
//!   S3-FIFO's two-bit counter; `crate::Eviction::Queues`; the last byte is updated by
//!   compare-and-swap so neither half overwrites the other). `DB` is the item's database (Redis `SELECT`), written with the record and
//!   never changed: part of the item's identity with its tenant and key (0 for memcached
//!   clients). They are the only bytes of a published item that are ever written, each
//!   accessed atomically on its own (a reader may see `touched` half-updated when a second
//!   carries into its next byte: `l` is then off by a multiple of 256 s for that read).
//!
//! **Metadata per small item**: 21 bytes here for an item that never expires (8 of them the
//! CAS, 1 the state byte, 3 the access time), 25 for one that does (33 for an item expiring
//! more than 12.4 days after its segment opened), plus the item's share of the index: one
//! 8-byte slot nominally (29 or 33 bytes in all), measured at 19.1 bytes at the index's real
//! load (4.2 items per root bucket plus sub-bucket groups), for 40.1 or 44.1 bytes in all.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes of the fixed key-record header.
pub const HEADER_LEN: usize = 21;
/// Bytes of the expiry code that follows the header of an item with an expiry.
pub const EXPIRY_LEN: usize = 4;
/// Bytes of the absolute expiry that follows the header of an item with a wide expiry.
pub const WIDE_EXPIRY_LEN: usize = 8;

const VALUE_OFFSET_BITS: u32 = 23;
const VALUE_OFFSET_MASK: u64 = (1 << VALUE_OFFSET_BITS) - 1;
const VALUE_LEN_SHIFT: u32 = 23;
const VALUE_LEN_MASK: u64 = (1 << 23) - 1;
const KEY_LEN_SHIFT: u32 = 46;
const KEY_LEN_MASK: u64 = 0x7F;
/// The longest key whose length fits in the word's `KEY_LEN`; longer keys store a u16.
const SHORT_KEY_MAX: usize = KEY_LEN_MASK as usize;
const TYPED_BIT: u64 = 1 << 53;
const TENANT_SHIFT: u32 = 54;
const TENANT_MASK: u64 = 0xFF;
/// Where the CAS field's top byte (`HIGH`: the tenant id's high bits and `HAS_EXPIRY`) sits
/// in the CAS's u64.
const TENANT_HI_SHIFT: u32 = 56;
/// The bits of `HIGH` that hold the tenant id's high bits.
const TENANT_HI_MASK: u8 = 0x7F;
/// `HIGH`'s flag: an expiry code follows the header.
const HAS_EXPIRY_BIT: u8 = 0x80;
/// The largest CAS value a record holds: 56 bits (the field's top byte is `HIGH`: the tenant
/// id's high bits and the has-expiry bit). A counter taking one value per write reaches it
/// after 228 years at 10M writes/s.
pub const MAX_CAS: u64 = (1 << TENANT_HI_SHIFT) - 1;
const LONG_KEY_BIT: u64 = 1 << 62;
const HAS_FLAGS_BIT: u64 = 1 << 63;

/// The largest segment whose offsets fit in `VALUE_OFFSET`.
pub const MAX_SEGMENT_SIZE: usize = 1 << VALUE_OFFSET_BITS;
/// The longest key a record can hold.
pub const MAX_KEY_LEN: usize = u16::MAX as usize;
/// Number of distinct tenant ids: ids are below this. A record holds 15 bits of id; the bound
/// is the size of the per-tenant arrays (the engine's tenant states, the server's counters),
/// which are indexed by id and allocated whole.
pub const MAX_TENANTS: usize = 1024;

const CAS_OFFSET: usize = 8;
const HIGH_OFFSET: usize = 15;
const ACCESS_OFFSET: usize = 16;
const STATE_OFFSET: usize = 17;
const TOUCHED_OFFSET: usize = 18;
const TOUCHED_LEN: usize = 3;
/// The `touched` stamp counts seconds modulo this (22 bits: 48.5 days).
pub const TOUCHED_MODULUS: u32 = 1 << TOUCHED_BITS;
const TOUCHED_BITS: u32 = 22;
/// The bits of the `touched` field's last byte above the stamp: the item's read frequency.
const FREQ_SHIFT: u32 = TOUCHED_BITS - 16;
/// The frequency's ceiling (two bits, S3-FIFO's counter).
pub const MAX_FREQ: u8 = 3;

/// The `touched` stamp of a time in ms.
pub const fn touched_stamp(now_ms: u64) -> u32 {
    ((now_ms / 1000) % TOUCHED_MODULUS as u64) as u32
}

/// Whole seconds from stamp `then` to the stamp of `now_ms` (modulo 2^22).
pub const fn seconds_since(then: u32, now_ms: u64) -> u32 {
    touched_stamp(now_ms).wrapping_sub(then) % TOUCHED_MODULUS
}

const EXPIRY_KIND_SHIFT: u32 = 30;
const EXPIRY_DELTA_MASK: u32 = (1 << EXPIRY_KIND_SHIFT) - 1;
const KIND_NONE: u32 = 0;
const KIND_COMPACT: u32 = 1;
const KIND_WIDE: u32 = 2;

/// State bit: the item is stale (memcached meta `md I`, `ms I`).
pub const STATE_STALE: u8 = 1;
/// State bit: a client was handed the win token to recache the item (meta `W`).
pub const STATE_WIN_SENT: u8 = 1 << 1;
/// State bit: the item was read since it was written (meta `h`).
pub const STATE_FETCHED: u8 = 1 << 2;
/// State bit, set when the item is written and never changed: the client sent the key
/// base64-encoded (memcached meta `b`), so replies that echo the key encode it again.
pub const STATE_KEY_BINARY: u8 = 1 << 3;

/// Where the database number sits in the state byte: its high four bits, set when the record
/// is written and never changed (readers only ever set the low `STATE_*` bits).
const DB_SHIFT: u32 = 4;
/// The state byte's `STATE_*` bits (the rest is the database).
const STATE_BITS_MASK: u8 = (1 << DB_SHIFT) - 1;
/// Number of distinct databases a record can hold.
pub const MAX_DBS: usize = 1 << (8 - DB_SHIFT);

/// What an item's value encodes: a byte the engine stores and compares but never interprets.
/// [`Kind::STRING`], the kind of every memcached value and of Redis's strings, costs nothing
/// in the record; a server gives its collections (Redis hashes, lists…) other kinds, and the
/// engine keeps an operation meant for one kind from reading or overwriting a value of
/// another (`EngineError::WrongKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind(pub u8);

impl Kind {
    /// An opaque byte string.
    pub const STRING: Kind = Kind(0);
}

const fn expiry_kind(code: u32) -> u32 {
    code >> EXPIRY_KIND_SHIFT
}

/// Everything needed to write one item.
#[derive(Debug, Clone, Copy)]
pub struct NewItem<'a> {
    /// Owning tenant (below [`MAX_TENANTS`]).
    pub tenant: u16,
    /// Key bytes (1..=[`MAX_KEY_LEN`]).
    pub key: &'a [u8],
    /// Client flags; stored only when non-zero.
    pub flags: u32,
    /// Absolute expiry in ms since the Unix epoch, or `None` for never.
    pub expires_at_ms: Option<u64>,
    /// The item's CAS value; bits above [`MAX_CAS`] are dropped.
    pub cas: u64,
    /// Initial access stamp.
    pub access: u8,
    /// Initial state bits (`STATE_*`).
    pub state: u8,
    /// The database (below [`MAX_DBS`]).
    pub db: u8,
    /// Initial `touched` stamp ([`touched_stamp`]).
    pub touched: u32,
    /// Initial read frequency ([`Record::freq`]; 0 for a new item).
    pub freq: u8,
    /// What the value encodes.
    pub kind: Kind,
}

impl NewItem<'_> {
    /// Bytes this item's key record takes in a segment whose base time is `base_ms`.
    pub fn record_len(&self, base_ms: u64) -> usize {
        let expiry = ExpiryField::of_code(encode_expiry(self.expires_at_ms, base_ms));
        record_len(self.key.len(), self.flags != 0, expiry, self.kind != Kind::STRING)
    }

    /// The most bytes this item's key record can take, whatever segment it lands in.
    pub fn max_record_len(&self) -> usize {
        let expiry =
            if self.expires_at_ms.is_some() { ExpiryField::Wide } else { ExpiryField::None };
        record_len(self.key.len(), self.flags != 0, expiry, self.kind != Kind::STRING)
    }
}

/// What a key record stores of its item's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryField {
    /// Nothing: the item never expires.
    None,
    /// The 4-byte code: a delta from the segment's base time.
    Compact,
    /// The code and the absolute time after it (12 bytes).
    Wide,
}

impl ExpiryField {
    /// What a record stores for an expiry encoded as `code` ([`encode_expiry`]).
    const fn of_code(code: u32) -> ExpiryField {
        match expiry_kind(code) {
            KIND_NONE => ExpiryField::None,
            KIND_COMPACT => ExpiryField::Compact,
            _ => ExpiryField::Wide,
        }
    }

    /// Bytes the field takes after the header.
    pub const fn bytes(self) -> usize {
        match self {
            ExpiryField::None => 0,
            ExpiryField::Compact => EXPIRY_LEN,
            ExpiryField::Wide => EXPIRY_LEN + WIDE_EXPIRY_LEN,
        }
    }
}

/// Bytes of a key record for a key of `key_len` bytes.
pub const fn record_len(
    key_len: usize,
    has_flags: bool,
    expiry: ExpiryField,
    typed: bool,
) -> usize {
    HEADER_LEN
        + expiry.bytes()
        + if has_flags { 4 } else { 0 }
        + if typed { 1 } else { 0 }
        + if key_len > SHORT_KEY_MAX { 2 } else { 0 }
        + key_len
}

/// Whether an expiry needs the wide field in a segment whose base time is `base_ms`: its
/// delta from the base is over 30 bits of milliseconds, or it lies before the base.
pub fn is_wide(expires_at_ms: Option<u64>, base_ms: u64) -> bool {
    expires_at_ms.is_some_and(|at| at < base_ms || at - base_ms > u64::from(EXPIRY_DELTA_MASK))
}

/// Encodes an absolute expiry relative to a segment's base time: the compact code, whose
/// kind says whether the absolute time must also be stored (see [`is_wide`]).
pub fn encode_expiry(expires_at_ms: Option<u64>, base_ms: u64) -> u32 {
    match expires_at_ms {
        None => KIND_NONE << EXPIRY_KIND_SHIFT,
        Some(_) if is_wide(expires_at_ms, base_ms) => KIND_WIDE << EXPIRY_KIND_SHIFT,
        Some(at) => KIND_COMPACT << EXPIRY_KIND_SHIFT | (at - base_ms) as u32,
    }
}

/// Decodes an expiry written by [`encode_expiry`]; `wide` is the absolute time stored after
/// the header when the code's kind is `WIDE`.
pub fn decode_expiry(code: u32, base_ms: u64, wide: impl FnOnce() -> u64) -> Option<u64> {
    match expiry_kind(code) {
        KIND_NONE => None,
        KIND_COMPACT => Some(base_ms + u64::from(code & EXPIRY_DELTA_MASK)),
        _ => Some(wide()),
    }
}

/// Writes a key record at `record` and the value at `value`; `value_offset` is the value's
/// offset within the segment, `base_ms` the segment's base time. The record says the value
/// is `value_len` bytes long; `value_parts` are copied to `value` and add up to `value_len`,
/// or are empty where values are not copied (`EngineConfig::copy_values`).
///
/// # Safety
/// `record` must be valid for writes of `item.record_len(base_ms)` bytes and `value` for
/// writes of `value_len` bytes, both inside one segment that no other thread reads or writes
/// at those addresses until the item is published; the ranges must not overlap.
pub unsafe fn write(
    record: *mut u8,
    value: *mut u8,
    item: &NewItem<'_>,
    value_offset: usize,
    value_len: usize,
    value_parts: &[&[u8]],
    base_ms: u64,
) {
    debug_assert!(
        value_parts.is_empty() || value_parts.iter().map(|p| p.len()).sum::<usize>() == value_len
    );
    debug_assert!(value_offset as u64 <= VALUE_OFFSET_MASK && value_len as u64 <= VALUE_LEN_MASK);
    let long = item.key.len() > SHORT_KEY_MAX;
    let typed = item.kind != Kind::STRING;
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
    if typed {
        word |= TYPED_BIT;
    }
    let expiry = encode_expiry(item.expires_at_ms, base_ms);
    let field = ExpiryField::of_code(expiry);
    let mut header = [0u8; HEADER_LEN];
    header[..CAS_OFFSET].copy_from_slice(&word.to_le_bytes());
    debug_assert!(usize::from(item.tenant) < MAX_TENANTS);
    let mut high = (item.tenant >> 8) as u8 & TENANT_HI_MASK;
    if field != ExpiryField::None {
        high |= HAS_EXPIRY_BIT;
    }
    let cas = item.cas & MAX_CAS | u64::from(high) << TENANT_HI_SHIFT;
    header[CAS_OFFSET..ACCESS_OFFSET].copy_from_slice(&cas.to_le_bytes());
    header[ACCESS_OFFSET] = item.access;
    debug_assert!(usize::from(item.db) < MAX_DBS);
    header[STATE_OFFSET] = item.state & STATE_BITS_MASK | item.db << DB_SHIFT;
    let touched =
        (item.touched % TOUCHED_MODULUS) | (u32::from(item.freq.min(MAX_FREQ)) << TOUCHED_BITS);
    header[TOUCHED_OFFSET..].copy_from_slice(&touched.to_le_bytes()[..TOUCHED_LEN]);
    // SAFETY: the caller guarantees `record` is writable for the whole record and unshared;
    // every write below stays inside `record_len(base_ms)` bytes, in order: header, expiry
    // code, wide expiry, flags, kind, key length, key.
    unsafe {
        std::ptr::copy_nonoverlapping(header.as_ptr(), record, HEADER_LEN);
        let mut at = record.add(HEADER_LEN);
        if field != ExpiryField::None {
            std::ptr::copy_nonoverlapping(expiry.to_le_bytes().as_ptr(), at, EXPIRY_LEN);
            at = at.add(EXPIRY_LEN);
        }
        if field == ExpiryField::Wide {
            let wide = item.expires_at_ms.unwrap_or(0).to_le_bytes();
            std::ptr::copy_nonoverlapping(wide.as_ptr(), at, WIDE_EXPIRY_LEN);
            at = at.add(WIDE_EXPIRY_LEN);
        }
        if item.flags != 0 {
            std::ptr::copy_nonoverlapping(item.flags.to_le_bytes().as_ptr(), at, 4);
            at = at.add(4);
        }
        if typed {
            at.write(item.kind.0);
            at = at.add(1);
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
        // SAFETY: the parts add up to `value_len` (or there are none), for which `value` is
        // writable and unshared.
        unsafe {
            std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
            at = at.add(part.len());
        }
    }
}

/// The state byte of a published item, as a reader may change it: bits are only ever set,
/// and setting returns the bits as they were, so of many readers racing to set a bit exactly
/// one sees it clear (the meta protocol's win token).
#[derive(Debug, Clone, Copy)]
pub struct StateCell<'g>(&'g AtomicU8);

impl StateCell<'_> {
    /// Sets `bits` (`STATE_*`), returning the state bits as they were before.
    #[inline]
    pub fn set(&self, bits: u8) -> u8 {
        let bits = bits & STATE_BITS_MASK;
        let old = self.0.load(Ordering::Relaxed);
        let old = if old & bits == bits { old } else { self.0.fetch_or(bits, Ordering::AcqRel) };
        old & STATE_BITS_MASK
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
        // the first HEADER_LEN bytes of it, followed by the expiry code where HAS_EXPIRY says
        // so, and neither is written after publication (but the access, state and touched
        // bytes, which are not read here).
        unsafe {
            let record = segment.add(offset);
            let word = u64::from_le_bytes(std::ptr::read_unaligned(record.cast::<[u8; 8]>()));
            let expiry = if record.add(HIGH_OFFSET).read() & HAS_EXPIRY_BIT != 0 {
                let e = std::ptr::read_unaligned(record.add(HEADER_LEN).cast::<[u8; 4]>());
                u32::from_le_bytes(e)
            } else {
                KIND_NONE << EXPIRY_KIND_SHIFT
            };
            Record { record, segment, word, expiry, live: PhantomData }
        }
    }

    /// Owning tenant id.
    #[inline]
    pub fn tenant(&self) -> u16 {
        // SAFETY: the CAS field's top byte lies inside the published header and is never
        // written after publication.
        let high = unsafe { self.record.add(HIGH_OFFSET).read() } & TENANT_HI_MASK;
        ((self.word >> TENANT_SHIFT) & TENANT_MASK) as u16 | u16::from(high) << 8
    }

    /// Client flags.
    #[inline]
    pub fn flags(&self) -> u32 {
        if self.word & HAS_FLAGS_BIT == 0 {
            return 0;
        }
        // SAFETY: HAS_FLAGS says four flag bytes follow the header (and the expiry, if any)
        // inside the record.
        let b = unsafe {
            std::ptr::read_unaligned(self.record.add(self.flags_start()).cast::<[u8; 4]>())
        };
        u32::from_le_bytes(b)
    }

    #[inline]
    fn expiry_field(&self) -> ExpiryField {
        ExpiryField::of_code(self.expiry)
    }

    #[inline]
    fn flags_start(&self) -> usize {
        HEADER_LEN + self.expiry_field().bytes()
    }

    #[inline]
    fn kind_start(&self) -> usize {
        self.flags_start() + if self.word & HAS_FLAGS_BIT != 0 { 4 } else { 0 }
    }

    #[inline]
    fn key_start(&self) -> usize {
        self.kind_start() + if self.word & TYPED_BIT != 0 { 1 } else { 0 }
    }

    /// What the value encodes.
    #[inline]
    pub fn kind(&self) -> Kind {
        if self.word & TYPED_BIT == 0 {
            return Kind::STRING;
        }
        // SAFETY: TYPED says a kind byte follows the flags (or the header and the expiry)
        // inside the published record; it is never written after publication.
        Kind(unsafe { self.record.add(self.kind_start()).read() })
    }

    /// The item's CAS value.
    #[inline]
    pub fn cas(&self) -> u64 {
        // SAFETY: the CAS lies inside the published header; it is written after publication
        // only by an edit in place of a non-string item, whose readers hold the edit lock
        // that excludes it (`crate::edit`).
        let b = unsafe { std::ptr::read_unaligned(self.record.add(CAS_OFFSET).cast::<[u8; 8]>()) };
        u64::from_le_bytes(b) & MAX_CAS
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
        let typed = self.word & TYPED_BIT != 0;
        record_len(self.key().len(), self.word & HAS_FLAGS_BIT != 0, self.expiry_field(), typed)
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
        // SAFETY: the value was written before the record was published and lies in the same
        // segment at `offset`; it is written while the segment is live only by an edit in
        // place of a non-string item, whose readers hold the edit lock that excludes it
        // (`crate::edit`).
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
        expiry_kind(self.expiry) != KIND_NONE
    }

    /// Absolute expiry, given the segment's base time.
    #[inline]
    pub fn expires_at_ms(&self, base_ms: u64) -> Option<u64> {
        decode_expiry(self.expiry, base_ms, || {
            let at = HEADER_LEN + EXPIRY_LEN;
            // SAFETY: a WIDE kind says the absolute expiry follows the expiry code inside the
            // record; it is never written after publication.
            let b = unsafe { std::ptr::read_unaligned(self.record.add(at).cast::<[u8; 8]>()) };
            u64::from_le_bytes(b)
        })
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

    fn state_byte(&self) -> &'g AtomicU8 {
        // SAFETY: as for the access byte: inside the published record, only ever accessed
        // through this atomic view.
        unsafe { AtomicU8::from_ptr(self.record.add(STATE_OFFSET).cast_mut()) }
    }

    /// The atomic state byte, for setting bits after the read (see [`StateCell`]).
    #[inline]
    pub fn state_cell(&self) -> StateCell<'g> {
        StateCell(self.state_byte())
    }

    /// The state bits (`STATE_*`).
    #[inline]
    pub fn state(&self) -> u8 {
        self.state_byte().load(Ordering::Relaxed) & STATE_BITS_MASK
    }

    /// The item's database (Redis `SELECT`), below [`MAX_DBS`].
    #[inline]
    pub fn db(&self) -> u8 {
        self.state_byte().load(Ordering::Relaxed) >> DB_SHIFT
    }

    /// Sets state `bits`, returning the bits as they were before (so exactly one of many
    /// concurrent callers sees a bit clear: the meta protocol's win token).
    #[inline]
    pub fn set_state(&self, bits: u8) -> u8 {
        self.state_cell().set(bits)
    }

    /// Clears [`STATE_FETCHED`]: an edit in place (`crate::edit`) leaves the item as unread as
    /// a rewrite would. Every other state bit is only ever set on a published record.
    #[inline]
    pub(crate) fn clear_fetched(&self) {
        self.state_byte().fetch_and(!STATE_FETCHED, Ordering::AcqRel);
    }

    /// Writes `bytes` over the value from its byte `at`: an edit in place (`crate::edit`).
    ///
    /// # Safety
    /// The record is published and is the current item of its key, whose kind is not
    /// [`Kind::STRING`]; the caller holds the key's root lock and its stripe's edit lock, so
    /// no other write of the record runs and nobody reads its value or CAS meanwhile
    /// (`crate::edit`); and `at + bytes.len()` is at most the value's length.
    pub(crate) unsafe fn overwrite_value(&self, at: usize, bytes: &[u8]) {
        debug_assert!(at + bytes.len() <= self.value_len());
        let offset = (self.word & VALUE_OFFSET_MASK) as usize + at;
        // SAFETY: the caller's contract: the bytes lie inside the value, which no one else
        // reads or writes while the locks are held.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.segment.add(offset).cast_mut(),
                bytes.len(),
            );
        }
    }

    /// Moves `len` bytes of the value from its byte `from` to its byte `to` (the two may
    /// overlap): an edit in place (`crate::edit`).
    ///
    /// # Safety
    /// As for [`Record::overwrite_value`]; both ranges lie inside the value.
    pub(crate) unsafe fn move_in_value(&self, from: usize, to: usize, len: usize) {
        debug_assert!(from.max(to) + len <= self.value_len());
        let offset = (self.word & VALUE_OFFSET_MASK) as usize;
        // SAFETY: the caller's contract: both ranges lie inside the value, which no one else
        // reads or writes while the locks are held; `copy` allows them to overlap.
        unsafe {
            let value = self.segment.add(offset).cast_mut();
            std::ptr::copy(value.add(from), value.add(to), len);
        }
    }

    /// Sets the CAS of a record edited in place, leaving the `HIGH` byte beside it (which
    /// lock-free readers of the tenant id and the expiry flag read) untouched.
    ///
    /// # Safety
    /// As for [`Record::overwrite_value`]; `cas` is at most [`MAX_CAS`].
    pub(crate) unsafe fn overwrite_cas(&self, cas: u64) {
        debug_assert!(cas <= MAX_CAS);
        let bytes = cas.to_le_bytes();
        // SAFETY: the 7 CAS bytes lie inside the published header; the caller's locks keep
        // every reader of them out (the `HIGH` byte after them is not written).
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.record.add(CAS_OFFSET).cast_mut(),
                HIGH_OFFSET - CAS_OFFSET,
            );
        }
    }

    fn touched_bytes(&self) -> [&'g AtomicU8; TOUCHED_LEN] {
        // SAFETY: as for the access byte: the three bytes lie inside the published record and
        // are only ever accessed through these atomic views.
        std::array::from_fn(|i| unsafe {
            AtomicU8::from_ptr(self.record.add(TOUCHED_OFFSET + i).cast_mut())
        })
    }

    /// The `touched` stamp: the last access, in seconds modulo 2^22 ([`touched_stamp`]).
    #[inline]
    pub fn touched(&self) -> u32 {
        let b = self.touched_bytes().map(|b| b.load(Ordering::Relaxed));
        u32::from_le_bytes([b[0], b[1], b[2], 0]) % TOUCHED_MODULUS
    }

    /// Records an access at `stamp`, writing only the bytes that change (a hot item's line is
    /// written at most once a second).
    #[inline]
    pub fn touch_touched(&self, stamp: u32) {
        let [bytes @ .., last] = self.touched_bytes();
        let new = stamp.to_le_bytes();
        for (byte, &new) in bytes.iter().zip(&new) {
            if byte.load(Ordering::Relaxed) != new {
                byte.store(new, Ordering::Relaxed);
            }
        }
        // The last byte's top bits are the frequency: keep them.
        let stamp_bits = (1u8 << FREQ_SHIFT) - 1;
        let _ = last.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            (b & stamp_bits != new[TOUCHED_LEN - 1])
                .then_some(b & !stamp_bits | new[TOUCHED_LEN - 1])
        });
    }

    /// The item's read frequency: reads since it entered its queue, at most [`MAX_FREQ`]
    /// (`crate::Eviction::Queues`). It shares the `touched` field's last byte.
    #[inline]
    pub fn freq(&self) -> u8 {
        self.touched_bytes()[TOUCHED_LEN - 1].load(Ordering::Relaxed) >> FREQ_SHIFT
    }

    /// Counts a read in the frequency, writing only while it is below [`MAX_FREQ`] (a hot
    /// item's line is not written by every reader).
    #[inline]
    pub fn bump_freq(&self) {
        let byte = self.touched_bytes()[TOUCHED_LEN - 1];
        let _ = byte.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            (b >> FREQ_SHIFT < MAX_FREQ).then(|| b + (1 << FREQ_SHIFT))
        });
    }

    /// Spends one read of the frequency, if it has any (the cleaner, giving an item another
    /// lap in place).
    #[inline]
    pub fn spend_read(&self) {
        let byte = self.touched_bytes()[TOUCHED_LEN - 1];
        let _ = byte.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            (b >> FREQ_SHIFT > 0).then(|| b - (1 << FREQ_SHIFT))
        });
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

const _: () = assert!(HEADER_LEN == TOUCHED_OFFSET + TOUCHED_LEN);
const _: () = assert!(MAX_SEGMENT_SIZE as u64 - 1 == VALUE_OFFSET_MASK);

#[cfg(test)]
mod tests {
    use super::*;

    /// A new string item of `key` with every other field zero (no expiry, no flags).
    fn plain(key: &[u8]) -> NewItem<'_> {
        NewItem {
            tenant: 0,
            key,
            flags: 0,
            expires_at_ms: None,
            cas: 0,
            access: 0,
            state: 0,
            db: 0,
            touched: 0,
            freq: 0,
            kind: Kind::STRING,
        }
    }

    fn round_trip(at: Option<u64>, base: u64) -> Option<u64> {
        let mut seg = vec![0u8; 256];
        let item = NewItem { flags: 7, expires_at_ms: at, cas: 99, ..plain(b"k") };
        let p = seg.as_mut_ptr();
        // SAFETY: both ranges lie inside `seg`, which nothing else uses.
        let rec = unsafe {
            write(p, p.add(200), &item, 200, 1, &[b"v"], base);
            Record::at(p, 0)
        };
        assert_eq!(rec.flags(), 7);
        assert_eq!(rec.key(), b"k");
        assert_eq!(rec.cas(), 99);
        assert_eq!(rec.record_len(), item.record_len(base));
        rec.expires_at_ms(base)
    }

    #[test]
    fn expiry_is_exact_to_the_millisecond_at_every_magnitude() {
        let base: u64 = 1_700_000_000_123;
        let mut ttl = 1u64;
        while ttl < u64::MAX / 4 {
            for t in [ttl - 1, ttl, ttl + 1, ttl.saturating_mul(1000)] {
                let at = base.saturating_add(t);
                assert_eq!(round_trip(Some(at), base), Some(at), "ttl {t}");
            }
            ttl *= 3;
        }
        assert_eq!(round_trip(Some(base - 5), base), Some(base - 5), "before the base");
        assert_eq!(round_trip(None, base), None);
    }

    #[test]
    fn only_a_far_expiry_pays_for_the_wide_field() {
        let base = 10_000;
        assert!(!is_wide(Some(base + u64::from(EXPIRY_DELTA_MASK)), base));
        assert!(is_wide(Some(base + u64::from(EXPIRY_DELTA_MASK) + 1), base));
        assert!(!is_wide(None, base));
    }

    #[test]
    fn state_bits_are_set_once() {
        let mut seg = vec![0u8; 64];
        let item = NewItem { cas: 1, ..plain(b"k") };
        let p = seg.as_mut_ptr();
        // SAFETY: both ranges lie inside `seg`, which nothing else uses.
        let rec = unsafe {
            write(p, p.add(60), &item, 60, 1, &[b"v"], 0);
            Record::at(p, 0)
        };
        assert_eq!(rec.set_state(STATE_WIN_SENT) & STATE_WIN_SENT, 0);
        assert_ne!(rec.set_state(STATE_WIN_SENT) & STATE_WIN_SENT, 0);
        assert_eq!(rec.state(), STATE_WIN_SENT);
    }

    #[test]
    fn record_round_trips() {
        let mut seg = vec![0u8; 4096];
        for row in [
            (&b"k"[..], 0u32, &b"v"[..], Kind::STRING, 9, MAX_CAS),
            (&b"flagged"[..], 0xDEAD_BEEF, &b""[..], Kind(3), 0x100, MAX_CAS - 1),
            (&[7u8; 300][..], 5, &[1u8; 100][..], Kind(255), MAX_TENANTS as u16 - 1, 1),
            (&[8u8; 127][..], 0, &[2u8; 3][..], Kind(1), 0x2FF, 0),
            (&[9u8; 128][..], 0, &[3u8; 3][..], Kind::STRING, 0, 0x00AB_CDEF_0123_4567),
        ]
        .into_iter()
        .flat_map(|row| [None, Some(1234), Some(1 << 40)].map(|at| (row, at)))
        {
            let ((key, flags, value, kind, tenant, cas), expires_at_ms) = row;
            let item = NewItem {
                tenant,
                key,
                flags,
                expires_at_ms,
                cas,
                access: 3,
                state: STATE_STALE,
                db: 15,
                touched: 0x2B_CDEF,
                freq: 2,
                kind,
            };
            let value_offset = 4096 - value.len();
            let base = seg.as_mut_ptr();
            // SAFETY: both ranges lie inside `seg`, which nothing else uses.
            let rec = unsafe {
                write(
                    base,
                    base.add(value_offset),
                    &item,
                    value_offset,
                    value.len(),
                    &[value],
                    1000,
                );
                Record::at(base, 0)
            };
            assert_eq!(rec.key(), key);
            assert_eq!(rec.kind(), kind);
            assert_eq!(rec.value(), value);
            assert_eq!(rec.flags(), flags);
            assert_eq!(rec.tenant(), tenant, "the id's high byte shares the CAS field");
            assert_eq!(rec.access(), 3);
            assert_eq!(rec.state(), STATE_STALE);
            assert_eq!(rec.db(), 15);
            assert_eq!(rec.set_state(STATE_FETCHED), STATE_STALE, "the database is no state bit");
            assert_eq!((rec.db(), rec.state()), (15, STATE_STALE | STATE_FETCHED));
            assert_eq!((rec.touched(), rec.freq()), (0x2B_CDEF, 2));
            rec.touch_touched(0x2B_CE00);
            rec.bump_freq();
            assert_eq!((rec.touched(), rec.freq()), (0x2B_CE00, 3), "stamp and reads share a byte");
            rec.touch_touched(0x3F_FFFF);
            rec.bump_freq();
            assert_eq!((rec.touched(), rec.freq()), (0x3F_FFFF, MAX_FREQ), "reads saturate");
            assert_eq!(seconds_since(0x2B_CE00, (0x2B_CE00 + 5) * 1000), 5);
            assert_eq!(seconds_since(TOUCHED_MODULUS - 1, 1000), 2, "wraps");
            assert_eq!(rec.cas(), cas);
            assert_eq!(rec.expires_at_ms(1000), expires_at_ms);
            assert_eq!(rec.has_expiry(), expires_at_ms.is_some());
            assert_eq!(rec.record_len(), item.record_len(1000));
        }
    }

    #[test]
    fn only_an_item_that_expires_pays_for_its_expiry() {
        let tenant = MAX_TENANTS as u16 - 1;
        let item = |expires_at_ms| NewItem { tenant, expires_at_ms, cas: MAX_CAS, ..plain(b"key") };
        let base = 1_000;
        assert_eq!(item(None).record_len(base), HEADER_LEN + 3);
        assert_eq!(item(Some(base + 1)).record_len(base), HEADER_LEN + EXPIRY_LEN + 3);
        let far = base + (1 << 40);
        assert_eq!(item(Some(far)).record_len(base), HEADER_LEN + EXPIRY_LEN + WIDE_EXPIRY_LEN + 3);
        assert_eq!(item(None).max_record_len(), HEADER_LEN + 3);
        assert_eq!(item(Some(base)).max_record_len(), item(Some(far)).record_len(base));
    }

    proptest::proptest! {
        /// Any item's record decodes to what was written, takes exactly `record_len` bytes
        /// (the bytes around it are untouched), and `max_record_len` bounds it.
        #[test]
        fn any_record_round_trips_in_exactly_its_length(
            key in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..300),
            flags in proptest::prelude::any::<u32>(),
            expiry in 0u8..3,
            delta in 0u64..(1 << 40),
            tenant in 0u16..MAX_TENANTS as u16,
            cas in 0..=MAX_CAS,
            state in 0u8..16,
            db in 0u8..MAX_DBS as u8,
            touched in 0u32..TOUCHED_MODULUS,
            freq in 0..=MAX_FREQ,
            kind in proptest::prelude::any::<u8>(),
            at in 0usize..64,
        ) {
            let base = 1_700_000_000_000u64;
            let expires_at_ms = match expiry {
                0 => None,
                1 => Some(base + delta % u64::from(EXPIRY_DELTA_MASK)),
                _ => Some(base + delta),
            };
            let item = NewItem {
                tenant,
                key: &key,
                flags,
                expires_at_ms,
                cas,
                access: 9,
                state,
                db,
                touched,
                freq,
                kind: Kind(kind),
            };
            let len = item.record_len(base);
            proptest::prop_assert!(len <= item.max_record_len());
            const SENTINEL: u8 = 0xA5;
            let mut seg = vec![SENTINEL; 1024];
            let value_offset = 1024 - 3;
            let p = seg.as_mut_ptr();
            // SAFETY: the record (at most 21 + 12 + 4 + 1 + 2 + 299 bytes from `at` < 64) and
            // the 3-byte value at the end lie inside `seg` and do not overlap.
            let rec = unsafe {
                write(p.add(at), p.add(value_offset), &item, value_offset, 3, &[b"val"], base);
                Record::at(p, at)
            };
            proptest::prop_assert_eq!(rec.key(), &key[..]);
            proptest::prop_assert_eq!(rec.flags(), flags);
            proptest::prop_assert_eq!(rec.expires_at_ms(base), expires_at_ms);
            proptest::prop_assert_eq!(rec.has_expiry(), expires_at_ms.is_some());
            proptest::prop_assert_eq!(rec.tenant(), tenant);
            proptest::prop_assert_eq!(rec.cas(), cas);
            proptest::prop_assert_eq!((rec.state(), rec.db(), rec.access()), (state, db, 9));
            proptest::prop_assert_eq!((rec.touched(), rec.freq()), (touched, freq));
            proptest::prop_assert_eq!(rec.kind(), Kind(kind));
            proptest::prop_assert_eq!(rec.value(), b"val");
            proptest::prop_assert_eq!(rec.record_len(), len);
            let outside = seg[..at].iter().chain(&seg[at + len..value_offset]);
            proptest::prop_assert!(outside.into_iter().all(|&b| b == SENTINEL));
        }
    }
}
