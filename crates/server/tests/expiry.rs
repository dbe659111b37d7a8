//! Expiry as clients see it: keys are never gone before their deadline, even when the
//! server's clock ticker is starved of CPU (the real clock, so that test waits for real
//! deadlines); and expired keys stop being counted without any other traffic (a manual clock).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Conn, cmd, config, start, start_with_clock};

/// Wall-clock time in microseconds: the clock the server's deadlines follow.
fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_micros()
}

/// Threads that spin until dropped, to keep every core busy (the clock ticker then gets
/// descheduled, as on a loaded machine).
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..2 * cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One key under watch: its deadline (µs, measured just before its store was sent) and
/// the request that reads it with the reply a miss gives.
struct Watched {
    conn: usize,
    deadline_us: u128,
    get: Vec<u8>,
    miss: &'static [u8],
    gone: bool,
}

/// Reads one reply to a `get`: for RESP a bulk string or nil, for memcached up to `END`
/// (or an `EN` meta miss). Returns whether it was a miss.
fn read_reply(c: &mut Conn, miss: &[u8]) -> bool {
    let line = c.line();
    if format!("{line}\r\n").as_bytes() == miss {
        return true;
    }
    if let Some(len) = line.strip_prefix('$') {
        let len: usize = len.parse().expect("bulk length");
        c.read_n(len + 2);
        return false;
    }
    if line.starts_with("VALUE") {
        c.line(); // data
        assert_eq!(c.line(), "END");
        return false;
    }
    if line.starts_with("VA ") {
        c.line();
        return false;
    }
    panic!("unexpected reply {line:?}");
}

#[test]
fn keys_are_never_gone_before_their_deadline_under_load() {
    let server = start();
    // The first bytes pick a connection's protocol: one connection for each.
    let mut conns = [Conn::open(server.local_addr()), Conn::open(server.local_addr())];
    let _load = Load::start();
    let mut watched = Vec::new();
    // Redis PX 200 (100 keys), then memcached `set` and `ms` with 1-second TTLs (25 each).
    for i in 0..100 {
        let key = format!("px:{i}");
        let deadline_us = now_us() + 200_000;
        conns[0].roundtrip(&cmd(&[b"SET", key.as_bytes(), b"v", b"PX", b"200"]), b"+OK\r\n");
        watched.push(Watched {
            conn: 0,
            deadline_us,
            get: cmd(&[b"GET", key.as_bytes()]),
            miss: b"$-1\r\n",
            gone: false,
        });
    }
    for i in 0..25 {
        let deadline_us = now_us() + 1_000_000;
        conns[1].roundtrip(format!("set mc:{i} 0 1 1\r\nv\r\n").as_bytes(), b"STORED\r\n");
        watched.push(Watched {
            conn: 1,
            deadline_us,
            get: format!("get mc:{i}\r\n").into_bytes(),
            miss: b"END\r\n",
            gone: false,
        });
        let deadline_us = now_us() + 1_000_000;
        conns[1].roundtrip(format!("ms meta:{i} 1 T1\r\nv\r\n").as_bytes(), b"HD\r\n");
        watched.push(Watched {
            conn: 1,
            deadline_us,
            get: format!("mg meta:{i} v\r\n").into_bytes(),
            miss: b"EN\r\n",
            gone: false,
        });
    }
    // Read every key over and over until all are gone. A miss whose reply arrived before the
    // key's deadline means the server dropped it early (the server looked at the key no later
    // than the reply arrived).
    let give_up = now_us() + 5_000_000;
    let mut early = Vec::new();
    while watched.iter().any(|w| !w.gone) && now_us() < give_up {
        for w in watched.iter_mut().filter(|w| !w.gone) {
            let k = &mut conns[w.conn];
            k.send(&w.get);
            let miss = read_reply(k, w.miss);
            let received = now_us();
            if miss {
                w.gone = true;
                if received < w.deadline_us {
                    early.push((
                        String::from_utf8_lossy(&w.get).into_owned(),
                        w.deadline_us - received,
                    ));
                }
            }
        }
    }
    assert!(
        early.is_empty(),
        "{} keys gone before their deadline (key, µs early): {early:?}",
        early.len()
    );
    assert!(watched.iter().all(|w| w.gone), "every key expires in the end");
}

fn stat(c: &mut Conn, name: &str) -> u64 {
    c.send(b"stats\r\n");
    let mut value = None;
    loop {
        let line = c.line();
        if line == "END" {
            break;
        }
        if let Some(v) = line.strip_prefix(&format!("STAT {name} ")) {
            value = Some(v.parse().expect("a number"));
        }
    }
    value.unwrap_or_else(|| panic!("no stat {name}"))
}

fn dbsize(k: &mut Conn) -> u64 {
    k.send(&cmd(&[b"DBSIZE"]));
    k.line()[1..].parse().expect("an integer reply")
}

fn keyspace(k: &mut Conn) -> String {
    k.send(&cmd(&[b"INFO", b"keyspace"]));
    let len: usize = k.line()[1..].parse().expect("bulk length");
    String::from_utf8(k.read_n(len + 2)).expect("text")
}

/// Expired keys leave DBSIZE, INFO keyspace and `curr_items` with no traffic that touches
/// them (only the counters are read). Time is a manual clock moved past every deadline at
/// once; the background thread then sweeps the index within about a second (it wakes at least
/// once a second of real time and looks at the clock). The bound asserted is a liveness bound,
/// not a timing figure.
#[test]
fn expired_keys_stop_being_counted_without_traffic() {
    let (server, clock) = start_with_clock(config());
    let mut k = Conn::open(server.local_addr());
    let mut m = Conn::open(server.local_addr());
    for i in 0..1000 {
        k.roundtrip(&cmd(&[b"SET", format!("r{i}").as_bytes(), b"v", b"PX", b"300"]), b"+OK\r\n");
        m.roundtrip(format!("set m{i} 0 1 1\r\nv\r\n").as_bytes(), b"STORED\r\n");
    }
    k.roundtrip(&cmd(&[b"SET", b"stays", b"v"]), b"+OK\r\n");
    assert_eq!(dbsize(&mut k), 2001);
    assert!(keyspace(&mut k).contains("db0:keys=2001,expires=2000,"), "{}", keyspace(&mut k));
    // Every deadline is at most 1 s after the stores.
    clock.advance(1001);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (size, items) = (dbsize(&mut k), stat(&mut m, "curr_items"));
        if size == 1 && items == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expired keys still counted: DBSIZE {size}, curr_items {items}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(keyspace(&mut k).contains("db0:keys=1,expires=0,"));
    assert_eq!(stat(&mut m, "crawler_reclaimed"), 2000, "the sweep reclaimed them");
    k.roundtrip(&cmd(&[b"GET", b"stays"]), b"$1\r\nv\r\n");
}
