//! memcached's `watch` log streams and `cache_memlimit`: replies and line formats byte for byte
//! where they should agree with memcached 1.6.18, which is started beside fridge when it is
//! installed (`/usr/bin/memcached`) to compare the field names and order of each line type.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{Conn, cmd, config, start_with};
use fridge_server::{Config, PasswordHash, Size, TenantConfig};

/// A watcher's stream, after its `OK`.
struct Stream(BufReader<TcpStream>);

/// Sends `watch …` on a new connection and expects `OK`.
fn watch(addr: SocketAddr, req: &[u8]) -> Stream {
    let mut w = Conn::open(addr);
    w.roundtrip(req, b"OK\r\n");
    Stream(BufReader::new(w.stream))
}

/// Reads log lines until one satisfies `done`; returns them all.
fn lines_until(w: &mut Stream, done: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match w.0.read_line(&mut line) {
            Ok(n) if n > 0 && line.ends_with('\n') => {
                let l = line.trim_end_matches('\n').to_string();
                let last = done(&l);
                lines.push(l);
                if last {
                    return lines;
                }
            }
            other => panic!("reading the stream: {other:?}; so far {lines:?}"),
        }
    }
}

/// The line's `type=` value.
fn kind(line: &str) -> &str {
    line.split(' ').find_map(|f| f.strip_prefix("type=")).unwrap_or("")
}

/// The line's field names, in order.
fn names(line: &str) -> Vec<&str> {
    line.split(' ').map(|f| f.split_once('=').map_or(f, |(n, _)| n)).collect()
}

/// The value of field `name`.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

/// A client's requests whose events every test below watches; ends with a read of `end`.
const SCRIPT: &[(&[u8], &[u8])] = &[
    (b"set foo 5 0 3\r\nbar\r\n", b"STORED\r\n"),
    (b"get foo nope\r\n", b"VALUE foo 5 3\r\nbar\r\nEND\r\n"),
    (b"add foo 0 0 1\r\nx\r\n", b"NOT_STORED\r\n"),
    (b"set a\x01b 0 100 1\r\nx\r\n", b"STORED\r\n"),
    (b"mg a\x01b v\r\n", b"VA 1\r\nx\r\n"),
    (b"ms m 2 T0\r\nhi\r\n", b"HD\r\n"),
    (b"delete foo\r\n", b"DELETED\r\n"),
    (b"md m\r\n", b"HD\r\n"),
    (b"get end\r\n", b"END\r\n"),
];

fn run_script(addr: SocketAddr) {
    let mut k = Conn::open(addr);
    for (req, reply) in SCRIPT {
        k.roundtrip(req, reply);
    }
}

#[test]
fn watchers_stream_memcached_lines() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut k = Conn::open(addr);
    k.roundtrip(b"watch fetchers mutations deletions connevents\r\n", b"OK\r\n");
    // Whatever a watcher sends afterwards is ignored.
    k.send(b"get foo\r\n");
    let mut w = Stream(BufReader::new(k.stream));
    run_script(addr);
    // The script's connection's lines only (the server's readiness check may close late).
    let mut lines = lines_until(&mut w, |l| l.contains("key=end"));
    lines.retain(|l| kind(l) != "conn_close");
    let rport = field(&lines[0], "rport").to_string();
    let close = lines_until(&mut w, |l| kind(l) == "conn_close" && field(l, "rport") == rport);
    lines.extend(
        close.into_iter().filter(|l| kind(l) != "conn_close" || field(l, "rport") == rport),
    );
    let got: Vec<(&str, String)> = lines
        .iter()
        .map(|l| {
            let key = l.split(' ').find_map(|f| f.strip_prefix("key=")).unwrap_or("");
            let status = l.split(' ').find_map(|f| f.strip_prefix("status=")).unwrap_or("");
            (kind(l), format!("{key} {status}"))
        })
        .collect();
    let want = [
        ("conn_new", " "),
        ("item_store", "foo stored"),
        ("item_get", "foo found"),
        ("item_get", "nope not_found"),
        ("item_store", "foo not_stored"),
        ("item_store", "a%01b stored"),
        ("item_get", "a%01b found"),
        ("item_store", "m stored"),
        ("deleted", "foo "),
        ("deleted", "m "),
        ("item_get", "end not_found"),
        ("conn_close", " "),
    ];
    let want: Vec<(&str, String)> = want.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
    assert_eq!(got, want, "{lines:#?}");
    for l in &lines {
        assert!(l.starts_with("ts="), "{l}");
        assert_eq!(&names(l)[..2], ["ts", "gid"]);
    }
    assert_eq!(field(&lines[1], "cmd"), "set");
    assert_eq!(field(&lines[1], "size"), "3");
    assert_eq!(field(&lines[2], "size"), "3");
    assert_eq!(field(&lines[4], "cmd"), "add");
    assert_eq!(field(&lines[5], "ttl"), "100");
    assert_eq!(field(&lines[8], "cmd"), "delete");
    assert_eq!(field(&lines[8], "size"), "3");
    assert_eq!(field(&lines[9], "cmd"), "md");
    assert_eq!(field(&lines[11], "reason"), "normal");
    assert_eq!(field(&lines[0], "cfd"), field(&lines[2], "cfd"));
    let gids: Vec<u64> = lines.iter().map(|l| field(l, "gid").parse().unwrap()).collect();
    assert!(gids.windows(2).all(|g| g[0] < g[1]), "gids in order: {gids:?}");
}

