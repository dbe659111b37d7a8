//! Self-checking values: what a SET stores and what `--verify` checks every GET reply against.
//!
//! Every value the load generator writes can be checked on its own, without remembering what
//! was written: it names its key and its length and carries a checksum.
//!
//! ```text
//!  value of 16 bytes or more:
//!  ┌────────────┬──────────┬──────────────┬──────────────────────────────────┐
//!  │ key id     │ length   │ checksum     │ payload (length − 16 bytes)       │
//!  │ u64 LE     │ u32 LE   │ u32 LE       │ a slice of a random pool          │
//!  └────────────┴──────────┴──────────────┴──────────────────────────────────┘
//!  value of 0..16 bytes: byte i = low byte of mix64(key id + i · φ), all of it checked.
//! ```
//!
//! The checksum covers the key id, the length and the payload, so a reply that carries another
//! key's value, a truncated or padded value, or flipped bytes all fail [`check`]. A stale value
//! of the *same* key passes: a cache may legitimately return any value that was set for a key.
//!
//! Costs: [`fill`] copies the value into the caller's buffer and hashes the payload once
//! (four independent multiply lanes, several GB/s); [`check`] hashes it once more.

use fridge_workload::mix64;

/// Bytes of the header of a long value.
pub const HEADER_LEN: usize = 16;

const KEY_SHIFT: usize = 0;
const LEN_SHIFT: usize = 8;
const SUM_SHIFT: usize = 12;

/// Payload offsets into the pool are `mix64(key) % POOL_SPREAD`, so neighbouring keys get
/// different bytes.
const POOL_SPREAD: usize = 4096;

/// Golden-ratio increment that spreads the bytes of short values.
const PHI: u64 = 0x9E37_79B9_7F4A_7C15;

/// Random bytes that payloads are cut from: one per run, shared read-only by every thread.
#[derive(Debug)]
pub struct Pool {
    bytes: Vec<u8>,
}

impl Pool {
    /// A pool able to supply payloads of values up to `max_value_len` bytes.
    pub fn new(max_value_len: usize, seed: u64) -> Self {
        let len = max_value_len + POOL_SPREAD + 8;
        let mut bytes = Vec::with_capacity(len.next_multiple_of(8));
        let mut state = seed;
        while bytes.len() < len {
            state = state.wrapping_add(PHI);
            bytes.extend_from_slice(&mix64(state).to_le_bytes());
        }
        Self { bytes }
    }

    /// Largest value this pool can fill.
    pub fn max_value_len(&self) -> usize {
        self.bytes.len() - POOL_SPREAD - 8
    }

    fn payload(&self, key: u64, len: usize) -> &[u8] {
        let start = (mix64(key) % POOL_SPREAD as u64) as usize;
        &self.bytes[start..start + len]
    }
}

/// Why a value failed [`check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The header names another key.
    WrongKey {
        /// Key id found in the header.
        found: u64,
    },
    /// The header's length differs from the bytes received.
    WrongLength {
        /// Length written in the header.
        declared: u32,
    },
    /// Header fields agree but the checksum does not: corrupted bytes.
    BadChecksum,
    /// A short value whose bytes are not the key's pattern.
    BadShortValue,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WrongKey { found } => write!(f, "value belongs to key id {found}"),
            Self::WrongLength { declared } => write!(f, "value says it is {declared} bytes long"),
            Self::BadChecksum => f.write_str("checksum mismatch"),
            Self::BadShortValue => f.write_str("short value does not match its key"),
        }
    }
}

fn short_byte(key: u64, i: usize) -> u8 {
    mix64(key.wrapping_add((i as u64 + 1).wrapping_mul(PHI))) as u8
}

/// Checksum of a long value: key, length and payload, folded in four lanes of 8 bytes.
fn checksum(key: u64, len: u32, payload: &[u8]) -> u32 {
    const K: u64 = 0xFF51_AFD7_ED55_8CCD;
    let mut lanes = [mix64(key), mix64(u64::from(len) ^ PHI), K, PHI];
    let mut blocks = payload.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            *lane = (*lane ^ w).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut tail = 0u64;
    for (i, &b) in blocks.remainder().iter().enumerate() {
        tail = tail.rotate_left(8) ^ u64::from(b) ^ ((i as u64) << 56);
    }
    let h = lanes.iter().fold(mix64(tail), |h, &l| mix64(h ^ l));
    (h ^ (h >> 32)) as u32
}

/// Appends the value of `key` with `len` bytes to `out`.
///
/// # Panics
/// If `len` exceeds [`Pool::max_value_len`] (the run sizes the pool from its largest value).
pub fn fill(out: &mut Vec<u8>, pool: &Pool, key: u64, len: usize) {
    if len < HEADER_LEN {
        out.extend((0..len).map(|i| short_byte(key, i)));
        return;
    }
    let payload = pool.payload(key, len - HEADER_LEN);
    let len32 = u32::try_from(len).unwrap_or(u32::MAX);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&len32.to_le_bytes());
    out.extend_from_slice(&checksum(key, len32, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn field<const N: usize>(value: &[u8], at: usize) -> [u8; N] {
    value[at..at + N].try_into().unwrap_or([0; N])
}

/// Checks that `value` is a value [`fill`] wrote for `key` (with any length).
///
/// # Errors
/// The first [`Mismatch`] found.
pub fn check(key: u64, value: &[u8]) -> Result<(), Mismatch> {
    if value.len() < HEADER_LEN {
        return match value.iter().enumerate().all(|(i, &b)| b == short_byte(key, i)) {
            true => Ok(()),
            false => Err(Mismatch::BadShortValue),
        };
    }
    let found = u64::from_le_bytes(field(value, KEY_SHIFT));
    if found != key {
        return Err(Mismatch::WrongKey { found });
    }
    let declared = u32::from_le_bytes(field(value, LEN_SHIFT));
    if usize::try_from(declared).ok() != Some(value.len()) {
        return Err(Mismatch::WrongLength { declared });
    }
    let sum = u32::from_le_bytes(field(value, SUM_SHIFT));
    if sum != checksum(key, declared, &value[HEADER_LEN..]) {
        return Err(Mismatch::BadChecksum);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(pool: &Pool, key: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::new();
        fill(&mut v, pool, key, len);
        assert_eq!(v.len(), len);
        v
    }

    #[test]
    fn values_check_for_their_own_key_only() {
        let pool = Pool::new(100_000, 7);
        for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 300, 4096, 100_000] {
            for key in [0, 1, 42, u64::MAX] {
                let v = value(&pool, key, len);
                assert_eq!(check(key, &v), Ok(()), "key {key} len {len}");
                if len > 0 {
                    assert!(check(key ^ 1, &v).is_err(), "another key's value, len {len}");
                }
            }
        }
    }

    #[test]
    fn corruption_truncation_and_padding_are_caught() {
        let pool = Pool::new(1000, 7);
        let v = value(&pool, 9, 1000);
        for at in [0, 8, 12, 16, 500, 999] {
            let mut bad = v.clone();
            bad[at] ^= 0x20;
            assert!(check(9, &bad).is_err(), "flip at {at}");
        }
        assert_eq!(check(9, &v[..999]), Err(Mismatch::WrongLength { declared: 1000 }));
        let mut long = v.clone();
        long.push(0);
        assert!(check(9, &long).is_err());
        let mut short = value(&pool, 9, 8);
        short[3] ^= 1;
        assert_eq!(check(9, &short), Err(Mismatch::BadShortValue));
    }
}
