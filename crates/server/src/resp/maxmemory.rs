//! `CONFIG GET`/`SET` of `maxmemory` and `maxmemory-policy`
//! (<https://redis.io/docs/reference/eviction/>), on what fridge has: the engine's memory
//! limit, which moves at run time within the memory mapped at start (as memcached's
//! `cache_memlimit`, see `crate::memlimit`), and each tenant's rank function.
//!
//! `maxmemory` takes Redis's memory values (`100mb`, `1gb`, `12345`; `k`/`m`/`g` are powers
//! of 1000, `kb`/`mb`/`gb` of 1024); 0, "no limit" in Redis, is all the memory mapped at start.
//! A limit outside what the engine can do is refused, never answered `OK`.
//!
//! `maxmemory-policy` maps Redis's policies to rank functions: `allkeys-lru` is `lru`
//! (recency), `allkeys-lfu` is `lfu` (frequency); fridge's own `hitmap` (the default), `slru` and `gdsf`
//! are taken by those names. Every key of a cache may be evicted, so the `volatile-*` policies,
//! `allkeys-random` and `noeviction` are refused. `CONFIG GET` and `INFO` show the asking
//! tenant's; `CONFIG SET` sets every tenant's (until the tenants file is read again).

use std::io::Write as _;

use fridge_engine::{LimitError, RankKind, TenantId};

use crate::memlimit::{POLICIES, policy_name};

use crate::session::Ctx;

/// `tenant`'s `maxmemory-policy`.
pub(super) fn policy(ctx: &Ctx<'_>, tenant: TenantId) -> &'static str {
    policy_name(ctx.shared.engine.tenant_policy(tenant).rank)
}

/// The rank function `value` names; otherwise writes `CONFIG SET`'s error.
pub(super) fn parse_policy(out: &mut Vec<u8>, value: &[u8]) -> Option<RankKind> {
    let found = POLICIES.iter().find(|(n, _)| value.eq_ignore_ascii_case(n.as_bytes()));
    if found.is_none() {
        out.extend_from_slice(
            b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - \
              argument(s) must be one of the following: allkeys-lru, allkeys-lfu, hitmap, slru, gdsf\r\n",
        );
    }
    found.map(|(_, r)| *r)
}

/// Sets every tenant's rank function.
pub(super) fn set_policy(ctx: &Ctx<'_>, rank: RankKind) {
    let engine = &ctx.shared.engine;
    for (id, _) in ctx.tenants.iter() {
        let mut p = engine.tenant_policy(id);
        p.rank = rank;
        engine.set_tenant_policy(id, p);
    }
}

/// Redis's `memtoull`: a byte count with an optional unit; `None` for anything else.
fn parse_memory(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?.to_ascii_lowercase();
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit: u64 = match &text[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// The byte limit `value` names, checked by parsing only; otherwise writes the error.
pub(super) fn parse_maxmemory(out: &mut Vec<u8>, value: &[u8]) -> Option<u64> {
    let n = parse_memory(value);
    if n.is_none() {
        out.extend_from_slice(
            b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument \
              must be a memory value\r\n",
        );
    }
    n
}

/// Moves the engine's memory limit to `bytes` (0: all the memory mapped at start); on
/// failure writes the error and answers false.
pub(super) fn set_maxmemory(out: &mut Vec<u8>, ctx: &Ctx<'_>, bytes: u64) -> bool {
    let engine = &ctx.shared.engine;
    let mapped = engine.stats().max_memory;
    let bytes = if bytes == 0 { mapped } else { usize::try_from(bytes).unwrap_or(usize::MAX) };
    match engine.set_memory_limit(bytes) {
        Ok(()) => true,
        Err(e) => {
            out.extend_from_slice(
                b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - ",
            );
            let _ = match e {
                LimitError::AboveMapped { mapped } => write!(
                    out,
                    "fridge can use at most {mapped} bytes (the memory mapped at start)\r\n"
                ),
                LimitError::TooSmall { min } => {
                    write!(out, "fridge needs at least {min} bytes\r\n")
                }
            };
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_memory;

    #[test]
    fn memory_values_are_read_as_redis_reads_them() {
        assert_eq!(parse_memory(b"12345"), Some(12345));
        assert_eq!(parse_memory(b"100mb"), Some(100 << 20));
        assert_eq!(parse_memory(b"1GB"), Some(1 << 30));
        assert_eq!(parse_memory(b"2k"), Some(2000));
        assert_eq!(parse_memory(b"abc"), None);
        assert_eq!(parse_memory(b"-1"), None);
        assert_eq!(parse_memory(b"mb"), None);
        assert_eq!(parse_memory(b"99999999999999999999gb"), None);
    }
}
