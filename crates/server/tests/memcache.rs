//! memcached text and meta protocol, byte for byte (replies checked against memcached 1.6.18).

mod common;

use common::{CLOCK_START_MS, Conn, config, start, start_with_clock};

#[test]
fn storage_and_retrieval_commands() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"set a 5 0 3\r\nabc\r\n", b"STORED\r\n")
        .roundtrip(b"get a\r\n", b"VALUE a 5 3\r\nabc\r\nEND\r\n")
        .roundtrip(b"get missing\r\n", b"END\r\n")
        .roundtrip(b"add a 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
        .roundtrip(b"add b 0 0 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(b"replace c 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
        .roundtrip(b"replace b 7 0 2\r\nyy\r\n", b"STORED\r\n")
        .roundtrip(b"append b 0 0 2\r\nzz\r\n", b"STORED\r\n")
        .roundtrip(b"prepend b 0 0 2\r\naa\r\n", b"STORED\r\n")
        .roundtrip(b"append nope 0 0 1\r\nz\r\n", b"NOT_STORED\r\n")
        .roundtrip(b"get a b nope\r\n", b"VALUE a 5 3\r\nabc\r\nVALUE b 7 6\r\naayyzz\r\nEND\r\n")
        .roundtrip(
            b"get no1 a no2 b no3\r\n",
            b"VALUE a 5 3\r\nabc\r\nVALUE b 7 6\r\naayyzz\r\nEND\r\n",
        );
    c.send(b"gets a\r\n");
    let header = c.line();
    let cas: u64 = header.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(header, format!("VALUE a 5 3 {cas}"));
    c.expect(b"abc\r\nEND\r\n");
    c.roundtrip(format!("cas a 0 0 1 {}\r\nx\r\n", cas + 1).as_bytes(), b"EXISTS\r\n")
        .roundtrip(format!("cas a 0 0 1 {cas}\r\nx\r\n").as_bytes(), b"STORED\r\n")
        .roundtrip(b"cas nope 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n")
        .roundtrip(b"delete a\r\n", b"DELETED\r\n")
        .roundtrip(b"delete a\r\n", b"NOT_FOUND\r\n")
        .roundtrip(b"delete b 0\r\n", b"DELETED\r\n")
        .roundtrip(
            b"delete b 5\r\n",
            b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
        );
}

#[test]
fn arithmetic_touch_flush_and_misc() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"set n 0 0 2\r\n10\r\n", b"STORED\r\n")
        .roundtrip(b"incr n 5\r\n", b"15\r\n")
        .roundtrip(b"decr n 100\r\n", b"0\r\n")
        .roundtrip(b"incr n 18446744073709551615\r\n", b"18446744073709551615\r\n")
        .roundtrip(b"incr n 1\r\n", b"0\r\n")
        .roundtrip(b"incr nope 1\r\n", b"NOT_FOUND\r\n")
        .roundtrip(b"set s 0 0 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(
            b"incr s 1\r\n",
            b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
        )
        .roundtrip(b"incr n -1\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n")
        .roundtrip(b"touch s 100\r\n", b"TOUCHED\r\n")
        .roundtrip(b"touch nope 100\r\n", b"NOT_FOUND\r\n")
        .roundtrip(b"touch s abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
        .roundtrip(b"gat 0 s nope\r\n", b"VALUE s 0 1\r\nx\r\nEND\r\n")
        .roundtrip(b"verbosity 1\r\n", b"OK\r\n")
        .roundtrip(b"verbosity 1 noreply\r\nversion\r\n", b"VERSION ")
        .roundtrip(b"", fridge_server::MEMCACHED_VERSION.as_bytes())
        .roundtrip(b"", b"\r\n")
        .roundtrip(b"flush_all\r\n", b"OK\r\n")
        .roundtrip(b"get s n\r\n", b"END\r\n")
        .roundtrip(b"flush_all 0 noreply\r\nmn\r\n", b"MN\r\n")
        .roundtrip(b"stats reset\r\n", b"RESET\r\n")
        .roundtrip(b"stats nonsense\r\n", b"ERROR\r\n");
    c.send(b"quit\r\n");
    assert!(c.is_closed());
}

