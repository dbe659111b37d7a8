//! The one hash per request.
//!
//! Every key is hashed once, with its tenant, into 64 bits (xxh3). The bits are shared out:
//!
//! ```text
//! │ 63 ........ 48 │ 47 ............................ 0 │
//! │   index tag    │ bucket choice (low bits), digests │
//! ```
//!
//! The tenant id and the database (Redis `SELECT`) are the hash seed, so equal keys of two
//! tenants or two databases land in unrelated buckets; the key comparison also checks both, so
//! they are different items even if hashes collide. Database 0 adds nothing to the seed: its
//! hash is the tenant's alone.

use crate::tenant::TenantId;

/// Hashes `key` as seen by `tenant` in database 0.
#[inline]
pub fn key_hash(tenant: TenantId, key: &[u8]) -> u64 {
    key_hash_in(tenant, 0, key)
}

/// Hashes `key` as seen by `tenant` in database `db`.
#[inline]
pub fn key_hash_in(tenant: TenantId, db: u8, key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(tenant.0) | u64::from(db) << 16)
}

/// The 16-bit tag stored in index slots: the hash bits that do not choose the bucket.
#[inline]
pub const fn tag_of(hash: u64) -> u16 {
    (hash >> 48) as u16
}

/// The 4-byte digest appended to reference pools (eviction metadata).
#[inline]
pub const fn digest_of(hash: u64) -> u32 {
    (hash >> 16) as u32
}
