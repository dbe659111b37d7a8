//! memcached's operational commands: the `stats` family and key enumeration
//! (`lru_crawler metadump|mgdump`, `stats cachedump`).
//!
//! Spec: memcached 1.6 `doc/protocol.txt`, "Statistics" (general-purpose statistics,
//! settings, item, slab, sizes and connection statistics, `stats detail`, `stats reset`) and
//! "LRU_Crawler" (`metadump`, `mgdump`), checked against memcached 1.6.18. What fridge
//! cannot know is left out, never made up; `docs/protocol.md` lists each difference.
//!
//! Size classes (`stats items`, `stats slabs`, `cls=`) are memcached's default slab classes
//! applied to what fridge stores (see `size_class`). They are computed on demand by a walk
//! over the index, not counted on the request path: counting per class on every store,
//! delete, eviction and expiry would add work to the hot path (and to the cleaner, which
//! moves and drops items without the protocol layer seeing them) for figures that tools read
//! every few seconds at most. The walk runs in bounded steps — [`WALK_STEP_BUCKETS`] index
//! positions, then the worker's other connections have their turn (see
//! `Session::suspend`) — so a large cache costs the asking connection time, not the others.
//! Its state is fixed-size ([`WalkJob`]); dumps write lines as they are found and pause
//! while the client has not read its reply. An item the cleaner moves during a walk may be
//! seen twice (never missed), as with Redis's `SCAN`.

use std::io::Write as _;

use fridge_engine::ItemMeta;
use fridge_proto::memcache::{self as mc, Reply};

use crate::session::{Ctx, Session, WalkJob};
use crate::size_class::{self, CLASSES, MAX_CLASS_ID, PAGE_SIZE};
use crate::stats;

/// Index positions a walk visits per step before the worker's other connections get a turn.
const WALK_STEP_BUCKETS: usize = 256;
/// memcached's bound on a `stats cachedump` reply (`item_cachedump`'s `memlimit`).
const CACHEDUMP_MAX_BYTES: usize = 2 * 1024 * 1024;

/// `stats [group]`.
pub(crate) fn stats(args: &[u8], out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let mut words = args.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let group = words.next().unwrap_or_default();
    let view = s.view(ctx.tenants);
    match group {
        b"" => {
            stats::write_memcache_stats(out, ctx.shared, &view);
            mc::write_reply(out, Reply::End);
        }
        b"tenants" => {
            stats::write_memcache_tenants(out, ctx.shared, &view);
            mc::write_reply(out, Reply::End);
        }
        b"settings" => {
            stats::write_memcache_settings(out, ctx.shared, ctx.tenants);
            mc::write_reply(out, Reply::End);
        }
        b"items" | b"slabs" => class_stats(group == b"slabs", out, s, ctx),
        // memcached without `-o track_sizes` answers this; fridge keeps no such histogram.
        b"sizes" => {
            mc::write_stat(out, b"sizes_status", b"disabled");
            mc::write_reply(out, Reply::End);
        }
        // memcached answers this one line, without `END`.
        b"sizes_disable" => mc::write_stat(out, b"sizes_status", b"disabled"),
        // No extstore: an empty list, as memcached without one answers.
        b"extstore" => mc::write_reply(out, Reply::End),
        b"hotkeys" => {
            crate::hotkeys::write_memcache(out, s, ctx);
            mc::write_reply(out, Reply::End);
        }
        b"conns" => {
            stats::write_memcache_conns(out, ctx.shared, &view);
            mc::write_reply(out, Reply::End);
        }
        b"detail" => match words.next().unwrap_or_default() {
            // fridge keeps no per-prefix figures, so detail is always off: turning it off is
            // done, the dump is empty, and turning it on is refused.
            b"off" => mc::write_reply(out, Reply::Ok),
            b"dump" => mc::write_reply(out, Reply::End),
            b"on" => mc::write_reply(out, Reply::Error),
            _ => mc::write_client_error(out, b"usage: stats detail on|off|dump"),
        },
        b"reset" => {
            if view.admin {
                stats::reset(ctx.shared);
                mc::write_reply(out, Reply::Reset);
            } else {
                // A tenant may not clear the server's counters for everyone.
                mc::write_client_error(out, b"permission denied");
            }
        }
        b"cachedump" => {
            // (memcached ignores any further words.)
            let (Some(class), Some(limit)) = (words.next(), words.next()) else {
                return mc::write_client_error(out, b"bad command line");
            };
            let parse = |w: &[u8]| std::str::from_utf8(w).ok()?.parse::<u32>().ok();
            let (Some(class), Some(limit)) = (parse(class), parse(limit)) else {
                return mc::write_client_error(out, b"bad command line format");
            };
            if class as usize >= MAX_CLASS_ID {
                return mc::write_client_error(out, b"Illegal slab id");
            }
            cachedump(class as usize, u64::from(limit), out, s, ctx);
        }
        _ => mc::write_reply(out, Reply::Error),
    }
}

