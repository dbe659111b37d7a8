//! `DUMP` and `RESTORE` in Redis's serialization: an RDB object (type 0, a string, in RDB's
//! string encoding; a collection in one of RDB's forms for it), the RDB version (10, as Redis
//! 7.0) in two little-endian bytes, and a CRC-64 (Jones, reflected; Redis's `crc64`) of all
//! that in eight little-endian bytes.
//!
//! Collections dump in RDB's plain forms (a length, then the strings; a sorted set's scores
//! as binary doubles); RESTORE also reads the compact encodings Redis writes for small
//! collections and for lists (listpacks, quicklists, ziplists, intsets: `types::encoded`).
//!
//! DUMP writes what Redis writes: a canonical 32-bit integer in RDB's integer encoding, a
//! string over 20 bytes LZF-compressed when that saves at least 4 bytes (Redis's liblzf
//! settings, ported in [`lzf_compress`]), any other string plain. RESTORE reads all three, so
//! a payload from redis-server restores here and one from here restores there.

use fridge_engine::{Condition, Expiry, Kind, Store, StoreOutcome};
use fridge_proto::number::{parse_redis_f64, parse_redis_i64};
use fridge_proto::resp::{Command, write_bulk, write_error, write_null, write_simple};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error};
use crate::session::{Ctx, Session};
use crate::types::hash::{Builder, Entry, Hash};
use crate::types::{HASH, LIST, SET, ZSET, encoded};

/// The RDB version a payload carries (Redis 7.0's).
pub(crate) const RDB_VERSION: u16 = 10;
const RDB_TYPE_STRING: u8 = 0;
const RDB_TYPE_LIST: u8 = 1;
const RDB_TYPE_SET: u8 = 2;
const RDB_TYPE_HASH: u8 = 4;
const RDB_TYPE_ZSET: u8 = 3;
const RDB_TYPE_ZSET_2: u8 = 5;
const RDB_TYPE_LIST_ZIPLIST: u8 = 10;
const RDB_TYPE_SET_INTSET: u8 = 11;
const RDB_TYPE_ZSET_ZIPLIST: u8 = 12;
const RDB_TYPE_HASH_ZIPLIST: u8 = 13;
const RDB_TYPE_LIST_QUICKLIST: u8 = 14;
const RDB_TYPE_HASH_LISTPACK: u8 = 16;
const RDB_TYPE_ZSET_LISTPACK: u8 = 17;
const RDB_TYPE_LIST_QUICKLIST_2: u8 = 18;
const ENC_INT8: u8 = 0xC0;
const ENC_INT16: u8 = 0xC1;
const ENC_INT32: u8 = 0xC2;
const ENC_LZF: u8 = 0xC3;

const BAD_PAYLOAD: &[u8] = b"ERR DUMP payload version or checksum are wrong";
const BAD_FORMAT: &[u8] = b"ERR Bad data format";
const NOT_A_STRING: &[u8] = b"ERR DUMP payload holds a type or an encoding fridge does not \
    restore (streams, modules and Redis 2's zipmap)";

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.get(i).unwrap_or_default()
}

/// Redis's `crc64` (Jones polynomial, reflected, no final xor).
pub(crate) fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
            *e = c;
        }
        t
    });
    data.iter().fold(0u64, |crc, &b| table[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8))
}

