//! memcached's command line, run as deployments run it: the `fridge` binary started with
//! the option line of Debian's `/etc/memcached.conf`, a unix socket, several `-l` addresses,
//! `-P`, `-d`, `-u`, and the refusals (`-c`, `-o`, root without `-u`), whose messages are
//! compared with those of Debian's memcached 1.6.18 in the same run when it is installed.
//! `shutdown` and `verbosity` run in-process.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Conn, config, start_with};
use fridge_server::{Config, PasswordHash};

const FRIDGE: &str = env!("CARGO_BIN_EXE_fridge");
const MEMCACHED: &str = "/usr/bin/memcached";

/// Debian's `/etc/memcached.conf` (memcached 1.6.18-1), verbatim.
const DEBIAN_CONF: &str = "\
# memcached default config file
# 2003 - Jay Bonci <jaybonci@debian.org>
# This configuration file is read by the start-memcached script provided as
# part of the Debian GNU/Linux distribution.

# Run memcached as a daemon. This command is implied, and is not needed for the
# daemon to run. See the README.Debian that comes with this package for more
# information.
-d

# Log memcached's output to /var/log/memcached
logfile /var/log/memcached.log

# Be verbose
# -v

# Start with a cap of 64 megs of memory. It's reasonable, and the daemon default
# Note that the daemon will grow to this size, but does not start out holding this much
# memory
-m 64

# Default connection port is 11211
-p 11211

# Run the daemon as root. The start-memcached will default to running as root if no
# -u command is present in this config file
-u memcache

# Specify which IP address to listen on. The default is to listen on all IP addresses
# This parameter is one of the only security measures that memcached has, so make sure
# it's listening on a firewalled interface.
-l 127.0.0.1

# Limit the number of simultaneous incoming connections. The daemon default is 1024
# -c 1024

# Use a pidfile
-P /var/run/memcached/memcached.pid
";

/// The arguments Debian's `systemd-memcached-wrapper` (and `start-memcached`) build from a
/// `memcached.conf`: comments stripped, `-d`/`-h` lines and directives (`logfile`) skipped,
/// the option lines joined and split by the shell.
fn debian_wrapper_args(conf: &str) -> Vec<String> {
    conf.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| l.starts_with('-') && !l.starts_with("-d") && !l.starts_with("-h"))
        .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

