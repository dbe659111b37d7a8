//! End-to-end tests of the simulator: determinism, the engine's sanity inside the
//! simulator, the shared traces through the simulator's own reporting, and the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use fridge_sim::progress::Progress;
use fridge_sim::report;
use fridge_sim::source::{self, GeneratorParams, Source};
use fridge_sim::sweep::{OpsMode, PolicySpec, Report, Settings, SizeSpec, simulate};
use fridge_workload::trace::{KeyFormat, SizeModel};
use fridge_workload::{Op, Request};

fn zipf(requests: u64, keys: u64, seed: u64) -> Source {
    let params =
        GeneratorParams { keys, theta: 0.99, requests, seed, tenants: 1, key_scale: 0.001 };
    source::generator("zipf", &params).unwrap()
}

fn run(source: &Source, policies: &[&str], sizes: Vec<SizeSpec>) -> Report {
    let settings = Settings {
        policies: PolicySpec::parse_list(&policies.join(",")).unwrap(),
        sizes,
        ..Settings::default()
    };
    simulate(source, &settings, &mut Progress::hidden()).unwrap()
}

fn row<'a>(r: &'a Report, policy: &str, size: u64) -> &'a fridge_sim::sweep::Row {
    r.rows
        .iter()
        .find(|x| x.policy == policy && x.cache_bytes == size && x.tenant == "all")
        .unwrap_or_else(|| panic!("no row for {policy} at {size}: {:?}", r.notes))
}

/// `../shared/traces/<rel>` from the repository root. Tests that read it are `#[ignore]`d
/// (the traces live outside the repository); run them with `--ignored` where they are.
fn shared_trace(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces").join(rel);
    assert!(path.exists(), "{} not found: this test needs ../shared/traces", path.display());
    path
}

#[test]
fn same_input_and_seed_give_identical_reports() {
    let source = zipf(30_000, 5_000, 7);
    let sizes = vec![SizeSpec::Fraction(0.05), SizeSpec::Fraction(0.3)];
    let a = run(&source, &["all", "partitioned-lru"], sizes.clone());
    let b = run(&source, &["all", "partitioned-lru"], sizes);
    assert_eq!(report::csv(&a), report::csv(&b));
    assert_eq!(report::json(&a).unwrap(), report::json(&b).unwrap());
    // A different generator seed changes the stream and so the results.
    let c = run(&zipf(30_000, 5_000, 8), &["lru"], vec![SizeSpec::Fraction(0.05)]);
    let a_lru = a.rows.iter().find(|x| x.policy == "lru").unwrap();
    assert_ne!((a_lru.cache_bytes, a_lru.hits), (c.rows[0].cache_bytes, c.rows[0].hits));
}

#[test]
fn engine_larger_than_the_working_set_misses_only_compulsorily() {
    let source = zipf(40_000, 3_000, 1);
    let r = run(&source, &["fridge", "lru"], vec![SizeSpec::Fraction(3.0)]);
    let size = r.rows[0].cache_bytes;
    let objects = r.profile.objects;
    for policy in ["fridge", "lru"] {
        let x = row(&r, policy, size);
        assert_eq!(x.requests, 40_000);
        assert_eq!(
            x.requests - x.hits,
            objects,
            "{policy}: only the first request of a key misses"
        );
    }
    let e = row(&r, "fridge", size).engine.as_ref().unwrap();
    assert_eq!((e.evictions, e.refused, e.store_errors), (0, 0, 0));
    assert_eq!(e.items, objects);
    assert!(e.overhead_bytes > 0);
}

#[test]
fn a_smaller_engine_misses_more_and_evicts() {
    let source = zipf(60_000, 20_000, 2);
    let r =
        run(&source, &["fridge", "lru"], vec![SizeSpec::Fraction(0.05), SizeSpec::Fraction(0.5)]);
    let mut sizes: Vec<u64> = r.rows.iter().map(|x| x.cache_bytes).collect();
    sizes.dedup();
    let (small, large) = (row(&r, "fridge", sizes[0]), row(&r, "fridge", sizes[1]));
    assert!(
        small.miss_ratio > large.miss_ratio + 0.05,
        "{} vs {}",
        small.miss_ratio,
        large.miss_ratio
    );
    let e = small.engine.as_ref().unwrap();
    assert!(e.evictions > 0 && e.cleaner_passes > 0, "{e:?}");
    assert_eq!(e.store_errors, 0);
    // The engine is in LRU's neighbourhood, not wildly off, on a plain Zipf stream.
    let lru = row(&r, "lru", sizes[1]);
    assert!(
        (large.miss_ratio - lru.miss_ratio).abs() < 0.1,
        "{} vs {}",
        large.miss_ratio,
        lru.miss_ratio
    );
}

