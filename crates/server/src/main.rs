//! `fridge`: parses the configuration, prepares the process as memcached does (open-files
//! limit, `-u`, binding, `-d`, `-P`; see `fridge_server::process`), starts the server, rereads
//! its tenants (and TLS certificates) on SIGHUP, and shuts it down gracefully on SIGTERM or SIGINT, telling systemd
//! each step when started by it (`fridge_server::systemd`: `READY=1` once serving,
//! `RELOADING=1` then `READY=1` around a SIGHUP, `STOPPING=1`). `--check-config` stops after
//! the checks. `fridge hash-password` prints a tenant's password line instead, `fridge ping`
//! asks a running server whether it answers.

#![forbid(unsafe_code)]

use std::io::BufRead;

use clap::Parser;
use fridge_server::process::{self, Failure, PidFile};
use fridge_server::systemd::Notifier;
use fridge_server::{Cli, Listeners, PasswordHash, PingTarget, Tool};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() {
    let mut cli = Cli::try_parse().unwrap_or_else(|e| {
        // A flag or value clap refuses is an invalid configuration too: 1 for --check-config.
        if e.use_stderr() && std::env::args_os().any(|a| a == "--check-config") {
            let _ = e.print();
            std::process::exit(1);
        }
        e.exit()
    });
    match cli.command.take() {
        Some(Tool::HashPassword { password }) => return hash_password(password),
        Some(Tool::Ping { host, port, unix_socket, resp, timeout }) => {
            let target = unix_socket.map_or(PingTarget::Tcp(host, port), PingTarget::Unix);
            return ping(&target, resp, timeout.duration());
        }
        None => {}
    }
    if cli.check_config {
        return check_config(cli);
    }
    let config = match cli.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fridge: {e}");
            std::process::exit(2);
        }
    };
    match config.log_filter() {
        Ok(level) => fridge_server::logging::init(config.log_format, level),
        Err(e) => {
            eprintln!("fridge: {e}");
            std::process::exit(2);
        }
    }
    let user = process::raise_open_files(&config)
        .and_then(|()| process::user_to_become(&config))
        .unwrap_or_else(|f| exit(f));
    let listeners = Listeners::bind(config.clone()).unwrap_or_else(|e| {
        exit(Failure { message: format!("cannot start: {e}"), status: process::EX_OSERR })
    });
    if config.daemon {
        process::daemonize(config.verbose > 0).unwrap_or_else(|f| exit(f));
    }
    if let Some(user) = &user {
        if let Err(e) = listeners.chown_unix_socket(user.uid.as_raw(), user.gid.as_raw()) {
            exit(Failure {
                message: format!("cannot give the unix socket to {}: {e}", user.name),
                status: process::EX_OSERR,
            });
        }
        process::become_user(user).unwrap_or_else(|f| exit(f));
    }
    let pidfile = config.pidfile.as_deref().and_then(PidFile::write);
    // The handlers go in before the server answers anyone: a SIGTERM sent once it answers
    // must shut it down (removing the pid file), not kill it by the default action.
    let mut signals = match Signals::new([SIGTERM, SIGINT, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            log::error!("fridge: cannot install signal handlers: {e}");
            std::process::exit(1);
        }
    };
    let server = match fridge_server::Server::serve(listeners) {
        Ok(s) => s,
        Err(e) => {
            log::error!("fridge: cannot start: {e}");
            std::process::exit(1);
        }
    };
    let handle = server.shutdown_handle();
    let reload = server.reload_handle();
    let notifier = Notifier::from_env();
    let on_signal = notifier.clone();
    // What a reload rereads (`Shared::reload`): the tenants from the configuration file, the
    // certificates, the cluster map.
    let reloaded = [
        (config.config_file.is_some(), "tenants"),
        (server.tls_addr().is_some() || config.enable_ssl, "certificates"),
        (config.cluster_config.is_some(), "cluster map"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, what)| *what)
    .collect::<Vec<_>>()
    .join(", ");
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if signal == SIGHUP {
                on_signal.reloading();
                match reload.reload() {
                    Ok(()) => log::info!("fridge: SIGHUP: {reloaded} reloaded"),
                    Err(e) => log::warn!("fridge: SIGHUP: reload failed: {e}"),
                }
                on_signal.ready("serving");
            } else {
                on_signal.stopping();
                handle.shutdown();
                break;
            }
        }
    });
    let mut resp = server.resp_addr().map(|a| format!(", RESP only on {a}")).unwrap_or_default();
    if let Some(a) = server.tls_addr() {
        resp.push_str(&format!(", TLS on {a}"));
    }
    if let Some(a) = server.admin_addr() {
        resp.push_str(&format!(", admin (HTTP /metrics) on {a}"));
    }
    let mut on = match &config.unix_socket {
        Some(path) => path.display().to_string(),
        None => server.local_addrs().iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
    };
    if config.enable_ssl {
        on.push_str(" (TLS)");
    }
    let serving = format!(
        "fridge {}: serving memcached and RESP on {on}{resp}; {} of memory, {} workers",
        env!("CARGO_PKG_VERSION"),
        config.memory,
        config.worker_count(),
    );
    log::info!("{serving}");
    log::info!("fridge: configuration: {}", config.summary());
    notifier.ready(&serving);
    let summary = server.summary_handle();
    server.wait();
    notifier.stopping(); // again, for a stop by memcached's `shutdown` (harmless twice)
    log::info!("fridge: shut down: {}", summary.summary());
    drop(pidfile);
}

/// Prints a startup failure as `fridge: <memcached's message>` and exits with its status.
fn exit(f: Failure) -> ! {
    eprintln!("fridge: {}", f.message);
    std::process::exit(f.status);
}

/// `fridge --check-config`: the configuration as a start reads and checks it (file,
/// environment, flags; tenants, logins, the open-files limit and the `-u` user), printed as
/// the startup log prints it (no passwords); exits 0 if a start would get past them, 1 with
/// the reason if not. Binds nothing, so a port in use is not found here.
fn check_config(cli: Cli) {
    let config = cli.into_config().and_then(|c| c.log_filter().map(|_| c));
    let config = config.and_then(|c| fridge_server::tls::check(&c).map(|()| c));
    let config = config
        .and_then(|c| {
            process::raise_open_files(&c)
                .and_then(|()| process::user_to_become(&c))
                .map_err(|f| f.message)
                .map(|_| c)
        })
        .unwrap_or_else(|e| {
            eprintln!("fridge: {e}");
            std::process::exit(1);
        });
    println!("fridge: configuration: {}", config.summary());
    println!("fridge: the configuration is valid");
}

/// `fridge ping`: prints the reply and exits 0 if the server answers, prints why and exits 1
/// if not.
fn ping(target: &PingTarget, resp: bool, timeout: std::time::Duration) {
    match fridge_server::ping(target, resp, timeout) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("fridge ping: {e}");
            std::process::exit(1);
        }
    }
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