#[test]
fn expiry_forms() {
    let (server, clock) = start_with_clock(config());
    let mut c = Conn::open(server.local_addr());
    let now = CLOCK_START_MS / 1000;
    c.roundtrip(b"set neg 0 -1 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(b"get neg\r\n", b"END\r\n")
        .roundtrip(format!("set abs 0 {} 1\r\nx\r\n", now + 100).as_bytes(), b"STORED\r\n")
        .roundtrip(b"get abs\r\n", b"VALUE abs 0 1\r\nx\r\nEND\r\n")
        .roundtrip(format!("set past 0 {} 1\r\nx\r\n", now - 100).as_bytes(), b"STORED\r\n")
        .roundtrip(b"get past\r\n", b"END\r\n")
        .roundtrip(b"set rel 0 1 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(b"mg rel t v\r\n", b"VA 1 t1\r\nx\r\n");
    clock.advance(999);
    c.roundtrip(b"mg rel t v\r\n", b"VA 1 t1\r\nx\r\n");
    clock.advance(2);
    c.roundtrip(b"get rel\r\n", b"END\r\n");
    c.roundtrip(b"set t 0 0 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(b"touch t -1\r\n", b"TOUCHED\r\n")
        .roundtrip(b"get t\r\n", b"END\r\n");
}

#[test]
fn noreply_is_silent() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.send(
        b"set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nreplace a 0 0 1 noreply\r\n3\r\n",
    )
    .send(b"append a 0 0 1 noreply\r\n4\r\nprepend a 0 0 1 noreply\r\n5\r\nincr a 1 noreply\r\n")
    .send(b"decr a 2 noreply\r\ntouch a 0 noreply\r\ndelete nope noreply\r\n")
    .roundtrip(b"get a\r\n", b"VALUE a 0 3\r\n533\r\nEND\r\n");
    // A bad data chunk is not answered under noreply; its stray `\n` is an empty command,
    // exactly as memcached does it.
    c.roundtrip(b"set big 0 0 2 noreply\r\nabc\r\nmn\r\n", b"ERROR\r\nMN\r\n");
}

#[test]
fn meta_commands() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"ms foo 2 T0 F5\r\nhi\r\n", b"HD\r\n")
        .roundtrip(b"mg foo v f s t k O123\r\n", b"VA 2 f5 s2 t-1 kfoo O123\r\nhi\r\n")
        .roundtrip(b"mg foo\r\n", b"HD\r\n")
        .roundtrip(b"mg foo q k\r\n", b"HD kfoo\r\n")
        .roundtrip(b"mg missing v O9 k\r\n", b"EN O9 kmissing\r\n")
        .roundtrip(b"mg missing v q\r\nmn\r\n", b"MN\r\n")
        .roundtrip(
            b"ms foo 2 q\r\nhi\r\nmd foo q\r\nmd foo q\r\nmd foo\r\nmn\r\n",
            b"NF\r\nNF\r\nMN\r\n",
        )
        .roundtrip(b"ma cnt\r\n", b"NF\r\n")
        .roundtrip(b"ma cnt N0 J10\r\n", b"HD\r\n")
        .roundtrip(b"ma cnt v\r\n", b"VA 2\r\n11\r\n")
        .roundtrip(b"ma cnt q\r\nma cnt MD D100 v t\r\n", b"VA 1 t-1\r\n0\r\n")
        .roundtrip(b"ma nope q\r\nma cnt v q\r\nmn\r\n", b"NF\r\nMN\r\n")
        .roundtrip(b"ms b 1 ME\r\ny\r\n", b"HD\r\n")
        .roundtrip(b"ms b 1 ME\r\ny\r\n", b"NS\r\n")
        .roundtrip(b"ms zz 1 MA\r\ny\r\n", b"NS\r\n")
        .roundtrip(b"ms b 1 MA k\r\nz\r\n", b"HD kb\r\n")
        .roundtrip(b"ms b 1 MP\r\np\r\nmg b v\r\n", b"HD\r\nVA 3\r\npyz\r\n")
        .roundtrip(b"ms nope 1 MR\r\nr\r\n", b"NS\r\n")
        .roundtrip(b"mg b v T-1\r\nmg b v\r\n", b"VA 3\r\npyz\r\nEN\r\n")
        .roundtrip(b"ms YQ== 1 b k\r\nx\r\n", b"HD kYQ== b\r\n")
        .roundtrip(b"mg a v\r\n", b"VA 1\r\nx\r\n")
        .roundtrip(b"md YQ== b k q O1\r\nmn\r\n", b"MN\r\n")
        .roundtrip(b"ma YQ== b\r\n", b"NF\r\n")
        .roundtrip(b"me nope\r\n", b"EN\r\n")
        .roundtrip(b"mn\r\n", b"MN\r\n");
    // CAS through meta: mg c, ms C, md C.
    c.send(b"ms k 1 c\r\nx\r\n");
    let line = c.line();
    let cas: u64 = line.strip_prefix("HD c").unwrap().parse().unwrap();
    c.roundtrip(format!("ms k 1 C{}\r\ny\r\n", cas + 1).as_bytes(), b"EX\r\n")
        .roundtrip(b"mg k c\r\n", format!("HD c{cas}\r\n").as_bytes())
        .roundtrip(format!("md k C{}\r\n", cas + 1).as_bytes(), b"EX\r\n")
        .roundtrip(format!("ms k 1 C{cas}\r\ny\r\n").as_bytes(), b"HD\r\n")
        .roundtrip(b"md k\r\n", b"HD\r\n");
}

