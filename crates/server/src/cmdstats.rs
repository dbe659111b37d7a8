//! Redis's `INFO commandstats` and `INFO errorstats` (Redis 7.0 `server.c`,
//! `genRedisInfoString`; <https://redis.io/commands/info/>): calls, time, rejected and failed
//! calls per command, and error replies per error prefix.
//!
//! Each worker owns a [`CommandCounters`] in its [`crate::WorkerStats`] and is its only
//! writer: a command adds to the counters of its row of the command table (`resp::COMMANDS`)
//! with plain loads and stores — no lock, no allocation on the request path. `INFO` sums the
//! workers' rows and subtracts the baseline `CONFIG RESETSTAT` took.
//!
//! As Redis counts them: a *rejected* call was refused before it ran (wrong number of
//! arguments, `NOAUTH`, not allowed in subscriber mode); a *failed* call ran and replied with
//! an error. Every error reply, an unknown command's included, counts once under its prefix
//! (the reply's first word: `ERR`, `WRONGTYPE`, …) in errorstats. Time is measured around the
//! handler only, in nanoseconds, and shown in microseconds.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Nanoseconds of the kernel's monotonic clock (0 if it cannot be read), for timing commands
/// and for systemd's `MONOTONIC_USEC`: a read is one `clock_gettime` through the vDSO and a
/// multiply-add, and a duration one subtraction, where `Instant`'s `elapsed` subtracts
/// `timespec`s with their checks (about 45 instructions a command more; `docs/design.md`,
/// "The memcached text path").
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map_or(0, |t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// The rows of `resp::COMMANDS`, the Redis command table.
pub const COMMAND_ROWS: usize = 210;

/// The subcommands of the container commands, counted apart as Redis does
/// (`cmdstat_config|get`): counter row `COMMAND_ROWS + i` is `SUBCOMMANDS[i]`. Redis 7.0's
/// subcommands of the containers fridge has; an unknown subcommand is no call of any.
pub(crate) const SUBCOMMANDS: [&str; 102] = [
    "acl|cat",
    "acl|deluser",
    "acl|dryrun",
    "acl|genpass",
    "acl|getuser",
    "acl|help",
    "acl|list",
    "acl|load",
    "acl|log",
    "acl|save",
    "acl|setuser",
    "acl|users",
    "acl|whoami",
    "client|caching",
    "client|getname",
    "client|getredir",
    "client|help",
    "client|id",
    "client|info",
    "client|kill",
    "client|list",
    "client|no-evict",
    "client|pause",
    "client|reply",
    "client|setname",
    "client|tracking",
    "client|trackinginfo",
    "client|unblock",
    "client|unpause",
    "cluster|addslots",
    "cluster|addslotsrange",
    "cluster|bumpepoch",
    "cluster|count-failure-reports",
    "cluster|countkeysinslot",
    "cluster|delslots",
    "cluster|delslotsrange",
    "cluster|failover",
    "cluster|flushslots",
    "cluster|forget",
    "cluster|getkeysinslot",
    "cluster|help",
    "cluster|info",
    "cluster|keyslot",
    "cluster|links",
    "cluster|meet",
    "cluster|myid",
    "cluster|nodes",
    "cluster|replicas",
    "cluster|replicate",
    "cluster|reset",
    "cluster|saveconfig",
    "cluster|set-config-epoch",
    "cluster|setslot",
    "cluster|shards",
    "cluster|slaves",
    "cluster|slots",
    "command|count",
    "command|docs",
    "command|getkeys",
    "command|getkeysandflags",
    "command|help",
    "command|info",
    "command|list",
    "config|get",
    "config|help",
    "config|resetstat",
    "config|rewrite",
    "config|set",
    "function|delete",
    "function|dump",
    "function|flush",
    "function|help",
    "function|kill",
    "function|list",
    "function|load",
    "function|restore",
    "function|stats",
    "hotkeys|get",
    "hotkeys|help",
    "hotkeys|reset",
    "latency|doctor",
    "latency|help",
    "latency|histogram",
    "latency|history",
    "latency|latest",
    "latency|reset",
    "pubsub|channels",
    "pubsub|help",
    "pubsub|numpat",
    "pubsub|numsub",
    "pubsub|shardchannels",
    "pubsub|shardnumsub",
    "script|debug",
    "script|exists",
    "script|flush",
    "script|help",
    "script|kill",
    "script|load",
    "slowlog|get",
    "slowlog|help",
    "slowlog|len",
    "slowlog|reset",
];

/// The name of counter row `row`: a command table row named by `command`, or a
/// [`SUBCOMMANDS`] entry; `None` past the end.
pub(crate) fn row_name(
    row: usize,
    command: impl Fn(usize) -> &'static str,
) -> Option<&'static str> {
    if row < COMMAND_ROWS {
        Some(command(row))
    } else {
        SUBCOMMANDS.get(row - COMMAND_ROWS).copied()
    }
}

