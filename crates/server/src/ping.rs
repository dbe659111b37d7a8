//! `fridge ping`: the smallest client, for health checks where no other client is installed
//! (the container image's `HEALTHCHECK`, a load balancer's probe script). It connects, sends
//! one request and reads one reply line: memcached's `version` (the memcached text protocol's
//! no-op, answered `VERSION <version>`), or with `--resp` a RESP `PING` (answered `+PONG`).
//!
//! A server that requires a login answers either with its refusal (`CLIENT_ERROR
//! unauthenticated`, as memcached with `-Y`; `-NOAUTH …`, as Redis): that is a server that
//! parses requests and answers them, so it counts as alive. Anything else (refused or reset
//! connection, no reply within the timeout, a reply that is not the protocol's) is a failure.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where `fridge ping` connects.
#[derive(Debug, Clone)]
pub enum PingTarget {
    /// A host (name or address) and port.
    Tcp(String, u16),
    /// A unix socket (`-s`).
    Unix(PathBuf),
}

/// Sends one `version` (or with `resp`, RESP `PING`) and reads the reply line within
/// `timeout` per step; returns that line (without its line break) if it is the protocol's
/// answer, else what went wrong.
pub fn ping(target: &PingTarget, resp: bool, timeout: Duration) -> Result<String, String> {
    let request: &[u8] = if resp { b"*1\r\n$4\r\nPING\r\n" } else { b"version\r\n" };
    let line = match target {
        PingTarget::Tcp(host, port) => {
            let addrs = (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {host}: {e}"))?;
            let mut last = format!("{host} names no address");
            let mut stream = None;
            for addr in addrs {
                match TcpStream::connect_timeout(&addr, timeout) {
                    Ok(s) => {
                        stream = Some(s);
                        break;
                    }
                    Err(e) => last = format!("cannot connect to {addr}: {e}"),
                }
            }
            let stream = stream.ok_or(last)?;
            stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            exchange(stream, request)?
        }
        PingTarget::Unix(path) => {
            let stream = UnixStream::connect(path)
                .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
            stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
            exchange(stream, request)?
        }
    };
    let alive = if resp {
        line == "+PONG" || line.starts_with("-NOAUTH")
    } else {
        line.starts_with("VERSION ") || line == "CLIENT_ERROR unauthenticated"
    };
    if alive { Ok(line) } else { Err(format!("unexpected reply {line:?}")) }
}

/// Writes `request` and reads one line.
fn exchange<S: std::io::Read + Write>(mut stream: S, request: &[u8]) -> Result<String, String> {
    stream.write_all(request).map_err(|e| format!("cannot send: {e}"))?;
    let mut line = Vec::new();
    // A reply line is short: at most 1 KiB is read.
    std::io::Read::take(BufReader::new(stream), 1024)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("no reply: {e}"))?;
    if line.is_empty() {
        return Err("the server closed the connection without a reply".into());
    }
    let text = String::from_utf8_lossy(&line);
    Ok(text.trim_end_matches(['\r', '\n']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// A one-shot server answering `reply` to whatever it reads.
    fn answering(reply: &'static [u8]) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf);
            let _ = s.write_all(reply);
        });
        port
    }

    #[test]
    fn replies_are_judged_by_protocol() {
        let t = |port| PingTarget::Tcp("127.0.0.1".into(), port);
        let second = Duration::from_secs(5);
        let ok = ping(&t(answering(b"VERSION 1.6.18\r\n")), false, second);
        assert_eq!(ok.unwrap(), "VERSION 1.6.18");
        assert!(ping(&t(answering(b"CLIENT_ERROR unauthenticated\r\n")), false, second).is_ok());
        assert!(ping(&t(answering(b"+PONG\r\n")), true, second).is_ok());
        assert!(ping(&t(answering(b"-NOAUTH Authentication required.\r\n")), true, second).is_ok());
        let bad = ping(&t(answering(b"HTTP/1.1 400 Bad Request\r\n")), false, second);
        assert!(bad.unwrap_err().starts_with("unexpected reply"));
        let closed = ping(&t(answering(b"")), false, second);
        assert!(closed.unwrap_err().contains("without a reply"));
    }
}
