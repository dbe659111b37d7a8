//! TLS for both protocols: the TLS port (`tls_port`, Redis's `tls-port`) and, with memcached's
//! `-Z`, the main port. rustls with ring's crypto, so neither a system OpenSSL nor a C
//! toolchain beyond ring's own is needed.
//!
//! The settings are Redis's (<https://redis.io/docs/latest/operate/oss_and_stack/management/security/encryption/>:
//! `tls-port`, `tls-cert-file`, `tls-key-file`, `tls-ca-cert-file`, `tls-auth-clients
//! yes|no|optional`) and memcached's (`doc/tls.txt`, <https://github.com/memcached/memcached/wiki/TLS>:
//! `-Z` with `-o ssl_chain_cert=…,ssl_key=…,ssl_ca_cert=…,ssl_verify_mode=0..3`, read in
//! `extended.rs`); `docs/deployment.md` says which of each are honoured. TLS 1.2 and 1.3 only
//! (rustls speaks nothing older). What a connection sends inside TLS is told apart as on a
//! plain port (`*` or a Redis command word is RESP, `0x80` the binary protocol, anything
//! else memcached text).
//!
//! # Certificates
//!
//! [`Tls`] holds the `rustls::ServerConfig` new handshakes use, behind a lock the acceptor
//! takes once per accepted connection. A reload (SIGHUP, `CONFIG RELOAD`) reads the same
//! files again and swaps it: connections already open keep the session they made; one whose
//! file does not load leaves the old certificate in place and says why. Files are read at
//! start before root is dropped (so a key readable by root only works, as with nginx), and on
//! a reload as the `-u` user.
//!
//! With `tls-auth-clients yes` (the default once a CA file is given, as in Redis) a client
//! must show a certificate the CA signed, or its handshake fails; with `optional` it may show
//! none. A verified certificate whose subject common name — or, without one, whose first DNS
//! name — is a tenant's name logs the connection in as that tenant, as `AUTH` would
//! (`docs/tenants.md`); a certificate naming no tenant changes nothing.
//!
//! # On the event loop
//!
//! `TlsStream` is read and written through the same `Read`/`Write` the workers use for a
//! plain socket; the handshake runs inside those calls on the non-blocking socket. Workers
//! are edge-triggered, and treat a read shorter than asked as "the socket is drained". So a
//! read here keeps going — plaintext rustls holds, then records from the socket — until the
//! caller's buffer is full or the socket is drained (it came back short, or would block); a
//! shorter read then really means no new edge will be missed. The socket's end, once seen,
//! is kept (`TlsStream::read_pending`) so the worker reads once more to learn it. Likewise a
//! write goes on, 64 KiB of records at a time, until all is sent or the socket is full, so a
//! short count means a writable edge will come. Records rustls could not send wait in rustls
//! (`TlsStream::wants_write`): the worker flushes them on that edge, even when it has no reply
//! bytes of its own left.
//!
//! Cost: per connection, rustls's buffers (records in and out, up to about 16 KiB each, and
//! at most 64 KiB of records waiting to be sent) beside the connection's own; per request,
//! the encryption and no allocation of fridge's own (rustls keeps its buffers). The
//! measured throughput against the plain port is in `docs/benchmarks.md`.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use mio::event::Source;
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};

use crate::config::{Config, TlsAuthClients};

/// The TLS state of a server: the configuration new handshakes use and its counters.
#[derive(Debug)]
pub struct Tls {
    files: Files,
    current: RwLock<Arc<ServerConfig>>,
    /// Handshakes completed.
    pub(crate) handshakes: AtomicU64,
    /// Handshakes that failed with a TLS error (a refused client certificate, an alert, a
    /// record that is not TLS). A connection closed before its handshake is not counted.
    pub(crate) handshake_errors: AtomicU64,
}

/// Where the certificates come from, and whether clients must show one.
#[derive(Debug, Clone)]
struct Files {
    cert: PathBuf,
    key: PathBuf,
    ca: Option<PathBuf>,
    auth: TlsAuthClients,
}

