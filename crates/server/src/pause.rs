//! Redis's `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE`
//! (<https://redis.io/commands/client-pause/>, Redis 7.0 `networking.c` `pauseClients`).
//!
//! While a pause is in force, a RESP command it covers is not run: its connection is
//! *parked* (the request stays in the read buffer, as a suspended command's does, see
//! `Session::suspend`) and its worker leaves it off the run queue — no spinning, and the
//! worker's other connections go on. The worker requeues its parked connections when the
//! pause ends: at its deadline (the worker's poll sleeps no longer than that while it has
//! parked connections) or at `CLIENT UNPAUSE` (which wakes every worker). A requeued
//! command checks again, so a pause prolonged meanwhile parks it again.
//!
//! As in Redis 7.0: `ALL` covers every command (`CLIENT UNPAUSE` included); `WRITE` covers
//! commands that write and those Redis flags `may-replicate` (`PUBLISH`, `SPUBLISH`,
//! `EVAL`, `EVALSHA`, `FCALL`), and an `EXEC` whose queue holds one. The check comes after
//! the arity and login checks and before `MULTI` queues a command. A second `CLIENT PAUSE`
//! while one is in force keeps the later deadline and the stricter mode. Unlike Redis, key
//! expiry and eviction go on during a `WRITE` pause, and memcached-protocol commands are
//! never paused.
//!
//! Cost when no pause is in force: one relaxed load per RESP command.

use std::sync::atomic::{AtomicU64, Ordering};

/// The pause's state, one word: `end_ms << 1 | all`; 0 when there is none.
const ALL_BIT: u64 = 1;
const END_SHIFT: u32 = 1;

const fn end_ms(state: u64) -> u64 {
    state >> END_SHIFT
}

/// The clients' pause (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Pause {
    state: AtomicU64,
    /// Bumped by `CLIENT UNPAUSE`: workers requeue their parked connections.
    generation: AtomicU64,
}

impl Pause {
    /// Whether a pause may be in force: the request path's one relaxed load.
    #[inline]
    pub(crate) fn maybe(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }

    /// Whether a command that writes (`write`) or not is paused at `now_ms`.
    pub(crate) fn blocks(&self, now_ms: u64, write: bool) -> bool {
        let s = self.state.load(Ordering::Acquire);
        s != 0 && now_ms < end_ms(s) && (s & ALL_BIT != 0 || write)
    }

    /// When the pause in force ends (ms), if one is.
    pub(crate) fn deadline(&self, now_ms: u64) -> Option<u64> {
        let end = end_ms(self.state.load(Ordering::Acquire));
        (end > now_ms).then_some(end)
    }

    /// `CLIENT PAUSE`: pauses until `end_ms`, every command (`all`) or the writes only. A
    /// pause in force keeps the later deadline and the stricter mode.
    pub(crate) fn pause(&self, now_ms: u64, end: u64, all: bool) {
        let _ = self.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            let (old_end, old_all) =
                if end_ms(s) > now_ms { (end_ms(s), s & ALL_BIT != 0) } else { (0, false) };
            let end = end.max(old_end).min(u64::MAX >> END_SHIFT);
            Some((end << END_SHIFT) | u64::from(all || old_all))
        });
    }

    /// `CLIENT UNPAUSE`: the pause ends now. The caller wakes the workers.
    pub(crate) fn unpause(&self) {
        self.state.store(0, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Changes at each `CLIENT UNPAUSE`.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// Commands Redis 7.0 flags `may-replicate` that a `WRITE` pause covers besides writes.
pub(crate) const MAY_REPLICATE: [&str; 5] = ["publish", "spublish", "eval", "evalsha", "fcall"];

#[cfg(test)]
mod tests {
    use super::Pause;

    #[test]
    fn a_pause_covers_what_its_mode_says_until_its_deadline() {
        let p = Pause::default();
        assert!(!p.maybe() && !p.blocks(0, true), "no pause at first");
        p.pause(100, 200, false);
        assert!(p.blocks(150, true) && !p.blocks(150, false), "WRITE pauses writes only");
        assert!(!p.blocks(200, true), "over at its deadline");
        p.pause(150, 170, true);
        assert!(p.blocks(180, false) && p.blocks(199, true), "stricter mode, later deadline kept");
        assert_eq!(p.deadline(150), Some(200));
        let g = p.generation();
        p.unpause();
        assert!(!p.blocks(150, true) && p.generation() != g && p.deadline(150).is_none());
        p.pause(300, 250, true);
        assert!(!p.blocks(300, false), "a deadline already past pauses nothing");
        p.pause(300, 400, false);
        assert!(!p.blocks(310, false), "an expired pause's mode is not kept");
    }
}
