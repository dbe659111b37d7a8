//! Redis's latency monitor (<https://redis.io/docs/reference/optimization/latency-monitor/>;
//! Redis 7.0 `latency.c`): with `latency-monitor-threshold` at N > 0 milliseconds, every
//! command that runs for N ms or more is a sample of the event `command` (or `fast-command`
//! for a command flagged fast). An event keeps its last [`SAMPLES`] samples, one per second
//! (a second's samples merge, keeping the worst), and its worst ever: a fixed 2 KiB per
//! event, two events. Off (0, the default) it costs one relaxed load per command.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Samples an event keeps (Redis's `LATENCY_TS_LEN`).
pub(crate) const SAMPLES: usize = 160;

/// The events fridge records.
pub(crate) const EVENTS: [&str; 2] = ["command", "fast-command"];

/// One event's samples: (Unix seconds, ms), oldest first once full.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub samples: [(u64, u64); SAMPLES],
    /// Where the next sample goes.
    next: usize,
    /// Samples held (at most [`SAMPLES`]).
    pub len: usize,
    pub max: u64,
}

impl Default for Series {
    fn default() -> Self {
        Series { samples: [(0, 0); SAMPLES], next: 0, len: 0, max: 0 }
    }
}

impl Series {
    fn add(&mut self, time: u64, ms: u64) {
        self.max = self.max.max(ms);
        let last = (self.next + SAMPLES - 1) % SAMPLES;
        if self.len > 0 && self.samples[last].0 == time {
            self.samples[last].1 = self.samples[last].1.max(ms);
            return;
        }
        self.samples[self.next] = (time, ms);
        self.next = (self.next + 1) % SAMPLES;
        self.len = (self.len + 1).min(SAMPLES);
    }

    /// The samples, oldest first.
    pub(crate) fn history(&self) -> Vec<(u64, u64)> {
        let start = (self.next + SAMPLES - self.len) % SAMPLES;
        (0..self.len).map(|i| self.samples[(start + i) % SAMPLES]).collect()
    }

    /// The newest sample.
    pub(crate) fn latest(&self) -> Option<(u64, u64)> {
        (self.len > 0).then(|| self.samples[(self.next + SAMPLES - 1) % SAMPLES])
    }
}

/// The monitor: its threshold and its events' series.
#[derive(Debug, Default)]
pub(crate) struct Latency {
    threshold_ms: AtomicU64,
    series: Mutex<[Series; EVENTS.len()]>,
}

impl Latency {
    pub(crate) fn threshold(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    pub(crate) fn set_threshold(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// Whether a command that ran for `nanos` is a sample.
    #[inline]
    pub(crate) fn wants(&self, nanos: u64) -> bool {
        let t = self.threshold();
        t > 0 && nanos / 1_000_000 >= t
    }

    /// Records a sample of `command` (or `fast-command` when `fast`).
    #[cold]
    pub(crate) fn record(&self, fast: bool, nanos: u64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.lock()[usize::from(fast)].add(now, nanos / 1_000_000);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Series; EVENTS.len()]> {
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The events with samples: (name, series).
    pub(crate) fn events(&self) -> Vec<(&'static str, Series)> {
        let series = self.lock();
        EVENTS
            .iter()
            .zip(series.iter())
            .filter(|(_, s)| s.len > 0)
            .map(|(n, s)| (*n, s.clone()))
            .collect()
    }

    /// Forgets the named events (all with none); answers how many had samples.
    pub(crate) fn reset(&self, names: &[&[u8]]) -> usize {
        let mut series = self.lock();
        let mut n = 0;
        for (name, s) in EVENTS.iter().zip(series.iter_mut()) {
            if names.is_empty() || names.iter().any(|w| w.eq_ignore_ascii_case(name.as_bytes())) {
                n += usize::from(s.len > 0);
                *s = Series::default();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_keeps_one_sample_a_second_and_the_last_160() {
        let mut s = Series::default();
        s.add(10, 5);
        s.add(10, 7);
        s.add(11, 3);
        assert_eq!(s.history(), [(10, 7), (11, 3)]);
        for t in 12..400 {
            s.add(t, 1);
        }
        assert_eq!(s.len, SAMPLES);
        assert_eq!(s.history().first(), Some(&(400 - SAMPLES as u64, 1)));
        assert_eq!((s.latest(), s.max), (Some((399, 1)), 7));
    }
}
