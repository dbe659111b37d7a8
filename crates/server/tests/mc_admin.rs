//! memcached's operational commands over TCP: key dumps stream in bounded steps to a slow
//! reader without holding up the worker's other clients, and list every key once the pass
//! is over. (Field names and formats against memcached 1.6.18: tests/python.)

mod common;

use std::collections::HashSet;
use std::io::Read;

use common::{Conn, config, start_with};
use fridge_server::{Config, Size};

/// Stores `n` keys of about 100 bytes in one pipelined write.
fn fill(c: &mut Conn, n: usize) -> Vec<String> {
    let keys: Vec<String> = (0..n).map(|i| format!("{i:0>96}")).collect();
    let mut req = Vec::new();
    for k in &keys {
        req.extend_from_slice(format!("set {k} 0 0 1 noreply\r\nx\r\n").as_bytes());
    }
    c.send(&req).roundtrip(b"mn\r\n", b"MN\r\n");
    keys
}

/// Reads until `end`, returning everything read.
fn read_until(c: &mut Conn, end: &[u8]) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while !all.ends_with(end) {
        let n = c.stream.read(&mut buf).expect("reading the dump");
        assert!(n > 0, "closed after {} bytes", all.len());
        all.extend_from_slice(&buf[..n]);
    }
    all
}

#[test]
fn a_dump_streams_to_a_slow_reader_and_holds_no_one_up() {
    // One worker, so the dump and the small requests share it; an output buffer smaller
    // than the dump, so a dump held whole would close the connection.
    let server = start_with(Config {
        workers: 1,
        max_output_buffer: Size(1 << 20),
        max_item_size: Size(512 << 10),
        ..config()
    });
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    let keys = fill(&mut c, 30_000);
    let mut slow = Conn::open(addr);
    slow.send(b"lru_crawler metadump all\r\n");
    // `slow` reads nothing until the small requests are answered: were they queued behind
    // its 4 MB dump, they would never be, and the reads would time out.
    for _ in 0..200 {
        c.roundtrip(b"mn\r\n", b"MN\r\n");
    }
    let dump = read_until(&mut slow, b"END\r\n");
    let text = String::from_utf8(dump).unwrap();
    let listed: HashSet<&str> =
        text.lines().filter_map(|l| l.strip_prefix("key=")?.split(' ').next()).collect();
    assert_eq!(listed.len(), keys.len());
    assert!(keys.iter().all(|k| listed.contains(k.as_str())));
    slow.roundtrip(b"mn\r\n", b"MN\r\n");
}

#[test]
fn cachedump_and_items_count_every_key() {
    let server = start_with(config());
    let mut c = Conn::open(server.local_addr());
    let keys = fill(&mut c, 5_000);
    c.send(b"stats items\r\n");
    let mut number = 0;
    let mut class = None;
    loop {
        let line = c.line();
        if line == "END" {
            break;
        }
        if let Some(rest) = line.strip_prefix("STAT items:") {
            let (id, field) = rest.split_once(':').unwrap();
            if let Some(n) = field.strip_prefix("number ") {
                number += n.parse::<usize>().unwrap();
                class = Some(id.to_owned());
            }
        }
    }
    assert_eq!(number, keys.len());
    let class = class.expect("one class");
    c.send(format!("stats cachedump {class} 0\r\n").as_bytes());
    let dump = String::from_utf8(read_until(&mut c, b"END\r\n")).unwrap();
    assert_eq!(dump.lines().filter(|l| l.starts_with("ITEM ")).count(), keys.len());
    c.send(format!("stats cachedump {class} 10\r\n").as_bytes());
    let dump = String::from_utf8(read_until(&mut c, b"END\r\n")).unwrap();
    assert_eq!(dump.lines().filter(|l| l.starts_with("ITEM ")).count(), 10, "the limit");
}
