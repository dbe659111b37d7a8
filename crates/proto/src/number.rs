//! Decimal numbers on the wire, both directions, without allocation.
//!
//! Parsing is strict in the way the reference servers are strict: memcached's
//! `safe_strtoul`/`safe_strtol` family (digits only, an optional `-` for the
//! signed forms, the whole token must be consumed, the value must fit) and
//! Redis's `string2ll` (no `+`, no leading zeros, no `-0`). Stored counters
//! are read the way each server reads them: memcached's with trailing spaces
//! allowed ([`parse_u64_padded`]), Redis's floats with `strtold`'s range
//! ([`parse_redis_f64`]). `INCRBYFLOAT` and `HINCRBYFLOAT` compute in the C `long double`
//! instead, as Redis does: [`crate::long_double`].
//!
//! Formatting writes into a 20-byte stack buffer ([`u64_digits`]) or through
//! one into a caller's `Vec<u8>`; it never allocates beyond growing that
//! vector. This is the one set of decimal readers and writers: the server,
//! the load generator and the fuzzers all use it.

/// The longest decimal form of a `u64` (`18446744073709551615`) or `i64`
/// (`-9223372036854775808`) is 20 bytes.
pub const MAX_DIGITS: usize = 20;

/// The decimal digits of `n`, formatted at the end of `buf`; returns them.
pub fn u64_digits(mut n: u64, buf: &mut [u8; MAX_DIGITS]) -> &[u8] {
    let mut i = MAX_DIGITS;
    loop {
        i -= 1;
        // `n % 10` is below 10, so the cast cannot truncate.
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Appends the decimal form of `n`.
pub fn write_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(u64_digits(n, &mut [0u8; MAX_DIGITS]));
}

/// Appends the decimal form of `n`, with a leading `-` when negative.
pub fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Appends the decimal form of a length.
pub fn write_usize(out: &mut Vec<u8>, n: usize) {
    write_u64(out, n as u64);
}

/// Parses an unsigned decimal made of ASCII digits only (memcached's
/// `safe_strtoull`): no sign, no spaces, not empty, no overflow.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Appends `v` as C's `printf("%.17g")` writes it: what Redis 7.0 answers for a sorted set's
/// score (17 significant digits, trailing zeros dropped, an exponent below 1e-4 and from 1e17
/// on, at least two exponent digits); infinities are `inf` and `-inf`.
pub fn write_g17(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(g17(v).as_bytes());
}

/// [`write_g17`]'s text, on the stack (for a reply that writes its length first).
pub fn g17(v: f64) -> G17 {
    let mut t = G17::default();
    // An integer below 1e17 (every score a counter or a timestamp holds) is its digits: 17
    // significant digits print it whole, without an exponent.
    if v.fract() == 0.0 && v.abs() < 1e17 {
        if v.is_sign_negative() {
            t.push(b"-");
        }
        t.push(u64_digits(v.abs() as u64, &mut [0u8; MAX_DIGITS]));
        return t;
    }
    g17_general(v, &mut t);
    t
}

/// [`g17`] of any value, through the standard library's exact formatting.
fn g17_general(v: f64, out: &mut G17) {
    use std::fmt::Write;
    if v.is_infinite() {
        out.push(if v > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if v.is_nan() {
        out.push(b"nan");
        return;
    }
    // 17 significant digits, rounded once: the exponent of the rounded value decides the form.
    let mut e = G17::default();
    let _ = write!(e, "{v:.16e}");
    let (mantissa, exp) = e.as_str().split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| -> usize {
        if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').len() } else { t.len() }
    };
    if (-4..17).contains(&exp) {
        let mut fixed = G17::default();
        let _ = write!(fixed, "{v:.*}", (16 - exp) as usize);
        let t = fixed.as_str();
        out.push(&t.as_bytes()[..trim(t)]);
    } else {
        out.push(&mantissa.as_bytes()[..trim(mantissa)]);
        out.push(if exp < 0 { b"e-" } else { b"e+" });
        if exp.abs() < 10 {
            out.push(b"0");
        }
        out.push(u64_digits(u64::from(exp.unsigned_abs()), &mut [0u8; MAX_DIGITS]));
    }
}

/// Text on the stack: 64 bytes, more than `%.17g`'s forms take (at most a sign, 17 digits, a
/// point and 20 decimals); what would go past them is dropped.
#[derive(Debug, Clone, Copy)]
pub struct G17 {
    bytes: [u8; 64],
    len: usize,
}

impl Default for G17 {
    fn default() -> Self {
        G17 { bytes: [0; 64], len: 0 }
    }
}

impl G17 {
    /// The text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn push(&mut self, s: &[u8]) {
        let _ = std::fmt::Write::write_str(self, std::str::from_utf8(s).unwrap_or_default());
    }
}

impl std::fmt::Write for G17 {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// memcached's reading of a stored counter: an unsigned decimal, optionally
/// followed by spaces (memcached pads a counter that shrank in place).
pub fn parse_u64_padded(s: &[u8]) -> Option<u64> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if s[digits..].iter().any(|&b| b != b' ') {
        return None;
    }
    parse_u64(&s[..digits])
}

/// Parses an unsigned decimal that must fit in 32 bits (memcached's
/// `safe_strtoul` as used for client flags).
pub fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|n| u32::try_from(n).ok())
}

