//! Blocking pops: the order in which clients that wait for a list or a sorted set (BLPOP…,
//! BZPOPMIN…; the commands are in `resp/blocking.rs`) are served, and how they are woken.
//!
//! A blocking command that finds nothing to pop *parks* its connection as `CLIENT PAUSE`
//! does (`crate::pause`): the request stays in the read buffer, and the worker leaves the
//! connection off its run queue. Before it parks the first time, the command *registers*
//! here: one entry per client ([`Waiter`]) and, for each of its keys, a place at the end of
//! that key's wait queue — one queue per (kind waited for, tenant, logical database, key),
//! ordered by registration. Then it looks at its keys once more, so that a push between its
//! first look and its registration is not missed. The entries go when the command answers
//! (an element, nil at its deadline, an error, `CLIENT UNBLOCK`) or its connection closes,
//! so they hold no more than the blocked requests themselves.
//!
//! First come, first served, as Redis: a blocking command may pop from a key only while no
//! client that blocked earlier on that key for the same kind still waits
//! ([`Blocking::may_take`]), whichever worker either runs on. A client that has just arrived
//! waits behind those already there. A write that may have given a list or sorted set
//! something to pop (pushes, stores, RENAME, COPY, MOVE…; `resp::notify`) wakes only the
//! *first* waiter of the key's queue: its id and slot go on its worker's ready list, the
//! worker's flag is raised and its poll woken, and the worker requeues the connection. When
//! a waiter leaves a queue it was the first of, the next one is woken in turn: it pops what
//! is left, or parks again. So a push of three elements serves the first three waiters in
//! order, one after another, and a waiter that times out, disconnects or cannot take the
//! element (`WRONGTYPE`) hands its turn on.
//!
//! Which key serves a client blocked on several: the one that woke it first — Redis serves
//! the keys in the order they received data — then the others in argument order. A woken
//! command run again skips a key that now holds another kind (Redis 7.0 leaves the client
//! blocked). Each waiter's worker runs it again at its deadline, and every blocked command
//! looks again at each housekeeping tick besides (a backstop for writes that signal nothing:
//! its turn still holds). No timer is added: an idle server stays asleep.
//!
//! Unlike Redis, which serves the waiters before the pushing client's next command runs, a
//! waiter is served on its own worker right after the push: a command that comes at once
//! may still see the element (a pipelined push's reply counts it; a non-blocking pop from
//! another client may take it first).
//!
//! Costs: a write while nobody waits, one relaxed load ([`Blocking::signal`]); a blocking
//! command that finds something at once while nobody waits, one more; a worker's loop, one
//! for its flag. Everything else — registering, a turn's check, a wake-up — takes the one
//! lock, and only while clients wait.
//!
//! `CLIENT UNBLOCK` ([`Blocking::unblock`]) marks a parked waiter and wakes it like a push;
//! run again, the command answers as at its timeout, or with the `UNBLOCKED` error. A client
//! whose command is running at that moment is not blocked for it (`0`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use fridge_engine::TenantId;

/// What a blocked command waits for: its keys wait in that kind's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wants {
    List = 1,
    Zset = 2,
}

/// [`Blocking::signal`]'s kinds: a list may have something to pop.
pub(crate) const LISTS: u8 = Wants::List as u8;
/// A sorted set may have something to pop.
pub(crate) const ZSETS: u8 = Wants::Zset as u8;

/// How `CLIENT UNBLOCK` ends a blocked command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unblock {
    /// As at its timeout.
    Timeout,
    /// With `-UNBLOCKED`.
    Error,
}

/// What a registered command learns when it runs again ([`Blocking::resume`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resumed {
    /// The key (its position among the command's keys) whose data woke it first.
    pub first: Option<usize>,
    /// `CLIENT UNBLOCK` ended it.
    pub unblock: Option<Unblock>,
}

/// One run of a blocking command: the turn it asks for on its keys, and the order it looks
/// at them in.
#[derive(Clone, Debug)]
pub(crate) struct Turn {
    pub client: u64,
    pub wants: Wants,
    pub tenant: TenantId,
    /// The client's logical database.
    pub db: u8,
    /// Where its keys are among the command's arguments.
    pub keys: Range<usize>,
    /// The key (a position among them) that woke it first: looked at first.
    pub first: Option<usize>,
    /// Run again after it blocked: a key that holds another kind is passed over.
    pub resumed: bool,
}

