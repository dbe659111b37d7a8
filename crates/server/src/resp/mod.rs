//! Redis commands (strings, hashes, lists, sets, sorted sets and keyspace, connection and
//! server admin), run against the engine.
//!
//! Replies and error strings follow Redis 7. RESP3 (after `HELLO 3`) changes nulls, maps and
//! `INFO`'s verbatim string; everything else is the same bytes in both versions.
//!
//! [`COMMANDS`] is the one table of commands: each row names a command, its arity, its flags,
//! its keys and the handler that runs it. [`execute`] looks a request's command up there once,
//! checks the arity and whether the client may run it before logging in, and calls the
//! handler; `COMMAND` answers from the same rows. The handlers live by family:
//!
//! | file            | commands                                                          |
//! |-----------------|-------------------------------------------------------------------|
//! | `strings.rs`    | GET, SET and their variants, MGET, MSET, INCR…, APPEND, STRLEN    |
//! | `range.rs`      | GETRANGE, SUBSTR, SETRANGE, LCS                                   |
//! | `hashes.rs`     | HSET, HGET, HDEL, HGETALL… HINCRBY, HRANDFIELD, HSCAN             |
//! | `fields.rs`     | HEXPIRE…, HTTL…, HEXPIRETIME…, HPERSIST (hash field expiry)       |
//! | `blocking.rs`   | BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP |
//! | `lists.rs`      | LPUSH, RPUSH, LPOP, RPOP, LRANGE… LPOS, LMOVE, RPOPLPUSH, LMPOP    |
//! | `hll.rs`        | PFADD, PFCOUNT, PFMERGE                                           |
//! | `sets.rs`       | SADD, SREM, SISMEMBER… SPOP, SMOVE, SINTER… SDIFFSTORE, SSCAN     |
//! | `zsets.rs`      | ZADD, ZINCRBY, ZREM, ZRANGE…, ZPOPMIN…, ZMPOP, ZUNION…, ZSCAN      |
//! | `packed.rs`     | (what the hash and set commands share)                            |
//! | `bits.rs`       | SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO    |
//! | `keys.rs`       | DEL, EXISTS, EXPIRE…, TTL, TYPE, SCAN, KEYS, DBSIZE, FLUSH…       |
//! | `keyspace.rs`   | RENAME, RENAMENX, COPY, RANDOMKEY, EXPIRETIME…, WAIT              |
//! | `sort.rs`       | SORT, SORT_RO                                                     |
//! | `object.rs`     | OBJECT, MEMORY                                                    |
//! | `dump.rs`       | DUMP, RESTORE                                                     |
//! | `connection.rs` | PING, ECHO, QUIT, HELLO, AUTH, ACL, RESET                         |
//! | `databases.rs`  | SELECT, SWAPDB, MOVE                                              |
//! | `admin.rs`      | INFO, CONFIG, CLIENT, TIME, LASTSAVE                              |
//! | `command.rs`    | COMMAND (with `catalog.rs`: Redis's docs and key specifications)  |
//! | `tracking.rs`   | CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO                  |
//! | `pubsub.rs`     | (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB       |
//! | `multi.rs`      | MULTI, EXEC, DISCARD, WATCH, UNWATCH                              |
//! | `script.rs`     | EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, SCRIPT, FUNCTION |
//! | `monitor.rs`    | MONITOR                                                           |
//! | `shutdown.rs`   | SHUTDOWN                                                          |
//! | `cluster.rs`    | CLUSTER, ASKING, READONLY, READWRITE; cluster mode's key check    |

mod admin;
mod bits;
mod blocking;
mod catalog;
mod cluster;
mod command;
mod connection;
mod databases;
mod debug;
mod dump;
mod fields;
pub(crate) use fields::expire_due as expire_hash_fields;
pub(crate) mod glob;
mod hashes;
mod help;
mod hll;
mod hotkeys;
mod keys;
mod keyspace;
mod latency;
mod lists;
mod maxmemory;
mod monitor;
mod multi;
mod object;
mod packed;
mod pubsub;
mod range;
mod script;
mod sets;
mod shutdown;
mod slowlog;
mod sort;
mod strings;
mod tracking;
mod zsets;

use std::sync::atomic::Ordering;

use fridge_engine::{EngineError, TenantId};
use fridge_proto::number::parse_redis_i64;
use fridge_proto::resp::{self as r, Command, write_error, write_wrong_arity};

use crate::counter::CounterError;
use crate::session::{Ctx, Session};

const NOT_INTEGER: &[u8] = b"ERR value is not an integer or out of range";
const NOT_FLOAT: &[u8] = b"ERR value is not a valid float";
const NOT_FINITE: &[u8] = b"ERR increment would produce NaN or Infinity";
const SYNTAX: &[u8] = b"ERR syntax error";
const NOAUTH: &[u8] = b"NOAUTH Authentication required.";
const WRONGTYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";

/// Runs one command: appends its reply to `out`. The table row is passed so that one
/// handler can serve several names (`INCR`/`DECR`…), reading the lowercase name from it.
type Handler = fn(&Command<'_>, &mut Vec<u8>, &mut Session, &mut Ctx<'_>, &Spec);

/// One command: what `COMMAND` reports about it and the handler that runs it.
pub(crate) struct Spec {
    /// Lowercase.
    pub name: &'static str,
    /// Redis's arity, the name included: `n` exactly `n` arguments, `-n` at least `n`.
    pub arity: i64,
    /// [`WRITE`], [`READONLY`], … or-ed.
    pub flags: u8,
    /// The first key's argument (0: the command takes no key), the last (-1: the last
    /// argument) and the step between keys.
    pub first_key: i64,
    pub last_key: i64,
    pub step: i64,
    pub run: Handler,
}

/// The command changes the key space.
const WRITE: u8 = 1 << 0;
/// The command only reads the key space.
const READONLY: u8 = 1 << 1;
/// The command may allocate memory (refused with `OOM` when it runs out).
const DENYOOM: u8 = 1 << 2;
/// The command takes constant or logarithmic time.
const FAST: u8 = 1 << 3;
/// The command may be sent before the client has logged in (Redis's `no-auth`).
const NOAUTH_OK: u8 = 1 << 4;
/// The command runs outside its worker's transaction gate (`EXEC`, which takes every gate;
/// see `crate::transaction`). Not reported.
const NO_GATE: u8 = 1 << 5;
/// The command finds keys beyond its key positions (`ZUNIONSTORE`'s `numkeys`, `SORT …
/// STORE`, `MOVE`'s other database): it writes several keys ([`writes_several_keys`]). Not
/// reported.
const MORE_KEYS: u8 = 1 << 6;