fn write_len(out: &mut Vec<u8>, len: usize) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if let Ok(l) = u32::try_from(len) {
        out.push(0x80);
        out.extend_from_slice(&l.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// The serialized form of a string value.
pub(crate) fn serialize(value: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(value.len() + 20);
    p.push(RDB_TYPE_STRING);
    write_string(&mut p, value);
    finish(p)
}

/// A hash's payload: RDB's plain hash (type 4: a length, then field and value strings), which
/// every Redis version restores; fields expired at `now_ms` are left out. A set's: RDB's
/// plain set (type 2: a length, then member strings); a list's: RDB's plain list (type 1,
/// the same form, which Redis 7.0 still loads).
fn serialize_packed(kind: Kind, value: &[u8], now_ms: u64) -> Vec<u8> {
    let h = Hash::new(value);
    let set = kind != HASH;
    let mut p = Vec::with_capacity(value.len() + 20);
    p.push(match kind {
        HASH => RDB_TYPE_HASH,
        LIST => RDB_TYPE_LIST,
        _ => RDB_TYPE_SET,
    });
    write_len(&mut p, h.live(now_ms).count());
    for e in h.live(now_ms) {
        write_string(&mut p, e.field);
        if !set {
            write_string(&mut p, e.value);
        }
    }
    finish(p)
}

/// A sorted set's payload: RDB's `ZSET_2` (type 5: a length, then each member as a string and
/// its score as an 8-byte little-endian float), which Redis writes for a skiplist.
fn serialize_zset(value: &[u8]) -> Vec<u8> {
    let h = Hash::new(value);
    let mut p = Vec::with_capacity(value.len() + 20);
    p.push(RDB_TYPE_ZSET_2);
    write_len(&mut p, h.len());
    for e in h.iter() {
        write_string(&mut p, e.field);
        p.extend_from_slice(&super::zsets::score_of(&e).to_le_bytes());
    }
    finish(p)
}

/// An RDB `ZSET_2` (type 5: a length, then each member as a string and its score as an
/// 8-byte little-endian float) or `ZSET` (type 3, `binary` false: the score as RDB's text
/// double, a length byte then `%.17g`'s text, or 253/254/255 for NaN/+inf/−inf).
fn read_zset(p: &[u8], binary: bool, budget: &mut Budget) -> Option<Vec<(Vec<u8>, f64)>> {
    let (Ok(n), mut at) = read_len(p)? else { return None };
    let mut members = Vec::new();
    for _ in 0..n {
        let (m, used) = read_string(p.get(at..)?, budget)?;
        at += used;
        let score = if binary {
            at += 8;
            f64::from_le_bytes(p.get(at - 8..at)?.try_into().ok()?)
        } else {
            let len = usize::from(*p.get(at)?);
            at += 1;
            match len {
                253 => f64::NAN,
                254 => f64::INFINITY,
                255 => f64::NEG_INFINITY,
                _ => {
                    at += len;
                    parse_redis_f64(p.get(at - len..at)?)?
                }
            }
        };
        members.push((m, score));
    }
    (at == p.len()).then_some(members)
}

/// A sorted set's members and scores in packed form, in (score, member) order; members must
/// be unique, scores not NaN, and the set not empty.
fn pack_zset(mut members: Vec<(Vec<u8>, f64)>) -> Option<Vec<u8>> {
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    if members.is_empty()
        || members.iter().any(|(_, s)| s.is_nan())
        || !members.iter().all(|(m, _)| seen.insert(&m[..]))
    {
        return None;
    }
    members.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut buf = Vec::new();
    let mut b = Builder::new(&mut buf, false);
    for (m, score) in &members {
        b.push(Entry {
            field: m,
            value: super::zsets::PackedScore::of(*score + 0.0).bytes(),
            deadline: 0,
        });
    }
    if b.finish() as usize >= crate::types::index::MIN_ENTRIES {
        crate::types::hash::append_index(&mut buf);
    }
    Some(buf)
}

/// Appends the RDB version and the CRC to a payload's object.
fn finish(mut p: Vec<u8>) -> Vec<u8> {
    p.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// An RDB string as Redis's `rdbSaveRawString` writes it.
fn write_string(p: &mut Vec<u8>, value: &[u8]) {
    // Redis's `rdbTryIntegerEncoding`: a canonical integer that fits 32 bits.
    match parse_redis_i64(value).filter(|_| value.len() <= 11) {
        Some(n) if i8::try_from(n).is_ok() => p.extend_from_slice(&[ENC_INT8, n as i8 as u8]),
        Some(n) if i16::try_from(n).is_ok() => {
            p.push(ENC_INT16);
            p.extend_from_slice(&(n as i16).to_le_bytes());
        }
        Some(n) if i32::try_from(n).is_ok() => {
            p.push(ENC_INT32);
            p.extend_from_slice(&(n as i32).to_le_bytes());
        }
        _ => match (value.len() > 20).then(|| lzf_compress(value, value.len() - 4)).flatten() {
            // Redis's `rdbSaveLzfStringObject`: compressed when that saves at least 4 bytes.
            Some(c) => {
                p.push(ENC_LZF);
                write_len(p, c.len());
                write_len(p, value.len());
                p.extend_from_slice(&c);
            }
            None => {
                write_len(p, value.len());
                p.extend_from_slice(value);
            }
        },
    }
}

/// Why a payload does not restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PayloadError {
    /// Too short, a newer RDB version, or a CRC that does not match.
    VersionOrChecksum,
    /// A well-formed payload of a type fridge does not store.
    NotAString,
    /// Bytes that do not parse.
    BadFormat,
    /// Strings that, read, would take more than the collection could once packed (see
    /// [`Budget`]).
    TooLarge,
}

/// The string value a payload holds.
pub(crate) fn deserialize(p: &[u8], limit: usize) -> Result<(Kind, Vec<u8>), PayloadError> {
    let mut budget = Budget { left: limit, exceeded: false };
    let r = deserialize_within(p, &mut budget);
    if budget.exceeded { Err(PayloadError::TooLarge) } else { r }
}

/// How many bytes a payload's strings may still take once read (LZF-compressed ones
/// expanded), so a small payload cannot make RESTORE allocate without bound: RDB's forms of
/// a collection (listpacks, ziplists, intsets, plain strings) never take more than about
/// twice its packed form here, which must fit `max_item_size`.
pub(crate) struct Budget {
    left: usize,
    exceeded: bool,
}

impl Budget {
    /// Takes `n` bytes; `false` (and `exceeded` set) when fewer are left.
    fn take(&mut self, n: usize) -> bool {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.exceeded = true;
                false
            }
        }
    }
}

