//! fridge-bench against the in-test server (`common`): verified runs in all three protocols,
//! a corrupting server caught by `--verify`, the bytes on the wire, open-loop pacing under a
//! stalled server, tenants with authentication, and trace replay. Each test takes well under
//! two seconds; none asserts how fast anything was.

mod common;

use std::time::Duration;

use common::{Behavior, TestServer};
use fridge_bench::protocol::{Command, Protocol};
use fridge_bench::run::{RunConfig, TenantSpec, run};
use fridge_bench::source::{KeySpace, Source, TraceFormat, TraceSpec};
use fridge_bench::value::{self, Pool};
use fridge_proto::memcache::{self, MetaCommand, RetrievalCommand, Storage, StorageCommand};
use fridge_proto::resp;
use fridge_workload::{OpMix, Popularity, SizeDist, TtlDist, Workload};

fn space(keys: u64, value_size: SizeDist) -> KeySpace {
    let mut workload = Workload::new(keys, Popularity::Zipf { theta: 0.99, scrambled: true }, 7);
    workload.key_size = SizeDist::Fixed(16);
    workload.value_size = value_size;
    workload.ops = OpMix::get_set(0.9).unwrap();
    KeySpace::new(workload, "")
}

fn config(server: &TestServer, protocol: Protocol, space: KeySpace) -> RunConfig {
    let mut cfg = RunConfig::new(server.addr, protocol, space);
    cfg.drain = Duration::from_secs(5);
    cfg
}

#[test]
fn verified_fill_run_and_scan_in_every_protocol() {
    for protocol in [Protocol::Text, Protocol::Meta, Protocol::Resp] {
        let server = TestServer::start(Behavior::default());
        // ETC sizes include empty and short values and long ones with headers.
        let mut cfg = config(&server, protocol, space(500, SizeDist::facebook_etc_value()));
        cfg.threads = 2;
        cfg.conns = 2;
        cfg.depth = 8;
        cfg.fill = true;
        cfg.scan = true;
        cfg.verify = true;
        cfg.requests = Some(4000);
        let report = run(&cfg).unwrap();
        let names: Vec<&str> = report.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["fill", "run", "scan"]);
        let fill = report.phase("fill").unwrap();
        assert_eq!((fill.counts.stored, fill.keys), (500, Some(500)), "{protocol:?}");
        let r = report.phase("run").unwrap();
        let c = &r.counts;
        assert_eq!((c.sent, c.completed), (4000, 4000), "{protocol:?}");
        assert_eq!(
            (c.errors, c.unanswered, c.verify_failures),
            (0, 0, 0),
            "{protocol:?} {:?}",
            r.failures
        );
        assert_eq!(c.misses, 0, "every key was filled");
        assert_eq!(c.hits + c.stored, 4000);
        assert!(r.row("get", "all").is_some_and(|g| g.summary.count == c.hits));
        let scan = report.phase("scan").unwrap();
        assert_eq!(scan.counts.hits, 500, "{protocol:?}: all keys resident");
        assert_eq!(server.len(), 500);
    }
}

#[test]
fn verify_catches_a_server_returning_a_wrong_value() {
    for protocol in [Protocol::Text, Protocol::Resp] {
        let server = TestServer::start(Behavior { corrupt: true, ..Behavior::default() });
        let mut cfg = config(&server, protocol, space(50, SizeDist::Fixed(100)));
        cfg.fill = true;
        cfg.verify = true;
        cfg.requests = Some(200);
        let report = run(&cfg).unwrap();
        let r = report.phase("run").unwrap();
        assert!(r.counts.hits > 0);
        assert_eq!(r.counts.verify_failures, r.counts.hits, "{protocol:?}: every corrupted hit");
        assert!(r.failures.iter().any(|f| f.contains("checksum")), "{:?}", r.failures);
        // Without --verify the same run passes silently.
        cfg.verify = false;
        cfg.fill = false;
        assert_eq!(run(&cfg).unwrap().phase("run").unwrap().counts.verify_failures, 0);
    }
}

