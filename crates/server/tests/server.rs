//! Whole-server behaviour: limits, fairness for large values, ports, shutdown.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Conn, cmd, config, start, start_with, start_with_clock};
use fridge_server::{Config, Size};

#[test]
fn connection_limit_answers_in_each_protocol() {
    let server = start_with(Config { max_connections: 2, ..config() });
    let addr = server.local_addr();
    // The readiness probe's connection may not be closed yet: retry until accepted.
    let accepted = || {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut c = Conn::open(addr);
            c.send(b"mn\r\n");
            if c.line() == "MN" {
                return c;
            }
            assert!(Instant::now() < deadline, "never accepted");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let a = accepted();
    let _b = accepted();
    let mut over = Conn::open(addr);
    over.roundtrip(b"mn\r\n", b"ERROR Too many open connections\r\n");
    assert!(over.is_closed());
    let mut over = Conn::open(addr);
    over.roundtrip(&cmd(&[b"PING"]), b"-ERR max number of clients reached\r\n");
    assert!(over.is_closed());
    drop(a);
    // Once a slot frees up, new connections are served again.
    accepted();
}

#[test]
fn idle_connections_are_closed() {
    // Idleness is judged on the server's clock, a manual one here: no sleeping through the
    // timeout, and no bound on how late the close may come.
    let (server, clock) = start_with_clock(Config { idle_timeout: 1, ..config() });
    let mut idle = Conn::open(server.local_addr());
    idle.roundtrip(b"mn\r\n", b"MN\r\n");
    clock.advance(900);
    // Several housekeeping ticks pass in real time; at 0.9 s idle the connection stays.
    std::thread::sleep(Duration::from_millis(300));
    idle.roundtrip(b"mn\r\n", b"MN\r\n");
    clock.advance(1001);
    assert!(idle.is_closed());
}

#[test]
fn a_long_reply_streams_to_a_slow_reader_within_the_output_buffer() {
    let server = start_with(Config {
        max_output_buffer: Size(1 << 20),
        max_item_size: Size(512 << 10),
        ..config()
    });
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    let value = vec![b'x'; 500 << 10];
    c.send(format!("set v 0 0 {}\r\n", value.len()).as_bytes()).send(&value).send(b"\r\n");
    c.expect(b"STORED\r\n");
    // One multiget whose reply (5 MB) is five times the output limit, not read for a while:
    // the server writes it as the client reads, never holding it whole.
    let mut slow = Conn::open(addr);
    slow.send(b"get v v v v v v v v v v\r\n");
    std::thread::sleep(Duration::from_millis(200));
    c.roundtrip(b"mn\r\n", b"MN\r\n");
    for _ in 0..10 {
        slow.expect(format!("VALUE v 0 {}\r\n", value.len()).as_bytes());
        assert_eq!(slow.read_n(value.len() + 2)[..value.len()], value[..]);
    }
    slow.expect(b"END\r\n");
    slow.roundtrip(b"mn\r\n", b"MN\r\n");
}

#[test]
fn query_buffer_is_bounded() {
    let server = start_with(Config { max_query_buffer: Size(64 << 10), ..config() });
    let addr = server.local_addr();
    // A RESP request announcing many arguments and sending more bytes than the buffer holds.
    let mut c = Conn::open(addr);
    let mut req = b"*1000000\r\n".to_vec();
    while req.len() < 3 << 20 {
        req.extend_from_slice(b"$1\r\nx\r\n");
    }
    let _ = c.stream.write_all(&req);
    let mut reply = Vec::new();
    let _ = c.stream.read_to_end(&mut reply);
    assert!(
        reply.starts_with(b"-ERR Protocol error: query buffer limit exceeded\r\n"),
        "{reply:?}"
    );
    Conn::open(addr).roundtrip(b"mn\r\n", b"MN\r\n");
}

#[test]
fn large_values_round_trip_in_both_protocols() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let value: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    c.send(format!("set big 3 0 {}\r\n", value.len()).as_bytes()).send(&value).send(b"\r\n");
    c.expect(b"STORED\r\n");
    c.send(b"get big\r\n");
    assert_eq!(c.line(), format!("VALUE big 3 {}", value.len()));
    assert!(c.read_n(value.len()) == value);
    c.expect(b"\r\nEND\r\n");
    let mut r = Conn::open(server.local_addr());
    r.roundtrip(&cmd(&[b"SET", b"big2", &value]), b"+OK\r\n").send(&cmd(&[b"GET", b"big2"]));
    assert_eq!(r.line(), format!("${}", value.len()));
    assert!(r.read_n(value.len()) == value);
}

