//! A tiny in-test cache server: just enough of the memcached text and meta protocols and RESP
//! (get/set/delete, auth) to drive fridge-bench end to end, parsing with fridge-proto. It can
//! stall before its first reply and corrupt the values it returns, and it keeps every byte it
//! received so tests can inspect the wire.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fridge_proto::memcache::{self, MetaCommand, MetaStatus, Reply, Request};
use fridge_proto::resp::{self, Version};

/// What the server does wrong on purpose.
#[derive(Clone, Copy, Debug, Default)]
pub struct Behavior {
    /// Answer nothing, on any connection, for this long after the first request.
    pub stall_first: Duration,
    /// Flip the last byte of every value it returns.
    pub corrupt: bool,
}

#[derive(Debug, Default)]
struct Shared {
    store: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    received: Mutex<Vec<Vec<u8>>>,
    /// Set by the first reply: no connection answers before this instant.
    stall_until: Mutex<Option<Instant>>,
    auths: AtomicU64,
    stop: AtomicBool,
}

/// A running test server; stops when dropped.
#[derive(Debug)]
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server on an ephemeral loopback port.
    pub fn start(behavior: Behavior) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !s.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = Arc::clone(&s);
                        let id = {
                            let mut r = s.received.lock().unwrap();
                            r.push(Vec::new());
                            r.len() - 1
                        };
                        conns.push(std::thread::spawn(move || serve(stream, &s, behavior, id)));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        Self { addr, shared, accept: Some(accept) }
    }

    /// Bytes received on each connection, in accept order.
    pub fn received(&self) -> Vec<Vec<u8>> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.shared.store.lock().unwrap().len()
    }

    /// Stored keys.
    pub fn keys(&self) -> Vec<Vec<u8>> {
        self.shared.store.lock().unwrap().keys().cloned().collect()
    }

    /// Authentication requests accepted.
    pub fn auths(&self) -> u64 {
        self.shared.auths.load(Ordering::Relaxed)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(mut stream: TcpStream, s: &Shared, behavior: Behavior, id: usize) {
    stream.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut args = resp::Args::new();
    let mut out = Vec::new();
    while !s.stop.load(Ordering::Relaxed) {
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                s.received.lock().unwrap()[id].extend_from_slice(&chunk[..n]);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        let used = if buf.first() == Some(&b'*') {
            answer_resp(&buf, s, behavior, &mut args, &mut out)
        } else {
            answer_memcache(&buf, s, behavior, &mut out)
        };
        buf.drain(..used);
        if !out.is_empty() {
            let until = *s
                .stall_until
                .lock()
                .unwrap()
                .get_or_insert_with(|| Instant::now() + behavior.stall_first);
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            if stream.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn value_out(s: &Shared, key: &[u8], behavior: Behavior) -> Option<Vec<u8>> {
    let mut v = s.store.lock().unwrap().get(key)?.clone();
    if behavior.corrupt {
        if let Some(last) = v.last_mut() {
            *last ^= 0x01;
        }
    }
    Some(v)
}

fn answer_memcache(buf: &[u8], s: &Shared, behavior: Behavior, out: &mut Vec<u8>) -> usize {
    let limits = memcache::Limits::default();
    let mut pos = 0;
    while let Ok((request, used)) = memcache::parse_request(&buf[pos..], &limits) {
        pos += used;
        match request {
            Request::Storage(st) if st.key == b"auth" => {
                s.auths.fetch_add(1, Ordering::Relaxed);
                memcache::write_reply(out, Reply::Stored);
            }
            Request::Storage(st) => {
                s.store.lock().unwrap().insert(st.key.to_vec(), st.data.to_vec());
                memcache::write_reply(out, Reply::Stored);
            }
            Request::Retrieval(r) => {
                for key in r.keys.iter() {
                    if let Some(v) = value_out(s, key, behavior) {
                        memcache::write_value(out, key, 0, &v, None);
                    }
                }
                memcache::write_reply(out, Reply::End);
            }
            Request::Delete { key, .. } => {
                let found = s.store.lock().unwrap().remove(key).is_some();
                memcache::write_reply(out, if found { Reply::Deleted } else { Reply::NotFound });
            }
            Request::Meta(m) => match m.command {
                MetaCommand::Get => match value_out(s, m.key, behavior) {
                    Some(v) => {
                        memcache::write_meta_header(out, MetaStatus::Value, v.len());
                        memcache::write_meta_end(out);
                        memcache::write_data(out, &v);
                    }
                    None => {
                        memcache::write_meta_header(out, MetaStatus::Miss, 0);
                        memcache::write_meta_end(out);
                    }
                },
                MetaCommand::Set => {
                    s.store.lock().unwrap().insert(m.key.to_vec(), m.data.to_vec());
                    memcache::write_meta_header(out, MetaStatus::Header, 0);
                    memcache::write_meta_end(out);
                }
                MetaCommand::Delete => {
                    let found = s.store.lock().unwrap().remove(m.key).is_some();
                    let status = if found { MetaStatus::Header } else { MetaStatus::NotFound };
                    memcache::write_meta_header(out, status, 0);
                    memcache::write_meta_end(out);
                }
                _ => memcache::write_reply(out, Reply::Error),
            },
            _ => memcache::write_reply(out, Reply::Error),
        }
    }
    pos
}

fn answer_resp(
    buf: &[u8],
    s: &Shared,
    behavior: Behavior,
    args: &mut resp::Args,
    out: &mut Vec<u8>,
) -> usize {
    let limits = resp::Limits::default();
    let mut pos = 0;
    while let Ok(used) = resp::parse_command(&buf[pos..], &limits, args) {
        let cmd = args.command(&buf[pos..]);
        if cmd.is(b"get") {
            match value_out(s, cmd.get(1).unwrap_or_default(), behavior) {
                Some(v) => resp::write_bulk(out, &v),
                None => resp::write_null(out, Version::Resp2),
            }
        } else if cmd.is(b"set") {
            let (key, value) = (cmd.get(1).unwrap_or_default(), cmd.get(2).unwrap_or_default());
            s.store.lock().unwrap().insert(key.to_vec(), value.to_vec());
            resp::write_simple(out, b"OK");
        } else if cmd.is(b"del") {
            let found = s.store.lock().unwrap().remove(cmd.get(1).unwrap_or_default()).is_some();
            resp::write_integer(out, i64::from(found));
        } else if cmd.is(b"auth") {
            s.auths.fetch_add(1, Ordering::Relaxed);
            resp::write_simple(out, b"OK");
        } else {
            resp::write_unknown_command(out, &cmd);
        }
        pos += used;
    }
    pos
}
