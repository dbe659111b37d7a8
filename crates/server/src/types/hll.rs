//! HyperLogLog as Redis 7.0 keeps it (`src/hyperloglog.c`), byte for byte: a string value
//! that starts with `HYLL`, so `GET`, `DUMP` and `COPY` carry it and a payload moves between
//! fridge and Redis unchanged.
//!
//! ```text
//!  0      4          5        8                16
//!  ├ HYLL ┼ encoding ┼ unused ┼ cached card.   ┼ registers…
//!           0 dense             u64 LE; bit 63 set: stale
//!           1 sparse
//! ```
//!
//! 16,384 registers (P = 14) of 6 bits hold the longest run of zeros seen (plus one) among the
//! hashes (MurmurHash64A, seed `0xadc83b19`) that chose them. Dense: 12,288 bytes of packed
//! registers. Sparse: runs — `ZERO` (`00xxxxxx`, 1–64 zero registers), `XZERO` (`01xxxxxx
//! yyyyyyyy`, 1–16,384), `VAL` (`1vvvvvxx`, 1–4 registers of value 1–32) — until a value over
//! 32 or a length over `hll-sparse-max-bytes` (3,000) turns it dense. The cardinality is Otmar
//! Ertl's estimator over the register histogram, as Redis computes it.

/// Registers: 2^P.
const P: u32 = 14;
const REGISTERS: usize = 1 << P;
/// Bits of a hash past the register index that a run of zeros is counted in.
const Q: u32 = 64 - P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Bytes of the header.
pub(crate) const HEADER: usize = 16;
/// Bytes of a dense HyperLogLog.
pub(crate) const DENSE_LEN: usize = HEADER + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Redis's `hll-sparse-max-bytes` default: past it a sparse HyperLogLog turns dense.
const SPARSE_MAX_BYTES: usize = 3000;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// 0.5 / ln 2.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Why a HyperLogLog cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HllError {
    /// Not a HyperLogLog (Redis: `WRONGTYPE Key is not a valid HyperLogLog string value.`).
    NotHll,
    /// Its sparse runs do not cover the registers (Redis: `INVALIDOBJ`).
    Corrupt,
}

/// Redis's `MurmurHash64A`.
pub(crate) fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element chooses and the run it counts (Redis's `hllPatLen`).
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc8_3b19);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty HyperLogLog: sparse, one `XZERO` over every register, cached count 0.
pub(crate) fn new_empty() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let l = REGISTERS - 1;
    v.push((l >> 8) as u8 | 0x40);
    v.push(l as u8);
    v
}

/// Checks that `v` is a HyperLogLog Redis would take (`isHLLObjectOrReply`).
pub(crate) fn check(v: &[u8]) -> Result<(), HllError> {
    if v.len() < HEADER
        || &v[..4] != b"HYLL"
        || v[4] > SPARSE
        || (v[4] == DENSE && v.len() != DENSE_LEN)
    {
        return Err(HllError::NotHll);
    }
    Ok(())
}

/// Marks the cached count stale.
pub(crate) fn invalidate(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// The cached count, if it is valid.
pub(crate) fn cached(v: &[u8]) -> Option<u64> {
    (v[15] & 0x80 == 0).then(|| u64::from_le_bytes(v[8..16].try_into().unwrap_or_default()))
}

/// Stores a count in the cache.
pub(crate) fn set_cached(v: &mut [u8], count: u64) {
    v[8..16].copy_from_slice(&count.to_le_bytes());
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) as u8) & REGISTER_MAX
}

fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    regs[byte] &= !((u16::from(REGISTER_MAX) << fb) as u8);
    regs[byte] |= (v << fb) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((u16::from(REGISTER_MAX) >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// One sparse opcode at the start of `p`: (registers it covers, its value, its bytes).
fn opcode(p: &[u8]) -> Option<(usize, u8, usize)> {
    let b = *p.first()?;
    Some(match b & 0xc0 {
        0x00 => (usize::from(b & 0x3f) + 1, 0, 1),
        0x40 => ((usize::from(b & 0x3f) << 8 | usize::from(*p.get(1)?)) + 1, 0, 2),
        _ => (usize::from(b & 0x3) + 1, ((b >> 2) & 0x1f) + 1, 1),
    })
}

fn val(value: u8, len: usize) -> u8 {
    ((value - 1) << 2) | (len - 1) as u8 | 0x80
}

/// Pushes a run of `len` zero registers as Redis writes it (`ZERO` up to 64, `XZERO` above).
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        let l = len - 1;
        seq.push((l >> 8) as u8 | 0x40);
        seq.push(l as u8);
    } else {
        seq.push((len - 1) as u8);
    }
}

