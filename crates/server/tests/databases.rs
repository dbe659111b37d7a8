//! Redis databases, byte for byte (errors checked against redis-server 7.0.15): SELECT,
//! MOVE, SWAPDB, FLUSHDB/FLUSHALL, DBSIZE, COPY … DB, INFO keyspace, CLIENT LIST's `db`,
//! RESET, transactions, WATCH and keyspace notifications, and memcached staying in db 0.

mod common;

use common::{Conn, cmd, config, start, start_with, start_with_clock};

fn c(args: &str) -> Vec<u8> {
    let parts: Vec<&[u8]> = args.split(' ').map(str::as_bytes).collect();
    cmd(&parts)
}

fn bulk(k: &mut Conn) -> String {
    let header = k.line();
    let len: usize = header[1..].parse().unwrap_or_else(|_| panic!("not a bulk: {header}"));
    let body = k.read_n(len + 2);
    String::from_utf8(body[..len].to_vec()).unwrap()
}

fn run(k: &mut Conn, cases: &[(&str, &[u8])]) {
    for (req, reply) in cases {
        k.send(&c(req));
        let got = k.read_n(reply.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(reply), "{req}");
    }
}

const OUT_OF_RANGE: &[u8] = b"-ERR DB index is out of range\r\n";
const NOT_INTEGER: &[u8] = b"-ERR value is not an integer or out of range\r\n";
const NOT_INT: &[u8] =
    b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n";
const SAME: &[u8] = b"-ERR source and destination objects are the same\r\n";

/// Pipelined GETs are loaded ahead in the client's database (`look_ahead` in the server's request loop); the
/// replies come from it, and a memcached client on the same worker still reads database 0.
#[test]
fn pipelined_gets_read_the_clients_database() {
    let mut config = config();
    config.workers = 1;
    let server = start_with(config);
    let mut k = Conn::open(server.local_addr());
    let setup: [(&str, &[u8]); 4] = [
        ("SET a zero", b"+OK\r\n"),
        ("SELECT 3", b"+OK\r\n"),
        ("SET a three", b"+OK\r\n"),
        ("SET b bee", b"+OK\r\n"),
    ];
    run(&mut k, &setup);
    let (mut req, mut want) = (Vec::new(), Vec::new());
    for _ in 0..8 {
        for key in ["a", "b", "none"] {
            req.extend_from_slice(&c(&format!("GET {key}")));
        }
        want.extend_from_slice(b"$5\r\nthree\r\n$3\r\nbee\r\n$-1\r\n");
    }
    k.send(&req).expect(&want);
    let mut m = Conn::open(server.local_addr());
    m.send(b"get a\r\nget a\r\nget b\r\n")
        .expect(b"VALUE a 0 4\r\nzero\r\nEND\r\nVALUE a 0 4\r\nzero\r\nEND\r\nEND\r\n");
}

#[test]
fn databases_hold_their_own_keys() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    run(
        &mut k,
        &[
            ("SELECT 16", OUT_OF_RANGE),
            ("SELECT -1", OUT_OF_RANGE),
            ("SELECT x", NOT_INTEGER),
            ("SELECT 99999999999", NOT_INT),
            ("SET k zero", b"+OK\r\n"),
            ("SELECT 15", b"+OK\r\n"),
            ("GET k", b"$-1\r\n"),
            ("SET k fifteen", b"+OK\r\n"),
            ("SET other x", b"+OK\r\n"),
            ("DBSIZE", b":2\r\n"),
            ("KEYS *", b"*2\r\n"),
        ],
    );
    let mut keys = [k.line(), k.line(), k.line(), k.line()];
    keys.sort();
    assert_eq!(keys, ["$1", "$5", "k", "other"]);
    k.send(&c("RANDOMKEY"));
    assert!(["k", "other"].contains(&bulk(&mut k).as_str()));
    run(
        &mut k,
        &[
            ("SELECT 0", b"+OK\r\n"),
            ("GET k", b"$4\r\nzero\r\n"),
            ("EXISTS other", b":0\r\n"),
            ("DBSIZE", b":1\r\n"),
            ("KEYS *", b"*1\r\n$1\r\nk\r\n"),
            ("RANDOMKEY", b"$1\r\nk\r\n"),
            ("SELECT 3", b"+OK\r\n"),
            ("RANDOMKEY", b"$-1\r\n"),
            ("KEYS *", b"*0\r\n"),
        ],
    );
}