#[test]
fn stats_report_standard_fields() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(
        b"set a 0 0 1\r\nx\r\nget a\r\nget b\r\n",
        b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nEND\r\n",
    );
    c.send(b"stats\r\n");
    let mut stats = std::collections::HashMap::new();
    loop {
        let line = c.line();
        if line == "END" {
            break;
        }
        let mut parts = line.splitn(3, ' ');
        assert_eq!(parts.next(), Some("STAT"));
        stats.insert(parts.next().unwrap().to_owned(), parts.next().unwrap().to_owned());
    }
    for field in [
        "curr_items",
        "total_items",
        "get_hits",
        "get_misses",
        "evictions",
        "bytes",
        "limit_maxbytes",
        "curr_connections",
        "cmd_get",
        "cmd_set",
        "uptime",
        "version",
        "pid",
    ] {
        assert!(stats.contains_key(field), "stats lacks {field}");
    }
    assert_eq!(stats["curr_items"], "1");
    assert_eq!(stats["get_hits"], "1");
    assert_eq!(stats["get_misses"], "1");
    assert_eq!(stats["cmd_set"], "1");
    assert_eq!(stats["limit_maxbytes"], (64u64 << 20).to_string());
    // The queues' small queue starts at its largest share, 15% of the segments' bytes.
    let e = server.engine().stats();
    assert_eq!(e.small_queue_target, (e.segments * e.segment_size * 15 / 100) as u64);
    assert_eq!(stats["small_queue_target"], e.small_queue_target.to_string());
    // The queues' two ghosts start at their size for 65,536 items: two filters of 2^19 bits.
    assert_eq!(stats["ghost_bytes"], (4 << 16).to_string());
    for sub in ["settings", "items", "slabs"] {
        c.send(format!("stats {sub}\r\n").as_bytes());
        let mut lines = 0;
        while c.line() != "END" {
            lines += 1;
        }
        assert!(lines > 0, "stats {sub} is empty");
    }
}