/// Every register's value, from either encoding (`None` for sparse runs that do not cover
/// the registers exactly).
fn registers(v: &[u8]) -> Option<Vec<u8>> {
    let body = &v[HEADER..];
    if v[4] == DENSE {
        return Some((0..REGISTERS).map(|i| dense_get(body, i)).collect());
    }
    let mut regs = Vec::with_capacity(REGISTERS);
    let mut p = 0;
    while p < body.len() {
        let (span, value, len) = opcode(&body[p..])?;
        if regs.len() + span > REGISTERS {
            return None;
        }
        regs.extend(std::iter::repeat_n(value, span));
        p += len;
    }
    (regs.len() == REGISTERS).then_some(regs)
}

/// Turns a sparse HyperLogLog dense, keeping its header (and cache).
fn to_dense(v: &mut Vec<u8>) -> Result<(), HllError> {
    let regs = registers(v).ok_or(HllError::Corrupt)?;
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER].copy_from_slice(&v[..HEADER]);
    dense[4] = DENSE;
    for (i, &r) in regs.iter().enumerate() {
        if r != 0 {
            dense_set(&mut dense[HEADER..], i, r);
        }
    }
    *v = dense;
    Ok(())
}

/// Raises register `index` to `count` (Redis's `hllSparseSet` / `hllDenseSet`, with the same
/// opcode splits and merges, so the bytes come out as Redis's): whether it changed.
fn set(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    if v[4] == DENSE {
        let regs = &mut v[HEADER..];
        if count > dense_get(regs, index) {
            dense_set(regs, index, count);
            return Ok(true);
        }
        return Ok(false);
    }
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Step 1: the opcode covering the register.
    let (mut p, mut first, mut prev) = (HEADER, 0usize, None);
    let (span, value, oplen) = loop {
        let Some((span, value, oplen)) = opcode(&v[p..]) else { return Err(HllError::Corrupt) };
        if index < first + span {
            break (span, value, oplen);
        }
        prev = Some(p);
        p += oplen;
        first += span;
    };
    let is_val = value > 0;
    // Steps 2–3: an update in place where trivial, else the opcode split in up to 5 bytes.
    if is_val && value >= count {
        return Ok(false);
    }
    if span == 1 && (is_val || oplen == 1) {
        v[p] = val(count, 1);
    } else {
        let last = first + span - 1;
        let mut seq = Vec::with_capacity(5);
        if is_val {
            if index != first {
                seq.push(val(value, index - first));
            }
            seq.push(val(count, 1));
            if index != last {
                seq.push(val(value, last - index));
            }
        } else {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        let delta = seq.len() as isize - oplen as isize;
        if delta > 0 && v.len() + delta as usize > SPARSE_MAX_BYTES {
            return promote(v, index, count);
        }
        v.splice(p..p + oplen, seq);
    }
    // Step 4: merge adjacent VAL opcodes of one value, scanning up to 5 opcodes from the
    // previous one.
    let mut p = prev.unwrap_or(HEADER);
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        let b = v[p];
        if b & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if b & 0xc0 == 0 {
            p += 1;
            continue;
        }
        if p + 1 < v.len() && v[p + 1] & 0x80 != 0 {
            let (l1, v1, _) = opcode(&v[p..]).ok_or(HllError::Corrupt)?;
            let (l2, v2, _) = opcode(&v[p + 1..]).ok_or(HllError::Corrupt)?;
            if v1 == v2 && l1 + l2 <= SPARSE_VAL_MAX_LEN {
                v[p + 1] = val(v1, l1 + l2);
                v.remove(p);
                continue;
            }
        }
        p += 1;
    }
    invalidate(v);
    Ok(true)
}

fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    to_dense(v)?;
    set(v, index, count)
}

/// Adds `element` (PFADD): whether a register changed.
pub(crate) fn add(v: &mut Vec<u8>, element: &[u8]) -> Result<bool, HllError> {
    let (index, count) = pattern(element);
    set(v, index, count)
}

/// Raises every register of `max` to this HyperLogLog's (Redis's `hllMerge`).
pub(crate) fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), HllError> {
    let regs = registers(v).ok_or(HllError::Corrupt)?;
    for (m, r) in max.iter_mut().zip(regs) {
        *m = (*m).max(r);
    }
    Ok(())
}