/// The flags `COMMAND` reports, in the order it reports them. ([`NOAUTH_OK`] is not
/// reported.)
const REPORTED_FLAGS: [(u8, &str); 4] =
    [(WRITE, "write"), (READONLY, "readonly"), (DENYOOM, "denyoom"), (FAST, "fast")];

impl Spec {
    /// Whether `n` arguments (the name included) fit the command's arity.
    #[inline]
    fn arity_ok(&self, n: usize) -> bool {
        let n = n as i64;
        if self.arity >= 0 { n == self.arity } else { n >= -self.arity }
    }

    /// Whether the command takes keys (a client that has not logged in is routed by the
    /// first key's prefix).
    #[inline]
    fn has_keys(&self) -> bool {
        self.first_key > 0
    }
}

/// A row of [`COMMANDS`]: name, arity, flags, (first key, last key, step), handler.
const fn row(
    name: &'static str,
    arity: i64,
    flags: u8,
    keys: (i64, i64, i64),
    run: Handler,
) -> Spec {
    Spec { name, arity, flags, first_key: keys.0, last_key: keys.1, step: keys.2, run }
}

/// No key.
const NONE: (i64, i64, i64) = (0, 0, 0);
/// One key, the first argument.
const KEY: (i64, i64, i64) = (1, 1, 1);
/// Every argument is a key.
const ALL: (i64, i64, i64) = (1, -1, 1);
/// Key, value pairs.
const PAIRS: (i64, i64, i64) = (1, -1, 2);

