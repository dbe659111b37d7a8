//! One client thread: a `mio` poll over its connections, in closed or open loop.
//!
//! ```text
//!            ┌─ closed loop: each reply lets its connection send the next request,
//!            │  keeping `depth` requests (and at most `max_inflight_bytes`) in flight
//!  Source ───┤
//!            └─ open loop: the Schedule says when request i is due; it is queued on the
//!               next connection (round robin) whether or not earlier replies came back
//!                       │ encode (fridge-proto) into the connection's write buffer
//!                       ▼
//!  Conn: write buffer ──► socket ──► server ──► socket ──► read buffer
//!                                                           │ parse (fridge-proto), in order
//!                                                           ▼
//!                       Recorder: latency = reply time − t0, counts, --verify check
//! ```
//!
//! `t0` is the time the request was queued in closed loop and its intended send time in open
//! loop, so in open loop a server stall is charged to every request queued behind it.
//! Replies come back in request order on each connection (memcached and Redis both guarantee
//! it), so the in-flight queue's front is always the request a reply answers.
//!
//! The thread never blocks on one connection: sockets are non-blocking, reads go until
//! `WouldBlock` (mio is edge-triggered), and unwritten bytes wait in the write buffer for the
//! next writable event. In open loop the poll sleeps until the next request is due, and spins
//! (zero timeout) when that is less than 2 ms away, because epoll sleeps in whole milliseconds.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use serde::{Deserialize, Serialize};

use crate::histogram::{Latency, SizeClasses};
use crate::protocol::{Command, Outcome, Protocol, Reply};
use crate::schedule::Schedule;
use crate::source::{BenchRequest, KeySpace, Source};
use crate::value::{self, Pool};

/// How requests are paced.
#[derive(Clone, Debug)]
pub enum Pacing {
    /// Keep `depth` requests in flight on every connection.
    Closed {
        /// Pipeline depth.
        depth: usize,
    },
    /// Send each request at its intended time.
    Open(Schedule),
}

/// What one thread does in one phase.
#[derive(Debug)]
pub struct WorkerPlan {
    /// The server.
    pub addr: SocketAddr,
    /// Its protocol.
    pub protocol: Protocol,
    /// Tenant index of each connection.
    pub conns: Vec<usize>,
    /// Credentials per tenant.
    pub auth: Vec<Option<(String, String)>>,
    /// Key spaces per tenant.
    pub spaces: Arc<Vec<KeySpace>>,
    /// Request sources per tenant.
    pub sources: Vec<Source>,
    /// Pacing.
    pub pacing: Pacing,
    /// Stop issuing at this time (ns since `clock`); open loop issues every request due
    /// before it.
    pub deadline_ns: Option<u64>,
    /// Stop after issuing this many requests.
    pub max_requests: Option<u64>,
    /// Record only requests whose `t0` is at or after this (warm-up before it).
    pub record_from_ns: u64,
    /// After the last request is issued, wait this long for replies.
    pub drain: Duration,
    /// Closed loop: stop adding requests to a connection with this many bytes in flight.
    pub max_inflight_bytes: usize,
    /// Check every GET hit's value.
    pub verify: bool,
    /// Size classes of histograms.
    pub classes: SizeClasses,
    /// Largest value written; larger requested sizes are clamped.
    pub max_value: usize,
    /// Value bytes.
    pub pool: Arc<Pool>,
    /// Live counters for the progress line.
    pub progress: Arc<Progress>,
    /// This thread's slot in `progress`.
    pub thread: usize,
    /// The run's time origin.
    pub clock: Instant,
}

