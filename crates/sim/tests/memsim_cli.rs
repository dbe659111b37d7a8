//! `fridge-memsim` from the command line: a short run per eviction prints the model's table
//! (the two evictions keep different items in 1 MiB, so their engine hit ratios differ), and
//! an unknown eviction is refused.

use std::process::Command;

fn memsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fridge-memsim")).args(args).output().expect("runs")
}

#[test]
fn each_eviction_runs_and_reports_its_gets() {
    let base = [
        "--generate",
        "facebook-etc",
        "--keys",
        "20000",
        "--requests",
        "100000",
        "--memory",
        "1MiB",
        "--memory-model",
        "cpu",
    ];
    let mut rows = Vec::new();
    for eviction in ["queues", "memshare"] {
        let out = memsim(&[&base[..], &["--eviction", eviction]].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{eviction}: {}", String::from_utf8_lossy(&out.stderr));
        let all = stdout.lines().find(|l| l.starts_with("| cpu | all |"));
        let all = all.unwrap_or_else(|| panic!("{eviction}: no summary row in\n{stdout}"));
        rows.push(all.to_owned());
    }
    assert_ne!(rows[0], rows[1], "--eviction changes what the engine keeps");
    let out = memsim(&[&base[..], &["--eviction", "lru"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--eviction"));
}
