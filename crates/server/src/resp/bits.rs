//! Bit commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
//! BITFIELD_RO, with Redis 7.0's arithmetic and error strings. Writes are one engine update
//! each (read, change, publish only over the item read), so they keep the key's TTL.

use fridge_engine::{EngineError, Kind, Update};
use fridge_proto::resp::{Command, write_array_header, write_error, write_integer, write_null};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg};
use crate::session::{Ctx, Session};

const BAD_OFFSET: &[u8] = b"ERR bit offset is not an integer or out of range";
const BAD_BIT: &[u8] = b"ERR bit is not an integer or out of range";
const BAD_TYPE: &[u8] = b"ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is \
    not supported but i64 is.";
/// Redis's `proto-max-bulk-len` (512 MB): offsets at or past it are refused as Redis refuses
/// them; below it, a value larger than fridge's item limit is refused when written.
const PROTO_MAX_BULK_LEN: i64 = 512 * 1024 * 1024;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.get(i).unwrap_or_default()
}

/// Redis's `getBitOffsetFromArgument`: a bit offset, or `#n` (times `bits`) for BITFIELD.
fn bit_offset(a: &[u8], hash_bits: Option<u32>) -> Option<u64> {
    let (digits, mul) = match (a.first(), hash_bits) {
        (Some(b'#'), Some(bits)) if bits > 0 => (&a[1..], i64::from(bits)),
        _ => (a, 1),
    };
    let n = int_arg(digits)?.checked_mul(mul)?;
    (n >= 0 && (n >> 3) < PROTO_MAX_BULK_LEN).then_some(n as u64)
}

