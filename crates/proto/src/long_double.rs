//! The C `long double` of redis-server on x86-64, in safe Rust: what Redis's `INCRBYFLOAT` and
//! `HINCRBYFLOAT` compute with.
//!
//! Redis 7.0 reads both operands with `string2ld` (`util.c`), adds them in `long double` and
//! writes the sum with `ld2string(…, LD_STR_HUMAN)`. On x86-64 with gcc that type is the x87
//! 80-bit extended format: a sign, a 15-bit exponent and a 64-bit significand with an explicit
//! integer bit (normal numbers from 2^-16382, subnormals down to 2^-16445, the largest finite
//! number (2 − 2^-63)·2^16383 ≈ 1.18973149535723176502e+4932). A [`LongDouble`] is such a
//! number, finite or infinite, kept as `mantissa · 2^exponent`; it never holds a NaN.
//!
//! - [`LongDouble::parse`] is `string2ld`: glibc's `strtold` (decimal, `0x` hexadecimal with an
//!   optional binary exponent `p`, `inf`/`infinity` in any case, an optional sign; correctly
//!   rounded to nearest, ties to even) over the whole argument, refusing what `string2ld`
//!   refuses: an empty string or one of 5 KiB or more (`MAX_LONG_DOUBLE_CHARS`), a leading
//!   space, anything left unread, NaN, and a result that overflowed to infinity or underflowed
//!   to zero (`strtold`'s `ERANGE`); a subnormal result is accepted.
//! - [`LongDouble::checked_add`] is the x87 `+` (the exact sum rounded once, to nearest, ties to
//!   even; `x + (−x)` is `+0`), and `None` where Redis answers `increment would produce NaN or
//!   Infinity`.
//! - [`LongDouble::write`] is `ld2string` in `LD_STR_HUMAN` mode: glibc's `printf("%.17Lf")`
//!   (the exact binary value rounded to 17 decimals, ties to even; every digit of the integer
//!   part, up to 4933 of them), trailing zeros after the point removed, then the point if
//!   nothing follows it, and `-0` written `0`.
//!
//! Exactness comes from integer arithmetic. A sum needs none past `u128`: the larger operand's
//! significand is widened by 63 bits, the smaller one's aligned below it, and the bits shifted
//! out of it are kept as a sticky bit. Printing a number below 2^64 is one `u128` product and
//! shift; a larger number is an integer, printed through a small big integer (`Big`: a `Vec`
//! of 64-bit limbs). Parsing a decimal `D · 10^E` with a significand of at most 38 digits and
//! `|E| ≤ 20` (every increment a person types) also stays in `u128`; other ones go through
//! `Big`: `D · 5^E` rounded for `E ≥ 0`, else a 66–68-bit quotient of `D · 2^s / 5^-E` whose
//! remainder is the sticky bit. Every path ends in one rounding function. The results were
//! compared, during development, with gcc's `long double` and glibc's `strtold`/`printf` on
//! 160,000 random operand pairs (ties, subnormals, overflow, 5000-digit inputs, hexadecimal).
//!
//! Cost, measured in a release build on a shared 2-core development machine (`cargo test
//! --release -p fridge-proto long_double::tests::cost -- --ignored --nocapture`): one
//! `INCRBYFLOAT`'s arithmetic (parse the stored value and the increment, add, print) about
//! 0.3 µs for everyday numbers, with no allocation; a 5000-digit argument near the smallest
//! subnormal about 0.15 ms; incrementing the largest finite number, stored with its 4933
//! digits, about 0.6 ms (printing it dominates: 549 passes of a schoolbook division by 10^9).

use std::cmp::Ordering;

/// `string2ld` refuses an argument of this many bytes or more (Redis's `MAX_LONG_DOUBLE_CHARS`).
pub const MAX_CHARS: usize = 5 * 1024;

/// The exponent of the subnormals (and of the smallest normal numbers): `mantissa · 2^-16445`.
const MIN_EXP: i32 = -16445;
/// The exponent of the largest finite numbers: `(2^64 − 1) · 2^16320`.
const MAX_EXP: i32 = 16320;
/// The exponent that marks an infinity.
const INF_EXP: i32 = i32::MAX;
/// The integer bit of a normal significand.
const TOP: u64 = 1 << 63;

/// An x87 80-bit extended-precision number, finite or infinite (never NaN).
///
/// Its value is `(-1)^negative · mantissa · 2^exponent`. A finite one is normalized: a normal
/// number has the top bit of its mantissa set; a subnormal one, and zero, have the exponent
/// -16445 (`MIN_EXP`); so each value has one form and the derived equality is the numbers' (but
/// `+0 != -0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongDouble {
    negative: bool,
    exponent: i32,
    mantissa: u64,
}

impl LongDouble {
    /// `+0`.
    pub const ZERO: Self = Self { negative: false, exponent: MIN_EXP, mantissa: 0 };
    /// The largest finite number, (2 − 2^-63)·2^16383.
    pub const MAX: Self = Self { negative: false, exponent: MAX_EXP, mantissa: u64::MAX };
    /// `+inf`.
    pub const INFINITY: Self = Self { negative: false, exponent: INF_EXP, mantissa: 0 };

    fn zero(negative: bool) -> Self {
        Self { negative, ..Self::ZERO }
    }

