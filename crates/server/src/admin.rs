//! The admin port: a small HTTP/1.1 server for operators and their tools.
//!
//! - `GET /metrics`: every figure of `stats`, `stats tenants` and `INFO commandstats` /
//!   `latencystats` in Prometheus's text format (`crate::stats::write_metrics`).
//! - `GET /stats.json`: the same figures as one JSON object (`crate::stats::write_json`).
//! - `GET /hotkeys`: the hot keys of every tenant (`crate::hotkeys::write_json`).
//! - `GET /dashboard` (and `/`): a live page for people (`dashboard.html`, no external assets:
//!   it works where the machine has no internet), redrawn each second from `/stats.json`.
//! - `GET /healthz`: `200 ok` while the process serves (a liveness probe).
//! - `GET /readyz`: `200 ready` while it accepts clients, `503` once it is shutting down (a
//!   readiness probe: a load balancer stops sending new clients).
//!
//! `HEAD` is answered like `GET` without the body; other methods get `405`, other paths `404`,
//! a request whose head exceeds 8 KiB `431`. Every reply closes its connection
//! (`Connection: close`), as a scraper expects of a one-shot endpoint.
//!
//! Off unless `--admin-port` is given, and then on loopback unless `--admin-address` says
//! otherwise: the endpoint has no authentication and shows every tenant's figures, so it is
//! opened to the network only on purpose (behind a firewall or a scraper's network).
//!
//! One thread (`fridge-admin`) with its own mio poll serves it: connections are non-blocking,
//! at most [`MAX_CONNECTIONS`] at once (more are closed at once), each closed after
//! [`TIMEOUT`] if it has not sent its request, so a slow client cannot hold the port. Idle, the
//! thread sleeps in `poll` with no timeout; the server's shutdown wakes it through its waker.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::shared::Shared;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Connections served at once.
const MAX_CONNECTIONS: usize = 64;
/// Longest request head.
const MAX_HEAD: usize = 8 << 10;
/// How long a connection may take to send its request and read the reply.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the admin thread on `listener`: its waker (woken at shutdown) and its handle.
pub(crate) fn spawn(
    mut listener: TcpListener,
    shared: Arc<Shared>,
) -> io::Result<(Arc<Waker>, JoinHandle<()>)> {
    let poll = Poll::new()?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let handle = std::thread::Builder::new()
        .name("fridge-admin".into())
        .spawn(move || serve(poll, listener, &shared))?;
    Ok((waker, handle))
}

/// One client connection: the request read so far, then the reply being written.
struct Conn {
    stream: TcpStream,
    since: Instant,
    request: Vec<u8>,
    reply: Vec<u8>,
    written: usize,
}

fn serve(mut poll: Poll, listener: TcpListener, shared: &Shared) {
    let mut events = Events::with_capacity(64);
    let mut conns: HashMap<Token, Conn> = HashMap::new();
    let mut next = 2usize;
    loop {
        // Sleep until something happens; with connections open, wake to time them out.
        let timeout = (!conns.is_empty()).then_some(TIMEOUT);
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        for event in events.iter() {
            match event.token() {
                WAKER => {}
                LISTENER => loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            if conns.len() >= MAX_CONNECTIONS {
                                continue; // dropped: closed
                            }
                            let token = Token(next);
                            next += 1;
                            if poll
                                .registry()
                                .register(&mut stream, token, Interest::READABLE)
                                .is_ok()
                            {
                                let conn = Conn {
                                    stream,
                                    since: Instant::now(),
                                    request: Vec::new(),
                                    reply: Vec::new(),
                                    written: 0,
                                };
                                conns.insert(token, conn);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                },
                token => {
                    let done = match conns.get_mut(&token) {
                        Some(c) => step(c, &poll, token, shared),
                        None => false,
                    };
                    if done {
                        if let Some(mut c) = conns.remove(&token) {
                            let _ = poll.registry().deregister(&mut c.stream);
                        }
                    }
                }
            }
        }
        if shared.shutdown.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        conns.retain(|_, c| c.since.elapsed() < TIMEOUT);
    }
}