#[test]
fn trace_ops_count_gets_only_and_tenants_are_reported() {
    let params = GeneratorParams {
        keys: 0,
        theta: 0.99,
        requests: 20_000,
        seed: 3,
        tenants: 3,
        key_scale: 0.0001,
    };
    let source = source::generator("twitter", &params).unwrap();
    let settings = Settings {
        policies: vec![
            PolicySpec::fridge(),
            PolicySpec::Lru,
            PolicySpec::parse("partitioned-lru").unwrap(),
        ],
        sizes: vec![SizeSpec::Fraction(0.2)],
        ops: OpsMode::Trace,
        ..Settings::default()
    };
    let r = simulate(&source, &settings, &mut Progress::hidden()).unwrap();
    assert_eq!(r.profile.tenants.len(), 3);
    assert_eq!(r.tenant_names.len(), 3);
    for policy in ["fridge", "lru", "partitioned-lru"] {
        let rows: Vec<_> = r.rows.iter().filter(|x| x.policy == policy).collect();
        assert_eq!(rows.len(), 4, "{policy}: all + 3 tenants");
        assert_eq!(rows[0].tenant, "all");
        let sum: u64 = rows[1..].iter().map(|x| x.requests).sum();
        assert_eq!(sum, rows[0].requests);
        assert!(rows[0].requests <= 20_000);
    }
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn cloudphysics_oracle_trace_through_the_simulator() {
    let path = shared_trace("cloudphysics/cloudPhysicsIO.oracleGeneral.bin");
    let source = source::trace(path, "oracle", None, KeyFormat::Integer, None).unwrap();
    let r = run(&source, &["lru", "fridge", "belady"], vec![SizeSpec::Fraction(0.1)]);
    assert_eq!(r.profile.requests, 113_872);
    assert_eq!(r.profile.bytes_requested, 4_368_040_448);
    assert!(r.notes.iter().all(|n| !n.contains("pre-pass")), "oracleGeneral carries next access");
    for policy in ["lru", "fridge", "belady"] {
        let x = &r.rows.iter().find(|x| x.policy == policy).unwrap();
        assert_eq!((x.requests, x.bytes_requested), (113_872, 4_368_040_448), "{policy}");
    }
    let size = r.rows[0].cache_bytes;
    assert!(row(&r, "belady", size).miss_ratio <= row(&r, "lru", size).miss_ratio);
    assert_eq!(row(&r, "fridge", size).engine.as_ref().unwrap().store_errors, 0);
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn cloudphysics_csv_and_key_only_traces_read() {
    let csv = shared_trace("cloudphysics/cloudPhysicsIO.csv");
    let format = fridge_workload::trace::CsvFormat::cloudphysics();
    let source = source::trace(csv, "csv", Some(format), KeyFormat::Integer, None).unwrap();
    let r = run(&source, &["lru"], vec![SizeSpec::Bytes(64 << 20)]);
    assert_eq!(r.profile.requests, 113_872);
    let web07 = shared_trace("cache2k/web07.trace.xz");
    let sizes = Some((SizeModel::fixed(16, 100), "fixed".to_owned()));
    let mut source = source::trace(web07, "keyonly-i32", None, KeyFormat::Integer, sizes).unwrap();
    source.limit = Some(50_000);
    let r = run(&source, &["fridge", "lru", "belady"], vec![SizeSpec::Fraction(0.1)]);
    assert_eq!(r.profile.requests, 50_000);
    assert!(r.notes.iter().any(|n| n.contains("pre-pass")), "{:?}", r.notes);
    let size = r.rows[0].cache_bytes;
    assert!(row(&r, "belady", size).miss_ratio <= row(&r, "lru", size).miss_ratio);
}

#[test]
fn cli_writes_csv_json_and_png() {
    let dir = std::env::temp_dir().join(format!("fridge-sim-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = env!("CARGO_BIN_EXE_fridge-sim");
    let args = [
        "--generate",
        "facebook-etc",
        "--keys",
        "20000",
        "--requests",
        "30000",
        "--policies",
        "fridge,lru,s3fifo,belady",
        "--fractions",
        "0.05,0.2,0.5",
        "--progress",
        "never",
        "--out",
    ];
    let out = Command::new(bin).args(args).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("miss ratio") && stdout.contains("requests/s"), "{stdout}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4 * 3, "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains("engine max_memory"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["profile"]["requests"], 30_000);
    assert_eq!(json["rows"].as_array().unwrap().len(), 12);
    for png in ["miss_ratio.png", "byte_miss_ratio.png"] {
        let bytes = std::fs::read(dir.join(png)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{png}");
        assert!(bytes.len() < 200_000, "{png}: {} bytes", bytes.len());
    }
    // Same command, same bytes (plots included).
    let again = dir.join("again");
    let out = Command::new(bin).args(args).arg(&again).output().unwrap();
    assert!(out.status.success());
    for f in ["results.csv", "results.json", "miss_ratio.png"] {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
    let bad = Command::new(bin).args(["--generate", "nope", "--out"]).arg(&dir).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown generator"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn engine_rank_functions_and_hitmap_budget_are_reported() {
    let params = GeneratorParams {
        keys: 5_000,
        theta: 0.99,
        requests: 60_000,
        seed: 4,
        tenants: 1,
        key_scale: 0.001,
    };
    let source = source::generator("catalyst", &params).unwrap();
    let settings = Settings {
        policies: PolicySpec::parse_list("fridge,fridge-lru,fridge@0,fridge-slru@64").unwrap(),
        sizes: vec![SizeSpec::Fraction(0.05)],
        ops: OpsMode::Trace,
        hitmap_bits: 16,
        ..Settings::default()
    };
    let r = simulate(&source, &settings, &mut Progress::hidden()).unwrap();
    let size = r.rows[0].cache_bytes;
    let mean = r.profile.working_set_bytes / r.profile.objects;
    for (policy, rank, bits) in [
        ("fridge", "hitmap", 16),
        ("fridge-lru", "lru", 16),
        ("fridge@0", "hitmap", 0),
        ("fridge-slru@64", "slru", 64),
    ] {
        let e = row(&r, policy, size).engine.as_ref().unwrap();
        let m = &e.metadata;
        assert_eq!((e.rank.as_str(), m.bits_per_item), (rank, bits), "{policy}");
        // The capacity breakdown accounts for every segment that is not retired, and the
        // live items' bytes lie in what the segments hold.
        let c = &e.capacity;
        let placed = c.free_segments + c.open_segments + c.small_segments + c.main_segments;
        assert!(placed <= c.segments && placed + 4 >= c.segments, "{policy}: {c:?}");
        assert!(c.open_segments >= 1, "{policy}: a writer's head is open: {c:?}");
        let open_used = c.open_segments * e.segment_size - c.open_unused_bytes;
        let written = (c.small_used_bytes + c.main_used_bytes + open_used) as u64;
        assert!(written - c.dead_bytes as u64 >= e.item_bytes, "{policy}: {c:?} {e:?}");
        assert_eq!(m.pools_dropped, 0);
        if bits == 0 {
            assert_eq!(m.applied, 0, "{policy}: no metadata takes the digests");
            assert_eq!((m.hitmap_bytes, m.compactions, m.sized_for_items), (0, 0, 0));
        } else {
            assert_eq!(m.digests, m.applied, "{policy}: inline, every digest applied");
            assert_eq!(m.sized_for_items, fridge_sim::fridge::hitmap_items(size, mean));
            assert!(m.hitmap_bytes > 0 && m.bits_per_resident_item > 0.0, "{m:?}");
            assert_eq!(m.zones.len(), 5, "zones 0-4 (zone 0: the zombies)");
        }
    }
    let csv = report::csv(&r);
    assert!(csv.lines().next().unwrap().ends_with("engine_sealed_unused_bytes,engine_dead_bytes"));
    let md = report::markdown(&r);
    assert!(md.contains("| fridge-lru: hitmap |"), "{md}");
}

#[test]
fn a_delete_in_a_trace_makes_the_next_get_miss_for_every_policy() {
    // SET, GET (a hit), DELETE, GET (a miss), in trace mode: the engine and the reference
    // policies alike.
    let dir = std::env::temp_dir().join(format!("fridge-sim-delete-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("delete.csv");
    let mut w = fridge_workload::trace::CsvWriter::create(&path).unwrap();
    for (time_ms, op) in [(0, Op::Set), (1, Op::Get), (2, Op::Delete), (3, Op::Get)] {
        w.write(&Request { time_ms, op, ..Request::get(7, 100) }).unwrap();
    }
    w.finish().unwrap();
    let format = Some(fridge_workload::trace::CsvFormat::fridge());
    let source = source::trace(path, "csv", format, KeyFormat::Integer, None).unwrap();
    let settings = Settings {
        policies: ["fridge", "lru", "s3fifo", "sieve"]
            .map(|p| PolicySpec::parse(p).unwrap())
            .into(),
        sizes: vec![SizeSpec::Bytes(1 << 20)],
        ops: OpsMode::Trace,
        ..Settings::default()
    };
    let r = simulate(&source, &settings, &mut Progress::hidden()).unwrap();
    for x in &r.rows {
        assert_eq!((x.requests, x.hits), (2, 1), "{}", x.policy);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
