//! The listening sockets, bound before anything else starts, and the one stream type the
//! workers serve whichever kind of socket a client came in on.
//!
//! Binding comes first and alone ([`Listeners::bind`]), before any thread exists, so that the
//! `fridge` binary can bind as root, then detach (`-d`) and drop to the `-u` user before the
//! server starts its threads, the order memcached's `-u` and `-d` promise.
//!
//! - TCP: one socket per address of `listen` (memcached's `-l`: a comma list, repeatable),
//!   with `SO_REUSEADDR`, `IPV6_V6ONLY` on IPv6 (so `0.0.0.0` and `::` can both be bound, as
//!   memcached binds them) and the `-b` backlog. With port 0 the first socket picks a free
//!   port and the others take the same.
//! - Unix (memcached's `-s`): a stale socket file is removed first (never any other kind of
//!   file), the socket is created under the umask that leaves exactly the `-a` permission bits
//!   (memcached's way: there is no window with wider ones), and the file is removed again when
//!   the server stops. It replaces the TCP port (and UDP), as in memcached.
//! - UDP (memcached's `-U`, off at 0): one socket per listen address, served by `udp.rs`.
//! - TLS (`tls_port`, and with memcached's `-Z` the main port): the certificate files are read
//!   here too, while the process may still be root (`crate::tls`).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};
use nix::sys::socket::{self, AddressFamily, Backlog, SockFlag, SockType, SockaddrStorage};
use nix::sys::stat::{Mode, umask};

use crate::config::Config;
use crate::tls::{Tls, TlsStream};

/// The sockets a server listens on, bound and listening, no thread started yet.
#[derive(Debug)]
pub struct Listeners {
    pub(crate) config: Config,
    /// The main port: one socket per listen address (none with a unix socket).
    pub(crate) tcp: Vec<TcpListener>,
    /// The unix socket, and the path to remove when the server stops.
    pub(crate) unix: Option<(UnixListener, PathBuf)>,
    /// The RESP-only port.
    pub(crate) resp: Option<TcpListener>,
    /// memcached's UDP port, one socket per listen address (blocking: each has its thread).
    pub(crate) udp: Vec<std::net::UdpSocket>,
    /// The admin HTTP port (`crate::admin`).
    pub(crate) admin: Option<TcpListener>,
    /// The TLS port (`tls_port`).
    pub(crate) tls_port: Option<TcpListener>,
    /// The certificates, read before root is dropped; `None` when no port speaks TLS.
    pub(crate) tls: Option<Tls>,
}

