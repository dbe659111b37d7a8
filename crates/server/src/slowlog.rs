//! The slow requests: one bounded ring that Redis's `SLOWLOG` reads
//! (<https://redis.io/commands/slowlog/>; Redis 7.0 `slowlog.c`) and memcached's `watch slow`
//! streams (fridge's stream, `crate::watch`). Every request that ran for
//! `slowlog-log-slower-than` microseconds or more (negative: none; 0: every request) enters
//! it, newest first, at most `slowlog-max-len` of them: Redis commands (the handler's time)
//! and memcached text and meta requests (from the end of the connection's previous request,
//! or from when its input was read, to the end of this one: parsing included).
//!
//! An entry keeps what Redis keeps: an id, the time, the duration (µs), at most 32 arguments
//! (the 32nd says `... (N more arguments)`), each cut at 128 bytes (`... (N more bytes)`), the
//! client's address and name — and its tenant, so a tenant's watcher sees its own requests.
//! A memcached request's arguments are its command line's words (a store's data is not).
//! An entry is therefore at most about 5 KiB, and `slowlog-max-len` is capped at [`MAX_LEN`]
//! entries, so the ring takes at most about 50 MiB; a full ring reuses its oldest entry's
//! buffers, so logging allocates only while the ring grows.
//!
//! A request faster than the threshold costs one relaxed load; a slower one takes the ring's
//! lock. A watcher reads the entries after its cursor under the same lock; an entry dropped
//! from the ring before a watcher read it is counted in the watcher's `skipped=`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use fridge_engine::TenantId;

/// Redis's limits on what an entry keeps.
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

/// The largest `slowlog-max-len` (Redis has none; fridge bounds the ring's memory).
pub(crate) const MAX_LEN: usize = 10_000;

/// One logged request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Entry {
    pub id: u64,
    /// When it was logged, in microseconds since the Unix epoch.
    pub time_us: u64,
    pub micros: u64,
    pub tenant: TenantId,
    /// The arguments, cut, one after the other; `ends[i]` is where argument `i` ends.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    pub addr: String,
    pub name: String,
}

impl Entry {
    /// The Unix time, in seconds (Redis's field).
    pub(crate) fn time(&self) -> u64 {
        self.time_us / 1_000_000
    }

    /// The arguments, cut as Redis cuts them.
    pub(crate) fn args(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        (0..self.ends.len()).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.bytes[start..self.ends[i]]
        })
    }

    /// Fills the entry, keeping its buffers.
    fn fill<'a>(&mut self, args: impl ExactSizeIterator<Item = &'a [u8]>) {
        use std::io::Write as _;
        self.bytes.clear();
        self.ends.clear();
        let argc = args.len();
        let kept = argc.min(MAX_ARGS);
        for (j, a) in args.take(kept).enumerate() {
            if kept != argc && j == kept - 1 {
                let _ = write!(self.bytes, "... ({} more arguments)", argc - kept + 1);
            } else if a.len() > MAX_ARG_BYTES {
                self.bytes.extend_from_slice(&a[..MAX_ARG_BYTES]);
                let _ = write!(self.bytes, "... ({} more bytes)", a.len() - MAX_ARG_BYTES);
            } else {
                self.bytes.extend_from_slice(a);
            }
            self.ends.push(self.bytes.len());
        }
    }
}

/// Who logged a request: its tenant, address and name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client<'a> {
    pub tenant: TenantId,
    pub addr: &'a str,
    pub name: &'a str,
}

/// A reader of the ring that is not `SLOWLOG` (a `watch slow` connection): the entries it
/// may see, and where it is.
pub(crate) trait Reader {
    /// Whether it may see `tenant`'s entries.
    fn sees(&self, tenant: TenantId) -> bool;
    /// The id of the first entry it has not read.
    fn cursor(&self) -> u64;
    /// Counts an entry it will never read (dropped from the ring first).
    fn missed(&self);
}

/// The ring and its two settings.
#[derive(Debug)]
pub(crate) struct SlowLog {
    slower_than: AtomicI64,
    max_len: AtomicUsize,
    ring: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    next_id: u64,
    /// Newest first.
    entries: VecDeque<Entry>,
}