impl Tls {
    /// The TLS state `config` asks for, its files read and checked; `None` when no port
    /// speaks TLS.
    pub fn load(config: &Config) -> Result<Option<Tls>, String> {
        if config.tls_port.is_none() && !config.enable_ssl {
            return Ok(None);
        }
        let (Some(cert), Some(key)) = (&config.tls_cert_file, &config.tls_key_file) else {
            return Err("TLS needs tls_cert_file and tls_key_file".into());
        };
        let files = Files {
            cert: cert.clone(),
            key: key.clone(),
            ca: config.tls_ca_cert_file.clone(),
            auth: config.tls_client_auth(),
        };
        let server = files.server_config()?;
        Ok(Some(Tls {
            files,
            current: RwLock::new(server),
            handshakes: AtomicU64::new(0),
            handshake_errors: AtomicU64::new(0),
        }))
    }

    /// Reads the certificate files again and uses them for new handshakes; on error the
    /// certificates in use stay.
    pub(crate) fn reload(&self) -> Result<(), String> {
        let server = self.files.server_config()?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = server;
        Ok(())
    }

    /// A new connection's TLS side, its handshake not begun.
    pub(crate) fn accept(self: &Arc<Self>, tcp: TcpStream) -> io::Result<TlsStream> {
        let config = Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()));
        let conn = ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(TlsStream { tcp, conn, tls: Arc::clone(self), told: false, eof: false })
    }
}