    fn infinity(negative: bool) -> Self {
        Self { negative, ..Self::INFINITY }
    }

    /// `n`, exactly (a `long` converted to `long double`, as Redis reads an integer-encoded
    /// value).
    pub fn from_i64(n: i64) -> Self {
        round(n < 0, u128::from(n.unsigned_abs()), 0, false)
    }

    /// Whether the number is finite.
    pub fn is_finite(self) -> bool {
        self.exponent != INF_EXP
    }

    /// Whether the sign bit is set (`-0` included).
    pub fn is_sign_negative(self) -> bool {
        self.negative
    }

    /// The number as the x87 stores it: bit 79 the sign, bits 64..79 the biased exponent, bits
    /// 0..64 the significand with its explicit integer bit.
    pub fn to_bits(self) -> u128 {
        let sign = u128::from(self.negative) << 79;
        if !self.is_finite() {
            return sign | 0x7fff << 64 | u128::from(TOP);
        }
        let biased = if self.mantissa & TOP == 0 { 0 } else { self.exponent - MIN_EXP + 1 };
        // `biased` is 0..=32766: the cast keeps it.
        sign | u128::from(biased as u16) << 64 | u128::from(self.mantissa)
    }

    /// The number an x87 encoding holds; `None` for a NaN and for the encodings the x87 treats
    /// as invalid (an integer bit that disagrees with the exponent, except a pseudo-denormal,
    /// which reads as the normal number it equals).
    pub fn from_bits(bits: u128) -> Option<Self> {
        let negative = bits >> 79 & 1 == 1;
        // Masked to 15 bits and 64 bits: the casts keep every bit.
        let biased = (bits >> 64 & 0x7fff) as i32;
        let mantissa = bits as u64;
        match biased {
            0x7fff => (mantissa == TOP).then(|| Self::infinity(negative)),
            0 => Some(round(negative, u128::from(mantissa), i64::from(MIN_EXP), false)),
            _ if mantissa & TOP == 0 => None,
            _ => Some(Self { negative, exponent: biased + MIN_EXP - 1, mantissa }),
        }
    }

    /// Redis's `string2ld`: the whole of `s` as glibc's `strtold` reads it, or `None` where
    /// Redis answers `value is not a valid float` (see the module documentation). The result
    /// may be infinite (`inf`, `-Infinity`).
    pub fn parse(s: &[u8]) -> Option<Self> {
        if s.is_empty() || s.len() >= MAX_CHARS {
            return None;
        }
        let (negative, body) = match s {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(Self::infinity(negative));
        }
        match body {
            [b'0', b'x' | b'X', hex @ ..] => parse_hex(negative, hex),
            _ => parse_decimal(negative, body),
        }
    }

    /// `self + rhs` rounded as the x87 rounds it, or `None` if the sum is infinite or NaN (an
    /// infinite operand included): Redis's `increment would produce NaN or Infinity`.
    pub fn checked_add(self, rhs: Self) -> Option<Self> {
        if !self.is_finite() || !rhs.is_finite() {
            return None;
        }
        if rhs.mantissa == 0 {
            // x + 0 = x, and -0 + -0 = -0, +0 + -0 = +0.
            return Some(if self.mantissa == 0 && self.negative != rhs.negative {
                Self::ZERO
            } else {
                self
            });
        }
        if self.mantissa == 0 {
            return Some(rhs);
        }
        // `big` has the larger magnitude; normalization makes (exponent, mantissa) order it.
        let (big, small) = if (self.exponent, self.mantissa) >= (rhs.exponent, rhs.mantissa) {
            (self, rhs)
        } else {
            (rhs, self)
        };
        let a = u128::from(big.mantissa) << 63;
        let wide = u128::from(small.mantissa) << 63;
        // Both exponents are at least MIN_EXP and `big`'s the larger: `d` is 0..=32765.
        let d = big.exponent.abs_diff(small.exponent);
        let (b, sticky) =
            if d >= 127 { (0, true) } else { (wide >> d, wide & ((1u128 << d) - 1) != 0) };
        let exp = i64::from(big.exponent) - 63;
        let sum = if big.negative == small.negative {
            // Both below 2^127: no overflow.
            round(big.negative, a + b, exp, sticky)
        } else if sticky {
            // The exact difference lies strictly between a - b - 1 and a - b (and |big| >
            // |small| makes a > b).
            round(big.negative, a - b - 1, exp, true)
        } else if a == b {
            Self::ZERO
        } else {
            round(big.negative, a - b, exp, false)
        };
        sum.is_finite().then_some(sum)
    }

