//! One worker thread: a mio poll, the connections it owns, and their bounded steps.
//!
//! A connection's step (see the crate doc): read up to [`READ_BUDGET`], run complete requests
//! while fewer than [`OUTPUT_SOFT_LIMIT`] reply bytes wait, write up to the configured
//! `write_chunk`. Events are edge-triggered, so the connection remembers whether its socket may
//! still be readable or writable (until a `WouldBlock`) and goes back on the run queue while it
//! can make progress.
//!
//! Small requests first (the size-aware priority of the stacked-DRAM thesis, ch. 3, in
//! software): in its turn of the run queue a connection writes at most [`FIRST_CHUNK`] bytes;
//! one whose reply goes on goes to the `bulk` queue, not the run queue. Each turn of the loop
//! runs every connection on the run queue, then one chunk (`write_chunk`) of one bulk
//! connection, then polls again (without sleeping), so the small requests of a turn never
//! wait behind a large reply, those that arrive while one is going out wait for one chunk,
//! and with `k` long replies in flight each still gets a chunk every `k` turns (bounded
//! delay: small requests cannot starve it).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use fridge_engine::{TenantId, Worker};
use fridge_proto::{memcache, resp};
use mio::{Events, Interest, Poll, Token};

use crate::config::Protocol;
use crate::listen::Stream;
use crate::session::{Ctx, Resume, Session};
use crate::shared::{ClientEntry, DRAIN_TIMEOUT, NewConn, OUTPUT_SOFT_LIMIT, Shared};
use crate::stats;
use crate::tenants::Tenants;
use crate::watch::{CloseReason, LANE_CAP};

mod mail;
mod request;

use request::{Limits, step, sync_memory};

pub(crate) const WAKER: Token = Token(usize::MAX);
/// Most reply bytes a connection writes in its turn of the run queue: a longer reply goes on
/// in the bulk queue, so the small requests behind it in the same turn do not wait for it.
const FIRST_CHUNK: usize = 64 * 1024;
/// Housekeeping period: idle timeouts, kills, buffer shrinking.
const TICK: Duration = Duration::from_millis(250);
/// Initial (and shrunk-back) size of a connection's read buffer.
const READ_BUF_INITIAL: usize = 16 * 1024;
/// Buffers larger than this are shrunk back once empty.
const SHRINK_ABOVE: usize = 256 * 1024;
/// A refused connection gets this long to send its first bytes.
const REJECT_WAIT_MS: u64 = 1000;
/// A watcher's lines are moved to its output while less than this waits there (it stays
/// under [`OUTPUT_SOFT_LIMIT`] with one more lane and a `skipped=` line).
const WATCH_OUTPUT: usize = OUTPUT_SOFT_LIMIT - LANE_CAP - 64;

/// Which parser a connection uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Memcache,
    /// The memcached binary protocol: the first byte was its request magic.
    Binary,
    Resp,
}

#[derive(Debug)]
struct Conn {
    stream: Stream,
    /// Read buffer: `rbuf[rstart..rend]` is unprocessed input; `rbuf.len()` is its capacity.
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Bytes of input still to drop (the rest of a refused data block).
    discard: usize,
    /// Bytes of an incomplete memcached request already searched for its line's end.
    scanned: usize,
    /// When the request at the head of the input began to wait for its end (ms); 0: none.
    partial_since_ms: u64,
    /// The bytes of a suspended request: RESP's arguments stay parsed in `args`; a
    /// memcached multiget's key list is `resume_keys` (offsets from the request's start).
    resume_used: usize,
    resume_keys: std::ops::Range<usize>,
    /// Buffer memory last added to `Shared::client_memory` for this connection.
    memory: usize,
    /// Reply bytes; `wbuf[wpos..]` are unsent (with `session.out_pins`' values between
    /// them).
    wbuf: Vec<u8>,
    wpos: usize,
    wire: Option<Wire>,
    args: resp::Args,
    session: Session,
    readable: bool,
    writable: bool,
    peer_closed: bool,
    /// Shutting down: read once more, then treat the peer as closed.
    draining: bool,
    /// Requests were left unrun because replies were waiting.
    backlogged: bool,
    queued: bool,
    reject: bool,
    last_active_ms: u64,
    /// Shared with the connection's `ClientEntry` (`CLIENT LIST` idle, `stats conns`).
    last_command_ms: Arc<AtomicU64>,
    accepted_ms: u64,
    /// Why the worker closes it, when not for the connection's own reasons (see `closed`).
    reason: Option<CloseReason>,
    peer: std::net::SocketAddr,
    /// A watcher's buffer for the lanes it empties.
    watch_spare: Vec<u8>,
}

