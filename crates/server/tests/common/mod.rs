//! Shared helpers: start a server in-process on an ephemeral port, talk raw bytes to it.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fridge_engine::ManualClock;
use fridge_server::{Config, Server, Size};

/// Where a test's [`ManualClock`] starts: 2023-11-14T22:13:20Z, a plausible present, so
/// absolute Unix times in requests look like real ones.
pub const CLOCK_START_MS: u64 = 1_700_000_000_000;

/// A small server for tests: ephemeral port, 64 MiB, two workers.
pub fn config() -> Config {
    Config { port: 0, memory: Size(64 << 20), workers: 2, ..Config::default() }
}

pub fn start() -> Server {
    start_with(config())
}

pub fn start_with(config: Config) -> Server {
    let server = Server::start(config).expect("server starts");
    wait_ready(server.local_addr());
    server
}

/// A server whose every clock is a [`ManualClock`] starting at [`CLOCK_START_MS`]: time moves
/// only when the test advances it, so expiry is tested without sleeping.
pub fn start_with_clock(config: Config) -> (Server, ManualClock) {
    let clock = ManualClock::new(CLOCK_START_MS);
    let server = Server::start_with_clock(config, Arc::new(clock.clone())).expect("server starts");
    wait_ready(server.local_addr());
    (server, clock)
}

/// Polls until the port answers a memcached `version`.
pub fn wait_ready(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect(addr) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            if s.write_all(b"version\r\n").is_ok() {
                let mut buf = [0u8; 64];
                if matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    return;
                }
            }
        }
        assert!(Instant::now() < deadline, "server at {addr} never became ready");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A raw connection that sends bytes and checks replies byte for byte.
pub struct Conn {
    pub stream: TcpStream,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn { stream }
    }

    pub fn send(&mut self, bytes: &[u8]) -> &mut Self {
        self.stream.write_all(bytes).expect("send");
        self
    }

    /// Reads exactly `want.len()` bytes and compares them.
    pub fn expect(&mut self, want: &[u8]) -> &mut Self {
        let mut got = vec![0u8; want.len()];
        let mut n = 0;
        while n < got.len() {
            match self.stream.read(&mut got[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => panic!(
                    "reading reply: {e}; wanted {:?}, got so far {:?}",
                    String::from_utf8_lossy(want),
                    String::from_utf8_lossy(&got[..n])
                ),
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&got[..n]),
            String::from_utf8_lossy(want),
            "reply differs"
        );
        self
    }

    /// Sends `req` and expects `reply`.
    pub fn roundtrip(&mut self, req: &[u8], reply: &[u8]) -> &mut Self {
        self.send(req).expect(reply)
    }

    /// Reads one CRLF-terminated line (without the CRLF).
    pub fn line(&mut self) -> String {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            match self.stream.read(&mut b) {
                Ok(1) => line.push(b[0]),
                other => {
                    panic!("reading a line: {other:?}, got {:?}", String::from_utf8_lossy(&line))
                }
            }
        }
        line.truncate(line.len() - 2);
        String::from_utf8_lossy(&line).into_owned()
    }

    /// Reads `n` bytes.
    pub fn read_n(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        self.stream.read_exact(&mut buf).expect("read_n");
        buf
    }

    /// Whether the server closed the connection (EOF or reset within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 256];
        loop {
            match self.stream.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue, // drain whatever was still sent
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

/// Encodes a RESP multibulk command.
pub fn cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    fridge_proto::resp::encode_command(&mut out, args);
    out
}