    /// Appends the number as Redis's `ld2string(…, LD_STR_HUMAN)` writes it (see the module
    /// documentation); an infinity is `inf` or `-inf`.
    pub fn write(self, out: &mut Vec<u8>) {
        if !self.is_finite() {
            out.extend_from_slice(if self.negative { b"-inf" } else { b"inf" });
            return;
        }
        if self.exponent >= 0 {
            // An integer of at least 2^63: every digit, no fraction.
            if self.negative {
                out.push(b'-');
            }
            let n = u128::from(self.mantissa);
            if self.exponent <= 64 {
                write_u128(out, n << self.exponent);
            } else {
                let mut big = Big::from_u128(n);
                big.shl(self.exponent.unsigned_abs());
                big.write_decimal(out);
            }
            return;
        }
        // Below 2^64: round |x| · 10^17 = mantissa · 10^17 / 2^k to an integer (at most 2^121).
        let x = u128::from(self.mantissa) * E17;
        let k = self.exponent.unsigned_abs();
        let n = if k >= 122 {
            // x < 2^121 ≤ half of 2^k: rounds to 0.
            0
        } else {
            let (q, r, half) = (x >> k, x & ((1u128 << k) - 1), 1u128 << (k - 1));
            q + u128::from(r > half || (r == half && q & 1 == 1))
        };
        if self.negative && n != 0 {
            out.push(b'-');
        }
        write_u128(out, n / E17);
        // Below 10^17: fits a u64.
        let frac = (n % E17) as u64;
        if frac != 0 {
            let mut digits = [b'0'; 17];
            let mut f = frac;
            for d in digits.iter_mut().rev() {
                // Below 10: the cast keeps it.
                *d = b'0' + (f % 10) as u8;
                f /= 10;
            }
            let len = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
            out.push(b'.');
            out.extend_from_slice(&digits[..len]);
        }
    }
}

/// 10^17, the scale of `%.17Lf`.
const E17: u128 = 100_000_000_000_000_000;