impl Conn {
    /// Unsent reply bytes: the write buffer's and its pinned values' (`crate::output`).
    fn pending_out(&self) -> usize {
        self.wbuf.len() - self.wpos + self.session.out_pins.bytes()
    }
}

enum Step {
    /// More to do now: requeue.
    Again,
    /// Only the rest of a long reply to write (the step spent its write chunk): requeue
    /// behind small requests (see the module doc).
    Bulk,
    /// Wait for an event.
    Wait,
    /// Close the connection.
    Close,
}

struct Loop {
    index: usize,
    shared: Arc<Shared>,
    engine: Worker,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    queue: VecDeque<usize>,
    /// Connections in the middle of long replies, served a chunk a turn after `queue`.
    bulk: VecDeque<usize>,
    scratch: Vec<u8>,
    keys: Vec<Vec<u8>>,
    tenants: Arc<Tenants>,
    /// Request tokens taken from the tenants' buckets, not yet spent (`crate::limits`).
    tokens: crate::limits::LocalTokens,
    /// Pub/sub deliveries taken from the mailbox (the buffer is reused).
    mail: Vec<crate::pubsub::Delivery>,
    /// Deliveries for connections in the middle of a reply written in steps.
    held: Vec<crate::pubsub::Delivery>,
    /// A command's invalidations for its own connection (see `Ctx::pushes`).
    pushes: Vec<u8>,
    /// Worker 0's batch of hashes with fields due (`crate::field_expiry`).
    fields_due: Vec<(fridge_engine::TenantId, u8, Arc<[u8]>)>,
    mc_limits: memcache::Limits,
    resp_limits: resp::Limits,
    query_limit: usize,
    output_limit: usize,
    write_chunk: usize,
    /// The tokens of this worker's watching connections.
    watching: Vec<usize>,
    /// Connections whose command `CLIENT PAUSE` parked (`crate::pause`), and the pause's
    /// generation when the first was parked.
    parked: Vec<usize>,
    parked_generation: u64,
    /// Connections whose blocking pop waits for a push (`crate::blocking`).
    blocked: Vec<usize>,
    /// The (client id, slot) of blocked pops woken for this worker (the buffer is reused).
    woken: Vec<(u64, usize)>,
}