/// Every error path: exact reply, and the connection stays usable after it.
#[test]
fn error_paths_keep_the_connection() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let key = "k".repeat(251);
    let ok = |c: &mut Conn| {
        c.roundtrip(b"mn\r\n", b"MN\r\n");
    };
    c.roundtrip(format!("get {key}\r\n").as_bytes(), b"CLIENT_ERROR bad command line format\r\n");
    ok(&mut c);
    c.roundtrip(
        format!("set {key} 0 0 1\r\nx\r\n").as_bytes(),
        b"CLIENT_ERROR bad command line format\r\n",
    );
    ok(&mut c);
    // Oversized value: refused and swallowed, even when it arrives in pieces.
    let big = vec![b'v'; (1 << 20) + 1];
    c.send(format!("set big 0 0 {}\r\n", big.len()).as_bytes());
    c.expect(b"SERVER_ERROR object too large for cache\r\n");
    c.send(&big[..1000]).send(&big[1000..]).send(b"\r\n");
    ok(&mut c);
    c.roundtrip(b"set k 0 0 -1\r\n", b"CLIENT_ERROR bad command line format\r\n");
    ok(&mut c);
    c.roundtrip(b"set k 0 0 abc\r\n", b"CLIENT_ERROR bad command line format\r\n");
    ok(&mut c);
    c.roundtrip(b"set k abc 0 1\r\nx\r\n", b"CLIENT_ERROR bad command line format\r\n");
    ok(&mut c);
    c.roundtrip(b"set k 0 0 1\r\nxyz\r\n", b"CLIENT_ERROR bad data chunk\r\nERROR\r\n");
    ok(&mut c);
    c.roundtrip(b"incr k abc\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n");
    ok(&mut c);
    c.roundtrip(b"bogus\r\n", b"ERROR\r\n");
    ok(&mut c);
    c.roundtrip(b"set k 0 0\r\n", b"ERROR\r\n");
    ok(&mut c);
    c.roundtrip(b"\x00\xff\xfe garbage \x01\r\n", b"ERROR\r\n");
    ok(&mut c);
    c.roundtrip(b"mg k zz\r\n", b"CLIENT_ERROR invalid flag\r\n");
    ok(&mut c);
    c.roundtrip(b"mg k v v\r\n", b"CLIENT_ERROR duplicate flag\r\n");
    ok(&mut c);
    c.roundtrip(b"ms k 1 MZ\r\nx\r\n", b"CLIENT_ERROR invalid mode for ms M token\r\n");
    ok(&mut c);
    c.roundtrip(b"mg !!! b\r\n", b"CLIENT_ERROR error decoding key\r\n");
    ok(&mut c);
    // A truncated frame followed by the rest later is one request.
    c.send(b"set trunc 0 0 5\r\nab");
    std::thread::sleep(std::time::Duration::from_millis(50));
    c.roundtrip(b"cde\r\n", b"STORED\r\n");
    c.roundtrip(b"get trunc\r\n", b"VALUE trunc 0 5\r\nabcde\r\nEND\r\n");
}

#[test]
fn overlong_line_closes_with_error() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.send(&vec![b'x'; 4096]);
    c.expect(b"CLIENT_ERROR line too long\r\n");
    assert!(c.is_closed());
    // The server is fine.
    Conn::open(server.local_addr()).roundtrip(b"mn\r\n", b"MN\r\n");
}

#[test]
fn deep_pipeline_in_one_write() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..2000 {
        req.extend_from_slice(
            format!("set k{i} 0 0 {}\r\n{i}\r\nget k{i}\r\n", i.to_string().len()).as_bytes(),
        );
        want.extend_from_slice(
            format!("STORED\r\nVALUE k{i} 0 {}\r\n{i}\r\nEND\r\n", i.to_string().len()).as_bytes(),
        );
    }
    c.send(&req).expect(&want);
}

/// Runs of one-key `get`s waiting together in the buffer are looked ahead of and their lines
/// loaded before they run (`look_ahead` in the server's request loop): the replies must be those of the same
/// lines sent one at a time — hits, misses, `gets`, multigets and stores between them.
#[test]
fn pipelined_gets_answer_as_the_same_lines_one_at_a_time() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    // k0..k19 are only read; k20..k39 are stored again with the value they hold.
    for i in 0..40 {
        let line = match i {
            0..20 => format!("set k{i} {i} 0 2\r\nv{}\r\n", i % 10),
            _ => format!("set k{i} 1 0 2\r\nxx\r\n"),
        };
        c.roundtrip(line.as_bytes(), b"STORED\r\n");
    }
    let lines: Vec<String> = (0..300)
        .map(|i| match i % 11 {
            3 => format!("get k{} k{} nothere\r\n", i % 40, (i + 7) % 40),
            5 => format!("get missing{i}\r\n"),
            7 => format!("gets k{}\r\n", (i * 3) % 20),
            9 => format!("set k{} 1 0 2\r\nxx\r\n", 20 + i % 20),
            _ => format!("get k{}\r\n", (i * 7) % 40),
        })
        .collect();
    let mut alone = Vec::new();
    for line in &lines {
        c.send(line.as_bytes());
        let end: &[&str] = if line.starts_with("set") { &["STORED"] } else { &["END"] };
        loop {
            let got = c.line();
            alone.extend_from_slice(format!("{got}\r\n").as_bytes());
            if end.contains(&got.as_str()) {
                break;
            }
        }
    }
    c.send(lines.concat().as_bytes()).expect(&alone);
}