/// A fresh register array for [`merge_into`].
pub(crate) fn no_registers() -> Box<[u8; REGISTERS]> {
    Box::new([0; REGISTERS])
}

/// Writes `max`'s registers into `v` (PFMERGE's target), dense first if `dense`.
pub(crate) fn write_registers(
    v: &mut Vec<u8>,
    max: &[u8; REGISTERS],
    dense: bool,
) -> Result<(), HllError> {
    if dense && v[4] != DENSE {
        to_dense(v)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            set(v, i, m)?;
        }
    }
    invalidate(v);
    Ok(())
}

/// Whether the HyperLogLog is dense.
pub(crate) fn is_dense(v: &[u8]) -> bool {
    v[4] == DENSE
}

/// The estimate from a register array (Redis's `hllCount`: Ertl's estimator).
pub(crate) fn count_registers(regs: &[u8]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs {
        histo[usize::from(r)] += 1;
    }
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// The estimate of a HyperLogLog.
pub(crate) fn count(v: &[u8]) -> Result<u64, HllError> {
    Ok(count_registers(&registers(v).ok_or(HllError::Corrupt)?))
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_hyperloglog_is_redis_s_18_bytes() {
        // Redis's `createHLLObject`: HYLL, sparse, a zero cache, one XZERO over the 16,384
        // registers (PFADD then marks the cache stale). The hash, the new key's bytes and the
        // sparse and dense updates are checked byte for byte against redis-server in
        // `tests/python/test_redis_hll.py`.
        assert_eq!(new_empty(), b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff");
        assert_eq!(murmur64a(b"", 0), 0);
    }

    #[test]
    fn the_estimate_follows_the_elements_and_the_encoding_turns_dense() {
        let mut v = new_empty();
        assert_eq!(check(&v), Ok(()));
        assert_eq!(count(&v), Ok(0));
        for i in 0..1000 {
            add(&mut v, format!("e{i}").as_bytes()).unwrap();
        }
        let c = count(&v).unwrap();
        assert!((980..=1020).contains(&c), "{c}");
        assert!(!is_dense(&v), "1,000 elements stay sparse");
        for i in 1000..20_000 {
            add(&mut v, format!("e{i}").as_bytes()).unwrap();
        }
        assert!(is_dense(&v) && v.len() == DENSE_LEN);
        let c = count(&v).unwrap();
        assert!((19_500..=20_500).contains(&c), "{c}");
        assert!(!add(&mut v, b"e5").unwrap(), "a seen element changes nothing");
    }

    #[test]
    fn arbitrary_values_behind_a_valid_header_never_panic() {
        // A HyperLogLog is a string any client can SET: every read and write of one must
        // stop at its bytes' end whatever they hold.
        let mut next = crate::types::xorshift(0x1234_5678_9abc_def1u64);
        let mut valid = new_empty();
        for i in 0..300 {
            add(&mut valid, format!("v{i}").as_bytes()).unwrap();
        }
        for round in 0..5000 {
            let mut v = if round % 2 == 0 {
                let mut v = b"HYLL".to_vec();
                v.push((next() % 2) as u8);
                v.extend((0..11 + next() % 40).map(|_| next() as u8));
                v
            } else {
                let mut v = valid.clone();
                for _ in 0..1 + next() % 4 {
                    let at = HEADER + (next() as usize % (v.len() - HEADER));
                    v[at] = next() as u8;
                }
                v
            };
            if check(&v).is_err() {
                continue;
            }
            let _ = count(&v);
            let mut max = no_registers();
            let _ = merge_into(&mut max, &v);
            for e in 0..5 {
                if add(&mut v, format!("e{e}").as_bytes()).is_err() {
                    break;
                }
            }
        }
    }

    #[test]
    fn corrupt_or_foreign_values_are_refused() {
        assert_eq!(check(b"HYLL"), Err(HllError::NotHll));
        assert_eq!(check(b"hello world, this is long"), Err(HllError::NotHll));
        let mut bad = new_empty();
        bad.pop();
        assert_eq!(count(&bad), Err(HllError::Corrupt));
        let mut dense = vec![0u8; DENSE_LEN - 1];
        dense[..4].copy_from_slice(b"HYLL");
        assert_eq!(check(&dense), Err(HllError::NotHll));
    }
}