impl Turn {
    /// Whether the command may pop from `key` now ([`Blocking::may_take`]).
    #[inline]
    pub(crate) fn may_take(&self, b: &Blocking, key: &[u8]) -> bool {
        b.may_take(self.client, self.wants, self.tenant, self.db, key)
    }
}

/// The argument positions of `keys` in the order a command looks at them: the one at
/// position `first` among them, if any, then the others in order.
pub(crate) fn order(keys: Range<usize>, first: Option<usize>) -> impl Iterator<Item = usize> {
    let first = first.map(|f| keys.start + f).filter(|i| keys.contains(i));
    first.into_iter().chain(keys.filter(move |&i| Some(i) != first))
}

/// The blocked clients' queues and wake-ups (see the module doc).
#[derive(Debug)]
pub(crate) struct Blocking {
    /// Registered waiters: 0 keeps writes to one load.
    waiting: AtomicUsize,
    /// Per worker: its ready list may hold entries.
    ready: Box<[AtomicBool]>,
    waits: Mutex<Waits>,
}

/// Behind [`Blocking`]'s lock.
#[derive(Debug, Default)]
struct Waits {
    /// Per queue key ([`queue_key`]): the waiters by registration, with the position of that
    /// key among the waiter's keys.
    queues: HashMap<Vec<u8>, BTreeMap<u64, (u64, usize)>>,
    /// By client id.
    waiters: HashMap<u64, Waiter>,
    /// Per worker: the (client id, slot) of the waiters woken since it last looked.
    ready: Vec<Vec<(u64, usize)>>,
    /// Workers to wake once the operation is done.
    to_wake: Vec<usize>,
    /// The next registration's number.
    next: u64,
    /// A queue key being looked up (no allocation per look-up).
    scratch: Vec<u8>,
}

/// One blocked command.
#[derive(Debug)]
struct Waiter {
    /// Its registration's number: its place in its queues.
    seq: u64,
    worker: usize,
    slot: usize,
    tenant: TenantId,
    /// Its queue keys, in the command's key order.
    keys: Vec<Vec<u8>>,
    /// Its command is running on its worker (not blocked for `CLIENT UNBLOCK`).
    running: bool,
    /// It is on its worker's ready list.
    woken: bool,
    first: Option<usize>,
    unblock: Option<Unblock>,
}

/// A queue's key: the kind, the tenant, the logical database, the key.
fn queue_key(into: &mut Vec<u8>, wants: Wants, tenant: TenantId, db: u8, key: &[u8]) {
    into.clear();
    into.push(wants as u8);
    into.extend_from_slice(&tenant.0.to_le_bytes());
    into.push(db);
    into.extend_from_slice(key);
}