/// Outcome counts. Requests still unanswered at the end are `unanswered`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests sent (recorded ones only).
    pub sent: u64,
    /// Replies received.
    pub completed: u64,
    /// GET hits.
    pub hits: u64,
    /// GET misses.
    pub misses: u64,
    /// SETs stored.
    pub stored: u64,
    /// SETs refused without error.
    pub not_stored: u64,
    /// DELETEs that removed a key.
    pub deleted: u64,
    /// DELETEs of absent keys.
    pub not_found: u64,
    /// Error replies.
    pub errors: u64,
    /// GET hits whose value failed `--verify`.
    pub verify_failures: u64,
    /// Requests lost to a closed connection or the drain timeout.
    pub unanswered: u64,
    /// Connections that failed.
    pub conn_errors: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
}

impl Counts {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Counts) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.hits += other.hits;
        self.misses += other.misses;
        self.stored += other.stored;
        self.not_stored += other.not_stored;
        self.deleted += other.deleted;
        self.not_found += other.not_found;
        self.errors += other.errors;
        self.verify_failures += other.verify_failures;
        self.unanswered += other.unanswered;
        self.conn_errors += other.conn_errors;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
    }
}

/// Live counters of one thread, on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct ThreadProgress {
    /// Replies received.
    pub completed: AtomicU64,
    /// GET hits.
    pub hits: AtomicU64,
    /// GET misses.
    pub misses: AtomicU64,
    /// Errors, verify failures and unanswered requests.
    pub errors: AtomicU64,
    /// Requests in flight.
    pub inflight: AtomicU64,
}

/// Live counters of all threads, read by the progress line.
#[derive(Debug, Default)]
pub struct Progress {
    /// One per thread.
    pub threads: Vec<ThreadProgress>,
}

impl Progress {
    /// Counters for `threads` threads.
    pub fn new(threads: usize) -> Self {
        Self { threads: (0..threads).map(|_| ThreadProgress::default()).collect() }
    }

    /// Sums `(completed, hits, misses, errors, inflight)` over threads.
    pub fn totals(&self) -> [u64; 5] {
        let mut t = [0; 5];
        for p in &self.threads {
            let fields = [&p.completed, &p.hits, &p.misses, &p.errors, &p.inflight];
            for (sum, field) in t.iter_mut().zip(fields) {
                *sum += field.load(Ordering::Relaxed);
            }
        }
        t
    }
}

/// What a thread measured.
#[derive(Debug)]
pub struct WorkerStats {
    /// Latency per `(command, size class)`: index `command.index() * classes + class`.
    pub latency: Vec<Latency>,
    /// Latency per tenant.
    pub tenant_latency: Vec<Latency>,
    /// Counts of the whole thread.
    pub counts: Counts,
    /// Counts per tenant.
    pub tenant_counts: Vec<Counts>,
    /// Open loop: how late requests were queued after their intended time.
    pub send_lag: Latency,
    /// The first few failures, in words.
    pub failures: Vec<String>,
    /// Time of the last recorded reply, ns since the clock.
    pub last_reply_ns: u64,
    /// A trace that ended with an error.
    pub trace_error: Option<String>,
}

const MAX_FAILURES: usize = 10;
const READ_CHUNK: usize = 64 * 1024;

/// A request waiting for its reply.
#[derive(Clone, Copy, Debug)]
struct Pending {
    command: Command,
    key: u64,
    tenant: usize,
    class: usize,
    t0_ns: u64,
    bytes: usize,
}

#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    tenant: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    inflight: VecDeque<Pending>,
    inflight_bytes: usize,
    alive: bool,
}

/// Everything replies update.
#[derive(Debug)]
struct Recorder {
    stats: WorkerStats,
    classes: usize,
    verify: bool,
    record_from_ns: u64,
}

impl Recorder {
    fn fail(&mut self, message: String) {
        if self.stats.failures.len() < MAX_FAILURES {
            self.stats.failures.push(message);
        }
    }

