//! Readers of Redis's compact encodings, as they arrive inside `RESTORE` payloads: the
//! listpack (Redis 7.0's small hashes, sorted sets and list nodes; `listpack.c` and its
//! specification, `listpack.md`), the ziplist (the same, written by Redis 6.2 and older;
//! `ziplist.c`) and the intset (a set of integers; `intset.c`).
//!
//! Each reader appends the elements, in order, to `out` as byte strings: an integer entry
//! becomes its decimal text, which is what Redis's own getters hand to commands. Bytes that do
//! not follow the format exactly (a header that disagrees with the length, an entry running
//! past the end, a back-length or previous-length that does not match, an intset out of
//! order) give `None`, never a panic; nothing is allocated beyond what the input's own length
//! allows.

/// A listpack: a 6-byte header (total bytes, element count or 65535 for "unknown"), the
/// entries (an encoding byte, the data, and the entry's length again in 1–5 bytes for walks
/// backwards), then `0xFF`.
pub(crate) fn listpack(p: &[u8], out: &mut Vec<Vec<u8>>) -> Option<()> {
    let total = u32::from_le_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let count = u16::from_le_bytes(p.get(4..6)?.try_into().ok()?);
    if total != p.len() || p.last() != Some(&0xFF) {
        return None;
    }
    let (start, mut at) = (out.len(), 6);
    while at < p.len() - 1 {
        let b = p[at];
        // (the entry's bytes before its back-length, the element)
        let (len, elem) = match b {
            0x00..=0x7F => (1, int_text(i64::from(b))),
            0x80..=0xBF => string(p, at, 1, usize::from(b & 0x3F))?,
            0xC0..=0xDF => {
                let v = i64::from(b & 0x1F) << 8 | i64::from(*p.get(at + 1)?);
                (2, int_text(if v >= 1 << 12 { v - (1 << 13) } else { v }))
            }
            0xE0..=0xEF => {
                let len = usize::from(b & 0x0F) << 8 | usize::from(*p.get(at + 1)?);
                string(p, at, 2, len)?
            }
            0xF0 => {
                let len = u32::from_le_bytes(p.get(at + 1..at + 5)?.try_into().ok()?);
                string(p, at, 5, len as usize)?
            }
            0xF1..=0xF4 => {
                let width = [2, 3, 4, 8][usize::from(b - 0xF1)];
                (1 + width, int_text(signed_le(p.get(at + 1..at + 1 + width)?)))
            }
            _ => return None,
        };
        let back = backlen(len);
        if p.get(at + len..at + len + back.len())? != &back[..] {
            return None;
        }
        at += len + back.len();
        out.push(elem);
    }
    (at == p.len() - 1 && (count == u16::MAX || usize::from(count) == out.len() - start))
        .then_some(())
}

/// A string entry whose data starts `header` bytes after `at` and runs `len` bytes:
/// `(header + len, the string)`.
fn string(p: &[u8], at: usize, header: usize, len: usize) -> Option<(usize, Vec<u8>)> {
    let data = p.get(at + header..(at + header).checked_add(len)?)?;
    Some((header + len, data.to_vec()))
}

/// A listpack entry's back-length: its length in 7-bit groups, most significant first, the
/// continuation bit on every byte but the first (it is read from the end, backwards).
fn backlen(len: usize) -> Vec<u8> {
    let mut groups = vec![(len & 0x7F) as u8];
    let mut rest = len >> 7;
    while rest > 0 {
        groups.push((rest & 0x7F) as u8);
        rest >>= 7;
    }
    let last = groups.len() - 1;
    groups.iter().enumerate().rev().map(|(i, &g)| if i == last { g } else { g | 0x80 }).collect()
}