/// The worker thread's body.
pub(crate) fn run(
    index: usize,
    mut poll: Poll,
    incoming: Receiver<NewConn>,
    engine: Worker,
    shared: Arc<Shared>,
) {
    let config = &shared.config;
    let mut lp = Loop {
        index,
        mc_limits: config.memcache_limits(),
        resp_limits: config.resp_limits(),
        query_limit: config.query_buffer_limit(),
        output_limit: config.max_output_buffer.bytes().max(OUTPUT_SOFT_LIMIT),
        write_chunk: config.write_chunk.bytes(),
        shared: Arc::clone(&shared),
        engine,
        conns: Vec::new(),
        free: Vec::new(),
        queue: VecDeque::new(),
        bulk: VecDeque::new(),
        scratch: Vec::new(),
        keys: Vec::new(),
        tenants: shared.tenants(),
        tokens: crate::limits::LocalTokens::default(),
        watching: Vec::new(),
        parked: Vec::new(),
        parked_generation: 0,
        blocked: Vec::new(),
        woken: Vec::new(),
        mail: Vec::new(),
        held: Vec::new(),
        pushes: Vec::new(),
        fields_due: Vec::new(),
    };
    crate::watch::set_lane(index);
    let mut events = Events::with_capacity(1024);
    let mut last_tick = Instant::now();
    let mut drain_deadline: Option<Instant> = None;
    loop {
        let timeout = if !lp.queue.is_empty() || !lp.bulk.is_empty() {
            Some(Duration::ZERO)
        } else if lp.live() == 0 && drain_deadline.is_none() {
            // No connection to look after: sleep until the acceptor, a mailbox or the
            // shutdown wakes the poll (an idle server's workers never wake).
            None
        } else if lp.parked.is_empty() {
            Some(lp.block_wait())
        } else {
            Some(lp.pause_wait().min(lp.block_wait()))
        };
        // Worker 0 also wakes for the earliest hash field deadline, if any.
        let timeout = match (timeout, lp.field_wait()) {
            (t, None) => t,
            (None, f) => f,
            (Some(t), Some(f)) => Some(t.min(f)),
        };
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                log::error!("fridge: worker {index}: poll failed: {e}");
                break;
            }
        }
        for event in &events {
            if event.token() == WAKER {
                continue; // incoming connections and flags are checked below
            }
            let t = event.token().0;
            if let Some(Some(c)) = lp.conns.get_mut(t) {
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    c.readable = true;
                }
                if event.is_writable() || event.is_write_closed() {
                    c.writable = true;
                }
                if !c.queued {
                    c.queued = true;
                    lp.queue.push_back(t);
                }
            }
        }
        lp.accept_new(&poll, &incoming);
        lp.unpark();
        lp.unblock(false);
        lp.run_queue();
        lp.run_bulk();
        if shared.kill_pending[index].swap(false, Ordering::SeqCst) {
            lp.close_killed(&poll);
        }
        if shared.watch.take_pending(index) {
            lp.wake_watchers();
            lp.run_queue();
        }
        lp.expire_fields();
        crate::notify::drain_engine_events(&shared, index);
        lp.deliver_mail(&poll);
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            // Blocked pops look again at each tick, whatever woke them or not.
            lp.unblock(true);
            lp.housekeeping(&poll);
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            let deadline = *drain_deadline.get_or_insert_with(|| {
                lp.start_drain();
                Instant::now() + DRAIN_TIMEOUT
            });
            lp.run_queue();
            if lp.live() == 0 || Instant::now() >= deadline {
                break;
            }
        }
    }
    for t in 0..lp.conns.len() {
        if let Some(Some(c)) = lp.conns.get_mut(t) {
            c.reason = Some(CloseReason::Shutdown);
        }
        lp.close(&poll, t);
    }
}

/// Hashes worker 0 visits per turn for their due fields (`crate::field_expiry`): a turn's
/// share of that work stays small beside its connections'.
const FIELD_BATCH: usize = 64;

impl Loop {
    /// How long worker 0 may sleep before a hash field deadline (`None`: none is registered,
    /// or this is another worker).
    fn field_wait(&self) -> Option<Duration> {
        if self.index != 0 {
            return None;
        }
        let next = self.shared.field_deadlines.next_ms();
        (next != u64::MAX).then(|| {
            // One millisecond more: the engine's clock must have reached the deadline.
            Duration::from_millis(next.saturating_sub(self.engine.now_ms()).saturating_add(1))
        })
    }