fn deserialize_within(p: &[u8], budget: &mut Budget) -> Result<(Kind, Vec<u8>), PayloadError> {
    if p.len() < 10 {
        return Err(PayloadError::VersionOrChecksum);
    }
    let body = &p[..p.len() - 10];
    let version = u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]);
    let crc = u64::from_le_bytes(p[p.len() - 8..].try_into().unwrap_or_default());
    if version > RDB_VERSION || crc64(&p[..p.len() - 8]) != crc {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (&ty, rest) = body.split_first().ok_or(PayloadError::BadFormat)?;
    let bad = PayloadError::BadFormat;
    // The collection types: their elements in order (a hash's and a sorted set's as field,
    // value / member, score pairs), then packed.
    let (kind, elements) = match ty {
        RDB_TYPE_STRING => {
            let (value, used) = read_string(rest, budget).ok_or(bad)?;
            return if used == rest.len() { Ok((Kind::STRING, value)) } else { Err(bad) };
        }
        RDB_TYPE_ZSET | RDB_TYPE_ZSET_2 => {
            let members = read_zset(rest, ty == RDB_TYPE_ZSET_2, budget).ok_or(bad)?;
            return Ok((ZSET, pack_zset(members).ok_or(bad)?));
        }
        RDB_TYPE_HASH => (HASH, read_plain(rest, 2, budget)),
        RDB_TYPE_SET => (SET, read_plain(rest, 1, budget)),
        RDB_TYPE_LIST => (LIST, read_plain(rest, 1, budget)),
        RDB_TYPE_HASH_LISTPACK => (HASH, read_blob(rest, encoded::listpack, budget)),
        RDB_TYPE_HASH_ZIPLIST => (HASH, read_blob(rest, encoded::ziplist, budget)),
        RDB_TYPE_SET_INTSET => (SET, read_blob(rest, encoded::intset, budget)),
        RDB_TYPE_ZSET_LISTPACK => (ZSET, read_blob(rest, encoded::listpack, budget)),
        RDB_TYPE_ZSET_ZIPLIST => (ZSET, read_blob(rest, encoded::ziplist, budget)),
        RDB_TYPE_LIST_ZIPLIST => (LIST, read_blob(rest, encoded::ziplist, budget)),
        RDB_TYPE_LIST_QUICKLIST => (LIST, read_quicklist(rest, false, budget)),
        RDB_TYPE_LIST_QUICKLIST_2 => (LIST, read_quicklist(rest, true, budget)),
        // Redis's RDB object types run 0..=21 (7.2); others are bad data.
        ty if ty <= 21 => return Err(PayloadError::NotAString),
        _ => return Err(bad),
    };
    pack(kind, elements.ok_or(bad)?).ok_or(bad)
}

