//! Redis protocol, byte for byte (replies checked against redis-server 7.0).

mod common;

use common::{Conn, cmd, config, start, start_with_clock};
use fridge_engine::Clock as _;

fn c(args: &str) -> Vec<u8> {
    let parts: Vec<&[u8]> = args.split(' ').map(str::as_bytes).collect();
    cmd(&parts)
}

#[test]
fn string_commands() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    let cases: &[(&str, &[u8])] = &[
        ("SET k v", b"+OK\r\n"),
        ("GET k", b"$1\r\nv\r\n"),
        ("GET nope", b"$-1\r\n"),
        ("SET k v NX", b"$-1\r\n"),
        ("SET k w XX GET", b"$1\r\nv\r\n"),
        ("SET fresh w NX GET", b"$-1\r\n"),
        ("GET fresh", b"$1\r\nw\r\n"),
        ("SET k v EX 0", b"-ERR invalid expire time in 'set' command\r\n"),
        ("SET k v EX abc", b"-ERR value is not an integer or out of range\r\n"),
        ("SET k v PX 100 EX 100", b"-ERR syntax error\r\n"),
        ("SET k v FOO", b"-ERR syntax error\r\n"),
        ("SET k v EX 100", b"+OK\r\n"),
        ("SET k v2 KEEPTTL", b"+OK\r\n"),
        ("TTL k", b":100\r\n"),
        ("SET n 10", b"+OK\r\n"),
        ("INCR n", b":11\r\n"),
        ("INCRBY n 5", b":16\r\n"),
        ("DECRBY n 3", b":13\r\n"),
        ("DECR n", b":12\r\n"),
        ("INCR k", b"-ERR value is not an integer or out of range\r\n"),
        ("INCRBY n 9223372036854775807", b"-ERR increment or decrement would overflow\r\n"),
        ("DECRBY n -9223372036854775808", b"-ERR decrement would overflow\r\n"),
        ("INCRBYFLOAT f 1.5", b"$3\r\n1.5\r\n"),
        ("INCRBYFLOAT f 0.1", b"$3\r\n1.6\r\n"),
        ("INCRBYFLOAT f abc", b"-ERR value is not a valid float\r\n"),
        ("SETNX k x", b":0\r\n"),
        ("SETNX new x", b":1\r\n"),
        ("SETEX e 100 v", b"+OK\r\n"),
        ("SETEX e 0 v", b"-ERR invalid expire time in 'setex' command\r\n"),
        ("PSETEX e 100000 v", b"+OK\r\n"),
        ("MSET a 1 b 2", b"+OK\r\n"),
        ("MSET a 1 b", b"-ERR wrong number of arguments for 'mset' command\r\n"),
        ("MSETNX a 1 zz 2", b":0\r\n"),
        ("MSETNX zz 1 yy 2", b":1\r\n"),
        ("MGET a b nope", b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"),
        ("MGET no1 a no2 b no3", b"*5\r\n$-1\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n"),
        ("GETSET a 5", b"$1\r\n1\r\n"),
        ("GETSET nope2 5", b"$-1\r\n"),
        ("GETDEL a", b"$1\r\n5\r\n"),
        ("GETDEL a", b"$-1\r\n"),
        ("GETEX b EX 100", b"$1\r\n2\r\n"),
        ("TTL b", b":100\r\n"),
        ("GETEX b PERSIST", b"$1\r\n2\r\n"),
        ("TTL b", b":-1\r\n"),
        ("GETEX b FOO", b"-ERR syntax error\r\n"),
        ("APPEND ap hello", b":5\r\n"),
        ("APPEND ap world", b":10\r\n"),
        ("STRLEN ap", b":10\r\n"),
        ("STRLEN nope", b":0\r\n"),
        ("DEL ap nope b", b":2\r\n"),
        ("UNLINK zz", b":1\r\n"),
        ("EXISTS k k nope", b":2\r\n"),
        ("TYPE k", b"+string\r\n"),
        ("TYPE nope", b"+none\r\n"),
        ("TOUCH k nope", b":1\r\n"),
    ];
    for (req, reply) in cases {
        k.send(&c(req));
        let mut got = vec![0u8; reply.len()];
        std::io::Read::read_exact(&mut k.stream, &mut got).unwrap();
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(reply), "{req}");
    }
}

