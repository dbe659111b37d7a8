//! Pub/sub, keyspace notifications and client-side caching as clients see them, on a
//! manual clock: expiry is reached by advancing time, never by sleeping.

mod common;

use common::{Conn, cmd, config, start_with_clock};

fn message(channel: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut m = b"*3\r\n$7\r\nmessage\r\n".to_vec();
    for part in [channel, payload] {
        m.extend_from_slice(format!("${}\r\n", part.len()).as_bytes());
        m.extend_from_slice(part);
        m.extend_from_slice(b"\r\n");
    }
    m
}

#[test]
fn expired_is_published_when_the_sweep_reaps_a_key_without_a_lookup() {
    let (server, clock) = start_with_clock(config());
    let mut admin = Conn::open(server.local_addr());
    admin.roundtrip(&cmd(&[b"CONFIG", b"SET", b"notify-keyspace-events", b"Ex"]), b"+OK\r\n");
    let mut sub = Conn::open(server.local_addr());
    sub.roundtrip(
        &cmd(&[b"SUBSCRIBE", b"__keyevent@0__:expired"]),
        b"*3\r\n$9\r\nsubscribe\r\n$22\r\n__keyevent@0__:expired\r\n:1\r\n",
    );
    admin.roundtrip(&cmd(&[b"SET", b"soon", b"v", b"PX", b"500"]), b"+OK\r\n");
    admin.roundtrip(&cmd(&[b"SET", b"later", b"v", b"EX", b"100"]), b"+OK\r\n");
    clock.advance(501);
    // The background sweep reaps it; a worker publishes it at its next turn.
    sub.expect(&message(b"__keyevent@0__:expired", b"soon"));
}

#[test]
fn an_expired_key_invalidates_its_readers_on_the_manual_clock() {
    let (server, clock) = start_with_clock(config());
    let mut writer = Conn::open(server.local_addr());
    let mut r3 = Conn::open(server.local_addr());
    r3.send(&cmd(&[b"HELLO", b"3"]));
    while r3.line() != "*0" {} // the map ends with `modules`, an empty array
    r3.roundtrip(&cmd(&[b"CLIENT", b"TRACKING", b"ON"]), b"+OK\r\n");
    writer.roundtrip(&cmd(&[b"SET", b"k", b"v", b"PX", b"100"]), b"+OK\r\n");
    r3.roundtrip(&cmd(&[b"GET", b"k"]), b"$1\r\nv\r\n");
    clock.advance(101);
    writer.roundtrip(&cmd(&[b"GET", b"k"]), b"$-1\r\n");
    r3.expect(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
}

/// Reads one RESP array of bulk strings (a pub/sub message) from `k`: its parts.
fn read_message(k: &mut Conn) -> Vec<Vec<u8>> {
    let head = k.line();
    let n: usize = head[1..].parse().expect("an array");
    (0..n)
        .map(|_| {
            let len: usize = k.line()[1..].parse().expect("a bulk string");
            let part = k.read_n(len + 2);
            part[..len].to_vec()
        })
        .collect()
}

#[test]
fn concurrent_publishers_reach_every_subscriber_in_each_publishers_order() {
    let (server, _clock) = start_with_clock(config());
    let addr = server.local_addr();
    const PUBLISHERS: usize = 4;
    const MESSAGES: usize = 300;
    let mut subscribers: Vec<Conn> = (0..4)
        .map(|_| {
            let mut k = Conn::open(addr);
            k.roundtrip(
                &cmd(&[b"SUBSCRIBE", b"feed"]),
                b"*3\r\n$9\r\nsubscribe\r\n$4\r\nfeed\r\n:1\r\n",
            );
            k
        })
        .collect();
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            std::thread::spawn(move || {
                let mut k = Conn::open(addr);
                for i in 0..MESSAGES {
                    let payload = format!("{p}:{i}");
                    k.roundtrip(&cmd(&[b"PUBLISH", b"feed", payload.as_bytes()]), b":4\r\n");
                }
            })
        })
        .collect();
    for p in publishers {
        p.join().expect("publisher");
    }
    for k in &mut subscribers {
        let mut next = [0usize; PUBLISHERS];
        for _ in 0..PUBLISHERS * MESSAGES {
            let parts = read_message(k);
            assert_eq!((&parts[0][..], &parts[1][..]), (&b"message"[..], &b"feed"[..]));
            let text = String::from_utf8(parts[2].clone()).expect("utf-8");
            let (p, i) = text.split_once(':').expect("p:i");
            let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
            assert_eq!(i, next[p], "publisher {p}'s messages arrive once each, in order");
            next[p] += 1;
        }
    }
}
