//! Edit locks: what lets a write change a published collection in place.
//!
//! A published record is otherwise never written (`docs/threads.md`): readers take no lock,
//! and an update writes a whole new item. For a large collection that copy is the cost of
//! every one-member write (a 25 KB hash of 1,000 fields copied into log memory not in the CPU
//! cache costs 4–5 µs, `bench/log_copy`), so a write whose new value has the old one's length
//! and keeps its flags, expiry and kind — HSET of a field to a value of the same length, ZADD
//! of a new score of the same encoded length — writes the changed bytes where they are
//! instead (`Worker::update_kind_spliced`). Strings are never edited in place: their readers
//! (GET, pinned replies written after the read) take no edit lock.
//!
//! The lock is a reader–writer spin lock per stripe of key hashes ([`STRIPES`] stripes, each
//! on its own cache line), not per item: a record has no byte to spare for one.
//!
//! - Every read of a non-string value holds its stripe's read lock while it reads the value
//!   and the record's CAS (the worker's single-key reads and the reads inside an update); a
//!   read holding it never waits for anything else (no other lock, no epoch), so a writer
//!   waiting for readers to leave always sees them leave.
//! - An edit holds the key's root lock (which excludes every other writer of the key and the
//!   cleaner's relocation, which copies collections under it), then the stripe's write lock,
//!   which waits until the stripe has no reader and keeps new readers out until the edit is
//!   done. The root's change counter is bumped after the edit, so an update that read the value
//!   before it publishes nothing over it.
//! - The cleaner's scans (`Index::scan`'s visitors) read under the root lock and need no
//!   stripe.
//!
//! Uncontended, a read costs two atomic read-modify-writes on a line of its own (a
//! collection read walks hundreds of bytes or more); strings pay nothing.

use std::sync::atomic::{AtomicU32, Ordering};

/// Number of stripes: keys whose hashes share a stripe share its lock (an edit waits for
/// the readers of any of them).
pub(crate) const STRIPES: usize = 1024;

/// Bytes the locks of one engine take (64 KiB, counted in its fixed overhead).
pub(crate) const BYTES: usize = STRIPES * std::mem::size_of::<Stripe>();

/// The stripe's write bit; the bits below count readers.
const WRITER: u32 = 1 << 31;

/// One stripe's lock word, on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe(AtomicU32);

/// The edit locks of one engine.
#[derive(Debug)]
pub(crate) struct EditLocks {
    stripes: Box<[Stripe]>,
}

/// A held read lock; released when dropped.
#[derive(Debug)]
pub(crate) struct Reading<'a>(&'a AtomicU32);

/// A held write lock; released when dropped.
#[derive(Debug)]
pub(crate) struct Editing<'a>(&'a AtomicU32);

impl EditLocks {
    pub(crate) fn new() -> EditLocks {
        EditLocks { stripes: (0..STRIPES).map(|_| Stripe::default()).collect() }
    }

    fn stripe(&self, hash: u64) -> &AtomicU32 {
        // Bits the index's root and tag choices use least (the low and the top 16).
        &self.stripes[(hash >> 32) as usize % STRIPES].0
    }

    /// Takes the read lock of `hash`'s stripe, waiting while an edit holds it.
    pub(crate) fn read(&self, hash: u64) -> Reading<'_> {
        let lock = self.stripe(hash);
        let mut spins = 0u32;
        loop {
            // `Acquire`: what an edit released is visible to the read that follows.
            if lock.fetch_add(1, Ordering::Acquire) & WRITER == 0 {
                return Reading(lock);
            }
            lock.fetch_sub(1, Ordering::Relaxed);
            while lock.load(Ordering::Relaxed) & WRITER != 0 {
                backoff(&mut spins);
            }
        }
    }

    /// Takes the write lock of `hash`'s stripe: waits for another edit of the stripe to end,
    /// then for its readers to leave. The caller holds the key's root lock, and holds no read
    /// lock of any stripe.
    pub(crate) fn edit(&self, hash: u64) -> Editing<'_> {
        let lock = self.stripe(hash);
        let mut spins = 0u32;
        loop {
            let word = lock.load(Ordering::Relaxed);
            if word & WRITER == 0
                && lock
                    .compare_exchange_weak(
                        word,
                        word | WRITER,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                break;
            }
            backoff(&mut spins);
        }
        // `Acquire` on the count the last reader released: its reads happen before the edit's
        // writes.
        while lock.load(Ordering::Acquire) & !WRITER != 0 {
            backoff(&mut spins);
        }
        Editing(lock)
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        // `Release`: the read's loads happen before an edit that waits for this.
        self.0.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for Editing<'_> {
    fn drop(&mut self) {
        // `Release`: the edit's writes happen before the next reader's loads.
        self.0.fetch_and(!WRITER, Ordering::Release);
    }
}

fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::EditLocks;

    /// Readers never see an edit half done: an edit writes two words that must agree, and a
    /// reader holding the read lock checks that they do. (The words are atomics only so that
    /// the test has no data race when the lock is broken; the lock is what keeps them equal.)
    #[test]
    fn readers_never_see_an_edit_half_done() {
        let locks = Arc::new(EditLocks::new());
        let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|r| {
                let (locks, words, stop) = (locks.clone(), words.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) || reads < 1000 {
                        // Each reader on a hash of the same stripe but another key.
                        let _r = locks.read(7 + (r << 42));
                        let a = words[0].load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        let b = words[1].load(Ordering::Relaxed);
                        assert_eq!(a, b, "a read saw an edit half done");
                        reads += 1;
                    }
                })
            })
            .collect();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (locks, words) = (locks.clone(), words.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let _e = locks.edit(7);
                        let v = words[0].load(Ordering::Relaxed) + 1;
                        words[0].store(v, Ordering::Relaxed);
                        std::hint::spin_loop();
                        words[1].store(v, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        // Two writers' edits never overlapped either: none was lost.
        assert_eq!(words[0].load(Ordering::Relaxed), 40_000);
    }

    /// A held read lock keeps an edit out until it is released.
    #[test]
    fn an_edit_waits_for_readers() {
        let locks = Arc::new(EditLocks::new());
        let reading = locks.read(3);
        let done = Arc::new(AtomicBool::new(false));
        let editor = {
            let (locks, done) = (locks.clone(), done.clone());
            std::thread::spawn(move || {
                let _e = locks.edit(3);
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "the edit began while a reader held the stripe");
        drop(reading);
        editor.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
    }
}