#[test]
fn expiry_commands() {
    let (server, clock) = start_with_clock(config());
    let mut k = Conn::open(server.local_addr());
    let cases: &[(&str, &[u8])] = &[
        ("SET k v", b"+OK\r\n"),
        ("TTL k", b":-1\r\n"),
        ("TTL nope", b":-2\r\n"),
        ("EXPIRE k 100", b":1\r\n"),
        ("EXPIRE k 100 NX", b":0\r\n"),
        ("EXPIRE k 200 XX", b":1\r\n"),
        ("EXPIRE k 50 GT", b":0\r\n"),
        ("EXPIRE k 50 LT", b":1\r\n"),
        (
            "EXPIRE k 50 NX XX",
            b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
        ),
        ("EXPIRE k 50 GT LT", b"-ERR GT and LT options at the same time are not compatible\r\n"),
        ("EXPIRE k 50 FOO", b"-ERR Unsupported option FOO\r\n"),
        ("EXPIRE k abc", b"-ERR value is not an integer or out of range\r\n"),
        ("TTL k", b":50\r\n"),
        ("PERSIST k", b":1\r\n"),
        ("PERSIST k", b":0\r\n"),
        ("EXPIRE nope 10", b":0\r\n"),
        ("PEXPIRE k 100000", b":1\r\n"),
        ("EXPIREAT k 1", b":1\r\n"),
        ("EXISTS k", b":0\r\n"),
        ("SET p v PX 150", b"+OK\r\n"),
    ];
    for (req, reply) in cases {
        k.roundtrip(&c(req), reply);
    }
    clock.advance(149);
    k.roundtrip(&c("PTTL p"), b":1\r\n");
    clock.advance(2);
    k.roundtrip(&c("GET p"), b"$-1\r\n");
    let far = clock.now_ms() + 100_000;
    k.roundtrip(&c(&format!("SET q v PXAT {far}")), b"+OK\r\n");
    k.roundtrip(&c("PTTL q"), b":100000\r\n");
}

#[test]
fn ttls_read_back_exactly_at_every_magnitude() {
    let (server, clock) = start_with_clock(config());
    let mut k = Conn::open(server.local_addr());
    let now = clock.now_ms();
    let mut secs = 1u64;
    while secs < 1 << 40 {
        for s in [secs, secs + 1, secs * 7 / 5 + 1] {
            let ms = s * 1000 + 123;
            k.roundtrip(&c(&format!("SET k v EX {s}")), b"+OK\r\n")
                .roundtrip(&c("TTL k"), format!(":{s}\r\n").as_bytes())
                .roundtrip(&c("PTTL k"), format!(":{}\r\n", s * 1000).as_bytes())
                .roundtrip(&c(&format!("SET k v PX {ms}")), b"+OK\r\n")
                .roundtrip(&c("PTTL k"), format!(":{ms}\r\n").as_bytes())
                .roundtrip(&c(&format!("SET k v EXAT {}", now / 1000 + s)), b"+OK\r\n")
                .roundtrip(&c("TTL k"), format!(":{s}\r\n").as_bytes())
                .roundtrip(&c(&format!("SET k v PXAT {}", now + ms)), b"+OK\r\n")
                .roundtrip(&c("PTTL k"), format!(":{ms}\r\n").as_bytes())
                .roundtrip(&c(&format!("EXPIRE k {s}")), b":1\r\n")
                .roundtrip(&c("TTL k"), format!(":{s}\r\n").as_bytes())
                .roundtrip(&c(&format!("PEXPIRE k {ms}")), b":1\r\n")
                .roundtrip(&c("PTTL k"), format!(":{ms}\r\n").as_bytes())
                .roundtrip(&c(&format!("GETEX k PX {ms}")), b"$1\r\nv\r\n")
                .roundtrip(&c("PTTL k"), format!(":{ms}\r\n").as_bytes());
        }
        secs *= 10;
    }
}

