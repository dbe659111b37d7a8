//! Blocking pops: how clients that wait for a list or a sorted set (BLPOP…, BZPOPMIN…; the
//! commands are in `resp/blocking.rs`) are woken.
//!
//! A blocking command that finds nothing to pop *parks* its connection as `CLIENT PAUSE`
//! does (`crate::pause`): the request stays in the read buffer, and the worker leaves the
//! connection off its run queue. Before it looks at its keys, the command marks its worker
//! as having blocked clients and notes the [`Blocking::generation`]. Every write that
//! publishes a list, sorted set or generic event (pushes, stores, RENAME, COPY, MOVE…) bumps
//! the generation and wakes the marked workers; a worker requeues its blocked connections
//! whose noted generation is past or whose deadline has come, and all of them at each
//! housekeeping tick. A requeued command looks again: it pops, answers nil at its deadline,
//! or parks again. No push is missed (the mark and the note come before the look); a write
//! while nobody waits costs one relaxed load.
//!
//! Unlike Redis, clients blocked on one key are not served in the order they blocked: the
//! first to run again after a push takes the element.

use std::sync::atomic::{AtomicU64, Ordering};

/// The blocked clients' wake-ups (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Blocking {
    /// Bumped by each write that may have given a blocked client something to pop.
    generation: AtomicU64,
    /// A bit per worker (modulo 64) that holds blocked connections.
    workers: AtomicU64,
}

impl Blocking {
    /// The generation now.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Worker `w` holds (or is about to hold) blocked connections.
    pub(crate) fn mark(&self, w: usize) {
        self.workers.fetch_or(1 << (w % 64), Ordering::AcqRel);
    }

    /// Worker `w` holds none. (With more than 64 workers two share a bit: the other's
    /// clients then wait for a tick at most.)
    pub(crate) fn unmark(&self, w: usize) {
        self.workers.fetch_and(!(1 << (w % 64)), Ordering::AcqRel);
    }

    /// A list or sorted set may have changed: calls `wake` for each of the `workers` that
    /// holds blocked connections.
    #[inline]
    pub(crate) fn signal(&self, workers: usize, wake: impl Fn(usize)) {
        let marked = self.workers.load(Ordering::Acquire);
        if marked == 0 {
            return;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        for w in 0..workers {
            if marked & (1 << (w % 64)) != 0 {
                wake(w);
            }
        }
    }
}