impl Blocking {
    /// For a server with `workers` workers.
    pub(crate) fn new(workers: usize) -> Self {
        let waits = Waits { ready: vec![Vec::new(); workers], ..Waits::default() };
        Blocking {
            waiting: AtomicUsize::new(0),
            ready: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            waits: Mutex::new(waits),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waits> {
        self.waits.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Raises the flags of the workers the operation woke, and wakes them.
    fn flush(&self, w: &mut Waits, wake: impl Fn(usize)) {
        for i in w.to_wake.drain(..) {
            if let Some(flag) = self.ready.get(i) {
                flag.store(true, Ordering::Release);
            }
            wake(i);
        }
    }

    /// Client `by`'s command may have given `key` (of `tenant`'s logical database `db()`)
    /// something to pop, of the `kinds` ([`LISTS`], [`ZSETS`]): wakes the first waiter of each
    /// such queue (not `by` itself: a waiter's own pop or move, whose command is answering).
    #[inline]
    pub(crate) fn signal(
        &self,
        (by, kinds): (u64, u8),
        tenant: TenantId,
        db: impl FnOnce() -> u8,
        key: &[u8],
        wake: impl Fn(usize),
    ) {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.signal_waiters((by, kinds), tenant, db(), key, wake);
    }

    fn signal_waiters(
        &self,
        (by, kinds): (u64, u8),
        tenant: TenantId,
        db: u8,
        key: &[u8],
        wake: impl Fn(usize),
    ) {
        let mut guard = self.lock();
        let w = &mut *guard;
        for wants in [Wants::List, Wants::Zset] {
            if kinds & wants as u8 == 0 {
                continue;
            }
            queue_key(&mut w.scratch, wants, tenant, db, key);
            let head = w.queues.get(&w.scratch[..]).and_then(|q| q.values().next().copied());
            if let Some((client, index)) = head.filter(|&(client, _)| client != by) {
                w.wake_waiter(client, Some(index));
            }
        }
        self.flush(w, wake);
    }

    /// Registers `client`'s blocked command (it is running: [`Blocking::park`] comes next),
    /// at the end of the queue of each of its `keys`.
    pub(crate) fn register<'k>(
        &self,
        client: u64,
        (worker, slot): (usize, usize),
        (wants, tenant, db): (Wants, TenantId, u8),
        keys: impl Iterator<Item = &'k [u8]>,
        wake: impl Fn(usize),
    ) {
        let mut guard = self.lock();
        let w = &mut *guard;
        if w.remove(client) {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        }
        let seq = w.next;
        w.next += 1;
        let mut list = Vec::new();
        for (i, key) in keys.enumerate() {
            let mut q = Vec::with_capacity(3 + key.len());
            queue_key(&mut q, wants, tenant, db, key);
            match w.queues.get_mut(&q) {
                Some(queue) => {
                    queue.entry(seq).or_insert((client, i));
                }
                None => {
                    w.queues.insert(q.clone(), BTreeMap::from([(seq, (client, i))]));
                }
            }
            list.push(q);
        }
        let waiter = Waiter {
            seq,
            worker,
            slot,
            tenant,
            keys: list,
            running: true,
            woken: false,
            first: None,
            unblock: None,
        };
        w.waiters.insert(client, waiter);
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.flush(w, wake);
    }

    /// `client`'s registered command runs again: what woke it, and whether `CLIENT UNBLOCK`
    /// ended it.
    pub(crate) fn resume(&self, client: u64) -> Resumed {
        let mut w = self.lock();
        match w.waiters.get_mut(&client) {
            Some(x) => {
                x.running = true;
                x.woken = false;
                Resumed { first: x.first.take(), unblock: x.unblock }
            }
            None => Resumed::default(),
        }
    }

    /// `client`'s registered command found nothing: it is blocked again.
    pub(crate) fn park(&self, client: u64) {
        if let Some(x) = self.lock().waiters.get_mut(&client) {
            x.running = false;
        }
    }

    /// Whether `client` may pop from `key` now: no one registered earlier waits for it.
    pub(crate) fn may_take(
        &self,
        client: u64,
        wants: Wants,
        tenant: TenantId,
        db: u8,
        key: &[u8],
    ) -> bool {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let mut guard = self.lock();
        let w = &mut *guard;
        queue_key(&mut w.scratch, wants, tenant, db, key);
        w.queues
            .get(&w.scratch[..])
            .and_then(|q| q.values().next())
            .is_none_or(|&(first, _)| first == client)
    }

    /// `client`'s command answered, or its connection closed: its entries go, and the next
    /// waiter of each queue it was the first of is woken.
    pub(crate) fn leave(&self, client: u64, wake: impl Fn(usize)) {
        let mut guard = self.lock();
        let w = &mut *guard;
        if w.remove(client) {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        }
        self.flush(w, wake);
    }

    /// `CLIENT UNBLOCK`: ends `client`'s blocked command `how`, and wakes it to answer;
    /// whether it was blocked.
    pub(crate) fn unblock(&self, client: u64, how: Unblock, wake: impl Fn(usize)) -> bool {
        let mut guard = self.lock();
        let w = &mut *guard;
        match w.waiters.get_mut(&client) {
            Some(x) if !x.running && x.unblock.is_none() => x.unblock = Some(how),
            _ => return false,
        }
        w.wake_waiter(client, None);
        self.flush(w, wake);
        true
    }

    /// Worker `worker`'s woken waiters since it last looked, into `into` (emptied first).
    #[inline]
    pub(crate) fn take_ready(&self, worker: usize, into: &mut Vec<(u64, usize)>) {
        into.clear();
        let flag = self.ready.get(worker);
        if !flag.is_some_and(|f| f.load(Ordering::Acquire) && f.swap(false, Ordering::AcqRel)) {
            return;
        }
        if let Some(list) = self.lock().ready.get_mut(worker) {
            std::mem::swap(into, list);
        }
    }

    /// Blocked clients (`INFO`'s `blocked_clients`): all of them, or `tenant`'s.
    pub(crate) fn blocked_clients(&self, tenant: Option<TenantId>) -> usize {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let w = self.lock();
        w.waiters
            .values()
            .filter(|x| x.unblock.is_none() && tenant.is_none_or(|t| t == x.tenant))
            .count()
    }
}

impl Waits {
    /// Puts `client` on its worker's ready list (once), noting the key that woke it.
    fn wake_waiter(&mut self, client: u64, index: Option<usize>) {
        let Some(x) = self.waiters.get_mut(&client) else { return };
        if x.first.is_none() {
            x.first = index;
        }
        if x.woken {
            return;
        }
        x.woken = true;
        if let Some(list) = self.ready.get_mut(x.worker) {
            list.push((client, x.slot));
            self.to_wake.push(x.worker);
        }
    }

    /// Takes `client` out of its queues, waking the next of each it was the first of;
    /// whether it was there.
    fn remove(&mut self, client: u64) -> bool {
        let Some(x) = self.waiters.remove(&client) else { return false };
        for q in &x.keys {
            let Some(queue) = self.queues.get_mut(q) else { continue };
            let was_first = queue.keys().next() == Some(&x.seq);
            queue.remove(&x.seq);
            match queue.values().next().copied() {
                None => {
                    self.queues.remove(q);
                }
                Some((next, index)) if was_first => self.wake_waiter(next, Some(index)),
                Some(_) => {}
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    const T: TenantId = TenantId(0);

    fn keys<'a>(k: &'a [&'a str]) -> impl Iterator<Item = &'a [u8]> {
        k.iter().map(|s| s.as_bytes())
    }

    #[test]
    fn first_come_first_served_per_key() {
        let b = Blocking::new(2);
        let woken = RefCell::new(Vec::new());
        let wake = |w| woken.borrow_mut().push(w);
        // Nobody waits: anyone may take, and a signal wakes nobody.
        assert!(b.may_take(9, Wants::List, T, 0, b"k"));
        b.signal((0, LISTS), T, || 0, b"k", wake);
        assert!(woken.borrow().is_empty());

        b.register(1, (0, 10), (Wants::List, T, 0), keys(&["k"]), wake);
        b.register(2, (1, 20), (Wants::List, T, 0), keys(&["other", "k"]), wake);
        b.register(3, (0, 30), (Wants::List, T, 0), keys(&["k"]), wake);
        for c in [1, 2, 3] {
            b.park(c);
        }
        assert_eq!(b.blocked_clients(None), 3);
        // Only the first may pop; a newcomer waits too; another kind's queue is apart.
        assert!(b.may_take(1, Wants::List, T, 0, b"k"));
        assert!(!b.may_take(2, Wants::List, T, 0, b"k"));
        assert!(!b.may_take(9, Wants::List, T, 0, b"k"));
        assert!(b.may_take(9, Wants::Zset, T, 0, b"k"));
        assert!(b.may_take(9, Wants::List, T, 1, b"k"));
        assert!(b.may_take(2, Wants::List, T, 0, b"other"));

        // Its own pop wakes nobody.
        b.signal((1, LISTS), T, || 0, b"k", wake);
        assert!(woken.borrow().is_empty());
        // A push wakes the first only, once, on its worker; a sorted set's wakes nobody.
        b.signal((0, ZSETS), T, || 0, b"k", wake);
        b.signal((0, LISTS), T, || 0, b"k", wake);
        b.signal((0, LISTS), T, || 0, b"k", wake);
        assert_eq!(*woken.borrow(), [0]);
        let mut ready = Vec::new();
        b.take_ready(1, &mut ready);
        assert!(ready.is_empty());
        b.take_ready(0, &mut ready);
        assert_eq!(ready, [(1, 10)]);
        assert_eq!(b.resume(1), Resumed { first: Some(0), unblock: None });

        // Served, the first leaves: the next is woken, for the key at its position 1.
        woken.borrow_mut().clear();
        b.leave(1, wake);
        assert_eq!(*woken.borrow(), [1]);
        b.take_ready(1, &mut ready);
        assert_eq!(ready, [(2, 20)]);
        assert_eq!(b.resume(2).first, Some(1));
        assert!(b.may_take(2, Wants::List, T, 0, b"k"));
        b.park(2);

        // One that leaves unserved (timeout, disconnection) hands its turn on too.
        woken.borrow_mut().clear();
        b.leave(2, wake);
        assert_eq!(*woken.borrow(), [0]);
        b.take_ready(0, &mut ready);
        assert_eq!(ready, [(3, 30)]);
        b.leave(3, wake);
        assert_eq!(b.blocked_clients(None), 0);
        let w = b.lock();
        assert!(w.queues.is_empty() && w.waiters.is_empty());
        assert_eq!(b.waiting.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn keys_are_looked_at_from_the_one_that_woke() {
        assert_eq!(order(2..5, None).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(order(2..5, Some(1)).collect::<Vec<_>>(), [3, 2, 4]);
        assert_eq!(order(2..5, Some(7)).collect::<Vec<_>>(), [2, 3, 4]);
    }

    #[test]
    fn the_key_that_received_data_first_serves() {
        let b = Blocking::new(1);
        b.register(1, (0, 1), (Wants::List, T, 0), keys(&["a", "b"]), |_| {});
        b.park(1);
        b.signal((0, LISTS), T, || 0, b"b", |_| {});
        b.signal((0, LISTS), T, || 0, b"a", |_| {});
        assert_eq!(b.resume(1).first, Some(1));
        // Taken: the next run starts afresh.
        assert_eq!(b.resume(1).first, None);
    }

    #[test]
    fn client_unblock_reaches_a_parked_waiter_only() {
        let b = Blocking::new(2);
        let woken = RefCell::new(Vec::new());
        let wake = |w| woken.borrow_mut().push(w);
        assert!(!b.unblock(1, Unblock::Timeout, wake));
        b.register(1, (1, 5), (Wants::Zset, TenantId(2), 3), keys(&["z"]), wake);
        // Running (registered, not yet parked): not blocked.
        assert!(!b.unblock(1, Unblock::Error, wake));
        b.park(1);
        assert_eq!(b.blocked_clients(Some(TenantId(2))), 1);
        assert_eq!(b.blocked_clients(Some(TenantId(1))), 0);
        assert!(b.unblock(1, Unblock::Error, wake));
        assert!(!b.unblock(1, Unblock::Timeout, wake));
        assert_eq!(*woken.borrow(), [1]);
        assert_eq!(b.blocked_clients(None), 0);
        let mut ready = Vec::new();
        b.take_ready(1, &mut ready);
        assert_eq!(ready, [(1, 5)]);
        assert_eq!(b.resume(1).unblock, Some(Unblock::Error));
        b.leave(1, wake);
        assert!(b.lock().queues.is_empty());
    }

    #[test]
    fn the_same_key_twice_and_a_second_registration() {
        let b = Blocking::new(1);
        b.register(1, (0, 1), (Wants::List, T, 0), keys(&["k", "k"]), |_| {});
        b.register(2, (0, 2), (Wants::List, T, 0), keys(&["k"]), |_| {});
        assert!(b.may_take(1, Wants::List, T, 0, b"k"));
        // A client registers anew (its next command): behind the others.
        b.register(1, (0, 1), (Wants::List, T, 0), keys(&["k"]), |_| {});
        assert!(b.may_take(2, Wants::List, T, 0, b"k"));
        assert_eq!(b.waiting.load(Ordering::Relaxed), 2);
        b.leave(1, |_| {});
        b.leave(2, |_| {});
        assert!(b.lock().queues.is_empty());
    }
}