#[test]
fn several_watchers_each_see_their_streams() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut fetchers = watch(addr, b"watch\r\n");
    let mut mutations = watch(addr, b"watch mutations\r\n");
    run_script(addr);
    let f = lines_until(&mut fetchers, |l| l.contains("key=end"));
    assert!(f.iter().all(|l| kind(l) == "item_get"), "{f:#?}");
    assert_eq!(f.len(), 4);
    let m = lines_until(&mut mutations, |l| l.contains("key=m "));
    assert!(m.iter().all(|l| kind(l) == "item_store"), "{m:#?}");
    assert_eq!(m.len(), 4);
}

#[test]
fn watch_errors_are_memcacheds() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut k = Conn::open(addr);
    k.roundtrip(b"watch bogus\r\n", b"ERROR\r\n");
    // Streams memcached has and fridge does not serve are unknown names too.
    k.roundtrip(b"watch fetchers rawcmds\r\n", b"ERROR\r\n");
    k.roundtrip(b"WATCH\r\n", b"ERROR\r\n");
    // `noreply` is no stream: an error kept silent; the connection stays as it was.
    k.send(b"watch fetchers noreply\r\n").roundtrip(b"get x\r\n", b"END\r\n");
    let mut watchers: Vec<Stream> = (0..20).map(|_| watch(addr, b"watch evictions\r\n")).collect();
    k.roundtrip(b"watch\r\n", b"WATCHER_TOO_MANY log watcher limit reached\r\n");
    // A watcher that leaves makes room.
    drop(watchers.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut k = Conn::open(addr);
        k.send(b"watch\r\n");
        if k.line() == "OK" {
            break;
        }
        assert!(Instant::now() < deadline, "the closed watcher's place never came free");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn evictions_are_streamed() {
    let server = start_with(Config { memory: Size(32 << 20), ..config() });
    let addr = server.local_addr();
    let mut w = watch(addr, b"watch evictions\r\n");
    let mut k = Conn::open(addr);
    let value = vec![b'v'; 50_000];
    let mut i = 0;
    let lines = loop {
        // Enough to fill 8 MiB several times over, in requests of 10.
        let mut batch = Vec::new();
        for _ in 0..10 {
            batch.extend_from_slice(format!("set key{i} 0 0 {}\r\n", value.len()).as_bytes());
            batch.extend_from_slice(&value);
            batch.extend_from_slice(b"\r\n");
            i += 1;
        }
        k.send(&batch);
        for _ in 0..10 {
            assert_eq!(k.line(), "STORED");
        }
        if server.engine().stats().evictions > 0 {
            break lines_until(&mut w, |l| kind(l) == "eviction");
        }
        assert!(i < 10_000, "no eviction after {i} stores");
    };
    let l = lines.last().unwrap();
    assert_eq!(names(l), ["ts", "gid", "type", "key", "ttl", "la", "size"], "{l}");
    assert_eq!(field(l, "ttl"), "-1");
    assert_eq!(field(l, "size"), "50000");
    assert!(field(l, "key").starts_with("key"));
}

#[test]
fn a_watcher_is_not_idle_and_sees_idle_clients_leave() {
    let (server, clock) = common::start_with_clock(Config { idle_timeout: 1, ..config() });
    let addr = server.local_addr();
    let mut w = watch(addr, b"watch connevents\r\n");
    let mut idle = Conn::open(addr);
    idle.roundtrip(b"mn\r\n", b"MN\r\n");
    let rport = idle.stream.local_addr().unwrap().port().to_string();
    clock.advance(2001);
    assert!(idle.is_closed());
    // The watcher, as idle as the client, is still there to see it leave.
    let lines = lines_until(&mut w, |l| kind(l) == "conn_close" && field(l, "rport") == rport);
    assert_eq!(field(lines.last().unwrap(), "reason"), "idle_timeout");
}

#[test]
fn a_slow_watcher_is_told_what_it_missed() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut w = watch(addr, b"watch fetchers\r\n");
    // The watcher reads nothing while far more lines come than its buffers and the socket's
    // hold: the rest are dropped and counted, and no request waits for it.
    let mut k = Conn::open(addr);
    let keys: String = (0..100).map(|i| format!(" k{i}")).collect();
    let request = format!("get{keys}\r\n");
    for _ in 0..4000 {
        k.roundtrip(request.as_bytes(), b"END\r\n");
    }
    let lines = lines_until(&mut w, |l| l.starts_with("skipped="));
    let skipped: u64 = lines.last().unwrap()["skipped=".len()..].parse().unwrap();
    assert!(skipped > 0);
    assert!(lines.len() < 400_000);
}

