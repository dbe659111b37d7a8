//! memcached's `cache_memlimit <megabytes> [noreply]` (`doc/protocol.txt`, "Memory limit";
//! `proto_text.c`'s `process_memlimit_command`): moves the engine's memory limit at run time
//! ([`fridge_engine::Engine::set_memory_limit`]) with memcached's replies.
//!
//! Lowering the limit returns at once: the engine's cleaner evicts down to it in its normal
//! bounded passes. The limit can rise back up to the memory mapped at start (`-m` /
//! `memory`), no further: more is `MEMLIMIT_ADJUST_FAILED`, as memcached answers a limit it
//! cannot adjust to. Only the admin may move it (the memory is every tenant's); another
//! connection gets `CLIENT_ERROR permission denied`.

use fridge_engine::RankKind;

use crate::session::{Ctx, Session};

/// The names Redis's `maxmemory-policy` takes in fridge (see `resp::maxmemory`), with the
/// rank function each names, in the order `CONFIG SET`'s error lists them.
pub(crate) const POLICIES: [(&str, RankKind); 5] = [
    ("allkeys-lru", RankKind::Lru),
    ("allkeys-lfu", RankKind::Lfu),
    ("hitmap", RankKind::Hitmap),
    ("slru", RankKind::Slru),
    ("gdsf", RankKind::Gdsf),
];

/// The `maxmemory-policy` name of a tenant's rank function.
pub(crate) fn policy_name(rank: RankKind) -> &'static str {
    POLICIES.iter().find(|(_, r)| *r == rank).map_or("hitmap", |(name, _)| name)
}

/// memcached's smallest limit, in megabytes.
const MIN_MEGABYTES: u32 = 8;
/// memcached's largest: a bigger number was surely meant as bytes.
const MAX_MEGABYTES: u32 = 1_000_000_000;

/// Runs `cache_memlimit`, appending its reply unless `noreply`.
pub(crate) fn cache_memlimit(
    megabytes: u32,
    noreply: bool,
    out: &mut Vec<u8>,
    s: &Session,
    ctx: &mut Ctx<'_>,
) {
    let reply: &[u8] = if !s.is_admin(ctx.tenants) {
        b"CLIENT_ERROR permission denied\r\n"
    } else if megabytes < MIN_MEGABYTES {
        b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
    } else if megabytes > MAX_MEGABYTES {
        b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
    } else {
        let bytes = usize::try_from(u64::from(megabytes) << 20).unwrap_or(usize::MAX);
        match ctx.shared.engine.set_memory_limit(bytes) {
            Ok(()) => b"OK\r\n",
            Err(_) => b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
        }
    };
    if !noreply {
        out.extend_from_slice(reply);
    }
}
