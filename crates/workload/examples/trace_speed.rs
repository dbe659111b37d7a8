//! Times the trace readers and the generators on the shared sample traces.
//!
//! `cargo run --release -p fridge-workload --example trace_speed [TRACES_DIR]`
//! (default: `../shared/traces` next to the repository).

use std::path::{Path, PathBuf};
use std::time::Instant;

use fridge_workload::trace::{
    CsvFormat, CsvReader, KeyOnlyReader, KeyWidth, OracleReader, SizeModel,
};
use fridge_workload::{Error, Request, SizeDist, Workload, twitter_mix};

/// Drains a reader; returns (requests, value bytes).
fn drain(reader: impl Iterator<Item = Result<Request, Error>>) -> Result<(u64, u64), Error> {
    let (mut n, mut bytes) = (0, 0);
    for r in reader {
        n += 1;
        bytes += u64::from(r?.value_size);
    }
    Ok((n, bytes))
}

fn timed(name: &str, f: impl FnOnce() -> Result<(u64, u64), Error>) {
    let start = Instant::now();
    match f() {
        Ok((n, bytes)) => {
            let secs = start.elapsed().as_secs_f64();
            let rate = n as f64 / secs / 1e6;
            println!(
                "{name:<32} {n:>10} requests {bytes:>14} bytes {secs:>8.3} s {rate:>7.1} M req/s"
            );
        }
        Err(e) => println!("{name:<32} error: {e}"),
    }
}

fn main() {
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    let dir = std::env::args().nth(1).map_or(default, PathBuf::from);
    if !dir.exists() {
        eprintln!("SKIP: {} not found", dir.display());
        return;
    }
    let sizes = SizeModel { value_size: SizeDist::facebook_etc_value(), ..SizeModel::fixed(16, 0) };
    timed("scarab (xz, i64 keys)", || {
        let path = dir.join("scarab/scarab-recs.trace.xz");
        drain(KeyOnlyReader::open_xz(path, KeyWidth::I64, sizes.clone())?)
    });
    timed("cache2k orm-busy (xz, i32 keys)", || {
        let path = dir.join("cache2k/orm-busy.trace.xz");
        drain(KeyOnlyReader::open_xz(path, KeyWidth::I32, sizes.clone())?)
    });
    timed("cloudphysics oracleGeneral", || {
        drain(OracleReader::open(dir.join("cloudphysics/cloudPhysicsIO.oracleGeneral.bin"))?)
    });
    timed("cloudphysics csv", || {
        let path = dir.join("cloudphysics/cloudPhysicsIO.csv");
        drain(CsvReader::open(path, CsvFormat::cloudphysics())?)
    });
    timed("generate facebook_etc (1e9 keys)", || {
        let reqs = Workload::facebook_etc(1_000_000_000, 0.99, 1).requests()?.take(2_000_000);
        drain(reqs.map(Ok))
    });
    timed("generate twitter_mix (12 tenants)", || {
        drain(twitter_mix(12, 0.01, 1)?.requests()?.take(2_000_000).map(Ok))
    });
}
