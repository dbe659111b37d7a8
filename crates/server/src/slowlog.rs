//! Redis's slow log (<https://redis.io/commands/slowlog/>; Redis 7.0 `slowlog.c`): the
//! commands that ran for `slowlog-log-slower-than` microseconds or more (negative: none; 0:
//! every command), newest first, at most `slowlog-max-len` of them.
//!
//! An entry keeps what Redis keeps: an id, the Unix time, the duration (µs, the handler's
//! time), at most 32 arguments (the 32nd says `... (N more arguments)`), each cut at 128
//! bytes (`... (N more bytes)`), the client's address and name. An entry is therefore at
//! most about 5 KiB, and `slowlog-max-len` is capped at [`MAX_LEN`] entries, so the log takes
//! at most about 50 MiB. A command faster than the threshold costs one relaxed load; a
//! slower one takes the log's lock and allocates its entry.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Redis's limits on what an entry keeps.
const MAX_ARGS: usize = 32;
const MAX_ARG_BYTES: usize = 128;

/// The largest `slowlog-max-len` (Redis has none; fridge bounds the log's memory).
pub(crate) const MAX_LEN: usize = 10_000;

/// One logged command.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub id: u64,
    pub time: u64,
    pub micros: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: String,
}

/// The slow log and its two settings.
#[derive(Debug)]
pub(crate) struct SlowLog {
    slower_than: AtomicI64,
    max_len: AtomicUsize,
    log: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    next_id: u64,
    /// Newest first.
    entries: VecDeque<Entry>,
}

impl Default for SlowLog {
    fn default() -> Self {
        // Redis's defaults.
        SlowLog {
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            log: Mutex::default(),
        }
    }
}

impl SlowLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a command that ran for `micros` is logged.
    #[inline]
    pub(crate) fn wants(&self, micros: u64) -> bool {
        let t = self.slower_than.load(Ordering::Relaxed);
        t >= 0 && micros >= t as u64
    }

    pub(crate) fn slower_than(&self) -> i64 {
        self.slower_than.load(Ordering::Relaxed)
    }

    pub(crate) fn set_slower_than(&self, micros: i64) {
        self.slower_than.store(micros, Ordering::Relaxed);
    }

    pub(crate) fn max_len(&self) -> usize {
        self.max_len.load(Ordering::Relaxed)
    }

    /// Sets the length limit and drops the oldest entries beyond it.
    pub(crate) fn set_max_len(&self, n: usize) {
        self.max_len.store(n.min(MAX_LEN), Ordering::Relaxed);
        let mut log = self.lock();
        log.entries.truncate(n.min(MAX_LEN));
    }

    /// Logs a command: its arguments cut as Redis cuts them.
    pub(crate) fn push<'a>(
        &self,
        args: impl ExactSizeIterator<Item = &'a [u8]>,
        micros: u64,
        addr: String,
        name: String,
    ) {
        let argc = args.len();
        let kept = argc.min(MAX_ARGS);
        let mut cut = Vec::with_capacity(kept);
        for (j, a) in args.take(kept).enumerate() {
            if kept != argc && j == kept - 1 {
                cut.push(format!("... ({} more arguments)", argc - kept + 1).into_bytes());
            } else if a.len() > MAX_ARG_BYTES {
                let mut s = a[..MAX_ARG_BYTES].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes(),
                );
                cut.push(s);
            } else {
                cut.push(a.to_vec());
            }
        }
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let max = self.max_len();
        let mut log = self.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry { id, time, micros, args: cut, addr, name });
        log.entries.truncate(max);
    }

    /// The newest `count` entries (all with `None`).
    pub(crate) fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let log = self.lock();
        log.entries.iter().take(count.unwrap_or(usize::MAX)).cloned().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub(crate) fn reset(&self) {
        self.lock().entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_cut_as_redis_cuts_them() {
        let log = SlowLog::default();
        let long = [b'x'; 200];
        let many: Vec<Vec<u8>> = (0..40).map(|i| format!("a{i}").into_bytes()).collect();
        log.push([&long[..]].into_iter(), 5, "1.2.3.4:5".into(), String::new());
        log.push(many.iter().map(Vec::as_slice), 6, String::new(), "n".into());
        let e = log.newest(None);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].args.len(), 32);
        assert_eq!(e[0].args[31], b"... (9 more arguments)");
        assert_eq!(e[0].args[30], b"a30");
        assert_eq!(e[1].args[0].len(), 128 + b"... (72 more bytes)".len());
        assert!(e[1].args[0].ends_with(b"... (72 more bytes)"));
        assert_eq!((e[0].id, e[1].id), (1, 0));
    }

    #[test]
    fn the_log_keeps_the_newest_up_to_its_length() {
        let log = SlowLog::default();
        log.set_max_len(2);
        for i in 0..5u8 {
            log.push([&[i][..]].into_iter(), 1, String::new(), String::new());
        }
        let ids: Vec<u64> = log.newest(None).iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3]);
        log.set_max_len(MAX_LEN + 1);
        assert_eq!(log.max_len(), MAX_LEN);
        log.reset();
        assert_eq!(log.len(), 0);
    }
}
