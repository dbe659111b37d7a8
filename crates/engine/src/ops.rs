//! The vocabulary of operations: what a store asks for ([`Store`], [`Expiry`],
//! [`Condition`]), what it did ([`StoreOutcome`]), what a read sees ([`Item`]), what an update
//! closure sees and decides ([`Current`], [`Update`]), and how counters are read and written
//! (memcached's and Redis's rules).

use crate::tenant::TenantId;

/// An item as a read sees it. Borrowed from the engine's memory for the duration of the
/// callback that receives it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry (ms since the Unix epoch), `None` for never.
    pub expires_at_ms: Option<u64>,
    /// CAS value (0 unless asked for).
    pub cas: u64,
}

/// When a stored item expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Never.
    Never,
    /// At this absolute time, ms since the Unix epoch.
    At(u64),
    /// Keep the existing item's expiry (none if there is no item).
    Keep,
}

/// The condition a store is subject to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Always store.
    Always,
    /// Only if the key has no live item (memcached `add`, Redis `NX`).
    IfAbsent,
    /// Only if the key has a live item (memcached `replace`, Redis `XX`).
    IfPresent,
    /// Only if the item's CAS value is this one (memcached `cas`).
    IfCas(u64),
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    /// The item was stored.
    Stored,
    /// The condition (absent / present) did not hold.
    NotStored,
    /// `IfCas`: the item exists with another CAS value.
    Exists,
    /// `IfCas`: there is no item.
    NotFound,
}

/// A store request.
#[derive(Debug, Clone, Copy)]
pub struct Store<'a> {
    /// Owning tenant.
    pub tenant: TenantId,
    /// Key.
    pub key: &'a [u8],
    /// Value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Expiry.
    pub expiry: Expiry,
    /// Condition.
    pub condition: Condition,
}

impl<'a> Store<'a> {
    /// An unconditional store with no flags and no expiry.
    pub fn new(tenant: TenantId, key: &'a [u8], value: &'a [u8]) -> Self {
        Store { tenant, key, value, flags: 0, expiry: Expiry::Never, condition: Condition::Always }
    }
}

/// The current item, as seen by an [`Worker::update`] closure.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry.
    pub expires_at_ms: Option<u64>,
    /// CAS value. The update is published only if the item is still this one, so a closure
    /// that compares this CAS acts atomically (memcached `md`/`ma` with `C`).
    pub cas: u64,
}

/// What an [`Worker::update`] closure decided.
#[derive(Debug)]
pub enum Update<R> {
    /// Write the value the closure put in the buffer, with these flags and expiry.
    Write {
        /// Client flags.
        flags: u32,
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// What the update returns once published.
        result: R,
    },
    /// Delete the item, then return the result.
    Delete(R),
    /// Change nothing and return this.
    Done(R),
}

/// memcached's reading of a counter: decimal digits, optionally followed by spaces (memcached
/// pads a shrunken counter with spaces in place).
pub(crate) fn parse_u64_lenient(v: &[u8]) -> Option<u64> {
    let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || v[digits..].iter().any(|&b| b != b' ') {
        return None;
    }
    std::str::from_utf8(&v[..digits]).ok()?.parse().ok()
}

/// Redis's reading of an integer: an optional '-', then digits without leading zeros, at most
/// 20 bytes, fitting i64.
pub(crate) fn parse_i64_strict(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
        || v == b"-0"
    {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

pub(crate) fn parse_f64(v: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(v).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let n: f64 = s.parse().ok()?;
    n.is_finite().then_some(n)
}

pub(crate) fn write_decimal(buf: &mut Vec<u8>, n: i128) {
    let mut digits = [0u8; 40];
    let mut i = digits.len();
    let negative = n < 0;
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if negative {
        buf.push(b'-');
    }
    buf.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_like_their_servers() {
        assert_eq!(parse_u64_lenient(b"42"), Some(42));
        assert_eq!(parse_u64_lenient(b"9 "), Some(9), "memcached pads shrunken counters");
        assert_eq!(parse_u64_lenient(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64_lenient(b"18446744073709551616"), None);
        assert_eq!(parse_u64_lenient(b"x1"), None);
        assert_eq!(parse_u64_lenient(b""), None);
        assert_eq!(parse_i64_strict(b"-5"), Some(-5));
        assert_eq!(parse_i64_strict(b"007"), None, "Redis rejects leading zeros");
        assert_eq!(parse_i64_strict(b" 1"), None);
        assert_eq!(parse_i64_strict(b"9223372036854775808"), None);
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"nan"), None);
        let mut b = Vec::new();
        write_decimal(&mut b, -120);
        assert_eq!(b, b"-120");
    }
}
