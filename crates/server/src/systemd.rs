//! systemd's readiness protocol, spoken without libsystemd: a unit with `Type=notify` (see
//! `deploy/fridge.service`) learns that fridge is ready when its listeners are bound and its
//! workers run, and that it is stopping when a graceful shutdown begins.
//!
//! The protocol is sd_notify(3)'s: systemd passes the path of a datagram socket in
//! `$NOTIFY_SOCKET`; the service sends it datagrams of newline-separated `VARIABLE=value`
//! assignments: `READY=1`, `STOPPING=1`, `RELOADING=1` (with `MONOTONIC_USEC=` the
//! `CLOCK_MONOTONIC` time in microseconds, which `Type=notify-reload` requires), `STATUS=`
//! free text shown by `systemctl status`. A path starting with `@` names a socket in Linux's
//! abstract namespace (the `@` standing for the leading zero byte); any other path is a
//! socket file. Without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.
//! Sending is best effort, as in libsystemd: an error is logged at debug level and ignored,
//! since the server serves whether or not its manager hears it. The credentials systemd
//! checks (the sender's pid, `NotifyAccess=main`) come with the datagram from the kernel.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Where to send state changes: `$NOTIFY_SOCKET`, read once at start.
#[derive(Debug, Clone)]
pub struct Notifier {
    addr: Option<String>,
}

impl Notifier {
    /// The notifier of this process: `$NOTIFY_SOCKET`, or one that does nothing.
    pub fn from_env() -> Notifier {
        let addr = std::env::var("NOTIFY_SOCKET").ok().filter(|a| !a.is_empty());
        Notifier { addr }
    }

    /// Whether a service manager listens.
    pub fn enabled(&self) -> bool {
        self.addr.is_some()
    }

    /// `READY=1` and a `STATUS=` line.
    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)));
    }

    /// `STOPPING=1`: a graceful shutdown has begun.
    pub fn stopping(&self) {
        self.send("STOPPING=1\nSTATUS=shutting down");
    }

    /// `RELOADING=1` with `MONOTONIC_USEC` (`Type=notify-reload`'s form); follow with
    /// [`Notifier::ready`] once the reload is done or refused.
    pub fn reloading(&self) {
        let usec = crate::cmdstats::monotonic_ns() / 1000;
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={usec}\nSTATUS=reloading"));
    }

    /// Sends `state` as one datagram, ignoring failures (logged at debug level).
    pub fn send(&self, state: &str) {
        let Some(addr) = &self.addr else { return };
        if let Err(e) = send_to(addr, state.as_bytes()) {
            log::debug!("fridge: cannot notify the service manager at {addr}: {e}");
        }
    }
}

/// One datagram to the socket `addr` names (`@name`: abstract).
fn send_to(addr: &str, datagram: &[u8]) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    match addr.strip_prefix('@') {
        Some(name) => {
            let to = SocketAddr::from_abstract_name(name.as_bytes())?;
            socket.send_to_addr(datagram, &to)?;
        }
        None => {
            socket.send_to(datagram, addr)?;
        }
    }
    Ok(())
}

/// `text` with line breaks made spaces: one `STATUS=` assignment.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receive(socket: &UnixDatagram) -> String {
        let mut buf = [0u8; 512];
        let n = socket.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn states_reach_a_socket_file_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("fridge-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let file = UnixDatagram::bind(&path).unwrap();
        let n = Notifier { addr: Some(path.display().to_string()) };
        n.ready("serving\non 1");
        assert_eq!(receive(&file), "READY=1\nSTATUS=serving on 1");
        n.stopping();
        assert!(receive(&file).starts_with("STOPPING=1\n"));

        let name = format!("fridge-notify-test-{}", std::process::id());
        let abs = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        let n = Notifier { addr: Some(format!("@{name}")) };
        n.reloading();
        let got = receive(&abs);
        assert!(got.starts_with("RELOADING=1\nMONOTONIC_USEC="), "{got}");
        let usec: u64 = got.lines().nth(1).unwrap()["MONOTONIC_USEC=".len()..].parse().unwrap();
        assert!(usec > 0);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn without_a_socket_nothing_is_sent_and_a_dead_one_is_ignored() {
        let none = Notifier { addr: None };
        assert!(!none.enabled());
        none.ready("x");
        let dead = Notifier { addr: Some("/nonexistent-dir/notify.sock".into()) };
        assert!(dead.enabled());
        dead.stopping(); // logged, not a panic
        assert!(send_to("/nonexistent-dir/notify.sock", b"READY=1").is_err());
    }
}
