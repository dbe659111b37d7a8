//! `fridge`: parses the configuration, starts the server, and shuts it down gracefully on
//! SIGTERM or SIGINT.

use clap::Parser;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() {
    let config = match fridge_server::Cli::parse().into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fridge: {e}");
            std::process::exit(2);
        }
    };
    let server = match fridge_server::Server::start(config.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fridge: cannot start: {e}");
            std::process::exit(1);
        }
    };
    let mut signals = match Signals::new([SIGTERM, SIGINT]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fridge: cannot install signal handlers: {e}");
            std::process::exit(1);
        }
    };
    let handle = server.shutdown_handle();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            handle.shutdown();
        }
    });
    let resp = server.resp_addr().map(|a| format!(", RESP only on {a}")).unwrap_or_default();
    eprintln!(
        "fridge {}: serving memcached and RESP on {}{resp}; {} of memory, {} workers",
        env!("CARGO_PKG_VERSION"),
        server.local_addr(),
        config.memory,
        config.worker_count(),
    );
    server.wait();
}
