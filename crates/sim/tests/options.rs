//! The sweep's options on small generated traces: parallel jobs, size change on hit, capacity
//! in objects, and miss ratio over time.

use std::path::PathBuf;

use fridge_sim::progress::Progress;
use fridge_sim::report;
use fridge_sim::source::{self, GeneratorParams, Source};
use fridge_sim::sweep::{
    CapacityUnit, PolicySpec, Report, Settings, SizeChange, SizeSpec, simulate,
};
use fridge_workload::Request;
use fridge_workload::trace::{KeyFormat, write_oracle_general};

/// An oracleGeneral file in the temp dir, removed on drop.
struct TempTrace(PathBuf);

impl TempTrace {
    fn new(name: &str, requests: &[Request]) -> Self {
        let path = std::env::temp_dir()
            .join(format!("fridge-sim-options-{}-{name}.oracleGeneral.bin", std::process::id()));
        write_oracle_general(std::fs::File::create(&path).unwrap(), requests).unwrap();
        Self(path)
    }

    fn source(&self) -> Source {
        source::trace(self.0.clone(), "oracle", None, KeyFormat::Integer, None).unwrap()
    }
}

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn settings(policies: &str, sizes: Vec<SizeSpec>) -> Settings {
    Settings { policies: PolicySpec::parse_list(policies).unwrap(), sizes, ..Settings::default() }
}

fn run(source: &Source, s: &Settings) -> Report {
    simulate(source, s, &mut Progress::hidden()).unwrap()
}

fn zipf(requests: u64, keys: u64) -> Source {
    let params =
        GeneratorParams { keys, theta: 0.99, requests, seed: 3, tenants: 1, key_scale: 0.001 };
    source::generator("facebook-etc", &params).unwrap()
}

#[test]
fn results_are_identical_for_any_number_of_jobs() {
    let source = zipf(20_000, 4_000);
    let base = Settings {
        report_interval: Some(3_000),
        ..settings(
            "all,partitioned-lru,fridge-lru",
            vec![SizeSpec::Fraction(0.02), SizeSpec::Fraction(0.1), SizeSpec::Fraction(0.4)],
        )
    };
    let one = run(&source, &Settings { jobs: 1, ..base.clone() });
    assert!(one.rows.len() >= 30, "{:?}", one.notes);
    for jobs in [2, 3, 8, 64] {
        let many = run(&source, &Settings { jobs, ..base.clone() });
        assert_eq!(report::csv(&one), report::csv(&many), "results.csv, {jobs} jobs");
        assert_eq!(report::json(&one).unwrap(), report::json(&many).unwrap(), "{jobs} jobs");
        assert_eq!(report::timeline_csv(&one), report::timeline_csv(&many), "{jobs} jobs");
        assert_eq!(one.notes, many.notes);
    }
}

#[test]
fn size_change_on_hit_updates_or_keeps_the_stored_size() {
    // LRU of 100 bytes: 1, 2, 3 at 30 bytes fill 90. Key 1 comes back at 60 bytes (a hit).
    // update: 1 now takes 60, 120 > 100, so 2 (oldest) is evicted and misses next.
    // keep:   1 keeps 30 bytes, nothing is evicted, and 2 hits.
    let reqs: Vec<Request> =
        [(1, 30), (2, 30), (3, 30), (1, 60), (2, 30)].map(|(k, s)| Request::get(k, s)).to_vec();
    let trace = TempTrace::new("size-change", &reqs);
    let lru = |change| {
        let s = Settings { size_change: change, ..settings("lru", vec![SizeSpec::Bytes(100)]) };
        let r = run(&trace.source(), &s);
        (r.rows[0].hits, r.rows[0].bytes_hit)
    };
    // Byte counts use the request's size, as libCacheSim's byte miss ratio does.
    assert_eq!(lru(SizeChange::Update), (1, 60), "only 1 hits");
    assert_eq!(lru(SizeChange::Keep), (2, 90), "1 and 2 hit");
    assert_eq!(Settings::default().size_change, SizeChange::Update, "the default is unchanged");
}