    /// Worker 0: drops the due fields of up to [`FIELD_BATCH`] hashes (a turn with more due
    /// leaves the rest to the next, which comes at once: [`Loop::field_wait`] is then zero).
    /// Under the worker's transaction gate, like a command.
    fn expire_fields(&mut self) {
        let deadlines = &self.shared.field_deadlines;
        if self.index != 0 || deadlines.next_ms() > self.engine.now_ms() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let _gate = shared.gates.enter(self.index);
        deadlines.take_due(self.engine.now_ms(), FIELD_BATCH, &mut self.fields_due);
        let mut ctx = Ctx {
            shared: &shared,
            worker: self.index,
            client: 0, // no connection: every tracking client is told
            pushes: &mut self.pushes,
            engine: &mut self.engine,
            stats: &shared.workers[self.index],
            scratch: &mut self.scratch,
            keys: &mut self.keys,
            tenants: &mut self.tenants,
            tokens: &mut self.tokens,
            out_limit: OUTPUT_SOFT_LIMIT,
            fd: -1,
        };
        for (t, db, key) in self.fields_due.drain(..) {
            crate::resp::expire_hash_fields(&mut ctx, t, db, &key);
        }
    }

    fn live(&self) -> usize {
        self.conns.len() - self.free.len()
    }

    fn accept_new(&mut self, poll: &Poll, incoming: &Receiver<NewConn>) {
        loop {
            let new = match incoming.try_recv() {
                Ok(new) => new,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            };
            let NewConn { mut stream, peer, local, protocol, reject, id } = new;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
            let t = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            if let Err(e) = poll.registry().register(
                &mut stream,
                Token(t),
                Interest::READABLE | Interest::WRITABLE,
            ) {
                log::error!("fridge: cannot register a connection: {e}");
                self.free.push(t);
                self.forget(reject, id, 0);
                continue;
            }
            let now = self.shared.now_ms();
            let last_command_ms = Arc::new(AtomicU64::new(now));
            let pending = Arc::new(crate::pubsub::Pending::default());
            pending.buffers.fd.store(fd, Ordering::Relaxed);
            if !reject {
                let entry = ClientEntry {
                    peer,
                    local,
                    name: String::new(),
                    created_ms: now,
                    worker: self.index,
                    killed: false,
                    tenant: TenantId(0),
                    memory: 0,
                    last_command_ms: Arc::clone(&last_command_ms),
                    slot: t,
                    pending: Arc::clone(&pending),
                    no_evict: false,
                };
                self.shared.clients.lock().unwrap_or_else(|e| e.into_inner()).insert(id, entry);
                self.shared.watch.conn_new(peer, fd);
            }
            let wire = match protocol {
                Protocol::Auto => None,
                Protocol::Memcache => Some(Wire::Memcache),
                Protocol::Resp => Some(Wire::Resp),
            };
            self.conns[t] = Some(Conn {
                stream,
                rbuf: vec![0; READ_BUF_INITIAL],
                rstart: 0,
                rend: 0,
                discard: 0,
                scanned: 0,
                partial_since_ms: 0,
                resume_used: 0,
                resume_keys: 0..0,
                memory: 0,
                wbuf: Vec::with_capacity(READ_BUF_INITIAL),
                wpos: 0,
                wire,
                args: resp::Args::new(),
                session: Session {
                    id,
                    peer: peer.ip(),
                    port: peer.port(),
                    tenant: TenantId(0),
                    user: None,
                    rate_limited: false,
                    db: 0,
                    generation: self.tenants.generation,
                    cluster_map: None,
                    version: resp::Version::Resp2,
                    closing: false,
                    resume: Resume::default(),
                    fd,
                    watcher: None,
                    slot: t,
                    pubsub: None,
                    pending,
                    tracking: None,
                    tx: None,
                    reply_off: false,
                    reply_skip: 0,
                    deny_blocking: false,
                    out_pins: Default::default(),
                },
                readable: true,
                writable: true,
                peer_closed: false,
                draining: false,
                backlogged: false,
                queued: true,
                reject,
                last_active_ms: now,
                last_command_ms,
                accepted_ms: now,
                reason: None,
                peer,
                watch_spare: Vec::new(),
            });
            self.queue.push_back(t);
        }
    }

