//! Round trips through temporary files, and the shared sample traces.
//!
//! The sample traces live outside the repository, in `../shared/traces/` next to it; tests
//! that need them print a skip message and pass when that folder is absent.

use std::fs::File;
use std::io::{BufReader, Cursor};
use std::path::{Path, PathBuf};

use super::*;
use crate::error::Error;
use crate::mix::TenantMix;
use crate::request::Op;
use crate::size::SizeDist;
use crate::twitter::twitter_mix;
use crate::workload::Workload;

/// A file path in the system temp dir, unique to this process and test; removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> Self {
        Self(std::env::temp_dir().join(format!("fridge-workload-{}-{name}", std::process::id())))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `shared/traces/<rel>`. Tests that read it are `#[ignore]`d (the traces live outside the
/// repository); run them with `--ignored` where they are.
fn shared_trace(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces").join(rel);
    assert!(path.exists(), "{} not found: this test needs ../shared/traces", path.display());
    path
}

fn collect<I: Iterator<Item = Result<Request, Error>>>(it: I) -> Vec<Request> {
    it.collect::<Result<_, _>>().unwrap()
}

#[test]
fn oracle_round_trip_with_next_access() {
    let reqs: Vec<Request> =
        Workload::facebook_etc(2_000, 1.0, 1).requests().unwrap().take(5_000).collect();
    let file = TempPath::new("round-trip.oracleGeneral.bin");
    let written = write_oracle_general(File::create(&file.0).unwrap(), &reqs).unwrap();
    assert_eq!(written, 5_000);
    assert_eq!(std::fs::metadata(&file.0).unwrap().len(), 5_000 * 24);

    let mut expected = reqs.clone();
    annotate_next_access(&mut expected);
    let back = collect(OracleReader::open(&file.0).unwrap());
    assert_eq!(back.len(), expected.len());
    for (b, e) in back.iter().zip(&expected) {
        assert_eq!(b.key, e.key);
        assert_eq!(b.time_ms, e.time_ms / 1000 * 1000);
        assert_eq!(u64::from(b.value_size), e.object_size());
        assert_eq!(b.next_access, e.next_access);
    }
    // Some keys recur and the last request of each key has none.
    assert!(back.iter().any(|r| r.next_access.is_some()));
    assert!(back.last().unwrap().next_access.is_none());
    // A next access always points forward to the same key.
    for (i, r) in back.iter().enumerate() {
        if let Some(n) = r.next_access {
            assert!(n as usize > i);
            assert_eq!(back[n as usize].key, r.key);
        }
    }
}

#[test]
fn oracle_writer_rejects_unrepresentable_records() {
    let mut w = OracleWriter::new(Vec::new());
    let huge = Request { time_ms: u64::from(u32::MAX) * 1000 + 1000, ..Request::get(1, 1) };
    assert!(matches!(w.write(&huge), Err(Error::Parse { record: 1, .. })));
    let big = Request { key_size: u32::MAX, ..Request::get(1, 1) };
    assert!(w.write(&big).is_err());
}

#[test]
fn oracle_reader_reports_truncation_then_stops() {
    let mut bytes = Vec::new();
    let mut w = OracleWriter::new(&mut bytes);
    w.write(&Request::get(7, 100)).unwrap();
    w.finish().unwrap();
    bytes.extend_from_slice(&[1, 2, 3]);
    let mut r = OracleReader::new(Cursor::new(bytes));
    assert_eq!(r.next().unwrap().unwrap().key, 7);
    assert!(matches!(r.next(), Some(Err(Error::Parse { record: 2, .. }))));
    assert!(r.next().is_none());

    let mut bad = vec![0u8; 24];
    bad[16..].copy_from_slice(&(-5i64).to_le_bytes());
    let mut r = OracleReader::new(Cursor::new(bad));
    assert!(matches!(r.next(), Some(Err(Error::Parse { .. }))));
}

#[test]
fn csv_round_trip_is_exact() {
    let mix: TenantMix = twitter_mix(6, 1e-4, 3).unwrap();
    let mut reqs: Vec<Request> = mix.requests().unwrap().take(5_000).collect();
    annotate_next_access(&mut reqs);
    assert!(reqs.iter().any(|r| r.ttl_s.is_some()) && reqs.iter().any(|r| r.tenant == 5));

    let file = TempPath::new("round-trip.csv");
    let mut w = CsvWriter::create(&file.0).unwrap();
    for r in &reqs {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    let back = collect(CsvReader::open(&file.0, CsvFormat::fridge()).unwrap());
    assert_eq!(back, reqs);
}

#[test]
fn twitter_csv_format() {
    let text = "0,nz:u:eeW511W3dcH3de3d15ec,24,301,12,get,0\n\
                1,nz:u:eeW511W3dcH3de3d15ec,24,301,12,set,3600\n\
                \n\
                2,nz:u:other,24,17,3,gets,0\r\n";
    let reqs = collect(CsvReader::new(Cursor::new(text), CsvFormat::twitter()).unwrap());
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].key, reqs[1].key);
    assert_ne!(reqs[0].key, reqs[2].key);
    assert_eq!((reqs[0].key_size, reqs[0].value_size, reqs[0].op), (24, 301, Op::Get));
    assert_eq!((reqs[1].time_ms, reqs[1].op, reqs[1].ttl_s), (1_000, Op::Set, Some(3_600)));
    assert_eq!((reqs[2].op, reqs[2].ttl_s), (Op::Gets, None));
}

