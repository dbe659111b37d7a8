//! memcached's log watchers: `watch fetchers|mutations|evictions|connevents|deletions`
//! (memcached's `doc/protocol.txt`, "Watchers"; the line formats of its `logger.c`).
//!
//! A connection that sends `watch` is answered `OK` and from then on only receives log lines,
//! one per event of the streams it named, as memcached writes them:
//!
//! ```text
//! ts=<secs>.<usecs> gid=<n> type=item_get key=<k> status=found|not_found cfd=<fd> size=<n>
//! ts=… gid=… type=item_store key=<k> status=<s> cmd=<c> ttl=<secs> cfd=<fd> size=<n>
//! ts=… gid=… type=deleted key=<k> cmd=delete|md size=<n>
//! ts=… gid=… type=eviction key=<k> ttl=<secs|-1> la=<secs> size=<n>
//! ts=… gid=… type=conn_new rip=<ip> rport=<port> transport=tcp cfd=<fd>
//! ts=… gid=… type=conn_close rip=<ip> rport=<port> transport=tcp reason=<r> cfd=<fd>
//! ts=… gid=… type=slow id=<n> elapsed=<µs> rip=<ip> rport=<port> name=<n> args=<a>,<a>…
//! skipped=<n>
//! ```
//!
//! Fields, names and order are memcached's, less what fridge cannot know: `clsid` (there are
//! no slab classes) everywhere, and `fetch` (no per-item fetched bit) in evictions. Keys are
//! URI-encoded as memcached does. `gid` orders the events of all threads; `cfd` is the
//! connection's socket descriptor. Events come from the memcached commands (`get`…, `mg`,
//! the storage commands and `ms`, `delete` and `md`), the cleaner's evictions, and every
//! connection's accept and close; `item_get` is logged once per key a client reads (memcached
//! also logs the lookups its stores and deletes make inside).
//!
//! `slow` is fridge's stream: the slow requests of both protocols, read from the ring that
//! `SLOWLOG` reads (`crate::slowlog`) rather than copied into the lanes — `ts` is when the
//! request was logged, `id` its `SLOWLOG` id, `elapsed` its duration, `name` the client's
//! name and each argument (cut as `SLOWLOG` cuts it) URI-encoded, separated by commas. A
//! `slow` watcher starts at the ring's next entry; an entry that leaves the ring before the
//! watcher read it counts in its `skipped=`.
//!
//! # How events cross threads
//!
//! - The request path pays one relaxed load when nobody watches: [`Hub::wants`] tests the
//!   union of the watchers' streams before anything else is done.
//! - Each watcher has one bounded buffer ("lane", [`LANE_CAP`] bytes) per producing thread:
//!   one per worker and one shared by the others (the cleaner). A producer takes its lane
//!   with `try_lock`, trying a busy lane (its watcher is taking the bytes) up to
//!   `BUSY_TRIES` times; if the lane stays busy or is full, the line is dropped and counted,
//!   and the watcher is told `skipped=<n>` before its next lines, as
//!   memcached does. A slow watcher therefore holds at most its lanes and one output buffer,
//!   and never slows a request.
//! - The watcher list that producers read is a per-thread copy of an immutable snapshot,
//!   refreshed when the hub's generation changes (under the registry's lock, held only to
//!   clone an `Arc`), so a new watcher sees every line emitted after it was added.
//! - A producer that writes into an idle watcher's lane wakes the watcher's worker (its mio
//!   `Waker`, and a per-worker flag like `CLIENT KILL`'s) once; the worker moves the lanes'
//!   bytes to the connection's output and writes them. No one polls: an idle server sleeps.
//!
//! At most [`MAX_WATCHERS`] watch at once (`WATCHER_TOO_MANY log watcher limit reached`).
//! A watcher that is not the admin sees only its tenant's events.

use std::cell::{Cell, RefCell};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use fridge_engine::{Clock, Evicted, TenantId};
pub(crate) use fridge_proto::memcache::WatchEvents;
use mio::Waker;

use crate::slowlog::{self, SlowLog};

/// Most watchers at once (memcached's `WATCHER_LIMIT`).
pub(crate) const MAX_WATCHERS: usize = 20;
/// Bytes one producing thread's lane of one watcher holds before lines are dropped.
pub(crate) const LANE_CAP: usize = 16 << 10;
/// memcached's longest key is 250 bytes, three times that URI-encoded; a line is shorter
/// than this.
const LINE_MAX: usize = 1024;