impl Default for SlowLog {
    fn default() -> Self {
        // Redis's defaults.
        SlowLog {
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            ring: Mutex::default(),
        }
    }
}

impl SlowLog {
    fn lock(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a request that ran for `micros` is logged.
    #[inline]
    pub(crate) fn wants(&self, micros: u64) -> bool {
        let t = self.slower_than.load(Ordering::Relaxed);
        t >= 0 && micros >= t as u64
    }

    pub(crate) fn slower_than(&self) -> i64 {
        self.slower_than.load(Ordering::Relaxed)
    }

    pub(crate) fn set_slower_than(&self, micros: i64) {
        self.slower_than.store(micros, Ordering::Relaxed);
    }

    pub(crate) fn max_len(&self) -> usize {
        self.max_len.load(Ordering::Relaxed)
    }

    /// Sets the length limit and drops the oldest entries beyond it, counting them missed by
    /// the `readers` that had not read them.
    pub(crate) fn set_max_len<R: Reader>(&self, n: usize, readers: &[&R]) {
        let n = n.min(MAX_LEN);
        self.max_len.store(n, Ordering::Relaxed);
        let mut ring = self.lock();
        while ring.entries.len() > n {
            if let Some(e) = ring.entries.pop_back() {
                count_missed(&e, readers);
            }
        }
    }

    /// Logs a request; the oldest entry leaves a full ring (counted missed by the `readers`
    /// that had not read it) and its buffers hold the new one.
    pub(crate) fn push<'a, R: Reader>(
        &self,
        args: impl ExactSizeIterator<Item = &'a [u8]>,
        micros: u64,
        client: Client<'_>,
        readers: &[&R],
    ) {
        let time_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let max = self.max_len();
        let mut ring = self.lock();
        let id = ring.next_id;
        ring.next_id += 1;
        if max == 0 {
            return;
        }
        // The last entry to leave (the ring may be past a limit lowered since `max` was read)
        // lends its buffers.
        let mut e = Entry::default();
        while ring.entries.len() >= max {
            let Some(old) = ring.entries.pop_back() else { break };
            count_missed(&old, readers);
            e = old;
        }
        e.fill(args);
        (e.id, e.time_us, e.micros, e.tenant) = (id, time_us, micros, client.tenant);
        e.addr.clear();
        e.addr.push_str(client.addr);
        e.name.clear();
        e.name.push_str(client.name);
        ring.entries.push_front(e);
    }

    /// The newest `count` entries (all with `None`).
    pub(crate) fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let ring = self.lock();
        ring.entries.iter().take(count.unwrap_or(usize::MAX)).cloned().collect()
    }

    /// Calls `each` on the entries `reader` has not read and may see, oldest first, until it
    /// answers `false`; returns the cursor after the last entry it took.
    pub(crate) fn read_after(
        &self,
        reader: &impl Reader,
        mut each: impl FnMut(&Entry) -> bool,
    ) -> u64 {
        let ring = self.lock();
        let mut cursor = reader.cursor().max(ring.entries.back().map_or(ring.next_id, |e| e.id));
        let first = cursor;
        for e in ring.entries.iter().rev().filter(|e| e.id >= first) {
            if reader.sees(e.tenant) && !each(e) {
                return cursor;
            }
            cursor = e.id + 1;
        }
        ring.next_id
    }

    /// The id the next entry will have (a new reader's cursor).
    pub(crate) fn next_id(&self) -> u64 {
        self.lock().next_id
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Empties the ring (`SLOWLOG RESET`); readers are not told of the entries they lose.
    pub(crate) fn reset(&self) {
        self.lock().entries.clear();
    }
}

