//! Tenant passwords, stored as `<salt hex>$<sha256(salt ‖ password) hex>` (`fridge
//! hash-password` prints the line) and compared in constant time.

use std::fmt;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Bytes of salt `fridge hash-password` draws.
const SALT_LEN: usize = 16;

/// A salted SHA-256 password hash: `sha256(salt ‖ password)`.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    salt: Vec<u8>,
    digest: [u8; 32],
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

impl PasswordHash {
    /// Hashes `password` with `salt`.
    pub fn new(salt: &[u8], password: &[u8]) -> PasswordHash {
        PasswordHash { salt: salt.to_vec(), digest: digest(salt, password) }
    }

    /// Hashes `password` with a fresh random salt (from the operating system).
    pub fn generate(password: &[u8]) -> std::io::Result<PasswordHash> {
        let mut salt = [0u8; SALT_LEN];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut salt)?;
        Ok(PasswordHash::new(&salt, password))
    }

    /// Whether `password` is the one hashed, in time independent of where it differs.
    pub fn verify(&self, password: &[u8]) -> bool {
        constant_time_eq(&digest(&self.salt, password), &self.digest)
    }
}

fn digest(salt: &[u8], password: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(password);
    h.finalize().into()
}

/// Compares two equally long byte strings without an early exit.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the compiler from turning the fold back into a short-circuit compare.
    std::hint::black_box(diff) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

impl fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}${}", hex(&self.salt), hex(&self.digest))
    }
}

impl std::str::FromStr for PasswordHash {
    type Err = String;
    fn from_str(s: &str) -> Result<PasswordHash, String> {
        let bad = || "bad password_sha256: expected \"<salt hex>$<64 hex digits>\"".to_string();
        let (salt, digest) = s.split_once('$').ok_or_else(bad)?;
        let salt = unhex(salt).ok_or_else(bad)?;
        let digest: [u8; 32] = unhex(digest).and_then(|d| d.try_into().ok()).ok_or_else(bad)?;
        Ok(PasswordHash { salt, digest })
    }
}

impl<'de> Deserialize<'de> for PasswordHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_hashes_round_trip_and_verify() {
        let h = PasswordHash::new(b"salt", b"secret");
        let text = h.to_string();
        assert_eq!(text.split_once('$').unwrap().0, "73616c74");
        let back: PasswordHash = text.parse().unwrap();
        assert!(back.verify(b"secret"));
        assert!(!back.verify(b"secreT"));
        assert!(!back.verify(b""));
        assert!("nodollar".parse::<PasswordHash>().is_err());
        assert!("00$abcd".parse::<PasswordHash>().is_err(), "a digest is 32 bytes");
        let g = PasswordHash::generate(b"pw").unwrap();
        assert!(g.verify(b"pw"));
        assert_ne!(g.to_string(), PasswordHash::generate(b"pw").unwrap().to_string());
    }
}
