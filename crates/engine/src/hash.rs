//! The one hash per request.
//!
//! Every key is hashed once, with its tenant, into 64 bits (xxh3). The bits are shared out:
//!
//! ```text
//! │ 63 ........ 48 │ 47 ............................ 0 │
//! │   index tag    │ bucket choice (low bits), digests │
//! ```
//!
//! The tenant id is the hash seed, so equal keys of two tenants land in unrelated buckets; the
//! key comparison also checks the tenant, so they are different items even if hashes collide.

use crate::tenant::TenantId;

/// Hashes `key` as seen by `tenant`.
#[inline]
pub fn key_hash(tenant: TenantId, key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(tenant.0))
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
