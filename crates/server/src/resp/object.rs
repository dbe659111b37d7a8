//! `OBJECT` (ENCODING, FREQ, IDLETIME, REFCOUNT, HELP) and `MEMORY` (USAGE, STATS, DOCTOR,
//! MALLOC-STATS, PURGE, HELP), from what the engine knows of an item: its bytes in its
//! segment, its index slot, its access stamp and its hitmap zone — or, under S3-FIFO's queues
//! without a hitmap (the default without tenants), its reads since it entered its queue, 0 to
//! 3 (`Worker::inspect`).

use fridge_engine::{INDEX_SLOT_BYTES, Kind};
use fridge_proto::number::parse_redis_i64;
use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_double, write_error, write_integer,
    write_map_header, write_null, write_simple, write_verbatim,
};

use super::{NOT_INTEGER, SYNTAX, Spec, unknown_subcommand};
use crate::session::{Ctx, Session};
use crate::types::hash::Hash;
use crate::types::{HASH, LIST, SET, ZSET};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.get(i).unwrap_or_default()
}

/// Redis's error for a subcommand given the wrong number of arguments.
pub(super) fn sub_arity(out: &mut Vec<u8>, command: &str, sub: &[u8]) {
    out.extend_from_slice(b"-ERR wrong number of arguments for '");
    out.extend_from_slice(command.as_bytes());
    out.push(b'|');
    out.extend(sub.iter().map(u8::to_ascii_lowercase));
    out.extend_from_slice(b"' command\r\n");
}

pub(super) fn help(out: &mut Vec<u8>, lines: &[&str]) {
    write_array_header(out, lines.len());
    for l in lines {
        write_simple(out, l.as_bytes());
    }
}

const OBJECT_HELP: [&str; 15] = [
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

const MEMORY_HELP: [&str; 14] = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// What Redis would call a value's encoding: a string's by [`string_encoding`]; a hash's
/// `listpack` while Redis would keep it as one (up to 512 fields, fields and values up to 64
/// bytes), else `hashtable`; a set's `intset` while Redis would keep it as one (up to 512
/// integers), else `hashtable`; a list's `quicklist`, as every list in Redis 7.0; a sorted
/// set's `listpack` up to 128 members of up to 64 bytes, else `skiplist`. (fridge's own form is packed either way: the names tell a client what Redis
/// would do with the same value.)
fn encoding(kind: Kind, value: &[u8]) -> &'static [u8] {
    match kind {
        HASH if super::hashes::is_listpack(&Hash::new(value)) => b"listpack",
        HASH => b"hashtable",
        SET if super::sets::is_intset(&Hash::new(value)) => b"intset",
        SET => b"hashtable",
        LIST => b"quicklist",
        ZSET if super::zsets::is_listpack(&Hash::new(value)) => b"listpack",
        ZSET => b"skiplist",
        _ => string_encoding(value),
    }
}

/// What Redis would call a string value's encoding: `int` for a canonical 64-bit integer
/// (what `SET` and `INCR` store as one), `embstr` up to 44 bytes, `raw` above.
pub(crate) fn string_encoding(v: &[u8]) -> &'static [u8] {
    if v.len() <= 20 && parse_redis_i64(v).is_some() {
        b"int"
    } else if v.len() <= 44 {
        b"embstr"
    } else {
        b"raw"
    }
}

pub(super) fn object(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = arg(cmd, 1);
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    let n = cmd.len();
    if is(b"help") {
        return if n == 2 { help(out, &OBJECT_HELP) } else { sub_arity(out, "object", sub) };
    }
    if !(is(b"encoding") || is(b"freq") || is(b"idletime") || is(b"refcount")) {
        return unknown_subcommand(out, sub, b"OBJECT");
    }
    if n != 3 {
        return sub_arity(out, "object", sub);
    }
    let (t, key) = (s.tenant, arg(cmd, 2));
    if is(b"encoding") {
        match ctx.engine.get_any(s.tenant, key, |i| encoding(i.kind, i.value)) {
            Some(e) => write_bulk(out, e),
            None => write_null(out, s.version),
        }
        return;
    }
    let Some(info) = ctx.engine.inspect(t, key) else { return write_null(out, s.version) };
    if is(b"refcount") {
        write_integer(out, 1);
    } else if is(b"idletime") {
        let idle_ms = ctx.engine.now_ms().saturating_sub(info.last_access_ms);
        write_integer(out, (idle_ms / 1000) as i64);
    } else {
        match info.zone {
            Some(z) => write_integer(out, i64::from(z)),
            None => write_error(
                out,
                b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                Please note that when switching between policies at runtime LRU and LFU data \
                will take some time to adjust.",
            ),
        }
    }
}