/// Reads what `c` sent or writes its reply; `true` once the connection is done.
fn step(c: &mut Conn, poll: &Poll, token: Token, shared: &Shared) -> bool {
    if c.reply.is_empty() {
        let mut chunk = [0u8; 2048];
        // Only the bytes that arrived since the last look (and 3 before them, for an end
        // split across reads) are searched: a request trickled a byte at a time costs linear
        // time, not quadratic.
        let searched = c.request.len().saturating_sub(3);
        loop {
            match c.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(n) => c.request.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
            if c.request.len() > MAX_HEAD {
                break;
            }
        }
        let complete = head_end(&c.request[searched..]).is_some();
        if !complete && c.request.len() <= MAX_HEAD {
            return false;
        }
        c.reply = respond(&c.request, shared);
        if poll.registry().reregister(&mut c.stream, token, Interest::WRITABLE).is_err() {
            return true;
        }
    }
    loop {
        match c.stream.write(&c.reply[c.written..]) {
            Ok(0) => return true,
            Ok(n) => {
                c.written += n;
                if c.written == c.reply.len() {
                    return true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// The live dashboard: one page, no external assets, that polls `/stats.json` each second.
const DASHBOARD: &str = include_str!("dashboard.html");

/// The whole HTTP reply to a request head.
pub(crate) fn respond(request: &[u8], shared: &Shared) -> Vec<u8> {
    let Some((method, path)) = request_line(request) else {
        return reply(431, "text/plain", "request header fields too large\n", true);
    };
    let (method, path) = (method.as_str(), path.as_str());
    let body = method == "GET";
    if method != "GET" && method != "HEAD" {
        return reply(405, "text/plain", "method not allowed\n", true);
    }
    match path {
        "/metrics" => {
            let mut text = String::with_capacity(64 << 10);
            crate::stats::write_metrics(&mut text, shared);
            reply(200, "text/plain; version=0.0.4; charset=utf-8", &text, body)
        }
        "/stats.json" => {
            let mut text = String::with_capacity(16 << 10);
            crate::stats::write_json(&mut text, shared);
            reply(200, "application/json", &text, body)
        }
        "/hotkeys" => {
            let mut text = String::with_capacity(4 << 10);
            crate::hotkeys::write_json(&mut text, shared);
            reply(200, "application/json", &text, body)
        }
        "/dashboard" | "/" => reply(200, "text/html; charset=utf-8", DASHBOARD, body),
        "/healthz" => reply(200, "text/plain", "ok\n", body),
        "/readyz" if shared.shutdown.load(std::sync::atomic::Ordering::Relaxed) => {
            reply(503, "text/plain", "shutting down\n", body)
        }
        "/readyz" => reply(200, "text/plain", "ready\n", body),
        _ => reply(
            404,
            "text/plain",
            "not found: the admin port serves /metrics, /stats.json, /hotkeys, /dashboard, \
             /healthz and /readyz\n",
            body,
        ),
    }
}

/// Where a request head ends (its blank line), if it does.
fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The method and the path (without a query) of a complete request head; `None` when the
/// head has not ended. Any bytes parse: a malformed line gives a method and path no route
/// matches.
fn request_line(request: &[u8]) -> Option<(String, String)> {
    let end = head_end(request)?;
    let head = String::from_utf8_lossy(&request[..end]);
    let mut words = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = target.split('?').next().unwrap_or_default();
    Some((method.to_string(), path.to_string()))
}

/// A reply with its status line and headers (`Allow` on a 405, as HTTP asks).
fn reply(status: u16, content_type: &str, body: &str, with_body: bool) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    let mut r = format!(
        "HTTP/1.1 {status} {reason}\r\n{allow}Content-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        r.extend_from_slice(body.as_bytes());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::{head_end, request_line};

    #[test]
    fn request_lines() {
        let line = |r: &[u8]| request_line(r).map(|(m, p)| format!("{m} {p}"));
        assert_eq!(
            line(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n").as_deref(),
            Some("GET /metrics")
        );
        assert_eq!(line(b"HEAD / HTTP/1.0\r\n\r\n").as_deref(), Some("HEAD /"));
        assert_eq!(line(b"GET /metrics HTTP/1.1\r\nHost: a\r\n"), None, "not ended");
        assert_eq!(line(b"\r\n\r\n").as_deref(), Some(" "));
        assert_eq!(head_end(b"ab\r\n\r\n"), Some(2));
    }

    #[test]
    fn random_requests_never_panic() {
        let mut next = crate::types::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let alphabet = b"GET /\r\n?HTTP1.x\xff\x00 ";
        for _ in 0..50_000 {
            let n = (next() % 64) as usize;
            let bytes: Vec<u8> =
                (0..n).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            let _ = request_line(&bytes);
        }
    }
}