fn count_missed<R: Reader>(e: &Entry, readers: &[&R]) {
    for r in readers {
        if r.cursor() <= e.id && r.sees(e.tenant) {
            r.missed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const NOBODY: Client<'static> = Client { tenant: TenantId(0), addr: "", name: "" };
    /// No reader (the tests of what `SLOWLOG` alone sees).
    const NONE: &[&Watch] = &[];

    struct Watch {
        tenant: Option<TenantId>,
        cursor: Cell<u64>,
        missed: Cell<u64>,
    }

    impl Reader for Watch {
        fn sees(&self, t: TenantId) -> bool {
            self.tenant.is_none_or(|w| w == t)
        }
        fn cursor(&self) -> u64 {
            self.cursor.get()
        }
        fn missed(&self) {
            self.missed.set(self.missed.get() + 1);
        }
    }

    #[test]
    fn arguments_are_cut_as_redis_cuts_them() {
        let log = SlowLog::default();
        let long = [b'x'; 200];
        let many: Vec<Vec<u8>> = (0..40).map(|i| format!("a{i}").into_bytes()).collect();
        let client = Client { tenant: TenantId(0), addr: "1.2.3.4:5", name: "" };
        log.push([&long[..]].into_iter(), 5, client, NONE);
        log.push(many.iter().map(Vec::as_slice), 6, Client { name: "n", ..NOBODY }, NONE);
        let e = log.newest(None);
        assert_eq!(e.len(), 2);
        let args: Vec<&[u8]> = e[0].args().collect();
        assert_eq!(args.len(), 32);
        assert_eq!(args[31], b"... (9 more arguments)");
        assert_eq!(args[30], b"a30");
        let long_arg = e[1].args().next().unwrap();
        assert_eq!(long_arg.len(), 128 + b"... (72 more bytes)".len());
        assert!(long_arg.ends_with(b"... (72 more bytes)"));
        assert_eq!((e[0].id, e[1].id), (1, 0));
        assert_eq!((e[0].name.as_str(), e[1].addr.as_str()), ("n", "1.2.3.4:5"));
    }

    #[test]
    fn the_ring_keeps_the_newest_up_to_its_length_and_reuses_the_oldest() {
        let log = SlowLog::default();
        log.set_max_len(2, NONE);
        for i in 0..5u8 {
            log.push([&[i][..]].into_iter(), 1, NOBODY, NONE);
        }
        let e = log.newest(None);
        let ids: Vec<u64> = e.iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3]);
        assert_eq!(e[0].args().collect::<Vec<_>>(), [&[4u8][..]]);
        log.set_max_len(MAX_LEN + 1, NONE);
        assert_eq!(log.max_len(), MAX_LEN);
        log.reset();
        assert_eq!(log.len(), 0);
        log.set_max_len(0, NONE);
        log.push([&b"x"[..]].into_iter(), 1, NOBODY, NONE);
        assert_eq!((log.len(), log.next_id()), (0, 6));
    }

    #[test]
    fn readers_read_their_tenants_entries_once_and_count_what_they_missed() {
        let log = SlowLog::default();
        log.set_max_len(3, NONE);
        let admin = Watch { tenant: None, cursor: Cell::new(0), missed: Cell::new(0) };
        let t1 = Watch { tenant: Some(TenantId(1)), cursor: Cell::new(0), missed: Cell::new(0) };
        let push = |t: u8| {
            let c = Client { tenant: TenantId(t.into()), ..NOBODY };
            log.push([&[t][..]].into_iter(), 1, c, &[&admin, &t1]);
        };
        let read = |w: &Watch| {
            let mut ids = Vec::new();
            w.cursor.set(log.read_after(w, |e| {
                ids.push(e.id);
                true
            }));
            ids
        };
        push(1);
        push(2);
        assert_eq!(read(&t1), [0]);
        assert_eq!(read(&t1), Vec::<u64>::new());
        push(1);
        push(1);
        push(2); // entry 0 (tenant 1, read by t1, not by admin) and 1 (tenant 2) leave
        assert_eq!((admin.missed.get(), t1.missed.get()), (2, 0));
        assert_eq!(read(&admin), [2, 3, 4]);
        push(1);
        push(1);
        push(1); // 2 and 3 (unread by t1) and 4 leave
        assert_eq!(t1.missed.get(), 2);
        assert_eq!(read(&t1), [5, 6, 7]);
        // A reader that stops early goes on from there.
        push(2);
        let mut taken = Vec::new();
        admin.cursor.set(log.read_after(&admin, |e| {
            taken.push(e.id);
            taken.len() < 2
        }));
        assert_eq!(taken, [6, 7]); // 7 refused: not taken
        assert_eq!(read(&admin), [7, 8]);
        assert_eq!(admin.missed.get(), 3);
    }
}