#[test]
fn csv_errors_name_the_line() {
    let fmt = CsvFormat::twitter();
    let mut r = CsvReader::new(Cursor::new("0,k,1,2,3,get,0\n1,k,1,2,3,explode,0\n"), fmt).unwrap();
    assert!(r.next().unwrap().is_ok());
    match r.next() {
        Some(Err(Error::Parse { record: 2, reason })) => assert!(reason.contains("explode")),
        other => panic!("{other:?}"),
    }
    assert!(r.next().is_none());

    let short = CsvReader::new(Cursor::new("0,k,1\n"), CsvFormat::twitter()).unwrap();
    assert!(collect_err(short).contains("missing"));
    let bad_time = CsvReader::new(Cursor::new("x,k,1,2,3,get,0\n"), CsvFormat::twitter()).unwrap();
    assert!(collect_err(bad_time).contains("time"));
    let header = Cursor::new("a,b\n1,2\n");
    assert!(CsvReader::new(header, CsvFormat::with_key("lbn", KeyFormat::Integer)).is_err());
    let unnamed = CsvFormat { header: false, ..CsvFormat::with_key("lbn", KeyFormat::Integer) };
    assert!(matches!(CsvReader::new(Cursor::new(""), unnamed), Err(Error::Config(_))));
}

fn collect_err<I: Iterator<Item = Result<Request, Error>>>(mut it: I) -> String {
    match it.next() {
        Some(Err(e)) => e.to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn key_only_reader_decodes_both_widths() {
    let bytes: Vec<u8> = [1i32, -1, 0x7800_0005].iter().flat_map(|k| k.to_be_bytes()).collect();
    let sizes = SizeModel { seed: 5, ..SizeModel::fixed(8, 0) };
    let sizes = SizeModel { value_size: SizeDist::thesis_mix(), ..sizes };
    let reqs = collect(KeyOnlyReader::new(Cursor::new(bytes), KeyWidth::I32, sizes.clone()));
    let keys: Vec<u64> = reqs.iter().map(|r| r.key).collect();
    assert_eq!(keys, [1, 0xFFFF_FFFF, 0x7800_0005]);
    assert!(reqs.iter().all(|r| r.key_size == 8 && r.op == Op::Get));

    let bytes: Vec<u8> = [1i64, 1, -2].iter().flat_map(|k| k.to_be_bytes()).collect();
    let reqs = collect(KeyOnlyReader::new(Cursor::new(bytes), KeyWidth::I64, sizes));
    assert_eq!(reqs[2].key, u64::MAX - 1);
    assert_eq!(reqs[0].value_size, reqs[1].value_size, "same key, same size");

    let mut r =
        KeyOnlyReader::new(Cursor::new(vec![0u8; 6]), KeyWidth::I32, SizeModel::fixed(1, 1));
    assert!(r.next().unwrap().is_ok());
    assert!(matches!(r.next(), Some(Err(Error::Parse { record: 2, .. }))));
    assert!(r.next().is_none());
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn cloudphysics_oracle_general_totals() {
    let path = shared_trace("cloudphysics/cloudPhysicsIO.oracleGeneral.bin");
    let reqs = collect(OracleReader::open(path).unwrap());
    assert_eq!(reqs.len(), 113_872);
    let bytes: u64 = reqs.iter().map(|r| u64::from(r.value_size)).sum();
    assert_eq!(bytes, 4_368_040_448);
    // The file's next-access column agrees with the one computed from its own keys.
    let mut recomputed = reqs.clone();
    annotate_next_access(&mut recomputed);
    assert_eq!(recomputed, reqs);
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn cloudphysics_csv_agrees_with_oracle_general() {
    let (csv, bin) = (
        shared_trace("cloudphysics/cloudPhysicsIO.csv"),
        shared_trace("cloudphysics/cloudPhysicsIO.oracleGeneral.bin"),
    );
    let from_csv = collect(CsvReader::open(csv, CsvFormat::cloudphysics()).unwrap());
    let from_bin = collect(OracleReader::open(bin).unwrap());
    assert_eq!(from_csv.len(), 113_872);
    assert_eq!(from_csv.len(), from_bin.len());
    // Same requests in the same order: keys and times match (sizes are counted differently).
    for (c, b) in from_csv.iter().zip(&from_bin) {
        assert_eq!((c.key, c.time_ms), (b.key, b.time_ms));
    }
    assert!(from_csv.iter().any(|r| r.op == Op::Set) && from_csv.iter().any(|r| r.op == Op::Get));
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn xz_key_only_traces_read() {
    let traces = [
        ("cache2k/orm-busy.trace.xz", KeyWidth::I32),
        ("cache2k/web07.trace.xz", KeyWidth::I32),
        ("scarab/scarab-recs.trace.xz", KeyWidth::I64),
    ];
    for (rel, width) in traces {
        let path = shared_trace(rel);
        let sizes = SizeModel::fixed(16, 100);
        let reader = KeyOnlyReader::open_xz(&path, width, sizes).unwrap();
        let reqs = collect(reader.take(5_000));
        assert_eq!(reqs.len(), 5_000, "{rel}");
        let distinct: std::collections::HashSet<u64> = reqs.iter().map(|r| r.key).collect();
        assert!(distinct.len() > 10, "{rel}: {} distinct keys", distinct.len());
        assert!(reqs.iter().all(|r| r.value_size == 100 && r.key_size == 16));
    }
}

#[test]
#[ignore = "reads ../shared/traces: scripts/test runs it with --ignored when they are present"]
fn scarab_has_the_documented_request_count() {
    let path = shared_trace("scarab/scarab-recs.trace.xz");
    let reader = KeyOnlyReader::open_xz(path, KeyWidth::I64, SizeModel::fixed(8, 8)).unwrap();
    let mut count = 0u64;
    for r in reader {
        r.unwrap();
        count += 1;
    }
    assert_eq!(count, 1_245_184);
}

#[test]
fn corrupt_xz_is_an_error_not_a_panic() {
    let file = TempPath::new("corrupt.xz");
    std::fs::write(&file.0, b"\xFD7zXZ\0garbage that is not xz").unwrap();
    let mut r = KeyOnlyReader::open_xz(&file.0, KeyWidth::I64, SizeModel::fixed(1, 1)).unwrap();
    assert!(matches!(r.next(), Some(Err(Error::Io(_)))));
    assert!(r.next().is_none());
    // Uncompressed input through the plain constructor works with any `Read`.
    let plain = BufReader::new(Cursor::new(42i64.to_be_bytes()));
    let reqs = collect(KeyOnlyReader::new(plain, KeyWidth::I64, SizeModel::fixed(1, 1)));
    assert_eq!(reqs[0].key, 42);
}

/// `plain` compressed as `c` would be written by its usual tool.
fn compress(plain: &[u8], c: Compression) -> Vec<u8> {
    use std::io::Write;
    match c {
        Compression::None => plain.to_vec(),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
        Compression::Zstd => zstd::encode_all(plain, 3).unwrap(),
        Compression::Xz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
    }
}

#[test]
fn every_format_reads_compressed_by_its_extension() {
    let requests: Vec<Request> =
        (0..500u64).map(|i| Request::get(i % 37, 100 + i as u32)).collect();
    let mut oracle = Vec::new();
    write_oracle_general(&mut oracle, &requests).unwrap();
    let txt: String = requests.iter().map(|r| format!("{}\n", r.key)).collect();
    for (c, ext) in [
        (Compression::None, ""),
        (Compression::Gzip, ".gz"),
        (Compression::Zstd, ".zst"),
        (Compression::Xz, ".xz"),
    ] {
        let packed = compress(&oracle, c);
        assert_eq!(Compression::sniff(&packed), c, "{ext}: magic number");
        let path = TempPath::new(&format!("c.oracleGeneral.bin{ext}"));
        std::fs::write(&path.0, &packed).unwrap();
        assert_eq!(Compression::from_path(&path.0), c);
        assert_eq!(inner_extension(&path.0), "bin", "{ext}");
        let got: Vec<Request> = Format::Oracle.open(&path.0).unwrap().map(Result::unwrap).collect();
        assert_eq!(got.len(), requests.len(), "{ext}");
        assert!(
            got.iter().zip(&requests).all(|(a, b)| (a.key, a.value_size) == (b.key, b.value_size))
        );
        // Two concatenated frames/members/streams read as one trace, as their tools do.
        let mut twice = packed.clone();
        twice.extend_from_slice(&compress(&oracle, c));
        std::fs::write(&path.0, &twice).unwrap();
        assert_eq!(Format::Oracle.open(&path.0).unwrap().count(), 2 * requests.len(), "{ext}");

        let path = TempPath::new(&format!("c.txt{ext}"));
        std::fs::write(&path.0, compress(txt.as_bytes(), c)).unwrap();
        let keys: Vec<u64> = Format::Txt(KeyFormat::Integer, None)
            .open(&path.0)
            .unwrap()
            .map(|r| r.unwrap().key)
            .collect();
        assert_eq!(keys, requests.iter().map(|r| r.key).collect::<Vec<_>>(), "txt{ext}");
    }
    assert_eq!(Compression::sniff(b"1\n2\n"), Compression::None);
    assert_eq!(inner_extension(Path::new("w.trace.XZ")), "trace");
    assert_eq!(inner_extension(Path::new("noext")), "");
}
