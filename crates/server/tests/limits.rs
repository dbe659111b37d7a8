//! Value limits: no command grows a value past the item size limit (`-I`, 1 MiB here).
//! Replies as memcached 1.6.18 (`memcached -I 1m`) and redis-server 7.0.15
//! (`proto-max-bulk-len 1048576`) give them; `tests/python/test_hostile_append.py` runs the
//! same requests against both side by side.

mod common;

use common::{Conn, cmd, start};

const LIMIT: usize = 1 << 20;

fn mc_set(key: &str, len: usize) -> Vec<u8> {
    let mut req = format!("set {key} 0 0 {len}\r\n").into_bytes();
    req.resize(req.len() + len, b'a');
    req.extend_from_slice(b"\r\n");
    req
}

fn mc_data(line: &str, len: usize) -> Vec<u8> {
    let mut req = format!("{line}\r\n").into_bytes();
    req.resize(req.len() + len, b'b');
    req.extend_from_slice(b"\r\n");
    req
}

#[test]
fn memcached_append_past_the_limit_is_not_stored_and_keeps_the_value() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let start_len = LIMIT - 576;
    c.roundtrip(&mc_set("k", start_len), b"STORED\r\n")
        .roundtrip(&mc_data("append k 0 0 1000", 1000), b"NOT_STORED\r\n")
        .roundtrip(&mc_data("prepend k 0 0 1000", 1000), b"NOT_STORED\r\n")
        .roundtrip(&mc_data("ms k 1000 MA", 1000), b"NS\r\n")
        .roundtrip(&mc_data("ms k 1000 MP", 1000), b"NS\r\n")
        .roundtrip(&mc_data("ms k 1000 MA q", 1000), b"NS\r\n")
        .send(&mc_data("append k 0 0 1000 noreply", 1000))
        .roundtrip(b"mg k s\r\n", format!("HD s{start_len}\r\n").as_bytes());
    // Up to the limit exactly, then one byte more.
    c.roundtrip(&mc_data("append k 0 0 576", 576), b"STORED\r\n")
        .roundtrip(b"mg k s\r\n", format!("HD s{LIMIT}\r\n").as_bytes())
        .roundtrip(&mc_data("append k 0 0 1", 1), b"NOT_STORED\r\n")
        .roundtrip(b"mg k s\r\n", format!("HD s{LIMIT}\r\n").as_bytes())
        .roundtrip(&mc_data("append nope 0 0 1", 1), b"NOT_STORED\r\n");
}

#[test]
fn redis_append_past_the_limit_is_an_error_and_keeps_the_value() {
    const TOO_BIG: &[u8] = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
    let server = start();
    let mut k = Conn::open(server.local_addr());
    let start_len = LIMIT - 576;
    k.roundtrip(&cmd(&[b"SET", b"k", &vec![b'a'; start_len]]), b"+OK\r\n")
        .roundtrip(&cmd(&[b"APPEND", b"k", &[b'b'; 1000]]), TOO_BIG)
        .roundtrip(&cmd(&[b"STRLEN", b"k"]), format!(":{start_len}\r\n").as_bytes())
        .roundtrip(&cmd(&[b"APPEND", b"k", &[b'b'; 576]]), format!(":{LIMIT}\r\n").as_bytes())
        .roundtrip(&cmd(&[b"APPEND", b"k", b"b"]), TOO_BIG)
        .roundtrip(&cmd(&[b"STRLEN", b"k"]), format!(":{LIMIT}\r\n").as_bytes())
        .roundtrip(&cmd(&[b"APPEND", b"new", &vec![b'c'; LIMIT + 1]]), TOO_BIG)
        .roundtrip(&cmd(&[b"EXISTS", b"new"]), b":0\r\n")
        .roundtrip(&cmd(&[b"SET", b"s", &vec![b'a'; LIMIT + 1]]), TOO_BIG);
}