/// `lru_crawler <subcommand>`: `metadump` and `mgdump`; fridge's expiry sweep runs by
/// itself, so the crawler's controls (`crawl`, `enable`, `sleep`, …) are not commands here.
pub(crate) fn lru_crawler(args: &[u8], out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let mut words = args.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let (sub, which, extra) = (words.next().unwrap_or_default(), words.next(), words.next());
    let mgdump = match sub {
        b"metadump" => false,
        b"mgdump" => true,
        _ => return mc::write_reply(out, Reply::Error),
    };
    let (Some(which), None) = (which, extra) else {
        return mc::write_reply(out, Reply::Error);
    };
    let Some(classes) = class_filter(which) else {
        return out.extend_from_slice(b"BADCLASS invalid class id\r\n");
    };
    let t = s.tenant;
    let mut job = s.resume.walk.take().unwrap_or_default();
    job.cursor = ctx.engine.walk_bounded(Some(t), job.cursor, WALK_STEP_BUCKETS, |m| {
        let class = size_class::class_of(m.size);
        // Keys of Redis databases other than 0 are none of memcached's.
        if classes & (1 << class) == 0 || m.db != 0 {
            return;
        }
        if mgdump {
            write_mgdump_line(out, &m);
        } else {
            write_metadump_line(out, &m, class);
        }
    });
    if job.cursor != 0 {
        s.resume.walk = Some(job);
        return s.suspend(1);
    }
    out.extend_from_slice(if mgdump { b"EN\r\n" } else { b"END\r\n" });
}

/// The classes a dump covers as a bit set (bit `id`): `all` and `hash` (memcached's walk of
/// its hash table; fridge's walk is always one) every class, else a comma list of ids.
fn class_filter(which: &[u8]) -> Option<u64> {
    if which == b"all" || which == b"hash" {
        return Some(u64::MAX);
    }
    let mut set = 0u64;
    for id in which.split(|&b| b == b',') {
        let id: usize = std::str::from_utf8(id).ok()?.parse().ok()?;
        if id == 0 || id >= MAX_CLASS_ID {
            return None;
        }
        set |= 1 << id;
    }
    Some(set)
}

/// memcached's metadump line. The key is URI-encoded as memcached does; `exp` is the
/// absolute Unix time or -1. memcached's `la` (last access) and `fetch` (fetched since
/// stored) are left out: fridge keeps neither per item.
fn write_metadump_line(out: &mut Vec<u8>, m: &ItemMeta<'_>, class: usize) {
    out.extend_from_slice(b"key=");
    uri_encode(out, m.key);
    let _ = match m.expires_at_ms {
        Some(at) => write!(out, " exp={}", at / 1000),
        None => write!(out, " exp=-1"),
    };
    let _ = writeln!(out, " cas={} cls={class} size={}", m.cas, m.size);
}

