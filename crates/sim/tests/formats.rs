//! The command line on small generated traces in every input form: compressed oracleGeneral,
//! standard input, libCacheSim's txt and its CSV parameters, and inputs with no requests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fridge_workload::Request;
use fridge_workload::trace::write_oracle_general;

/// A directory unique to this process and test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("fridge-sim-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// 3000 requests over 200 keys, sizes 100..=300 bytes, fixed per key.
fn requests() -> Vec<Request> {
    (0..3000u64)
        .map(|i| {
            let key = (i * 7919 + i / 3) % 200;
            Request::get(key, 100 + (key % 201) as u32)
        })
        .collect()
}

fn oracle_bytes() -> Vec<u8> {
    let mut out = Vec::new();
    write_oracle_general(&mut out, &requests()).unwrap();
    out
}

/// Runs the simulator with `args`, `--out dir/name`, feeding `stdin`.
fn sim(args: &[&str], dir: &Path, name: &str, stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fridge-sim"));
    cmd.args(args)
        .args(["--progress", "never", "--no-plots", "--out"])
        .arg(dir.join(name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A reader that has all it needs (a compressed stream's last frame) may close its end
    // before the writer is done: the result is checked below, not the write.
    match pipe.write_all(stdin.unwrap_or_default()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The rows of `dir/name/results.json`, as (policy, cache_bytes, hits, requests).
fn rows(dir: &Path, name: &str) -> Vec<(String, u64, u64, u64)> {
    let text = std::fs::read_to_string(dir.join(name).join("results.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["policy"].as_str().unwrap().to_owned(),
                r["cache_bytes"].as_u64().unwrap(),
                r["hits"].as_u64().unwrap(),
                r["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

const RUN: [&str; 4] = ["--policies", "lru,fifo,sieve", "--sizes", "8KiB,20KiB"];

#[test]
fn compressed_and_piped_oracle_traces_give_the_plain_file_results() {
    let dir = TempDir::new("oracle");
    let plain = dir.0.join("t.oracleGeneral.bin");
    std::fs::write(&plain, oracle_bytes()).unwrap();
    let packed = dir.0.join("t.oracleGeneral.bin.zst");
    std::fs::write(&packed, zstd::encode_all(&oracle_bytes()[..], 3).unwrap()).unwrap();

    ok(&sim(&[&["--trace", plain.to_str().unwrap()][..], &RUN].concat(), &dir.0, "plain", None));
    let want = rows(&dir.0, "plain");
    assert_eq!(want.len(), 6);
    assert!(want.iter().all(|r| r.3 == 3000), "{want:?}");

    ok(&sim(&[&["--trace", packed.to_str().unwrap()][..], &RUN].concat(), &dir.0, "zst", None));
    assert_eq!(rows(&dir.0, "zst"), want, ".zst by its extension");

    let args = [&["--trace", "-", "--format", "oracle"][..], &RUN].concat();
    ok(&sim(&args, &dir.0, "stdin", Some(&oracle_bytes())));
    assert_eq!(rows(&dir.0, "stdin"), want, "plain standard input");
    let zst = std::fs::read(&packed).unwrap();
    ok(&sim(&args, &dir.0, "stdin-zst", Some(&zst)));
    assert_eq!(rows(&dir.0, "stdin-zst"), want, "compressed standard input, by magic number");

    let out = sim(&["--trace", "-", "--policies", "lru"], &dir.0, "noformat", Some(&zst));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --format"));
}

#[test]
fn inputs_without_requests_are_errors() {
    let dir = TempDir::new("empty");
    let args = [&["--trace", "-", "--format", "oracle"][..], &RUN].concat();
    let out = sim(&args, &dir.0, "stdin", Some(b""));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no requests") && err.contains("standard input"), "{err}");
    assert!(!dir.0.join("stdin").join("results.csv").exists(), "no report for nothing");

    let empty = dir.0.join("e.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let out = sim(&[&["--trace", empty.to_str().unwrap()][..], &RUN].concat(), &dir.0, "f", None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no requests"));
}

#[test]
fn txt_and_libcachesim_csv_parameters_read_the_same_requests() {
    let dir = TempDir::new("text");
    let reqs = requests();
    // txt: ids only, 1-byte objects, as libCacheSim reads them.
    let txt = dir.0.join("t.txt");
    std::fs::write(&txt, reqs.iter().map(|r| format!("{}\n", r.key)).collect::<String>()).unwrap();
    let lru = ["--policies", "lru", "--sizes", "50"];
    ok(&sim(&[&["--trace", txt.to_str().unwrap()][..], &lru].concat(), &dir.0, "txt", None));
    let got = rows(&dir.0, "txt");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].3, 3000);
    // With 1-byte objects, 50 bytes hold 50 objects: the same as sizes given in a CSV where
    // every object is 1 byte.
    let csv = dir.0.join("t.csv");
    let body: String =
        reqs.iter().enumerate().map(|(i, r)| format!("{i};x;{};1\n", r.key)).collect();
    std::fs::write(&csv, format!("time;name;id;size\n{body}")).unwrap();
    let params =
        "time-col=1,obj-id-col=3,obj-size-col=4,has-header=true,delimiter=;,obj-id-is-num=1";
    let args = [&["--trace", csv.to_str().unwrap(), "-t", params][..], &lru].concat();
    ok(&sim(&args, &dir.0, "csv", None));
    assert_eq!(rows(&dir.0, "csv"), got);
    // The same with --csv-columns (0-based) names the same layout.
    let args = [
        &[
            "--trace",
            csv.to_str().unwrap(),
            "--csv-columns",
            "key=2,value_size=3,time=0",
            "--csv-delimiter",
            ";",
        ][..],
        &lru,
    ]
    .concat();
    ok(&sim(&args, &dir.0, "cols", None));
    assert_eq!(rows(&dir.0, "cols"), got);
    // `delimiter=,` is written `delimiter=,,` inside the list, as in libCacheSim.
    let comma = dir.0.join("c.csv");
    let body: String = reqs.iter().map(|r| format!("{},1\n", r.key)).collect();
    std::fs::write(&comma, body).unwrap();
    let params = "obj-id-col=1,delimiter=,,obj-size-col=2,has-header=0";
    let args = [&["--trace", comma.to_str().unwrap(), "-t", params][..], &lru].concat();
    ok(&sim(&args, &dir.0, "comma", None));
    assert_eq!(rows(&dir.0, "comma"), got);
}