pub(super) fn setbit(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(offset) = bit_offset(arg(cmd, 2), None) else { return write_error(out, BAD_OFFSET) };
    let on = match int_arg(arg(cmd, 3)) {
        Some(b @ (0 | 1)) => b == 1,
        _ => return write_error(out, BAD_BIT),
    };
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let max = ctx.shared.config.max_item_size.bytes();
    let r = ctx.engine.update(s.tenant, arg(cmd, 1), |cur, buf| {
        if byte + 1 > max {
            return Err(EngineError::TooLarge);
        }
        buf.extend_from_slice(cur.map_or(&[][..], |c| c.value));
        if buf.len() <= byte {
            buf.resize(byte + 1, 0);
        }
        let was = buf[byte] & mask != 0;
        if on {
            buf[byte] |= mask
        } else {
            buf[byte] &= !mask
        }
        Ok(Update::Write {
            flags: cur.map_or(0, |c| c.flags),
            expires_at_ms: cur.and_then(|c| c.expires_at_ms),
            result: was,
        })
    });
    match r {
        Ok(was) => write_integer(out, i64::from(was)),
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn getbit(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let Some(offset) = bit_offset(arg(cmd, 2), None) else { return write_error(out, BAD_OFFSET) };
    let byte = (offset >> 3) as usize;
    let bit = ctx.engine.get_kind(s.tenant, arg(cmd, 1), Kind::STRING, |i| {
        i.value.get(byte).is_some_and(|b| b & (1 << (7 - (offset & 7))) != 0)
    });
    match bit {
        Ok(bit) => write_integer(out, i64::from(bit.unwrap_or(false))),
        Err(e) => engine_error(out, e),
    }
}

/// A byte range with the bits outside a BIT range masked off at its ends.
struct Range {
    start: usize,
    end: usize,
    /// Bits of the first / last byte outside the range (Redis's "negative masks").
    first_neg: u8,
    last_neg: u8,
}

/// Redis's range arithmetic shared by BITCOUNT and BITPOS; `None` for an empty range.
fn bit_range(mut start: i64, mut end: i64, len: usize, isbit: bool) -> Option<Range> {
    let mut total = len as i64;
    if isbit {
        total <<= 3;
    }
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    if start > end {
        return None;
    }
    let (mut first_neg, mut last_neg) = (0u8, 0u8);
    if isbit {
        first_neg = !((1u16 << (8 - (start & 7))) - 1) as u8;
        last_neg = ((1u16 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    Some(Range { start: start as usize, end: end as usize, first_neg, last_neg })
}

pub(super) fn bitcount(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let n = cmd.len();
    let r = ctx.engine.get_kind(
        s.tenant,
        arg(cmd, 1),
        Kind::STRING,
        |item| -> Result<i64, &'static [u8]> {
            let v = item.value;
            let range = match n {
                2 => bit_range(0, -1, v.len(), false),
                4 | 5 => {
                    let (Some(start), Some(end)) = (int_arg(arg(cmd, 2)), int_arg(arg(cmd, 3)))
                    else {
                        return Err(NOT_INTEGER);
                    };
                    if start < 0 && end < 0 && start > end {
                        return Ok(0);
                    }
                    let isbit = match n {
                        5 if arg(cmd, 4).eq_ignore_ascii_case(b"bit") => true,
                        5 if arg(cmd, 4).eq_ignore_ascii_case(b"byte") => false,
                        5 => return Err(SYNTAX),
                        _ => false,
                    };
                    bit_range(start, end, v.len(), isbit)
                }
                _ => return Err(SYNTAX),
            };
            let Some(r) = range else { return Ok(0) };
            let mut count: i64 = v[r.start..=r.end].iter().map(|b| i64::from(b.count_ones())).sum();
            count -= i64::from((v[r.start] & r.first_neg).count_ones());
            count -= i64::from((v[r.end] & r.last_neg).count_ones());
            Ok(count)
        },
    );
    match r {
        Ok(None) => write_integer(out, 0),
        Ok(Some(Ok(c))) => write_integer(out, c),
        Ok(Some(Err(e))) => write_error(out, e),
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn bitpos(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let n = cmd.len();
    let bit = match int_arg(arg(cmd, 2)) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return write_error(out, b"ERR The bit argument must be 1 or 0."),
        None => return write_error(out, NOT_INTEGER),
    };
    let r = ctx.engine.get_kind(
        s.tenant,
        arg(cmd, 1),
        Kind::STRING,
        |item| -> Result<i64, &'static [u8]> {
            let v = item.value;
            let mut end_given = false;
            let range = match n {
                3 => bit_range(0, -1, v.len(), false),
                4..=6 => {
                    let Some(start) = int_arg(arg(cmd, 3)) else { return Err(NOT_INTEGER) };
                    let isbit = match n {
                        6 if arg(cmd, 5).eq_ignore_ascii_case(b"bit") => true,
                        6 if arg(cmd, 5).eq_ignore_ascii_case(b"byte") => false,
                        6 => return Err(SYNTAX),
                        _ => false,
                    };
                    let end = if n >= 5 {
                        end_given = true;
                        int_arg(arg(cmd, 4)).ok_or(NOT_INTEGER)?
                    } else {
                        -1
                    };
                    bit_range(start, end, v.len(), isbit)
                }
                _ => return Err(SYNTAX),
            };
            let Some(r) = range else { return Ok(-1) };
            // The range's bits in order: the first byte from its first bit in range, the last to
            // its last.
            let first_bit = r.first_neg.count_ones() as usize;
            let last_bit = 7 - r.last_neg.count_ones() as usize;
            for (byte, &b) in v.iter().enumerate().take(r.end + 1).skip(r.start) {
                let lo = if byte == r.start { first_bit } else { 0 };
                let hi = if byte == r.end { last_bit } else { 7 };
                for i in lo..=hi {
                    if (b & (0x80 >> i) != 0) == bit {
                        return Ok((byte * 8 + i) as i64);
                    }
                }
            }
            // Not found. Looking for a clear bit with no explicit end, the bits past the string
            // count as clear (Redis's zero padding).
            if !bit && !end_given { Ok(((r.end + 1) * 8) as i64) } else { Ok(-1) }
        },
    );
    match r {
        Ok(None) => write_integer(out, if bit { -1 } else { 0 }),
        Ok(Some(Ok(c))) => write_integer(out, c),
        Ok(Some(Err(e))) => write_error(out, e),
        Err(e) => engine_error(out, e),
    }
}

pub(super) fn bitop(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let op = arg(cmd, 1).to_ascii_lowercase();
    if !matches!(&op[..], b"and" | b"or" | b"xor" | b"not") {
        return write_error(out, SYNTAX);
    }
    if op == b"not" && cmd.len() != 4 {
        return write_error(out, b"ERR BITOP NOT must be called with a single source key.");
    }
    let t = s.tenant;
    let sources: Result<Vec<Vec<u8>>, EngineError> = (3..cmd.len())
        .map(|i| {
            let v = ctx.engine.get_kind(t, arg(cmd, i), Kind::STRING, |item| item.value.to_vec());
            v.map(Option::unwrap_or_default)
        })
        .collect();
    let sources = match sources {
        Ok(sources) => sources,
        Err(e) => return engine_error(out, e),
    };
    let maxlen = sources.iter().map(Vec::len).max().unwrap_or(0);
    let mut res = vec![0u8; maxlen];
    for (i, r) in res.iter_mut().enumerate() {
        let byte = |s: &Vec<u8>| s.get(i).copied().unwrap_or(0);
        let mut it = sources.iter().map(byte);
        let first = it.next().unwrap_or(0);
        *r = match &op[..] {
            b"and" => it.fold(first, |a, b| a & b),
            b"or" => it.fold(first, |a, b| a | b),
            b"xor" => it.fold(first, |a, b| a ^ b),
            _ => !first,
        };
    }
    let dest = arg(cmd, 2);
    let r = if maxlen == 0 {
        ctx.engine.delete(t, dest);
        Ok(())
    } else if maxlen > ctx.shared.config.max_item_size.bytes() {
        Err(EngineError::TooLarge)
    } else {
        ctx.engine.store(fridge_engine::Store::new(t, dest, &res)).map(|_| ())
    };
    match r {
        Ok(()) => write_integer(out, maxlen as i64),
        Err(e) => engine_error(out, e),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Get,
    Set,
    Incrby,
}

#[derive(Clone, Copy)]
struct FieldOp {
    op: Op,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

/// `BITFIELD` and `BITFIELD_RO`.
pub(super) fn bitfield(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let ro = c.name == "bitfield_ro";
    let n = cmd.len();
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < n {
        let rem = n - j - 1;
        let sub = arg(cmd, j);
        let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
        let op = if is(b"get") && rem >= 2 {
            Op::Get
        } else if is(b"set") && rem >= 3 {
            Op::Set
        } else if is(b"incrby") && rem >= 3 {
            Op::Incrby
        } else if is(b"overflow") && rem >= 1 {
            let o = arg(cmd, j + 1);
            overflow = if o.eq_ignore_ascii_case(b"wrap") {
                Overflow::Wrap
            } else if o.eq_ignore_ascii_case(b"sat") {
                Overflow::Sat
            } else if o.eq_ignore_ascii_case(b"fail") {
                Overflow::Fail
            } else {
                return write_error(out, b"ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return write_error(out, SYNTAX);
        };
        let ty = arg(cmd, j + 1);
        let signed = match ty.first() {
            Some(b'i') => true,
            Some(b'u') => false,
            _ => return write_error(out, BAD_TYPE),
        };
        let bits = match int_arg(&ty[1..]) {
            Some(b) if b >= 1 && b <= if signed { 64 } else { 63 } => b as u32,
            _ => return write_error(out, BAD_TYPE),
        };
        let Some(offset) = bit_offset(arg(cmd, j + 2), Some(bits)) else {
            return write_error(out, BAD_OFFSET);
        };
        let mut value = 0;
        if op != Op::Get {
            let top = offset + u64::from(bits) - 1;
            highest = Some(highest.map_or(top, |h| h.max(top)));
            match int_arg(arg(cmd, j + 3)) {
                Some(v) => value = v,
                None => return write_error(out, NOT_INTEGER),
            }
        }
        ops.push(FieldOp { op, signed, bits, offset, value, overflow });
        j += if op == Op::Get { 3 } else { 4 };
    }
    let t = s.tenant;
    let version = s.version;
    let Some(highest) = highest else {
        // Only GETs: a read.
        let key = arg(cmd, 1);
        let v = match ctx.engine.get_kind(t, key, Kind::STRING, |i| i.value.to_vec()) {
            Ok(v) => v.unwrap_or_default(),
            Err(e) => return engine_error(out, e),
        };
        write_array_header(out, ops.len());
        for op in &ops {
            let u = get_field(&v, op.offset, op.bits);
            write_integer(out, if op.signed { sign_extend(u, op.bits) } else { u as i64 });
        }
        return;
    };
    if ro {
        return write_error(out, b"ERR BITFIELD_RO only supports the GET subcommand");
    }
    let need = (highest >> 3) as usize + 1;
    let max = ctx.shared.config.max_item_size.bytes();
    let mark = out.len();
    let r = ctx.engine.update(t, arg(cmd, 1), |cur, buf| {
        out.truncate(mark);
        if need > max {
            return Err(EngineError::TooLarge);
        }
        buf.extend_from_slice(cur.map_or(&[][..], |c| c.value));
        if buf.len() < need {
            buf.resize(need, 0);
        }
        write_array_header(out, ops.len());
        for op in &ops {
            run_op(op, buf, out, version);
        }
        Ok(Update::Write {
            flags: cur.map_or(0, |c| c.flags),
            expires_at_ms: cur.and_then(|c| c.expires_at_ms),
            result: (),
        })
    });
    if let Err(e) = r {
        out.truncate(mark);
        engine_error(out, e);
    }
}

fn run_op(op: &FieldOp, buf: &mut [u8], out: &mut Vec<u8>, version: fridge_proto::resp::Version) {
    let old = get_field(buf, op.offset, op.bits);
    if op.op == Op::Get {
        let v = if op.signed { sign_extend(old, op.bits) } else { old as i64 };
        return write_integer(out, v);
    }
    let (overflowed, newval, retval) = if op.signed {
        let oldval = sign_extend(old, op.bits);
        if op.op == Op::Incrby {
            let (o, w) = signed_overflow(oldval, op.value, op.bits, op.overflow);
            let nv = if o { w } else { oldval.wrapping_add(op.value) };
            (o, nv as u64, nv)
        } else {
            let (o, w) = signed_overflow(op.value, 0, op.bits, op.overflow);
            (o, if o { w } else { op.value } as u64, oldval)
        }
    } else if op.op == Op::Incrby {
        let (o, w) = unsigned_overflow(old, op.value, op.bits, op.overflow);
        let nv = if o { w } else { old.wrapping_add(op.value as u64) };
        (o, nv, nv as i64)
    } else {
        let (o, w) = unsigned_overflow(op.value as u64, 0, op.bits, op.overflow);
        (o, if o { w } else { op.value as u64 }, old as i64)
    };
    if overflowed && op.overflow == Overflow::Fail {
        write_null(out, version);
    } else {
        write_integer(out, retval);
        set_field(buf, op.offset, op.bits, newval);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether it overflows, and the wrapped or
/// saturated value.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, u64) {
    let max: u64 = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.wrapping_shl(bits));
    if value > max || (incr > 0 && incr > maxincr) {
        (true, if ow == Overflow::Wrap { wrap() } else { max })
    } else if incr < 0 && incr < minincr {
        (true, if ow == Overflow::Wrap { wrap() } else { 0 })
    } else {
        (false, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, i64) {
    let max: i64 = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let msb = 1u64 << (bits - 1);
        let c = (value as u64).wrapping_add(incr as u64);
        // (For 64 bits there is nothing above the field: what redis-server answers.)
        let mask = u64::MAX.checked_shl(bits).unwrap_or(0);
        (if c & msb != 0 { c | mask } else { c & !mask }) as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        (true, if ow == Overflow::Wrap { wrap() } else { max })
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        (true, if ow == Overflow::Wrap { wrap() } else { min })
    } else {
        (false, 0)
    }
}

/// The `bits`-wide field at bit `offset` (big-endian bit order; bytes past `v` read as 0).
fn get_field(v: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for j in 0..u64::from(bits) {
        let pos = offset + j;
        let byte = (pos >> 3) as usize;
        let bit = v.get(byte).map_or(0, |b| (b >> (7 - (pos & 7))) & 1);
        value = (value << 1) | u64::from(bit);
    }
    value
}

fn set_field(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let bit = (value >> (u64::from(bits) - 1 - j)) & 1;
        let pos = offset + j;
        let byte = (pos >> 3) as usize;
        let mask = 1u8 << (7 - (pos & 7));
        if bit == 1 { v[byte] |= mask } else { v[byte] &= !mask }
    }
}

fn sign_extend(u: u64, bits: u32) -> i64 {
    if bits == 64 {
        return u as i64;
    }
    if u & (1 << (bits - 1)) != 0 { (u | u64::MAX.wrapping_shl(bits)) as i64 } else { u as i64 }
}

#[cfg(test)]
mod tests {
    use super::{Overflow, get_field, set_field, sign_extend, signed_overflow, unsigned_overflow};

    #[test]
    fn fields_round_trip_in_big_endian_bit_order() {
        let mut v = vec![0u8; 3];
        set_field(&mut v, 4, 8, 0xAB);
        assert_eq!(v, [0x0A, 0xB0, 0]);
        assert_eq!(get_field(&v, 4, 8), 0xAB);
        assert_eq!(sign_extend(get_field(&v, 4, 4), 4), -6);
        assert_eq!(get_field(&v, 20, 16), 0, "past the end reads as zero");
    }

    #[test]
    fn overflow_as_redis() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), (true, 4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), (true, 255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), (true, 0));
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), (true, -126));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), (true, -128));
        assert_eq!(signed_overflow(1, 1, 8, Overflow::Sat), (false, 0));
    }
}