/// Why a connection closed, as `conn_close` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum CloseReason {
    /// The client closed it, or sent `quit`.
    #[default]
    Normal,
    /// A read or write failed, or the client broke the protocol or a limit.
    Error,
    /// `idle_timeout` passed without a request.
    IdleTimeout,
    /// The server is shutting down.
    Shutdown,
    /// `CLIENT KILL`, or the clients' memory limit (fridge's own reason).
    Kicked,
}

impl CloseReason {
    fn name(self) -> &'static str {
        match self {
            CloseReason::Normal => "normal",
            CloseReason::Error => "error",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::Shutdown => "shutdown",
            CloseReason::Kicked => "kicked",
        }
    }
}

/// One watching connection's side that producers see.
#[derive(Debug)]
pub(crate) struct Watcher {
    id: u64,
    events: WatchEvents,
    /// `None`: the admin, who sees every tenant's events.
    tenant: Option<TenantId>,
    worker: usize,
    waker: Arc<Waker>,
    /// A producer has woken the worker and the lanes were not emptied since.
    notified: AtomicBool,
    /// Lines dropped since the watcher was last told.
    skipped: AtomicU64,
    /// The first slow-ring entry a `slow` watcher has not read.
    slow_cursor: AtomicU64,
    lanes: Box<[Mutex<Vec<u8>>]>,
    /// Bytes a lane holds before lines are dropped ([`LANE_CAP`]; a monitor's share of
    /// `max_pubsub_output`).
    lane_cap: usize,
}

impl Watcher {
    /// A watcher of `events` for connection `id` of worker `worker` (woken with `waker`),
    /// seeing `tenant`'s events only, or every tenant's (`None`), with one lane per worker
    /// and one for other threads.
    pub(crate) fn new(
        id: u64,
        events: WatchEvents,
        tenant: Option<TenantId>,
        worker: usize,
        waker: Arc<Waker>,
        workers: usize,
    ) -> Watcher {
        Watcher {
            id,
            events,
            tenant,
            worker,
            waker,
            notified: AtomicBool::new(false),
            skipped: AtomicU64::new(0),
            slow_cursor: AtomicU64::new(0),
            lanes: (0..=workers).map(|_| Mutex::new(Vec::new())).collect(),
            lane_cap: LANE_CAP,
        }
    }

    /// Redis's `MONITOR` for connection `id`: [`WatchEvents::MONITOR`] lines, seeing
    /// `tenant`'s commands only or every tenant's (`None`), its lanes together holding at
    /// most about `limit` bytes. A monitor that loses a line is closed (see [`Self::lost`]).
    pub(crate) fn monitor(
        id: u64,
        tenant: Option<TenantId>,
        worker: usize,
        waker: Arc<Waker>,
        workers: usize,
        limit: usize,
    ) -> Watcher {
        let mut w = Watcher::new(id, WatchEvents::MONITOR, tenant, worker, waker, workers);
        w.lane_cap = (limit / (workers + 1)).max(LANE_CAP);
        w
    }

    /// Whether this is a `MONITOR` connection (it still runs commands, unlike a `watch`).
    pub(crate) fn is_monitor(&self) -> bool {
        self.events == WatchEvents::MONITOR
    }

    /// Whether a line was dropped: a monitor is then closed, as Redis closes a client past
    /// its output buffer limit (a Redis monitor sees every command or is gone).
    pub(crate) fn lost(&self) -> bool {
        self.skipped.load(Ordering::Relaxed) > 0
    }

    /// Starts a `slow` watcher at slow-ring entry `id` (the ring's next).
    pub(crate) fn start_slow_at(&self, id: u64) {
        self.slow_cursor.store(id, Ordering::Relaxed);
    }