#[test]
fn bytes_on_the_wire_are_fridge_proto_encodings() {
    for protocol in [Protocol::Text, Protocol::Meta, Protocol::Resp] {
        let server = TestServer::start(Behavior::default());
        let mut s = space(100, SizeDist::uniform(0, 300).unwrap());
        s.workload.ttl = TtlDist::Fixed(60);
        s.workload.ops = OpMix::new([
            (fridge_workload::Op::Get, 0.6),
            (fridge_workload::Op::Set, 0.3),
            (fridge_workload::Op::Delete, 0.1),
        ])
        .unwrap();
        let mut cfg = config(&server, protocol, s.clone());
        cfg.requests = Some(300);
        cfg.depth = 4;
        run(&cfg).unwrap();
        // The same requests, encoded here with fridge-proto's own functions.
        let pool = Pool::new(cfg.max_value, cfg.seed);
        let mut source = Source::synthetic(&s, 0).unwrap();
        let mut expected = Vec::new();
        let (mut key, mut val) = (Vec::new(), Vec::new());
        for _ in 0..300 {
            let r = source.next(&s).unwrap();
            s.render_key(r.key, r.key_len, &mut key);
            val.clear();
            value::fill(&mut val, &pool, r.key, r.value_len as usize);
            let ttl = r.ttl_s.map(|t| t.to_string());
            match (protocol, r.command) {
                (Protocol::Text, Command::Get) => {
                    memcache::encode_retrieval(
                        &mut expected,
                        RetrievalCommand::Get,
                        None,
                        [&key[..]],
                    );
                }
                (Protocol::Text, Command::Set) => memcache::Request::Storage(Storage {
                    command: StorageCommand::Set,
                    key: &key,
                    flags: 0,
                    exptime: 60,
                    cas: 0,
                    noreply: false,
                    data: &val,
                })
                .encode(&mut expected),
                (Protocol::Text, Command::Delete) => {
                    memcache::Request::Delete { key: &key, noreply: false }.encode(&mut expected);
                }
                (Protocol::Meta, Command::Get) => {
                    memcache::encode_meta(&mut expected, MetaCommand::Get, &key, b"v", &[]);
                }
                (Protocol::Meta, Command::Set) => {
                    memcache::encode_meta(&mut expected, MetaCommand::Set, &key, b"T60", &val);
                }
                (Protocol::Meta, Command::Delete) => {
                    memcache::encode_meta(&mut expected, MetaCommand::Delete, &key, b"", &[]);
                }
                (Protocol::Resp, Command::Get) => {
                    resp::encode_command(&mut expected, &[b"GET", &key])
                }
                (Protocol::Resp, Command::Set) => resp::encode_command(
                    &mut expected,
                    &[b"SET", &key, &val, b"EX", ttl.as_deref().unwrap_or_default().as_bytes()],
                ),
                (Protocol::Resp, Command::Delete) => {
                    resp::encode_command(&mut expected, &[b"DEL", &key])
                }
            }
        }
        let received = server.received();
        assert_eq!(received.len(), 1);
        assert!(
            received[0] == expected,
            "{protocol:?}: {} vs {} bytes",
            received[0].len(),
            expected.len()
        );
    }
}

#[test]
fn open_loop_keeps_its_rate_while_the_server_stalls() {
    // The server sleeps 300 ms before its first reply. An open-loop run at 2000 requests/s for
    // one second still sends all 2000 requests, and the stall shows up as latency: requests
    // meant for the first 200 ms (20% of them) waited at least 100 ms, and the first one at
    // least 300 ms, because latency counts from the intended send time.
    let server = TestServer::start(Behavior {
        stall_first: Duration::from_millis(300),
        ..Behavior::default()
    });
    let mut s = space(100, SizeDist::Fixed(32));
    s.workload.ops = OpMix::only(fridge_workload::Op::Get);
    let mut cfg = config(&server, Protocol::Text, s);
    cfg.threads = 2;
    cfg.conns = 2;
    cfg.rate = Some(2000.0);
    cfg.duration = Some(Duration::from_secs(1));
    let report = run(&cfg).unwrap();
    let r = report.phase("run").unwrap();
    assert_eq!((r.counts.sent, r.counts.completed, r.counts.unanswered), (2000, 2000, 0));
    let get = &r.row("get", "all").unwrap().summary;
    assert_eq!(get.count, 2000);
    assert!(get.p90_us >= 100_000.0, "p90 {} µs hides the stall", get.p90_us);
    assert!(get.max_us >= 299_000.0, "max {} µs", get.max_us);
    assert!(r.send_lag.is_some());
}

#[test]
fn tenants_authenticate_and_keep_their_keys_apart() {
    for protocol in [Protocol::Text, Protocol::Resp] {
        let server = TestServer::start(Behavior::default());
        let mut cfg = config(&server, protocol, space(20, SizeDist::Fixed(40)));
        let mut tenants = Vec::new();
        for (i, name) in ["alpha", "beta"].into_iter().enumerate() {
            let mut s = space(20, SizeDist::Fixed(40));
            s.workload.seed = i as u64;
            s.prefix = format!("{name}:");
            tenants.push(TenantSpec {
                name: name.into(),
                space: s,
                auth: Some((name.into(), "pw".into())),
            });
        }
        cfg.tenants = tenants;
        cfg.conns = 2;
        cfg.fill = true;
        cfg.verify = true;
        cfg.requests = Some(400);
        let report = run(&cfg).unwrap();
        // Two phases, two tenants, two connections each.
        assert_eq!(server.auths(), 8, "{protocol:?}");
        assert_eq!(server.len(), 40);
        let keys = server.keys();
        assert_eq!(keys.iter().filter(|k| k.starts_with(b"alpha:")).count(), 20);
        let r = report.phase("run").unwrap();
        assert_eq!(r.tenants.len(), 2);
        assert_eq!(r.tenants.iter().map(|t| t.counts.completed).sum::<u64>(), 400);
        assert_eq!(r.counts.verify_failures, 0);
    }
}

#[test]
fn trace_replay_sends_every_record() {
    let dir = std::env::temp_dir().join(format!("fridge-bench-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.csv");
    let mut w = fridge_workload::trace::CsvWriter::create(&path).unwrap();
    for i in 0..300u64 {
        let mut r = fridge_workload::Request::get(i % 37, 64);
        if i % 3 == 0 {
            r.op = fridge_workload::Op::Set;
        }
        r.time_ms = i;
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
    let server = TestServer::start(Behavior::default());
    let mut cfg = config(&server, Protocol::Meta, space(10, SizeDist::Fixed(8)));
    cfg.threads = 2;
    cfg.verify = true;
    cfg.trace = Some(TraceSpec { path, format: TraceFormat::Csv });
    let report = run(&cfg).unwrap();
    let r = report.phase("run").unwrap();
    assert_eq!(r.counts.completed, 300);
    assert_eq!(r.counts.stored, 100);
    assert!(r.counts.hits > 0 && r.counts.verify_failures == 0);
    let _ = std::fs::remove_dir_all(&dir);
}
