//! The meta protocol's stale-while-revalidate machinery (memcached `doc/protocol.txt` "Meta
//! Get"/"Meta Set"/"Meta Delete", `doc/new_lru.txt`): replies compared with Debian's memcached
//! 1.6.18 in the same run where it is installed, the stampede with many concurrent clients,
//! and `h`/`l` on a manual clock.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{Conn, config, start, start_with, start_with_clock};

const MEMCACHED: &str = "/usr/bin/memcached";

/// A memcached child process, killed on drop.
struct Memcached {
    child: Child,
    addr: SocketAddr,
}

impl Memcached {
    /// Starts the real memcached on a free port, or `None` where it is not installed.
    fn start() -> Option<Memcached> {
        if !std::path::Path::new(MEMCACHED).exists() {
            eprintln!("{MEMCACHED} is not installed: the side-by-side comparison is skipped");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Command::new(MEMCACHED)
            .args(["-u", "root", "-l", "127.0.0.1", "-U", "0", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "memcached never listened on {addr}");
            std::thread::sleep(Duration::from_millis(10));
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

/// Sends `req` followed by `mn`, and returns everything answered before the `MN`.
fn exchange(s: &mut TcpStream, req: &[u8]) -> String {
    s.write_all(req).unwrap();
    s.write_all(b"mn\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"MN\r\n") {
        let n = s.read(&mut buf).expect("reply");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(req));
        got.extend_from_slice(&buf[..n]);
    }
    got.truncate(got.len() - 4);
    String::from_utf8_lossy(&got).into_owned()
}

/// CAS values, TTLs and idle times differ between servers by their counters and clocks; the
/// rest of a reply must match byte for byte.
fn normalize(reply: &str) -> String {
    reply
        .split("\r\n")
        .map(|line| {
            // `gets`: VALUE <key> <flags> <bytes> <cas>
            if line.starts_with("VALUE ") && line.split(' ').count() == 5 {
                return line.rsplit_once(' ').map_or(line.to_owned(), |(head, _)| head.to_owned())
                    + " #";
            }
            line.split(' ')
                .map(|w| match w.as_bytes() {
                    [b'c' | b't' | b'l', rest @ ..]
                        if !rest.is_empty() && rest.iter().all(u8::is_ascii_digit) =>
                    {
                        format!("{}#", &w[..1])
                    }
                    _ if w.starts_with("la=") => "la=#".to_owned(),
                    _ if w.starts_with("cas=") => "cas=#".to_owned(),
                    _ => w.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// Requests whose replies both servers must agree on, in order, on fresh servers.
const SCRIPT: &[&[u8]] = &[
    // Enough stores that every item's CAS is above 1 on both servers.
    b"ms a 1\r\na\r\nms b 1\r\nb\r\nms c 1\r\nc\r\n",
    // Vivify on miss: the first client wins, the item is empty, later clients see Z.
    b"mg miss N30 q\r\n",
    b"mg miss v c t s f h l\r\n",
    b"mg miss2 N30 v\r\nmg miss2 N30 v\r\n",
    b"mg miss3 N30 s v c q k O7\r\nmg miss3 v h\r\n",
    b"ms miss2 3 T60\r\nabc\r\nmg miss2 v\r\n",
    // Recache: a TTL under the R token wins once.
    b"ms k 1 T100\r\nx\r\nmg k R30 v t\r\nmg k R200 v t\r\nmg k R200 v t\r\n",
    b"ms forever 1\r\nx\r\nmg forever R200 v\r\n",
    // Invalidation: stale, token cleared, next reader wins, the rest see Z X.
    b"ms s 1 T100 c\r\nx\r\nmd s I T30\r\nmg s v c t\r\nmg s v c t\r\nmg s v c t h\r\n",
    b"get s\r\n",
    // ms I: an older CAS stores as stale keeping the TTL; a newer one is refused.
    b"ms st 1 T0\r\nA\r\nmd st I\r\nmg st c\r\n",
    b"ms st 1 I C1\r\nB\r\nmg st v t\r\n",
    b"ms st 1 I C999999999\r\nB\r\nmg st v\r\n",
    b"ms st2 1 T100\r\nA\r\nmd st2 I T30 q\r\nms st2 1 I\r\nZ\r\nmg st2 v\r\n",
    // md: quiet, missing, with I on a missing key, CAS mismatch with I.
    b"md nope I\r\nmd nope q\r\nmd a q\r\nmd a q\r\n",
    b"md b C1 I q\r\nmd b C1\r\n",
    // Hit-before, on first and later fetches.
    b"ms h 1\r\nx\r\nmg h h\r\nmg h h\r\nmg h h v\r\n",
    // Bad tokens.
    b"mg k3 Nabc\r\nmg k3 Rabc\r\nmg k3 Tabc\r\nms k4 1 Cabc\r\nx\r\nms k4 1 Tabc\r\nx\r\n",
    b"ms k4 1 Fabc\r\nx\r\nmg k4 L P O1\r\nmg k4 I\r\nmg k4 C5 F5\r\n",
    b"ms k4 1 v h N30\r\nx\r\nmd k4 v\r\nmd k4 T5\r\nma k4 v\r\n",
    // Modes, numeric tokens, opaque and flag-count limits.
    b"ms k5 1 MZ\r\nx\r\nma k5 MZ\r\nma k5 Dabc\r\nma k5 Jabc\r\nma k5 Nabc\r\n",
    b"mg k5 Oaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nmg k5 v v\r\nmg k5 zz\r\nmd k5 zz\r\n",
    b"mg k5 a b c d e f g h i j k l m n o p q r s t\r\nms k5 abc\r\nms k5\r\nmg\r\n",
    b"ma k5 N0 J7 v t c\r\nma k5 MD D3 v\r\nma k5 M- D100 v\r\nma k5 q\r\nma k5 v\r\n",
    b"ms k6 2 MA\r\nzz\r\nms k6 2 ME c\r\nzz\r\nms k6 2 ME\r\nyy\r\nms k6 1 MP\r\na\r\n",
    b"ms k6 1 MR T0 F3\r\nb\r\nmg k6 v f t k s\r\nmg a3Y= b k v\r\nms k6 1 S1\r\nc\r\n",
    b"mg k6 T-1 v\r\nmg k6 v\r\nms k7 1 T-1\r\nx\r\nmg k7 v\r\n",
    // Flags act in order: `t` before `T` reports the TTL before the touch.
    b"ms k8 1 T100\r\nx\r\nmg k8 v t T0\r\nmg k8 t T50 t\r\n",
    // Append with a compare CAS; a vivifying increment answers even under `q`.
    b"ms ap 1\r\nx\r\nms ap 1 MA C1\r\ny\r\nms nope 1 MA C1\r\ny\r\nmg ap v\r\n",
    b"ma n N0 J10 q\r\nma n q\r\nma n v q\r\nma n v\r\n",
    // An increment in place keeps the item's state; one that changes the length does not.
    b"ms n1 1\r\n1\r\nmd n1 I\r\nma n1 v\r\nmg n1 v\r\n",
    b"ms n2 1\r\n9\r\nmd n2 I\r\nma n2 v\r\nmg n2 v\r\n",
    // A decrement that shortens the number rewrites it in place, space-padded. (No read of
    // the item just before: memcached makes a new item instead while a reply still holds it,
    // which depends on its timing.)
    b"ms n3 2\r\n10\r\n",
    b"ma n3 v MD\r\n",
    b"decr n3 5\r\n",
    b"get n3\r\n",
    // `u` and `me` read without counting an access.
    b"ms uu 1\r\nx\r\nmg uu u h\r\nmg uu u h\r\nmg uu h\r\nmg uu h\r\n",
    b"ms uv 1\r\nx\r\nme uv\r\nmg uv h\r\nme uv\r\nms uw 1 T100\r\nx\r\nmg uw u R200 v\r\n",
    b"ms uf 3 F5\r\nabc\r\nme uf\r\nma n3 v h c\r\nma n3 v t c\r\n",
    // `k` echoes the key as the item was stored: base64 only if it was sent so.
    b"mg Yg== b N30 k v c\r\nmg Yg== b v k\r\nmg Yw== b N30 k v\r\nmg Yw== b k v\r\n",
    b"ms ZA== 1 b\r\nd\r\nmg d k\r\nmg ZA== b k\r\nmd ZA== b k\r\nmg c k v\r\n",
];

#[test]
fn replies_match_memcached() {
    let Some(memcached) = Memcached::start() else { return };
    let server = start();
    let mut ours = TcpStream::connect(server.local_addr()).unwrap();
    let mut theirs = TcpStream::connect(memcached.addr).unwrap();
    for s in [&ours, &theirs] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_nodelay(true).unwrap();
    }
    for req in SCRIPT {
        let (a, b) = (exchange(&mut ours, req), exchange(&mut theirs, req));
        assert_eq!(
            normalize(&a),
            normalize(&b),
            "request {:?}\nfridge:    {a:?}\nmemcached: {b:?}",
            String::from_utf8_lossy(req)
        );
    }
}

/// A deterministic mix of meta and text commands over a few keys, with the flags that drive
/// the stale-while-revalidate machinery in random combinations and orders.
fn random_script(seed: u64, len: usize) -> Vec<Vec<u8>> {
    let mut x = seed;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let pick = |next: &mut dyn FnMut(usize) -> usize, from: &[&str], most: usize| {
        let mut chosen: Vec<&str> = Vec::new();
        for _ in 0..next(most + 1) {
            let f = from[next(from.len())];
            // One flag of a letter per request (memcached refuses duplicates).
            if !chosen.iter().any(|c| c.as_bytes()[0] == f.as_bytes()[0]) {
                chosen.push(f);
            }
        }
        chosen.iter().map(|f| format!(" {f}")).collect::<String>()
    };
    const MG: &[&str] = &[
        "v", "c", "f", "h", "s", "t", "k", "q", "O9", "T30", "N30", "R30", "R5", "u", "I", "T-1",
        "N0", "l", "T0", "R100",
    ];
    const MD: &[&str] = &["q", "I", "T30", "C1", "k", "O1", "T0"];
    const MS: &[&str] = &["q", "I", "C1", "C99999", "T10", "F3", "c", "k", "MS", "ME", "MA", "O4"];
    let mut script = Vec::new();
    for _ in 0..len {
        let key = ["k1", "k2", "k3", "k4"][next(4)];
        // No `ma` or `incr`: whether memcached rewrites a number in place (keeping the item's
        // state) depends on whether a reply still holds the item, which is timing (the fixed
        // script covers them).
        let req = match next(9) {
            0..=3 => format!("mg {key}{}\r\n", pick(&mut next, MG, 6)),
            4 => format!("md {key}{}\r\n", pick(&mut next, MD, 3)),
            5 | 6 => format!("ms {key} 1{}\r\n{}\r\n", pick(&mut next, MS, 4), next(10)),
            _ => {
                let text = ["touch {} 50", "gat 40 {}", "get {}", "delete {}", "gets {}"];
                format!("{}\r\n", text[next(text.len())].replace("{}", key))
            }
        };
        script.push(req.into_bytes());
    }
    script
}

#[test]
fn random_meta_sequences_match_memcached() {
    let Some(memcached) = Memcached::start() else { return };
    let server = start();
    let mut ours = TcpStream::connect(server.local_addr()).unwrap();
    let mut theirs = TcpStream::connect(memcached.addr).unwrap();
    for s in [&ours, &theirs] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_nodelay(true).unwrap();
    }
    for seed in [7, 8, 9] {
        exchange(&mut ours, b"flush_all\r\n");
        exchange(&mut theirs, b"flush_all\r\n");
        for req in random_script(seed, 400) {
            let (a, b) = (exchange(&mut ours, &req), exchange(&mut theirs, &req));
            assert_eq!(
                normalize(&a),
                normalize(&b),
                "seed {seed}, request {:?}\nfridge:    {a:?}\nmemcached: {b:?}",
                String::from_utf8_lossy(&req)
            );
        }
    }
}

/// Many clients ask for the same key at once; counts the `W` and `Z` answers.
fn stampede(addr: SocketAddr, req: &'static [u8], clients: usize) -> (usize, usize) {
    let barrier = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                barrier.wait();
                let reply = exchange(&mut s, req);
                let first = reply.lines().next().unwrap_or_default().to_owned();
                let flags: Vec<&str> = first.split(' ').collect();
                (flags.contains(&"W"), flags.contains(&"Z"))
            })
        })
        .collect();
    let results: Vec<(bool, bool)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    (results.iter().filter(|r| r.0).count(), results.iter().filter(|r| r.1).count())
}

#[test]
fn a_stampede_has_exactly_one_winner() {
    let server = start_with(config());
    let addr = server.local_addr();
    const CLIENTS: usize = 32;
    for round in 0..5 {
        // A missing key: one client vivifies it and wins; everyone else is told Z.
        let (won, waiting) = stampede(addr, b"mg hot N30 v c\r\n", CLIENTS);
        assert_eq!((won, waiting), (1, CLIENTS - 1), "round {round}, missing key");
        // The winner recaches; an invalidation makes it stale: again exactly one wins.
        let mut c = Conn::open(addr);
        c.roundtrip(b"ms hot 5 T100\r\nfresh\r\n", b"HD\r\n").roundtrip(b"md hot I\r\n", b"HD\r\n");
        let (won, waiting) = stampede(addr, b"mg hot v\r\n", CLIENTS);
        assert_eq!((won, waiting), (1, CLIENTS - 1), "round {round}, stale key");
        // A TTL under the recache threshold: one wins.
        c.roundtrip(b"ms hot 5 T10\r\nfresh\r\n", b"HD\r\n");
        let (won, waiting) = stampede(addr, b"mg hot R30 v\r\n", CLIENTS);
        assert_eq!((won, waiting), (1, CLIENTS - 1), "round {round}, recache");
        c.roundtrip(b"md hot\r\n", b"HD\r\n");
    }
}

#[test]
fn hit_before_and_last_access_are_real() {
    let (server, clock) = start_with_clock(config());
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"ms k 1\r\nx\r\n", b"HD\r\n").roundtrip(b"mg k h l\r\n", b"HD h0 l0\r\n");
    clock.advance(5_000);
    c.roundtrip(b"mg k h l\r\n", b"HD h1 l5\r\n").roundtrip(b"mg k h l\r\n", b"HD h1 l0\r\n");
    clock.advance(70_000);
    c.roundtrip(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n")
        .roundtrip(b"mg k l\r\n", b"HD l0\r\n");
    clock.advance(3_000);
    c.roundtrip(b"me k\r\n", b"ME k exp=-1 la=3 cas=1 fetch=yes cls=1 size=61\r\n");
    // A TTL change keeps the item's state; a new value starts unfetched.
    c.roundtrip(b"mg k T100 h\r\n", b"HD h1\r\n").roundtrip(b"mg k h\r\n", b"HD h1\r\n");
    c.roundtrip(b"ms k 1\r\ny\r\n", b"HD\r\n").roundtrip(b"mg k h\r\n", b"HD h0\r\n");
}

#[test]
fn explicit_cas_and_dropping_the_value() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"ms k 1 E12345 c\r\nx\r\n", b"HD c12345\r\n")
        .roundtrip(b"mg k c v\r\n", b"VA 1 c12345\r\nx\r\n")
        .roundtrip(b"ms k 1 C12345 E777 c\r\ny\r\n", b"HD c777\r\n")
        .roundtrip(b"md k I E900\r\n", b"HD\r\n")
        .roundtrip(b"mg k c v\r\n", b"VA 1 c900 X W\r\ny\r\n")
        .roundtrip(b"ms k 1 F9 T100\r\nz\r\n", b"HD\r\n")
        .roundtrip(b"md k x\r\n", b"HD\r\n")
        .roundtrip(b"mg k v f\r\n", b"VA 0 f9\r\n\r\n")
        .roundtrip(b"mg new N30 E4242 c\r\n", b"HD c4242 W\r\n")
        .roundtrip(b"md k x C1\r\n", b"EX\r\n")
        .roundtrip(b"md nope x\r\n", b"NF\r\n")
        .roundtrip(b"ma n N0 J5 E555 c v\r\n", b"VA 1 c555\r\n5\r\n")
        .roundtrip(b"ma n E600 c v\r\n", b"VA 1 c600\r\n6\r\n")
        .roundtrip(b"ma n v\r\n", b"VA 1\r\n7\r\n");
    // CAS values are 56 bits: the largest is kept whole, one more is a bad token.
    c.roundtrip(b"ms k 1 E72057594037927935 c\r\nx\r\n", b"HD c72057594037927935\r\n")
        .roundtrip(b"mg k c\r\n", b"HD c72057594037927935\r\n")
        .roundtrip(
            b"ms k 1 E72057594037927936\r\nx\r\n",
            b"CLIENT_ERROR bad token in command line format\r\n",
        )
        .roundtrip(b"md k E72057594037927936\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n")
        .roundtrip(b"mg k c v\r\n", b"VA 1 c72057594037927935\r\nx\r\n");
}