/// A collection's elements in packed form: a hash's as field, value pairs with unique fields;
/// a set's unique members; a list's elements; a sorted set's member, score pairs (scores as
/// text, Redis's listpack form). Empty collections are bad data, as Redis finds them.
fn pack(kind: Kind, elements: Vec<Vec<u8>>) -> Option<(Kind, Vec<u8>)> {
    if kind == ZSET {
        if elements.len() % 2 != 0 {
            return None;
        }
        let mut members = Vec::with_capacity(elements.len() / 2);
        let mut it = elements.into_iter();
        while let (Some(m), Some(score)) = (it.next(), it.next()) {
            members.push((m, parse_redis_f64(&score)?));
        }
        return Some((ZSET, pack_zset(members)?));
    }
    let step = if kind == HASH { 2 } else { 1 };
    if elements.is_empty() || elements.len() % step != 0 {
        return None;
    }
    if kind != LIST {
        let mut seen = std::collections::HashSet::with_capacity(elements.len() / step);
        if !elements.iter().step_by(step).all(|f| seen.insert(&f[..])) {
            return None;
        }
    }
    let mut buf = Vec::new();
    let mut b = Builder::new(&mut buf, false);
    for e in elements.chunks(step) {
        b.push(Entry { field: &e[0], value: e.get(1).map_or(&[][..], |v| v), deadline: 0 });
    }
    if kind != LIST {
        b.finish_indexed();
    } else {
        b.finish();
    }
    Some((kind, buf))
}

/// An RDB plain hash (type 4), set (2) or list (1): a length, then that many groups of
/// `per` strings (a hash's field and value; a member or an element).
fn read_plain(p: &[u8], per: usize, budget: &mut Budget) -> Option<Vec<Vec<u8>>> {
    let (Ok(n), mut at) = read_len(p)? else { return None };
    let mut elements = Vec::new();
    for _ in 0..n.checked_mul(per)? {
        let (e, used) = read_string(p.get(at..)?, budget)?;
        at += used;
        elements.push(e);
    }
    (at == p.len()).then_some(elements)
}

/// One RDB string holding a listpack, a ziplist or an intset, read by `decode`.
fn read_blob(
    p: &[u8],
    decode: fn(&[u8], &mut Vec<Vec<u8>>) -> Option<()>,
    budget: &mut Budget,
) -> Option<Vec<Vec<u8>>> {
    let (blob, used) = read_string(p, budget)?;
    let mut elements = Vec::new();
    decode(&blob, &mut elements)?;
    (used == p.len()).then_some(elements)
}

/// A quicklist: a node count, then each node as an RDB string holding a ziplist (type 14) or,
/// in `QUICKLIST_2` (type 18, `v2`), a container tag first (1: the node is one plain element,
/// 2: a listpack). Empty nodes are skipped, as Redis skips them.
fn read_quicklist(p: &[u8], v2: bool, budget: &mut Budget) -> Option<Vec<Vec<u8>>> {
    let (Ok(n), mut at) = read_len(p)? else { return None };
    let mut elements = Vec::new();
    for _ in 0..n {
        let mut plain = false;
        if v2 {
            let (Ok(container @ 1..=2), used) = read_len(p.get(at..)?)? else { return None };
            plain = container == 1;
            at += used;
        }
        let (node, used) = read_string(p.get(at..)?, budget)?;
        at += used;
        match (plain, v2) {
            (true, _) => elements.push(node),
            (false, true) => encoded::listpack(&node, &mut elements)?,
            (false, false) => encoded::ziplist(&node, &mut elements)?,
        }
    }
    (at == p.len()).then_some(elements)
}

/// An RDB length: `(len, bytes used)`, or an encoding byte's low bits as `Err`.
fn read_len(p: &[u8]) -> Option<(Result<usize, u8>, usize)> {
    let &b = p.first()?;
    Some(match b >> 6 {
        0 => (Ok(usize::from(b & 0x3f)), 1),
        1 => (Ok(usize::from(b & 0x3f) << 8 | usize::from(*p.get(1)?)), 2),
        3 => (Err(b & 0x3f), 1),
        _ if b == 0x80 => (Ok(u32::from_be_bytes(p.get(1..5)?.try_into().ok()?) as usize), 5),
        _ if b == 0x81 => {
            (Ok(usize::try_from(u64::from_be_bytes(p.get(1..9)?.try_into().ok()?)).ok()?), 9)
        }
        _ => return None,
    })
}