    /// Undoes the acceptor's accounting for a connection that is going away, and its
    /// buffers' share of the clients' memory.
    fn forget(&self, reject: bool, id: u64, memory: usize) {
        self.shared.client_memory.fetch_sub(memory, Ordering::Relaxed);
        if reject {
            self.shared.rejecting.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.shared.connections.fetch_sub(1, Ordering::Relaxed);
            self.shared.clients.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        }
    }

    fn close(&mut self, poll: &Poll, t: usize) {
        if let Some(mut c) = self.conns.get_mut(t).and_then(Option::take) {
            let _ = poll.registry().deregister(&mut c.stream);
            self.closed(t, &mut c);
        }
    }

    /// The bookkeeping of a connection that was just taken out of its slot `t`.
    fn closed(&mut self, t: usize, c: &mut Conn) {
        self.unsubscribe(c);
        if c.session.resume.block.take().is_some() {
            // A blocked pop's turn goes to the next waiter.
            let shared = &self.shared;
            shared.blocking.leave(c.session.id, |w| shared.wake(w));
        }
        self.forget(c.reject, c.session.id, c.memory);
        if let Some(tenant) = c.session.user {
            self.shared.limits.disconnect(tenant);
        }
        self.free.push(t);
        if let Some(w) = c.session.watcher.take() {
            self.shared.watch.remove(&w);
            self.watching.retain(|&x| x != t);
        }
        // Otherwise a connection closes because its client left or asked (`quit`), or failed.
        let own = match c.peer_closed || c.session.closing {
            true => CloseReason::Normal,
            false => CloseReason::Error,
        };
        if !c.reject {
            let reason = c.reason.unwrap_or(own);
            log::debug!("fridge: client connection from {} closed ({reason:?})", c.peer);
            self.shared.watch.conn_close(c.peer, c.session.fd, c.session.user, reason);
        }
    }

    /// Queues this worker's watchers: producers left lines in their lanes.
    fn wake_watchers(&mut self) {
        for &t in &self.watching {
            if let Some(Some(c)) = self.conns.get_mut(t) {
                if !c.queued {
                    c.queued = true;
                    self.queue.push_back(t);
                }
            }
        }
    }

    fn run_queue(&mut self) {
        if self.shared.tenants_generation.load(Ordering::Acquire) != self.tenants.generation {
            self.tenants = self.shared.tenants();
        }
        for _ in 0..self.queue.len() {
            let Some(t) = self.queue.pop_front() else { break };
            self.run_one(t, self.write_chunk.min(FIRST_CHUNK));
        }
    }

    /// One chunk of the long reply first in line (see the module doc).
    fn run_bulk(&mut self) {
        if let Some(t) = self.bulk.pop_front() {
            self.run_one(t, self.write_chunk);
        }
    }

    /// One step of connection `t`, and where it goes next.
    fn run_one(&mut self, t: usize, write_chunk: usize) {
        let step = match self.conns.get_mut(t) {
            Some(Some(c)) => {
                c.queued = false;
                let mut ctx = Ctx {
                    shared: &self.shared,
                    worker: self.index,
                    client: c.session.id,
                    pushes: &mut self.pushes,
                    engine: &mut self.engine,
                    stats: &self.shared.workers[self.index],
                    scratch: &mut self.scratch,
                    keys: &mut self.keys,
                    tenants: &mut self.tenants,
                    tokens: &mut self.tokens,
                    out_limit: OUTPUT_SOFT_LIMIT,
                    fd: c.session.fd,
                };
                let limits = Limits {
                    mc: &self.mc_limits,
                    resp: &self.resp_limits,
                    query: self.query_limit,
                    output: self.output_limit,
                    write_chunk,
                };
                step(c, &mut ctx, &limits)
            }
            _ => return,
        };
        if let Some(Some(c)) = self.conns.get(t) {
            if c.session.watcher.is_some() && !self.watching.contains(&t) {
                self.watching.push(t);
            } else if c.session.watcher.is_none() && !self.watching.is_empty() {
                // A monitor that sent RESET.
                self.watching.retain(|&x| x != t);
            }
            if c.session.resume.blocked && !self.blocked.contains(&t) {
                self.blocked.push(t);
            } else if c.session.resume.parked
                && !c.session.resume.blocked
                && !self.parked.contains(&t)
            {
                if self.parked.is_empty() {
                    self.parked_generation = self.shared.pause.generation();
                }
                self.parked.push(t);
            }
        }
        match step {
            Step::Again => {
                if let Some(Some(c)) = self.conns.get_mut(t) {
                    c.queued = true;
                    self.queue.push_back(t);
                }
            }
            Step::Bulk => {
                if let Some(Some(c)) = self.conns.get_mut(t) {
                    c.queued = true;
                    self.bulk.push_back(t);
                }
            }
            Step::Wait => {}
            Step::Close => self.close_later(t),
        }
    }

