//! The expiry sweep: reclaims expired items that nothing reads, so item counts (Redis's
//! `DBSIZE`, memcached's `curr_items`) drop soon after keys expire even when memory is not
//! full and the cleaner has nothing to move.
//!
//! Expired items are otherwise reclaimed for free when something touches them: a read that
//! finds one, a store over one, and the cleaner, which drops them while it moves data
//! (Cavast §4.4). The sweep covers the rest with a resumable walk of the index in root order
//! ([`crate::index::Index::sweep`]; a growth mid-pass misses nothing), a bounded amount of
//! work per step. For each item it first asks what is known about the item's segment: no
//! item of the segment that existed when the pass began expires before the segment's
//! *bound* (the header's earliest expiry, [`crate::segment::SegmentHeader::min_expiry_ms`],
//! raised to what the last pass learnt if the segment was sealed when that pass began and
//! has not been reused since). While the time
//! is not past the bound, the item is passed over without reading it, and a root whose items
//! are all passed over is not even locked. Otherwise the sweep locks the root, reads the key
//! record, and removes the item if it has expired, accounted as the cleaner does (expired,
//! not evicted). A pass learns the earliest expiry of each segment's live items, so the next
//! one reads only segments where something is due.
//!
//! ```text
//!  index roots:  0 1 2 3 … ─ cursor ─► …                         (in root order)
//!  per slot:     segment bound ≥ now? ── yes ─► pass over (learn the bound)
//!                      │ no
//!                      ▼
//!                read record: expired? ── yes ─► remove, count expired
//!                      │ no
//!                      ▼
//!                learn its expiry for the segment
//! ```
//!
//! **When to sweep.** The engine keeps a lower bound on the expiry of every live item,
//! [`Inner::next_expiry_ms`] (`u64::MAX`: no item has one). A pass starts only when the time
//! is past that bound and some tenant holds items with an expiry. A pass resets the bound and
//! at its end folds in the earliest expiry among the items it kept; a store of an item with
//! an expiry (or the cleaner's copy of one) lowers the bound after publishing it. Either the
//! pass accounts for an item or its store sees the reset (two `SeqCst` fences, one in
//! [`begin_pass`], one in `Inner::note_expiry`), so the bound never passes over a live item.
//! An idle cache whose items expire later sleeps until the first of them is due; a cache
//! whose items keep expiring sweeps pass after pass.
//!
//! **Pace.** In the server the background thread runs one step every [`STEP_INTERVAL`]
//! while a pass is under way. A step does the work of 1/[`SWEEP_STEPS_PER_PASS`] of the
//! index's roots (a root or a record read is one unit), at most [`MAX_WORK_PER_STEP`] (about
//! a millisecond): a pass that reads few records takes about a second up to 1.6M roots, and
//! 1.3 s for the 2M roots of 10M small items in 1 GiB; a first pass that must read every
//! record of 10M items takes about 7 s. It re-pins every [`ROOTS_PER_PIN`] roots so that
//! retired segments are not held back. In [`crate::CleanerMode::Inline`] nothing sweeps by
//! itself; tests and the simulator call [`crate::Engine::reclaim_expired`], which completes a
//! pass.
//!
//! Costs (`cargo run --release -p fridge-engine --example expiry_sweep`, 10M items of 16 B
//! keys and 32 B values in 1 GiB): a pass that reads few records takes 114–126 ms of one core
//! (0.9–1.0 ms per step, so about a tenth of a core while passes run); one that reads all
//! 10M records, 478–529 ms. Nothing runs while no item is due. Memory: 24 bytes per segment,
//! allocated by the first pass.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::Duration;

use crate::cache::{Inner, SweepState, is_expired};
use crate::epoch::Slot;
use crate::index::{Loc, Locked, prefetch};
use crate::segment::NO_EXPIRY;
use crate::stats::Counters;

