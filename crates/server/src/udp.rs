//! memcached's UDP transport (`-U`; memcached's `doc/protocol.txt`, "UDP protocol"), for
//! `get` and `gets`, the commands clients such as mcrouter send over it.
//!
//! Every datagram starts with an 8-byte frame header, four big-endian 16-bit fields:
//!
//! ```text
//! │ request id │ sequence number │ datagrams in the message │ reserved (0) │
//! ```
//!
//! A request is one datagram (memcached does not serve requests of several: they get no
//! answer, as from memcached) holding one or more memcached text requests. Each request's reply
//! is cut into datagrams of at most 1400 bytes, header included, numbered from 0, each naming
//! the count and the request id of the datagram it answers. Any other command is answered
//! `SERVER_ERROR UDP serves get and gets only`; malformed requests get their TCP errors.
//!
//! One thread per UDP socket ("fridge-udp"), with its own engine handle, blocking reads that
//! wake every [`TICK`] to notice shutdown. A reply never exceeds the per-connection output
//! limit (`max_output_buffer`) or 65535 datagrams: past that it ends in memcached's
//! `SERVER_ERROR out of memory writing get response`. UDP lookups are not in `stats`.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use fridge_engine::{TenantId, Worker};
use fridge_proto::memcache::{self as mc, ParseError, Reply, Request, Retrieval, RetrievalCommand};

use crate::shared::Shared;
use crate::tenants::Tenants;

/// Bytes of the frame header.
pub(crate) const HEADER: usize = 8;
/// Largest datagram sent, header included (memcached's `UDP_MAX_PAYLOAD_SIZE`).
pub(crate) const MAX_DATAGRAM: usize = 1400;
/// Largest datagram read (a request must fit in one).
const MAX_REQUEST: usize = 65536;
/// How often a blocked read wakes to check for shutdown.
const TICK: Duration = Duration::from_millis(250);

const REQUEST_ID: usize = 0;
const SEQUENCE: usize = 2;
const COUNT: usize = 4;
const RESERVED: usize = 6;

/// Serves one UDP socket until the server shuts down. `gate` is the thread's transaction gate
/// (`crate::transaction`), held while it answers one datagram.
pub(crate) fn serve(socket: UdpSocket, shared: Arc<Shared>, mut engine: Worker, gate: usize) {
    if let Err(e) = socket.set_read_timeout(Some(TICK)) {
        log::error!("fridge: UDP: {e}");
        return;
    }
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut out = Vec::new();
    let mut tenants = shared.tenants();
    while !shared.shutdown.load(Ordering::SeqCst) {
        let (n, peer) = match socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                log::error!("fridge: UDP receive failed: {e}");
                std::thread::sleep(TICK);
                continue;
            }
        };
        if shared.tenants_generation.load(Ordering::Acquire) != tenants.generation {
            tenants = shared.tenants();
        }
        let Some(id) = request_id(&buf[..n]) else { continue };
        let _gate = shared.gates.enter(gate);
        answer(&buf[HEADER..n], id, &socket, peer, &mut out, &shared, &mut engine, &tenants);
    }
}

/// The request id of a datagram that is a whole request, else `None` (dropped).
fn request_id(datagram: &[u8]) -> Option<u16> {
    let field = |at: usize| u16::from_be_bytes([datagram[at], datagram[at + 1]]);
    (datagram.len() >= HEADER && field(COUNT) == 1 && field(SEQUENCE) == 0)
        .then(|| field(REQUEST_ID))
}

/// Runs the requests of one datagram, sending each one's reply as it is made.
#[expect(clippy::too_many_arguments, reason = "one call site; the pieces of one UDP turn")]
fn answer(
    mut payload: &[u8],
    id: u16,
    socket: &UdpSocket,
    peer: SocketAddr,
    out: &mut Vec<u8>,
    shared: &Shared,
    engine: &mut Worker,
    tenants: &Tenants,
) {
    let limits = shared.config.memcache_limits();
    let cap = shared.config.max_output_buffer.bytes().min(usize::from(u16::MAX) * PAYLOAD);
    while !payload.is_empty() {
        out.clear();
        let used = match mc::parse_request(payload, &limits) {
            Ok((req, used)) => {
                match req {
                    _ if !tenants.allow_unauthenticated => {
                        out.extend_from_slice(b"CLIENT_ERROR unauthenticated\r\n");
                    }
                    Request::Retrieval(r)
                        if matches!(r.command, RetrievalCommand::Get | RetrievalCommand::Gets) =>
                    {
                        retrieval(r, out, engine, tenants, cap);
                    }
                    _ => mc::write_server_error(out, b"UDP serves get and gets only"),
                }
                used
            }
            Err(ParseError::Incomplete) => return,
            Err(ParseError::Invalid(e)) => {
                if !e.noreply {
                    out.extend_from_slice(e.reply());
                }
                if e.closes() {
                    payload = &[];
                }
                e.skip
            }
        };
        send(socket, peer, id, out);
        payload = payload.get(used..).unwrap_or_default();
    }
}

/// `get`/`gets`: the values found, then `END`; cut short with memcached's error past `cap`.
fn retrieval(r: Retrieval<'_>, out: &mut Vec<u8>, engine: &mut Worker, t: &Tenants, cap: usize) {
    let with_cas = r.command.returns_cas();
    // As on TCP, a client that has not logged in is routed by its first key.
    let tenant: TenantId = t.route(r.keys.iter().next().unwrap_or_default());
    for key in r.keys.iter() {
        let start = out.len();
        let write = |item: fridge_engine::Item<'_>| {
            let cas = with_cas.then_some(item.cas);
            mc::write_value_header(out, key, item.flags, item.value.len(), cas);
            mc::write_data(out, item.value);
        };
        engine.get(tenant, key, write);
        if out.len() > cap {
            out.truncate(start);
            mc::write_server_error(out, b"out of memory writing get response");
            return;
        }
    }
    mc::write_reply(out, Reply::End);
}

/// Bytes of reply per datagram.
const PAYLOAD: usize = MAX_DATAGRAM - HEADER;

/// Sends `reply` as datagrams of at most [`MAX_DATAGRAM`] bytes; nothing for an empty one.
fn send(socket: &UdpSocket, peer: SocketAddr, id: u16, reply: &[u8]) {
    let count = reply.len().div_ceil(PAYLOAD);
    let mut datagram = [0u8; MAX_DATAGRAM];
    for (seq, chunk) in reply.chunks(PAYLOAD).enumerate() {
        datagram[REQUEST_ID..REQUEST_ID + 2].copy_from_slice(&id.to_be_bytes());
        datagram[SEQUENCE..SEQUENCE + 2].copy_from_slice(&(seq as u16).to_be_bytes());
        datagram[COUNT..COUNT + 2].copy_from_slice(&(count as u16).to_be_bytes());
        datagram[RESERVED..HEADER].fill(0);
        datagram[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
        // A datagram the kernel drops is lost, as UDP is: the client asks again.
        let _ = socket.send_to(&datagram[..HEADER + chunk.len()], peer);
    }
}
