//! `fridge`: parses the configuration, starts the server, rereads its tenants on SIGHUP, and
//! shuts it down gracefully on SIGTERM or SIGINT. `fridge hash-password` prints a tenant's
//! password line instead.

#![forbid(unsafe_code)]

use std::io::BufRead;

use clap::Parser;
use fridge_server::{Cli, PasswordHash, Tool};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() {
    let mut cli = Cli::parse();
    if let Some(Tool::HashPassword { password }) = cli.command.take() {
        hash_password(password);
        return;
    }
    let config = match cli.into_config() {
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
    let mut signals = match Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fridge: cannot install signal handlers: {e}");
            std::process::exit(1);
        }
    };
    let handle = server.shutdown_handle();
    let reload = server.reload_handle();
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if signal == SIGHUP {
                match reload.reload() {
                    Ok(()) => eprintln!("fridge: SIGHUP: tenants reloaded"),
                    Err(e) => eprintln!("fridge: SIGHUP: reload failed, tenants unchanged: {e}"),
                }
            } else {
                handle.shutdown();
                break;
            }
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

/// `fridge hash-password [PASSWORD]`: prints `password_sha256 = "<salt>$<digest>"`.
fn hash_password(password: Option<String>) {
    let password = password.unwrap_or_else(|| {
        let mut line = String::new();
        if let Err(e) = std::io::stdin().lock().read_line(&mut line) {
            eprintln!("fridge: cannot read the password: {e}");
            std::process::exit(2);
        }
        line.trim_end_matches(['\r', '\n']).to_string()
    });
    if password.is_empty() || password.contains(' ') {
        // memcached's login sends `user password` separated by a space.
        eprintln!("fridge: a password must be non-empty and contain no spaces");
        std::process::exit(2);
    }
    match PasswordHash::generate(password.as_bytes()) {
        Ok(hash) => println!("password_sha256 = \"{hash}\""),
        Err(e) => {
            eprintln!("fridge: cannot draw a salt: {e}");
            std::process::exit(1);
        }
    }
}