/// Every command, in the order `COMMAND` lists them (the commands sent most often first).
/// [`lookup`] finds a row through [`BY_NAME`].
#[rustfmt::skip]
pub(crate) static COMMANDS: [Spec; crate::cmdstats::COMMAND_ROWS] = [
    row("get", 2, READONLY | FAST, KEY, strings::get),
    row("set", -3, WRITE | DENYOOM, KEY, strings::set),
    row("setnx", 3, WRITE | DENYOOM | FAST, KEY, strings::setnx),
    row("setex", 4, WRITE | DENYOOM, KEY, strings::setex),
    row("psetex", 4, WRITE | DENYOOM, KEY, strings::setex),
    row("mget", -2, READONLY | FAST, ALL, strings::mget),
    row("mset", -3, WRITE | DENYOOM, PAIRS, strings::mset),
    row("msetnx", -3, WRITE | DENYOOM, PAIRS, strings::mset),
    row("getset", 3, WRITE | DENYOOM | FAST, KEY, strings::getset),
    row("getdel", 2, WRITE | FAST, KEY, strings::getdel),
    row("getex", -2, WRITE | FAST, KEY, strings::getex),
    row("append", 3, WRITE | DENYOOM | FAST, KEY, strings::append),
    row("strlen", 2, READONLY | FAST, KEY, strings::strlen),
    row("incr", 2, WRITE | DENYOOM | FAST, KEY, strings::incr),
    row("incrby", 3, WRITE | DENYOOM | FAST, KEY, strings::incr),
    row("decr", 2, WRITE | DENYOOM | FAST, KEY, strings::incr),
    row("decrby", 3, WRITE | DENYOOM | FAST, KEY, strings::incr),
    row("incrbyfloat", 3, WRITE | DENYOOM | FAST, KEY, strings::incrbyfloat),
    row("hget", 3, READONLY | FAST, KEY, hashes::hget),
    row("hset", -4, WRITE | DENYOOM | FAST, KEY, hashes::hset),
    row("hmget", -3, READONLY | FAST, KEY, hashes::hmget),
    row("hmset", -4, WRITE | DENYOOM | FAST, KEY, hashes::hset),
    row("hsetnx", 4, WRITE | DENYOOM | FAST, KEY, hashes::hsetnx),
    row("hdel", -3, WRITE | FAST, KEY, hashes::hdel),
    row("hlen", 2, READONLY | FAST, KEY, hashes::hlen),
    row("hexists", 3, READONLY | FAST, KEY, hashes::hexists),
    row("hstrlen", 3, READONLY | FAST, KEY, hashes::hstrlen),
    row("hgetall", 2, READONLY, KEY, hashes::hgetall),
    row("hkeys", 2, READONLY, KEY, hashes::hgetall),
    row("hvals", 2, READONLY, KEY, hashes::hgetall),
    row("hincrby", 4, WRITE | DENYOOM | FAST, KEY, hashes::hincrby),
    row("hincrbyfloat", 4, WRITE | DENYOOM | FAST, KEY, hashes::hincrbyfloat),
    row("hrandfield", -2, READONLY, KEY, hashes::hrandfield),
    row("hscan", -3, READONLY, KEY, hashes::hscan),
    row("hexpire", -6, WRITE | FAST, KEY, fields::hexpire),
    row("hpexpire", -6, WRITE | FAST, KEY, fields::hexpire),
    row("hexpireat", -6, WRITE | FAST, KEY, fields::hexpire),
    row("hpexpireat", -6, WRITE | FAST, KEY, fields::hexpire),
    row("httl", -5, READONLY | FAST, KEY, fields::httl),
    row("hpttl", -5, READONLY | FAST, KEY, fields::httl),
    row("hexpiretime", -5, READONLY | FAST, KEY, fields::httl),
    row("hpexpiretime", -5, READONLY | FAST, KEY, fields::httl),
    row("hpersist", -5, WRITE | FAST, KEY, fields::hpersist),
    row("lpush", -3, WRITE | DENYOOM | FAST, KEY, lists::lpush),
    row("rpush", -3, WRITE | DENYOOM | FAST, KEY, lists::lpush),
    row("lpushx", -3, WRITE | DENYOOM | FAST, KEY, lists::lpush),
    row("rpushx", -3, WRITE | DENYOOM | FAST, KEY, lists::lpush),
    row("lpop", -2, WRITE | FAST, KEY, lists::lpop),
    row("rpop", -2, WRITE | FAST, KEY, lists::lpop),
    row("llen", 2, READONLY | FAST, KEY, lists::llen),
    row("lindex", 3, READONLY, KEY, lists::lindex),
    row("lset", 4, WRITE | DENYOOM, KEY, lists::lset),
    row("lrange", 4, READONLY, KEY, lists::lrange),
    row("ltrim", 4, WRITE, KEY, lists::ltrim),
    row("lrem", 4, WRITE, KEY, lists::lrem),
    row("linsert", 5, WRITE | DENYOOM, KEY, lists::linsert),
    row("lpos", -3, READONLY, KEY, lists::lpos),
    row("lmove", 5, WRITE | DENYOOM, (1, 2, 1), lists::lmove),
    row("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), lists::lmove),
    row("lmpop", -4, WRITE, NONE, lists::lmpop),
    row("blpop", -3, WRITE, (1, -2, 1), blocking::blpop),
    row("brpop", -3, WRITE, (1, -2, 1), blocking::blpop),
    row("blmove", 6, WRITE | DENYOOM, (1, 2, 1), blocking::blmove),
    row("brpoplpush", 4, WRITE | DENYOOM, (1, 2, 1), blocking::blmove),
    row("blmpop", -5, WRITE, NONE, blocking::blmpop),
    row("bzpopmin", -3, WRITE | FAST, (1, -2, 1), blocking::bzpopmin),
    row("bzpopmax", -3, WRITE | FAST, (1, -2, 1), blocking::bzpopmin),
    row("bzmpop", -5, WRITE, NONE, blocking::blmpop),
    row("pfadd", -2, WRITE | DENYOOM | FAST, KEY, hll::pfadd),
    row("pfcount", -2, READONLY, ALL, hll::pfcount),
    row("pfmerge", -2, WRITE | DENYOOM, ALL, hll::pfmerge),
    row("sadd", -3, WRITE | DENYOOM | FAST, KEY, sets::sadd),
    row("srem", -3, WRITE | FAST, KEY, sets::srem),
    row("sismember", 3, READONLY | FAST, KEY, sets::sismember),
    row("smismember", -3, READONLY | FAST, KEY, sets::smismember),
    row("smembers", 2, READONLY, KEY, sets::smembers),
    row("scard", 2, READONLY | FAST, KEY, sets::scard),
    row("spop", -2, WRITE | FAST, KEY, sets::spop),
    row("srandmember", -2, READONLY, KEY, sets::srandmember),
    row("smove", 4, WRITE | FAST, (1, 2, 1), sets::smove),
    row("sinter", -2, READONLY, ALL, sets::sinter),
    row("sunion", -2, READONLY, ALL, sets::sinter),
    row("sdiff", -2, READONLY, ALL, sets::sinter),
    row("sinterstore", -3, WRITE | DENYOOM, ALL, sets::sinterstore),
    row("sunionstore", -3, WRITE | DENYOOM, ALL, sets::sinterstore),
    row("sdiffstore", -3, WRITE | DENYOOM, ALL, sets::sinterstore),
    row("sintercard", -3, READONLY, NONE, sets::sintercard),
    row("sscan", -3, READONLY, KEY, sets::sscan),
    row("zadd", -4, WRITE | DENYOOM | FAST, KEY, zsets::zadd),
    row("zincrby", 4, WRITE | DENYOOM | FAST, KEY, zsets::zincrby),
    row("zrem", -3, WRITE | FAST, KEY, zsets::zrem),
    row("zcard", 2, READONLY | FAST, KEY, zsets::zcard),
    row("zscore", 3, READONLY | FAST, KEY, zsets::zscore),
    row("zmscore", -3, READONLY | FAST, KEY, zsets::zscore),
    row("zrank", 3, READONLY | FAST, KEY, zsets::zrank),
    row("zrevrank", 3, READONLY | FAST, KEY, zsets::zrank),
    row("zcount", 4, READONLY | FAST, KEY, zsets::zcount),
    row("zlexcount", 4, READONLY | FAST, KEY, zsets::zcount),
    row("zrange", -4, READONLY, KEY, zsets::zrange),
    row("zrevrange", -4, READONLY, KEY, zsets::zrange),
    row("zrangebyscore", -4, READONLY, KEY, zsets::zrange),
    row("zrevrangebyscore", -4, READONLY, KEY, zsets::zrange),
    row("zrangebylex", -4, READONLY, KEY, zsets::zrange),
    row("zrevrangebylex", -4, READONLY, KEY, zsets::zrange),
    row("zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), zsets::zrangestore),
    row("zremrangebyrank", 4, WRITE, KEY, zsets::zremrange),
    row("zremrangebyscore", 4, WRITE, KEY, zsets::zremrange),
    row("zremrangebylex", 4, WRITE, KEY, zsets::zremrange),
    row("zpopmin", -2, WRITE | FAST, KEY, zsets::zpopmin),
    row("zpopmax", -2, WRITE | FAST, KEY, zsets::zpopmin),
    row("zmpop", -4, WRITE, NONE, zsets::zmpop),
    row("zrandmember", -2, READONLY, KEY, zsets::zrandmember),
    row("zscan", -3, READONLY, KEY, zsets::zscan),
    row("zunion", -3, READONLY, NONE, zsets::zunion),
    row("zinter", -3, READONLY, NONE, zsets::zunion),
    row("zdiff", -3, READONLY, NONE, zsets::zunion),
    row("zunionstore", -4, WRITE | DENYOOM | MORE_KEYS, KEY, zsets::zunion),
    row("zinterstore", -4, WRITE | DENYOOM | MORE_KEYS, KEY, zsets::zunion),
    row("zdiffstore", -4, WRITE | DENYOOM | MORE_KEYS, KEY, zsets::zunion),
    row("zintercard", -3, READONLY, NONE, zsets::zunion),
    row("del", -2, WRITE, ALL, keys::del),
    row("unlink", -2, WRITE | FAST, ALL, keys::del),
    row("exists", -2, READONLY | FAST, ALL, keys::exists),
    row("expire", -3, WRITE | FAST, KEY, keys::expire),
    row("pexpire", -3, WRITE | FAST, KEY, keys::expire),
    row("expireat", -3, WRITE | FAST, KEY, keys::expire),
    row("pexpireat", -3, WRITE | FAST, KEY, keys::expire),
    row("ttl", 2, READONLY | FAST, KEY, keys::ttl),
    row("pttl", 2, READONLY | FAST, KEY, keys::ttl),
    row("persist", 2, WRITE | FAST, KEY, keys::persist),
    row("touch", -2, READONLY | FAST, ALL, keys::touch),
    row("type", 2, READONLY | FAST, KEY, keys::type_),
    row("scan", -2, READONLY, NONE, keys::scan),
    row("keys", 2, READONLY, NONE, keys::keys),
    row("dbsize", 1, READONLY | FAST, NONE, keys::dbsize),
    row("flushdb", -1, WRITE, NONE, keys::flush),
    row("flushall", -1, WRITE, NONE, keys::flush),
    row("ping", -1, FAST, NONE, connection::ping),
    row("echo", 2, FAST, NONE, connection::echo),
    row("quit", -1, FAST | NOAUTH_OK, NONE, connection::quit),
    row("hello", -1, FAST | NOAUTH_OK, NONE, connection::hello),
    row("auth", -2, FAST | NOAUTH_OK, NONE, connection::auth),
    row("select", 2, FAST, NONE, databases::select),
    row("info", -1, 0, NONE, admin::info),
    row("config", -2, 0, NONE, admin::config),
    row("client", -2, 0, NONE, admin::client),
    row("command", -1, 0, NONE, command::command),
    row("acl", -2, 0, NONE, connection::acl),
    row("time", 1, FAST, NONE, admin::time),
    row("lastsave", 1, FAST, NONE, admin::lastsave),
    row("slowlog", -2, 0, NONE, slowlog::slowlog),
    row("hotkeys", -2, 0, NONE, hotkeys::hotkeys),
    row("role", 1, FAST, NONE, debug::role),
    row("debug", -2, 0, NONE, debug::debug),
    row("latency", -2, 0, NONE, latency::latency),
    row("reset", 1, FAST | NOAUTH_OK, NONE, connection::reset),
    row("getrange", 4, READONLY, KEY, range::getrange),
    row("substr", 4, READONLY, KEY, range::getrange),
    row("setrange", 4, WRITE | DENYOOM, KEY, range::setrange),
    row("lcs", -3, READONLY, (1, 2, 1), range::lcs),
    row("setbit", 4, WRITE | DENYOOM, KEY, bits::setbit),
    row("getbit", 3, READONLY | FAST, KEY, bits::getbit),
    row("bitcount", -2, READONLY, KEY, bits::bitcount),
    row("bitpos", -3, READONLY, KEY, bits::bitpos),
    row("bitop", -4, WRITE | DENYOOM, (2, -1, 1), bits::bitop),
    row("bitfield", -2, WRITE | DENYOOM, KEY, bits::bitfield),
    row("bitfield_ro", -2, READONLY | FAST, KEY, bits::bitfield),
    row("rename", 3, WRITE, (1, 2, 1), keyspace::rename),
    row("renamenx", 3, WRITE | FAST, (1, 2, 1), keyspace::rename),
    row("copy", -3, WRITE | DENYOOM, (1, 2, 1), keyspace::copy),
    row("move", 3, WRITE | FAST | MORE_KEYS, KEY, databases::move_),
    row("swapdb", 3, WRITE | FAST, NONE, databases::swapdb),
    row("randomkey", 1, READONLY, NONE, keyspace::randomkey),
    row("expiretime", 2, READONLY | FAST, KEY, keyspace::expiretime),
    row("pexpiretime", 2, READONLY | FAST, KEY, keyspace::expiretime),
    row("wait", 3, 0, NONE, keyspace::wait),
    row("sort", -2, WRITE | DENYOOM | MORE_KEYS, KEY, sort::sort),
    row("sort_ro", -2, READONLY, KEY, sort::sort),
    row("object", -2, 0, NONE, object::object),
    row("memory", -2, 0, NONE, object::memory),
    row("dump", 2, READONLY, KEY, dump::dump),
    row("restore", -4, WRITE | DENYOOM, KEY, dump::restore),
    row("subscribe", -2, 0, NONE, pubsub::subscribe),
    row("psubscribe", -2, 0, NONE, pubsub::subscribe),
    row("ssubscribe", -2, 0, NONE, pubsub::subscribe),
    row("unsubscribe", -1, 0, NONE, pubsub::unsubscribe),
    row("punsubscribe", -1, 0, NONE, pubsub::unsubscribe),
    row("sunsubscribe", -1, 0, NONE, pubsub::unsubscribe),
    row("publish", 3, FAST, NONE, pubsub::publish),
    row("spublish", 3, FAST, NONE, pubsub::publish),
    row("pubsub", -2, 0, NONE, pubsub::pubsub),
    row("multi", 1, FAST, NONE, multi::multi),
    row("exec", 1, NO_GATE, NONE, multi::exec),
    row("discard", 1, FAST, NONE, multi::discard),
    row("watch", -2, FAST, ALL, multi::watch),
    row("unwatch", 1, FAST, NONE, multi::unwatch),
    row("eval", -3, NO_GATE, NONE, script::eval),
    row("evalsha", -3, NO_GATE, NONE, script::eval),
    row("eval_ro", -3, READONLY | NO_GATE, NONE, script::eval),
    row("evalsha_ro", -3, READONLY | NO_GATE, NONE, script::eval),
    row("fcall", -3, NO_GATE, NONE, script::fcall),
    row("fcall_ro", -3, READONLY | NO_GATE, NONE, script::fcall),
    row("script", -2, NO_GATE, NONE, script::script),
    row("function", -2, NO_GATE, NONE, script::function),
    row("monitor", 1, 0, NONE, monitor::monitor),
    row("shutdown", -1, 0, NONE, shutdown::shutdown),
    row("cluster", -2, 0, NONE, cluster::cluster),
    row("asking", 1, FAST, NONE, cluster::asking),
    row("readonly", 1, FAST, NONE, cluster::asking),
    row("readwrite", 1, FAST, NONE, cluster::asking),
];

/// The longest command name [`lookup`] is asked about; longer names are unknown.
const MAX_NAME: usize = 24;

/// The table row for a command name in any case: one hash of the name and, nearly always,
/// one slot of [`BY_NAME`]. No allocation. (A scan of the table in order, lengths compared
/// first, cost a command at row 120, `DEL`, about 600 instructions: `docs/benchmarks.md`.)
#[inline]
fn find(name: &[u8]) -> Option<&'static Spec> {
    let mut lower = [0u8; MAX_NAME];
    lower.get_mut(..name.len())?.copy_from_slice(name);
    lower.make_ascii_lowercase();
    lookup(&name_key(&lower))
}

/// The row of a lowercase name's key.
#[inline]
fn lookup(key: &NameKey) -> Option<&'static Spec> {
    let slots = &*BY_NAME;
    let mut i = key_hash(key);
    loop {
        let (k, row) = &slots[i & (BY_NAME_SLOTS - 1)];
        if *row == u16::MAX {
            return None;
        }
        if k[0] == key[0] && k[1] == key[1] && k[2] == key[2] {
            return COMMANDS.get(usize::from(*row));
        }
        i += 1;
    }
}