    /// Moves the lanes' lines to `out`, a `skipped=` line first if lines were dropped, then
    /// for a `slow` watcher the slow ring's entries it has not read, while `out` holds fewer
    /// than `limit` bytes (at most one lane or line more). `spare` is the caller's reusable
    /// buffer. Returns whether lines were left behind: they wait for the next call, which the
    /// watcher's worker makes once `out` is written; no producer wakes it meanwhile.
    pub(crate) fn drain(
        &self,
        out: &mut Vec<u8>,
        spare: &mut Vec<u8>,
        limit: usize,
        slow: &SlowLog,
        hub: &Hub,
    ) -> bool {
        if out.len() >= limit {
            self.notified.store(true, Ordering::SeqCst);
            return true;
        }
        // Cleared before the lanes are read: a line written after this wakes the worker again.
        self.notified.store(false, Ordering::SeqCst);
        let skipped = self.skipped.swap(0, Ordering::Relaxed);
        if skipped > 0 {
            let _ = writeln!(out, "skipped={skipped}");
        }
        for lane in &self.lanes {
            if out.len() >= limit {
                // The rest waits until `out` is written; no wake-ups until then.
                self.notified.store(true, Ordering::SeqCst);
                return true;
            }
            {
                let mut bytes = lane.lock().unwrap_or_else(|e| e.into_inner());
                if bytes.is_empty() {
                    continue;
                }
                std::mem::swap(&mut *bytes, spare);
            }
            out.extend_from_slice(spare);
            spare.clear();
        }
        if self.events.contains(WatchEvents::SLOW) {
            let next = slow.read_after(self, |e| {
                if out.len() >= limit {
                    return false;
                }
                hub.slow_line(out, e);
                true
            });
            self.slow_cursor.store(next, Ordering::Relaxed);
            if out.len() >= limit {
                self.notified.store(true, Ordering::SeqCst);
                return true;
            }
        }
        false
    }

    /// Wakes the watcher's worker if it is not woken already.
    fn wake(&self, hub: &Hub) {
        if !self.notified.load(Ordering::Relaxed) && !self.notified.swap(true, Ordering::SeqCst) {
            hub.pending[self.worker].store(true, Ordering::SeqCst);
            let _ = self.waker.wake();
        }
    }

    /// Appends `line` to the calling thread's lane, or counts it dropped.
    fn offer(&self, hub: &Hub, line: &[u8]) {
        let lane = &self.lanes[LANE.get().min(self.lanes.len() - 1)];
        // A lane busy because its watcher is moving its bytes out (a copy) is tried again a
        // bounded number of times; a full lane drops the line at once.
        let mut tries = 0;
        let taken = loop {
            match lane.try_lock() {
                Ok(mut bytes) if bytes.len() + line.len() <= self.lane_cap => {
                    if bytes.capacity() == 0 {
                        bytes.reserve_exact(LANE_CAP);
                    }
                    bytes.extend_from_slice(line);
                    break true;
                }
                Err(std::sync::TryLockError::WouldBlock) if tries < BUSY_TRIES => {
                    tries += 1;
                    std::hint::spin_loop();
                }
                _ => break false,
            }
        };
        if !taken {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        }
        self.wake(hub);
    }
}

impl slowlog::Reader for Watcher {
    fn sees(&self, tenant: TenantId) -> bool {
        self.tenant.is_none_or(|t| t == tenant)
    }

    fn cursor(&self) -> u64 {
        self.slow_cursor.load(Ordering::Relaxed)
    }

