//! What `CLIENT LIST` and `CLIENT INFO` show of a connection's buffers and state
//! (<https://redis.io/commands/client-list/>; Redis 7.0 `networking.c`,
//! `catClientInfoString`): its worker stores them here at the end of each of the
//! connection's turns, and the registry entry shares them (`pubsub::Pending`).
//!
//! Cost: a handful of relaxed loads per turn, and a store only for a figure that changed.
//! The figures are those of the end of the connection's last turn: a connection asking
//! about itself sees its buffers as they were before its request (Redis shows the request
//! in its own `qbuf`).
//!
//! How fridge's buffers map to Redis's fields: `qbuf` is the unprocessed input, `qbuf-free`
//! the room left in the read buffer, `argv-mem` the parsed arguments' heap, `multi-mem` the
//! queued transaction's bytes; replies go to one growable buffer per connection, so `rbs`
//! and `rbp` are its capacity, `obl` its unsent bytes, `oll` is 0 (no reply list) and `omem`
//! is the buffer's capacity beyond Redis's fixed 16 KiB reply buffer.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// A connection's figures (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct ClientBuffers {
    pub fd: AtomicI32,
    pub qbuf: AtomicUsize,
    pub qbuf_free: AtomicUsize,
    pub argv_mem: AtomicUsize,
    /// Commands queued by `MULTI`, plus one; 0 outside a transaction (`multi=-1`).
    pub multi: AtomicUsize,
    pub multi_mem: AtomicUsize,
    pub rbs: AtomicUsize,
    pub obl: AtomicUsize,
    /// Watched keys: `watch=`, Redis 7.4's field, written after Redis 7.0's fields.
    pub watch: AtomicUsize,
    /// [`MONITOR`], [`MULTI`], [`PAUSED`], [`TRACKING`] or-ed.
    pub flags: AtomicUsize,
}

/// `O`: the connection monitors.
pub(crate) const MONITOR: usize = 1;
/// `x`: in MULTI.
pub(crate) const MULTI: usize = 1 << 1;
/// `b`: a command of it waits (`CLIENT PAUSE`).
pub(crate) const PAUSED: usize = 1 << 2;
/// `t`: client-side caching is on.
pub(crate) const TRACKING: usize = 1 << 3;

/// Redis's fixed reply buffer: `omem` counts what is beyond it.
const REPLY_CHUNK: usize = 16 * 1024;

/// A connection's figures at the end of a turn.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Figures {
    pub qbuf: usize,
    pub qbuf_free: usize,
    pub argv_mem: usize,
    pub multi: Option<usize>,
    pub multi_mem: usize,
    pub rbs: usize,
    pub obl: usize,
    pub watch: usize,
    pub flags: usize,
}

impl ClientBuffers {
    /// Stores `f`: a relaxed load per figure, a store only where it changed.
    #[inline]
    pub(crate) fn publish(&self, f: &Figures) {
        let multi = f.multi.map_or(0, |n| n + 1);
        for (cell, v) in [
            (&self.qbuf, f.qbuf),
            (&self.qbuf_free, f.qbuf_free),
            (&self.argv_mem, f.argv_mem),
            (&self.multi, multi),
            (&self.multi_mem, f.multi_mem),
            (&self.rbs, f.rbs),
            (&self.obl, f.obl),
            (&self.watch, f.watch),
            (&self.flags, f.flags),
        ] {
            if cell.load(Ordering::Relaxed) != v {
                cell.store(v, Ordering::Relaxed);
            }
        }
    }

    /// `CLIENT LIST`'s fields from `multi=` to `omem=`, then `tot-mem`'s value is the
    /// caller's; written as Redis 7.0 orders them.
    pub(crate) fn write_fields(&self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        let load = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        let multi = load(&self.multi).checked_sub(1).map_or(-1, |n| n as i64);
        let rbs = load(&self.rbs);
        let _ = write!(
            out,
            "multi={multi} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={rbs} rbp={rbs} \
             obl={} oll=0 omem={}",
            load(&self.qbuf),
            load(&self.qbuf_free),
            load(&self.argv_mem),
            load(&self.multi_mem),
            load(&self.obl),
            rbs.saturating_sub(REPLY_CHUNK),
        );
    }

    /// Redis's `flags=`, in Redis's order: `O` monitor, `P` subscriber, `x` in MULTI, `b`
    /// paused, `t` tracking, `e` no-evict; `N` none.
    pub(crate) fn flags(&self, subscribed: bool, no_evict: bool) -> String {
        let f = self.flags.load(Ordering::Relaxed);
        let mut s = String::new();
        let set = |bit: usize| f & bit != 0;
        for (on, c) in [
            (set(MONITOR), 'O'),
            (subscribed, 'P'),
            (set(MULTI), 'x'),
            (set(PAUSED), 'b'),
            (set(TRACKING), 't'),
            (no_evict, 'e'),
        ] {
            if on {
                s.push(c);
            }
        }
        if s.is_empty() {
            s.push('N');
        }
        s
    }

    /// Redis's `events=`: `r`, and `w` while replies wait to be written.
    pub(crate) fn events(&self) -> &'static str {
        if self.obl.load(Ordering::Relaxed) > 0 { "rw" } else { "r" }
    }
}