#[test]
fn keyspace_and_connection_commands() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    k.roundtrip(&c("MSET user:1 a user:2 b other c"), b"+OK\r\n")
        .roundtrip(&c("DBSIZE"), b":3\r\n");
    // KEYS, like Redis's, answers in no particular order.
    k.send(&c("KEYS user:*"));
    assert_eq!(k.line(), "*2");
    let mut keys = [k.line(), k.line(), k.line(), k.line()];
    keys.sort();
    assert_eq!(keys, ["$6", "$6", "user:1", "user:2"]);
    // A full SCAN pass sees every key.
    let mut cursor = "0".to_owned();
    let mut seen = 0;
    loop {
        k.send(&c(&format!("SCAN {cursor} COUNT 2 MATCH user:*")));
        assert_eq!(k.line(), "*2");
        k.line();
        cursor = k.line();
        let n: usize = k.line()[1..].parse().unwrap();
        for _ in 0..n {
            k.line();
            k.line();
        }
        seen += n;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen, 2);
    let cases: &[(&str, &[u8])] = &[
        ("SCAN x", b"-ERR invalid cursor\r\n"),
        ("SCAN 0 COUNT 0", b"-ERR syntax error\r\n"),
        ("FLUSHDB", b"+OK\r\n"),
        ("DBSIZE", b":0\r\n"),
        ("FLUSHALL ASYNC", b"+OK\r\n"),
        ("PING", b"+PONG\r\n"),
        ("PING hi", b"$2\r\nhi\r\n"),
        ("PING a b", b"-ERR wrong number of arguments for 'ping' command\r\n"),
        ("ECHO hi", b"$2\r\nhi\r\n"),
        ("SELECT 0", b"+OK\r\n"),
        ("SELECT 16", b"-ERR DB index is out of range\r\n"),
        ("AUTH pw", b"-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"),
        ("AUTH bob pw", b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
        ("HELLO 4", b"-NOPROTO unsupported protocol version\r\n"),
        ("CLIENT SETNAME my\nname", b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"),
        ("CLIENT GETNAME", b"$-1\r\n"),
        ("CLIENT SETNAME myname", b"+OK\r\n"),
        ("CLIENT GETNAME", b"$6\r\nmyname\r\n"),
        ("CLIENT FOO", b"-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"),
        ("CONFIG GET maxclients", b"*2\r\n$10\r\nmaxclients\r\n$4\r\n1024\r\n"),
        ("CONFIG SET appendonly no", b"+OK\r\n"),
        (
            "CONFIG SET save x",
            b"-ERR CONFIG SET failed (possibly related to argument 'save') - fridge has no \
              persistence\r\n",
        ),
        ("CONFIG SET foo bar", b"-ERR Unknown option or number of arguments for CONFIG SET - 'foo'\r\n"),
        ("COMMAND COUNT", b":210\r\n"),
        ("NOSUCH a b", b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n"),
        ("GET", b"-ERR wrong number of arguments for 'get' command\r\n"),
    ];
    for (req, reply) in cases {
        k.roundtrip(&c(req), reply);
    }
    k.send(&c("CLIENT ID"));
    let id = k.line();
    k.send(&c("CLIENT LIST"));
    let len: usize = k.line()[1..].parse().unwrap();
    let list = String::from_utf8(k.read_n(len + 2)).unwrap();
    assert!(list.contains(&format!("id={}", &id[1..])) && list.contains("name=myname"), "{list}");
    // INFO carries the standard fields.
    k.roundtrip(&c("SET a 1"), b"+OK\r\n").send(&c("INFO"));
    let len: usize = k.line()[1..].parse().unwrap();
    let info = String::from_utf8(k.read_n(len + 2)).unwrap();
    for field in [
        "redis_version:",
        "arch_bits:",
        "cluster_enabled:0",
        "used_memory:",
        "maxmemory:",
        "keyspace_hits:",
        "keyspace_misses:",
        "evicted_keys:",
        "expired_keys:",
        "connected_clients:",
        "db0:keys=1",
    ] {
        assert!(info.contains(field), "INFO lacks {field}:\n{info}");
    }
    k.roundtrip(&c("QUIT"), b"+OK\r\n");
    assert!(k.is_closed());
}

#[test]
fn resp3_after_hello() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    k.send(&c("HELLO 3"));
    assert_eq!(k.line(), "%7");
    for _ in 0..24 {
        k.line();
    }
    assert_eq!(k.line(), "*0");
    k.roundtrip(&c("GET nope"), b"_\r\n")
        .roundtrip(&c("CONFIG GET maxclients"), b"%1\r\n$10\r\nmaxclients\r\n$4\r\n1024\r\n")
        .send(&c("INFO server"));
    assert!(k.line().starts_with('='));
    k.line();
    assert_eq!(k.line(), "redis_version:7.0.0");
    // Back to RESP2.
    let mut rest = Vec::new();
    k.stream.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
    let _ = std::io::Read::read_to_end(&mut k.stream, &mut rest);
    k.stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    k.send(&c("HELLO 2"));
    assert_eq!(k.line(), "*14");
}

/// Protocol errors: exact reply, then the connection is closed (as Redis does); the server
/// stays up. Command errors keep the connection.
#[test]
fn protocol_errors_close_the_connection() {
    let server = start();
    let addr = server.local_addr();
    let cases: &[(&[u8], &[u8])] = &[
        (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\nxyz\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    ];
    for (req, reply) in cases {
        let mut k = Conn::open(addr);
        k.roundtrip(req, reply);
        assert!(k.is_closed(), "{:?}", String::from_utf8_lossy(req));
    }
    // A bulk length larger than the data sent: the server waits (no reply, no crash), and
    // the rest completes the request.
    let mut k = Conn::open(addr);
    k.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc");
    std::thread::sleep(std::time::Duration::from_millis(50));
    k.roundtrip(b"defghij\r\n", b"+OK\r\n").roundtrip(&c("GET k"), b"$10\r\nabcdefghij\r\n");
    // Binary garbage after a RESP start closes only that connection.
    let mut k = Conn::open(addr);
    k.roundtrip(b"*1\r\n\x00\xff\x01\r\n", b"-ERR Protocol error: expected '$', got '\x00'\r\n");
    // An oversized value is refused with an error and the connection stays usable.
    let mut k = Conn::open(addr);
    let big = vec![b'x'; (1 << 20) + 1];
    k.roundtrip(
        &cmd(&[b"SET", b"big", &big]),
        b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
    )
    .roundtrip(&c("PING"), b"+PONG\r\n");
    // The server still serves.
    Conn::open(addr).roundtrip(&c("PING"), b"+PONG\r\n");
}

#[test]
fn pipelined_commands_in_one_write() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..3000 {
        req.extend_from_slice(&c(&format!("SET k{i} {i}")));
        req.extend_from_slice(&c(&format!("GET k{i}")));
        want.extend_from_slice(format!("+OK\r\n${}\r\n{i}\r\n", i.to_string().len()).as_bytes());
    }
    k.send(&req).expect(&want);
}

/// Reads one RESP value whose strings hold no line break.
fn skip_value(k: &mut Conn) {
    let mut pending = 1;
    while pending > 0 {
        let line = k.line();
        pending -= 1;
        let n: i64 = line[1..].parse().unwrap_or(0);
        match line.as_bytes()[0] {
            b'$' if n >= 0 => drop(k.line()),
            b'*' | b'~' => pending += n.max(0),
            b'%' => pending += 2 * n,
            _ => {}
        }
    }
}

/// Every command's arity is the one `COMMAND` reports: one argument too many (or, for a
/// command that takes at least n, one too few) is refused before the command runs.
#[test]
fn arity_comes_from_the_command_table() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    let wrong = |name: &str| format!("-ERR wrong number of arguments for '{name}' command\r\n");
    for (req, name) in [("TIME extra", "time"), ("LASTSAVE x", "lastsave"), ("GET", "get")] {
        k.roundtrip(&c(req), wrong(name).as_bytes());
    }
    k.roundtrip(&c("RESET x"), wrong("reset").as_bytes());
    k.send(&c("COMMAND"));
    let rows: usize = k.line()[1..].parse().unwrap();
    let mut table = Vec::new();
    for _ in 0..rows {
        assert_eq!(k.line(), "*10");
        k.line(); // the name's length
        let name = k.line();
        let arity: i64 = k.line()[1..].parse().unwrap();
        let flags: usize = k.line()[1..].parse().unwrap();
        for _ in 0..flags + 3 {
            k.line(); // flags and key positions
        }
        for _ in 0..4 {
            skip_value(&mut k); // ACL categories, tips, key specifications, subcommands
        }
        table.push((name, arity));
    }
    assert_eq!(table.len(), 210);
    for (name, arity) in table {
        let n = if arity > 0 { arity + 1 } else { -arity - 1 };
        if n == 0 {
            continue; // takes any number of arguments
        }
        let mut req = vec![name.to_uppercase()];
        req.extend((1..n).map(|i| format!("arg{i}")));
        let parts: Vec<&[u8]> = req.iter().map(|p| p.as_bytes()).collect();
        let expected = if name == "exec" {
            // Redis 7.0 ends the transaction and says why (`execCommandAbort`).
            "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' \
             command\r\n"
                .to_string()
        } else {
            wrong(&name)
        };
        k.roundtrip(&cmd(&parts), expected.as_bytes());
    }
}

