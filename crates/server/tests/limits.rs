//! Limits: no command grows a value past the item size limit (`-I`, 1 MiB here), with replies
//! as memcached 1.6.18 (`memcached -I 1m`) and redis-server 7.0.15 (`proto-max-bulk-len
//! 1048576`) give them (`tests/python/test_hostile_append.py` runs the same requests against
//! both side by side); and `--memory-includes-index` keeps the engine within `--memory`.

mod common;

use common::{Conn, cmd, config, start, start_with};

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

/// With `memory_includes_index`, the settings say so, and after a fill of small items the
/// engine's arena plus everything outside it stays within `--memory`.
#[test]
fn memory_includes_index_keeps_the_engine_within_memory() {
    let server = start_with(fridge_server::Config { memory_includes_index: true, ..config() });
    let mut m = Conn::open(server.local_addr());
    m.send(b"stats settings\r\n");
    let mut settings = Vec::new();
    loop {
        let line = m.line();
        if line == "END" {
            break;
        }
        settings.push(line);
    }
    assert!(settings.contains(&"STAT memory_includes_index yes".to_string()), "{settings:?}");
    let mut k = Conn::open(server.local_addr());
    k.roundtrip(
        &cmd(&[b"CONFIG", b"GET", b"memory-includes-index"]),
        b"*2\r\n$21\r\nmemory-includes-index\r\n$3\r\nyes\r\n",
    );
    // 64 MiB: write about twice what fits, pipelined.
    let mut batch = Vec::new();
    for i in 0..1_500_000u32 {
        batch.extend_from_slice(format!("set key:{i:011} 0 0 32 noreply\r\n").as_bytes());
        batch.extend_from_slice(&[b'v'; 32]);
        batch.extend_from_slice(b"\r\n");
        if batch.len() > 1 << 20 {
            m.send(&batch);
            batch.clear();
        }
    }
    m.send(&batch);
    m.roundtrip(b"mn\r\n", b"MN\r\n");
    let s = server.engine().stats();
    assert!(s.evictions > 0, "the cache filled: {s:?}");
    assert!(
        s.arena_bytes + s.overhead_bytes <= s.max_memory,
        "arena {} + outside {} > memory {}",
        s.arena_bytes,
        s.overhead_bytes,
        s.max_memory
    );
}
