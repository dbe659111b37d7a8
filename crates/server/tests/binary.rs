//! The memcached binary protocol, black box: raw request packets over TCP, replies compared
//! packet by packet with memcached 1.6.18 (Debian's `memcached`, started by the test) where
//! the two should agree, CAS values aside (each server numbers its own); fridge's deliberate
//! differences, its SASL logins and its limits on their own.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use common::{config, start, start_with};
use fridge_proto::binary::{
    Command, HEADER_LEN, Header, NO_CREATE, Opcode, REQUEST_MAGIC, Request, parse_response,
};
use fridge_server::{Config, PasswordHash, TenantConfig};

/// One response packet, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Packet {
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Packet {
    /// The packet with its CAS reduced to whether it is set, for comparing two servers.
    fn normalized(&self) -> Packet {
        Packet { cas: u64::from(self.cas != 0), ..self.clone() }
    }
}

/// A binary-protocol connection.
struct Bin {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Bin {
    fn open(addr: SocketAddr) -> Bin {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.set_nodelay(true).unwrap();
        Bin { stream, buf: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) -> &mut Self {
        self.stream.write_all(bytes).expect("send");
        self
    }

    /// Reads one response packet.
    fn packet(&mut self) -> Packet {
        loop {
            if let Some(parsed) = parse_response(&self.buf) {
                let (r, n) = parsed.unwrap_or_else(|h| panic!("not a response: {h:?}"));
                let p = Packet {
                    opcode: r.header.opcode,
                    status: r.header.status,
                    opaque: r.header.opaque,
                    cas: r.header.cas,
                    extras: r.extras.to_vec(),
                    key: r.key.to_vec(),
                    value: r.value.to_vec(),
                };
                self.buf.drain(..n);
                return p;
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("closed while a reply was expected; have {:?}", self.buf),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("reading a reply: {e}; have {:?}", self.buf),
            }
        }
    }

    /// Sends `req` and reads `n` packets.
    fn call(&mut self, req: &[u8], n: usize) -> Vec<Packet> {
        self.send(req);
        (0..n).map(|_| self.packet()).collect()
    }

    /// Whether the server closed the connection, with nothing more sent.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 256];
        loop {
            match self.stream.read(&mut b) {
                Ok(0) => return self.buf.is_empty(),
                Ok(n) => self.buf.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

fn encode(opcode: Opcode, cas: u64, command: Command<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    Request { opcode, opaque: 0x0102_0304 ^ opcode as u32, cas, command }.encode(&mut out);
    out
}

fn get(opcode: Opcode, key: &[u8]) -> Vec<u8> {
    encode(opcode, 0, Command::Get { key, exptime: None })
}

fn set(opcode: Opcode, key: &[u8], value: &[u8], flags: u32, cas: u64) -> Vec<u8> {
    encode(opcode, cas, Command::Store { key, flags, exptime: 0, value })
}

fn noop() -> Vec<u8> {
    encode(Opcode::Noop, 0, Command::Noop)
}

fn arith(opcode: Opcode, key: &[u8], delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    encode(opcode, 0, Command::Arithmetic { key, delta, initial, exptime })
}

/// A raw packet with any lengths (for malformed requests).
fn raw(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Header {
        magic: REQUEST_MAGIC,
        opcode,
        key_len: key.len() as u16,
        extras_len: extras.len() as u8,
        body_len: (extras.len() + key.len() + value.len()) as u32,
        opaque: 99,
        ..Header::default()
    }
    .encode(&mut out);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

/// Debian's memcached on a free port, stopped on drop; `None` (with a message) if it is not
/// installed.
struct Memcached {
    child: Child,
    addr: SocketAddr,
}

impl Memcached {
    fn start() -> Option<Memcached> {
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Process::new("memcached")
            .args(["-u", "root", "-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            eprintln!("memcached is not installed: the comparison with memcached is skipped");
            return None;
        };
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "memcached did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Memcached { child, addr })
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `scenario` against fridge and, if it is installed, memcached; the replies must be
/// the same but for CAS values. Returns fridge's.
fn same_as_memcached(scenario: impl Fn(&mut Bin) -> Vec<Packet>) -> Vec<Packet> {
    let server = start();
    let ours = scenario(&mut Bin::open(server.local_addr()));
    if let Some(mc) = Memcached::start() {
        let theirs = scenario(&mut Bin::open(mc.addr));
        assert_eq!(ours.len(), theirs.len());
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a.normalized(), b.normalized(), "reply {i}");
        }
    }
    ours
}

const NOT_FOUND: &[u8] = b"Not found";

fn status(p: &Packet) -> (u16, &[u8]) {
    (p.status, &p.value)
}

#[test]
fn storage_retrieval_and_quiet_commands_match_memcached() {
    let replies = same_as_memcached(|c| {
        let mut r = Vec::new();
        r.extend(c.call(&encode(Opcode::Flush, 0, Command::Flush { exptime: 0 }), 1));
        r.extend(c.call(&set(Opcode::Set, b"k", b"value", 7, 0), 1));
        r.extend(c.call(&get(Opcode::Get, b"k"), 1));
        r.extend(c.call(&get(Opcode::GetK, b"k"), 1));
        r.extend(c.call(&get(Opcode::Get, b"nope"), 1));
        r.extend(c.call(&get(Opcode::GetK, b"nope"), 1));
        // Quiet: a miss is silent, a hit is not; NOOP answers after them.
        let mut batch = get(Opcode::GetQ, b"nope");
        batch.extend(get(Opcode::GetKQ, b"nope"));
        batch.extend(get(Opcode::GetKQ, b"k"));
        batch.extend(set(Opcode::SetQ, b"q", b"quiet", 0, 0));
        batch.extend(set(Opcode::AddQ, b"q", b"again", 0, 0));
        batch.extend(noop());
        r.extend(c.call(&batch, 3));
        r.extend(c.call(&set(Opcode::Add, b"k", b"x", 0, 0), 1));
        r.extend(c.call(&set(Opcode::Add, b"fresh", b"x", 0, 0), 1));
        r.extend(c.call(&set(Opcode::Replace, b"missing", b"x", 0, 0), 1));
        r.extend(c.call(&set(Opcode::Replace, b"fresh", b"y", 3, 0), 1));
        // CAS: the one a GET returned swaps once.
        let cas = c.call(&get(Opcode::Get, b"k"), 1)[0].cas;
        r.extend(c.call(&set(Opcode::Set, b"k", b"new", 0, cas + 1), 1));
        r.extend(c.call(&set(Opcode::Set, b"k", b"new", 0, cas), 1));
        r.extend(c.call(&set(Opcode::Set, b"k", b"newer", 0, cas), 1));
        r.extend(c.call(&set(Opcode::Set, b"absent", b"x", 0, 5), 1));
        r.extend(c.call(&get(Opcode::Get, b"k"), 1));
        // APPEND/PREPEND.
        let concat = |op, key: &'static [u8], value: &'static [u8], cas| {
            encode(op, cas, Command::Concat { key, value })
        };
        r.extend(c.call(&concat(Opcode::Append, b"k", b">", 0), 1));
        r.extend(c.call(&concat(Opcode::Prepend, b"k", b"<", 0), 1));
        r.extend(c.call(&concat(Opcode::Append, b"missing", b"x", 0), 1));
        r.extend(c.call(&concat(Opcode::Append, b"k", b"x", 1), 1));
        let mut batch = concat(Opcode::AppendQ, b"k", b"!", 0);
        batch.extend(concat(Opcode::PrependQ, b"missing", b"!", 0));
        batch.extend(noop());
        r.extend(c.call(&batch, 2));
        r.extend(c.call(&get(Opcode::Get, b"k"), 1));
        // DELETE, with and without a CAS.
        let delete = |op, key: &'static [u8], cas| encode(op, cas, Command::Delete { key });
        r.extend(c.call(&delete(Opcode::Delete, b"k", 1), 1));
        r.extend(c.call(&delete(Opcode::Delete, b"k", 0), 1));
        r.extend(c.call(&delete(Opcode::Delete, b"k", 0), 1));
        let mut batch = delete(Opcode::DeleteQ, b"fresh", 0);
        batch.extend(delete(Opcode::DeleteQ, b"fresh", 0));
        batch.extend(noop());
        r.extend(c.call(&batch, 2));
        r
    });
    assert_eq!(replies[1].status, 0);
    assert_eq!(
        (replies[2].extras.as_slice(), replies[2].value.as_slice()),
        (&[0, 0, 0, 7][..], &b"value"[..])
    );
    assert_eq!(
        (replies[3].key.as_slice(), replies[3].value.as_slice()),
        (&b"k"[..], &b"value"[..])
    );
    assert_eq!(status(&replies[4]), (1, NOT_FOUND));
    assert_eq!(
        (replies[5].status, replies[5].key.as_slice(), replies[5].value.len()),
        (1, &b"nope"[..], 0)
    );
    assert_eq!(status(&replies[7]), (2, &b"Data exists for key."[..]), "the quiet ADD fails aloud");
}

#[test]
fn arithmetic_touch_flush_and_admin_match_memcached() {
    let replies = same_as_memcached(|c| {
        let mut r = Vec::new();
        r.extend(c.call(&encode(Opcode::Flush, 0, Command::Flush { exptime: 0 }), 1));
        r.extend(c.call(&arith(Opcode::Increment, b"n", 1, 10, 0), 1));
        r.extend(c.call(&arith(Opcode::Increment, b"n", 5, 10, 0), 1));
        r.extend(c.call(&arith(Opcode::Decrement, b"n", 100, 10, 0), 1));
        r.extend(c.call(&arith(Opcode::Increment, b"none", 1, 10, NO_CREATE), 1));
        r.extend(c.call(&set(Opcode::Set, b"s", b"text", 0, 0), 1));
        r.extend(c.call(&arith(Opcode::Increment, b"s", 1, 0, 0), 1));
        r.extend(c.call(&set(Opcode::Set, b"max", b"18446744073709551615", 0, 0), 1));
        r.extend(c.call(&arith(Opcode::Increment, b"max", 2, 0, 0), 1));
        let mut batch = arith(Opcode::IncrementQ, b"n", 1, 0, 0);
        batch.extend(arith(Opcode::DecrementQ, b"none", 1, 0, NO_CREATE));
        batch.extend(noop());
        r.extend(c.call(&batch, 2));
        // TOUCH answers the flags; GAT the value too; the quiet forms miss silently.
        r.extend(c.call(&set(Opcode::Set, b"t", b"tv", 9, 0), 1));
        r.extend(c.call(&encode(Opcode::Touch, 0, Command::Touch { key: b"t", exptime: 100 }), 1));
        r.extend(c.call(&encode(Opcode::Touch, 0, Command::Touch { key: b"x", exptime: 100 }), 1));
        let gat = |op, key: &'static [u8]| encode(op, 0, Command::Get { key, exptime: Some(100) });
        r.extend(c.call(&gat(Opcode::Gat, b"t"), 1));
        r.extend(c.call(&gat(Opcode::GatK, b"t"), 1));
        r.extend(c.call(&gat(Opcode::Gat, b"x"), 1));
        r.extend(c.call(&gat(Opcode::GatK, b"x"), 1));
        let mut batch = gat(Opcode::GatQ, b"x");
        batch.extend(gat(Opcode::GatKQ, b"x"));
        batch.extend(gat(Opcode::GatKQ, b"t"));
        batch.extend(noop());
        r.extend(c.call(&batch, 2));
        // A delayed flush leaves the items for now; FLUSHQ is silent.
        r.extend(c.call(&encode(Opcode::Flush, 0, Command::Flush { exptime: 1000 }), 1));
        r.extend(c.call(&get(Opcode::Get, b"t"), 1));
        let mut batch = encode(Opcode::FlushQ, 0, Command::Flush { exptime: 0 });
        batch.extend(get(Opcode::Get, b"t"));
        r.extend(c.call(&batch, 1));
        // STAT of an unknown group; reset answers the terminator alone.
        r.extend(c.call(&encode(Opcode::Stat, 0, Command::Stat { group: b"nonsense" }), 1));
        r.extend(c.call(&encode(Opcode::Stat, 0, Command::Stat { group: b"reset" }), 1));
        // No SASL on a server without logins.
        r.extend(c.call(&encode(Opcode::SaslListMechs, 0, Command::SaslListMechs), 1));
        // QUITQ closes silently.
        c.send(&encode(Opcode::QuitQ, 0, Command::Quit));
        assert!(c.closed());
        r
    });
    let number = |p: &Packet| u64::from_be_bytes(p.value.as_slice().try_into().unwrap());
    assert_eq!([number(&replies[1]), number(&replies[2]), number(&replies[3])], [10, 15, 0]);
    assert_eq!(status(&replies[4]), (1, NOT_FOUND));
    assert_eq!(status(&replies[6]), (6, &b"Non-numeric server-side value for incr or decr"[..]));
    assert_eq!(number(&replies[8]), 1, "INCREMENT wraps at 2^64");
    assert_eq!((replies[12].extras.as_slice(), replies[12].value.len()), (&[0, 0, 0, 9][..], 0));
    let unknown = replies.last().unwrap();
    assert_eq!(status(unknown), (0x81, &b"Unknown command"[..]));
}

#[test]
fn version_quit_and_noop() {
    let server = start();
    let mut c = Bin::open(server.local_addr());
    let v = c.call(&encode(Opcode::Version, 0, Command::Version), 1).remove(0);
    assert_eq!((v.opcode, v.status, v.opaque), (0x0b, 0, 0x0102_0304 ^ 0x0b));
    assert_eq!(v.value, fridge_server::MEMCACHED_VERSION.as_bytes());
    let n = c.call(&noop(), 1).remove(0);
    assert_eq!((n.opcode, n.status, n.value.len(), n.cas), (0x0a, 0, 0, 0));
    let q = c.call(&encode(Opcode::Quit, 0, Command::Quit), 1).remove(0);
    assert_eq!((q.opcode, q.status), (0x07, 0));
    assert!(c.closed());
}

#[test]
fn malformed_packets_close_the_connection_like_memcached() {
    /// A case: what it is, its bytes, and the error reply before the close (none: the
    /// connection closes without answering the bad packet).
    type Case = (&'static str, Vec<u8>, Option<(u16, &'static [u8])>);
    let cases: Vec<Case> = vec![
        ("GET with a value", raw(0x00, b"", b"k", b"v"), Some((4, b"Invalid arguments"))),
        ("GET without a key", raw(0x00, b"", b"", b""), Some((4, b"Invalid arguments"))),
        (
            "SET with 4 bytes of extras",
            raw(0x01, &[0; 4], b"k", b"v"),
            Some((4, b"Invalid arguments")),
        ),
        (
            "FLUSH with 2 bytes of extras",
            raw(0x08, &[0; 2], b"", b""),
            Some((4, b"Invalid arguments")),
        ),
        ("INCREMENT without extras", raw(0x05, b"", b"k", b""), Some((4, b"Invalid arguments"))),
        ("NOOP with a body", raw(0x0a, b"", b"", b"x"), Some((4, b"Invalid arguments"))),
        ("a 251-byte key", raw(0x00, b"", &[b'k'; 251], b""), Some((4, b"Invalid arguments"))),
        (
            "key longer than the body",
            {
                let mut p = raw(0x00, b"", b"abc", b"");
                p[11] = 2;
                p
            },
            Some((0x81, b"Unknown command")),
        ),
        (
            "bad magic after a request",
            {
                let mut p = noop();
                p.extend_from_slice(&[0x81; HEADER_LEN]);
                p
            },
            None,
        ),
    ];
    let mc = Memcached::start();
    let server = start();
    for (what, bytes, reply) in &cases {
        let mut addrs = vec![server.local_addr()];
        addrs.extend(mc.as_ref().map(|m| m.addr));
        for addr in addrs {
            let mut c = Bin::open(addr);
            c.send(bytes);
            let first = c.packet();
            match reply {
                Some((code, body)) => {
                    assert_eq!(status(&first), (*code, *body), "{what} at {addr}")
                }
                None => assert_eq!(first.opcode, 0x0a, "{what}: the NOOP before it is answered"),
            }
            assert!(c.closed(), "{what}: {addr} closes");
        }
    }
}

#[test]
fn an_oversize_value_is_refused_skipped_and_removes_the_old_one() {
    let big = vec![b'x'; (1 << 20) + 10];
    let replies = same_as_memcached(|c| {
        let mut r = c.call(&set(Opcode::Set, b"big", b"old", 0, 0), 1);
        r.extend(c.call(&set(Opcode::Set, b"big", &big, 0, 0), 1));
        r.extend(c.call(&noop(), 1));
        r.extend(c.call(&get(Opcode::Get, b"big"), 1));
        r
    });
    assert_eq!(status(&replies[1]), (3, &b"Too large."[..]));
    assert_eq!(replies[2].opcode, 0x0a, "the value was skipped, not read as requests");
    assert_eq!(status(&replies[3]), (1, NOT_FOUND), "the old value is gone");
}

#[test]
fn fridge_skips_an_unknown_opcode_exactly() {
    // memcached skips the body length again past the key and extras it consumed (and waits
    // for VERBOSITY's missing bytes); fridge answers and goes on with the next request.
    let server = start();
    let mut c = Bin::open(server.local_addr());
    let mut batch = raw(0x1b, &[0, 0, 0, 1], b"", b"");
    batch.extend(raw(0x50, b"", b"key", b"value"));
    batch.extend(noop());
    let r = c.call(&batch, 3);
    assert_eq!((r[0].opcode, r[0].status, r[0].opaque), (0x1b, 0x81, 99));
    assert_eq!(status(&r[1]), (0x81, &b"Unknown command"[..]));
    assert_eq!((r[2].opcode, r[2].status), (0x0a, 0));
}

#[test]
fn requests_split_into_single_bytes_are_answered() {
    let server = start();
    let mut c = Bin::open(server.local_addr());
    let mut batch = set(Opcode::Set, b"split", b"value", 1, 0);
    batch.extend(get(Opcode::GetK, b"split"));
    for b in &batch {
        c.send(std::slice::from_ref(b));
    }
    let r = (0..2).map(|_| c.packet()).collect::<Vec<_>>();
    assert_eq!(r[0].status, 0);
    assert_eq!((r[1].key.as_slice(), r[1].value.as_slice()), (&b"split"[..], &b"value"[..]));
    assert_eq!(r[0].cas, r[1].cas, "SET answers the CAS a GET then sees");
}

#[test]
fn stat_streams_the_text_protocols_groups() {
    let server = start();
    let mut c = Bin::open(server.local_addr());
    c.send(&encode(Opcode::Stat, 0, Command::Stat { group: b"" }));
    let mut names = Vec::new();
    loop {
        let p = c.packet();
        assert_eq!((p.opcode, p.status), (0x10, 0));
        if p.key.is_empty() {
            assert!(p.value.is_empty());
            break;
        }
        names.push(String::from_utf8(p.key).unwrap());
    }
    for name in ["pid", "uptime", "version", "curr_items", "get_hits", "cmd_set"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    c.send(&encode(Opcode::Stat, 0, Command::Stat { group: b"settings" }));
    let first = c.packet();
    assert!(!first.key.is_empty(), "settings has stats");
    while !c.packet().key.is_empty() {}
}

fn tenant(name: &str, password: &str) -> TenantConfig {
    TenantConfig {
        name: name.into(),
        password_sha256: Some(PasswordHash::new(name.as_bytes(), password.as_bytes())),
        ..TenantConfig::default()
    }
}

fn sasl(opcode: Opcode, mechanism: &[u8], data: &[u8]) -> Vec<u8> {
    encode(opcode, 0, Command::SaslAuth { mechanism, data })
}

#[test]
fn sasl_plain_logs_in_as_a_tenant() {
    let config = Config {
        tenants: vec![tenant("default", "root"), tenant("alpha", "apw"), tenant("beta", "bpw")],
        auth_failure_burst: 1000,
        ..config()
    };
    let server = start_with(config);
    let addr = server.local_addr();
    const AUTH_FAILURE: (u16, &[u8]) = (0x20, b"Auth failure.");
    let mut c = Bin::open(addr);
    let mechs = c.call(&encode(Opcode::SaslListMechs, 0, Command::SaslListMechs), 1);
    assert_eq!(status(&mechs[0]), (0, &b"PLAIN"[..]));
    assert_eq!(c.call(&encode(Opcode::Version, 0, Command::Version), 1)[0].status, 0);
    for (mechanism, data) in [
        (&b"PLAIN"[..], &b"\0alpha\0wrong"[..]),
        (b"PLAIN", b"\0nobody\0apw"),
        (b"PLAIN", b"alpha"),
        (b"PLAIN", b"beta\0alpha\0apw"),
        (b"CRAM-MD5", b"\0alpha\0apw"),
    ] {
        let r = c.call(&sasl(Opcode::SaslAuth, mechanism, data), 1);
        assert_eq!(status(&r[0]), AUTH_FAILURE, "{data:?}");
    }
    // PLAIN's data may come in a STEP after an empty AUTH.
    let r = c.call(&sasl(Opcode::SaslAuth, b"PLAIN", b""), 1);
    assert_eq!(status(&r[0]), (0x21, &b""[..]));
    let r = c.call(&sasl(Opcode::SaslStep, b"PLAIN", b"alpha\0alpha\0apw"), 1);
    assert_eq!(status(&r[0]), (0, &b"Authenticated"[..]));
    c.call(&set(Opcode::Set, b"k", b"alpha's", 0, 0), 1);
    // Another tenant does not see alpha's key.
    let mut b = Bin::open(addr);
    let r = b.call(&sasl(Opcode::SaslAuth, b"PLAIN", b"\0beta\0bpw"), 1);
    assert_eq!(status(&r[0]), (0, &b"Authenticated"[..]));
    assert_eq!(status(&b.call(&get(Opcode::Get, b"k"), 1)[0]), (1, NOT_FOUND));
    assert_eq!(c.call(&get(Opcode::Get, b"k"), 1)[0].value, b"alpha's");
    // Before logging in, anything else is refused and the connection closes.
    let mut anon = Bin::open(addr);
    assert_eq!(status(&anon.call(&get(Opcode::Get, b"k"), 1)[0]), AUTH_FAILURE);
    assert!(anon.closed());
}

#[test]
fn sasl_logins_past_the_failure_limit_are_refused() {
    let config = Config {
        tenants: vec![tenant("default", "root"), tenant("alpha", "apw")],
        auth_failure_burst: 2,
        auth_failure_rate: 0.001,
        ..config()
    };
    let server = start_with(config);
    let mut c = Bin::open(server.local_addr());
    for _ in 0..2 {
        let r = c.call(&sasl(Opcode::SaslAuth, b"PLAIN", b"\0alpha\0wrong"), 1);
        assert_eq!(status(&r[0]), (0x20, &b"Auth failure."[..]));
    }
    let r = c.call(&sasl(Opcode::SaslAuth, b"PLAIN", b"\0alpha\0apw"), 1);
    assert_eq!(status(&r[0]), (0x20, &b"Too many failed login attempts."[..]));
}

#[test]
fn expirations_follow_memcached_exptime_rules() {
    let (server, clock) = common::start_with_clock(config());
    let mut c = Bin::open(server.local_addr());
    let now = (common::CLOCK_START_MS / 1000) as u32;
    let store = |key: &'static [u8], exptime| {
        encode(Opcode::Set, 0, Command::Store { key, flags: 0, exptime, value: b"v" })
    };
    c.call(&store(b"rel", 2), 1);
    c.call(&store(b"abs", now + 2), 1);
    c.call(&store(b"past", now - 100), 1);
    // Past 2^31: an absolute time (in 2106), not a negative one.
    c.call(&store(b"far", 0xffff_fff0), 1);
    c.call(&store(b"gat", 0), 1);
    let gat = encode(Opcode::Gat, 0, Command::Get { key: b"gat", exptime: Some(1) });
    assert_eq!(c.call(&gat, 1)[0].value, b"v");
    c.call(&encode(Opcode::Flush, 0, Command::Flush { exptime: 5 }), 1);
    assert_eq!(status(&c.call(&get(Opcode::Get, b"past"), 1)[0]), (1, NOT_FOUND));
    clock.advance(2001);
    for key in [&b"rel"[..], b"abs", b"gat"] {
        assert_eq!(status(&c.call(&get(Opcode::Get, key), 1)[0]), (1, NOT_FOUND), "{key:?}");
    }
    assert_eq!(c.call(&get(Opcode::Get, b"far"), 1)[0].value, b"v");
    // The delayed flush takes effect at its time.
    clock.advance(3000);
    assert_eq!(status(&c.call(&get(Opcode::Get, b"far"), 1)[0]), (1, NOT_FOUND));
    // INCREMENT creates a counter with the given expiration.
    let incr = arith(Opcode::Increment, b"ctr", 1, 7, 1);
    assert_eq!(c.call(&incr, 1)[0].value, 7u64.to_be_bytes());
    clock.advance(1001);
    assert_eq!(status(&c.call(&get(Opcode::Get, b"ctr"), 1)[0]), (1, NOT_FOUND));
}