#[test]
fn capacity_in_objects_ignores_sizes_for_reference_policies() {
    // Sizes vary from 10 to 1000 bytes; in objects, LRU of 50 objects must behave exactly as
    // LRU of 50 bytes over the same keys with every size 1.
    let keys: Vec<u64> = (0..4000u64).map(|i| (i * 7919 + i / 7) % 300).collect();
    let sized: Vec<Request> =
        keys.iter().map(|&k| Request::get(k, 10 + (k * 37 % 991) as u32)).collect();
    let unit: Vec<Request> = keys.iter().map(|&k| Request::get(k, 1)).collect();
    let (sized, unit) = (TempTrace::new("sized", &sized), TempTrace::new("unit", &unit));
    let objects = Settings {
        capacity_unit: CapacityUnit::Objects,
        ..settings("lru,s3fifo,fridge", vec![SizeSpec::Bytes(50), SizeSpec::Fraction(0.5)])
    };
    let by_objects = run(&sized.source(), &objects);
    let by_bytes = run(
        &unit.source(),
        &settings("lru,s3fifo", vec![SizeSpec::Bytes(50), SizeSpec::Bytes(150)]),
    );
    for policy in ["lru", "s3fifo"] {
        for (n, bytes) in [(50, 50), (150, 150)] {
            let o =
                by_objects.rows.iter().find(|r| r.policy == policy && r.cache_objects == Some(n));
            let b = by_bytes.rows.iter().find(|r| r.policy == policy && r.cache_bytes == bytes);
            let (o, b) = (o.unwrap(), b.unwrap());
            assert_eq!(o.hits, b.hits, "{policy} at {n} objects");
            assert!(o.size_meaning.contains("objects"), "{}", o.size_meaning);
        }
    }
    // The engine gets objects x (mean object + record header) bytes, and says so.
    let p = &by_objects.profile;
    let mean = p.working_set_bytes / p.objects;
    let engine =
        by_objects.rows.iter().find(|r| r.policy == "fridge" && r.cache_objects == Some(150));
    let engine = engine.unwrap_or_else(|| panic!("{:?}", by_objects.notes));
    let item = mean.max(8) + fridge_sim::fridge::RECORD_HEADER;
    assert_eq!(engine.cache_bytes, 150 * item);
    let says = format!("engine max_memory = objects x {item} B (max(mean object {mean} B");
    assert!(engine.size_meaning.starts_with(&says), "{}", engine.size_meaning);
    assert!((engine.cache_fraction - 0.5).abs() < 1e-9);
}

#[test]
fn miss_ratio_over_time_adds_up_to_the_totals() {
    let source = zipf(10_000, 2_000);
    let s = Settings {
        report_interval: Some(3_000),
        ..settings("lru,fridge", vec![SizeSpec::Fraction(0.3)])
    };
    let r = run(&source, &s);
    for row in &r.rows {
        let points: Vec<_> = r.timeline.iter().filter(|p| p.policy == row.policy).collect();
        // 3000, 6000, 9000, then the last 1000.
        let lens: Vec<u64> = points.iter().map(|p| p.interval_requests).collect();
        assert_eq!(lens, [3000, 3000, 3000, 1000], "{}", row.policy);
        let last = points.last().unwrap();
        assert_eq!(last.requests, row.requests);
        assert!((last.cumulative_miss_ratio - row.miss_ratio).abs() < 1e-12);
        let misses: f64 =
            points.iter().map(|p| p.interval_miss_ratio * p.interval_requests as f64).sum();
        assert!((misses - (row.requests - row.hits) as f64).abs() < 1e-6);
    }
    let csv = report::timeline_csv(&r);
    assert_eq!(csv.lines().count(), 1 + 2 * 4);
    assert!(csv.starts_with("source,policy,cache_size,cache_unit,requests,"));
    let zero = Settings { report_interval: Some(0), ..s };
    assert!(simulate(&source, &zero, &mut Progress::hidden()).is_err());
}