    /// How long the poll may sleep while connections are parked: until the pause's
    /// deadline, at most a housekeeping tick.
    fn pause_wait(&self) -> Duration {
        let now = self.shared.now_ms();
        self.shared
            .pause
            .deadline(now)
            .map_or(Duration::ZERO, |end| Duration::from_millis(end - now).min(TICK))
    }

    /// How long the poll may sleep while pops are blocked: until the earliest deadline, at
    /// most a housekeeping tick.
    fn block_wait(&self) -> Duration {
        let now = self.shared.now_ms();
        self.blocked
            .iter()
            .filter_map(|&t| self.conns.get(t)?.as_ref()?.session.resume.block)
            .map(|deadline| Duration::from_millis(deadline.saturating_sub(now)))
            .fold(TICK, Duration::min)
    }

    /// Requeues the blocked pops woken for this worker (a push gave them their turn, the
    /// turn was handed on, `CLIENT UNBLOCK`), those whose deadline has come, or, with `all`,
    /// every one (`crate::blocking`).
    fn unblock(&mut self, all: bool) {
        let Loop { shared, conns, queue, blocked, woken, index, .. } = self;
        // One load unless woken.
        shared.blocking.take_ready(*index, woken);
        let requeue = |c: &mut Conn, queue: &mut VecDeque<usize>, t: usize| {
            c.session.resume.parked = false;
            c.session.resume.blocked = false;
            if !c.queued {
                c.queued = true;
                queue.push_back(t);
            }
        };
        for &(id, t) in woken.iter() {
            if let Some(Some(c)) = conns.get_mut(t) {
                if c.session.id == id && c.session.resume.blocked {
                    requeue(c, queue, t);
                }
            }
        }
        if blocked.is_empty() {
            return;
        }
        let now = shared.now_ms();
        blocked.retain(|&t| {
            let Some(Some(c)) = conns.get_mut(t) else { return false };
            if !c.session.resume.blocked {
                return false;
            }
            if all || c.session.resume.block.is_none_or(|deadline| now >= deadline) {
                requeue(c, queue, t);
                return false;
            }
            true
        });
    }

    /// Requeues the parked connections once the pause that parked them is over (its
    /// deadline passed, or `CLIENT UNPAUSE`): each runs its command again, which parks
    /// again if a pause still covers it.
    fn unpark(&mut self) {
        if self.parked.is_empty() {
            return;
        }
        let pause = &self.shared.pause;
        let over = pause.generation() != self.parked_generation
            || pause.deadline(self.shared.now_ms()).is_none();
        if !over {
            return;
        }
        for t in std::mem::take(&mut self.parked) {
            if let Some(Some(c)) = self.conns.get_mut(t) {
                c.session.resume.parked = false;
                if !c.queued {
                    c.queued = true;
                    self.queue.push_back(t);
                }
            }
        }
    }