    fn complete(&mut self, p: &Pending, reply: &Reply<'_>, now_ns: u64, key: &dyn Fn() -> String) {
        if p.t0_ns < self.record_from_ns {
            return;
        }
        let latency = now_ns.saturating_sub(p.t0_ns);
        self.stats.latency[p.command.index() * self.classes + p.class].record(latency);
        self.stats.tenant_latency[p.tenant].record(latency);
        self.stats.last_reply_ns = self.stats.last_reply_ns.max(now_ns);
        let mut verify_failed = false;
        if let (true, Some(v)) = (self.verify, reply.value) {
            if let Err(m) = value::check(p.key, v) {
                verify_failed = true;
                self.fail(format!("verify: GET {} (id {}, {} bytes): {m}", key(), p.key, v.len()));
            }
        }
        for c in [&mut self.stats.counts, &mut self.stats.tenant_counts[p.tenant]] {
            c.completed += 1;
            match reply.outcome {
                Outcome::Hit => c.hits += 1,
                Outcome::Miss => c.misses += 1,
                Outcome::Stored => c.stored += 1,
                Outcome::NotStored => c.not_stored += 1,
                Outcome::Deleted => c.deleted += 1,
                Outcome::NotFound => c.not_found += 1,
                Outcome::Error => c.errors += 1,
            }
            c.verify_failures += u64::from(verify_failed);
        }
    }
}

/// Connects, authenticates when credentials are given, and hands back a non-blocking stream.
fn connect(
    addr: SocketAddr,
    protocol: Protocol,
    auth: Option<&(String, String)>,
) -> Result<StdStream, String> {
    let stream = StdStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    if let Some((user, password)) = auth {
        let mut out = Vec::new();
        protocol.encode_auth(&mut out, user, password);
        let mut s = &stream;
        s.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
        s.write_all(&out).map_err(|e| format!("auth: {e}"))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 512];
        let outcome = loop {
            let n = s.read(&mut chunk).map_err(|e| format!("auth: {e}"))?;
            if n == 0 {
                return Err("auth: server closed the connection".into());
            }
            buf.extend_from_slice(&chunk[..n]);
            match protocol.parse_reply(Command::Set, &buf) {
                Ok(Some(reply)) => break reply.outcome,
                Ok(None) => {}
                Err(_) => return Err(format!("auth refused: {:?}", String::from_utf8_lossy(&buf))),
            }
        };
        if outcome != Outcome::Stored {
            return Err(format!("auth refused: {:?}", String::from_utf8_lossy(&buf)));
        }
    }
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// A worker thread's state.
#[derive(Debug)]
struct Worker {
    plan: WorkerPlan,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    key_buf: Vec<u8>,
    value_buf: Vec<u8>,
    exhausted: Vec<bool>,
    issued: u64,
    next_conn: usize,
    live: usize,
    stopping: bool,
    drain_until_ns: u64,
    /// Counts not yet published to `progress`.
    published: [u64; 4],
}

/// Runs one worker thread's phase to the end.
///
/// # Errors
/// A connection or authentication failure before the phase starts.
pub fn run(plan: WorkerPlan) -> Result<WorkerStats, String> {
    let poll = Poll::new().map_err(|e| e.to_string())?;
    let mut conns = Vec::with_capacity(plan.conns.len());
    for (i, &tenant) in plan.conns.iter().enumerate() {
        let std = connect(plan.addr, plan.protocol, plan.auth[tenant].as_ref())?;
        let mut stream = TcpStream::from_std(std);
        poll.registry()
            .register(&mut stream, Token(i), Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| e.to_string())?;
        conns.push(Conn {
            stream,
            tenant,
            wbuf: Vec::with_capacity(READ_CHUNK),
            wpos: 0,
            rbuf: vec![0; READ_CHUNK],
            rstart: 0,
            rend: 0,
            inflight: VecDeque::new(),
            inflight_bytes: 0,
            alive: true,
        });
    }
    let classes = plan.classes.len();
    let tenants = plan.spaces.len();
    let stats = WorkerStats {
        latency: vec![Latency::new(); Command::ALL.len() * classes],
        tenant_latency: vec![Latency::new(); tenants],
        counts: Counts::default(),
        tenant_counts: vec![Counts::default(); tenants],
        send_lag: Latency::new(),
        failures: Vec::new(),
        last_reply_ns: 0,
        trace_error: None,
    };
    let rec = Recorder { stats, classes, verify: plan.verify, record_from_ns: plan.record_from_ns };
    let live = conns.len();
    let mut w = Worker {
        poll,
        rec,
        key_buf: Vec::new(),
        value_buf: Vec::new(),
        exhausted: vec![false; tenants],
        issued: 0,
        next_conn: 0,
        live,
        stopping: false,
        drain_until_ns: 0,
        published: [0; 4],
        conns,
        plan,
    };
    w.run();
    let mut stats = w.rec.stats;
    stats.trace_error = w.plan.sources.iter().find_map(|s| s.error().map(str::to_owned));
    Ok(stats)
}