/// WATCH treats an expiry, a TTL change and a memcached write as changes of the key; reading
/// it or its TTL is not. Time is a manual clock.
#[test]
fn watched_keys_expiry_ttl_and_other_protocols() {
    let (server, clock) = start_with_clock(config());
    let mut k = Conn::open(server.local_addr());
    let mut m = Conn::open(server.local_addr());
    k.roundtrip(&c("SET e v PX 1000"), b"+OK\r\n").roundtrip(&c("WATCH e"), b"+OK\r\n");
    clock.advance(2000);
    k.roundtrip(&c("MULTI"), b"+OK\r\n").roundtrip(&c("GET e"), b"+QUEUED\r\n");
    k.roundtrip(&c("EXEC"), b"*-1\r\n");
    k.roundtrip(&c("SET f v"), b"+OK\r\n").roundtrip(&c("WATCH f"), b"+OK\r\n");
    k.roundtrip(&c("EXPIRE f 100"), b":1\r\n").roundtrip(&c("MULTI"), b"+OK\r\n");
    k.roundtrip(&c("EXEC"), b"*-1\r\n");
    k.roundtrip(&c("SET g v EX 100"), b"+OK\r\n").roundtrip(&c("WATCH g"), b"+OK\r\n");
    k.roundtrip(&c("TTL g"), b":100\r\n").roundtrip(&c("GET g"), b"$1\r\nv\r\n");
    k.roundtrip(&c("MULTI"), b"+OK\r\n").roundtrip(&c("INCR n"), b"+QUEUED\r\n");
    k.roundtrip(&c("EXEC"), b"*1\r\n:1\r\n");
    k.roundtrip(&c("WATCH g"), b"+OK\r\n");
    m.roundtrip(b"set g 0 0 1\r\nw\r\n", b"STORED\r\n");
    k.roundtrip(&c("MULTI"), b"+OK\r\n").roundtrip(&c("EXEC"), b"*-1\r\n");
    // EXEC unwatched: the next transaction runs.
    k.roundtrip(&c("MULTI"), b"+OK\r\n").roundtrip(&c("GET g"), b"+QUEUED\r\n");
    k.roundtrip(&c("EXEC"), b"*1\r\n$1\r\nw\r\n");
}