#[test]
fn a_tenant_watches_only_its_own_events() {
    let tenant = |name: &str, password: &str| TenantConfig {
        name: name.into(),
        password_sha256: Some(PasswordHash::new(name.as_bytes(), password.as_bytes())),
        ..TenantConfig::default()
    };
    let config = Config {
        tenants: vec![tenant("default", "root"), tenant("alpha", "apw"), tenant("beta", "bpw")],
        ..config()
    };
    let server = start_with(config);
    let addr = server.local_addr();
    let login = |user: &str, password: &str| {
        let mut k = Conn::open(addr);
        let data = format!("{user} {password}");
        let req = format!("set auth 0 0 {}\r\n{data}\r\n", data.len());
        k.roundtrip(req.as_bytes(), b"STORED\r\n");
        k
    };
    let mut k = login("alpha", "apw");
    k.roundtrip(b"watch fetchers connevents\r\n", b"OK\r\n");
    let mut alpha_watch = Stream(BufReader::new(k.stream));
    let mut k = login("default", "root");
    k.roundtrip(b"watch fetchers\r\n", b"OK\r\n");
    let mut admin_watch = Stream(BufReader::new(k.stream));
    let mut beta = login("beta", "bpw");
    beta.roundtrip(b"get beta-key\r\n", b"END\r\n");
    drop(beta);
    let mut alpha = login("alpha", "apw");
    alpha.roundtrip(b"get alpha-key\r\n", b"END\r\n");
    let admin = lines_until(&mut admin_watch, |l| l.contains("key=alpha-key"));
    assert_eq!(admin.len(), 2, "{admin:#?}");
    assert!(admin[0].contains("key=beta-key"));
    // alpha sees neither beta's read nor beta's close, nor any connection's opening.
    let seen = lines_until(&mut alpha_watch, |l| l.contains("key=alpha-key"));
    assert_eq!(seen.len(), 1, "{seen:#?}");
    drop(alpha);
    let closed = lines_until(&mut alpha_watch, |l| kind(l) == "conn_close");
    assert_eq!(closed.len(), 1, "{closed:#?}");
}