fn is_root() -> bool {
    fridge_server::process::is_root()
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A fresh directory anyone may write (the `-u` user writes its pid file there).
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fridge-deploy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

/// A fridge process started by a test; killed when dropped unless [`stop`] stopped it (so a
/// failed assertion leaves nothing running).
struct Fridge(Option<Child>);

impl Fridge {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Fridge {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn(args: &[&str]) -> Fridge {
    let child = Command::new(FRIDGE)
        .args(args)
        .env_remove("FRIDGE_USER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fridge runs");
    Fridge(Some(child))
}

/// Runs a command that is expected to exit at once.
fn run(program: &str, args: &[&str]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .env_remove("FRIDGE_USER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{program} {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// What memcached prints for `args` (with `-U 0`), when it is installed and exits at once.
fn memcached_says(args: &[&str]) -> Option<String> {
    if !Path::new(MEMCACHED).exists() {
        return None;
    }
    let mut all = vec!["-U", "0"];
    all.extend_from_slice(args);
    let out = run(MEMCACHED, &all);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    Some(text.trim().to_string())
}

/// A memcached started for a side-by-side comparison; killed when dropped (a failed
/// assertion included).
struct Memcached {
    child: Child,
    addr: SocketAddr,
}

impl Memcached {
    /// memcached on a free port (and `-U` on the same one when `udp`), as this user.
    fn start(udp: bool) -> Option<Memcached> {
        if !Path::new(MEMCACHED).exists() {
            return None;
        }
        let port = free_port().to_string();
        let user = nix::unistd::User::from_uid(nix::unistd::getuid()).unwrap().unwrap().name;
        let udp_port = if udp { port.as_str() } else { "0" };
        let child = Command::new(MEMCACHED)
            .args(["-u", &user, "-l", "127.0.0.1", "-p", &port, "-U", udp_port])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let m = Memcached { child, addr };
        wait_port(addr);
        Some(m)
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// fridge's startup failure for `args`: (exit status, stderr).
fn fridge_refuses(args: &[&str]) -> (i32, String) {
    let out = run(FRIDGE, args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).trim().to_string())
}

fn wait_port(addr: SocketAddr) {
    common::wait_ready(addr);
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill").args([name, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {name} {pid}");
}

/// Stops a fridge child gracefully and checks it exits 0.
fn stop(mut fridge: Fridge) {
    let mut child = fridge.0.take().unwrap();
    signal(child.id(), "-TERM");
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful exit: {status:?}");
}

/// The fields of a `/proc/PID/status` line (`Uid:`, `Gid:`, `Groups:`).
fn proc_status(pid: u32, field: &str) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().skip(1).map(|n| n.parse().unwrap()).collect()
}

fn roundtrip(stream: &mut (impl Read + Write), request: &[u8], want: &[u8]) {
    stream.write_all(request).unwrap();
    let mut got = vec![0u8; want.len()];
    stream.read_exact(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want),
        "reply to {request:?}"
    );
}

/// memcached text and RESP both answer on connections `connect` opens (a connection's first
/// byte picks its protocol).
fn speaks_both<S: Read + Write>(connect: impl Fn() -> S) {
    let mut mc = connect();
    roundtrip(&mut mc, b"set k 5 0 2\r\nhi\r\n", b"STORED\r\n");
    roundtrip(&mut mc, b"get k\r\n", b"VALUE k 5 2\r\nhi\r\nEND\r\n");
    let mut resp = connect();
    roundtrip(&mut resp, b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n");
    roundtrip(&mut resp, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", b"$2\r\nhi\r\n");
}

#[test]
fn the_option_line_of_debians_memcached_conf_runs_fridge() {
    let dir = scratch_dir("debian");
    let port = free_port();
    let pidfile = dir.join("memcached.pid");
    // Only what a test must change: the port, the pid file's directory, and the user when
    // this machine has no `memcache` (the package creates it).
    let user = if nix::unistd::User::from_name("memcache").ok().flatten().is_some() {
        "memcache"
    } else {
        "nobody"
    };
    let conf = DEBIAN_CONF
        .replace("-p 11211", &format!("-p {port}"))
        .replace("/var/run/memcached/memcached.pid", pidfile.to_str().unwrap())
        .replace("-u memcache", &format!("-u {user}"));
    let args = debian_wrapper_args(&conf);
    assert_eq!(args[..4], ["-m", "64", "-p", &port.to_string()[..]]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn(&args);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_port(addr);
    speaks_both(|| TcpStream::connect(addr).unwrap());
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert_eq!(pid, child.id(), "the pid file names the server");
    if is_root() {
        let u = nix::unistd::User::from_name(user).unwrap().unwrap();
        let (uid, gid) = (u.uid.as_raw(), u.gid.as_raw());
        assert_eq!(proc_status(pid, "Uid:"), [uid; 4], "root was dropped for -u {user}");
        assert_eq!(proc_status(pid, "Gid:"), [gid; 4], "and its group taken");
        assert_eq!(proc_status(pid, "Groups:"), [0u32; 0], "and no supplementary groups");
    }
    stop(child);
    assert!(!pidfile.exists(), "the pid file is removed on a graceful exit");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_unix_socket_serves_both_protocols_under_its_mask() {
    let dir = scratch_dir("unix");
    let path = dir.join("fridge.sock");
    std::fs::write(&path, b"").unwrap();
    let (status, err) = fridge_refuses(&["-u", "nobody", "-s", path.to_str().unwrap()]);
    assert_eq!(status, 71, "{err}");
    assert!(
        err.contains("failed to listen on UNIX socket"),
        "a plain file is never removed: {err}"
    );
    std::fs::remove_file(&path).unwrap();

    let child = spawn(&["-u", "nobody", "-s", path.to_str().unwrap(), "-a", "766", "-m", "64"]);
    wait_for("the socket", || UnixStream::connect(&path).is_ok());
    let meta = std::fs::metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o766, "-a sets the permission bits");
    speaks_both(|| UnixStream::connect(&path).unwrap());
    stop(child);
    assert!(!path.exists(), "the socket file is removed on exit");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn several_listen_addresses_as_a_comma_list_and_repeated() {
    let port = free_port();
    let other = free_port();
    let child = spawn(&[
        "-u",
        "nobody",
        "-m",
        "64",
        "-p",
        &port.to_string(),
        "-l",
        "127.0.0.1,127.0.0.2",
        "-l",
        &format!("127.0.0.3:{other}"),
        "-b",
        "77",
    ]);
    for addr in
        [format!("127.0.0.1:{port}"), format!("127.0.0.2:{port}"), format!("127.0.0.3:{other}")]
    {
        let addr: SocketAddr = addr.parse().unwrap();
        wait_port(addr);
        roundtrip(&mut TcpStream::connect(addr).unwrap(), b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n");
    }
    // A listening socket's backlog is its Send-Q in `ss -ltn`.
    if let Ok(out) = Command::new("ss").args(["-ltnH", &format!("sport = :{port}")]).output() {
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            assert_eq!(line.split_whitespace().nth(2), Some("77"), "-b 77: {line}");
        }
    }
    stop(child);
}

#[test]
fn daemonized_it_detaches_and_the_pid_file_finds_it() {
    let dir = scratch_dir("daemon");
    let pidfile = dir.join("fridge.pid");
    let port = free_port();
    let out = run(
        FRIDGE,
        &[
            "-d",
            "-u",
            "nobody",
            "-m",
            "64",
            "-p",
            &port.to_string(),
            "-P",
            pidfile.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "the foreground process exits 0: {out:?}");
    wait_for("the pid file", || pidfile.exists());
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_port(addr);
    let mut c = Conn::open(addr);
    c.roundtrip(
        b"version\r\n",
        format!("VERSION {}\r\n", fridge_server::MEMCACHED_VERSION).as_bytes(),
    );
    signal(pid, "-TERM");
    wait_for("the daemon to exit", || !Path::new(&format!("/proc/{pid}")).exists());
    assert!(!pidfile.exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn root_needs_a_user_to_become() {
    if !is_root() {
        return; // memcached ignores -u when not root; nothing to refuse
    }
    for (args, status) in
        [(&["-p", "0"][..], 64), (&["-p", "0", "-u", "no-such-user-here"][..], 67)]
    {
        let (got, err) = fridge_refuses(args);
        assert_eq!(got, status, "{err}");
        if let Some(theirs) = memcached_says(args) {
            assert_eq!(err, format!("fridge: {theirs}"));
        }
    }
    assert_eq!(fridge_refuses(&["-p", "0"]).1, "fridge: can't run as root without the -u switch");
}

#[test]
fn more_connections_than_the_system_allows_are_refused_like_memcached() {
    // More descriptors than any process may have: refused whoever runs the test.
    let nr_open: u64 =
        std::fs::read_to_string("/proc/sys/fs/nr_open").unwrap().trim().parse().unwrap();
    let c = (nr_open + 1).to_string();
    let args = ["-u", "nobody", "-p", "0", "-c", &c];
    let (status, err) = fridge_refuses(&args);
    let message = "failed to set rlimit for open files. Try starting as root or requesting \
                   smaller maxconns value.";
    assert_eq!((status, err.as_str()), (71, &*format!("fridge: {message}")));
    if let Some(theirs) = memcached_says(&args) {
        assert_eq!(theirs, message);
    }
    let (status, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-c", "0"]);
    assert_ne!(status, 0);
    assert_eq!(err, "fridge: Maximum connections must be greater than 0");
    if let Some(theirs) = memcached_says(&["-u", "nobody", "-p", "0", "-c", "0"]) {
        assert_eq!(err, format!("fridge: {theirs}"));
    }
}

#[test]
fn extended_options_are_honoured_or_refused_never_ignored() {
    let (status, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-o", "modern,bogus"]);
    assert_ne!(status, 0);
    assert_eq!(err, "fridge: Illegal suboption \"bogus\"");
    if let Some(theirs) = memcached_says(&["-u", "nobody", "-p", "0", "-o", "modern,bogus"]) {
        assert_eq!(err, format!("fridge: {theirs}"));
    }
    let (status, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-o", "hashpower=20"]);
    assert_ne!(status, 0);
    assert!(err.starts_with("fridge: Unsupported suboption \"hashpower=20\": "), "{err}");
    let (_, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-o", "idle_timeout"]);
    assert_eq!(err, "fridge: Missing numeric argument for idle_timeout");

    let cli = <fridge_server::Cli as clap::Parser>::try_parse_from([
        "fridge",
        "-o",
        "modern,idle_timeout=7",
        "-o",
        "read_buf_mem_limit=128",
    ])
    .unwrap();
    let c = cli.into_config().unwrap();
    assert_eq!(c.idle_timeout, 7);
    assert_eq!(c.max_client_memory, Some(fridge_server::Size(128 << 20)));
}

#[test]
fn item_size_limits_read_like_memcached() {
    for args in [&["-I", "512"][..], &["-m", "64", "-I", "48m"][..]] {
        let mut all = vec!["-u", "nobody", "-p", "0"];
        all.extend_from_slice(args);
        let (status, err) = fridge_refuses(&all);
        assert_ne!(status, 0);
        if let Some(theirs) = memcached_says(&all) {
            assert_eq!(err, format!("fridge: {theirs}"), "{args:?}");
        }
    }
    let (_, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-m", "64", "-I", "9m"]);
    assert!(err.contains("fridge stores an item in one segment of at most 8 MiB"), "{err}");
    let (_, err) = fridge_refuses(&["-u", "nobody", "-p", "0", "-m", "8", "-t", "1"]);
    assert_eq!(
        err,
        "fridge: -m 8 is below fridge's minimum of 24 for items up to 1MiB (-I) and 1 \
         worker(s): 12 segments of 2MiB (memcached's minimum is twice -I)"
    );
}

/// What a server answers to each request, read up to the `MN` of a meta no-op sent after it.
fn replies(addr: SocketAddr, requests: &[&[u8]]) -> Vec<String> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    for request in requests {
        stream.write_all(request).unwrap();
        stream.write_all(b"mn\r\n").unwrap();
        let mut got = Vec::new();
        while !got.ends_with(b"MN\r\n") {
            let mut byte = [0u8; 1];
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "reply to {request:?}");
            got.push(byte[0]);
        }
        got.truncate(got.len() - 4);
        out.push(String::from_utf8_lossy(&got).into_owned());
    }
    out
}

#[test]
fn verbosity_and_shutdown_replies_are_memcacheds() {
    let requests: &[&[u8]] = &[
        b"verbosity 1\r\n",
        b"verbosity 1 noreply\r\n",
        b"verbosity 1 2\r\n",
        b"verbosity 1 2 3\r\n",
        b"verbosity\r\n",
        b"verbosity abc\r\n",
        b"verbosity -1\r\n",
        b"verbosity 99999999999999\r\n",
        b"verbosity 0\r\n",
        b"shutdown\r\n",
        b"shutdown graceful\r\n",
        b"shutdown a b\r\n",
    ];
    let server = start_with(config());
    let ours = replies(server.local_addr(), requests);
    assert_eq!(ours[0], "OK\r\n");
    assert_eq!(ours[9], "ERROR: shutdown not enabled\r\n");
    if let Some(memcached) = Memcached::start(false) {
        assert_eq!(ours, replies(memcached.addr, requests));
    }
    server.shutdown();
}

#[test]
fn with_enable_shutdown_the_shutdown_command_stops_the_server() {
    let server = start_with(Config { enable_shutdown: true, ..config() });
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    c.roundtrip(b"shutdown now\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n");
    c.roundtrip(b"shutdown graceful noreply\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n");
    c.send(b"shutdown\r\n");
    let mut rest = Vec::new();
    let _ = c.stream.read_to_end(&mut rest);
    assert!(rest.is_empty(), "closed without a reply, as memcached: {rest:?}");
    server.wait();
    assert!(TcpStream::connect(addr).is_err(), "the server stopped");
}

#[test]
fn verbosity_changes_what_the_running_server_logs() {
    let port = free_port();
    let mut child = spawn(&["-u", "nobody", "-m", "64", "-p", &port.to_string(), "-v"]);
    let stderr = child.0.as_mut().and_then(|c| c.stderr.take()).unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || lines.recv_timeout(Duration::from_secs(10)).expect("a log line");
    assert!(next().contains("serving memcached and RESP on 127.0.0.1:"), "the startup line");
    assert!(next().starts_with("fridge: configuration: listen=127.0.0.1 port="), "the settings");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut c = Conn::open(addr);
    c.roundtrip(b"verbosity 2\r\n", b"OK\r\n");
    let _second = Conn::open(addr);
    let line = next();
    assert!(line.contains("new client connection from 127.0.0.1:"), "-vv logs connections: {line}");
    assert!(lines.try_recv().is_err(), "at -v the first connection was not logged");
    stop(child);
}

/// Sends one UDP request datagram (`count` in its header) carrying `payload`.
fn udp_send(sock: &std::net::UdpSocket, to: SocketAddr, id: u16, count: u16, payload: &[u8]) {
    let mut datagram = [id.to_be_bytes(), 0u16.to_be_bytes(), count.to_be_bytes(), [0, 0]].concat();
    datagram.extend_from_slice(payload);
    sock.send_to(&datagram, to).unwrap();
}

/// Reads one reply message: its first datagram says how many there are.
fn udp_message(sock: &std::net::UdpSocket) -> Vec<Vec<u8>> {
    let mut buf = [0u8; 2048];
    let mut message = Vec::new();
    loop {
        let n = sock.recv(&mut buf).expect("a reply datagram");
        message.push(buf[..n].to_vec());
        let count = u16::from_be_bytes([buf[4], buf[5]]) as usize;
        if message.len() >= count {
            return message;
        }
    }
}

/// What a server answers over UDP to each of `cases` (payload, header count, messages
/// expected): the datagrams, headers included. A case expecting none is checked by a later
/// request's reply coming first.
fn udp_replies(server: SocketAddr, cases: &[(&[u8], u16, usize)]) -> Vec<Vec<Vec<u8>>> {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut all = Vec::new();
    for (i, &(payload, count, messages)) in cases.iter().enumerate() {
        let id = 100 + i as u16;
        udp_send(&sock, server, id, count, payload);
        if messages == 0 {
            udp_send(&sock, server, 999, 1, b"get udp-nothing\r\n");
            let reply = udp_message(&sock);
            assert_eq!(&reply[0][..2], 999u16.to_be_bytes(), "no reply to {payload:?}");
            all.push(Vec::new());
            continue;
        }
        let mut got = Vec::new();
        for _ in 0..messages {
            got.extend(udp_message(&sock));
        }
        assert!(got.iter().all(|d| d[..2] == id.to_be_bytes()), "replies carry the request id");
        all.push(got);
    }
    all
}

#[test]
fn udp_get_and_gets_carry_memcacheds_frame_header() {
    let udp_port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = start_with(Config { udp_port, ..config() });
    let big = "x".repeat(3000);
    let fill = format!("set big 3 0 3000\r\n{big}\r\nset a 1 0 2\r\nhi\r\n");
    let cases: &[(&[u8], u16, usize)] = &[
        (b"get a\r\n", 1, 1),
        (b"get big\r\n", 1, 1),
        (b"get a\r\nget a\r\n", 1, 2),
        (b"bogus\r\n", 1, 1),
        (b"get a\r\n", 2, 0),
        (b"get a", 1, 0),
        // Last: memcached answers a multiget in several one-datagram messages (a quirk of
        // its own), so this case is not compared with it.
        (b"get a missing big\r\n", 1, 1),
    ];
    let mut c = Conn::open(server.local_addr());
    c.roundtrip(fill.as_bytes(), b"STORED\r\nSTORED\r\n");
    let udp: SocketAddr = format!("127.0.0.1:{udp_port}").parse().unwrap();
    let ours = udp_replies(udp, cases);
    let get_big = &ours[1];
    assert_eq!(get_big.iter().map(Vec::len).collect::<Vec<_>>(), [1400, 1400, 249]);
    assert_eq!(&get_big[2][2..6], [0, 2, 0, 3], "sequence 2 of 3");
    let payload: Vec<u8> = get_big.iter().flat_map(|d| d[8..].to_vec()).collect();
    assert_eq!(payload, format!("VALUE big 3 3000\r\n{big}\r\nEND\r\n").as_bytes());

    let multi: Vec<u8> = ours[6].iter().flat_map(|d| d[8..].to_vec()).collect();
    assert_eq!(
        multi,
        format!("VALUE a 1 2\r\nhi\r\nVALUE big 3 3000\r\n{big}\r\nEND\r\n").as_bytes()
    );
    let gets = udp_replies(udp, &[(b"gets a\r\n", 1, 1), (b"set k 0 0 1\r\nv\r\n", 1, 1)]);
    let text = String::from_utf8_lossy(&gets[0][0][8..]).into_owned();
    assert!(text.starts_with("VALUE a 1 2 ") && text.ends_with("\r\nhi\r\nEND\r\n"), "{text}");
    assert_eq!(&gets[1][0][8..], b"SERVER_ERROR UDP serves get and gets only\r\n");

    if let Some(memcached) = Memcached::start(true) {
        Conn::open(memcached.addr).roundtrip(fill.as_bytes(), b"STORED\r\nSTORED\r\n");
        let same = &cases[..cases.len() - 1];
        let theirs = udp_replies(memcached.addr, same);
        for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(o, t, "{:?}", String::from_utf8_lossy(same[i].0));
        }
    }
    server.shutdown();
}

#[test]
fn an_unwritable_pid_file_is_reported_as_memcached_does_and_not_fatal() {
    let port = free_port();
    let mut child = spawn(&[
        "-u",
        "nobody",
        "-m",
        "64",
        "-p",
        &port.to_string(),
        "-P",
        "/nonexistent-dir/x.pid",
    ]);
    let stderr = child.0.as_mut().and_then(|c| c.stderr.take()).unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "Could not open the pid file /nonexistent-dir/x.pid.tmp for writing: No such file or directory",
        "memcached's words (memcached 1.6.18 prints the same line)"
    );
    wait_port(format!("127.0.0.1:{port}").parse().unwrap());
    stop(child);
}

/// A fridge started with `env` added to its environment.
fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Fridge {
    let child = Command::new(FRIDGE)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("FRIDGE_USER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fridge runs");
    Fridge(Some(child))
}

/// The next datagram on `socket` (10 s at most).
fn notification(socket: &std::os::unix::net::UnixDatagram) -> String {
    socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 1024];
    let n = socket.recv(&mut buf).expect("a notification within 10 s");
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

/// fridge under a pretend systemd: `READY=1` once the port serves, `RELOADING=1` then
/// `READY=1` around a SIGHUP, `STOPPING=1` on SIGTERM, sent to `notify` (`NOTIFY_SOCKET`).
fn speaks_sd_notify(socket: &std::os::unix::net::UnixDatagram, notify: &str) {
    let port = free_port();
    let p = port.to_string();
    let fridge =
        spawn_env(&["-u", "nobody", "-m", "64", "-t", "1", "-p", &p], &[("NOTIFY_SOCKET", notify)]);
    let ready = notification(socket);
    assert!(ready.starts_with("READY=1\nSTATUS=fridge "), "{ready:?}");
    assert!(ready.contains(&format!("127.0.0.1:{p}")), "the status names the port: {ready:?}");
    // READY came after binding and starting the workers: the port answers at once.
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("the port accepts once READY");
    roundtrip(&mut conn, b"version\r\n", b"VERSION ");
    signal(fridge.id(), "-HUP");
    let reloading = notification(socket);
    assert!(reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="), "{reloading:?}");
    assert!(notification(socket).starts_with("READY=1\n"), "ready again after the reload");
    signal(fridge.id(), "-TERM");
    assert!(notification(socket).starts_with("STOPPING=1\n"));
    let mut child = { fridge }.0.take().unwrap();
    assert!(child.wait().unwrap().success(), "graceful exit");
}

#[test]
fn systemd_hears_ready_reloading_and_stopping_on_a_socket_file() {
    let dir = scratch_dir("notify");
    let path = dir.join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    // systemd's socket is writable by every service user; fridge sends as `-u nobody`.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    speaks_sd_notify(&socket, path.to_str().unwrap());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn systemd_hears_ready_and_stopping_on_an_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("fridge-deploy-notify-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
    let socket = std::os::unix::net::UnixDatagram::bind_addr(&addr).unwrap();
    speaks_sd_notify(&socket, &format!("@{name}"));
}

#[test]
fn check_config_validates_without_binding() {
    let dir = scratch_dir("check");
    // The port is taken: a check binds nothing, so it does not notice.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let hash = PasswordHash::generate(b"s3cret").unwrap().to_string();
    let good = dir.join("good.toml");
    let good_text = format!(
        "memory = \"64MiB\"\nworkers = 1\n[[tenants]]\nname = \"shop\"\n\
         password_sha256 = \"{hash}\"\nreserved = \"8MiB\"\n"
    );
    std::fs::write(&good, good_text).unwrap();
    let out = run(
        FRIDGE,
        &["--check-config", "-u", "nobody", "--config", good.to_str().unwrap(), "-p", &port],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("fridge: configuration: listen=127.0.0.1 "), "{stdout}");
    assert!(stdout.contains(&format!(" port={port} ")), "flags count: {stdout}");
    assert!(stdout.contains("tenants=[shop(8MiB)]"), "{stdout}");
    assert!(!stdout.contains(&hash), "no secrets: {stdout}");
    assert!(stdout.trim_end().ends_with("the configuration is valid"), "{stdout}");

    let refused = |file_text: &str, extra: &[&str]| {
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, file_text).unwrap();
        let mut args = vec!["--check-config", "-u", "nobody", "--config", bad.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = run(FRIDGE, &args);
        assert!(out.stdout.is_empty(), "nothing printed but the reason");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).trim().to_string())
    };
    let (code, err) = refused("[[tenants]]\nname = \"shop\"\n", &[]);
    assert_eq!(code, Some(1));
    assert!(err.starts_with("fridge: nobody could log in"), "{err}");
    let (code, err) = refused("memory = \"lots\"\n", &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("line 1 column 10: bad size \"lots\""), "{err}");
    let (code, err) = refused("", &["-c", "0"]);
    assert_eq!((code, &err[..]), (Some(1), "fridge: Maximum connections must be greater than 0"));
    let (code, err) = refused("", &["--no-such-flag"]);
    assert_eq!(code, Some(1), "a flag clap refuses is an invalid configuration too: {err}");
    if is_root() {
        // Not root, `-u` is ignored, as by memcached (and by a start).
        let out = run(FRIDGE, &["--check-config", "-u", "no-such-user-here"]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(err, "fridge: can't find the user no-such-user-here to switch to");
    }
    drop(taken);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ping_answers_for_a_running_server_and_fails_on_a_closed_port() {
    let port = free_port();
    let p = port.to_string();
    let fridge = spawn(&["-u", "nobody", "-m", "64", "-t", "1", "-p", &p]);
    wait_port(format!("127.0.0.1:{port}").parse().unwrap());
    let out = run(FRIDGE, &["ping", "--port", &p]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("VERSION "));
    let out = run(FRIDGE, &["ping", "--resp", "-p", &p, "--host", "localhost"]);
    assert_eq!((out.status.code(), &out.stdout[..]), (Some(0), &b"+PONG\n"[..]));
    // FRIDGE_PORT, as the container image sets it for the server, is where ping looks.
    let out = Command::new(FRIDGE).args(["ping"]).env("FRIDGE_PORT", &p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    stop(fridge);
    let out = run(FRIDGE, &["ping", "-p", &p, "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1), "the server is gone");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("fridge ping: cannot connect to 127.0.0.1:"), "{err}");
}

/// `deploy/fridge.service` as systemd reads it (`systemd-analyze verify`, with the binary
/// this test built in place of `/usr/local/bin/fridge`), and the parts fridge relies on.
#[test]
fn the_systemd_unit_verifies() {
    let unit = include_str!("../../../deploy/fridge.service");
    for line in [
        "Type=notify",
        "ExecStart=/usr/local/bin/fridge --config /etc/fridge/fridge.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "User=fridge",
    ] {
        assert!(unit.lines().any(|l| l == line), "the unit has {line}");
    }
    let Ok(out) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped: systemd-analyze is not installed (scripts/test installs systemd)");
        return;
    };
    assert!(out.status.success());
    let dir = scratch_dir("unit");
    let path = dir.join("fridge.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/fridge", FRIDGE)).unwrap();
    let out = run("systemd-analyze", &["verify", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "systemd-analyze verify: {err}");
    let _ = std::fs::remove_dir_all(dir);
}