impl Listeners {
    /// Binds every socket `config` asks for (after checking it).
    pub fn bind(config: Config) -> io::Result<Listeners> {
        config.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let backlog = config.listen_backlog as i32;
        let mut tcp = Vec::new();
        let mut udp = Vec::new();
        let mut unix = None;
        match &config.unix_socket {
            Some(path) => {
                let listener = bind_unix(path, config.unix_mask, backlog).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("failed to listen on UNIX socket: {}: {e}", path.display()),
                    )
                })?;
                unix = Some((listener, path.clone()));
            }
            None => {
                let mut port = None;
                for mut addr in config.listen_addrs().map_err(invalid)? {
                    if addr.port() == 0 {
                        addr.set_port(port.unwrap_or(0));
                    }
                    let listener = bind_tcp(addr, backlog).map_err(|e| {
                        io::Error::new(e.kind(), format!("failed to listen on {addr}: {e}"))
                    })?;
                    port.get_or_insert(listener.local_addr()?.port());
                    tcp.push(listener);
                    if config.udp_port != 0 {
                        addr.set_port(config.udp_port);
                        udp.push(bind_udp(addr).map_err(|e| {
                            io::Error::new(e.kind(), format!("failed to listen on UDP {addr}: {e}"))
                        })?);
                    }
                }
            }
        }
        let resp = match config.resp_addr().map_err(invalid)? {
            Some(addr) => Some(bind_tcp(addr, backlog)?),
            None => None,
        };
        let admin = match config.admin_addr().map_err(invalid)? {
            Some(addr) => Some(bind_tcp(addr, backlog)?),
            None => None,
        };
        let tls = Tls::load(&config).map_err(invalid)?;
        let tls_port = match config.tls_addr().map_err(invalid)? {
            Some(addr) => Some(bind_tcp(addr, backlog)?),
            None => None,
        };
        Ok(Listeners { config, tcp, unix, resp, udp, admin, tls_port, tls })
    }

    /// The main port's first address; `0.0.0.0:0` when only a unix socket is open.
    pub fn local_addr(&self) -> SocketAddr {
        self.tcp
            .first()
            .and_then(|l| l.local_addr().ok())
            .unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)))
    }

    /// The configuration the sockets were bound for.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Hands the unix socket's file to `uid`/`gid` (the `-u` user), so that it can be reached
    /// under the `-a` mask by that user's clients, as memcached, which binds it as that user.
    pub fn chown_unix_socket(&self, uid: u32, gid: u32) -> io::Result<()> {
        match &self.unix {
            Some((_, path)) => std::os::unix::fs::chown(path, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }
}

fn bind_tcp(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let family = if addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    let fd = new_socket(family)?;
    socket::setsockopt(&fd, socket::sockopt::ReuseAddr, &true)?;
    if addr.is_ipv6() {
        socket::setsockopt(&fd, socket::sockopt::Ipv6V6Only, &true)?;
    }
    socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrStorage::from(addr))?;
    socket::listen(&fd, Backlog::new(backlog)?)?;
    Ok(TcpListener::from_std(std::net::TcpListener::from(fd)))
}

fn bind_udp(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let family = if addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    let fd = socket::socket(family, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
    if addr.is_ipv6() {
        socket::setsockopt(&fd, socket::sockopt::Ipv6V6Only, &true)?;
    }
    socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrStorage::from(addr))?;
    Ok(std::net::UdpSocket::from(fd))
}

fn bind_unix(path: &Path, mask: u32, backlog: i32) -> io::Result<UnixListener> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        std::fs::remove_file(path)?;
    }
    let fd = new_socket(AddressFamily::Unix)?;
    let addr = socket::UnixAddr::new(path)?;
    // The umask is the process's: this runs at startup, before the server's threads exist.
    let old = umask(Mode::from_bits_truncate(!mask & 0o777));
    let bound = socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr);
    umask(old);
    bound?;
    socket::listen(&fd, Backlog::new(backlog)?)?;
    Ok(UnixListener::from_std(std::os::unix::net::UnixListener::from(fd)))
}

fn new_socket(family: AddressFamily) -> io::Result<OwnedFd> {
    let flags = SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC;
    Ok(socket::socket(family, SockType::Stream, flags, None)?)
}

/// A client connection on any of the listeners: the workers read, write and poll it without
/// knowing which.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS over TCP (`crate::tls`), boxed: rustls's connection state is large.
    Tls(Box<TlsStream>),
}

impl Stream {
    /// Bytes wait to be sent that the caller no longer holds (TLS records the socket had no
    /// room for): write them on the next writable edge with `flush`.
    #[inline]
    pub(crate) fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.wants_write())
    }

    /// A read shorter than asked has not drained everything: read again without waiting
    /// for an event (a TLS stream that saw the socket's end).
    #[inline]
    pub(crate) fn read_pending(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.read_pending())
    }
}

impl std::os::fd::AsRawFd for Stream {
    /// The descriptor (memcached's `cfd` in `watch` lines).
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl Source for Stream {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(registry, token, interests),
            Stream::Unix(s) => s.register(registry, token, interests),
            Stream::Tls(s) => s.register(registry, token, interests),
        }
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interests),
            Stream::Unix(s) => s.reregister(registry, token, interests),
            Stream::Tls(s) => s.reregister(registry, token, interests),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
            Stream::Tls(s) => s.deregister(registry),
        }
    }
}