impl Worker {
    fn now(&self) -> u64 {
        self.plan.clock.elapsed().as_nanos() as u64
    }

    fn inflight(&self) -> usize {
        self.conns.iter().map(|c| c.inflight.len()).sum()
    }

    fn can_issue(&self) -> bool {
        !self.stopping && self.plan.max_requests.is_none_or(|max| self.issued < max)
    }

    fn run(&mut self) {
        let mut events = Events::with_capacity(256);
        if let Pacing::Closed { .. } = self.plan.pacing {
            let now = self.now();
            for ci in 0..self.conns.len() {
                self.top_up(ci, now);
            }
        }
        loop {
            let now = self.now();
            if !self.stopping {
                self.issue_due(now);
                if self.should_stop(now) {
                    self.stopping = true;
                    self.drain_until_ns = now + self.plan.drain.as_nanos() as u64;
                }
            }
            for ci in 0..self.conns.len() {
                self.flush(ci);
            }
            self.publish();
            if self.live == 0
                || (self.stopping && (self.inflight() == 0 || now >= self.drain_until_ns))
            {
                break;
            }
            let timeout = self.timeout(now);
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.rec.fail(format!("poll: {e}"));
                    break;
                }
            }
            for event in &events {
                let ci = event.token().0;
                if event.is_writable() {
                    self.flush(ci);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.read(ci);
                }
            }
        }
        for ci in 0..self.conns.len() {
            let lost = self.conns[ci]
                .inflight
                .iter()
                .filter(|p| p.t0_ns >= self.rec.record_from_ns)
                .count();
            self.rec.stats.counts.unanswered += lost as u64;
            if lost > 0 {
                self.rec.fail(format!("{lost} requests unanswered at the end (drain timeout)"));
            }
            self.conns[ci].inflight.clear();
        }
        self.publish();
    }

    fn should_stop(&self, now: u64) -> bool {
        let past_deadline = match (&self.plan.pacing, self.plan.deadline_ns) {
            (Pacing::Open(s), Some(d)) => s.next_due_ns() >= d,
            (Pacing::Closed { .. }, Some(d)) => now >= d,
            (_, None) => false,
        };
        past_deadline || !self.can_issue() || self.exhausted.iter().all(|&e| e)
    }

    fn timeout(&self, now: u64) -> Duration {
        const IDLE: Duration = Duration::from_millis(50);
        if self.stopping {
            return IDLE.min(Duration::from_nanos(self.drain_until_ns.saturating_sub(now)));
        }
        match &self.plan.pacing {
            Pacing::Open(s) => {
                let gap = s.next_due_ns().saturating_sub(now);
                if gap < 2_000_000 {
                    Duration::ZERO
                } else {
                    Duration::from_nanos(gap - 1_000_000).min(IDLE)
                }
            }
            Pacing::Closed { .. } => match self.plan.deadline_ns {
                Some(d) => IDLE.min(Duration::from_nanos(d.saturating_sub(now))),
                None => IDLE,
            },
        }
    }

    /// Picks the next live connection of a tenant whose source is not exhausted.
    fn pick_conn(&mut self) -> Option<usize> {
        for _ in 0..self.conns.len() {
            let ci = self.next_conn;
            self.next_conn = (self.next_conn + 1) % self.conns.len();
            let c = &self.conns[ci];
            if c.alive && !self.exhausted[c.tenant] {
                return Some(ci);
            }
        }
        None
    }

    /// Open loop: queues every request due by `now`.
    fn issue_due(&mut self, now: u64) {
        loop {
            let Pacing::Open(schedule) = &self.plan.pacing else { return };
            let due = schedule.next_due_ns();
            if due > now || self.plan.deadline_ns.is_some_and(|d| due >= d) || !self.can_issue() {
                return;
            }
            let Some(ci) = self.pick_conn() else {
                self.stopping = true;
                return;
            };
            let tenant = self.conns[ci].tenant;
            let Some(request) = self.plan.sources[tenant].next(&self.plan.spaces[tenant]) else {
                self.exhausted[tenant] = true;
                continue;
            };
            if due >= self.rec.record_from_ns {
                self.rec.stats.send_lag.record(now - due);
            }
            self.enqueue(ci, request, due);
            if let Pacing::Open(schedule) = &mut self.plan.pacing {
                schedule.advance();
            }
        }
    }

    /// Closed loop: fills connection `ci` up to the pipeline depth.
    fn top_up(&mut self, ci: usize, now: u64) {
        let Pacing::Closed { depth } = self.plan.pacing else { return };
        loop {
            let c = &self.conns[ci];
            let full = c.inflight.len() >= depth
                || (!c.inflight.is_empty() && c.inflight_bytes >= self.plan.max_inflight_bytes);
            if !c.alive || full || self.exhausted[c.tenant] || !self.can_issue() {
                return;
            }
            let tenant = c.tenant;
            match self.plan.sources[tenant].next(&self.plan.spaces[tenant]) {
                Some(request) => self.enqueue(ci, request, now),
                None => {
                    self.exhausted[tenant] = true;
                    return;
                }
            }
        }
    }

    /// Encodes `request` onto connection `ci` with time origin `t0_ns`.
    fn enqueue(&mut self, ci: usize, request: BenchRequest, t0_ns: u64) {
        let c = &mut self.conns[ci];
        let space = &self.plan.spaces[c.tenant];
        let protocol = self.plan.protocol;
        space.render_key(request.key, request.key_len, &mut self.key_buf);
        let value_len = (request.value_len as usize).min(self.plan.max_value);
        let before = c.wbuf.len();
        let mut reply_bytes = 0;
        match request.command {
            Command::Get => {
                protocol.encode_get(&mut c.wbuf, &self.key_buf);
                reply_bytes = value_len;
            }
            Command::Set => {
                self.value_buf.clear();
                value::fill(&mut self.value_buf, &self.plan.pool, request.key, value_len);
                protocol.encode_set(&mut c.wbuf, &self.key_buf, &self.value_buf, request.ttl_s);
            }
            Command::Delete => protocol.encode_delete(&mut c.wbuf, &self.key_buf),
        }
        let bytes = c.wbuf.len() - before + reply_bytes;
        c.inflight_bytes += bytes;
        c.inflight.push_back(Pending {
            command: request.command,
            key: request.key,
            tenant: c.tenant,
            class: self.plan.classes.class_of(request.value_len),
            t0_ns,
            bytes,
        });
        self.issued += 1;
        if t0_ns >= self.rec.record_from_ns {
            self.rec.stats.counts.sent += 1;
            self.rec.stats.tenant_counts[c.tenant].sent += 1;
        }
    }

    fn kill(&mut self, ci: usize, reason: &str) {
        let c = &mut self.conns[ci];
        if !c.alive {
            return;
        }
        c.alive = false;
        self.live -= 1;
        let _ = self.poll.registry().deregister(&mut c.stream);
        let lost = c.inflight.len() as u64;
        c.inflight.clear();
        c.wbuf.clear();
        c.wpos = 0;
        self.rec.stats.counts.unanswered += lost;
        self.rec.stats.counts.conn_errors += 1;
        self.rec.fail(format!("connection {ci}: {reason} ({lost} requests lost)"));
    }

    fn flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        while c.alive && c.wpos < c.wbuf.len() {
            match c.stream.write(&c.wbuf[c.wpos..]) {
                Ok(0) => return self.kill(ci, "write returned 0"),
                Ok(n) => {
                    c.wpos += n;
                    self.rec.stats.counts.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.kill(ci, &format!("write: {e}")),
            }
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
        } else if c.wpos > (1 << 20) && c.wpos > c.wbuf.len() / 2 {
            c.wbuf.drain(..c.wpos);
            c.wpos = 0;
        }
    }

    fn read(&mut self, ci: usize) {
        loop {
            let c = &mut self.conns[ci];
            if !c.alive {
                return;
            }
            if c.rend == c.rbuf.len() {
                if c.rstart > 0 {
                    c.rbuf.copy_within(c.rstart..c.rend, 0);
                    c.rend -= c.rstart;
                    c.rstart = 0;
                } else {
                    let len = c.rbuf.len();
                    c.rbuf.resize(len * 2, 0);
                }
            }
            match c.stream.read(&mut c.rbuf[c.rend..]) {
                Ok(0) => return self.kill(ci, "server closed the connection"),
                Ok(n) => {
                    c.rend += n;
                    self.rec.stats.counts.bytes_received += n as u64;
                    let now = self.now();
                    if let Err(reason) = self.process(ci, now) {
                        return self.kill(ci, &reason);
                    }
                    if !self.stopping {
                        self.top_up(ci, now);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.kill(ci, &format!("read: {e}")),
            }
        }
    }

    /// Parses every complete reply in connection `ci`'s read buffer.
    fn process(&mut self, ci: usize, now: u64) -> Result<(), String> {
        let protocol = self.plan.protocol;
        let Self { conns, rec, plan, .. } = self;
        let c = &mut conns[ci];
        while let Some(&p) = c.inflight.front() {
            let buf = &c.rbuf[c.rstart..c.rend];
            let reply = match protocol.parse_reply(p.command, buf) {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(_) => {
                    let shown = &buf[..buf.len().min(80)];
                    return Err(format!(
                        "unparsable reply to {}: {:?}",
                        p.command.name(),
                        String::from_utf8_lossy(shown)
                    ));
                }
            };
            let key = || {
                let space = &plan.spaces[p.tenant];
                let mut k = Vec::new();
                space.render_key(p.key, space.key_len(p.key), &mut k);
                String::from_utf8_lossy(&k).into_owned()
            };
            let consumed = reply.consumed;
            rec.complete(&p, &reply, now, &key);
            c.rstart += consumed;
            c.inflight_bytes -= p.bytes;
            c.inflight.pop_front();
        }
        if c.rstart == c.rend {
            c.rstart = 0;
            c.rend = 0;
        } else if c.inflight.is_empty() {
            return Err("bytes from the server with no request in flight".into());
        }
        Ok(())
    }

    /// Publishes this thread's counters for the progress line.
    fn publish(&mut self) {
        let p = &self.plan.progress.threads[self.plan.thread];
        let c = &self.rec.stats.counts;
        let now = [c.completed, c.hits, c.misses, c.errors + c.verify_failures + c.unanswered];
        let fields = [&p.completed, &p.hits, &p.misses, &p.errors];
        for ((field, new), old) in fields.into_iter().zip(now).zip(&mut self.published) {
            if new != *old {
                field.fetch_add(new - *old, Ordering::Relaxed);
                *old = new;
            }
        }
        p.inflight.store(self.inflight() as u64, Ordering::Relaxed);
    }
}
