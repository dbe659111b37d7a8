//! What the `fridge` binary does to its own process around the server, in memcached's order
//! and with memcached's messages and exit statuses (`main` in memcached 1.6's `memcached.c`;
//! statuses from `sysexits.h`):
//!
//! 1. [`raise_open_files`]: room for `-c` connections in `RLIMIT_NOFILE`, or refuse to start;
//! 2. [`user_to_become`]: started as root, a `-u` user is required and must exist;
//! 3. the binary binds its sockets ([`crate::Listeners::bind`]), then
//! 4. [`daemonize`] for `-d`, [`become_user`] for `-u` (after binding, so a port below 1024
//!    works; memcached drops root before it binds), and [`PidFile::write`] for `-P`;
//! 5. the server starts its threads.
//!
//! Differences from memcached, on purpose: the open-files limit is only ever raised (memcached
//! sets it to exactly `-c`, lowering it too), and the pid file is removed on a graceful exit.

use std::path::{Path, PathBuf};

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::unistd::{self, User};

use crate::config::Config;

/// `EX_USAGE`: a command-line mistake.
pub const EX_USAGE: i32 = 64;
/// `EX_NOUSER`: the `-u` user does not exist.
pub const EX_NOUSER: i32 = 67;
/// `EX_OSERR`: the system refused (a limit, a socket, an identity).
pub const EX_OSERR: i32 = 71;

/// A startup step that failed: the message to print and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// memcached's message for it.
    pub message: String,
    /// memcached's exit status for it.
    pub status: i32,
}

fn fail(message: impl Into<String>, status: i32) -> Failure {
    Failure { message: message.into(), status }
}

/// Descriptors the server holds besides its client connections: standard streams, listeners,
/// one poll and one waker per worker, the connections waiting to be refused, and some slack.
fn reserved_descriptors(config: &Config) -> u64 {
    let listeners = config.listen.split(',').count() as u64 + 2;
    3 + listeners + 2 * config.worker_count() as u64 + 64 + 32
}

/// Makes sure `RLIMIT_NOFILE` allows `max_connections` connections (memcached's `-c`):
/// raises the soft limit, and the hard one if it must (root with `CAP_SYS_RESOURCE` only),
/// never lowers either. It asks for the connections plus the server's own descriptors, and
/// settles for the connections alone (memcached's exact request, which counts its own
/// descriptors within `-c`) where the system allows no more; if not even that, it fails with
/// memcached's message.
pub fn raise_open_files(config: &Config) -> Result<(), Failure> {
    let connections = config.max_connections as u64;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|_| fail("failed to getrlimit number of files", EX_OSERR))?;
    for needed in [connections.saturating_add(reserved_descriptors(config)), connections] {
        if soft >= needed || setrlimit(Resource::RLIMIT_NOFILE, needed, hard.max(needed)).is_ok() {
            return Ok(());
        }
    }
    Err(fail(
        "failed to set rlimit for open files. Try starting as root or requesting smaller \
         maxconns value.",
        EX_OSERR,
    ))
}

/// Whether this process runs as root, by real or effective id (memcached checks both).
pub fn is_root() -> bool {
    unistd::getuid().is_root() || unistd::geteuid().is_root()
}

/// The user to become after binding: `None` when not root (memcached ignores `-u` then).
/// Root without `-u`, or an unknown user, fails with memcached's message.
pub fn user_to_become(config: &Config) -> Result<Option<User>, Failure> {
    if !is_root() {
        return Ok(None);
    }
    let name = match config.user.as_deref() {
        Some(name) if !name.is_empty() => name,
        _ => return Err(fail("can't run as root without the -u switch", EX_USAGE)),
    };
    match User::from_name(name) {
        Ok(Some(user)) => Ok(Some(user)),
        _ => Err(fail(format!("can't find the user {name} to switch to"), EX_NOUSER)),
    }
}

/// Becomes `user`: no supplementary groups, its group, then its uid (for every thread: call it
/// before any is started anyway). memcached's messages.
pub fn become_user(user: &User) -> Result<(), Failure> {
    if let Err(e) = unistd::setgroups(&[]) {
        // EPERM: already without the privilege to change groups, as memcached tolerates.
        if e != nix::errno::Errno::EPERM {
            return Err(fail(format!("failed to drop supplementary groups: {e}"), EX_OSERR));
        }
    }
    unistd::setgid(user.gid)
        .and_then(|()| unistd::setuid(user.uid))
        .map_err(|_| fail(format!("failed to assume identity of user {}", user.name), EX_OSERR))
}

/// Detaches from the terminal (memcached's `-d`): forks, the parent exits, the child starts a
/// new session in `/`, its standard streams on `/dev/null` unless `keep_output` (memcached
/// keeps them with `-v`). Must run before any thread is started: only the calling thread
/// survives a fork.
pub fn daemonize(keep_output: bool) -> Result<(), Failure> {
    unistd::daemon(false, keep_output)
        .map_err(|_| fail("failed to daemon() in order to daemonize", 1))
}

/// The `-P` pid file, removed when dropped (on a graceful exit).
#[derive(Debug)]
pub struct PidFile(PathBuf);

impl PidFile {
    /// Writes this process's id and a newline to `path`, through `<path>.tmp` renamed into
    /// place so a reader never sees it empty (as memcached). A failure is reported with
    /// memcached's message and is not fatal, as in memcached: `None`.
    pub fn write(path: &Path) -> Option<PidFile> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        if let Err(e) = std::fs::write(&tmp, format!("{}\n", std::process::id())) {
            let e = strerror(&e);
            log::error!("Could not open the pid file {} for writing: {e}", tmp.display());
            return None;
        }
        if let Err(e) = std::fs::rename(&tmp, path) {
            let (from, to, e) = (tmp.display(), path.display(), strerror(&e));
            log::error!("Could not rename the pid file from {from} to {to}: {e}");
            let _ = std::fs::remove_file(&tmp);
            return None;
        }
        Some(PidFile(path.to_path_buf()))
    }
}

/// The C library's words for an error, as memcached's `perror` prints them.
fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_string(),
        None => e.to_string(),
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