    /// Closes `t` without a `Poll` at hand: deregistration happens implicitly when the socket
    /// is dropped (closing a descriptor removes it from epoll).
    fn close_later(&mut self, t: usize) {
        if let Some(mut c) = self.conns.get_mut(t).and_then(Option::take) {
            self.closed(t, &mut c);
        }
    }

    /// Closes the connections `CLIENT KILL` or the clients' memory limit marked.
    fn close_killed(&mut self, poll: &Poll) {
        let killed: Vec<u64> = {
            let clients = self.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
            clients
                .iter()
                .filter(|(_, e)| e.killed && e.worker == self.index)
                .map(|(id, _)| *id)
                .collect()
        };
        for t in 0..self.conns.len() {
            if let Some(c) = self.conns[t].as_mut().filter(|c| killed.contains(&c.session.id)) {
                c.reason = Some(CloseReason::Kicked);
                self.close(poll, t);
            }
        }
    }

    fn housekeeping(&mut self, poll: &Poll) {
        let now = self.shared.now_ms();
        let idle_ms = self.shared.config.idle_timeout.saturating_mul(1000);
        let partial_ms = self.shared.config.partial_request_timeout.0;
        let stats = &self.shared.workers[self.index];
        let mut to_close = Vec::new();
        for (t, slot) in self.conns.iter_mut().enumerate() {
            let Some(c) = slot else { continue };
            if c.reject && now.saturating_sub(c.accepted_ms) > REJECT_WAIT_MS {
                to_close.push(t);
                continue;
            }
            if idle_ms > 0
                && now.saturating_sub(c.last_active_ms) > idle_ms
                && c.pending_out() == 0
                && c.session.watcher.is_none()
            {
                stats::inc(&stats.idle_kicks);
                c.reason = Some(CloseReason::IdleTimeout);
                to_close.push(t);
                continue;
            }
            if partial_ms > 0
                && c.partial_since_ms > 0
                && now.saturating_sub(c.partial_since_ms) > partial_ms
            {
                stats::inc(&stats.request_timeouts);
                to_close.push(t);
                continue;
            }
            if c.rstart == c.rend && c.rbuf.len() > SHRINK_ABOVE {
                c.rbuf = vec![0; READ_BUF_INITIAL];
                c.rstart = 0;
                c.rend = 0;
            }
            if c.pending_out() == 0 && c.wbuf.capacity() > SHRINK_ABOVE {
                c.wbuf = Vec::with_capacity(READ_BUF_INITIAL);
                c.wpos = 0;
            }
            if c.rstart == c.rend {
                c.args.shrink();
            }
            sync_memory(c, &self.shared, stats);
        }
        for t in to_close {
            self.close(poll, t);
        }
    }

    /// Shutdown: stop reading; run what is buffered, flush, close.
    fn start_drain(&mut self) {
        for (t, slot) in self.conns.iter_mut().enumerate() {
            if let Some(c) = slot {
                // One last read of what has arrived, then no more (see `step`).
                c.draining = true;
                c.readable = true;
                if !c.queued {
                    c.queued = true;
                    self.queue.push_back(t);
                }
            }
        }
    }
}

impl Conn {
    /// The request at the head of the input, `size` bytes with its bookkeeping, is
    /// incomplete: wait for the rest, unless it has outgrown the query buffer limit — then
    /// the protocol's error, and the connection closes (the rest of the request could not be
    /// told from a new one).
    fn incomplete(&mut self, ctx: &Ctx<'_>, size: usize, limit: usize, too_large: &[u8]) {
        if size >= limit {
            stats::inc(&ctx.stats.query_overflows);
            self.args.clear();
            self.wbuf.extend_from_slice(too_large);
            self.session.closing = true;
        } else {
            self.waiting_since(ctx);
        }
    }

    /// The request at the head of the input is incomplete: note since when (see
    /// `partial_request_timeout`).
    fn waiting_since(&mut self, ctx: &Ctx<'_>) {
        if self.partial_since_ms == 0 {
            self.partial_since_ms = ctx.shared.now_ms().max(1);
        }
    }
}