/// A name of at most [`MAX_NAME`] bytes, zero-padded, as three little-endian words: what
/// [`BY_NAME`] compares and hashes.
type NameKey = [u64; 3];

#[inline]
fn name_key(padded: &[u8; MAX_NAME]) -> NameKey {
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&padded[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    [word(0), word(1), word(2)]
}

#[inline]
fn key_hash(k: &NameKey) -> usize {
    let h =
        k[0].wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k[1].wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ k[2];
    (h.wrapping_mul(0x1656_67B1_9E37_79F9) >> 32) as usize
}

/// Slots of [`BY_NAME`]: a power of two, at least twice the rows, so probes stay short.
const BY_NAME_SLOTS: usize = (2 * crate::cmdstats::COMMAND_ROWS).next_power_of_two();

/// [`COMMANDS`]' rows by name: open addressing (linear probing) from [`key_hash`], each slot
/// the name's key and its row (`u16::MAX`, past the last row, in an empty slot). Built once.
static BY_NAME: std::sync::LazyLock<Box<[(NameKey, u16)]>> = std::sync::LazyLock::new(|| {
    let mut slots = vec![([0; 3], u16::MAX); BY_NAME_SLOTS].into_boxed_slice();
    for (row, c) in COMMANDS.iter().enumerate() {
        let mut padded = [0u8; MAX_NAME];
        padded[..c.name.len()].copy_from_slice(c.name.as_bytes());
        let key = name_key(&padded);
        let mut i = key_hash(&key);
        while slots[i & (BY_NAME_SLOTS - 1)].1 != u16::MAX {
            i += 1;
        }
        slots[i & (BY_NAME_SLOTS - 1)] = (key, row as u16);
    }
    slots
});

/// The counter row (`crate::cmdstats`) of a call of `c`, a row of [`COMMANDS`]: its index in
/// the table (address arithmetic, nothing is dereferenced), or for a container's subcommand
/// the subcommand's row; `usize::MAX`, counted nowhere, for a subcommand Redis does not have.
#[inline]
fn stat_row(c: &'static Spec, cmd: &Command<'_>) -> usize {
    match cmd.get(1) {
        Some(sub) if CONTAINERS.contains(&c.name) => {
            crate::cmdstats::subcommand_row(c.name, sub).unwrap_or(usize::MAX)
        }
        _ => {
            (c as *const Spec as usize).wrapping_sub(COMMANDS.as_ptr() as usize) / size_of::<Spec>()
        }
    }
}

/// Whether `name` (any case) is a command in [`COMMANDS`].
pub(crate) fn is_command(name: &[u8]) -> bool {
    find(name).is_some()
}

/// Runs one command, appending its reply to `out`; then counts an error reply
/// (`errorstats`), publishes the connection's subscription counts, and applies
/// `CLIENT REPLY OFF|SKIP`.
pub(crate) fn execute(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let start = out.len();
    dispatch(cmd, out, s, ctx);
    if s.resume.block.is_some() && !s.resume.suspended {
        // A blocked pop that did not run again to its end (refused before it ran).
        blocking::finish(s, ctx);
    }
    if out.get(start) == Some(&b'-') {
        ctx.stats.commands_by_row.error(&out[start..]);
    }
    publish_subscriptions(s);
    // CLIENT REPLY OFF and SKIP: the reply is dropped (a command answered in steps, each step).
    if s.reply_off || s.reply_skip == 1 {
        out.truncate(start);
        s.out_pins.truncate(start);
    }
    if s.reply_skip > 0 && !s.resume.suspended {
        s.reply_skip -= 1;
    }
}

/// [`Session::admit`] for a RESP command. `MULTI`, `EXEC` and `DISCARD` pay nothing: each
/// command of a transaction pays when it is queued, and a transaction can always begin and
/// end (a refused `MULTI` would leave the commands after it to run one by one). A command
/// refused while queueing fails the transaction (`EXEC` answers `EXECABORT`), as Redis does
/// for a command it refuses before queueing.
pub(crate) fn admit(cmd: &Command<'_>, s: &mut Session, ctx: &mut Ctx<'_>) -> bool {
    let name = cmd.get(0).unwrap_or_default();
    let free = [&b"multi"[..], b"exec", b"discard"];
    if free.iter().any(|f| name.eq_ignore_ascii_case(f)) || s.admit(ctx) {
        return true;
    }
    if let Some(tx) = s.tx.as_mut().filter(|t| t.open) {
        tx.failed = true;
    }
    false
}

/// Answers a command with `error` (a whole `-…\r\n` line) instead of running it — one over
/// its tenant's request rate (`crate::limits`) — counted and dropped as [`execute`] counts
/// and drops an error reply.
pub(crate) fn refuse(error: &[u8], out: &mut Vec<u8>, s: &mut Session, ctx: &Ctx<'_>) {
    ctx.stats.commands_by_row.error(error);
    if !(s.reply_off || s.reply_skip == 1) {
        out.extend_from_slice(error);
    }
    if s.reply_skip > 0 {
        s.reply_skip -= 1;
    }
}

/// Stores the connection's subscription counts where `CLIENT LIST` reads them: three relaxed
/// loads, and stores only when a count changed.
#[inline]
fn publish_subscriptions(s: &Session) {
    let counts = s
        .pubsub
        .as_ref()
        .map_or((0, 0, 0), |p| (p.channels.len(), p.patterns.len(), p.shard.len()));
    let p = &s.pending;
    for (cell, n) in
        [(&p.channels, counts.0), (&p.patterns, counts.1), (&p.shard_channels, counts.2)]
    {
        if cell.load(Ordering::Relaxed) != n {
            cell.store(n, Ordering::Relaxed);
        }
    }
}

/// [`execute`] less its bookkeeping. In order, as Redis: an unknown command or a wrong number
/// of arguments is refused before the login check (`NOAUTH`), which lets through only
/// [`NOAUTH_OK`] commands. Inside MULTI, a refusal flags the transaction and any other
/// command but the few that [`multi::runs_inside`] is queued.
fn dispatch(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let name = cmd.name();
    let spec = find(name);
    let n = cmd.len();
    let refused = match spec {
        None => Some(Refusal::Unknown),
        Some(c) if !c.arity_ok(n) => Some(Refusal::Arity),
        Some(c) if s.user.is_none() && c.flags & NOAUTH_OK == 0 && s.must_login(ctx.tenants) => {
            Some(Refusal::NoAuth)
        }
        Some(_) => None,
    };
    if let Some(why) = refused {
        if let Some(c) = spec {
            ctx.stats.commands_by_row.rejected(stat_row(c, cmd));
        }
        if matches!(why, Refusal::Arity) && spec.is_some_and(|c| c.name == "exec") {
            let mut error = Vec::new();
            write_wrong_arity(&mut error, name);
            return multi::exec_refused(out, s, &error);
        }
        multi::flag(s);
        return match why {
            Refusal::Unknown => r::write_unknown_command(out, cmd),
            Refusal::Arity => write_wrong_arity(out, name),
            Refusal::NoAuth => write_error(out, NOAUTH),
        };
    }
    let Some(c) = spec else { return };
    s.tenant = tenant_for(c, cmd, s, ctx);
    // Cluster mode (`--cluster-config`): keys of another node's slot, or of several slots,
    // are refused here (`cluster.rs`), before subscriber mode and queueing, as in Redis.
    if let Some(cluster) = ctx.shared.cluster.as_ref() {
        let start = out.len();
        if cluster::refused(c, cmd, s, cluster, out) {
            ctx.stats.commands_by_row.rejected(stat_row(c, cmd));
            if c.name == "exec" {
                s.tx = None;
            } else {
                multi::flag(s);
            }
            debug_assert!(out.len() > start);
            return;
        }
    }
    if s.version == r::Version::Resp2
        && s.subscribed()
        && !pubsub::allowed_in_subscriber_mode(c.name)
    {
        ctx.stats.commands_by_row.rejected(stat_row(c, cmd));
        if c.name != "exec" {
            multi::flag(s);
            return pubsub::write_subscriber_mode_error(out, &full_name(c, cmd));
        }
        let mut error = Vec::new();
        pubsub::write_subscriber_mode_error(&mut error, &full_name(c, cmd));
        return multi::exec_refused(out, s, &error);
    }
    let shared = ctx.shared;
    // A script past `busy-reply-threshold` holds every gate: answer BUSY rather than wait
    // (`script::allowed_while_busy` lists what still runs; `docs/threads.md`).
    if shared.scripting.running()
        && shared.scripting.too_long()
        && !script::allowed_while_busy(c, cmd)
    {
        multi::flag(s);
        return script::write_busy(out, shared);
    }
    if ctx.shared.pause.maybe() && paused(c, s, ctx) {
        return s.park();
    }
    if s.tx.is_some() && multi::queueing(s) && !multi::runs_inside(c) {
        if c.name == "shutdown" {
            // Redis's `no-multi`: refused, and the transaction with it.
            ctx.stats.commands_by_row.rejected(stat_row(c, cmd));
            multi::flag(s);
            return write_error(out, b"ERR Command not allowed inside a transaction");
        }
        if let Some(t) = s.tx.as_mut() {
            t.writes |= writes(c);
        }
        return multi::queue(cmd, out, s, ctx);
    }
    // While a script runs, what runs beside it (AUTH, HELLO, QUIT, RESET) touches no key and
    // takes no gate.
    let beside_script = shared.scripting.running() && script::allowed_while_busy(c, cmd);
    let gated = c.flags & NO_GATE == 0 && !beside_script;
    // A write of several keys takes every gate, as EXEC does: no command of another worker
    // sees it half done (Redis runs it whole). Others hold their own worker's gate.
    let all_gates = if gated && writes_several_keys(c, cmd) {
        match shared.gates.enter_all_unless(|| shared.scripting.too_long()) {
            Ok(g) => Some(g),
            Err(_) => return script::write_busy(out, shared),
        }
    } else {
        None
    };
    let _gate = if gated && all_gates.is_none() {
        match shared.gates.enter_unless(ctx.worker, || shared.scripting.too_long()) {
            Ok(g) => g,
            Err(_) => return script::write_busy(out, shared),
        }
    } else {
        None
    };
    run_spec(c, cmd, out, s, ctx);
    if !ctx.pushes.is_empty() {
        out.append(ctx.pushes);
    }
}

/// Whether `cmd` writes more than one key: its key positions name several (`MSET`, `DEL a b`,
/// `RENAME`, `SMOVE`, `LMOVE`, the `*STORE`s…), or it finds its other keys by a count
/// (`ZUNIONSTORE`… `numkeys`, `SORT … STORE`, `MOVE`'s other database). A list rotated onto
/// itself (`RPOPLPUSH l l`, `LMOVE l l …`) is one key, changed by one engine update.
fn writes_several_keys(c: &Spec, cmd: &Command<'_>) -> bool {
    if c.flags & WRITE == 0 || c.first_key == 0 {
        return false;
    }
    if matches!(c.name, "rpoplpush" | "lmove") && cmd.get(1) == cmd.get(2) {
        return false;
    }
    if c.flags & MORE_KEYS != 0 {
        return true;
    }
    let last = if c.last_key < 0 { cmd.len() as i64 + c.last_key } else { c.last_key };
    last >= c.first_key + c.step
}

/// Whether a `CLIENT PAUSE WRITE` covers `c` (see `crate::pause`).
#[inline]
fn writes(c: &Spec) -> bool {
    c.flags & WRITE != 0 || crate::pause::MAY_REPLICATE.contains(&c.name)
}

/// Whether the pause in force covers `c` now: every command, or with `WRITE` those that
/// write and an EXEC whose queue holds one.
#[cold]
fn paused(c: &Spec, s: &Session, ctx: &Ctx<'_>) -> bool {
    let write = writes(c) || (c.name == "exec" && s.tx.as_ref().is_some_and(|t| t.writes));
    ctx.shared.pause.blocks(ctx.shared.now_ms(), write)
}

/// Why [`dispatch`] refused a command before running it.
enum Refusal {
    Unknown,
    Arity,
    NoAuth,
}

/// The tenant a command runs against: the logged-in user's, else `default`, or the tenant
/// the first key's prefix routes to. (BITOP's first key is its second argument.)
#[inline]
fn tenant_for(c: &Spec, cmd: &Command<'_>, s: &Session, ctx: &Ctx<'_>) -> TenantId {
    match s.user {
        Some(t) => t,
        None if ctx.tenants.has_prefixes() && c.has_keys() && !s.must_login(ctx.tenants) => {
            ctx.tenants.route(cmd.get(c.first_key as usize).unwrap_or_default())
        }
        None => TenantId(0),
    }
}

/// Runs a command whose row and arguments were checked, with its counts (`crate::cmdstats`,
/// the latency monitor, the slow log), then client-side caching's bookkeeping. Its
/// invalidations for the connection itself stay in `ctx.pushes`.
#[inline]
fn run_spec(
    c: &'static Spec,
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) {
    // Stored first, as Redis sets `c->cmd`: `CLIENT INFO` shows itself.
    let row = stat_row(c, cmd);
    s.pending.last_row.store(row.wrapping_add(1), Ordering::Relaxed);
    let (start, began) = (out.len(), crate::cmdstats::monotonic_ns());
    // The client's database, through its tenant's SWAPDB map, for this command only: outside
    // a RESP command (memcached's included) the engine handle is in database 0.
    ctx.engine.select(ctx.shared.databases.physical(s.tenant, s.db));
    (c.run)(cmd, out, s, ctx, c);
    ctx.engine.select(0);
    if !s.resume.suspended {
        let nanos = crate::cmdstats::monotonic_ns().saturating_sub(began);
        let failed = out.get(start) == Some(&b'-');
        ctx.stats.commands_by_row.ran(row, nanos, failed);
        if ctx.shared.latency_tracking.on() {
            ctx.stats.latency_by_row.record(row, nanos);
        }
        if ctx.shared.latency.wants(nanos) {
            ctx.shared.latency.record(c.flags & FAST != 0, nanos);
        }
        if ctx.shared.slowlog.wants(nanos / 1000) && !SKIP_SLOWLOG.contains(&c.name) {
            let args = (0..cmd.len()).map(|i| cmd.get(i).unwrap_or_default());
            crate::watch_events::slow(args, nanos / 1000, s.tenant, ctx);
        }
        if ctx.shared.watch.wants(crate::watch::WatchEvents::MONITOR) {
            monitor::feed(c, cmd, s, ctx);
        }
    }
    if s.tracking.is_some() && !s.resume.suspended {
        tracking::after_command(cmd, s, ctx, c);
    }
}

/// Runs one command of a transaction's queue inside EXEC (the gates held): a command that
/// suspends (a long reply) is run on at once to its end. Whenever the reply from `from` on
/// grows past `limit` bytes it is cut back to `from`; returns whether that happened.
fn run_queued(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    from: usize,
    limit: usize,
) -> bool {
    let Some(c) = find(cmd.name()) else {
        r::write_unknown_command(out, cmd);
        return false;
    };
    if c.name == "monitor" {
        // Redis: a client in EXEC expects a reply per command ("deny blocking").
        write_error(out, b"ERR MONITOR isn't allowed for DENY BLOCKING client");
        return false;
    }
    s.tenant = tenant_for(c, cmd, s, ctx);
    let mut over = false;
    loop {
        run_spec(c, cmd, out, s, ctx);
        if out.len().saturating_sub(from) > limit {
            out.truncate(from);
            over = true;
        }
        if !s.keep_for_later() {
            return over;
        }
    }
}

/// Commands the slow log leaves out, as Redis does (`no-slowlog`: their arguments may hold a
/// password).
const SKIP_SLOWLOG: [&str; 2] = ["auth", "hello"];

/// Commands with subcommands: Redis names them `name|sub` in errors.
const CONTAINERS: [&str; 11] = [
    "acl", "client", "cluster", "command", "config", "function", "hotkeys", "latency", "pubsub",
    "script", "slowlog",
];

/// A command's full name as Redis gives it in errors: `get`, `client|id`.
fn full_name(c: &Spec, cmd: &Command<'_>) -> Vec<u8> {
    let mut full = c.name.as_bytes().to_vec();
    if let Some(sub) = cmd.get(1).filter(|_| CONTAINERS.contains(&c.name)) {
        full.push(b'|');
        full.extend(sub.iter().take(128).map(u8::to_ascii_lowercase));
    }
    full
}

/// A command changed `key` (of the database the engine handle has selected): publishes the
/// keyspace notification (see `crate::notify`) and sends client-side caching's invalidations
/// (`crate::tracking`).
#[inline]
fn notify(ctx: &mut Ctx<'_>, tenant: TenantId, class: u32, event: &str, key: &[u8]) {
    use crate::keyspace::{GENERIC, LIST, ZSET};
    // A list or sorted set that changed may serve a blocked pop: one load while nobody waits.
    let kinds = match class {
        c if c & GENERIC != 0 => crate::blocking::LISTS | crate::blocking::ZSETS,
        c if c & LIST != 0 => crate::blocking::LISTS,
        c if c & ZSET != 0 => crate::blocking::ZSETS,
        _ => 0,
    };
    if kinds != 0 {
        let shared = ctx.shared;
        let db = || shared.databases.logical(tenant, ctx.engine.db());
        shared.blocking.signal((ctx.client, kinds), tenant, db, key, |w| shared.wake(w));
    }
    crate::notify::changed(ctx, tenant, class, event, key);
}

/// A second notification for a change [`notify`] announced already (`SET … EX`'s `expire`):
/// no second invalidation.
#[inline]
fn notify_only(ctx: &Ctx<'_>, tenant: TenantId, class: u32, event: &str, key: &[u8]) {
    let shared = ctx.shared;
    if shared.notify.wants(class) {
        let db = shared.databases.logical(tenant, ctx.engine.db());
        crate::notify::key_event(shared, ctx.worker, tenant, db, class, event, key);
    }
}

fn no_permission(out: &mut Vec<u8>, command: &[u8]) {
    out.extend_from_slice(b"-NOPERM this user has no permissions to run the '");
    out.extend_from_slice(command);
    out.extend_from_slice(b"' command\r\n");
}

fn unknown_subcommand(out: &mut Vec<u8>, sub: &[u8], command: &[u8]) {
    out.extend_from_slice(b"-ERR unknown subcommand '");
    out.extend(sub.iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
    out.extend_from_slice(b"'. Try ");
    out.extend_from_slice(command);
    out.extend_from_slice(b" HELP.\r\n");
}

fn engine_error(out: &mut Vec<u8>, e: EngineError) {
    write_error(
        out,
        match e {
            EngineError::TooLarge => {
                b"ERR string exceeds maximum allowed size (proto-max-bulk-len)"
            }
            EngineError::KeyTooLong => b"ERR invalid key: empty or longer than the key limit",
            EngineError::OutOfMemory | EngineError::TooManyWorkers => {
                b"OOM command not allowed when used memory > 'maxmemory'."
            }
            EngineError::WrongKind => WRONGTYPE,
            EngineError::KeyLimit => KEY_LIMIT,
            EngineError::ByteLimit => BYTE_LIMIT,
        },
    );
}

/// The reply to a write that would add a key to a tenant holding its `max_keys` keys
/// (`docs/tenants.md`, "Limits"): Redis's `OOM` error class, which clients treat as a
/// refused write, with the tenant's limit for the reason.
pub(crate) const KEY_LIMIT: &[u8] =
    b"OOM command not allowed when the tenant holds 'max_keys' keys.";

/// The reply to a write that would take a tenant past its `max_bytes`: the same class.
pub(crate) const BYTE_LIMIT: &[u8] =
    b"OOM command not allowed when the tenant would hold more than 'max_bytes' bytes.";

fn counter_error(out: &mut Vec<u8>, e: CounterError) {
    let reason: &[u8] = match e {
        CounterError::Engine(e) => return engine_error(out, e),
        CounterError::NotANumber | CounterError::NotAnInteger => NOT_INTEGER,
        CounterError::Overflow => b"ERR increment or decrement would overflow",
        CounterError::NotAFloat => NOT_FLOAT,
        CounterError::NotFinite => NOT_FINITE,
    };
    write_error(out, reason);
}

fn invalid_expire(out: &mut Vec<u8>, lname: &[u8]) {
    out.extend_from_slice(b"-ERR invalid expire time in '");
    out.extend_from_slice(lname);
    out.extend_from_slice(b"' command\r\n");
}

fn int_arg(a: &[u8]) -> Option<i64> {
    parse_redis_i64(a)
}

/// A relative or absolute expire argument turned into absolute ms. `unit_ms` is 1000 for
/// seconds; `absolute` for the `…AT` forms. `now` must be the precise clock
/// ([`crate::shared::precise_now_ms`]): a deadline counted from the coarse one could come early.
/// `None` on overflow.
fn expire_at(n: i64, unit_ms: i64, absolute: bool, now: u64) -> Option<i64> {
    let ms = n.checked_mul(unit_ms)?;
    if absolute { Some(ms) } else { ms.checked_add(i64::try_from(now).ok()?) }
}

#[cfg(test)]
mod tests {
    use super::{BY_NAME, BY_NAME_SLOTS, COMMANDS, MAX_NAME, NOAUTH_OK, Spec, find, name_key};

    /// The row of a lowercase name, looked up as it is (no case folding).
    fn lookup(lname: &[u8]) -> Option<&'static Spec> {
        let mut padded = [0u8; MAX_NAME];
        padded.get_mut(..lname.len())?.copy_from_slice(lname);
        super::lookup(&name_key(&padded))
    }

    #[test]
    fn every_row_is_reachable_by_its_name_in_any_case() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert!(c.name.len() <= MAX_NAME, "{} is longer than a lookup reads", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase(), "names are lowercase");
            let found = lookup(c.name.as_bytes()).map(|f| f as *const _);
            assert_eq!(found, Some(c as *const _), "{} is found as itself (no duplicate)", c.name);
            let upper = find(c.name.to_ascii_uppercase().as_bytes()).map(|f| f as *const _);
            assert_eq!(upper, Some(c as *const _), "{} is found in upper case", c.name);
            assert!(COMMANDS[..i].iter().all(|o| o.name != c.name), "{} twice", c.name);
        }
        assert!(find(b"nosuchcommand").is_none());
        assert!(find(&[b'g'; MAX_NAME + 1]).is_none(), "a name too long is unknown");
        // Every prefix and extension of every name is unknown unless it is a row itself.
        for c in &COMMANDS {
            for name in [&c.name[..c.name.len() - 1], &format!("{}x", c.name)[..]] {
                let row = COMMANDS.iter().find(|o| o.name == name).map(|o| o as *const _);
                assert_eq!(lookup(name.as_bytes()).map(|f| f as *const _), row, "{name}");
            }
        }
        // Each row is in the index once, and the index is at most half full.
        let mut rows: Vec<u16> = BY_NAME.iter().map(|s| s.1).filter(|&r| r != u16::MAX).collect();
        rows.sort_unstable();
        assert_eq!(rows, (0..COMMANDS.len() as u16).collect::<Vec<_>>());
        assert!(2 * COMMANDS.len() <= BY_NAME_SLOTS);
    }

    #[test]
    fn arity_and_keys_are_consistent() {
        for c in &COMMANDS {
            assert_ne!(c.arity, 0, "{}: arity counts the name", c.name);
            if c.first_key > 0 {
                assert!(c.step > 0 && c.arity.abs() > c.first_key, "{}: keys fit", c.name);
            } else {
                assert_eq!((c.last_key, c.step), (0, 0), "{}: no keys", c.name);
            }
        }
        assert!(!COMMANDS[0].arity_ok(1) && COMMANDS[0].arity_ok(2) && !COMMANDS[0].arity_ok(3));
        let set = find(b"set").map(|c| (c.arity_ok(2), c.arity_ok(3), c.arity_ok(9)));
        assert_eq!(set, Some((false, true, true)), "negative arity: at least");
    }

    #[test]
    fn only_connection_commands_run_before_login() {
        let mut names: Vec<&str> =
            COMMANDS.iter().filter(|c| c.flags & NOAUTH_OK != 0).map(|c| c.name).collect();
        names.sort_unstable();
        assert_eq!(names, ["auth", "hello", "quit", "reset"]);
    }
}
