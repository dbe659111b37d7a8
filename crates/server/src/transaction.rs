//! The transaction gates: what makes Redis's `EXEC` atomic across workers.
//!
//! Redis runs every command on one thread, so a transaction (`MULTI` … `EXEC`, Redis's
//! `src/multi.c`) is atomic for free. fridge runs one worker per core; here each worker has a
//! gate, a mutex that only it takes in the ordinary course:
//!
//! - A worker holds its own gate while it runs one command (any protocol), and releases it
//!   before the next. Uncontended, that is one atomic compare-and-swap and one atomic swap on a
//!   cache line no other thread touches — no shared counter, no wait.
//! - `EXEC` (run outside its own worker's gate) takes every worker's gate, in index order,
//!   checks its watched keys, runs the queued commands, then releases them all. While it holds
//!   them no other worker is between the start and the end of a command, so no client sees a
//!   partial transaction and no command's effect lands between the WATCH check and the queue.
//! - A RESP command that writes several keys (`MSET`, `DEL a b`, `RENAME`, `SMOVE`, `LMOVE`,
//!   the `*STORE`s…: `resp::writes_several_keys`) takes every gate the same way, so it too is
//!   never seen half done, though the engine runs it as several steps. Scripts take every gate
//!   for their whole run.
//!
//! No deadlock: a worker holds at most its own gate while it runs a command, and a command
//! never waits for another gate; whoever takes several (`EXEC`, scripts, multi-key writes)
//! takes them in one global order (index order) and holds none before. Below
//! a gate, the engine's locks (`docs/threads.md`) are taken as always. The engine's own threads
//! (cleaner, expiry sweep) take no gate: they only evict or drop expired items, which a
//! transaction could see happen between two of its commands as it could in Redis after
//! `EXEC`, and which WATCH treats as a change. The memcached UDP threads have gates too (after
//! the workers'), held while they answer one datagram.

use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use fridge_engine::TenantId;

/// One gate per worker, then one per UDP thread.
#[derive(Debug)]
pub(crate) struct Gates {
    gates: Box<[Mutex<()>]>,
}

/// Every gate, held (dropping it opens them).
pub(crate) struct AllGates<'a> {
    _held: Vec<MutexGuard<'a, ()>>,
    /// This one marked the thread as holding every gate (the outermost).
    outermost: bool,
}

impl Drop for AllGates<'_> {
    fn drop(&mut self) {
        if self.outermost {
            HOLDS_ALL.set(false);
        }
    }
}

thread_local! {
    /// The thread holds every gate: an `EVAL` queued in a transaction runs inside `EXEC`'s.
    static HOLDS_ALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Gates {
    pub fn new(workers: usize) -> Self {
        Self { gates: (0..workers.max(1)).map(|_| Mutex::new(())).collect() }
    }

    /// Holds worker `w`'s gate while one command runs (memcached's commands: they wait out a
    /// script, as they have no `BUSY` reply).
    #[inline]
    pub fn enter(&self, w: usize) -> Option<MutexGuard<'_, ()>> {
        let g = self.gates.get(w)?;
        Some(g.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Holds worker `w`'s gate while one command runs, unless `give_up` says so first (a
    /// script has run past `busy-reply-threshold`: see [`poll_lock`]). (A gate guards no
    /// data, so a panic that poisoned it changes nothing.)
    #[inline]
    pub fn enter_unless(
        &self,
        w: usize,
        give_up: impl Fn() -> bool,
    ) -> Result<Option<MutexGuard<'_, ()>>, GaveUp> {
        match self.gates.get(w) {
            Some(g) => poll_lock(g, give_up).map(Some),
            None => Ok(None),
        }
    }

    /// Holds every gate, taken in index order, unless `give_up` says so first (then none is
    /// held). The caller must hold none of them, or all: a script queued in a transaction
    /// runs inside `EXEC`, whose gates it then uses (nothing more is taken).
    pub fn enter_all_unless(&self, give_up: impl Fn() -> bool) -> Result<AllGates<'_>, GaveUp> {
        if HOLDS_ALL.get() {
            return Ok(AllGates { _held: Vec::new(), outermost: false });
        }
        let mut held = Vec::with_capacity(self.gates.len());
        for g in &self.gates {
            held.push(poll_lock(g, &give_up)?);
        }
        HOLDS_ALL.set(true);
        Ok(AllGates { _held: held, outermost: true })
    }
}

/// [`poll_lock`] stopped waiting.
#[derive(Debug)]
pub(crate) struct GaveUp;

/// Takes `m`, or gives up when `give_up` says so while it waits. Uncontended, this is one
/// `try_lock` (what `lock` costs). Contended, it spins a little, then yields, then sleeps
/// 100 µs between tries, asking `give_up` each time: a worker never sleeps in `lock` behind
/// a script that may run for seconds, so it can answer `BUSY` once the script is past its
/// threshold (`docs/threads.md`).
pub(crate) fn poll_lock<T>(
    m: &Mutex<T>,
    give_up: impl Fn() -> bool,
) -> Result<MutexGuard<'_, T>, GaveUp> {
    let mut tries = 0u32;
    loop {
        match m.try_lock() {
            Ok(g) => return Ok(g),
            Err(TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        if give_up() {
            return Err(GaveUp);
        }
        tries += 1;
        if tries < 64 {
            std::hint::spin_loop();
        } else if tries < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// A connection's transaction state (its commands: `crate::resp::multi`).
#[derive(Debug, Default)]
pub(crate) struct Transaction {
    /// Between MULTI and EXEC/DISCARD.
    pub open: bool,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub failed: bool,
    /// The queued commands, each as a RESP multibulk request.
    pub queue: Vec<u8>,
    /// How many commands `queue` holds.
    pub count: usize,
    /// A queued command writes (a `CLIENT PAUSE WRITE` pauses its EXEC; `crate::pause`).
    pub writes: bool,
    /// The watched keys.
    pub watched: Vec<Watched>,
    /// Bytes the watched keys take.
    pub watched_bytes: usize,
    /// Cluster mode: the slot of the queued commands' keys, and whether they span several
    /// (EXEC then answers `CROSSSLOT`; `crate::cluster`).
    pub slot: Option<u16>,
    pub cross_slot: bool,
}

/// One watched key and what it was when watched: `(CAS, expiry)`, `None` for no item.
#[derive(Debug)]
pub(crate) struct Watched {
    pub tenant: TenantId,
    /// The (logical) database it was watched in: after a `SWAPDB` of that database, `EXEC`
    /// looks in the database swapped in and sees a change wherever the key exists in either
    /// (Redis's `touchAllWatchedKeysInDb`).
    pub db: u8,
    pub key: Box<[u8]>,
    pub seen: Option<(u64, Option<u64>)>,
}

impl Transaction {
    pub fn bytes(&self) -> usize {
        self.queue.len() + self.watched_bytes
    }

    /// Memory the queue and the watched keys take (counted in the connection's share of
    /// `max_client_memory`, like its buffers).
    pub fn memory_bytes(&self) -> usize {
        self.queue.capacity() + self.watched_bytes
    }
}