impl Files {
    /// A rustls configuration from the files, or why they do not make one.
    fn server_config(&self) -> Result<Arc<ServerConfig>, String> {
        let certs = read_certs(&self.cert, "tls_cert_file")?;
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| format!("tls_key_file {}: {e}", self.key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = match (self.auth, &self.ca) {
            (TlsAuthClients::No, _) => builder.with_no_client_auth(),
            (_, None) => return Err("tls_auth_clients needs tls_ca_cert_file".into()),
            (auth, Some(ca)) => {
                let mut roots = RootCertStore::empty();
                for cert in read_certs(ca, "tls_ca_cert_file")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("tls_ca_cert_file {}: {e}", ca.display()))?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let verifier = match auth {
                    TlsAuthClients::Optional => verifier.allow_unauthenticated(),
                    _ => verifier,
                };
                let verifier = verifier.build().map_err(|e| format!("TLS client CA: {e}"))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(certs, key).map_err(|e| {
            format!(
                "tls_cert_file {} with tls_key_file {}: {e}",
                self.cert.display(),
                self.key.display()
            )
        })?;
        Ok(Arc::new(config))
    }
}

/// The certificates of a PEM file (at least one).
fn read_certs(path: &Path, setting: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let why = |e: &dyn std::fmt::Display| format!("{setting} {}: {e}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| why(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| why(&e))?;
    if certs.is_empty() {
        return Err(why(&"no PEM certificate in it"));
    }
    Ok(certs)
}

/// Checks that the TLS files `config` names load (for `--check-config`).
pub fn check(config: &Config) -> Result<(), String> {
    Tls::load(config).map(drop)
}

/// Where a connection's handshake stands, as the worker learns it ([`TlsStream::handshake`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// Under way.
    Going,
    /// Just finished: the name of the client's verified certificate, if it showed one (its
    /// subject common name, else its first DNS name).
    Done(Option<String>),
    /// Finished, and said before.
    Told,
}

/// A TLS connection over a non-blocking TCP socket (see the module doc).
#[derive(Debug)]
pub(crate) struct TlsStream {
    tcp: TcpStream,
    conn: ServerConnection,
    tls: Arc<Tls>,
    /// The worker was told the handshake finished.
    told: bool,
    /// The socket reached its end: once rustls's plaintext is read, reads answer 0.
    eof: bool,
}

impl TlsStream {
    /// Where the handshake stands; `Done` once, when it has finished (counted then).
    pub(crate) fn handshake(&mut self) -> Handshake {
        if self.told {
            return Handshake::Told;
        }
        if self.conn.is_handshaking() {
            return Handshake::Going;
        }
        self.told = true;
        self.tls.handshakes.fetch_add(1, Ordering::Relaxed);
        Handshake::Done(self.peer_name())
    }

    /// The name of the client's certificate (rustls keeps only a verified one).
    fn peer_name(&self) -> Option<String> {
        let cert = webpki::EndEntityCert::try_from(self.conn.peer_certificates()?.first()?).ok()?;
        let name = common_name(cert.subject()).or_else(|| cert.valid_dns_names().next())?;
        Some(name.to_owned())
    }

    /// Records are waiting for the socket to take them.
    pub(crate) fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// A read has more to say although the last one was short: the socket's end.
    pub(crate) fn read_pending(&self) -> bool {
        self.eof
    }

    /// Writes the records rustls has ready until it has none or the socket is full
    /// (`WouldBlock`).
    fn send_records(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.tcp) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Read for TlsStream {
    /// Fills `buf` with plaintext until it is full or the socket is drained (then a short
    /// count, or `WouldBlock` with nothing); 0 at the end of the connection, whether the
    /// client sent TLS's `close_notify` or just closed the socket.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        // The socket came back short: it is drained, and a new edge will say when more
        // comes (it saves the read that would answer `WouldBlock`, as the worker does).
        let mut drained = false;
        loop {
            match self.conn.reader().read(&mut buf[filled..]) {
                Ok(0) => return Ok(filled), // close_notify, or `buf` is full
                Ok(n) => {
                    filled += n;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The socket ended without close_notify: an end like any other for a cache.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                Err(e) => return Err(e),
            }
            if self.eof {
                return Ok(filled); // rustls has said all it will
            }
            if drained {
                return if filled > 0 { Ok(filled) } else { Err(io::ErrorKind::WouldBlock.into()) };
            }
            let mut socket = Socket { tcp: &mut self.tcp, drained: false };
            let read = self.conn.read_tls(&mut socket);
            drained = socket.drained;
            match read {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && filled > 0 => {
                    return Ok(filled);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Err(e) = self.conn.process_new_packets() {
                if self.conn.is_handshaking() {
                    self.tls.handshake_errors.fetch_add(1, Ordering::Relaxed);
                }
                let _ = self.send_records(); // the alert rustls queued, if the socket takes it
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            // The handshake's own records go out now: the worker writes only its replies.
            match self.send_records() {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
        }
    }
}

/// The socket as rustls reads it, noting a read that came back shorter than asked.
struct Socket<'a> {
    tcp: &'a mut TcpStream,
    drained: bool,
}

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.tcp.read(buf)?;
        self.drained = n < buf.len();
        Ok(n)
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }

    /// Encrypts `bufs` a bounded batch at a time (rustls takes up to 64 KiB of records) and
    /// sends each batch, until all is sent or the socket is full: a count shorter than asked
    /// means the socket is full, as the worker takes a plain socket's to mean. Records still
    /// waiting from before go first, so a full socket answers `WouldBlock` and rustls's
    /// buffer never grows past its bound.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.send_records()?;
        let mut written = 0;
        for buf in bufs {
            let mut rest: &[u8] = buf;
            while !rest.is_empty() {
                let n = self.conn.writer().write(rest)?;
                if n == 0 {
                    // Held back until the handshake is done: the handshake's reads send it.
                    return if written > 0 {
                        Ok(written)
                    } else {
                        Err(io::ErrorKind::WouldBlock.into())
                    };
                }
                written += n;
                rest = &rest[n..];
                match self.send_records() {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(written),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(written)
    }

    /// Sends the records waiting (`WouldBlock` while the socket is full).
    fn flush(&mut self) -> io::Result<()> {
        self.send_records()
    }
}

impl Drop for TlsStream {
    /// Tells the client the connection ends (TLS's `close_notify`), if the socket takes it.
    fn drop(&mut self) {
        self.conn.send_close_notify();
        let _ = self.send_records();
    }
}

impl std::os::fd::AsRawFd for TlsStream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.tcp.as_raw_fd()
    }
}

impl Source for TlsStream {
    fn register(&mut self, r: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.tcp.register(r, token, interests)
    }

    fn reregister(&mut self, r: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.tcp.reregister(r, token, interests)
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        self.tcp.deregister(r)
    }
}

/// The OID of X.520's common name, 2.5.4.3, as DER writes it.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// DER tags read here.
const SET: u8 = 0x31;
const SEQUENCE: u8 = 0x30;
const OID: u8 = 0x06;
/// The string types a common name comes in (UTF8String, PrintableString, IA5String).
const TEXT: [u8; 3] = [0x0c, 0x13, 0x16];

/// The first common name in the contents of a DER `Name` (a sequence of sets of (OID, value)
/// pairs, its outer header already gone, as webpki gives it), if it is text.
fn common_name(name: &[u8]) -> Option<&str> {
    let mut rdns = name;
    while let Some((SET, set, rest)) = der_next(rdns) {
        rdns = rest;
        let mut pairs = set;
        while let Some((SEQUENCE, pair, more)) = der_next(pairs) {
            pairs = more;
            let Some((OID, oid, value)) = der_next(pair) else { continue };
            if oid == COMMON_NAME {
                let (tag, text, _) = der_next(value)?;
                return TEXT.contains(&tag).then(|| std::str::from_utf8(text).ok()).flatten();
            }
        }
    }
    None
}

/// The DER element at the start of `der`: its tag, its contents and what follows it; `None`
/// if it is cut short (or longer than 4 GiB, which no name is).
fn der_next(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        (rest[..n].iter().fold(0usize, |len, &b| len << 8 | usize::from(b)), &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name's contents: `C=NZ, O=fridge, CN=billing` (as `openssl x509 -subject` would say).
    fn name(cn_tag: u8, cn: &[u8]) -> Vec<u8> {
        let rdn = |oid: &[u8], tag: u8, value: &[u8]| {
            let mut pair = vec![OID, oid.len() as u8];
            pair.extend_from_slice(oid);
            pair.extend_from_slice(&[tag, value.len() as u8]);
            pair.extend_from_slice(value);
            let mut seq = vec![SEQUENCE, pair.len() as u8];
            seq.extend(pair);
            let mut set = vec![SET, seq.len() as u8];
            set.extend(seq);
            set
        };
        let mut out = rdn(&[0x55, 0x04, 0x06], 0x13, b"NZ");
        out.extend(rdn(&[0x55, 0x04, 0x0a], 0x0c, b"fridge"));
        out.extend(rdn(COMMON_NAME, cn_tag, cn));
        out
    }

    #[test]
    fn the_common_name_is_found_among_the_others() {
        assert_eq!(common_name(&name(0x0c, b"billing")), Some("billing"), "UTF8String");
        assert_eq!(common_name(&name(0x13, b"billing")), Some("billing"), "PrintableString");
        assert_eq!(common_name(&name(0x1e, b"\0b")), None, "a BMPString is not read");
        let mut without = name(0x0c, b"x");
        without.truncate(without.len() - 12);
        assert_eq!(common_name(&without), None, "no common name");
    }

    #[test]
    fn cut_or_odd_der_is_no_name() {
        let whole = name(0x0c, b"billing");
        for end in 0..whole.len() {
            assert_eq!(common_name(&whole[..end]), None, "cut at {end}");
        }
        assert_eq!(der_next(&[0x30, 0x82, 0x01]), None, "a long length cut short");
        assert_eq!(der_next(&[0x30, 0x80]), None, "an indefinite length is not DER");
        assert_eq!(
            der_next(&[0x30, 0x81, 0x01, 0xaa, 0xbb]),
            Some((0x30, &[0xaa][..], &[0xbb][..]))
        );
    }
}