/// Steps a pass is spread over in the background.
pub(crate) const SWEEP_STEPS_PER_PASS: usize = 100;
/// Time between background steps while a pass is under way.
pub(crate) const STEP_INTERVAL: Duration = Duration::from_millis(10);
/// Least work a background step does (small indexes finish a pass sooner).
const MIN_WORK_PER_STEP: usize = 256;
/// Most work a background step does: about a millisecond (`examples/expiry_sweep.rs`).
pub(crate) const MAX_WORK_PER_STEP: usize = 16 << 10;
/// Bytes of the sweep's state per segment (its three vectors).
pub(crate) const BYTES_PER_SEGMENT: usize = 24;
/// Roots visited per pin.
const ROOTS_PER_PIN: usize = 1024;
/// Work units of reading one key record, a root bucket being one. Measured, a root costs
/// 40–60 ns (its line, its lock, its slots) and a record about 30 ns (prefetched a few roots
/// ahead), so counting a record as a root keeps a step within its time.
pub(crate) const RECORD_WORK: usize = 1;

/// The work a background step does for an index of `roots` root buckets: a pass with few
/// records to read takes [`SWEEP_STEPS_PER_PASS`] steps, or more above 1.6M roots.
pub(crate) fn work_per_step(roots: usize) -> usize {
    (roots / SWEEP_STEPS_PER_PASS).clamp(MIN_WORK_PER_STEP, MAX_WORK_PER_STEP)
}

/// Whether some item may have expired: the time is past the bound and items with an
/// expiry exist.
fn due(inner: &Inner, now: u64) -> bool {
    now > inner.next_expiry_ms.load(Ordering::Relaxed)
        && inner.tenants.iter().any(|t| t.expiring.load(Ordering::Relaxed) > 0)
}

/// Starts a pass. Resets the bound, then orders the reset before every slot the pass reads:
/// this pairs with the fence in `Inner::note_expiry`, so an item stored (or relocated by the
/// cleaner) with an expiry after this point lowers the bound itself, and the pass needs to
/// account only for the items that existed when it began. For those, each segment's bound is
/// taken now: the header's earliest expiry, raised to what the last pass learnt if the
/// segment was already sealed when that pass began and has not been taken since (same life).
///
/// Sealed, not merely unchanged: an item whose record is in a head segment may be published
/// only after the pass has gone by its root (its writer wrote the record before the pass
/// began and linked it after), so a head's records are not all ones the pass saw. Its writer
/// lowers the global bound, which starts the next pass, but that pass must then read the
/// segment rather than trust the minimum learnt without the item. An owner seals a segment
/// only after publishing everything it wrote there, so every item of a segment sealed when
/// the pass began is one the pass meets.
fn begin_pass(inner: &Inner, state: &mut SweepState) {
    inner.next_expiry_ms.store(NO_EXPIRY, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    state.cursor = 0;
    state.in_pass = true;
    let count = inner.segments.count();
    if state.marks.len() != count {
        state.marks = vec![None; count];
        state.bounds = vec![0; count];
        state.mins = vec![0; count];
    }
    for (id, mark) in state.marks.iter_mut().enumerate() {
        let h = inner.segments.header(id as u32);
        // The life first (`Acquire`, pairing with `take_free`): a `sealed` read after it is
        // that life's or a later one's. `Acquire` on `sealed`: the items published before the
        // seal are in the index for the pass.
        let generation = h.generation.load(Ordering::Acquire);
        let sealed = h.sealed.load(Ordering::Acquire);
        let header_min = h.min_expiry_ms.load(Ordering::Relaxed);
        let learnt = if *mark == Some(generation) { state.mins[id] } else { 0 };
        *mark = sealed.then_some(generation);
        state.bounds[id] = header_min.max(learnt);
        state.mins[id] = NO_EXPIRY;
    }
}

/// What a step did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Step {
    /// Expired items removed.
    pub reclaimed: u64,
    /// Whether a pass is still under way (more steps are due soon).
    pub in_pass: bool,
    /// Whether the step went on with a pass begun by an earlier step.
    pub continued: bool,
}