/// memcached 1.6.19's mgdump line: `mg <key>`, or the key in base64 with the `b` flag when
/// it is not printable without spaces.
fn write_mgdump_line(out: &mut Vec<u8>, m: &ItemMeta<'_>) {
    out.extend_from_slice(b"mg ");
    if m.key.iter().all(|&b| b.is_ascii_graphic()) {
        out.extend_from_slice(m.key);
        out.extend_from_slice(b"\r\n");
    } else {
        base64(out, m.key);
        out.extend_from_slice(b" b\r\n");
    }
}

/// Percent-encodes every byte but RFC 3986's unreserved ones (memcached's `uriencode`).
fn uri_encode(out: &mut Vec<u8>, key: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// Standard base64 with padding.
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

/// `stats cachedump <class> <limit>`: the keys of one size class, `limit` of them (0: no
/// limit), the reply bounded to 2 MB as memcached's. `exp` is the absolute Unix time, 0
/// for none (memcached's format). Keys with spaces or control bytes (stored through RESP)
/// are left out; `lru_crawler metadump` lists them URI-encoded.
fn cachedump(class: usize, limit: u64, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    if class == 0 || class > CLASSES {
        return mc::write_reply(out, Reply::End);
    }
    let t = s.tenant;
    let mut job = s.resume.walk.take().unwrap_or_default();
    let mut line = Vec::new();
    let mut full = false;
    job.cursor = ctx.engine.walk_bounded(Some(t), job.cursor, WALK_STEP_BUCKETS, |m| {
        // A key a memcached client could not send (spaces, control bytes: RESP allows
        // them) would break the reply's lines; it is left out.
        // Nor are keys of Redis databases other than 0.
        if full || size_class::class_of(m.size) != class || !is_text_key(m.key) || m.db != 0 {
            return;
        }
        line.clear();
        line.extend_from_slice(b"ITEM ");
        line.extend_from_slice(m.key);
        let exp = m.expires_at_ms.map_or(0, |at| at / 1000);
        let _ = write!(line, " [{} b; {exp} s]\r\n", m.value_len);
        // memcached stops before a line that would take the reply (and its END) past 2 MB.
        if (limit != 0 && job.written >= limit) || job.bytes + line.len() + 5 > CACHEDUMP_MAX_BYTES
        {
            full = true;
            return;
        }
        job.written += 1;
        job.bytes += line.len();
        out.extend_from_slice(&line);
    });
    if job.cursor != 0 && !full {
        s.resume.walk = Some(job);
        return s.suspend(1);
    }
    mc::write_reply(out, Reply::End);
}

/// Whether `key` could be sent in a memcached text command: no space or control byte.
fn is_text_key(key: &[u8]) -> bool {
    key.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// `stats items` and `stats slabs`, once a walk has counted the items per size class: the
/// admin's count every tenant's items, anyone else's only its own.
fn class_stats(slabs: bool, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let admin = s.is_admin(ctx.tenants);
    let tenant = (!admin).then_some(s.tenant);
    let mut job = s.resume.walk.take().unwrap_or_default();
    job.cursor = ctx.engine.walk_bounded(tenant, job.cursor, WALK_STEP_BUCKETS, |m| {
        job.classes.add(m.size);
    });
    if job.cursor != 0 {
        s.resume.walk = Some(job);
        return s.suspend(1);
    }
    if slabs {
        write_slabs(out, &job, s, ctx);
    } else {
        write_items(out, &job);
    }
    mc::write_reply(out, Reply::End);
}

/// `stats items` fields fridge knows per class, in memcached's order: `number` (items) and
/// `mem_requested` (bytes they occupy). The LRU figures (`number_hot`, `age`, `evicted`…)
/// are memcached's per-class LRU state and are left out; fridge's evictions and expiries
/// are server-wide, in `stats`.
fn write_items(out: &mut Vec<u8>, job: &WalkJob) {
    for (id, items, bytes) in job.classes.used() {
        mc::write_stat_u64(out, format!("items:{id}:number").as_bytes(), items);
        mc::write_stat_u64(out, format!("items:{id}:mem_requested").as_bytes(), bytes);
    }
}

/// `stats slabs`, in memcached's order: per class its `chunk_size` and `chunks_per_page`
/// (memcached's table), `used_chunks` (the items of that size class; each would take one
/// chunk), and the commands counted per class (`get_hits`, `cmd_set`, `cas_hits`,
/// `cas_badval`: classic text commands, see `ClassCounters`); then `active_slabs` (classes
/// listed) and `total_malloced` (bytes of the arena's segments in use). A class is listed
/// once it holds items or has counted a command.
///
/// fridge allocates segments, not pages per class, so `total_pages`, `total_chunks` and
/// `free_chunks` are a model, not memory fridge holds: the 1 MiB pages memcached's
/// allocator would need for these items (`used_chunks` rounded up to whole pages), their
/// chunks, and those left over. Tools that skip classes without pages (memcached-tool) or
/// chart page use (munin, phpMemcachedAdmin) read them. `free_chunks_end` and the per-class
/// `delete_hits`, `incr_hits`, `decr_hits` and `touch_hits` (those commands do not learn
/// the item's size) are left out.
fn write_slabs(out: &mut Vec<u8>, job: &WalkJob, s: &Session, ctx: &Ctx<'_>) {
    let view = s.view(ctx.tenants);
    let counts = stats::class_totals(ctx.shared, &view);
    let mut active = 0;
    for i in 0..CLASSES {
        let items = job.classes.items[i];
        let commands = [
            ("get_hits", counts.get_hits[i]),
            ("cmd_set", counts.cmd_set[i]),
            ("cas_hits", counts.cas_hits[i]),
            ("cas_badval", counts.cas_badval[i]),
        ];
        if items == 0 && commands.iter().all(|&(_, n)| n == 0) {
            continue;
        }
        active += 1;
        let id = i + 1;
        let chunk = size_class::chunk_size(id);
        mc::write_stat_u64(out, format!("{id}:chunk_size").as_bytes(), chunk as u64);
        let per_page = (PAGE_SIZE / chunk) as u64;
        mc::write_stat_u64(out, format!("{id}:chunks_per_page").as_bytes(), per_page);
        // The pages memcached's allocator would need for these items (see the doc above).
        let pages = items.div_ceil(per_page);
        mc::write_stat_u64(out, format!("{id}:total_pages").as_bytes(), pages);
        mc::write_stat_u64(out, format!("{id}:total_chunks").as_bytes(), pages * per_page);
        mc::write_stat_u64(out, format!("{id}:used_chunks").as_bytes(), items);
        let free = pages * per_page - items;
        mc::write_stat_u64(out, format!("{id}:free_chunks").as_bytes(), free);
        for (name, n) in commands {
            mc::write_stat_u64(out, format!("{id}:{name}").as_bytes(), n);
        }
    }
    mc::write_stat_u64(out, b"active_slabs", active);
    // Segment use is everyone's: a tenant's view shows none.
    let e = ctx.shared.engine.stats();
    let used = if view.admin { (e.segments - e.segments_free) * e.segment_size } else { 0 };
    mc::write_stat_u64(out, b"total_malloced", used as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_uri_encoded_as_memcached_does() {
        let mut out = Vec::new();
        uri_encode(&mut out, b"a%20b c~d");
        assert_eq!(out, b"a%2520b%20c~d");
    }

    #[test]
    fn base64_pads() {
        for (input, expected) in [(&b""[..], ""), (b"f", "Zg=="), (b"fo", "Zm8="), (b"foo", "Zm9v")]
        {
            let mut out = Vec::new();
            base64(&mut out, input);
            assert_eq!(out, expected.as_bytes());
        }
    }

    #[test]
    fn class_lists() {
        assert_eq!(class_filter(b"all"), Some(u64::MAX));
        assert_eq!(class_filter(b"1,3"), Some(0b1010));
        assert_eq!(class_filter(b"0"), None, "memcached has no class 0");
        assert_eq!(class_filter(b"64"), None);
        assert_eq!(class_filter(b"x"), None);
    }
}