#[test]
fn cache_memlimit_replies_and_limit_maxbytes() {
    let server = start_with(Config { memory: Size(64 << 20), ..config() });
    let mut k = Conn::open(server.local_addr());
    for (req, reply) in CACHE_MEMLIMIT {
        k.roundtrip(req, reply);
    }
    k.roundtrip(b"cache_memlimit 40\r\n", b"OK\r\n");
    assert_eq!(server.engine().memory_limit(), 40 << 20);
    assert_eq!(stat(&mut k, b"stats\r\n", "limit_maxbytes"), (40u64 << 20).to_string());
    assert_eq!(stat(&mut k, b"stats settings\r\n", "maxbytes"), (40u64 << 20).to_string());
    // Redis clients see it too.
    let mut r = Conn::open(server.local_addr());
    r.send(&common::cmd(&[b"CONFIG", b"GET", b"maxmemory"]));
    r.expect(format!("*2\r\n$9\r\nmaxmemory\r\n$8\r\n{}\r\n", 40u64 << 20).as_bytes());
    // Below what the server could start with (its segments for two workers): refused.
    k.roundtrip(
        b"cache_memlimit 8\r\n",
        b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
    );
    // Beyond what was mapped at start: refused, as memcached refuses a limit it cannot set.
    k.roundtrip(
        b"cache_memlimit 65\r\n",
        b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
    );
    k.send(b"cache_memlimit 64 noreply\r\n").roundtrip(b"mn\r\n", b"MN\r\n");
    assert_eq!(stat(&mut k, b"stats\r\n", "limit_maxbytes"), (64u64 << 20).to_string());
}

