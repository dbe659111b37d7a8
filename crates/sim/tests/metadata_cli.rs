//! `fridge-sim --metadata`: `auto` runs anywhere and says where the hitmap went; `gpu` runs
//! where a GPU is usable and otherwise fails before reading its input, naming why; the
//! results with a GPU equal the CPU's (checked where one is present).

use std::process::Command;

fn sim(out: &std::path::Path, metadata: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fridge-sim"))
        .args(["--generate", "zipf", "--keys", "2000", "--requests", "20000"])
        .args(["--fractions", "0.1,0.5", "--policies", "fridge", "--no-plots", "--jobs", "1"])
        .args(["--metadata", metadata, "--out"])
        .arg(out)
        .output()
        .expect("runs")
}

fn miss_ratios(dir: &std::path::Path) -> String {
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    csv.lines().map(|l| l.split(',').take(12).collect::<Vec<_>>().join(",") + "\n").collect()
}

#[test]
fn auto_runs_anywhere_and_gpu_fails_clearly_without_one() {
    let dir = std::env::temp_dir().join(format!("fridge-sim-metadata-{}", std::process::id()));
    let auto = sim(&dir.join("auto"), "auto");
    let said = String::from_utf8_lossy(&auto.stderr).into_owned();
    assert!(auto.status.success(), "{said}");
    let gpu = sim(&dir.join("gpu"), "gpu");
    let cpu = sim(&dir.join("cpu"), "cpu");
    assert!(cpu.status.success());
    if said.contains("hitmap in host memory: ") {
        let err = String::from_utf8_lossy(&gpu.stderr);
        assert!(!gpu.status.success(), "no GPU here, yet --metadata gpu ran");
        assert!(err.contains("--metadata: no GPU hitmap: "), "{err}");
        assert!(!dir.join("gpu").join("results.csv").exists(), "nothing was run");
    } else {
        assert!(said.contains("hitmap on gpu: "), "{said}");
        assert!(gpu.status.success());
        assert_eq!(miss_ratios(&dir.join("gpu")), miss_ratios(&dir.join("cpu")));
    }
    assert_eq!(miss_ratios(&dir.join("auto")), miss_ratios(&dir.join("cpu")));
    let _ = std::fs::remove_dir_all(&dir);
}