    fn missed(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many times a producer tries a lane its watcher holds before dropping the line: the
/// watcher holds it for one copy of at most `LANE_CAP` bytes, so a few hundred spins cover it
/// on an unloaded machine and bound the wait on a loaded one.
const BUSY_TRIES: u32 = 256;

/// An immutable snapshot of the watchers.
type List = Arc<[Arc<Watcher>]>;

/// The watchers, as every thread sees them.
#[derive(Debug)]
pub(crate) struct Hub {
    /// The union of the watchers' streams ([`WatchEvents`] bits).
    mask: AtomicU8,
    /// Bumped when a watcher comes or goes; threads compare it with their copy's.
    generation: AtomicU64,
    registry: Mutex<List>,
    /// Per worker: one of its watchers has lines waiting.
    pending: Box<[AtomicBool]>,
    /// memcached's global id, one per event.
    gid: AtomicU64,
    clock: Arc<dyn Clock>,
}

thread_local! {
    /// The calling thread's lane: its worker index; others share the last lane.
    static LANE: Cell<usize> = const { Cell::new(usize::MAX) };
    /// The calling thread's copy of the watcher list, with its hub's address and generation
    /// (a process may run several servers: tests do).
    static WATCHERS: RefCell<(usize, u64, Option<List>)> = const { RefCell::new((0, 0, None)) };
    /// The line being built.
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Marks the calling thread as worker `index` (its lane in every watcher).
pub(crate) fn set_lane(index: usize) {
    LANE.set(index);
}

/// The calling thread's worker index (`usize::MAX` off the workers).
pub(crate) fn lane() -> usize {
    LANE.get()
}

impl Hub {
    pub(crate) fn new(workers: usize, clock: Arc<dyn Clock>) -> Hub {
        Hub {
            mask: AtomicU8::new(0),
            generation: AtomicU64::new(1),
            registry: Mutex::new(Arc::from(Vec::new())),
            pending: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            gid: AtomicU64::new(0),
            clock,
        }
    }

    /// Whether anyone watches `events`: the request path's one relaxed load.
    #[inline]
    pub(crate) fn wants(&self, events: WatchEvents) -> bool {
        self.mask.load(Ordering::Relaxed) & events.bits() != 0
    }

    /// Whether a watcher of worker `index` has lines waiting (and forgets it).
    #[inline]
    pub(crate) fn take_pending(&self, index: usize) -> bool {
        self.pending[index].load(Ordering::Relaxed)
            && self.pending[index].swap(false, Ordering::SeqCst)
    }

    fn publish(&self, list: Vec<Arc<Watcher>>) {
        let mask = list.iter().fold(0u8, |m, w| m | w.events.bits());
        *self.registry.lock().unwrap_or_else(|e| e.into_inner()) = Arc::from(list);
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.mask.store(mask, Ordering::SeqCst);
    }

    /// Adds a watcher; `None` when [`MAX_WATCHERS`] already watch.
    pub(crate) fn add(&self, w: Watcher) -> Option<Arc<Watcher>> {
        let w = Arc::new(w);
        let mut list = self.registry.lock().unwrap_or_else(|e| e.into_inner()).to_vec();
        if list.len() >= MAX_WATCHERS {
            return None;
        }
        list.push(Arc::clone(&w));
        self.publish(list);
        Some(w)
    }

    /// Removes a watcher whose connection closed.
    pub(crate) fn remove(&self, w: &Arc<Watcher>) {
        let list = self.registry.lock().unwrap_or_else(|e| e.into_inner()).to_vec();
        self.publish(list.into_iter().filter(|x| x.id != w.id).collect());
    }

    /// Builds one event's line (after `ts=… gid=… `, without its newline) and offers it to
    /// every watcher of `events` allowed to see `tenant` (`None`: the admin only).
    pub(crate) fn emit(
        &self,
        events: WatchEvents,
        tenant: Option<TenantId>,
        body: impl FnOnce(&mut Vec<u8>),
    ) {
        WATCHERS.with_borrow_mut(|(hub, generation, list)| {
            let now = self.generation.load(Ordering::Acquire);
            let me = std::ptr::from_ref(self) as usize;
            if *hub != me || *generation != now || list.is_none() {
                // Only after a watcher came or went: the lock is held just long enough to
                // clone an `Arc`, and a line is never offered to an outdated list (a new
                // watcher would miss it without a `skipped=` count).
                let current = self.registry.lock().unwrap_or_else(|e| e.into_inner());
                (*hub, *generation, *list) = (me, now, Some(Arc::clone(&current)));
            }
            let Some(list) = list.as_deref() else { return };
            let sees = |w: &&Arc<Watcher>| {
                w.events.bits() & events.bits() != 0
                    && (w.tenant.is_none() || (tenant.is_some() && w.tenant == tenant))
            };
            if !list.iter().any(|w| sees(&w)) {
                return;
            }
            LINE.with_borrow_mut(|line| {
                line.clear();
                let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
                let gid = self.gid.fetch_add(1, Ordering::Relaxed) + 1;
                let _ = write!(line, "ts={}.{:06} gid={gid} ", ts.as_secs(), ts.subsec_micros());
                body(line);
                line.truncate(LINE_MAX - 1);
                line.push(b'\n');
                for w in list.iter().filter(sees) {
                    w.offer(self, line);
                }
            });
        });
    }

    /// Offers a `MONITOR` line (built whole by `body`, `\r\n` included) to every monitor
    /// allowed to see `tenant`'s commands.
    pub(crate) fn monitor(&self, tenant: TenantId, body: impl FnOnce(&mut Vec<u8>)) {
        WATCHERS.with_borrow_mut(|(hub, generation, list)| {
            let now = self.generation.load(Ordering::Acquire);
            let me = std::ptr::from_ref(self) as usize;
            if *hub != me || *generation != now || list.is_none() {
                let current = self.registry.lock().unwrap_or_else(|e| e.into_inner());
                (*hub, *generation, *list) = (me, now, Some(Arc::clone(&current)));
            }
            let Some(list) = list.as_deref() else { return };
            let sees = |w: &&Arc<Watcher>| {
                w.events == WatchEvents::MONITOR && w.tenant.is_none_or(|t| t == tenant)
            };
            if !list.iter().any(|w| sees(&w)) {
                return;
            }
            LINE.with_borrow_mut(|line| {
                line.clear();
                body(line);
                for w in list.iter().filter(sees) {
                    w.offer(self, line);
                }
                if line.capacity() > LINE_MAX * 64 {
                    *line = Vec::new(); // a large command's line is not kept
                }
            });
        });
    }

    /// Logs a slow request in `slow` (`crate::slowlog`) and wakes the `slow` watchers that
    /// may see it; an entry it pushes out is counted missed by those that had not read it.
    pub(crate) fn log_slow<'a>(
        &self,
        slow: &SlowLog,
        args: impl ExactSizeIterator<Item = &'a [u8]>,
        micros: u64,
        client: slowlog::Client<'_>,
    ) {
        self.with_slow_watchers(|watchers| {
            slow.push(args, micros, client, watchers);
            for w in watchers.iter().filter(|w| slowlog::Reader::sees(**w, client.tenant)) {
                w.wake(self);
            }
        });
    }

    /// `slowlog-max-len`: entries it drops are counted missed by the `slow` watchers that
    /// had not read them.
    pub(crate) fn set_slow_len(&self, slow: &SlowLog, n: usize) {
        self.with_slow_watchers(|watchers| slow.set_max_len(n, watchers));
    }

    /// Calls `f` with the `slow` watchers (none, without a lock, when nobody watches `slow`).
    fn with_slow_watchers(&self, f: impl FnOnce(&[&Watcher])) {
        if !self.wants(WatchEvents::SLOW) {
            return f(&[]);
        }
        let list = Arc::clone(&*self.registry.lock().unwrap_or_else(|e| e.into_inner()));
        let watchers: Vec<&Watcher> =
            list.iter().filter(|w| w.events.contains(WatchEvents::SLOW)).map(|w| &**w).collect();
        f(&watchers);
    }

    /// A `type=slow` line for entry `e`.
    fn slow_line(&self, out: &mut Vec<u8>, e: &slowlog::Entry) {
        let gid = self.gid.fetch_add(1, Ordering::Relaxed) + 1;
        let (secs, us) = (e.time_us / 1_000_000, e.time_us % 1_000_000);
        let _ =
            write!(out, "ts={secs}.{us:06} gid={gid} type=slow id={} elapsed={}", e.id, e.micros);
        let (ip, port) = e.addr.rsplit_once(':').unwrap_or((&e.addr, ""));
        let ip = ip.trim_start_matches('[').trim_end_matches(']');
        let _ = write!(out, " rip={ip} rport={port} name=");
        uri_encode(out, e.name.as_bytes());
        out.extend_from_slice(b" args=");
        for (i, a) in e.args().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            uri_encode(out, a);
        }
        out.push(b'\n');
    }

    /// `type=eviction`: the engine's eviction observer.
    pub(crate) fn eviction(&self, ev: &Evicted<'_>) {
        if !self.wants(WatchEvents::EVICTIONS) {
            return;
        }
        let now = self.clock.now_ms();
        self.emit(WatchEvents::EVICTIONS, Some(ev.tenant), |line| {
            line.extend_from_slice(b"type=eviction key=");
            uri_encode(line, ev.key);
            let ttl = ev.expires_at_ms.map_or(-1, |at| (at.saturating_sub(now) / 1000) as i64);
            let la = now.saturating_sub(ev.last_access_ms) / 1000;
            let _ = write!(line, " ttl={ttl} la={la} size={}", ev.value_len);
        });
    }

    /// `type=conn_new`: seen by the admin only (the client has not logged in yet).
    pub(crate) fn conn_new(&self, peer: SocketAddr, fd: i32) {
        if !self.wants(WatchEvents::CONNEVENTS) {
            return;
        }
        self.emit(WatchEvents::CONNEVENTS, None, |line| {
            let _ = write!(
                line,
                "type=conn_new rip={} rport={} transport=tcp cfd={fd}",
                peer.ip(),
                peer.port()
            );
        });
    }

    /// `type=conn_close`: seen by the admin, and by the tenant the connection logged in as.
    pub(crate) fn conn_close(
        &self,
        peer: SocketAddr,
        fd: i32,
        user: Option<TenantId>,
        reason: CloseReason,
    ) {
        if !self.wants(WatchEvents::CONNEVENTS) {
            return;
        }
        self.emit(WatchEvents::CONNEVENTS, user, |line| {
            let _ = write!(
                line,
                "type=conn_close rip={} rport={} transport=tcp reason={} cfd={fd}",
                peer.ip(),
                peer.port(),
                reason.name()
            );
        });
    }
}

/// memcached's `uriencode`: every byte but ASCII letters, digits and `-._~` as `%XX`.
pub(crate) fn uri_encode(out: &mut Vec<u8>, key: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use fridge_engine::ManualClock;

    use super::*;

    /// Producers on three threads (two workers' lanes and the shared one) race a consumer
    /// that drains into a small output: every line arrives whole and in its thread's order,
    /// or is counted in a `skipped=` line; none is lost or torn.
    #[test]
    fn lines_arrive_whole_or_are_counted() {
        const PER_THREAD: usize = 20_000;
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let hub = Arc::new(Hub::new(2, Arc::new(ManualClock::new(0))));
        let w = hub.add(Watcher::new(1, WatchEvents::FETCHERS, None, 0, waker, 2)).unwrap();
        assert!(hub.wants(WatchEvents::FETCHERS) && !hub.wants(WatchEvents::EVICTIONS));
        let done = Arc::new(AtomicUsize::new(0));
        let producers: Vec<_> = (0..3)
            .map(|lane| {
                let (hub, done) = (Arc::clone(&hub), Arc::clone(&done));
                std::thread::spawn(move || {
                    set_lane(lane);
                    for i in 0..PER_THREAD {
                        hub.emit(WatchEvents::FETCHERS, Some(TenantId(0)), |line| {
                            let _ = write!(line, "type=item_get key=t{lane}-{i}");
                        });
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let (mut out, mut spare) = (Vec::new(), Vec::new());
        let mut last = [None::<usize>; 3];
        let (mut lines, mut skipped) = (0, 0);
        loop {
            let finished = done.load(Ordering::SeqCst) == 3;
            let more = w.drain(&mut out, &mut spare, 64 << 10, &SlowLog::default(), &hub);
            assert!(out.is_empty() || out.ends_with(b"\n"), "a line was torn");
            for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let line = std::str::from_utf8(line).unwrap();
                if let Some(n) = line.strip_prefix("skipped=") {
                    skipped += n.parse::<usize>().unwrap();
                    continue;
                }
                let key = line.split(' ').find_map(|f| f.strip_prefix("key=t")).unwrap();
                let (lane, i) = key.split_once('-').unwrap();
                let (lane, i): (usize, usize) = (lane.parse().unwrap(), i.parse().unwrap());
                assert!(last[lane].is_none_or(|prev| prev < i), "lane {lane} out of order");
                last[lane] = Some(i);
                lines += 1;
            }
            out.clear();
            if finished && !more {
                break;
            }
        }
        producers.into_iter().for_each(|p| p.join().unwrap());
        assert_eq!(lines + skipped, 3 * PER_THREAD);
        hub.remove(&w);
        assert!(!hub.wants(WatchEvents::FETCHERS));
    }

    #[test]
    fn keys_are_uri_encoded_as_memcached_does() {
        let mut out = Vec::new();
        uri_encode(&mut out, b"a\x01b c-._~%Z9");
        assert_eq!(out, b"a%01b%20c-._~%25Z9");
    }
}