/// Appends the decimal digits of `n`.
fn write_u128(out: &mut Vec<u8>, mut n: u128) {
    if let Ok(small) = u64::try_from(n) {
        // Cheaper than 128-bit divisions.
        crate::number::write_u64(out, small);
        return;
    }
    let mut buf = [0u8; 39];
    let mut i = buf.len();
    loop {
        i -= 1;
        // Below 10: the cast keeps it.
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// The number nearest `(hi + δ) · 2^exp`, ties to even, where δ is 0 if `sticky` is false and
/// lies strictly between 0 and 1 if it is true: an infinity past the largest finite number,
/// subnormal below the smallest normal one. A true `sticky` needs `hi` to have at least 66
/// bits unless the result is subnormal, so that δ sits below the rounding bit.
fn round(negative: bool, hi: u128, exp: i64, sticky: bool) -> LongDouble {
    if hi == 0 {
        return LongDouble::zero(negative);
    }
    let len = i64::from(128 - hi.leading_zeros());
    // Keep 64 bits, or fewer where the exponent would go below the subnormals'.
    let shift = (len - 64).max(i64::from(MIN_EXP) - exp);
    if exp + shift > i64::from(MAX_EXP) {
        return LongDouble::infinity(negative);
    }
    let (mut q, mut e) = if shift <= 0 {
        debug_assert!(!sticky, "a sticky bit needs bits to round off");
        // Fewer than 64 bits shifted up: it fits.
        (hi << shift.unsigned_abs(), exp + shift)
    } else if shift >= 128 {
        // Only hi itself is below the rounding point: round up only past half of 2^128.
        let half = 1u128 << 127;
        (u128::from(shift == 128 && (hi > half || (hi == half && sticky))), exp + shift)
    } else {
        let s = shift.unsigned_abs();
        let (q, r, half) = (hi >> s, hi & ((1u128 << s) - 1), 1u128 << (s - 1));
        (q + u128::from(r > half || (r == half && (sticky || q & 1 == 1))), exp + shift)
    };
    if q == 1 << 64 {
        q = 1 << 63;
        e += 1;
    }
    if q == 0 {
        return LongDouble::zero(negative);
    }
    if e > i64::from(MAX_EXP) {
        return LongDouble::infinity(negative);
    }
    // q < 2^64 and MIN_EXP ≤ e ≤ MAX_EXP here: the casts keep them.
    LongDouble { negative, exponent: e as i32, mantissa: q as u64 }
}

/// The value of an ASCII hexadecimal digit.
fn hex_value(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).map(|d| d as u8)
}

/// Reads `[+-]?digits+` to the end of `s` (the exponent after `e` or `p`), saturating far
/// beyond any exponent that matters (the argument has fewer than [`MAX_CHARS`] digits).
fn parse_exponent(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().fold(0i64, |n, &d| (n * 10 + i64::from(d - b'0')).min(1 << 40));
    Some(if negative { -n } else { n })
}

/// Splits `digits[.digits][<exp>rest]` into the integer digits, the fraction digits and what
/// follows them; `None` if there is no digit.
fn split_mantissa(s: &[u8], is_digit: impl Fn(u8) -> bool) -> Option<(&[u8], &[u8], &[u8])> {
    let int_len = s.iter().position(|&c| !is_digit(c)).unwrap_or(s.len());
    let (int, rest) = s.split_at(int_len);
    let (frac, rest) = match rest {
        [b'.', after @ ..] => {
            let n = after.iter().position(|&c| !is_digit(c)).unwrap_or(after.len());
            after.split_at(n)
        }
        _ => (&[][..], rest),
    };
    (!int.is_empty() || !frac.is_empty()).then_some((int, frac, rest))
}

/// A decimal `strtold` reads: `digits[.digits][(e|E)[+-]digits]` with at least one digit.
fn parse_decimal(negative: bool, s: &[u8]) -> Option<LongDouble> {
    let (int, frac, rest) = split_mantissa(s, |c| c.is_ascii_digit())?;
    let exp = match rest {
        [] => 0,
        [b'e' | b'E', e @ ..] => parse_exponent(e)?,
        _ => return None,
    };
    // The significant digits: from the first nonzero one to the last.
    let all = || int.iter().chain(frac).copied();
    let total = int.len() + frac.len();
    let Some(lead) = all().position(|d| d != b'0') else {
        return Some(LongDouble::zero(negative));
    };
    let trail = all().rev().position(|d| d != b'0').unwrap_or(0);
    let n = total - lead - trail;
    // value = D · 10^e10 with D the n significant digits (all counts are below MAX_CHARS).
    let e10 = exp - frac.len() as i64 + trail as i64;
    let digits = all().skip(lead).take(n);
    let n = n as i64;
    if n - 1 + e10 > 4932 || n + e10 <= -4951 {
        // At least 10^4933, past the largest finite number, or below 10^-4951, less than half
        // the smallest subnormal (3.6e-4951): out of range.
        return None;
    }
    if n <= 38 {
        // Below 10^38 < 2^127.
        let d = digits.fold(0u128, |d, c| d * 10 + u128::from(c - b'0'));
        return in_range(
            small_decimal(negative, d, e10)
                .unwrap_or_else(|| big_decimal(negative, Big::from_u128(d), e10)),
        );
    }
    let mut d = Big::default();
    let mut chunk = 0u64;
    let mut len = 0;
    for c in digits {
        chunk = chunk * 10 + u64::from(c - b'0');
        len += 1;
        if len == 19 {
            d.mul_add(10u64.pow(19), chunk);
            (chunk, len) = (0, 0);
        }
    }
    if len > 0 {
        d.mul_add(10u64.pow(len), chunk);
    }
    in_range(big_decimal(negative, d, e10))
}

/// `strtold`'s `ERANGE`, which `string2ld` refuses: a nonzero input that rounded to infinity
/// or to zero (`None`).
fn in_range(x: LongDouble) -> Option<LongDouble> {
    (x.is_finite() && x.mantissa != 0).then_some(x)
}

/// `d · 10^e10` in `u128` arithmetic where it fits (`None` where it does not).
fn small_decimal(negative: bool, d: u128, e10: i64) -> Option<LongDouble> {
    if e10 >= 0 {
        let p = 10u128.checked_pow(u32::try_from(e10).ok()?)?;
        return Some(round(negative, d.checked_mul(p)?, 0, false));
    }
    let k = e10.unsigned_abs();
    if k > 20 {
        return None;
    }
    // d / 10^k = (d / 5^k) · 2^-k: a quotient of 66 to 68 bits from d · 2^s, which stays
    // below 2^(68 + 47) as 5^20 < 2^47.
    let f = 5u128.pow(k as u32);
    let s = 67 + i64::from(128 - f.leading_zeros()) - i64::from(128 - d.leading_zeros());
    let (num, lost) = if s >= 0 {
        (d << s, false)
    } else {
        let t = s.unsigned_abs();
        (d >> t, d & ((1 << t) - 1) != 0)
    };
    let (q, r) = (num / f, num % f);
    Some(round(negative, q, -(k as i64) - s, lost || r != 0))
}

/// `d · 10^e10`, exactly rounded through big integers.
fn big_decimal(negative: bool, mut d: Big, e10: i64) -> LongDouble {
    if e10 >= 0 {
        // e10 ≤ 4932 (checked by the caller).
        d.mul_pow5(e10.unsigned_abs() as u32);
        let (hi, shift, sticky) = d.top128();
        return round(negative, hi, i64::from(shift) + e10, sticky);
    }
    // d / 10^k = (d / 5^k) · 2^-k: a quotient of 66 to 68 bits and the remainder's sticky bit.
    let k = e10.unsigned_abs();
    let mut f = Big::from_u128(1);
    // k < 2 · MAX_CHARS + 4951 (checked by the caller).
    f.mul_pow5(k as u32);
    let s = 67 + i64::from(f.bit_len()) - i64::from(d.bit_len());
    let mut sticky = false;
    if s >= 0 {
        d.shl(s.unsigned_abs() as u32);
    } else {
        sticky = d.shr(s.unsigned_abs() as u32);
    }
    let q = d.div_rem(&f, 68);
    sticky |= !d.is_zero();
    round(negative, q, -(k as i64) - s, sticky)
}

/// A hexadecimal `strtold` reads after its `0x`: `hexdigits[.hexdigits][(p|P)[+-]digits]`
/// with at least one hex digit; the exponent is binary, written in decimal.
fn parse_hex(negative: bool, s: &[u8]) -> Option<LongDouble> {
    let (int, frac, rest) = split_mantissa(s, |c| c.is_ascii_hexdigit())?;
    let exp = match rest {
        [] => 0,
        [b'p' | b'P', e @ ..] => parse_exponent(e)?,
        _ => return None,
    };
    let mut digits = int.iter().chain(frac).filter_map(|&c| hex_value(c)).skip_while(|&d| d == 0);
    // The first 31 significant digits (at least 121 bits), the others only as a sticky bit.
    let mut hi = 0u128;
    let mut taken = 0;
    for d in digits.by_ref().take(31) {
        hi = hi << 4 | u128::from(d);
        taken += 1;
    }
    if taken == 0 {
        return Some(LongDouble::zero(negative));
    }
    let mut extra = 0i64;
    let mut sticky = false;
    for d in digits {
        extra += 1;
        sticky |= d != 0;
    }
    let e2 = exp + 4 * (extra - frac.len() as i64);
    in_range(round(negative, hi, e2, sticky))
}

/// A nonnegative big integer: little-endian 64-bit limbs, with no zero limb at the top.
#[derive(Debug, Clone, Default)]
struct Big(Vec<u64>);

impl Big {
    fn from_u128(n: u128) -> Self {
        // The low and high halves: the casts keep them.
        let mut b = Big(vec![n as u64, (n >> 64) as u64]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bit_len(&self) -> u32 {
        self.0.last().map_or(0, |top| {
            // At most 2^26 limbs: the product fits.
            (self.0.len() as u32 - 1) * 64 + (64 - top.leading_zeros())
        })
    }

    /// `self = self · m + a`.
    fn mul_add(&mut self, m: u64, a: u64) {
        let mut carry = a;
        for limb in &mut self.0 {
            let t = u128::from(*limb) * u128::from(m) + u128::from(carry);
            // The low and high halves: the casts keep them.
            *limb = t as u64;
            carry = (t >> 64) as u64;
        }
        if carry != 0 {
            self.0.push(carry);
        }
    }

    /// `self = self · 5^k`.
    fn mul_pow5(&mut self, mut k: u32) {
        // 5^27 < 2^63.
        while k > 0 {
            let step = k.min(27);
            self.mul_add(5u64.pow(step), 0);
            k -= step;
        }
    }

    /// `self = self · 2^n`.
    fn shl(&mut self, n: u32) {
        if self.is_zero() {
            return;
        }
        let (limbs, bits) = ((n / 64) as usize, n % 64);
        if bits != 0 {
            let mut carry = 0;
            for limb in &mut self.0 {
                let next = *limb >> (64 - bits);
                *limb = *limb << bits | carry;
                carry = next;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        self.0.splice(0..0, std::iter::repeat_n(0, limbs));
    }

    /// `self = self / 2^n` (floor); whether a nonzero bit was shifted out.
    fn shr(&mut self, n: u32) -> bool {
        let (limbs, bits) = ((n / 64) as usize, n % 64);
        if limbs >= self.0.len() {
            let lost = !self.is_zero();
            self.0.clear();
            return lost;
        }
        let mut lost = self.0.drain(..limbs).any(|l| l != 0);
        if bits != 0 {
            lost |= self.0[0] << (64 - bits) != 0;
            let mut carry = 0;
            for limb in self.0.iter_mut().rev() {
                let next = *limb << (64 - bits);
                *limb = *limb >> bits | carry;
                carry = next;
            }
        }
        self.trim();
        lost
    }

    /// `self -= rhs`, given `self ≥ rhs`.
    fn sub(&mut self, rhs: &Big) {
        let mut borrow = false;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let r = rhs.0.get(i).copied().unwrap_or(0);
            if i >= rhs.0.len() && !borrow {
                break;
            }
            let (t, b1) = limb.overflowing_sub(r);
            let (t, b2) = t.overflowing_sub(u64::from(borrow));
            *limb = t;
            borrow = b1 || b2;
        }
        self.trim();
    }

    fn cmp(&self, rhs: &Big) -> Ordering {
        self.0.len().cmp(&rhs.0.len()).then_with(|| self.0.iter().rev().cmp(rhs.0.iter().rev()))
    }

    /// The quotient `self / d`, given that it is below `2^bits` (`bits ≤ 128`); `self` becomes
    /// the remainder. Restoring division, one quotient bit per step.
    fn div_rem(&mut self, d: &Big, bits: u32) -> u128 {
        let mut g = d.clone();
        g.shl(bits - 1);
        let mut q = 0u128;
        for i in (0..bits).rev() {
            if self.cmp(&g) != Ordering::Less {
                self.sub(&g);
                q |= 1 << i;
            }
            g.shr(1);
        }
        q
    }

    /// The top 128 bits (all of them if fewer), how many bits lie below them, and whether any
    /// of those is set.
    fn top128(&self) -> (u128, u32, bool) {
        let len = self.bit_len();
        if len <= 128 {
            let lo = self.0.first().copied().unwrap_or(0);
            let hi = self.0.get(1).copied().unwrap_or(0);
            return (u128::from(hi) << 64 | u128::from(lo), 0, false);
        }
        let mut top = self.clone();
        let sticky = top.shr(len - 128);
        let (lo, hi) = (top.0[0], top.0.get(1).copied().unwrap_or(0));
        (u128::from(hi) << 64 | u128::from(lo), len - 128, sticky)
    }

    /// Appends the decimal digits of `self` (consuming its value): nine digits at a time, by
    /// dividing 32-bit halves of the limbs by 10^9 in 64-bit arithmetic (a division by a
    /// constant the compiler turns into a multiplication; 128-bit divisions are far slower).
    fn write_decimal(&mut self, out: &mut Vec<u8>) {
        const CHUNK: u64 = 1_000_000_000;
        let mut halves: Vec<u32> = Vec::with_capacity(self.0.len() * 2);
        for &limb in &self.0 {
            // The low and high halves: the casts keep them.
            halves.extend([limb as u32, (limb >> 32) as u32]);
        }
        let mut chunks = Vec::with_capacity(halves.len() * 32 / 29 + 1);
        while let Some(&top) = halves.last() {
            if top == 0 {
                halves.pop();
                continue;
            }
            let mut rem = 0u64;
            for half in halves.iter_mut().rev() {
                let t = rem << 32 | u64::from(*half);
                // rem < 10^9 < 2^32: t / 10^9 fits 32 bits.
                *half = (t / CHUNK) as u32;
                rem = t % CHUNK;
            }
            chunks.push(rem);
        }
        self.0.clear();
        let Some((first, rest)) = chunks.split_last() else {
            out.push(b'0');
            return;
        };
        crate::number::write_u64(out, *first);
        for &c in rest.iter().rev() {
            let mut digits = [b'0'; 9];
            let mut c = c;
            for d in digits.iter_mut().rev() {
                // Below 10: the cast keeps it.
                *d = b'0' + (c % 10) as u8;
                c /= 10;
            }
            out.extend_from_slice(&digits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(s: &str) -> LongDouble {
        LongDouble::parse(s.as_bytes()).unwrap_or_else(|| panic!("{s} should parse"))
    }

    fn show(x: LongDouble) -> String {
        let mut out = Vec::new();
        x.write(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn incr(a: &str, b: &str) -> Option<String> {
        ld(a).checked_add(ld(b)).map(show)
    }

    #[test]
    fn redis_examples() {
        // Each as redis-server 7.0.15 answers INCRBYFLOAT on x86-64.
        assert_eq!(incr("1.6", "1e10").unwrap(), "10000000001.59999999962747097");
        assert_eq!(incr("10.5", "0.1").unwrap(), "10.6");
        assert_eq!(incr("0", "3.814697265625e-6").unwrap(), "0.00000381469726562", "a tie");
        assert_eq!(incr("-0", "-0").unwrap(), "0");
        assert_eq!(incr("0", "-0.000000000000000001").unwrap(), "0");
        assert_eq!(incr("0", "0x1p3").unwrap(), "8");
        assert_eq!(incr("0", "0x1.8p1").unwrap(), "3");
        assert_eq!(incr("0", "1e-4940").unwrap(), "0");
        assert_eq!(incr("0", "+1.5").unwrap(), "1.5");
        assert_eq!(incr("0", "1.").unwrap(), "1");
        assert_eq!(incr("0", ".5").unwrap(), "0.5");
        assert_eq!(incr("0", "0e99999").unwrap(), "0");
        assert_eq!(incr("0", "2e-18").unwrap(), "0");
        let big = incr("0", "1e400").unwrap();
        assert!(
            big.starts_with("10000000000000000000281880683947586514586453433629052038625910693")
        );
        assert!(big.ends_with("6880") && big.len() == 401, "{big}");
        let max = incr("0", "1.18973149535723176502e+4932").unwrap();
        assert!(
            max.starts_with("11897314953572317650212638530309702051690633222946242004403237338917")
        );
        assert_eq!(max.len(), 4933);
        assert_eq!(incr("inf", "1"), None);
        assert_eq!(incr("0", "-inf"), None);
        assert_eq!(incr("1.18973149535723176502e+4932", "1e4932"), None);
    }

    #[test]
    fn refuses_what_string2ld_refuses() {
        for bad in [
            "",
            " 1",
            "1 ",
            "abc",
            "nan",
            "-nan",
            "NaN(1)",
            "1e",
            "1e+",
            "e5",
            ".",
            "-",
            "+",
            "0x",
            "0x.",
            "0xp1",
            "0x1p",
            "1e5000",
            "-1e5000",
            "1e-5000",
            "0x1p-20000",
            "0x1p16384",
            "infinit",
            "infinityx",
            "1.2.3",
            "1,5",
            "1\0",
            "--1",
            "+-1",
            "1_0",
            "1.18973149535723176509e+4932",
        ] {
            assert_eq!(LongDouble::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(LongDouble::parse(&[b'1'; MAX_CHARS]), None);
        assert!(LongDouble::parse(&[b'1'; MAX_CHARS - 1]).is_none(), "overflows");
        let mut long = vec![b'0'; MAX_CHARS - 1];
        long[MAX_CHARS - 2] = b'1';
        assert_eq!(LongDouble::parse(&long), Some(LongDouble::from_i64(1)));
        for inf in ["inf", "-INF", "Infinity", "+iNfInItY"] {
            assert!(!ld(inf).is_finite(), "{inf}");
        }
        assert!(ld("-0").is_sign_negative());
        assert_eq!(ld("0e-99999999999999999999999"), LongDouble::ZERO);
        assert_eq!(ld("0x0p99999"), LongDouble::ZERO);
    }

    #[test]
    fn limits() {
        let max = ld("1.18973149535723176502e+4932");
        assert_eq!(max, LongDouble::MAX);
        assert_eq!(max.to_bits(), 0x7ffe_ffff_ffff_ffff_ffff);
        // Just below the midpoint between MAX and 2^16384 still rounds to MAX.
        assert_eq!(ld("1.18973149535723176505e+4932"), LongDouble::MAX);
        let min_sub = ld("3.64519953188247460253e-4951");
        assert_eq!(min_sub.to_bits(), 1);
        assert_eq!(ld("0x1p-16445"), min_sub);
        // Half the smallest subnormal is a tie: to even, zero, which string2ld refuses; a
        // little more rounds up to it.
        assert_eq!(LongDouble::parse(b"0x1p-16446"), None);
        assert_eq!(ld("0x1.0000000000000000000000000001p-16446"), min_sub);
        assert_eq!(ld("1.9e-4951"), min_sub);
        assert_eq!(LongDouble::parse(b"1.8e-4951"), None);
        let min_normal = ld("0x1p-16382");
        assert_eq!(min_normal.to_bits(), 0x0001_8000_0000_0000_0000);
        assert_eq!(ld("3.36210314311209350626e-4932"), min_normal);
        // The largest subnormal plus the smallest makes the smallest normal, exactly.
        let max_sub = LongDouble::from_bits(u128::from(TOP - 1)).unwrap();
        assert_eq!(max_sub.checked_add(min_sub), Some(min_normal));
        assert_eq!(min_normal.checked_add(ld("-0x1p-16445")), Some(max_sub));
        assert_eq!(show(min_sub), "0");
        assert_eq!(show(ld("-0x1p-16445")), "0");
        assert_eq!(max.checked_add(ld("0x1p16319")), None, "overflows");
        assert_eq!(max.checked_add(ld("0x1p16318")), Some(max), "rounds back to MAX");
        assert_eq!(max.checked_add(ld("-1.18973149535723176502e+4932")), Some(LongDouble::ZERO));
    }

    #[test]
    fn rounding_ties_to_even() {
        // 2^64 + 1 needs 65 bits: a tie between 2^64 and 2^64 + 2, to the even 2^64.
        assert_eq!(ld("18446744073709551617"), ld("18446744073709551616"));
        assert_eq!(ld("18446744073709551619"), ld("18446744073709551620"));
        assert_eq!(show(ld("18446744073709551619")), "18446744073709551620");
        // Above the tie rounds up, whatever the number of digits.
        assert_eq!(
            ld("18446744073709551617.000000000000000000000000000001"),
            ld("18446744073709551618")
        );
        // The adder: 2^63 + 0.5 is a tie at 64 bits, to even 2^63; 2^63 + 1.5 to 2^63 + 2.
        let two63 = ld("9223372036854775808");
        assert_eq!(two63.checked_add(ld("0.5")), Some(two63));
        assert_eq!(show(two63.checked_add(ld("1.5")).unwrap()), "9223372036854775810");
        assert_eq!(show(two63.checked_add(ld("0.5000001")).unwrap()), "9223372036854775809");
        // Just below 2^64 the unit is 1: 2^64 − 0.25 is nearer 2^64.
        let two64 = ld("18446744073709551616");
        assert_eq!(two64.checked_add(ld("-0.25")), Some(two64));
        // From 2^64 the unit is 2: 2^64 + 1 is a tie, to the even 2^64; 2^64 + 3 to 2^64 + 4;
        // a bit above the tie rounds up, a bit below down, however far below it the bit is.
        assert_eq!(two64.checked_add(ld("1")), Some(two64));
        let plus2 = ld("18446744073709551618");
        assert_eq!(plus2.checked_add(ld("1")), Some(ld("18446744073709551620")));
        assert_eq!(two64.checked_add(ld("0x1.0000000000000002p0")), Some(plus2));
        assert_eq!(plus2.checked_add(ld("-0x1.0000000000000002p0")), Some(two64));
        assert_eq!(two64.checked_add(ld("0x1p-16000")), Some(two64));
        assert_eq!(plus2.checked_add(ld("-0x1p-16000")), Some(plus2));
        assert_eq!(two64.checked_add(ld("-0x1p-16000")), Some(two64));
        assert_eq!(ld("1").checked_add(ld("-1")), Some(LongDouble::ZERO));
        assert_eq!(ld("-1").checked_add(ld("1")), Some(LongDouble::ZERO));
        assert!(ld("-0").checked_add(ld("-0")).unwrap().is_sign_negative());
        assert!(!ld("-0").checked_add(ld("0")).unwrap().is_sign_negative());
    }

    #[test]
    fn formats_as_printf_17lf() {
        for (x, want) in [
            ("0.1", "0.1"),
            ("1e-17", "0.00000000000000001"),
            ("4.9e-18", "0"),
            // 5e-18 is a hair below 5e-18 in binary: rounds down.
            ("5e-18", "0"),
            ("5.1e-18", "0.00000000000000001"),
            ("-5.1e-18", "-0.00000000000000001"),
            ("-4e-18", "0"),
            ("0.99999999999999999999", "1"),
            ("-123.456", "-123.456"),
            ("1e20", "100000000000000000000"),
            ("123456789012345678901234567890", "123456789012345678899921813504"),
            ("18446744073709551615", "18446744073709551615"),
            ("0x1p64", "18446744073709551616"),
            ("0x1p65", "36893488147419103232"),
            ("0x1p200", "1606938044258990275541962092341162602522202993782792835301376"),
            ("3.0", "3"),
            ("1e-5", "0.00001"),
        ] {
            assert_eq!(show(ld(x)), want, "{x}");
        }
        assert_eq!(show(LongDouble::INFINITY), "inf");
    }

    #[test]
    fn bits_round_trip() {
        for s in ["0", "-0", "1", "-2.5", "1e-4940", "1e4000", "0.1", "inf", "-inf"] {
            let x = ld(s);
            assert_eq!(LongDouble::from_bits(x.to_bits()), Some(x), "{s}");
        }
        assert_eq!(ld("1").to_bits(), 0x3fff_8000_0000_0000_0000);
        assert_eq!(ld("-2").to_bits(), 0xc000_8000_0000_0000_0000);
        // 0.1 as gcc's 0.1L.
        assert_eq!(ld("0.1").to_bits(), 0x3ffb_cccc_cccc_cccc_cccd);
        assert_eq!(LongDouble::from_bits(0x7fff_c000_0000_0000_0000), None, "NaN");
        assert_eq!(LongDouble::from_bits(0x3fff_0000_0000_0000_0001), None, "unnormal");
    }

    /// A small deterministic generator (xorshift), for the differential tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn fast_and_big_paths_agree() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let d = (u128::from(rng.next()) << 64 | u128::from(rng.next())) >> rng.below(128);
            let d = d % 10u128.pow(38);
            let e10 = rng.below(60) as i64 - 30;
            let fast = small_decimal(false, d, e10);
            let slow = big_decimal(false, Big::from_u128(d), e10);
            if let Some(fast) = fast {
                assert_eq!(fast, slow, "{d}e{e10}");
            }
        }
    }

    #[test]
    fn parse_format_round_trips() {
        // 17 significant digits do not always identify a long double, but the printed form of
        // a number with few fraction digits reads back as the same number once it is rounded
        // as printed: print, parse, print is stable.
        let mut rng = Rng(42);
        for _ in 0..5_000 {
            let m = rng.next() | TOP;
            let e = rng.below(200) as i32 - 140;
            let x = LongDouble { negative: rng.below(2) == 1, exponent: e, mantissa: m };
            let once = show(x);
            let Some(back) = LongDouble::parse(once.as_bytes()) else {
                assert_eq!(once, "0");
                continue;
            };
            assert_eq!(show(back), once, "{x:?}");
            if e >= -11 {
                // At most 11 fraction bits: %.17Lf is exact, so the number reads back.
                assert_eq!(back, x, "{once}");
            }
        }
    }

    #[test]
    fn big_integers() {
        let mut b = Big::from_u128(1);
        b.shl(200);
        assert_eq!(b.bit_len(), 201);
        let mut out = Vec::new();
        b.clone().write_decimal(&mut out);
        assert_eq!(out, b"1606938044258990275541962092341162602522202993782792835301376");
        assert!(!b.clone().shr(200));
        let mut c = b.clone();
        c.mul_add(1, 1);
        assert!(c.shr(200));
        assert_eq!(c.0, vec![1]);
        let mut n = Big::from_u128(1);
        n.mul_pow5(100);
        let f = n.clone();
        n.shl(60);
        n.mul_add(1, 12345);
        assert_eq!(n.div_rem(&f, 68), 1 << 60);
        assert_eq!(n.0, vec![12345]);
    }

    /// `cargo test --release -p fridge-proto long_double -- --ignored --nocapture`: the cost
    /// of one INCRBYFLOAT's arithmetic (parse the stored value and the increment, add, print)
    /// and of a worst-case argument.
    #[test]
    #[ignore = "a timing, for the module documentation"]
    fn cost() {
        use std::hint::black_box;
        use std::time::Instant;
        let mut out = Vec::with_capacity(64);
        let rounds = 1_000_000;
        for (a, b) in [(&b"10.5"[..], &b"0.1"[..]), (b"10000000001.59999999962747097", b"-2.5e3")] {
            let t = Instant::now();
            for _ in 0..rounds {
                out.clear();
                let a = LongDouble::parse(black_box(a)).unwrap();
                let b = LongDouble::parse(black_box(b)).unwrap();
                a.checked_add(b).unwrap().write(&mut out);
            }
            println!(
                "INCRBYFLOAT arithmetic, {}: {:?} each",
                String::from_utf8_lossy(&out),
                t.elapsed() / rounds
            );
        }
        let mut worst = b"3.".to_vec();
        worst.extend(std::iter::repeat_n(b'7', 4990));
        worst.extend_from_slice(b"e-4951");
        let t = Instant::now();
        for _ in 0..20 {
            black_box(LongDouble::parse(black_box(&worst)));
        }
        println!("5000-digit subnormal: {:?} each", t.elapsed() / 20);
        // The largest value there is, stored with all its 4933 digits, incremented.
        let mut max = Vec::new();
        LongDouble::MAX.write(&mut max);
        let t = Instant::now();
        for _ in 0..100 {
            out.clear();
            let a = LongDouble::parse(black_box(&max)).unwrap();
            a.checked_add(LongDouble::from_i64(-1)).unwrap().write(&mut out);
        }
        println!("INCRBYFLOAT of the largest number: {:?} each", t.elapsed() / 100);
    }
}
