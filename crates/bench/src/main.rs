//! `fridge-bench`: see the library docs and `fridge-bench --help`.

#![forbid(unsafe_code)]

use clap::Parser;
use fridge_bench::cli::{Cli, Cmd};

fn main() {
    let cli = Cli::parse();
    let code = match &cli.command {
        Some(Cmd::Report(args)) => match fridge_bench::compare::main(args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("fridge-bench report: {e}");
                2
            }
        },
        None => bench(&cli.run),
    };
    std::process::exit(code);
}

/// Runs a benchmark; exit status 1 when a value failed verification or requests went
/// unanswered, 2 on a setup error.
fn bench(args: &fridge_bench::cli::RunArgs) -> i32 {
    let result = args.config().and_then(|cfg| fridge_bench::run::run(&cfg));
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            eprintln!("fridge-bench: {e}");
            return 2;
        }
    };
    print!("{}", report.text());
    let outputs = [
        (&args.json, serde_json::to_string_pretty(&report).unwrap_or_default()),
        (&args.csv, report.csv()),
    ];
    for (path, text) in outputs {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("fridge-bench: {}: {e}", path.display());
                return 2;
            }
        }
    }
    let bad = report.phases.iter().any(|p| p.counts.verify_failures > 0 || p.counts.unanswered > 0);
    i32::from(bad)
}