#[test]
fn move_copy_and_their_errors() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    run(
        &mut k,
        &[
            ("SET k v EX 100", b"+OK\r\n"),
            ("MOVE k 0", SAME),
            ("MOVE k 16", OUT_OF_RANGE),
            ("MOVE k x", NOT_INTEGER),
            ("MOVE nokey 1", b":0\r\n"),
            ("MOVE k 1", b":1\r\n"),
            ("EXISTS k", b":0\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("TTL k", b":100\r\n"),
            ("SET there x", b"+OK\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("SET there y", b"+OK\r\n"),
            ("MOVE there 1", b":0\r\n"),
            ("GET there", b"$1\r\ny\r\n"),
            ("COPY there there", SAME),
            ("COPY there there DB 0", SAME),
            ("COPY there there DB 16", OUT_OF_RANGE),
            ("COPY there there DB x", NOT_INTEGER),
            ("COPY there there DB 1", b":0\r\n"),
            ("COPY there there DB 1 REPLACE", b":1\r\n"),
            ("COPY there copied DB 2", b":1\r\n"),
            ("EXISTS copied", b":0\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("GET there", b"$1\r\ny\r\n"),
            ("SELECT 2", b"+OK\r\n"),
            ("GET copied", b"$1\r\ny\r\n"),
        ],
    );
}

#[test]
fn swapdb_is_seen_by_clients_already_in_either_database() {
    let server = start();
    let addr = server.local_addr();
    let (mut a, mut b) = (Conn::open(addr), Conn::open(addr));
    run(&mut a, &[("SELECT 2", b"+OK\r\n"), ("SET k two", b"+OK\r\n")]);
    run(&mut b, &[("SELECT 3", b"+OK\r\n"), ("SET k three", b"+OK\r\n")]);
    run(
        &mut a,
        &[
            ("SWAPDB x 1", b"-ERR invalid first DB index\r\n"),
            ("SWAPDB 1 x", b"-ERR invalid second DB index\r\n"),
            ("SWAPDB 16 x", b"-ERR invalid second DB index\r\n"),
            ("SWAPDB 99999999999 1", b"-ERR invalid first DB index\r\n"),
            ("SWAPDB 1 16", OUT_OF_RANGE),
            ("SWAPDB -1 1", OUT_OF_RANGE),
            ("SWAPDB 2 2", b"+OK\r\n"),
            ("SWAPDB 2 3", b"+OK\r\n"),
            ("GET k", b"$5\r\nthree\r\n"),
        ],
    );
    run(&mut b, &[("GET k", b"$3\r\ntwo\r\n"), ("SELECT 2", b"+OK\r\n"), ("DBSIZE", b":1\r\n")]);
    run(&mut a, &[("INFO keyspace", b"$")]);
    let info = bulk_rest(&mut a);
    assert!(info.contains("db2:keys=1,expires=0,avg_ttl=0\r\ndb3:keys=1,"), "{info}");
    // A second swap puts them back.
    run(&mut b, &[("SWAPDB 3 2", b"+OK\r\n"), ("GET k", b"$3\r\ntwo\r\n")]);
}

/// The rest of a bulk string whose `$` was read already.
fn bulk_rest(k: &mut Conn) -> String {
    let len: usize = k.line().parse().unwrap();
    let body = k.read_n(len + 2);
    String::from_utf8(body[..len].to_vec()).unwrap()
}

#[test]
fn flushdb_takes_one_database_and_flushall_every_one() {
    let server = start();
    let mut k = Conn::open(server.local_addr());
    run(
        &mut k,
        &[
            ("SET a 1", b"+OK\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("SET a 1", b"+OK\r\n"),
            ("SET b 1", b"+OK\r\n"),
            ("SELECT 2", b"+OK\r\n"),
            ("SET a 1", b"+OK\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("FLUSHDB x", b"-ERR syntax error\r\n"),
            ("FLUSHDB SYNC", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("DBSIZE", b":1\r\n"),
            ("SELECT 2", b"+OK\r\n"),
            ("DBSIZE", b":1\r\n"),
            ("FLUSHALL", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
        ],
    );
}

#[test]
fn info_keyspace_has_a_line_per_database_with_real_expires_and_avg_ttl() {
    let (server, _clock) = start_with_clock(config());
    let mut k = Conn::open(server.local_addr());
    run(
        &mut k,
        &[
            ("SET a 1", b"+OK\r\n"),
            ("SET b 1 EX 100", b"+OK\r\n"),
            ("SELECT 7", b"+OK\r\n"),
            ("SET a 1 EX 100", b"+OK\r\n"),
            ("SET b 1 PX 300000", b"+OK\r\n"),
            ("SET c 1", b"+OK\r\n"),
            ("CONFIG GET databases", b"*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n"),
        ],
    );
    k.send(&c("INFO keyspace"));
    assert_eq!(
        bulk(&mut k),
        "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=100000\r\n\
         db7:keys=3,expires=2,avg_ttl=200000\r\n"
    );
}

#[test]
fn client_list_reset_and_the_databases_option() {
    let server = start_with(fridge_server::Config { databases: 4, ..config() });
    let mut k = Conn::open(server.local_addr());
    run(
        &mut k,
        &[
            ("SELECT 4", OUT_OF_RANGE),
            ("SWAPDB 0 4", OUT_OF_RANGE),
            ("CONFIG GET databases", b"*2\r\n$9\r\ndatabases\r\n$1\r\n4\r\n"),
            ("SELECT 3", b"+OK\r\n"),
            ("SET k three", b"+OK\r\n"),
        ],
    );
    k.send(&c("CLIENT INFO"));
    assert!(bulk(&mut k).contains(" db=3 "));
    run(&mut k, &[("RESET", b"+RESET\r\n"), ("GET k", b"$-1\r\n")]);
    k.send(&c("CLIENT LIST"));
    assert!(bulk(&mut k).contains(" db=0 "));
}

#[test]
fn select_inside_multi_and_watch_per_database() {
    let server = start();
    let addr = server.local_addr();
    let (mut k, mut other) = (Conn::open(addr), Conn::open(addr));
    run(
        &mut k,
        &[
            ("MULTI", b"+OK\r\n"),
            ("SET k zero", b"+QUEUED\r\n"),
            ("SELECT 1", b"+QUEUED\r\n"),
            ("SET k one", b"+QUEUED\r\n"),
            ("EXEC", b"*3\r\n+OK\r\n+OK\r\n+OK\r\n"),
            ("GET k", b"$3\r\none\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("GET k", b"$4\r\nzero\r\n"),
            // A write to the same key in another database leaves the watch alone.
            ("WATCH k", b"+OK\r\n"),
        ],
    );
    run(&mut other, &[("SELECT 1", b"+OK\r\n"), ("SET k changed", b"+OK\r\n")]);
    run(
        &mut k,
        &[("MULTI", b"+OK\r\n"), ("GET k", b"+QUEUED\r\n"), ("EXEC", b"*1\r\n$4\r\nzero\r\n")],
    );
    // A write in the watched database does not.
    run(&mut k, &[("WATCH k", b"+OK\r\n")]);
    run(&mut other, &[("SELECT 0", b"+OK\r\n"), ("SET k changed", b"+OK\r\n")]);
    run(&mut k, &[("MULTI", b"+OK\r\n"), ("GET k", b"+QUEUED\r\n"), ("EXEC", b"*-1\r\n")]);
    // Nor does a SWAPDB that brings in another value (Redis's touchAllWatchedKeysInDb).
    run(&mut k, &[("WATCH k", b"+OK\r\n")]);
    run(&mut other, &[("SWAPDB 0 1", b"+OK\r\n")]);
    run(&mut k, &[("MULTI", b"+OK\r\n"), ("GET k", b"+QUEUED\r\n"), ("EXEC", b"*-1\r\n")]);
}

#[test]
fn notifications_name_the_database_and_memcached_stays_in_database_0() {
    let server = start();
    let addr = server.local_addr();
    let mut k = Conn::open(addr);
    run(&mut k, &[("CONFIG SET notify-keyspace-events KEA", b"+OK\r\n")]);
    let mut sub = Conn::open(addr);
    sub.roundtrip(
        &c("PSUBSCRIBE __keyspace@*"),
        b"*3\r\n$10\r\npsubscribe\r\n$12\r\n__keyspace@*\r\n:1\r\n",
    );
    run(&mut k, &[("SELECT 4", b"+OK\r\n"), ("SET k v", b"+OK\r\n"), ("MOVE k 9", b":1\r\n")]);
    for (channel, event) in [
        ("__keyspace@4__:k", "set"),
        ("__keyspace@4__:k", "move_from"),
        ("__keyspace@9__:k", "move_to"),
    ] {
        let want = format!(
            "*4\r\n$8\r\npmessage\r\n$12\r\n__keyspace@*\r\n${}\r\n{channel}\r\n${}\r\n{event}\r\n",
            channel.len(),
            event.len()
        );
        sub.expect(want.as_bytes());
    }
    // memcached's `get` sees database 0 only.
    run(&mut k, &[("SELECT 0", b"+OK\r\n"), ("SET mc zero", b"+OK\r\n")]);
    let mut mc = Conn::open(addr);
    mc.roundtrip(b"get mc\r\n", b"VALUE mc 0 4\r\nzero\r\nEND\r\n");
    mc.roundtrip(b"get k\r\n", b"END\r\n");
}