/// With the smallest write chunk a 1 MB reply goes out in 256 pieces between other
/// connections' turns; the pipelined replies still arrive whole and in order.
#[test]
fn smallest_write_chunk_keeps_replies_whole_and_ordered() {
    let server = start_with(Config { workers: 1, write_chunk: Size(4096), ..config() });
    let mut c = Conn::open(server.local_addr());
    let value: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
    c.send(format!("set big 0 0 {}\r\n", value.len()).as_bytes()).send(&value).send(b"\r\n");
    c.expect(b"STORED\r\n");
    c.send(b"get big\r\nmn\r\nget big\r\nmn\r\n");
    let mut other = Conn::open(server.local_addr());
    for _ in 0..2 {
        other.roundtrip(b"mn\r\n", b"MN\r\n");
        assert_eq!(c.line(), format!("VALUE big 0 {}", value.len()));
        assert!(c.read_n(value.len()) == value);
        c.expect(b"\r\nEND\r\nMN\r\n");
    }
}

/// Several long replies at once with the smallest chunk, so that they wait in the worker's
/// bulk queue together: each connection's replies arrive whole and in order while a small
/// client is answered throughout, and a connection gone in the middle of its reply leaves the
/// others whole and its slot usable.
#[test]
fn long_replies_in_the_bulk_queue_stay_whole_beside_small_requests() {
    let server = start_with(Config { workers: 1, write_chunk: Size(4096), ..config() });
    let addr = server.local_addr();
    let value: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    let mut c = Conn::open(addr);
    c.send(format!("set big 0 0 {}\r\n", value.len()).as_bytes()).send(&value).send(b"\r\n");
    c.expect(b"STORED\r\n");
    let mut quitter = Conn::open(addr);
    quitter.send(b"get big\r\nget big\r\nget big\r\n");
    let readers: Vec<Conn> = (0..3)
        .map(|_| {
            let mut b = Conn::open(addr);
            b.send(b"get big\r\nmn\r\nget big\r\nmn\r\n");
            b
        })
        .collect();
    drop(quitter);
    let threads: Vec<_> = readers
        .into_iter()
        .map(|mut b| {
            let value = value.clone();
            std::thread::spawn(move || {
                for _ in 0..2 {
                    assert_eq!(b.line(), format!("VALUE big 0 {}", value.len()));
                    assert!(b.read_n(value.len()) == value);
                    b.expect(b"\r\nEND\r\nMN\r\n");
                }
            })
        })
        .collect();
    let mut small = Conn::open(addr);
    for _ in 0..100 {
        small.roundtrip(b"mn\r\n", b"MN\r\n");
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut again = Conn::open(addr);
    again.send(b"get big\r\n");
    assert_eq!(again.line(), format!("VALUE big 0 {}", value.len()));
    assert!(again.read_n(value.len()) == value);
    again.expect(b"\r\nEND\r\n");
}

/// While one client pulls 1 MB values as slowly as the socket allows, another client's small
/// requests keep being answered (replies are written in chunks per loop turn).
#[test]
fn large_replies_do_not_hold_up_small_requests() {
    let server = start_with(Config { workers: 1, ..config() });
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    let value = vec![b'v'; 1000 * 1000];
    c.send(format!("set big 0 0 {}\r\n", value.len()).as_bytes()).send(&value).send(b"\r\n");
    c.expect(b"STORED\r\n");
    let mut big = Conn::open(addr);
    let mut req = Vec::new();
    for _ in 0..20 {
        req.extend_from_slice(b"get big\r\n");
    }
    big.send(&req);
    // `big` reads nothing until the small requests are answered: were they queued behind its
    // 20 MB reply (more than the socket buffers hold), they would never be, and the reads
    // would time out. (Their latency is measured by `bench/hostile`.)
    let mut small = Conn::open(addr);
    for _ in 0..200 {
        small.roundtrip(b"mn\r\n", b"MN\r\n");
    }
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    while total < 20 * (value.len() + 28) {
        let n = big.stream.read(&mut buf).unwrap();
        assert!(n > 0);
        total += n;
    }
}

#[test]
fn resp_port_speaks_resp_only_including_inline() {
    let server = start_with(Config { resp_port: Some(0), ..config() });
    let addr = server.resp_addr().unwrap();
    let mut c = Conn::open(addr);
    c.roundtrip(b"PING\r\n", b"+PONG\r\n")
        .roundtrip(b"set k \"a b\"\r\n", b"+OK\r\n")
        .roundtrip(&cmd(&[b"GET", b"k"]), b"$3\r\na b\r\n");
    // The main port serves both (the first byte of a connection decides).
    let mut m = Conn::open(server.local_addr());
    m.roundtrip(b"get k\r\n", b"VALUE k 0 3\r\na b\r\nEND\r\n");
    Conn::open(server.local_addr()).roundtrip(&cmd(&[b"PING"]), b"+PONG\r\n");
}

#[test]
fn main_port_tells_inline_resp_from_memcached_by_the_first_word() {
    let server = start();
    let addr = server.local_addr();
    // A word only RESP's table knows, in any case: inline RESP for the whole connection.
    Conn::open(addr)
        .roundtrip(b"PING\r\n", b"+PONG\r\n")
        .roundtrip(b"SET k v\r\n", b"+OK\r\n")
        .roundtrip(b"GET k\r\n", b"$1\r\nv\r\n");
    Conn::open(addr).roundtrip(b"ping\r\n", b"+PONG\r\n");
    Conn::open(addr).roundtrip(b"setex t 100 w\r\nget t\r\n", b"+OK\r\n$1\r\nw\r\n");
    // Upper case is not memcached's (it reads commands case-sensitively): RESP.
    Conn::open(addr).roundtrip(b"GET k\r\n", b"$1\r\nv\r\n");
    // A word both protocols have, as memcached spells it: memcached.
    Conn::open(addr).roundtrip(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n");
    Conn::open(addr).roundtrip(b"version\r\n", b"VERSION ");
    Conn::open(addr).roundtrip(b"incr nope 1\r\n", b"NOT_FOUND\r\n");
    Conn::open(addr).roundtrip(b"mn\r\n", b"MN\r\n");
    // An HTTP request line: memcached's, which closes the connection.
    let mut h = Conn::open(addr);
    h.send(b"GET / HTTP/1.1\r\n");
    let mut rest = Vec::new();
    let _ = h.stream.read_to_end(&mut rest);
    assert_eq!(rest, b"", "closed without a reply");
    // A word neither knows: memcached, as before.
    Conn::open(addr).roundtrip(b"bogus\r\n", b"ERROR\r\n");
    // The first word split over two reads is waited for.
    let mut c = Conn::open(addr);
    c.send(b"PI");
    std::thread::sleep(std::time::Duration::from_millis(50));
    c.roundtrip(b"NG\r\n", b"+PONG\r\n");
}

#[test]
fn graceful_shutdown_finishes_in_flight_requests() {
    let server = start();
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    c.roundtrip(b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    let mut req = Vec::new();
    for _ in 0..1000 {
        req.extend_from_slice(b"get a\r\n");
    }
    c.send(&req);
    server.shutdown();
    let mut got = Vec::new();
    let _ = c.stream.read_to_end(&mut got);
    assert_eq!(got.len(), 1000 * b"VALUE a 0 1\r\nx\r\nEND\r\n".len());
    assert!(std::net::TcpStream::connect(addr).is_err(), "the port is closed");
}

#[test]
fn config_file_and_validation() {
    let dir = std::env::temp_dir().join(format!("fridge-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fridge.toml");
    std::fs::write(&path, "port = 0\nmemory = \"32MiB\"\nworkers = 1\nmax_key_len = 100\n")
        .unwrap();
    let cli = <fridge_server::Cli as clap::Parser>::try_parse_from([
        "fridge".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
        "-c".as_ref(),
        "7".as_ref(),
    ])
    .unwrap();
    let config = cli.into_config().unwrap();
    assert_eq!(
        (config.memory, config.max_connections, config.max_key_len),
        (Size(32 << 20), 7, 100)
    );
    let server = start_with(config);
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(
        format!("get {}\r\n", "k".repeat(101)).as_bytes(),
        b"CLIENT_ERROR bad command line format\r\n",
    );
    std::fs::write(&path, "bogus_key = 1\n").unwrap();
    let cli = <fridge_server::Cli as clap::Parser>::try_parse_from([
        "fridge".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
    ])
    .unwrap();
    assert!(cli.into_config().unwrap_err().contains("bogus_key"));
    assert!(
        fridge_server::Server::start(Config { memory: Size(1 << 20), ..config_default() }).is_err()
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn config_default() -> Config {
    Config { port: 0, ..Config::default() }
}
