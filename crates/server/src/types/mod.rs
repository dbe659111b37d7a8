//! Redis's value types beyond strings, as the engine stores them: each type is an engine
//! [`Kind`], and a value of that kind is one item in the log holding the whole collection in
//! a packed form ([`pack`], Redis's listpack idea: elements one after another in one piece of
//! memory, no pointers). The engine evicts, expires, relocates and accounts such an item as
//! it does a string; an operation meant for one type never reads or overwrites another
//! (`EngineError::WrongKind`, Redis's `WRONGTYPE`).
//!
//! An update of a collection reads the packed value and writes a new one (the engine's
//! read-modify-write): it costs time and log space in proportion to the collection's size
//! (`docs/design.md`, "Value types").

pub(crate) mod encoded;
pub(crate) mod hash;
pub(crate) mod hll;
pub(crate) mod index;
pub(crate) mod pack;

use fridge_engine::Kind;

/// A Redis hash (`hash::Hash`).
pub(crate) const HASH: Kind = Kind(1);
/// A Redis list: packed as a hash whose values are empty, its elements in list order.
pub(crate) const LIST: Kind = Kind(2);
/// A Redis sorted set: packed as a hash of members and their scores
/// (`resp::zsets::PackedScore`), in the order of (score, member).
pub(crate) const ZSET: Kind = Kind(4);
/// A Redis set: packed as a hash whose values are empty (one byte more per member than the
/// members alone), so that sets share the hash's code.
pub(crate) const SET: Kind = Kind(3);

/// The name `TYPE` gives a kind (Redis's `type` names; `none` is a missing key's).
pub(crate) fn name(kind: Kind) -> &'static [u8] {
    match kind {
        Kind::STRING => b"string",
        HASH => b"hash",
        LIST => b"list",
        SET => b"set",
        ZSET => b"zset",
        // A kind this server never writes (a newer version's): no type Redis knows.
        _ => b"unknown",
    }
}

/// The kind a `TYPE` name stands for (`SCAN … TYPE`), any case.
pub(crate) fn by_name(name: &[u8]) -> Option<Kind> {
    [Kind::STRING, HASH, LIST, SET, ZSET]
        .into_iter()
        .find(|&k| self::name(k).eq_ignore_ascii_case(name))
}

/// A xorshift64 generator from `seed` (not zero), for the randomized no-panic tests of the
/// parsers of client bytes (packed values, RDB payloads, HTTP request lines).
#[cfg(test)]
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A copy of `valid` (not empty) with one to four of its bytes overwritten, at places and
/// with values drawn from `next`: a damaged value for the no-panic tests of its readers.
#[cfg(test)]
pub(crate) fn damaged(valid: &[u8], next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut v = valid.to_vec();
    for _ in 0..1 + next() % 4 {
        let at = (next() % v.len() as u64) as usize;
        v[at] = next() as u8;
    }
    v
}
