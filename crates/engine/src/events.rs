//! Key events: the keys the engine drops on its own — items it finds expired (on a lookup,
//! a write over them, the expiry sweep, a cleaning pass) and items it evicts to make room —
//! for an embedding server that tells its clients (Redis's `expired` and `evicted` keyspace
//! notifications, client-side caching's invalidations).
//!
//! The engine knows nothing of what the server does with them: it appends a [`KeyEvent`]
//! to one bounded lock-free queue (`crossbeam_queue::ArrayQueue`) while the server has
//! turned events on ([`Engine::set_key_events`](crate::Engine::set_key_events)), and the
//! server pops them ([`Engine::pop_key_event`](crate::Engine::pop_key_event)). Off — the
//! default — a dropped item costs one relaxed load. On, it costs a copy of its key; a full
//! queue (the server lagging) drops the event and counts it
//! ([`Engine::key_events_dropped`](crate::Engine::key_events_dropped)), so neither the
//! cleaner nor a writer ever waits for the server.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_queue::ArrayQueue;

use crate::tenant::TenantId;

/// Why the engine dropped a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyEventKind {
    /// Its time was up.
    Expired,
    /// It was evicted to make room.
    Evicted,
}

/// A key the engine dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    /// The key's tenant.
    pub tenant: TenantId,
    /// The key's database (as stored: the server maps it to the database clients see).
    pub db: u8,
    /// Why it was dropped.
    pub kind: KeyEventKind,
    /// The key.
    pub key: Box<[u8]>,
}

/// Events queued before the server takes them: at most this many (a key each).
pub(crate) const QUEUE_CAPACITY: usize = 64 * 1024;

/// The queue and its switch. The queue (32 bytes a slot, 2 MiB) is made when events are
/// first turned on.
#[derive(Default)]
pub(crate) struct KeyEvents {
    on: AtomicBool,
    queue: OnceLock<ArrayQueue<KeyEvent>>,
    dropped: AtomicU64,
}

impl KeyEvents {
    /// Records that `key` of `tenant`'s database `db` was dropped, if events are on.
    #[inline]
    pub(crate) fn note(&self, tenant: u16, db: u8, kind: KeyEventKind, key: &[u8]) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let Some(queue) = self.queue.get() else { return };
        let event = KeyEvent { tenant: TenantId(tenant), db, kind, key: key.into() };
        if queue.push(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn set(&self, on: bool) {
        if on {
            self.queue.get_or_init(|| ArrayQueue::new(QUEUE_CAPACITY));
        }
        self.on.store(on, Ordering::Relaxed);
        if !on {
            while self.pop().is_some() {}
        }
    }

    pub(crate) fn pop(&self) -> Option<KeyEvent> {
        self.queue.get()?.pop()
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
