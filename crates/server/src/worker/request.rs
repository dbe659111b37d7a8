//! One connection's requests: a bounded step (read, run what is complete, write), the
//! choice of protocol from a connection's first bytes, and the per-protocol runners (memcached
//! text and meta, memcached binary, RESP). The event loop in `worker.rs` calls [`step`].

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use fridge_engine::{BATCH, TenantId};
use fridge_proto::waiting::{GetRequest, WaitingGets};
use fridge_proto::{binary, memcache, resp};

use super::{Conn, Step, WATCH_OUTPUT, Wire};
use crate::auth::{self, McLogin};
use crate::listen::Stream;
use crate::session::{Ctx, Resume};
use crate::shared::{OUTPUT_SOFT_LIMIT, READ_BUDGET, Shared};
use crate::stats::{self, WorkerStats};
use crate::tls::Handshake;

/// The limits a step runs under (the configuration's, looked up once per turn).
pub(super) struct Limits<'a> {
    pub(super) mc: &'a memcache::Limits,
    pub(super) resp: &'a resp::Limits,
    pub(super) query: usize,
    pub(super) output: usize,
    pub(super) write_chunk: usize,
}

/// One bounded step of a connection.
pub(super) fn step(c: &mut Conn, ctx: &mut Ctx<'_>, limits: &Limits<'_>) -> Step {
    // 1. Read, unless replies are backing up or the buffer is full of unrun requests.
    if c.readable && !c.peer_closed && c.pending_out() < OUTPUT_SOFT_LIMIT {
        if let Err(()) = read_some(c, ctx, limits.query) {
            return Step::Close;
        }
        if let Stream::Tls(tls) = &mut c.stream {
            match tls.handshake() {
                Handshake::Told => {}
                // Half a handshake is half a request: the partial-request timeout applies.
                Handshake::Going => c.waiting_since(ctx),
                Handshake::Done(name) => {
                    c.partial_since_ms = 0;
                    if let Some(name) = name {
                        auth::certificate_login(&mut c.session, ctx, &name);
                    }
                }
            }
        }
    }
    if c.draining {
        // Shutdown: what the client sent before it began is in flight; read no more after.
        c.peer_closed = true;
    }
    // 2. Run complete requests; a watcher ignores its input and takes its lines instead.
    match c.session.watcher.clone() {
        None => process(c, ctx, limits),
        Some(w) if w.is_monitor() => {
            // A monitor runs its commands, then takes its lines (see `resp/monitor.rs`).
            process(c, ctx, limits);
            if w.lost() {
                ctx.shared.pubsub.disconnections.fetch_add(1, Ordering::Relaxed);
                return Step::Close;
            }
            if c.session.watcher.is_some() {
                compact_output(c);
                let limit = c.wpos + WATCH_OUTPUT;
                let (slow, hub) = (&ctx.shared.slowlog, &*ctx.shared.watch);
                let left = w.drain(&mut c.wbuf, &mut c.watch_spare, limit, slow, hub);
                c.backlogged |= left;
            }
        }
        Some(w) => {
            (c.rstart, c.rend) = (0, 0);
            // A watcher whose tenant was removed closes, as other connections do.
            c.session.check_generation(ctx.tenants);
            compact_output(c);
            if !c.session.closing {
                let limit = c.wpos + WATCH_OUTPUT;
                let (slow, hub) = (&ctx.shared.slowlog, &*ctx.shared.watch);
                c.backlogged = w.drain(&mut c.wbuf, &mut c.watch_spare, limit, slow, hub);
            }
        }
    }
    // 3. Write.
    if c.writable && c.stream.wants_write() {
        // TLS records a full socket left behind go before anything else.
        match c.stream.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => c.writable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Step::Close,
        }
    }
    // Whether this step wrote its whole chunk and the reply goes on (see `Step::Bulk`).
    let mut chunk_spent = false;
    if c.pending_out() > 0 && c.writable {
        let mut budget = limits.write_chunk;
        while c.pending_out() > 0 && budget > 0 {
            let pins = &mut c.session.out_pins;
            let [buffered, pinned] = pins.slices(&c.wbuf, c.wpos, budget);
            let asked = buffered.len() + pinned.len();
            let written = if pinned.is_empty() {
                c.stream.write(buffered)
            } else {
                c.stream.write_vectored(&[io::IoSlice::new(buffered), io::IoSlice::new(pinned)])
            };
            match written {
                Ok(0) => return Step::Close,
                Ok(n) => {
                    c.wpos = pins.advance(c.wpos, n);
                    budget = budget.saturating_sub(n);
                    stats::add(&ctx.stats.bytes_written, n as u64);
                    if n < asked {
                        // The socket buffer is full: wait for the writable edge.
                        c.writable = false;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.writable = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
        if c.pending_out() == 0 {
            c.wbuf.clear();
            c.wpos = 0;
        }
        chunk_spent = budget == 0 && c.pending_out() > 0 && c.writable;
    }
    if c.pending_out() > limits.output {
        stats::inc(&ctx.stats.output_overflows);
        return Step::Close;
    }
    if c.session.watcher.is_some() && c.pending_out() >= WATCH_OUTPUT {
        // Lines left in the lanes wait for the writable edge (no producer wakes it).
        c.backlogged = false;
    }
    sync_memory(c, ctx.shared, ctx.stats);
    publish_figures(c);
    let out = c.pending_out();
    let records = c.stream.wants_write();
    if out == 0 && !records && (c.session.closing || c.peer_closed) {
        return Step::Close;
    }
    let can_write = (out > 0 || records) && c.writable;
    // A parked connection reads on its events only: with its input full it must not spin.
    let can_read = c.readable
        && !c.peer_closed
        && !c.session.closing
        && !c.session.resume.parked
        && out < OUTPUT_SOFT_LIMIT;
    let can_run = c.backlogged && out < OUTPUT_SOFT_LIMIT;
    if chunk_spent {
        Step::Bulk
    } else if can_write || can_read || can_run {
        Step::Again
    } else {
        Step::Wait
    }
}

/// Brings the connection's share of `Shared::client_memory` up to date (its buffers'
/// sizes change rarely: when they grow for a large request or shrink back), and asks for
/// client evictions when the total is over the limit.
pub(super) fn sync_memory(c: &mut Conn, shared: &Shared, stats: &WorkerStats) {
    let keys_job = c.session.resume.keys.as_ref().map_or(0, |k| k.memory_bytes());
    let subs = c.session.pubsub.as_ref().map_or(0, |p| p.memory_bytes());
    let tx = c.session.tx.as_ref().map_or(0, |t| t.memory_bytes());
    let now = c.rbuf.len() + c.wbuf.capacity() + c.args.heap_bytes() + keys_job + subs + tx;
    if now == c.memory || c.reject {
        return;
    }
    let total = if now > c.memory {
        shared.client_memory.fetch_add(now - c.memory, Ordering::Relaxed) + (now - c.memory)
    } else {
        shared.client_memory.fetch_sub(c.memory - now, Ordering::Relaxed) - (c.memory - now)
    };
    c.memory = now;
    if let Some(e) = shared.clients.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&c.session.id)
    {
        e.memory = now;
    }
    if total > shared.config.client_memory_limit() {
        shared.evict_clients(stats);
    }
}

/// Stores what `CLIENT LIST` shows of the connection (`crate::clientinfo`).
#[inline]
fn publish_figures(c: &Conn) {
    use crate::clientinfo::{Figures, MONITOR, MULTI, PAUSED, TRACKING};
    let s = &c.session;
    let tx = s.tx.as_deref();
    let open = tx.filter(|t| t.open);
    let flags = [
        (s.watcher.is_some(), MONITOR),
        (open.is_some(), MULTI),
        (s.resume.parked, PAUSED),
        (s.tracking.is_some(), TRACKING),
    ]
    .iter()
    .fold(0, |f, &(on, bit)| if on { f | bit } else { f });
    s.pending.buffers.publish(&Figures {
        qbuf: c.rend - c.rstart,
        qbuf_free: c.rbuf.len() - c.rend,
        argv_mem: c.args.heap_bytes(),
        multi: open.map(|t| t.count),
        multi_mem: open.map_or(0, |t| t.queue.capacity()),
        rbs: c.wbuf.capacity(),
        obl: c.pending_out(),
        watch: tx.map_or(0, |t| t.watched.len()),
        flags,
    });
}

/// Reads up to [`READ_BUDGET`] bytes. `Err` means the connection failed.
fn read_some(c: &mut Conn, ctx: &mut Ctx<'_>, query_limit: usize) -> Result<(), ()> {
    let mut budget = READ_BUDGET;
    while budget > 0 {
        if c.rstart == c.rend {
            c.rstart = 0;
            c.rend = 0;
        }
        if c.rend == c.rbuf.len() {
            if c.rstart > 0 {
                c.rbuf.copy_within(c.rstart..c.rend, 0);
                c.rend -= c.rstart;
                c.rstart = 0;
            } else if c.rbuf.len() < query_limit {
                let new_len = (c.rbuf.len() * 2).min(query_limit);
                c.rbuf.resize(new_len, 0);
            } else {
                return Ok(()); // full of unrun input: process() decides
            }
        }
        let room = (c.rbuf.len() - c.rend).min(budget);
        match c.stream.read(&mut c.rbuf[c.rend..c.rend + room]) {
            Ok(0) => {
                c.peer_closed = true;
                c.readable = false;
                return Ok(());
            }
            Ok(n) => {
                c.rend += n;
                budget -= n;
                c.last_active_ms = ctx.shared.now_ms();
                stats::add(&ctx.stats.bytes_read, n as u64);
                if n < room && !c.stream.read_pending() {
                    // A short read drained the socket; with edge-triggered events, any later
                    // data raises a new event. Saves a read that would return WouldBlock.
                    c.readable = false;
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// Runs the complete requests in the read buffer while replies stay under the soft limit.
fn process(c: &mut Conn, ctx: &mut Ctx<'_>, limits: &Limits<'_>) {
    c.backlogged = false;
    compact_output(c);
    ctx.out_limit = c.wpos + OUTPUT_SOFT_LIMIT;
    // When the memcached request being run began (`cmdstats::monotonic_ns`): the end of
    // the one before, or now.
    let mut since = None;
    // The buffer up to here has been looked at for waiting GETs (`look_ahead`).
    let mut looked_ahead = c.rstart;
    loop {
        if c.session.closing || c.session.watcher.as_ref().is_some_and(|w| !w.is_monitor()) {
            // Nothing after `quit`, a protocol error or `watch` is run.
            c.rstart = c.rend;
            break;
        }
        if c.discard > 0 {
            let d = c.discard.min(c.rend - c.rstart);
            c.rstart += d;
            c.discard -= d;
            if c.discard > 0 {
                c.waiting_since(ctx);
                break;
            }
        }
        let avail = c.rend - c.rstart;
        if avail == 0 {
            break;
        }
        if c.pending_out() >= OUTPUT_SOFT_LIMIT {
            c.backlogged = true;
            break;
        }
        c.session.check_generation(ctx.tenants);
        if c.session.closing {
            continue;
        }
        let wire = match c.wire {
            Some(w) => w,
            None => match pick_wire(&c.rbuf[c.rstart..c.rend]) {
                Some(w) => *c.wire.insert(w),
                None => {
                    // The first command word has not all come yet.
                    c.waiting_since(ctx);
                    break;
                }
            },
        };
        if c.reject {
            match wire {
                Wire::Resp => c.wbuf.extend_from_slice(b"-ERR max number of clients reached\r\n"),
                Wire::Memcache | Wire::Binary => {
                    c.wbuf.extend_from_slice(b"ERROR Too many open connections\r\n");
                }
            }
            c.session.closing = true;
            continue;
        }
        if c.rstart >= looked_ahead {
            looked_ahead = look_ahead(c, ctx, wire);
        }
        let ran = match wire {
            Wire::Memcache => {
                let since = since.get_or_insert_with(crate::cmdstats::monotonic_ns);
                run_memcache(c, ctx, limits, avail, since)
            }
            Wire::Binary => run_binary(c, ctx, limits, avail),
            Wire::Resp => run_resp(c, ctx, limits, avail),
        };
        let used = match ran {
            Ran::Used(used) => used,
            Ran::Stop => break,
            Ran::Again => continue,
        };
        c.rstart += used;
        c.partial_since_ms = 0;
    }
    if c.rstart == c.rend {
        c.rstart = 0;
        c.rend = 0;
    }
}

/// Before a run of pipelined one-key GETs waiting whole in the buffer (memcached `get`/`gets`
/// lines, RESP `GET` commands), starts loading what they will read
/// (`Worker::prefetch_gets`), so that their memory misses overlap instead of following one
/// another as the requests run one by one; a request whose first bytes cannot start a GET
/// costs a comparison. Returns the offset up to which the buffer was looked at (past the
/// first request at least), where the next look starts.
#[inline]
fn look_ahead(c: &Conn, ctx: &mut Ctx<'_>, wire: Wire) -> usize {
    let buf = &c.rbuf[c.rstart..c.rend];
    let left = match wire {
        Wire::Memcache if buf.starts_with(b"get") => {
            prefetch_keys(c, ctx, wire, memcache::waiting_get_keys(buf))
        }
        Wire::Resp if buf.starts_with(b"*2\r\n$3\r\n") => {
            prefetch_keys(c, ctx, wire, resp::waiting_get_keys(buf))
        }
        _ => None,
    };
    left.map_or(c.rstart + 1, |left| c.rend - left)
}

/// [`look_ahead`] for one protocol's keys: the first [`BATCH`] prefetched in the
/// tenant and database the requests will run in (chosen as `crate::memcache::execute` and
/// `crate::resp` choose them), and the bytes left after them; `None` with fewer than two
/// (one GET gains nothing from loading its lines a moment early) or a request to resume.
fn prefetch_keys<P: GetRequest>(
    c: &Conn,
    ctx: &mut Ctx<'_>,
    wire: Wire,
    mut keys: WaitingGets<'_, P>,
) -> Option<usize> {
    let s = &c.session;
    let (first, second) = (keys.next()?, keys.next()?);
    let tenant = match s.user {
        _ if s.resume.resuming => return None,
        Some(t) => t,
        None if s.must_login(ctx.tenants) => return None,
        None if wire == Wire::Memcache || ctx.tenants.has_prefixes() => ctx.tenants.route(first),
        None => TenantId(0),
    };
    let db = match wire {
        Wire::Resp => ctx.shared.databases.physical(tenant, s.db),
        _ => 0,
    };
    ctx.engine.select(db);
    let run = [first, second].into_iter().chain(keys.by_ref().take(BATCH - 2));
    ctx.engine.prefetch_gets(tenant, run);
    ctx.engine.select(0);
    Some(keys.remainder().len())
}

/// Longer first words than this decide for memcached without waiting for the word's end
/// (no command of either protocol is this long).
const MAX_FIRST_WORD: usize = 32;

/// The protocol a new connection speaks, from its first bytes; `None` while the first
/// command word is incomplete. `*` is RESP's multibulk, `0x80` the binary protocol's magic.
/// Otherwise the first word decides (the rule in `docs/protocol.md`): a memcached command
/// (case-sensitive, as memcached reads them) is memcached — so `get`, `set`, `incr`, `decr`,
/// `touch`, `append`, `quit`, `version`… in lower case stay memcached; a word RESP's table
/// knows (in any case) is inline RESP — except an HTTP request line, `GET /…`; anything else
/// is memcached, as before.
fn pick_wire(buf: &[u8]) -> Option<Wire> {
    match *buf.first()? {
        b'*' => return Some(Wire::Resp),
        binary::REQUEST_MAGIC => return Some(Wire::Binary),
        _ => {}
    }
    let end = buf
        .iter()
        .take(MAX_FIRST_WORD + 1)
        .position(|&c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'));
    let word = match end {
        Some(e) => &buf[..e],
        None if buf.len() > MAX_FIRST_WORD => return Some(Wire::Memcache),
        None => return None,
    };
    if is_memcache_command(word) || !crate::resp::is_command(word) {
        return Some(Wire::Memcache);
    }
    if word == b"GET" {
        // An HTTP request line (`GET / HTTP/1.1`): memcached's, which closes the connection
        // on HTTP, as memcached does. Decided by the first byte of the next word.
        let rest = &buf[word.len()..];
        match rest.iter().position(|&c| c != b' ' && c != b'\t') {
            Some(i) if rest[i] == b'/' => return Some(Wire::Memcache),
            None if rest.len() <= MAX_FIRST_WORD => return None,
            _ => {}
        }
    }
    Some(Wire::Resp)
}

/// The memcached text protocol's command words, as memcached spells them (it reads them
/// case-sensitively), meta commands (`mg`, `ms`, … any `m` and one letter) included.
fn is_memcache_command(word: &[u8]) -> bool {
    const WORDS: [&[u8]; 28] = [
        b"get",
        b"gets",
        b"gat",
        b"gats",
        b"set",
        b"add",
        b"replace",
        b"append",
        b"prepend",
        b"cas",
        b"delete",
        b"incr",
        b"decr",
        b"touch",
        b"flush_all",
        b"stats",
        b"lru_crawler",
        b"version",
        b"quit",
        b"verbosity",
        b"watch",
        b"shutdown",
        b"slabs",
        b"lru",
        b"cache_memlimit",
        b"misbehave",
        b"debugtime",
        b"extstore",
    ];
    WORDS.contains(&word) || matches!(word, [b'm', c] if c.is_ascii_lowercase())
}

/// Drops what was sent before appending (a reply written in steps would otherwise keep all
/// of itself); copies at most as many bytes as were sent.
fn compact_output(c: &mut Conn) {
    if c.wpos > 0 && c.wpos >= c.pending_out() {
        c.wbuf.drain(..c.wpos);
        c.session.out_pins.shift(c.wpos);
        c.wpos = 0;
    }
}

/// What running the request at the head of the input came to.
enum Ran {
    /// It was answered (or skipped): drop this many input bytes and go on.
    Used(usize),
    /// Stop this turn: the request is incomplete, or suspended, or the reply backlogged.
    Stop,
    /// Look at the input again (a stale resumed state was dropped).
    Again,
}

/// Runs the memcached request at the head of the input (`avail` bytes of it).
/// A request that completes is timed from `since` (then set to its end) for the slow ring.
fn run_memcache(
    c: &mut Conn,
    ctx: &mut Ctx<'_>,
    limits: &Limits<'_>,
    avail: usize,
    since: &mut u64,
) -> Ran {
    let buf = &c.rbuf[c.rstart..c.rend];
    let used = if c.session.must_login(ctx.tenants) {
        let Some((req, used)) = auth::parse_memcache_login(buf, limits.mc.max_line_len) else {
            c.waiting_since(ctx);
            return Ran::Stop;
        };
        auth::memcache_login(req, &mut c.wbuf, &mut c.session, ctx);
        if let McLogin::TooLarge(skip) = req {
            let avail_after = avail - used;
            c.discard = skip.saturating_sub(avail_after);
            used + skip.min(avail_after)
        } else {
            used
        }
    } else if c.session.resume.resuming && c.session.resume.walk.is_none() {
        // A suspended multiget runs again on the keys it has not answered. (A suspended
        // walk — `lru_crawler metadump`, `stats items` — is parsed again below.)
        let Some((command, exptime)) = c.session.resume.retrieval else {
            c.session.resume = Resume::default();
            return Ran::Again;
        };
        let keys = &buf[c.resume_keys.start + c.session.resume.next..c.resume_keys.end];
        let keys = memcache::Keys::new(keys);
        let req = memcache::Request::Retrieval(memcache::Retrieval { command, exptime, keys });
        crate::memcache::execute(req, &mut c.wbuf, &mut c.session, ctx);
        if c.session.keep_for_later() {
            c.backlogged = true;
            return Ran::Stop;
        }
        c.resume_used
    } else {
        match memcache::parse_request_resumable(buf, limits.mc, &mut c.scanned) {
            Ok((req, used)) => {
                // Over its tenant's request rate: refused, not run (`crate::limits`). A
                // resumed multiget paid when it began; `quit` always closes.
                if c.session.rate_limited
                    && !c.session.resume.resuming
                    && !matches!(req, memcache::Request::Quit)
                    && !c.session.admit(ctx)
                {
                    c.wbuf.extend_from_slice(crate::limits::MC_THROTTLED);
                    return Ran::Used(used);
                }
                if !c.session.resume.resuming {
                    stats::inc(&ctx.stats.commands);
                    // Arrived with the last read (Redis's `lastinteraction` is set on reads).
                    c.last_command_ms.store(c.last_active_ms, Ordering::Relaxed);
                }
                let keys = match &req {
                    memcache::Request::Retrieval(r) => offsets(buf, r.keys.as_bytes()),
                    _ => 0..0,
                };
                crate::memcache::execute(req, &mut c.wbuf, &mut c.session, ctx);
                if c.session.keep_for_later() {
                    (c.resume_used, c.resume_keys) = (used, keys);
                    c.backlogged = true;
                    c.partial_since_ms = 0;
                    return Ran::Stop;
                }
                let now = crate::cmdstats::monotonic_ns();
                let micros = now.saturating_sub(std::mem::replace(since, now)) / 1000;
                if ctx.shared.slowlog.wants(micros) {
                    let words = crate::watch_events::command_words(&buf[..used]);
                    crate::watch_events::slow(words, micros, c.session.tenant, ctx);
                }
                used
            }
            Err(memcache::ParseError::Incomplete) => {
                const TOO_LARGE: &[u8] = b"SERVER_ERROR out of memory reading request\r\n";
                c.incomplete(ctx, avail, limits.query, TOO_LARGE);
                return Ran::Stop;
            }
            Err(memcache::ParseError::Invalid(e)) => {
                if e.kind == memcache::ErrorKind::TooLarge {
                    crate::memcache::drop_refused_store(buf, c.session.user, ctx, limits.mc);
                }
                if !e.noreply {
                    c.wbuf.extend_from_slice(e.reply());
                }
                if e.closes() {
                    c.session.closing = true;
                }
                if e.skip > avail {
                    c.discard = e.skip - avail;
                }
                e.skip.min(avail)
            }
        }
    };
    Ran::Used(used)
}

/// Runs the memcached binary-protocol request at the head of the input (`avail` bytes of it).
fn run_binary(c: &mut Conn, ctx: &mut Ctx<'_>, limits: &Limits<'_>, avail: usize) -> Ran {
    let buf = &c.rbuf[c.rstart..c.rend];
    let used = match binary::parse_request(buf, limits.mc) {
        Ok((req, used)) => {
            stats::inc(&ctx.stats.commands);
            c.discard = crate::binary::execute(req, &mut c.wbuf, &mut c.session, ctx);
            used
        }
        Err(binary::ParseError::Incomplete) => {
            // Only a key longer than the query buffer leaves room for can get here.
            const TOO_LARGE: &[u8] =
                b"\x81\0\0\0\0\0\0\x82\0\0\0\x0d\0\0\0\0\0\0\0\0\0\0\0\0Out of memory";
            c.incomplete(ctx, avail, limits.query, TOO_LARGE);
            return Ran::Stop;
        }
        Err(binary::ParseError::BadMagic) => {
            // memcached closes without a reply.
            c.session.closing = true;
            avail
        }
        Err(binary::ParseError::Invalid(e)) => {
            e.write_reply(&mut c.wbuf);
            c.session.closing |= e.close;
            c.discard = e.skip.saturating_sub(avail);
            e.skip.min(avail)
        }
    };
    Ran::Used(used)
}

/// Runs the RESP request at the head of the input (`avail` bytes of it).
fn run_resp(c: &mut Conn, ctx: &mut Ctx<'_>, limits: &Limits<'_>, avail: usize) -> Ran {
    let buf = &c.rbuf[c.rstart..c.rend];
    // A suspended request runs again on the arguments parsed the first time.
    let used = if c.session.resume.resuming {
        let cmd = c.args.command(buf);
        crate::resp::execute(&cmd, &mut c.wbuf, &mut c.session, ctx);
        if c.session.keep_for_later() {
            // A parked command waits for its worker to requeue it (`crate::pause`).
            c.backlogged = !c.session.resume.parked;
            return Ran::Stop;
        }
        c.resume_used
    } else {
        match resp::parse_command(buf, limits.resp, &mut c.args) {
            Ok(used) => {
                if !c.args.is_empty() {
                    stats::inc(&ctx.stats.commands);
                    // Arrived with the last read (Redis's `lastinteraction` is set on reads).
                    c.last_command_ms.store(c.last_active_ms, Ordering::Relaxed);
                    let cmd = c.args.command(buf);
                    // Over its tenant's request rate: refused, not run (`crate::limits`).
                    if c.session.rate_limited && !crate::resp::admit(&cmd, &mut c.session, ctx) {
                        let error = crate::limits::RESP_THROTTLED;
                        crate::resp::refuse(error, &mut c.wbuf, &mut c.session, ctx);
                        return Ran::Used(used);
                    }
                    crate::resp::execute(&cmd, &mut c.wbuf, &mut c.session, ctx);
                    if c.session.keep_for_later() {
                        c.resume_used = used;
                        c.backlogged = !c.session.resume.parked;
                        c.partial_since_ms = 0;
                        return Ran::Stop;
                    }
                }
                used
            }
            Err(resp::ParseError::Incomplete) => {
                const TOO_LARGE: &[u8] = b"-ERR Protocol error: query buffer limit exceeded\r\n";
                // The arguments' bookkeeping counts against the limit too.
                let size = avail + c.args.arg_bytes();
                c.incomplete(ctx, size, limits.query, TOO_LARGE);
                return Ran::Stop;
            }
            Err(resp::ParseError::Protocol(e)) => {
                e.write_reply(&mut c.wbuf);
                c.session.closing = true;
                avail
            }
        }
    };
    Ran::Used(used)
}

/// Where `part`, a subslice of `whole`, lies in it.
fn offsets(whole: &[u8], part: &[u8]) -> std::ops::Range<usize> {
    // Address arithmetic on two slices of one buffer; nothing is dereferenced.
    let start = (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize);
    debug_assert!(start + part.len() <= whole.len());
    start..start + part.len()
}