/// Runs one step of the sweep as epoch participant `participant`: starts a pass if one is
/// due, then visits roots until it has done `budget` units of work (a root is one unit, a key
/// record read is [`RECORD_WORK`]), or to the end of the pass. Takes [`Inner::sweep`]; the
/// caller holds no other engine lock.
pub(crate) fn step(inner: &Inner, participant: &Slot, budget: usize) -> Step {
    let mut locked_state = inner.sweep.lock().unwrap_or_else(|e| e.into_inner());
    let state = &mut *locked_state;
    let now = inner.now_ms();
    let continued = state.in_pass;
    if !continued {
        if !due(inner, now) {
            return Step::default();
        }
        begin_pass(inner, state);
    }
    let (mut reclaimed, mut work, mut checked) = (0u64, 0usize, 0u64);
    let mut cursor = state.cursor;
    // Both the unlocked and the locked visit lower the minima.
    let (bounds, mins) = (&state.bounds, Cell::from_mut(&mut state.mins[..]).as_slice_of_cells());
    'pins: while work < budget {
        let guard = inner.epochs.pin(participant);
        let rehash = |l| inner.rehash(&guard, l);
        let mut on_evict = |l| inner.unlinked(&guard, l);
        for _ in 0..ROOTS_PER_PIN {
            let mut visit = |locked: &Locked<'_>, slot: &AtomicU64, loc: Loc| {
                let (bound, min) = (bounds[loc.segment as usize], &mins[loc.segment as usize]);
                if bound >= now {
                    // Nothing in the segment that the pass must account for has expired:
                    // skip without reading the item, which expires no earlier. (An item
                    // written since the pass began lowered the global bound itself.)
                    min.set(min.get().min(bound));
                    return;
                }
                work += RECORD_WORK;
                checked += 1;
                let rec = inner.record(&guard, loc);
                let Some(at) = inner.expires_at(&rec, loc) else { return };
                if is_expired(Some(at), || now) {
                    // No CAS bump: removing an expired item changes no other key, and a
                    // sweep's removal moves no other slot.
                    let expired = crate::events::KeyEventKind::Expired;
                    inner.key_events.note(rec.tenant(), rec.db(), expired, rec.key());
                    inner.unlinked(&guard, loc);
                    locked.remove(slot);
                    reclaimed += 1;
                } else {
                    min.set(min.get().min(at));
                }
            };
            let mut pass = |loc: Loc| {
                let bound = bounds[loc.segment as usize];
                let passed = bound >= now;
                if passed {
                    let min = &mins[loc.segment as usize];
                    min.set(min.get().min(bound));
                }
                passed
            };
            let mut ahead = |loc: Loc| {
                if bounds[loc.segment as usize] < now {
                    prefetch(
                        inner.arena.segment_ptr(loc.segment).wrapping_add(loc.offset as usize),
                    );
                }
            };
            cursor = inner.index.sweep(
                &guard,
                cursor,
                &rehash,
                &mut on_evict,
                &mut pass,
                &mut visit,
                &mut ahead,
            );
            work += 1;
            if cursor == 0 {
                break 'pins;
            }
            if work >= budget {
                break;
            }
        }
    }
    Counters::add(&inner.counters.expired, reclaimed);
    Counters::add(&inner.counters.swept, reclaimed);
    Counters::add(&inner.counters.sweep_checked, checked);
    state.cursor = cursor;
    if cursor == 0 {
        // Pass complete: every item that existed when it began and is still live was seen.
        state.in_pass = false;
        let pass_min = state.mins.iter().copied().min().unwrap_or(NO_EXPIRY);
        inner.next_expiry_ms.fetch_min(pass_min, Ordering::Relaxed);
        Counters::add(&inner.counters.sweep_passes, 1);
    }
    Step { reclaimed, in_pass: state.in_pass, continued }
}

/// How long the background thread may sleep with no pass under way: until the earliest
/// expiry is due, at most `longest`.
pub(crate) fn idle_wait(inner: &Inner, longest: Duration) -> Duration {
    let next = inner.next_expiry_ms.load(Ordering::Relaxed);
    if next == NO_EXPIRY {
        return longest;
    }
    // Due once the time is past `next`.
    let wait = Duration::from_millis((next + 1).saturating_sub(inner.now_ms()));
    wait.clamp(STEP_INTERVAL, longest)
}