/// An RDB string (plain, integer or LZF): `(bytes, bytes used)`.
fn read_string(p: &[u8], budget: &mut Budget) -> Option<(Vec<u8>, usize)> {
    let (len, n) = read_len(p)?;
    let rest = &p[n..];
    match len {
        Ok(len) => {
            let s = rest.get(..len)?;
            budget.take(len).then(|| (s.to_vec(), n + len))
        }
        Err(0) => Some((i64::from(*rest.first()? as i8).to_string().into_bytes(), n + 1)),
        Err(1) => {
            let v = i16::from_le_bytes(rest.get(..2)?.try_into().ok()?);
            Some((v.to_string().into_bytes(), n + 2))
        }
        Err(2) => {
            let v = i32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
            Some((v.to_string().into_bytes(), n + 4))
        }
        Err(3) => {
            let (clen, a) = read_len(rest)?;
            let (ulen, b) = read_len(&rest[a..])?;
            let (clen, ulen) = (clen.ok()?, ulen.ok()?);
            let data = rest.get(a + b..a + b + clen)?;
            if !budget.take(ulen) {
                return None;
            }
            Some((lzf_decompress(data, ulen)?, n + a + b + clen))
        }
        Err(_) => None,
    }
}

/// LZF decompression (Redis's `lzf_decompress`): exactly `len` bytes out, or `None`.
pub(crate) fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    // No input byte expands to more than 88 (a 3-byte back reference copies at most 264):
    // a claimed length past that is bad data, not an allocation.
    if len / 88 > input.len() {
        return None;
    }
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            out.extend_from_slice(input.get(i..i + run)?);
            i += run;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