/// Counter rows: the command table's, then [`SUBCOMMANDS`]'.
pub const STAT_ROWS: usize = COMMAND_ROWS + SUBCOMMANDS.len();

/// The counter row of subcommand `sub` (any case) of container `container`, if Redis has it.
pub(crate) fn subcommand_row(container: &str, sub: &[u8]) -> Option<usize> {
    SUBCOMMANDS
        .iter()
        .position(|full| {
            full.len() == container.len() + 1 + sub.len()
                && full.starts_with(container)
                && full.as_bytes()[container.len()] == b'|'
                && full.as_bytes()[container.len() + 1..].eq_ignore_ascii_case(sub)
        })
        .map(|i| COMMAND_ROWS + i)
}

/// The error prefixes errorstats counts separately. A prefix not listed here (fridge writes
/// none) counts under the last, `OTHER`.
pub(crate) const ERROR_PREFIXES: [&str; 19] = [
    "ERR",
    "WRONGTYPE",
    "NOAUTH",
    "WRONGPASS",
    "NOPERM",
    "OOM",
    "EXECABORT",
    "NOPROTO",
    "BUSY",
    "NOSCRIPT",
    "NOTBUSY",
    "UNKILLABLE",
    "BUSYKEY",
    "LOADING",
    "READONLY",
    "MOVED",
    "CROSSSLOT",
    "CLUSTERDOWN",
    "OTHER",
];

/// Adds `n` to a counter that only the calling thread writes (as `worker_stats::add`).
#[inline]
fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One worker's counts per counter row (see [`STAT_ROWS`]) and per error prefix.
#[derive(Debug)]
pub struct CommandCounters {
    /// Calls that ran.
    pub calls: [AtomicU64; STAT_ROWS],
    /// Time spent in the handler, nanoseconds.
    pub nanos: [AtomicU64; STAT_ROWS],
    /// Calls refused before they ran.
    pub rejected: [AtomicU64; STAT_ROWS],
    /// Calls that ran and replied with an error.
    pub failed: [AtomicU64; STAT_ROWS],
    /// Error replies per [`ERROR_PREFIXES`] entry.
    pub errors: [AtomicU64; ERROR_PREFIXES.len()],
}