/// A ziplist: a 10-byte header (total bytes, offset of the last entry, element count or
/// 65535), the entries (the previous entry's length in 1 or 5 bytes, an encoding, the data),
/// then `0xFF`.
pub(crate) fn ziplist(p: &[u8], out: &mut Vec<Vec<u8>>) -> Option<()> {
    let total = u32::from_le_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let tail = u32::from_le_bytes(p.get(4..8)?.try_into().ok()?) as usize;
    let count = u16::from_le_bytes(p.get(8..10)?.try_into().ok()?);
    if total != p.len() || p.last() != Some(&0xFF) {
        return None;
    }
    let (start, mut at, mut prev, mut last) = (out.len(), 10, 0, 10);
    while at < p.len() - 1 {
        let (prevlen, head) = match p[at] {
            0xFE => (u32::from_le_bytes(p.get(at + 1..at + 5)?.try_into().ok()?) as usize, 5),
            b => (usize::from(b), 1),
        };
        if prevlen != prev {
            return None;
        }
        let e = at + head;
        let b = *p.get(e)?;
        let (len, elem) = match b >> 6 {
            0 => string(p, e, 1, usize::from(b & 0x3F))?,
            1 => string(p, e, 2, usize::from(b & 0x3F) << 8 | usize::from(*p.get(e + 1)?))?,
            2 if b == 0x80 => {
                let len = u32::from_be_bytes(p.get(e + 1..e + 5)?.try_into().ok()?);
                string(p, e, 5, len as usize)?
            }
            2 => return None,
            _ => {
                let width = match b {
                    0xC0 => 2,
                    0xD0 => 4,
                    0xE0 => 8,
                    0xF0 => 3,
                    0xFE => 1,
                    0xF1..=0xFD => 0,
                    _ => return None,
                };
                let v = if width == 0 {
                    i64::from(b & 0x0F) - 1
                } else {
                    signed_le(p.get(e + 1..e + 1 + width)?)
                };
                (1 + width, int_text(v))
            }
        };
        last = at;
        prev = head + len;
        at += prev;
        out.push(elem);
    }
    let n = out.len() - start;
    let tail_ok = if n == 0 { tail == 10 } else { tail == last };
    (at == p.len() - 1 && tail_ok && (count == u16::MAX || usize::from(count) == n)).then_some(())
}

