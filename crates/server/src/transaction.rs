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
//!
//! No deadlock: a worker holds at most its own gate while it runs a command, and a command
//! never waits for another gate; `EXEC`s take gates in one global order (index order). Below
//! a gate, the engine's locks (`docs/threads.md`) are taken as always. The engine's own threads
//! (cleaner, expiry sweep) take no gate: they only evict or drop expired items, which a
//! transaction could see happen between two of its commands as it could in Redis after
//! `EXEC`, and which WATCH treats as a change. The memcached UDP threads have gates too (after
//! the workers'), held while they answer one datagram.

use std::sync::{Mutex, MutexGuard};

use fridge_engine::TenantId;

/// One gate per worker, then one per UDP thread.
#[derive(Debug)]
pub(crate) struct Gates {
    gates: Box<[Mutex<()>]>,
}

/// Every gate, held (dropping it opens them).
pub(crate) struct AllGates<'a> {
    _held: Vec<MutexGuard<'a, ()>>,
}

impl Gates {
    pub fn new(workers: usize) -> Self {
        Self { gates: (0..workers.max(1)).map(|_| Mutex::new(())).collect() }
    }

    /// Holds worker `w`'s gate while one command runs. (A gate guards no data, so a panic
    /// that poisoned it changes nothing.)
    #[inline]
    pub fn enter(&self, w: usize) -> Option<MutexGuard<'_, ()>> {
        let g = self.gates.get(w)?;
        Some(g.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Holds every gate, taken in index order. The caller must hold none.
    pub fn enter_all(&self) -> AllGates<'_> {
        let held = self
            .gates
            .iter()
            .map(|g| g.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
            .collect();
        AllGates { _held: held }
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
    /// The watched keys.
    pub watched: Vec<Watched>,
    /// Bytes the watched keys take.
    pub watched_bytes: usize,
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