pub(super) fn memory(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = arg(cmd, 1);
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    let n = cmd.len();
    let fixed = is(b"help") || is(b"stats") || is(b"doctor") || is(b"malloc-stats") || is(b"purge");
    if fixed && n != 2 || is(b"usage") && n < 3 {
        return sub_arity(out, "memory", sub);
    }
    if is(b"help") {
        help(out, &MEMORY_HELP);
    } else if is(b"usage") {
        let mut j = 3;
        while j < n {
            if arg(cmd, j).eq_ignore_ascii_case(b"samples") && j + 1 < n {
                match parse_redis_i64(arg(cmd, j + 1)) {
                    Some(c) if c >= 0 => {}
                    Some(_) => return write_error(out, SYNTAX),
                    None => return write_error(out, NOT_INTEGER),
                }
                j += 2;
            } else {
                return write_error(out, SYNTAX);
            }
        }
        match ctx.engine.inspect(s.tenant, arg(cmd, 2)) {
            Some(info) => write_integer(out, (info.size + INDEX_SLOT_BYTES) as i64),
            None => write_null(out, s.version),
        }
    } else if is(b"stats") {
        stats(out, s, ctx);
    } else if is(b"doctor") {
        let t = ctx.shared.engine.tenant_stats(s.tenant);
        let text: &[u8] = if t.bytes < 5 * 1024 * 1024 {
            b"Hi Sam, this instance is empty or is using very little memory, my issues \
            detector can't be used in these conditions. Please, leave for your mission on \
            Earth and fill it with some data. The new Sam and I will be back to our \
            programming as soon as I finished rebooting.\n"
        } else {
            b"Hi Sam, I can't find any memory issue in your instance. I can only account for \
            what occurs on this base.\n"
        };
        write_verbatim(out, s.version, b"txt", text);
    } else if is(b"malloc-stats") {
        write_verbatim(out, s.version, b"txt", b"Stats not supported for the current allocator");
    } else if is(b"purge") {
        write_simple(out, b"OK");
    } else {
        unknown_subcommand(out, sub, b"MEMORY");
    }
}

/// `MEMORY STATS` with Redis's field names and the engine's figures: the arena (mapped once,
/// `max_memory`) and the bookkeeping outside it (index, segment headers, hitmap) make the
/// allocation; the tenant's live items are the dataset.
fn stats(out: &mut Vec<u8>, s: &Session, ctx: &Ctx<'_>) {
    let e = ctx.shared.engine.stats();
    let t = ctx.shared.engine.tenant_stats(s.tenant);
    let overhead = e.overhead_bytes as i64;
    let total = (e.arena_bytes + e.overhead_bytes) as i64;
    let dataset = t.bytes as i64;
    let per_key = if t.items > 0 { dataset / t.items as i64 } else { 0 };
    let used = e.item_bytes.max(1) as f64;
    let ints: [(&str, i64); 13] = [
        ("peak.allocated", total),
        ("total.allocated", total),
        ("startup.allocated", overhead),
        ("replication.backlog", 0),
        ("clients.slaves", 0),
        ("clients.normal", 0),
        ("cluster.links", 0),
        ("aof.buffer", 0),
        ("lua.caches", 0),
        ("functions.caches", 0),
        ("overhead.total", overhead),
        ("keys.count", t.items as i64),
        ("keys.bytes-per-key", per_key),
    ];
    write_map_header(out, s.version, 27);
    for (k, v) in ints {
        write_bulk(out, k.as_bytes());
        write_integer(out, v);
    }
    let pct = |a: f64, b: f64| if b > 0.0 { a * 100.0 / b } else { 0.0 };
    write_bulk(out, b"dataset.bytes");
    write_integer(out, dataset);
    write_bulk(out, b"dataset.percentage");
    write_double(out, s.version, pct(dataset as f64, (total - overhead) as f64));
    write_bulk(out, b"peak.percentage");
    write_double(out, s.version, 100.0);
    let arena = e.arena_bytes as i64;
    for (k, v) in [("allocator.allocated", total), ("allocator.active", total)] {
        write_bulk(out, k.as_bytes());
        write_integer(out, v);
    }
    write_bulk(out, b"allocator.resident");
    write_integer(out, total);
    let frag = arena as f64 / used;
    let doubles_and_bytes: [(&str, f64, &str, i64); 4] = [
        (
            "allocator-fragmentation.ratio",
            frag,
            "allocator-fragmentation.bytes",
            arena - used as i64,
        ),
        ("allocator-rss.ratio", 1.0, "allocator-rss.bytes", 0),
        ("rss-overhead.ratio", 1.0, "rss-overhead.bytes", 0),
        ("fragmentation", frag, "fragmentation.bytes", arena - used as i64),
    ];
    for (rk, r, bk, b) in doubles_and_bytes {
        write_bulk(out, rk.as_bytes());
        write_double(out, s.version, r);
        write_bulk(out, bk.as_bytes());
        write_integer(out, b);
    }
}