impl Default for CommandCounters {
    fn default() -> Self {
        CommandCounters {
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
            nanos: std::array::from_fn(|_| AtomicU64::new(0)),
            rejected: std::array::from_fn(|_| AtomicU64::new(0)),
            failed: std::array::from_fn(|_| AtomicU64::new(0)),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl CommandCounters {
    /// A call of row `row` ran for `nanos`; `failed` if it replied with an error.
    #[inline]
    pub(crate) fn ran(&self, row: usize, nanos: u64, failed: bool) {
        if let (Some(c), Some(t), Some(f)) =
            (self.calls.get(row), self.nanos.get(row), self.failed.get(row))
        {
            add(c, 1);
            add(t, nanos);
            if failed {
                add(f, 1);
            }
        }
    }

    /// A call of row `row` was refused before it ran.
    #[inline]
    pub(crate) fn rejected(&self, row: usize) {
        if let Some(r) = self.rejected.get(row) {
            add(r, 1);
        }
    }

    /// Counts the error reply `reply` (a RESP error, from its `-`) in errorstats.
    #[inline]
    pub(crate) fn error(&self, reply: &[u8]) {
        let body = reply.strip_prefix(b"-").unwrap_or(reply);
        let word = body.split(|&b| b == b' ' || b == b'\r').next().unwrap_or_default();
        let i = ERROR_PREFIXES
            .iter()
            .position(|p| p.as_bytes() == word)
            .unwrap_or(ERROR_PREFIXES.len() - 1);
        add(&self.errors[i], 1);
    }
}

/// Sums of [`CommandCounters`] over workers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommandTotals {
    pub calls: [u64; STAT_ROWS],
    pub nanos: [u64; STAT_ROWS],
    pub rejected: [u64; STAT_ROWS],
    pub failed: [u64; STAT_ROWS],
    pub errors: [u64; ERROR_PREFIXES.len()],
}

impl Default for CommandTotals {
    fn default() -> Self {
        CommandTotals {
            calls: [0; STAT_ROWS],
            nanos: [0; STAT_ROWS],
            rejected: [0; STAT_ROWS],
            failed: [0; STAT_ROWS],
            errors: [0; ERROR_PREFIXES.len()],
        }
    }
}

impl CommandTotals {
    /// The sums over `workers`' counters.
    pub(crate) fn of<'a>(workers: impl Iterator<Item = &'a CommandCounters>) -> CommandTotals {
        fn sum<const N: usize>(to: &mut [u64; N], from: &[AtomicU64; N]) {
            for (t, f) in to.iter_mut().zip(from) {
                *t += f.load(Ordering::Relaxed);
            }
        }
        let mut t = CommandTotals::default();
        for w in workers {
            sum(&mut t.calls, &w.calls);
            sum(&mut t.nanos, &w.nanos);
            sum(&mut t.rejected, &w.rejected);
            sum(&mut t.failed, &w.failed);
            sum(&mut t.errors, &w.errors);
        }
        t
    }

    /// These counts less `base` (the baseline of the last reset).
    pub(crate) fn since(&self, base: &CommandTotals) -> CommandTotals {
        fn less<const N: usize>(now: &[u64; N], then: &[u64; N]) -> [u64; N] {
            std::array::from_fn(|i| now[i].saturating_sub(then[i]))
        }
        CommandTotals {
            calls: less(&self.calls, &base.calls),
            nanos: less(&self.nanos, &base.nanos),
            rejected: less(&self.rejected, &base.rejected),
            failed: less(&self.failed, &base.failed),
            errors: less(&self.errors, &base.errors),
        }
    }

    /// Appends `INFO commandstats`'s lines (no header): one per command called or refused at
    /// least once, in table order, named by `name(row)` (a command table row) or by
    /// [`SUBCOMMANDS`].
    pub(crate) fn write_commandstats(
        &self,
        out: &mut Vec<u8>,
        name: impl Fn(usize) -> &'static str,
    ) {
        for row in 0..STAT_ROWS {
            let (calls, rejected) = (self.calls[row], self.rejected[row]);
            if calls == 0 && rejected == 0 {
                continue;
            }
            let usec = self.nanos[row] / 1000;
            let per_call =
                if calls == 0 { 0.0 } else { self.nanos[row] as f64 / 1000.0 / calls as f64 };
            let _ = write!(
                out,
                "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},\
                 rejected_calls={rejected},failed_calls={}\r\n",
                if row < COMMAND_ROWS { name(row) } else { SUBCOMMANDS[row - COMMAND_ROWS] },
                self.failed[row],
            );
        }
    }

    /// Appends `INFO errorstats`'s lines (no header): one per prefix counted at least once.
    pub(crate) fn write_errorstats(&self, out: &mut Vec<u8>) {
        for (prefix, &count) in ERROR_PREFIXES.iter().zip(&self.errors) {
            if count > 0 {
                let _ = write!(out, "errorstat_{prefix}:count={count}\r\n");
            }
        }
    }
}