/// Reads the CAS value of `key` with `gets`.
fn gets_cas(c: &mut Conn, key: &str) -> u64 {
    c.send(format!("gets {key}\r\n").as_bytes());
    let header = c.line();
    let cas = header.rsplit(' ').next().unwrap().parse().unwrap();
    c.line();
    assert_eq!(c.line(), "END");
    cas
}

#[test]
fn a_ttl_change_keeps_the_cas() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(b"set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n", b"STORED\r\nSTORED\r\n");
    let (a, b) = (gets_cas(&mut c, "a"), gets_cas(&mut c, "b"));
    assert_ne!(a, b, "every item has its own CAS");
    c.roundtrip(b"gat 100 a\r\n", b"VALUE a 0 1\r\nx\r\nEND\r\n")
        .roundtrip(b"touch a 200\r\n", b"TOUCHED\r\n")
        .roundtrip(b"mg a T300\r\n", b"HD\r\n")
        .roundtrip(b"gats 400 a\r\n", format!("VALUE a 0 1 {a}\r\nx\r\nEND\r\n").as_bytes())
        .roundtrip(b"mg a c T500\r\n", format!("HD c{a}\r\n").as_bytes())
        // Changing b leaves a's CAS alone.
        .roundtrip(b"set b 0 0 1\r\nz\r\n", b"STORED\r\n")
        .roundtrip(format!("cas a 0 0 1 {a}\r\nw\r\n").as_bytes(), b"STORED\r\n")
        .roundtrip(format!("cas a 0 0 1 {a}\r\nv\r\n").as_bytes(), b"EXISTS\r\n");
    let new = gets_cas(&mut c, "a");
    assert!(new != a && new != b);
}

#[test]
fn long_ttls_are_exact() {
    let (server, _clock) = start_with_clock(config());
    let mut c = Conn::open(server.local_addr());
    let now = CLOCK_START_MS / 1000;
    for ttl in [1u64, 59, 3600, 20_000, 86_400, 2_592_000] {
        c.roundtrip(format!("set k 0 {ttl} 1\r\nx\r\n").as_bytes(), b"STORED\r\n")
            .roundtrip(b"mg k t\r\n", format!("HD t{ttl}\r\n").as_bytes())
            .roundtrip(format!("touch k {ttl}\r\n").as_bytes(), b"TOUCHED\r\n")
            .roundtrip(b"mg k t\r\n", format!("HD t{ttl}\r\n").as_bytes());
    }
    // Absolute times, up to the largest exptime memcached reads (a 32-bit signed number).
    for ahead in [2_592_001u64, 10_000_000, 400_000_000] {
        let at = now + ahead;
        c.roundtrip(format!("set k 0 {at} 1\r\nx\r\n").as_bytes(), b"STORED\r\n")
            .roundtrip(b"mg k t\r\n", format!("HD t{ahead}\r\n").as_bytes());
    }
    let max = i32::MAX as u64;
    c.roundtrip(format!("set k 0 {max} 1\r\nx\r\n").as_bytes(), b"STORED\r\n")
        .roundtrip(b"mg k t\r\n", format!("HD t{}\r\n", max - now).as_bytes());
}

/// `stats` as name → value.
fn stats(c: &mut Conn) -> std::collections::HashMap<String, String> {
    c.send(b"stats\r\n");
    let mut all = std::collections::HashMap::new();
    loop {
        let line = c.line();
        if line == "END" {
            return all;
        }
        let mut parts = line.splitn(3, ' ').skip(1);
        let (name, value) = (parts.next().unwrap(), parts.next().unwrap_or(""));
        all.insert(name.to_string(), value.to_string());
    }
}