/// Parses a signed decimal: an optional `-` then digits (memcached's
/// `safe_strtoll`).
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', digits)) => {
            let n = parse_u64(digits)?;
            if n == 1 << 63 { Some(i64::MIN) } else { i64::try_from(n).ok().map(|n| -n) }
        }
        _ => parse_u64(s).and_then(|n| i64::try_from(n).ok()),
    }
}

/// Parses a signed decimal that must fit in 32 bits (memcached's
/// `safe_strtol`, used for exptime and byte counts).
pub fn parse_i32(s: &[u8]) -> Option<i32> {
    parse_i64(s).and_then(|n| i32::try_from(n).ok())
}

/// Redis's `string2ll`: an optional `-`, then digits with no leading zero
/// (the lone `0` excepted), fitting an `i64`. `-0`, `+1`, `01` and the empty
/// string are all rejected.
pub fn parse_redis_i64(s: &[u8]) -> Option<i64> {
    let digits = match s {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => rest,
        _ => s,
    };
    match digits.first() {
        Some(b'1'..=b'9') => parse_i64(s),
        _ => None,
    }
}

/// Redis's reading of a float (`string2ld`): the whole string, no spaces
/// around it, not NaN; infinities are accepted.
pub fn parse_redis_f64(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let n: f64 = s.parse().ok()?;
    (!n.is_nan()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt_u64(n: u64) -> String {
        let mut v = Vec::new();
        write_u64(&mut v, n);
        String::from_utf8(v).unwrap()
    }

    fn fmt_i64(n: i64) -> String {
        let mut v = Vec::new();
        write_i64(&mut v, n);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn g17_matches_c_printf() {
        // What glibc's printf("%.17g") writes for each.
        for (v, want) in [
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (3.0, "3"),
            (100.0, "100"),
            (-0.0, "-0"),
            (1e20, "1e+20"),
            (1.2345e-5, "1.2345e-05"),
            (123_456_789_012_345_678.0, "1.2345678901234568e+17"),
            (1e16, "10000000000000000"),
            (0.0001, "0.0001"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e-300, "1e-300"),
            (0.0, "0"),
            (-123.0, "-123"),
            (99_999_999_999_999_984.0, "99999999999999984"),
            (1e17, "1e+17"),
            (-1e17, "-1e+17"),
            (9_007_199_254_740_993.0, "9007199254740992"),
            (1.5e300, "1.5000000000000001e+300"),
            (-1e-5, "-1.0000000000000001e-05"),
        ] {
            let mut out = Vec::new();
            write_g17(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v:e}");
        }
    }

    #[test]
    fn g17_of_integers_is_the_general_formatting() {
        // The integer fast path against the general one, for integers of every magnitude up
        // to and past its bound, both signs.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x >> (x % 64)) as f64 * if i % 2 == 0 { 1.0 } else { -1.0 };
            for v in [v, v.trunc() / 1e3, 1e17 - v.abs().min(1e17)] {
                let mut general = G17::default();
                g17_general(v, &mut general);
                assert_eq!(g17(v).as_bytes(), general.as_bytes(), "{v:e}");
            }
        }
    }

    #[test]
    fn formatting_matches_std() {
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            assert_eq!(fmt_u64(n), n.to_string());
        }
        for n in [0, -1, 1, -10, i64::MIN, i64::MIN + 1, i64::MAX] {
            assert_eq!(fmt_i64(n), n.to_string());
        }
    }

    #[test]
    fn unsigned_parsing_is_digits_only() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        for bad in [&b""[..], b"-1", b"+1", b" 1", b"1 ", b"1a", b"0x10"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
    }

    #[test]
    fn signed_parsing_takes_a_minus() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b"--1"), None);
        assert_eq!(parse_i32(b"-2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"2147483648"), None);
    }

    #[test]
    fn stored_counters_read_like_their_servers() {
        assert_eq!(parse_u64_padded(b"42"), Some(42));
        assert_eq!(parse_u64_padded(b"9 "), Some(9), "memcached pads shrunken counters");
        assert_eq!(parse_u64_padded(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64_padded(b"18446744073709551616"), None);
        for bad in [&b""[..], b" ", b"x1", b" 1", b"1 x", b"-1"] {
            assert_eq!(parse_u64_padded(bad), None, "{bad:?}");
        }
        assert_eq!(parse_redis_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_redis_f64(b"-3"), Some(-3.0));
        assert_eq!(parse_redis_f64(b"inf"), Some(f64::INFINITY));
        for bad in [&b""[..], b"nan", b" 1", b"1 ", b"1x"] {
            assert_eq!(parse_redis_f64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn digits_end_the_buffer() {
        let mut buf = [0u8; MAX_DIGITS];
        assert_eq!(u64_digits(120, &mut buf), b"120");
    }

    #[test]
    fn redis_integers_reject_leading_zeros() {
        assert_eq!(parse_redis_i64(b"0"), Some(0));
        assert_eq!(parse_redis_i64(b"-1"), Some(-1));
        assert_eq!(parse_redis_i64(b"123"), Some(123));
        assert_eq!(parse_redis_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"-0", b"01", b"+1", b"1.0", b"00"] {
            assert_eq!(parse_redis_i64(bad), None, "{bad:?}");
        }
    }
}
