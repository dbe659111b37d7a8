//! A one-line progress bar on stderr, redrawn at most ten times a second.
//!
//! Hand-rolled (a carriage return and a line of text) so the simulator needs no terminal
//! library. It is off unless asked for; the binary turns it on when stderr is a terminal.

use std::io::Write;
use std::time::{Duration, Instant};

const WIDTH: usize = 30;
const REDRAW: Duration = Duration::from_millis(100);

/// Progress reporting; a disabled one does nothing.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    started: Instant,
    last_draw: Option<Instant>,
    drawn: bool,
}

impl Progress {
    /// A bar that draws when `enabled`.
    pub fn new(enabled: bool) -> Self {
        Self { enabled, started: Instant::now(), last_draw: None, drawn: false }
    }

    /// A bar that never draws.
    pub fn hidden() -> Self {
        Self::new(false)
    }

    /// Reports `done` of `total` units (requests) in the phase `what`; `total` may be
    /// unknown.
    pub fn update(&mut self, what: &str, done: u64, total: Option<u64>) {
        if !self.enabled || self.last_draw.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last_draw = Some(Instant::now());
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let line = match total {
            Some(total) if total > 0 => {
                let frac = (done as f64 / total as f64).min(1.0);
                let filled = (frac * WIDTH as f64) as usize;
                format!(
                    "{what:<12} [{}{}] {:>5.1}%  {:.1} M req/s",
                    "#".repeat(filled),
                    " ".repeat(WIDTH - filled),
                    frac * 100.0,
                    done as f64 / secs / 1e6
                )
            }
            _ => format!("{what:<12} {done} requests"),
        };
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr must not stop a simulation.
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Ends the bar's line.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = writeln!(std::io::stderr());
            self.drawn = false;
        }
    }
}
