//! Open-loop pacing: when each request is *intended* to be sent.
//!
//! An open-loop run decides send times in advance, independently of the server: request `i`
//! of a thread is due at `offset + i / rate` (constant spacing) or after exponential gaps
//! (Poisson). Its latency is measured from that intended time, not from when the socket
//! accepted it, so a server that stalls is charged for every request that queued up behind
//! the stall (no coordinated omission, Tene's term): a stall shows up as latency, while the
//! request rate stays the one asked for.
//!
//! With `threads` threads sharing a total rate `R`, thread `k` runs at `R / threads` with an
//! offset of `k / R`, so the combined stream of constant spacing is evenly spaced at `R`.

use fridge_workload::Rng;

/// Arrival process of an open-loop run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process), seeded.
    Poisson {
        /// Seed of the gaps.
        seed: u64,
    },
}

/// The intended send times of one thread, in nanoseconds since the start of the run.
#[derive(Clone, Debug)]
pub struct Schedule {
    offset_ns: f64,
    gap_ns: f64,
    poisson: Option<Rng>,
    /// Intended time of the next request (Poisson: accumulated gaps).
    next_ns: f64,
    issued: u64,
}

impl Schedule {
    /// Thread `thread` of `threads` sharing `total_rate` requests per second.
    ///
    /// # Panics
    /// If `total_rate` is not positive and finite or `threads` is 0 (the CLI checks both).
    pub fn new(total_rate: f64, threads: usize, thread: usize, arrivals: Arrivals) -> Self {
        assert!(total_rate.is_finite() && total_rate > 0.0 && threads > 0, "bad open-loop rate");
        let offset_ns = thread as f64 * 1e9 / total_rate;
        let gap_ns = threads as f64 * 1e9 / total_rate;
        let poisson = match arrivals {
            Arrivals::Constant => None,
            Arrivals::Poisson { seed } => Some(Rng::new(seed ^ thread as u64)),
        };
        let mut schedule = Self { offset_ns, gap_ns, poisson, next_ns: offset_ns, issued: 0 };
        if let Some(rng) = &mut schedule.poisson {
            schedule.next_ns += -gap_ns * rng.next_f64_open().ln();
        }
        schedule
    }

    /// Intended send time of the next request, ns since the run started.
    pub fn next_due_ns(&self) -> u64 {
        self.next_ns as u64
    }

    /// Requests scheduled so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// Moves to the following request.
    pub fn advance(&mut self) {
        self.issued += 1;
        self.next_ns = match &mut self.poisson {
            // Computed from the index, so rounding never drifts.
            None => self.offset_ns + self.issued as f64 * self.gap_ns,
            Some(rng) => self.next_ns - self.gap_ns * rng.next_f64_open().ln(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_spacing_follows_the_rate() {
        let mut s = Schedule::new(1000.0, 1, 0, Arrivals::Constant);
        let times: Vec<u64> = (0..5)
            .map(|_| {
                let t = s.next_due_ns();
                s.advance();
                t
            })
            .collect();
        assert_eq!(times, [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]);
        s = Schedule::new(3.0, 1, 0, Arrivals::Constant);
        for _ in 0..3_000_000 {
            s.advance();
        }
        assert_eq!(s.next_due_ns(), 1_000_000_000_000_000, "no drift after three million gaps");
    }

    #[test]
    fn threads_interleave_into_one_even_stream() {
        let mut all = Vec::new();
        for k in 0..4 {
            let mut s = Schedule::new(4000.0, 4, k, Arrivals::Constant);
            for _ in 0..100 {
                all.push(s.next_due_ns());
                s.advance();
            }
        }
        all.sort_unstable();
        let expected: Vec<u64> = (0..400).map(|i| i * 250_000).collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn poisson_has_the_requested_mean_rate() {
        let mut s = Schedule::new(10_000.0, 1, 0, Arrivals::Poisson { seed: 5 });
        let mut last = s.next_due_ns();
        let mut increasing = true;
        for _ in 0..100_000 {
            s.advance();
            increasing &= s.next_due_ns() >= last;
            last = s.next_due_ns();
        }
        assert!(increasing);
        // 100,000 gaps of mean 100 µs: 10 s, within 1% (the sum's sd is 0.3%).
        let secs = last as f64 / 1e9;
        assert!((secs - 10.0).abs() < 0.1, "{secs}");
    }
}