/// `cache_memlimit` requests and memcached 1.6.18's replies (its `-m 64`), each followed by
/// `mn` so that a silent reply shows.
const CACHE_MEMLIMIT: &[(&[u8], &[u8])] = &[
    (b"cache_memlimit\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (
        b"cache_memlimit 0\r\nmn\r\n",
        b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nMN\r\n",
    ),
    (
        b"cache_memlimit 7\r\nmn\r\n",
        b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nMN\r\n",
    ),
    (b"cache_memlimit 7 noreply\r\nmn\r\n", b"MN\r\n"),
    (b"cache_memlimit abc\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (b"cache_memlimit -5\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (b"cache_memlimit 12abc\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (b"CACHE_MEMLIMIT 64\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (b"cache_memlimit 64 noreply extra\r\nmn\r\n", b"ERROR\r\nMN\r\n"),
    (
        b"cache_memlimit 99999999999\r\nmn\r\n",
        b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\nMN\r\n",
    ),
    (
        b"cache_memlimit 4294967296\r\nmn\r\n",
        b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nMN\r\n",
    ),
    (b"cache_memlimit 32 x\r\nmn\r\n", b"OK\r\nMN\r\n"),
    (b"cache_memlimit 64\r\nmn\r\n", b"OK\r\nMN\r\n"),
];

/// One `STAT name value` of a stats reply.
fn stat(k: &mut Conn, req: &[u8], name: &str) -> String {
    k.send(req);
    let mut found = None;
    loop {
        let line = k.line();
        if line == "END" {
            return found.unwrap_or_else(|| panic!("no {name}"));
        }
        if let Some(v) = line.strip_prefix(&format!("STAT {name} ")) {
            found = Some(v.to_string());
        }
    }
}

/// memcached 1.6.18 on a free port, if it is installed.
struct Memcached(Child, SocketAddr);

impl Memcached {
    fn start() -> Option<Memcached> {
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = Command::new("memcached")
            .args(["-u", "root", "-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0", "-m", "64"])
            .spawn()
            .ok()?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(addr).is_err() {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Memcached(child, addr))
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn line_formats_match_memcached() {
    let Some(memcached) = Memcached::start() else {
        eprintln!("memcached is not installed: skipping the comparison");
        return;
    };
    let server = start_with(config());
    // memcached 1.6.18 has no `deletions` stream (1.6.19 added it).
    let streams = b"watch fetchers mutations connevents\r\n";
    let mut formats = Vec::new();
    for addr in [memcached.1, server.local_addr()] {
        let mut w = watch(addr, streams);
        run_script(addr);
        let mut lines = lines_until(&mut w, |l| l.contains("key=end"));
        lines.extend(lines_until(&mut w, |l| kind(l) == "conn_close"));
        // memcached also logs the lookups its stores make inside; one line of each type and
        // status is compared.
        let mut seen = std::collections::BTreeMap::new();
        for l in &lines {
            let status = l.split(' ').find_map(|f| f.strip_prefix("status=")).unwrap_or("");
            let without: Vec<String> = names(l)
                .into_iter()
                .filter(|n| !matches!(*n, "clsid" | "fetch"))
                .map(str::to_string)
                .collect();
            seen.entry((kind(l).to_string(), status.to_string())).or_insert(without);
        }
        formats.push(seen);
    }
    assert_eq!(formats[0], formats[1]);
    let kinds: Vec<String> = formats[1].keys().map(|(k, s)| format!("{k} {s}")).collect();
    let want = [
        "conn_close ",
        "conn_new ",
        "item_get found",
        "item_get not_found",
        "item_store not_stored",
        "item_store stored",
    ];
    assert_eq!(kinds, want);
    // Both answer the same to the same `cache_memlimit` requests.
    let mut k = Conn::open(memcached.1);
    for (req, reply) in CACHE_MEMLIMIT {
        k.roundtrip(req, reply);
    }
}

/// `SLOWLOG GET n` on `c`: each entry's id and arguments.
fn slowlog_get(c: &mut Conn, n: usize) -> Vec<(u64, Vec<String>)> {
    c.send(&cmd(&[b"SLOWLOG".as_slice(), b"GET", n.to_string().as_bytes()]));
    let count: usize = c.line()[1..].parse().unwrap();
    let mut entries = Vec::new();
    for _ in 0..count {
        assert_eq!(c.line(), "*6");
        let id = c.line()[1..].parse().unwrap();
        let (_time, _micros) = (c.line(), c.line());
        let argc: usize = c.line()[1..].parse().unwrap();
        let args = (0..argc).map(|_| (c.line(), c.line()).1).collect();
        let (_addr, _name) = ((c.line(), c.line()), (c.line(), c.line()));
        entries.push((id, args));
    }
    entries
}

#[test]
fn slow_requests_of_both_protocols_share_one_ring() {
    let server = start_with(config());
    let addr = server.local_addr();
    let mut admin = Conn::open(addr);
    let every = cmd(&[b"CONFIG".as_slice(), b"SET", b"slowlog-log-slower-than", b"0"]);
    admin.roundtrip(&every, b"+OK\r\n");
    let mut w = watch(addr, b"watch slow\r\n");
    let mut k = Conn::open(addr);
    k.roundtrip(b"set foo 0 0 3\r\nbar\r\n", b"STORED\r\n");
    k.roundtrip(b"get foo nope\r\n", b"VALUE foo 0 3\r\nbar\r\nEND\r\n");
    let mut r = Conn::open(addr);
    r.roundtrip(&cmd(&[b"CLIENT".as_slice(), b"SETNAME", b"app1"]), b"+OK\r\n");
    r.roundtrip(&cmd(&[b"SET".as_slice(), b"k", b"a b,c"]), b"+OK\r\n");
    let mut lines = lines_until(&mut w, |l| l.contains("args=SET"));
    // The watcher's own `watch slow` is the ring's next entry after it registered.
    lines.retain(|l| !l.contains("args=watch"));
    let args: Vec<&str> = lines.iter().map(|l| field(l, "args")).collect();
    assert_eq!(args, ["set,foo,0,0,3", "get,foo,nope", "CLIENT,SETNAME,app1", "SET,k,a%20b%2Cc"]);
    for l in &lines {
        assert_eq!(kind(l), "slow");
        assert_eq!(
            names(l),
            ["ts", "gid", "type", "id", "elapsed", "rip", "rport", "name", "args"]
        );
        assert_eq!(field(l, "rip"), "127.0.0.1");
    }
    assert_eq!((field(&lines[0], "name"), field(&lines[3], "name")), ("", "app1"));
    assert_eq!(field(&lines[0], "rport"), field(&lines[1], "rport"));
    let ids: Vec<u64> = lines.iter().map(|l| field(l, "id").parse().unwrap()).collect();
    assert!(ids.windows(2).all(|i| i[0] < i[1]), "{ids:?}");
    // SLOWLOG reads the same ring: the newest are the RESP commands, then memcached's get.
    let newest = slowlog_get(&mut admin, 3);
    let want = |i: usize, a: &[&str]| (ids[i], a.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        newest,
        [
            want(3, &["SET", "k", "a b,c"]),
            want(2, &["CLIENT", "SETNAME", "app1"]),
            want(1, &["get", "foo", "nope"])
        ]
    );
}