/// An intset: its width (2, 4 or 8 bytes), its length, then the integers little-endian in
/// strictly ascending order.
pub(crate) fn intset(p: &[u8], out: &mut Vec<Vec<u8>>) -> Option<()> {
    let width = u32::from_le_bytes(p.get(..4)?.try_into().ok()?) as usize;
    let len = u32::from_le_bytes(p.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || len.checked_mul(width)? != p.len() - 8 {
        return None;
    }
    let mut prev = None;
    for chunk in p[8..].chunks_exact(width) {
        let v = signed_le(chunk);
        if prev.is_some_and(|p| p >= v) {
            return None;
        }
        prev = Some(v);
        out.push(int_text(v));
    }
    Some(())
}

/// A little-endian two's-complement integer of 1–8 bytes.
fn signed_le(bytes: &[u8]) -> i64 {
    let mut v = [0u8; 8];
    v[..bytes.len()].copy_from_slice(bytes);
    let shift = 64 - 8 * bytes.len() as u32;
    (i64::from_le_bytes(v) << shift) >> shift
}

fn int_text(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::{intset, listpack, ziplist};

    fn read(f: fn(&[u8], &mut Vec<Vec<u8>>) -> Option<()>, p: &[u8]) -> Option<Vec<String>> {
        let mut out = Vec::new();
        f(p, &mut out)?;
        Some(out.into_iter().map(|e| String::from_utf8(e).unwrap()).collect())
    }

    #[test]
    fn a_listpack_from_redis_reads_back() {
        // `HSET h a 1 b -300 name alice big 70000` on redis-server 7.0.15: the listpack inside
        // its DUMP payload (type 16).
        let lp = b"\x29\x00\x00\x00\x08\x00\x81a\x02\x01\x01\x81b\x02\xde\xd4\x02\x84name\x05\
            \x85alice\x06\x83big\x04\xf2p\x11\x01\x04\xff";
        assert_eq!(
            read(listpack, lp).unwrap(),
            ["a", "1", "b", "-300", "name", "alice", "big", "70000"]
        );
        // A wrong total, a wrong count, a wrong back-length, a missing end: refused.
        let mut bad = lp.to_vec();
        bad[0] += 1;
        assert_eq!(read(listpack, &bad), None);
        let mut bad = lp.to_vec();
        bad[4] = 7;
        assert_eq!(read(listpack, &bad), None);
        let mut bad = lp.to_vec();
        bad[8] = 3;
        assert_eq!(read(listpack, &bad), None);
        let mut bad = lp.to_vec();
        *bad.last_mut().unwrap() = 0;
        assert_eq!(read(listpack, &bad), None);
    }

    #[test]
    fn listpack_integers_and_long_strings() {
        // Every integer width, and a string over 63 bytes (12-bit length, 2-byte back-length).
        let mut lp = vec![0; 6];
        let long = vec![b'x'; 200];
        let entries: Vec<Vec<u8>> = vec![
            vec![0x7F],
            vec![0xDF, 0xFF],             // 13-bit: -1
            vec![0xF1, 0x00, 0x80],       // 16-bit: -32768
            vec![0xF2, 0xFF, 0xFF, 0x7F], // 24-bit: 8388607
            vec![0xF3, 0, 0, 0, 0x80],    // 32-bit: -2^31
            vec![0xF4, 1, 0, 0, 0, 0, 0, 0, 0],
            [&[0xE0, 200][..], &long].concat(),
        ];
        for e in &entries {
            lp.extend_from_slice(e);
            lp.extend_from_slice(&super::backlen(e.len()));
        }
        lp.push(0xFF);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        lp[4..6].copy_from_slice(&7u16.to_le_bytes());
        let got = read(listpack, &lp).unwrap();
        assert_eq!(&got[..6], ["127", "-1", "-32768", "8388607", "-2147483648", "1"]);
        assert_eq!(got[6], "x".repeat(200));
        assert_eq!(super::backlen(200), [0x01, 0xC8]);
    }

    #[test]
    fn a_ziplist_reads_back() {
        // Redis 6.2's ziplist of "a", 12 (immediate), 300 (int16), "hello".
        let mut zl = vec![0; 10];
        let entries: [&[u8]; 4] = [b"\x01a", b"\xfd", b"\xc0\x2c\x01", b"\x05hello"];
        let (mut prev, mut last) = (0u8, 10);
        for e in entries {
            last = zl.len();
            zl.push(prev);
            zl.extend_from_slice(e);
            prev = (e.len() + 1) as u8;
        }
        zl.push(0xFF);
        let total = zl.len() as u32;
        zl[..4].copy_from_slice(&total.to_le_bytes());
        zl[4..8].copy_from_slice(&(last as u32).to_le_bytes());
        zl[8..10].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(read(ziplist, &zl).unwrap(), ["a", "12", "300", "hello"]);
        let mut bad = zl.to_vec();
        bad[12 + 1] = 9; // the second entry's previous length
        assert_eq!(read(ziplist, &bad), None);
        let mut bad = zl.to_vec();
        bad[4] = 11; // the tail offset
        assert_eq!(read(ziplist, &bad), None);
    }

    #[test]
    fn an_intset_reads_back_and_must_ascend() {
        let mut is = vec![2, 0, 0, 0, 3, 0, 0, 0];
        is.extend_from_slice(&[0xFF, 0xFF, 1, 0, 2, 0]);
        assert_eq!(read(intset, &is).unwrap(), ["-1", "1", "2"]);
        is[10] = 5;
        assert_eq!(read(intset, &is), None);
        assert_eq!(read(intset, &[3, 0, 0, 0, 0, 0, 0, 0]), None);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut next = crate::types::xorshift(0x1234_5678_9abc_def0u64);
        for _ in 0..50_000 {
            let n = (next() % 40) as usize;
            let mut p: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            if n >= 6 && next() % 2 == 0 {
                p[..4].copy_from_slice(&(n as u32).to_le_bytes());
                p[n - 1] = 0xFF;
            }
            let mut out = Vec::new();
            let _ = listpack(&p, &mut out);
            let _ = ziplist(&p, &mut out);
            let _ = intset(&p, &mut out);
        }
    }
}
