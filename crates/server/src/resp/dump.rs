//! `DUMP` and `RESTORE` in Redis's serialization: an RDB object (type 0, a string, in RDB's
//! string encoding; type 4, a hash: its length, then field and value strings), the RDB version (10, as Redis 7.0) in two little-endian bytes, and a
//! CRC-64 (Jones, reflected; Redis's `crc64`) of all that in eight little-endian bytes.
//!
//! DUMP writes what Redis writes: a canonical 32-bit integer in RDB's integer encoding, a
//! string over 20 bytes LZF-compressed when that saves at least 4 bytes (Redis's liblzf
//! settings, ported in [`lzf_compress`]), any other string plain. RESTORE reads all three, so
//! a payload from redis-server restores here and one from here restores there.

use fridge_engine::{Condition, Expiry, Kind, Store, StoreOutcome};
use fridge_proto::number::parse_redis_i64;
use fridge_proto::resp::{Command, write_bulk, write_error, write_null, write_simple};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error};
use crate::session::{Ctx, Session};
use crate::types::hash::{Builder, Entry, Hash};
use crate::types::{HASH, LIST, SET, ZSET};

/// The RDB version a payload carries (Redis 7.0's).
pub(crate) const RDB_VERSION: u16 = 10;
const RDB_TYPE_STRING: u8 = 0;
const RDB_TYPE_LIST: u8 = 1;
const RDB_TYPE_SET: u8 = 2;
const RDB_TYPE_HASH: u8 = 4;
const RDB_TYPE_ZSET_2: u8 = 5;
const ENC_INT8: u8 = 0xC0;
const ENC_INT16: u8 = 0xC1;
const ENC_INT32: u8 = 0xC2;
const ENC_LZF: u8 = 0xC3;

const BAD_PAYLOAD: &[u8] = b"ERR DUMP payload version or checksum are wrong";
const BAD_FORMAT: &[u8] = b"ERR Bad data format";
const NOT_A_STRING: &[u8] = b"ERR DUMP payload holds a type or an encoding fridge does not \
    restore (strings, and hashes, sets, lists and sorted sets in RDB's plain form)";

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

/// An RDB `ZSET_2` (type 5) in packed form, in (score, member) order; members must be unique
/// and scores not NaN.
fn read_zset(p: &[u8]) -> Option<Vec<u8>> {
    let (Ok(n), mut at) = read_len(p)? else { return None };
    let mut members: Vec<(Vec<u8>, f64)> = Vec::new();
    for _ in 0..n {
        let (m, used) = read_string(p.get(at..)?)?;
        at += used;
        let score = f64::from_le_bytes(p.get(at..at + 8)?.try_into().ok()?);
        at += 8;
        if score.is_nan() {
            return None;
        }
        members.push((m, score));
    }
    let mut seen = std::collections::HashSet::with_capacity(n);
    if at != p.len() || n == 0 || !members.iter().all(|(m, _)| seen.insert(m.clone())) {
        return None;
    }
    members.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut buf = Vec::with_capacity(p.len());
    let mut b = Builder::new(&mut buf, false);
    for (m, score) in &members {
        b.push(Entry {
            field: m,
            value: super::zsets::PackedScore::of(*score).bytes(),
            deadline: 0,
        });
    }
    b.finish();
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
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PayloadError {
    /// Too short, a newer RDB version, or a CRC that does not match.
    VersionOrChecksum,
    /// A well-formed payload of a type fridge does not store.
    NotAString,
    /// Bytes that do not parse.
    BadFormat,
}

/// The string value a payload holds.
pub(crate) fn deserialize(p: &[u8]) -> Result<(Kind, Vec<u8>), PayloadError> {
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
    match ty {
        RDB_TYPE_STRING => {
            let (value, used) = read_string(rest).ok_or(PayloadError::BadFormat)?;
            if used != rest.len() {
                return Err(PayloadError::BadFormat);
            }
            Ok((Kind::STRING, value))
        }
        RDB_TYPE_HASH => Ok((HASH, read_packed(rest, true, true).ok_or(PayloadError::BadFormat)?)),
        RDB_TYPE_SET => Ok((SET, read_packed(rest, false, true).ok_or(PayloadError::BadFormat)?)),
        RDB_TYPE_ZSET_2 => Ok((ZSET, read_zset(rest).ok_or(PayloadError::BadFormat)?)),
        RDB_TYPE_LIST => {
            Ok((LIST, read_packed(rest, false, false).ok_or(PayloadError::BadFormat)?))
        }
        // Redis's RDB object types run 0..=21 (7.0); others are bad data.
        ty if ty <= 21 => Err(PayloadError::NotAString),
        _ => Err(PayloadError::BadFormat),
    }
}

/// An RDB plain hash (type 4: field and value strings), set (type 2, `pairs` false: member
/// strings) or list (type 1, as a set's, `unique` false) in packed form; a hash's fields and a
/// set's members must be unique (a payload naming one twice is bad data, as Redis finds it).
fn read_packed(p: &[u8], pairs: bool, unique: bool) -> Option<Vec<u8>> {
    let (Ok(n), mut at) = read_len(p)? else { return None };
    let mut fields = Vec::new();
    for _ in 0..n {
        let (field, used) = read_string(p.get(at..)?)?;
        at += used;
        let value = if pairs {
            let (value, used) = read_string(p.get(at..)?)?;
            at += used;
            value
        } else {
            Vec::new()
        };
        fields.push((field, value));
    }
    if at != p.len() || n == 0 {
        return None;
    }
    let mut seen = std::collections::HashSet::with_capacity(n);
    if unique && !fields.iter().all(|(f, _)| seen.insert(&f[..])) {
        return None;
    }
    let mut buf = Vec::with_capacity(p.len());
    let mut b = Builder::new(&mut buf, false);
    for (field, value) in &fields {
        b.push(Entry { field, value, deadline: 0 });
    }
    b.finish();
    Some(buf)
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
fn read_string(p: &[u8]) -> Option<(Vec<u8>, usize)> {
    let (len, n) = read_len(p)?;
    let rest = &p[n..];
    match len {
        Ok(len) => Some((rest.get(..len)?.to_vec(), n + len)),
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
            Some((lzf_decompress(data, ulen)?, n + a + b + clen))
        }
        Err(_) => None,
    }
}

/// LZF decompression (Redis's `lzf_decompress`): exactly `len` bytes out, or `None`.
pub(crate) fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
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
    let (kind, value) = match deserialize(arg(cmd, 3)) {
        Ok(v) => v,
        Err(PayloadError::VersionOrChecksum) => return write_error(out, BAD_PAYLOAD),
        Err(PayloadError::BadFormat) => return write_error(out, BAD_FORMAT),
        Err(PayloadError::NotAString) => return write_error(out, NOT_A_STRING),
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
    use super::{PayloadError, crc64, deserialize, lzf_decompress, serialize};

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
        let mut x = 0xfeed_beef_0bad_cafeu64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let ty = [0u8, 1, 2, 4, 5][(next() % 5) as usize];
            let mut body = vec![ty];
            body.extend((0..next() % 48).map(|_| next() as u8));
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
