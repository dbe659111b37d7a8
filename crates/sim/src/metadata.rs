//! An experimental eviction-metadata backend: the engine's hitmap with another rolling
//! compaction trigger, for measuring how the trigger shapes hit ratios.
//!
//! The engine's CPU backend ([`fridge_engine::CpuHitmap`]) compacts when fewer than 5% of the
//! cleaner's survivors are unmarked at level 1 (Catalyst Algorithm 1). [`SimHitmap`] is the
//! same [`Hitmap`], fed and queried the same way (the engine calls it through
//! [`MetadataBackend`]), with the trigger chosen by [`Compaction`]:
//!
//! | trigger | compacts |
//! |---|---|
//! | `sample` | like the engine: when a query of at least 64 survivors finds under 5% unmarked at level 1 |
//! | `every:N` | after every `N` digests applied, whatever the queries say |
//! | `fill:F` | when level 1's fill rate (set bits / bits) reaches `F`, checked once per pool |
//!
//! With `sample` the results are bit for bit those of the engine's inline backend (a test
//! checks it), so differences between triggers are the trigger's alone. Inline only: pools
//! are applied in the submitting thread, so runs stay deterministic.

use std::sync::Mutex;

use fridge_engine::hitmap::{DEFAULT_LEVELS, Hitmap};
use fridge_engine::{MetadataBackend, MetadataStats, Temperature};

use crate::error::Error;

/// The engine's smallest temperature query that counts as a compaction sample.
const MIN_SAMPLE: usize = 64;

/// When [`SimHitmap`] runs a rolling compaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compaction {
    /// The engine's rule: a survivor sample with under 5% unmarked at level 1.
    Sample,
    /// After every this many applied digests.
    Every(u64),
    /// When level 1's fill rate reaches this fraction.
    Fill(f64),
}

impl Compaction {
    /// Parses `sample`, `every:N` or `fill:F`.
    ///
    /// # Errors
    /// Any other text.
    pub fn parse(s: &str) -> Result<Compaction, Error> {
        let bad = || Error::Config(format!("compaction trigger {s:?}: sample, every:N or fill:F"));
        Ok(match s.split_once(':') {
            None if s == "sample" => Compaction::Sample,
            Some(("every", n)) => {
                Compaction::Every(n.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(bad)?)
            }
            Some(("fill", f)) => Compaction::Fill(
                f.parse::<f64>().ok().filter(|f| *f > 0.0 && *f <= 1.0).ok_or_else(bad)?,
            ),
            _ => return Err(bad()),
        })
    }

    /// The text [`Compaction::parse`] reads.
    pub fn name(&self) -> String {
        match self {
            Compaction::Sample => "sample".into(),
            Compaction::Every(n) => format!("every:{n}"),
            Compaction::Fill(f) => format!("fill:{f}"),
        }
    }
}

/// The hitmap with a chosen compaction trigger, applied inline.
#[derive(Debug)]
pub struct SimHitmap {
    state: Mutex<State>,
    trigger: Compaction,
}

#[derive(Debug)]
struct State {
    hitmap: Hitmap,
    applied: u64,
    since_compaction: u64,
    zones: Vec<u64>,
}

impl SimHitmap {
    /// A hitmap for about `items` items at `bits_per_item` bits each, sized as the engine
    /// sizes its own ([`Hitmap::for_items`] with the default levels).
    pub fn new(items: usize, bits_per_item: usize, trigger: Compaction) -> SimHitmap {
        let hitmap = Hitmap::for_items(items, bits_per_item, DEFAULT_LEVELS);
        let zones = vec![0; hitmap.levels() + 2];
        SimHitmap {
            state: Mutex::new(State { hitmap, applied: 0, since_compaction: 0, zones }),
            trigger,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MetadataBackend for SimHitmap {
    fn submit(&self, digests: &[u32]) {
        let mut s = self.state();
        s.hitmap.record_batch(digests);
        s.applied += digests.len() as u64;
        s.since_compaction += digests.len() as u64;
        let due = match self.trigger {
            Compaction::Sample => false,
            Compaction::Every(n) => s.since_compaction >= n,
            Compaction::Fill(f) => s.hitmap.stats().fill[0] >= f,
        };
        if due {
            s.hitmap.compact();
            s.since_compaction = 0;
        }
    }

    fn temperatures(&self, digests: &[u32], out: &mut Vec<Temperature>) {
        let mut s = self.state();
        out.clear();
        out.extend(
            digests
                .iter()
                .map(|&d| Temperature { zone: s.hitmap.zone(d), zombie: s.hitmap.is_zombie(d) }),
        );
        let zombie_slot = s.zones.len() - 1;
        s.zones.iter_mut().for_each(|z| *z = 0);
        for t in out.iter() {
            s.zones[if t.zombie { zombie_slot } else { usize::from(t.zone) }] += 1;
        }
        if self.trigger == Compaction::Sample
            && digests.len() >= MIN_SAMPLE
            && s.hitmap.compaction_due(digests.iter().copied())
        {
            s.hitmap.compact();
            s.since_compaction = 0;
        }
    }

    fn stats(&self) -> MetadataStats {
        let s = self.state();
        let h = s.hitmap.stats();
        MetadataStats {
            applied: s.applied,
            pools_dropped: 0,
            compactions: h.compactions,
            bytes: h.bytes,
            levels: h.fill.len(),
            zones: s.zones.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_parse_and_print() {
        for t in ["sample", "every:5000", "fill:0.5"] {
            assert_eq!(Compaction::parse(t).unwrap().name(), t);
        }
        for bad in ["", "every:0", "fill:0", "fill:2", "often"] {
            assert!(Compaction::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_n_digests_compacts_on_schedule() {
        let h = SimHitmap::new(10_000, 32, Compaction::Every(2048));
        let pool: Vec<u32> = (0..1024u32).map(|i| i.wrapping_mul(0x9E37_79B9) & !1).collect();
        for _ in 0..5 {
            h.submit(&pool);
        }
        let s = h.stats();
        assert_eq!((s.applied, s.compactions), (5 * 1024, 2));
    }
}
