//! A hasher for `u64` keys.
//!
//! Trace keys are already 64-bit ids, often sequential or hashed. `std`'s SipHash is
//! needlessly slow for them, and a bare multiply leaves the low bits (which choose the
//! hashbrown bucket) poorly mixed for keys that share low bits, so we use the splitmix64
//! finalizer: two multiplies and three xor-shifts, a full avalanche of all 64 bits.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by trace keys.
pub(crate) type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// Hashes one `u64` with the splitmix64 finalizer. Other input is folded in first, so the
/// hasher stays correct (if slower) for any key type.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher {
    state: u64,
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = self.state.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.state ^= n;
    }

    fn finish(&self) -> u64 {
        mix64(self.state)
    }
}

/// The splitmix64 output function (Steele, Lea, Flood 2014).
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A tiny deterministic random number generator (splitmix64), for the policies that sample.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// A number in `0..n` (`n > 0`), by Lemire's multiply-shift; the bias is below `n / 2^64`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}