/// LZF compression as Redis's `lzf_compress` (liblzf 3.6 with Redis's settings: `HLOG` 16,
/// `VERY_FAST`, offsets in the hash table), into at most `out_len` bytes; `None` when the
/// output would not fit (Redis then stores the string plain). The table starts zeroed (Redis's
/// starts with whatever its stack held, which can only add matches; see `docs/protocol.md`).
pub(crate) fn lzf_compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    const HSIZE: usize = 1 << 16;
    const MAX_LIT: usize = 1 << 5;
    const MAX_OFF: usize = 1 << 13;
    const MAX_REF: usize = (1 << 8) + (1 << 3);
    let in_len = input.len();
    if in_len == 0 || out_len == 0 {
        return None;
    }
    let frst = |p: usize| (u32::from(input[p]) << 8) | u32::from(input[p + 1]);
    let next = |v: u32, p: usize| (v << 8) | u32::from(input[p + 2]);
    let idx = |h: u32| ((h >> 8).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1);
    let mut htab = vec![0u32; HSIZE];
    // (Redis allocates one byte more than it lets the compressor fill; the run headers that
    // start a literal run may sit just past the end until the run is closed.)
    let mut out = vec![0u8; out_len + 4];
    let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
    let mut hval = if in_len >= 2 { frst(0) } else { 0 };
    while in_len >= 3 && ip < in_len - 2 {
        hval = next(hval, ip);
        let slot = idx(hval);
        let r = htab[slot] as usize;
        htab[slot] = ip as u32;
        let off = ip.wrapping_sub(r).wrapping_sub(1);
        if r < ip
            && off < MAX_OFF
            && r > 0
            && input[r + 2] == input[ip + 2]
            && input[r] == input[ip]
            && input[r + 1] == input[ip + 1]
        {
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - usize::from(lit == 0) + 3 + 1 >= out_len {
                return None;
            }
            out[op - lit - 1] = lit.wrapping_sub(1) as u8;
            op -= usize::from(lit == 0);
            'm: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[r + len] != input[ip + len] {
                            break 'm;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1;
            ip += len + 1;
            if ip >= in_len - 2 {
                break;
            }
            ip -= 2;
            hval = frst(ip);
            hval = next(hval, ip);
            htab[idx(hval)] = ip as u32;
            ip += 1;
            hval = next(hval, ip);
            htab[idx(hval)] = ip as u32;
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = lit.wrapping_sub(1) as u8;
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

pub(super) fn dump(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let now = ctx.engine.now_ms();
    let payload = ctx.engine.get_any(s.tenant, arg(cmd, 1), |i| match i.kind {
        HASH | SET | LIST => serialize_packed(i.kind, i.value, now),
        ZSET => serialize_zset(i.value),
        _ => serialize(i.value),
    });
    match payload {
        Some(p) => write_bulk(out, &p),
        None => write_null(out, s.version),
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`. IDLETIME and FREQ are
/// checked as Redis checks them but not applied: the engine stamps a stored item as just
/// written and learns its frequency from reads.
pub(super) fn restore(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (mut replace, mut absttl, mut idle, mut freq) = (false, false, false, false);
    let mut j = 4;
    while j < cmd.len() {
        let o = arg(cmd, j);
        let more = cmd.len() - j - 1;
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if o.eq_ignore_ascii_case(b"idletime") && more >= 1 && !freq {
            match parse_redis_i64(arg(cmd, j + 1)) {
                None => return write_error(out, NOT_INTEGER),
                Some(v) if v < 0 => {
                    return write_error(out, b"ERR Invalid IDLETIME value, must be >= 0");
                }
                Some(_) => idle = true,
            }
            j += 1;
        } else if o.eq_ignore_ascii_case(b"freq") && more >= 1 && !idle {
            match parse_redis_i64(arg(cmd, j + 1)) {
                None => return write_error(out, NOT_INTEGER),
                Some(v) if !(0..=255).contains(&v) => {
                    return write_error(out, b"ERR Invalid FREQ value, must be >= 0 and <= 255");
                }
                Some(_) => freq = true,
            }
            j += 1;
        } else {
            return write_error(out, SYNTAX);
        }
        j += 1;
    }
    let (t, key) = (s.tenant, arg(cmd, 1));
    if !replace && ctx.engine.contains(t, key) {
        return write_error(out, b"BUSYKEY Target key name already exists.");
    }
    let ttl = match parse_redis_i64(arg(cmd, 2)) {
        None => return write_error(out, NOT_INTEGER),
        Some(t) if t < 0 => return write_error(out, b"ERR Invalid TTL value, must be >= 0"),
        Some(t) => t,
    };
    // Twice the largest item, and the request's slack: what RDB's forms of a collection
    // that fits can take (see `Budget`).
    let limit = ctx.shared.config.max_item_size.bytes().saturating_mul(2) + (64 << 10);
    let (kind, value) = match deserialize(arg(cmd, 3), limit) {
        Ok(v) => v,
        Err(PayloadError::VersionOrChecksum) => return write_error(out, BAD_PAYLOAD),
        Err(PayloadError::BadFormat) => return write_error(out, BAD_FORMAT),
        Err(PayloadError::NotAString) => return write_error(out, NOT_A_STRING),
        Err(PayloadError::TooLarge) => {
            return engine_error(out, fridge_engine::EngineError::TooLarge);
        }
    };
    let now = crate::shared::precise_now_ms(ctx.shared.now_ms()) as i64;
    let expiry = match ttl {
        0 => Expiry::Never,
        t if absttl => Expiry::At(t as u64),
        t => Expiry::At(t.saturating_add(now) as u64),
    };
    if matches!(expiry, Expiry::At(at) if at as i64 <= now) {
        // Already expired: Redis replies OK and leaves no key (deleting it under REPLACE).
        if replace {
            ctx.engine.delete(t, key);
        }
        return write_simple(out, b"OK");
    }
    if key.len() > ctx.shared.config.max_resp_key_len {
        return engine_error(out, fridge_engine::EngineError::KeyTooLong);
    }
    if value.len() > ctx.shared.config.max_item_size.bytes() {
        return engine_error(out, fridge_engine::EngineError::TooLarge);
    }
    let condition = if replace { Condition::Always } else { Condition::IfAbsent };
    let r = ctx.engine.store(Store {
        tenant: t,
        key,
        value: &value,
        flags: 0,
        expiry,
        condition,
        cas: None,
        state: 0,
        kind,
    });
    match r {
        Ok(StoreOutcome::Stored) => write_simple(out, b"OK"),
        Ok(_) => write_error(out, b"BUSYKEY Target key name already exists."),
        Err(e) => engine_error(out, e),
    }
}

#[cfg(test)]
mod tests {
    use super::{PayloadError, crc64, lzf_decompress, serialize};

    /// A payload read with no limit but the payload's own.
    fn deserialize(p: &[u8]) -> Result<(fridge_engine::Kind, Vec<u8>), PayloadError> {
        super::deserialize(p, usize::MAX)
    }

    #[test]
    fn a_payload_cannot_expand_past_its_budget() {
        // 20,000 bytes of 'a' compress to a few hundred: within 1,000 bytes of budget they are
        // refused as too large before any is decompressed, and a list of such strings too.
        let p = serialize(&[b'a'; 20_000]);
        assert!(p.len() < 1_000);
        assert_eq!(super::deserialize(&p, 1_000), Err(PayloadError::TooLarge));
        assert!(super::deserialize(&p, 20_000).is_ok());
        let one = &p[1..p.len() - 10];
        let mut body = vec![1u8, 3];
        for _ in 0..3 {
            body.extend_from_slice(one);
        }
        let list = super::finish(body);
        assert_eq!(super::deserialize(&list, 50_000), Err(PayloadError::TooLarge));
        assert!(super::deserialize(&list, 60_000).is_ok());
    }

    #[test]
    fn crc64_is_redis_s() {
        // Redis's own check value (crc64.c's test).
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn payloads_match_redis_server_s() {
        // `DUMP` of `SET k hello` and `SET k 1` on redis-server 7.0.15.
        assert_eq!(serialize(b"hello"), b"\x00\x05hello\x0a\x00\x63\x72\xdf\x76\x65\x34\x20\x0a");
        assert_eq!(serialize(b"1"), b"\x00\xc0\x01\x0a\x00\x26\x78\xe7\xb6\xd1\x01\x11\xfc");
        for v in [&b""[..], b"x", b"-129", b"70000", b"12345678901", b"007", &[7u8; 20000]] {
            assert_eq!(deserialize(&serialize(v)).map(|(_, v)| v).as_deref(), Ok(v), "{v:?}");
        }
        let mut bad = serialize(b"hello");
        bad[3] ^= 1;
        assert_eq!(deserialize(&bad), Err(PayloadError::VersionOrChecksum));
    }

    #[test]
    fn arbitrary_payloads_with_a_good_checksum_never_panic() {
        // RESTORE takes a client's bytes: with a valid footer, any body parses or is refused.
        use super::finish;
        let mut next = crate::types::xorshift(0xfeed_beef_0bad_cafeu64);
        for _ in 0..20_000 {
            let ty = [0u8, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 16, 17, 18][(next() % 14) as usize];
            let mut body = vec![ty];
            body.extend((0..next() % 48).map(|_| next() as u8));
            let _ = deserialize(&finish(body));
        }
        // Redis's own payloads, one byte changed (the checksum recomputed).
        for _ in 0..20_000 {
            let p = REDIS_PAYLOADS[(next() % 4) as usize];
            let mut body = p[..p.len() - 10].to_vec();
            let at = (next() as usize) % body.len();
            body[at] = next() as u8;
            let _ = deserialize(&finish(body));
        }
    }

    #[test]
    fn a_hash_round_trips_in_rdb_s_plain_form_and_bad_hashes_do_not_restore() {
        use super::{Builder, Entry, HASH, Hash, finish, serialize_packed};
        let mut packed = Vec::new();
        let mut b = Builder::new(&mut packed, true);
        b.push(Entry { field: b"a", value: b"1", deadline: 0 });
        b.push(Entry { field: b"gone", value: b"x", deadline: 5 });
        b.push(Entry { field: b"long", value: &[b'z'; 100], deadline: 0 });
        b.finish();
        let p = serialize_packed(HASH, &packed, 10);
        assert_eq!(&p[..4], b"\x04\x02\x01a", "type 4, two live fields, the first field");
        let (kind, back) = deserialize(&p).unwrap();
        assert_eq!(kind, HASH);
        let fields: Vec<_> = Hash::new(&back).iter().map(|e| (e.field, e.value.len())).collect();
        assert_eq!(fields, vec![(&b"a"[..], 1), (&b"long"[..], 100)]);
        // A field twice, a length past the end, an empty hash: bad data.
        for body in [&b"\x04\x02\x01a\x01b\x01a\x01c"[..], b"\x04\x05\x01a\x01b", b"\x04\x00"] {
            assert_eq!(deserialize(&finish(body.to_vec())), Err(PayloadError::BadFormat));
        }
    }

    /// `DUMP` on redis-server 7.0.15 of `HSET h a 1 b -300 name alice big 70000` (a listpack,
    /// type 16), `RPUSH l a 12 300 hello` (a quicklist of one listpack node, type 18),
    /// `SADD s 1 -1 2` (an intset, type 11) and `ZADD z 1.5 a 2 b -3 c` (a listpack, type 17).
    const REDIS_PAYLOADS: [&[u8]; 4] = [
        b"\x10))\x00\x00\x00\x08\x00\x81a\x02\x01\x01\x81b\x02\xde\xd4\x02\x84name\x05\x85alice\
          \x06\x83big\x04\xf2p\x11\x01\x04\xff\n\x00 \x08\xb4\xa3\xaa\xaf\xed!",
        b"\x12\x01\x02\x16\x16\x00\x00\x00\x04\x00\x81a\x02\x0c\x01\xc1,\x02\x85hello\x06\xff\n\x00\
          \x11\x81B\xe1XQ\x83\xf1",
        b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\xff\xff\x01\x00\x02\x00\n\x00Y?PK\x97\x07\xf8\x0f",
        b"\x11\x1a\x1a\x00\x00\x00\x06\x00\x81c\x02\xdf\xfd\x02\x81a\x02\x831.5\x04\x81b\x02\x02\x01\
          \xff\n\x00\x88\xc4\xc00\xf0\xae\x82v",
    ];

    #[test]
    fn redis_s_compact_encodings_restore() {
        use super::{HASH, Hash, LIST, SET, ZSET};
        use crate::resp::zsets::score_of;
        let read = |p: &[u8]| {
            let (kind, v) = deserialize(p).unwrap();
            let h = Hash::new(&v);
            let items: Vec<String> = h
                .iter()
                .map(|e| match kind {
                    HASH => format!(
                        "{}={}",
                        String::from_utf8_lossy(e.field),
                        String::from_utf8_lossy(e.value)
                    ),
                    ZSET => format!("{}:{}", String::from_utf8_lossy(e.field), score_of(&e)),
                    _ => String::from_utf8_lossy(e.field).into_owned(),
                })
                .collect();
            (kind, items.join(" "))
        };
        assert_eq!(read(REDIS_PAYLOADS[0]), (HASH, "a=1 b=-300 name=alice big=70000".into()));
        assert_eq!(read(REDIS_PAYLOADS[1]), (LIST, "a 12 300 hello".into()));
        assert_eq!(read(REDIS_PAYLOADS[2]), (SET, "-1 1 2".into()));
        assert_eq!(read(REDIS_PAYLOADS[3]), (ZSET, "c:-3 a:1.5 b:2".into()));
        // A quicklist with a plain node (one element, container 1) before the listpack node.
        let lp = &REDIS_PAYLOADS[1][3..REDIS_PAYLOADS[1].len() - 10];
        let body = [&b"\x12\x02\x01\x05hello\x02"[..], lp].concat();
        assert_eq!(read(&super::finish(body)), (LIST, "hello a 12 300 hello".into()));
        // A container tag other than 1 or 2: bad data.
        let body = [&b"\x12\x01\x03"[..], lp].concat();
        assert_eq!(deserialize(&super::finish(body)), Err(PayloadError::BadFormat));
    }

    #[test]
    fn lzf_round_trips_and_gives_up_when_it_saves_too_little() {
        use super::lzf_compress;
        for v in [&b"abcabcabcabcabcabcabcabcabc"[..], &[b'a'; 5000], &b"x y z".repeat(999)] {
            let c = lzf_compress(v, v.len() - 4).unwrap();
            assert!(c.len() <= v.len() - 4);
            assert_eq!(lzf_decompress(&c, v.len()).as_deref(), Some(v));
            assert_eq!(deserialize(&serialize(v)).map(|(_, v)| v).as_deref(), Ok(v));
        }
        let noise: Vec<u8> = (0..200u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert!(lzf_compress(&noise, noise.len() - 4).is_none());
        // `DUMP` of `SET k aaaaaaaaaaaaaaaaaaaaaaaaa` (25 bytes) on redis-server 7.0.15.
        let p = serialize(&[b'a'; 25]);
        assert_eq!(&p[..p.len() - 10], b"\x00\xc3\x09\x19\x01aa\xe0\x0c\x00\x01aa");
    }

    #[test]
    fn lzf_back_references_expand() {
        // "aaaaaaaaaa": literal 'a', then a back reference of length 9 at distance 1.
        assert_eq!(lzf_decompress(b"\x00a\xe0\x00\x00", 10).as_deref(), Some(&b"aaaaaaaaaa"[..]));
        assert_eq!(lzf_decompress(b"\x00a\xe0\x00\x00", 9), None);
    }
}