/// With a search lookaside buffer (`--slb-size`), a key read again is answered from it, and
/// every kind of write — overwrite, append, incr, touch, delete, flush — keeps it true: the
/// replies are those of a server without one.
#[test]
fn an_slb_answers_hot_keys_and_every_write_keeps_it_true() {
    let config = fridge_server::Config { slb_size: fridge_server::Size(64 << 10), ..config() };
    let server = common::start_with(config);
    let mut c = Conn::open(server.local_addr());
    let s = stats(&mut c);
    assert_eq!(s["slb_bytes"], (5 * (64 << 10)).to_string(), "cache and log tables");
    c.roundtrip(b"set k 0 0 2\r\nv1\r\n", b"STORED\r\n");
    for _ in 0..3 {
        c.roundtrip(b"get k\r\n", b"VALUE k 0 2\r\nv1\r\nEND\r\n");
    }
    assert!(stats(&mut c)["slb_hits"].parse::<u64>().unwrap() >= 2, "read from the SLB");
    c.roundtrip(b"set k 0 0 2\r\nv2\r\n", b"STORED\r\n")
        .roundtrip(b"get k\r\n", b"VALUE k 0 2\r\nv2\r\nEND\r\n")
        .roundtrip(b"append k 0 0 1\r\nx\r\n", b"STORED\r\n")
        .roundtrip(b"get k\r\n", b"VALUE k 0 3\r\nv2x\r\nEND\r\n")
        .roundtrip(b"set n 0 0 1\r\n7\r\n", b"STORED\r\n")
        .roundtrip(b"get n\r\n", b"VALUE n 0 1\r\n7\r\nEND\r\n")
        .roundtrip(b"incr n 5\r\n", b"12\r\n")
        .roundtrip(b"get n\r\n", b"VALUE n 0 2\r\n12\r\nEND\r\n")
        .roundtrip(b"touch n 100\r\n", b"TOUCHED\r\n")
        .roundtrip(b"get n\r\n", b"VALUE n 0 2\r\n12\r\nEND\r\n")
        .roundtrip(b"delete k\r\n", b"DELETED\r\n")
        .roundtrip(b"get k\r\n", b"END\r\n")
        .roundtrip(b"flush_all\r\n", b"OK\r\n")
        .roundtrip(b"get n\r\n", b"END\r\n");
    let s = stats(&mut c);
    assert!(s["slb_hits"].parse::<u64>().unwrap() >= 6, "{s:?}");
    assert!(s["slb_admissions"].parse::<u64>().unwrap() >= 2, "{s:?}");
}

/// S3-FIFO's queues (the default without tenants) keep a frequency sketch in host memory
/// (`sketch`; `none` with a zero budget). For the hitmap (Memshare's pass), `--metadata auto`
/// starts on any machine: the hitmap on a usable GPU, else in host memory; `stats` and
/// `/metrics`-bound fields say which. `--metadata gpu` without a GPU does not start, and says
/// why.
#[test]
fn the_hitmap_device_is_chosen_and_reported() {
    use common::start_with;
    use fridge_server::{Config, EvictionChoice, MetadataChoice};
    let stat = |server: &fridge_server::Server, name: &str| {
        let mut c = Conn::open(server.local_addr());
        c.send(b"stats\r\n");
        let mut found = None;
        loop {
            let line = c.line();
            if line == "END" {
                return found;
            }
            let mut parts = line.splitn(3, ' ');
            parts.next();
            if parts.next() == Some(name) {
                found = parts.next().map(str::to_owned);
            }
        }
    };
    let default = start();
    assert_eq!(stat(&default, "hitmap_device").as_deref(), Some("sketch"));
    let without = start_with(Config { hitmap_bits_per_item: Some(0), ..config() });
    assert_eq!(stat(&without, "hitmap_device").as_deref(), Some("none"));
    let with_hitmap = || Config { eviction: EvictionChoice::Memshare, ..config() };
    let cpu = start_with(with_hitmap());
    assert_eq!(stat(&cpu, "hitmap_device").as_deref(), Some("cpu"));
    assert_eq!(stat(&cpu, "hitmap_gpu"), None);
    let auto = start_with(Config { metadata: MetadataChoice::Auto, ..with_hitmap() });
    let device = stat(&auto, "hitmap_device").unwrap();
    match device.as_str() {
        "cpu" => {
            let gpu = Config { metadata: MetadataChoice::Gpu, ..with_hitmap() };
            let Err(err) = fridge_server::Server::start(gpu) else {
                panic!("no GPU here, yet the server started with one")
            };
            assert!(err.to_string().starts_with("no GPU hitmap: "), "{err}");
        }
        "gpu" => assert!(stat(&auto, "hitmap_gpu").is_some_and(|n| !n.contains(' '))),
        other => panic!("hitmap_device {other}"),
    }
}
