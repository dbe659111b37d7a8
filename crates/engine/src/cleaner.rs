//! The cleaner: Memshare's cleaning passes (Algorithm 1, §3.1, §5.3) with Cavast's free
//! reclamation of expired items (§4.4).
//!
//! A pass first tries to *compact without evicting*: it takes the sealed segments with the
//! fewest live bytes (written minus known dead), as many as fit, with one item's worth of
//! packing slack per output head, in the room the cleaner is sure of (its output heads and the free segments
//! reserved for it) and in one segment fewer than they occupy. Only when memory is full of live data does it evict:
//! with S3-FIFO's queues (the default, [`crate::Queues`]), from the two oldest segments of
//! the small or the main queue, reading on into that queue's next oldest segments while the
//! items that earned a stay do not fit in one segment fewer and earlier evictions pay for
//! the copies; with Memshare's pass, from `n` candidates — half at random, half with the most
//! dead bytes — evicting what the rank function places lowest. (Measured on the thesis's 10 B/300 B/1 MB mix with 10%
//! overwrites in 256 MiB, `cargo run --release -p fridge-engine --example thesis_evictions`:
//! choosing Memshare's candidates for every pass relocated 1,442 MB in 1,055 passes; compacting
//! the least-live segments first relocated nothing in 112 passes. In background mode the old
//! choice also let writers outrun the cleaner into whole-segment evictions of live items.)
//!
//! The pass reads its candidates' records. A record is *live* if the index still points at it.
//! Live items that have expired are dropped (expiry costs nothing extra: the cleaner reads the
//! records anyway, and no crawler ever scans memory). The rest are ranked by the rank
//! function, and copied best first into output segments; each copy is published by swapping
//! the index slot from the old location to the new one under the bucket lock, and loses to a
//! concurrent overwrite (the copy is then dead). Items that do not fit are evicted (in a
//! compaction that happens only if the live-byte estimate was off). The candidates are retired
//! and become free once no reader can still be looking at them.
//!
//! `n` is the configured candidate count (40 by default; Memshare Table 7 saw no gain beyond).
//! Writers leave the last [`crate::segment::CLEANER_RESERVE`] free segments to the cleaner and,
//! when nothing is free, clean themselves; only if that fails too do they evict the oldest
//! sealed segment whole ([`evict_oldest`]), so a write never fails for lack of space.
//!
//! The same code runs inline (called by a writer that needs a segment, deterministic given
//! the seed) and in a background thread ([`run_background`]).
//!
//! Ranking: the survivors' temperatures come from the eviction metadata in one batch query
//! ([`crate::metadata`]), and each item is ranked by its tenant's rank function. Survivors are
//! copied best first, so the output segments come out grouped by temperature.
//!
//! Tenants (Memshare Algorithm 1, §3.1): with more than the default tenant configured, the
//! non-random half of Memshare's candidates are the sealed segments (of a random sample)
//! with the most dead bytes plus bytes of tenants over their target; a queue pass takes, of
//! its queue's eight oldest segments, those with the most bytes of tenants at or over their
//! target (segments of tenants below theirs get a lap). Survivors are kept in order of need —
//! the neediest tenant's best item next, and with queues a needy tenant's items even unread —
//! so tenants over their target lose items first. Evicted items go to their tenant's shadow queue
//! ([`crate::arbiter`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::arbiter::Need;
use crate::cache::{CleanerState, Inner, Served, Survivor, is_expired};
use crate::config::Eviction;
use crate::epoch::{Guard, Slot};
use crate::events::KeyEventKind;
use crate::expiry;
use crate::hash::{digest_of, key_hash_in};
use crate::index::{Loc, Locked};
use crate::item::{self, Kind, NewItem, Record};
use crate::rank::RankInput;
use crate::segment::{CLEANER_RESERVE, MAIN, NOTED_TENANTS, SMALL, SegmentHeader};
use crate::stats::Counters;
use crate::tenant::{IdleTax, TenantId, TenantState};

/// Passes one call of [`clean_until_watermark`] may run before giving others a turn.
const MAX_PASSES_PER_CALL: usize = 16;
/// Index maintenance steps the background thread runs per wake-up.
const BACKGROUND_MAINTENANCE_STEPS: usize = 128;
/// How long the background thread sleeps with nothing under way and no item due to expire
/// (writers short of free segments wake it at once). Retired index tables and segments are
/// freed at the latest this much after readers leave them.
const IDLE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs passes while free segments are at or below the watermark.
pub(crate) fn clean_until_watermark(inner: &Inner) {
    let mut state = inner.cleaner.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..MAX_PASSES_PER_CALL {
        inner.segments.reclaim(&inner.epochs);
        // Below a lowered memory limit, clean on until the segments to withhold are free too.
        let target = inner.watermark + inner.withhold_deficit();
        if inner.segments.free_count() > target || !pass(inner, &mut state) {
            break;
        }
    }
    inner.segments.reclaim(&inner.epochs);
    // With `memory_includes_index`, a pass may have grown the cleaner's buffers: cover them
    // from what it freed before a writer takes it.
    inner.settle_lending(usize::MAX);
    inner.settle_limit();
}

/// The background thread's loop: cleans when a writer reports low free memory, and does
/// bounded steps of index growth and of the expiry sweep ([`crate::expiry`]). While growth or
/// a sweep pass is under way it wakes every [`expiry::STEP_INTERVAL`]; otherwise it sleeps
/// until the earliest expiry is due or a writer wakes it, at most [`IDLE_WAIT`].
pub(crate) fn run_background(inner: &Arc<Inner>) {
    // Index maintenance and the sweep run outside the cleaner mutex, so they need an epoch
    // slot of their own (the cleaner's slot may be in use by a pass that a worker runs).
    let Some(participant) = inner.epochs.register() else { return };
    let mut wait = IDLE_WAIT;
    while inner.wait_for_work(wait) {
        clean_until_watermark(inner);
        let mut growing = false;
        for _ in 0..BACKGROUND_MAINTENANCE_STEPS {
            // Pinned one step at a time, so retired segments are not held back.
            growing = inner.maintain_index(&inner.epochs.pin(&participant));
            if !growing {
                break;
            }
        }
        let lending_short = inner.settle_lending(usize::MAX) | inner.settle_limit();
        let work = expiry::work_per_step(inner.index.roots(&inner.epochs.pin(&participant)));
        let sweep = expiry::step(inner, &participant, work);
        wait = if growing || sweep.in_pass || lending_short {
            expiry::STEP_INTERVAL
        } else {
            expiry::idle_wait(inner, IDLE_WAIT)
        };
    }
    inner.epochs.unregister(participant);
}

/// Calls `f` with each record of a segment the caller owns (sealed and taken off the lists).
fn for_each_record(inner: &Inner, segment: u32, mut f: impl FnMut(Loc, Record)) {
    let top = inner.segments.header(segment).key_top.load(Ordering::Acquire) as usize;
    let base = inner.arena.segment_ptr(segment);
    let mut offset = 0;
    while offset < top {
        // SAFETY: the segment is sealed, so records [0, key_top) are complete and never
        // written again; the caller owns it (it is on no list), so it cannot be reused while
        // we read.
        let rec = unsafe { Record::at(base, offset) };
        f(Loc { segment, offset: offset as u32 }, rec);
        offset += rec.record_len();
        if rec.value_offset() == offset {
            // The value sits right after its record (inline placement); skip it too. (A
            // high-end value can only start here if it filled the segment, which ends the
            // loop either way.)
            offset += rec.value_len();
        }
    }
}

fn is_live(inner: &Inner, guard: &Guard<'_>, hash: u64, loc: Loc) -> bool {
    inner.index.find(guard, hash, |l| l == loc).is_some()
}

/// Removes the slot for the item at `loc` if it still points there. Returns whether it did.
///
/// The root's CAS (shared by the keys of its tree) is left alone: dropping an expired or
/// evicted item changes no other key, and a new item for this key bumps it when stored. (The
/// removal still bumps it if it moves another item up, for lock-free readers.)
fn unlink_at(inner: &Inner, guard: &Guard<'_>, hash: u64, loc: Loc) -> bool {
    let locked = inner.lock_key(guard, hash);
    match locked.find(|l| l == loc) {
        Some((slot, _)) => {
            inner.unlinked(guard, loc);
            locked.remove(slot);
            true
        }
        None => false,
    }
}

/// One cleaning pass. Returns false if no pass was possible.
///
/// Candidates come from one of two choices. If some sealed segments hold so little live data
/// that it fits in one segment fewer (and in the free segments available), those are taken:
/// the pass compacts them and evicts nothing. Only when memory is full of live data does the
/// pass take Memshare's `n` candidates (half at random, half with the most dead bytes) and
/// evict the lowest-ranked items that do not fit in `n − 1` segments.
fn pass(inner: &Inner, state: &mut CleanerState) -> bool {
    let segment_size = inner.config.segment_size;
    let free = inner.segments.free_count();
    let head_room: usize = state
        .heads
        .iter()
        .flatten()
        .map(|&seg| {
            let h = inner.segments.header(seg);
            (h.value_bottom.load(Ordering::Relaxed) - h.key_top.load(Ordering::Relaxed)) as usize
        })
        .sum();
    let n_max = inner.config.cleaner_candidates;
    // A compaction can count only on its own head room and the reserved free segments (writers
    // may take the others meanwhile), less packing slack: small and large survivors fill
    // separate heads, and each head may end with up to one item's worth unused.
    let reserved = free.min(CLEANER_RESERVE);
    let slack = state.heads.len() * inner.config.max_item_size;
    let queues = match inner.config.eviction {
        Eviction::Memshare => None,
        Eviction::Queues(q) => Some(q),
    };
    let mut candidates = inner
        .segments
        .take_reclaimable(n_max, (reserved * segment_size + head_room).saturating_sub(slack));
    // The reads a survivor needs to be kept, by its segment's queue (small, main); 0: any
    // survivor may be kept.
    let mut min_reads = [0u8; 2];
    let mut outputs_left = reserved;
    // With queues, the queue a pass evicts from and the output segments it could open: a pass
    // whose earned items do not fit may take more of the queue's oldest segments (below).
    let mut evicting: Option<(u8, usize)> = None;
    if candidates.is_empty() && reserved < CLEANER_RESERVE && inner.segments.retired_count() > 0 {
        // No room to compact into only because retired segments wait for readers to leave
        // their epochs: wait for them rather than evict live items.
        return false;
    }
    if candidates.is_empty() {
        let outputs_available = free + state.heads.iter().flatten().count();
        if let Some(q) = queues {
            // S3-FIFO: evict from the small queue while it holds more than its share (its
            // target, which adapts), else from the main queue (or from whichever is not
            // empty).
            let small = (inner.segments.queue_count(SMALL) * segment_size) as u64;
            let over = small > inner.small_target.load(Ordering::Relaxed);
            let first = if over { SMALL } else { MAIN };
            let n = QUEUE_CANDIDATES.min(outputs_available + 1);
            let mut queue = first;
            candidates = take_oldest(inner, queue, n);
            if candidates.is_empty() {
                queue ^= 1;
                candidates = take_oldest(inner, queue, n);
            }
            min_reads = [q.promote_reads.max(1), q.keep_reads.max(1)];
            outputs_left = n.saturating_sub(1);
            evicting = Some((queue, outputs_available));
        } else {
            let n = n_max.min(outputs_available + 1);
            candidates = take_candidates(inner, state, n);
            outputs_left = n.saturating_sub(1);
        }
    }
    if candidates.is_empty() {
        return false;
    }
    let guard = inner.epochs.pin(&state.participant);
    let now = inner.now_ms();
    let recency = inner.recency();

    // Candidates holding a segment's worth of known dead bytes (overwritten, deleted): a
    // queue pass over them reclaims space as a compaction does, so the relocation credit
    // does not limit what it keeps. Without this, a writer overwriting a working set that
    // fits lost live items to passes over small-queue segments full of dead versions (the
    // small queue is not compacted); lookaside traces without overwrites never have any.
    let reclaims = |candidates: &[u32]| {
        let dead: usize = candidates
            .iter()
            .map(|&c| inner.segments.header(c).dead_bytes.load(Ordering::Relaxed) as usize)
            .sum();
        dead >= segment_size
    };
    let mut survivors = std::mem::take(&mut state.survivors);
    survivors.clear();
    let mut expired = 0;
    let mut read = 0;
    let mut laps = 0;
    loop {
        let Some(&segment) = candidates.get(read) else {
            // Every candidate read. With queues, if the items that earned a stay do not fit
            // in the outputs, take the queue's next oldest segment too, while the relocation
            // credit (items evicted and not yet matched by a copy) covers them: S3-FIFO gives
            // every such item another lap, and this keeps relocations at most one per
            // eviction over the whole run instead of within each pass.
            let Some((queue, outputs_available)) = evicting else { break };
            let (items, bytes) = survivors
                .iter()
                .filter(|s| s.freq >= s.min_freq)
                .fold((0u64, 0usize), |(n, b), s| (n + 1, b + s.size as usize));
            let room = outputs_left * segment_size - outputs_left * segment_size / 16;
            if bytes <= room
                || candidates.len() >= QUEUE_MAX_CANDIDATES
                || outputs_left + 1 > outputs_available
                || (items as i64 > state.relocation_credit && !reclaims(&candidates))
            {
                break;
            }
            let more = take_oldest(inner, queue, 1);
            if more.is_empty() {
                break;
            }
            candidates.extend(more);
            outputs_left += 1;
            continue;
        };
        read += 1;
        let queue = inner.segments.header(segment).queue.load(Ordering::Relaxed);
        let first_of_segment = survivors.len();
        for_each_record(inner, segment, |loc, rec| {
            let hash = key_hash_in(TenantId(rec.tenant()), rec.db(), rec.key());
            if !is_live(inner, &guard, hash, loc) {
                return;
            }
            if is_expired(inner.expires_at(&rec, loc), || now) {
                if unlink_at(inner, &guard, hash, loc) {
                    expired += 1;
                    inner.key_events.note(rec.tenant(), rec.db(), KeyEventKind::Expired, rec.key());
                }
                return;
            }
            survivors.push(Survivor {
                loc,
                hash,
                rank: 0,
                freq: rec.freq(),
                min_freq: min_reads[usize::from(queue == MAIN)],
                queue,
                large: rec.value_len() >= inner.config.large_value_threshold,
                age: recency.wrapping_sub(rec.access()),
                size: rec.size() as u32,
                tenant: rec.tenant(),
            });
        });
        // A main-queue segment whose live items nearly all earned a stay gets another lap
        // where it is, without copying: each of those items spends one read in place, and
        // the segment goes to the queue's newest end (a few unread items ride along). The
        // pass takes the next oldest segment instead.
        if evicting.is_some_and(|(q, _)| q == MAIN) && queue == MAIN && laps < QUEUE_MAX_LAPS {
            let items = &survivors[first_of_segment..];
            let earned: usize =
                items.iter().filter(|s| s.freq >= s.min_freq).map(|s| s.size as usize).sum();
            let live: usize = items.iter().map(|s| s.size as usize).sum();
            if live > 0 && earned * LAP_SHARE.1 >= live * LAP_SHARE.0 {
                for s in items.iter().filter(|s| s.freq >= s.min_freq) {
                    inner.record(&guard, s.loc).spend_read();
                }
                survivors.truncate(first_of_segment);
                candidates.remove(read - 1);
                read -= 1;
                inner.segments.requeue_newest(MAIN, segment);
                laps += 1;
                candidates.extend(inner.segments.take_oldest_of(MAIN, 1));
            }
        }
    }
    sample_idle(inner, &survivors, now);
    // One batch query for every survivor's temperature (Catalyst §3.3), then each tenant's
    // rank function.
    state.digests.clear();
    state.digests.extend(survivors.iter().map(|s| digest_of(s.hash) & !1));
    inner.metadata.temperatures(&state.digests, &mut state.temperatures);
    // With queues and the frequency sketch, a temperature is the key's estimated references:
    // a small-queue item the sketch has seen often enough earns the main queue like one read
    // on probation (TinyLFU; `src/sketch.rs`).
    let sketch = inner.metadata.estimates_frequencies();
    let promote_estimate = queues.filter(|_| sketch).map_or(0, |q| q.promote_estimate);
    if sketch {
        // Its past: ten references per item held now (and its size, where it grows).
        inner.metadata.set_items(inner.items_held() as usize);
    }
    if inner.config.metadata_grows() {
        let grown = inner.eviction_metadata_bytes().saturating_sub(inner.metadata_at_start);
        inner.metadata_grown.store(grown, Ordering::Relaxed);
    }
    for (s, t) in survivors.iter_mut().zip(&state.temperatures) {
        let input = RankInput { age: s.age, size: s.size, tenant: s.tenant, zone: t.zone };
        s.rank = inner.tenants[usize::from(s.tenant)].rank().function().rank(&input);
        if promote_estimate > 0 && s.queue == SMALL && t.zone >= promote_estimate {
            s.freq = s.freq.max(s.min_freq);
        }
    }
    // Highest rank first — with queues, more reads in the queue first, then rank; ties keep
    // segment order, so passes are deterministic. With several tenants, Algorithm 1
    // interleaves them by need.
    let by_reads = queues.is_some();
    survivors.sort_by_key(|s| std::cmp::Reverse((if by_reads { s.freq } else { 0 }, s.rank)));
    let mut order = std::mem::take(&mut state.order);
    order.clear();
    let by_need_order = inner.arbiter.enabled();
    if by_need_order {
        by_need(inner, &survivors, &mut order);
    }

    let mut relocated = (0u64, 0u64);
    // A queue pass copies no more items than it evicts plus the credit, so that over the run
    // relocations never outnumber evictions: keeping k of n survivors evicts n − k.
    // Over candidates that hold a segment's worth of dead bytes, a queue pass is a
    // compaction: it keeps every live item it has room for, earned or not.
    let compacting = evicting.is_some() && reclaims(&candidates);
    let max_keep = match evicting {
        Some(_) if !compacting => {
            ((state.relocation_credit + survivors.len() as i64) / 2).max(0) as u64
        }
        _ => u64::MAX,
    };
    // Each ghost remembers `ghost_percent` of the items in memory (S3-FIFO: as many as the
    // main queue holds), counted when it rotates.
    let held = || inner.items_held() as usize;
    let mut evicted = std::mem::take(&mut state.evicted);
    evicted.clear();
    // Best rank first, or (with tenants) in order of need.
    let (mut needy, mut ranked) = (order.iter().copied(), 0..survivors.len());
    loop {
        let next = if by_need_order {
            needy.next()
        } else {
            ranked.next().map(|index| Served { index, within_cap: true, needy: false })
        };
        let Some(Served { index: i, within_cap, needy }) = next else { break };
        let s = &survivors[i];
        // With queues, only items read often enough may stay, and those of tenants below
        // their target (Memshare's need decides among them).
        let keep =
            within_cap && (s.freq >= s.min_freq || needy || compacting) && relocated.0 < max_keep;
        let moved = if keep {
            move_out(inner, &guard, state, s, now, recency, &mut outputs_left)
        } else {
            Moved::NoRoom
        };
        match moved {
            Moved::To(new, size) => {
                relocated.0 += 1;
                relocated.1 += size as u64;
                // State bits set on the old record while it was copied carry over.
                inner.record(&guard, new).set_state(inner.record(&guard, s.loc).state());
                if size != s.size as usize {
                    // A wide expiry that fits the compact field in the new segment.
                    let t = &inner.tenants[usize::from(s.tenant)];
                    t.bytes.fetch_add(size as u64, Ordering::Relaxed);
                    t.bytes.fetch_sub(u64::from(s.size), Ordering::Relaxed);
                }
                // The copy is a record the expiry sweep's pass under way may not
                // account for (see `crate::expiry`).
                inner.note_expiry(inner.expires_at(&inner.record(&guard, new), new));
            }
            // The key changed while it was copied: the copy is dead, the old item too.
            Moved::Gone => {}
            // Out of room (in a compaction this is rare: the estimate was off; evicting the
            // rest keeps every pass making progress), or over the tenant's hard cap.
            Moved::NoRoom => {
                if unlink_at(inner, &guard, s.hash, s.loc) {
                    inner.observe_eviction(&guard, s.loc);
                    let ghost = if s.queue == SMALL { &inner.ghost } else { &inner.main_ghost };
                    if let Some(ghost) = ghost {
                        ghost.mark(s.hash, held);
                    }
                    evicted.push((s.tenant, s.hash, s.size));
                    let rec = inner.record(&guard, s.loc);
                    inner.key_events.note(s.tenant, rec.db(), KeyEventKind::Evicted, rec.key());
                }
            }
        }
    }
    drop(guard);
    inner.segments.retire(&candidates, &inner.epochs);
    for &(tenant, ..) in &evicted {
        Counters::add(&inner.tenants[usize::from(tenant)].evictions, 1);
    }
    inner.arbiter.on_evictions(&evicted);
    let c = &inner.counters;
    Counters::add(&c.expired, expired);
    Counters::add(&c.evictions, evicted.len() as u64);
    Counters::add(&c.relocated_items, relocated.0);
    Counters::add(&c.relocated_bytes, relocated.1);
    Counters::add(&c.cleaner_passes, 1);
    state.relocation_credit += evicted.len() as i64 - relocated.0 as i64;
    (state.survivors, state.order, state.evicted) = (survivors, order, evicted);
    inner.cleaner_scratch.store(state.scratch_bytes(), Ordering::Relaxed);
    true
}

/// Segments a pass takes from a queue (`Eviction::Queues`): it keeps at most one segment's
/// worth of their items, so it relocates at most about one item per item it evicts. (Taking
/// one segment of the small queue, as S3-FIFO examines its items one at a time, gave up to 0.4
/// points fewer misses at equal item counts, 0.08 on average over seven inputs, but up to 2.5
/// relocations per eviction where most items earn their promotion: orm-busy at 20–80% of its
/// working set.)
const QUEUE_CANDIDATES: usize = 2;
/// Segments a queue pass may take at most when the items that earned a stay do not fit in
/// one segment fewer (and the relocation credit covers them).
const QUEUE_MAX_CANDIDATES: usize = 8;
/// Main-queue segments a pass may give another lap in place, at most.
const QUEUE_MAX_LAPS: usize = 8;
/// The share of a main-queue segment's live bytes (numerator, denominator) that must have
/// earned a stay for the segment to get a lap in place. Over 13 points of four inputs (Zipf
/// 0.99 at 0.1–5%, orm-busy at 1–60%, scarab at 1–20%, the Catalyst Mix at 0.1–5%), mean
/// miss ratio: no laps 0.4079, 1/2 0.4079, 3/4 0.4063, 7/8 0.4058, 15/16 0.4059; 7/8 also
/// halved the copies on Zipf (0.10 → 0.05 per eviction at 1%).
const LAP_SHARE: (usize, usize) = (7, 8);
/// With several tenants, the oldest segments of a queue among which a pass picks its
/// candidates by the bytes of tenants over their target.
const QUEUE_WINDOW: usize = 8;

/// Records read from the start of a segment when it is sealed, for its tenants' shares.
const SCORE_RECORDS: usize = 32;
/// Sealed segments scored per candidate wanted by a pass choosing candidates by need.
const SCORE_SAMPLE_PER_CANDIDATE: usize = 4;
/// A tenant holding more than this percentage of its target makes a pass choosing candidates
/// by need score up to [`SCORE_SAMPLE`] segments instead of a few per candidate.
const FAR_OVER_PERCENT: u128 = 150;
/// Sealed segments such a pass scores, at most (at random where there are more): a score is
/// a header read, so a pass can afford every segment of a gigabyte in megabyte segments.
const SCORE_SAMPLE: usize = 1024;

/// Takes `n` candidates for an evicting pass: half at random, half by score — dead bytes, and
/// with several tenants also the estimated bytes of tenants over their target (Memshare §3.1,
/// from the segments' headers: [`note_tenants`]) — among a sample of a few segments per
/// candidate, or of up to [`SCORE_SAMPLE`] while a tenant holds more than
/// [`FAR_OVER_PERCENT`] of its target (a tenant with no target and items counts: it holds
/// what others are owed). The wide sample finds the newest segments of a tenant writing far
/// more than it keeps; the narrow one leaves tenants a little over their targets, which is
/// the pool's slack (`docs/design.md`, "Tenants: the arbiter in the cleaner").
fn take_candidates(inner: &Inner, state: &mut CleanerState, n: usize) -> Vec<u32> {
    let dead = |h: &SegmentHeader| u64::from(h.dead_bytes.load(Ordering::Relaxed));
    let rng = &mut || state.next_random();
    if !inner.arbiter.enabled() {
        return inner.segments.take_candidates(n, rng, None, &mut |_, h| dead(h));
    }
    // Which tenants hold more than their target, and whether one holds far more: a tenant
    // writing much more than it keeps holds its newest segments until passes reach them.
    let (mut over, mut far) = (Vec::with_capacity(inner.tenants.len()), false);
    for t in inner.tenants.iter() {
        let need = need_of(t);
        over.push(need.over());
        far |= u128::from(need.actual) * 100 > u128::from(need.target) * FAR_OVER_PERCENT;
    }
    let sample = if far { SCORE_SAMPLE } else { n * SCORE_SAMPLE_PER_CANDIDATE };
    inner.segments.take_candidates(n, rng, Some(sample), &mut |_, h| {
        dead(h) + over_target_bytes(&over, h, inner.config.segment_size)
    })
}

/// A queue pass's next `n` candidates from `queue`: its oldest segments, or with several
/// tenants [`take_oldest_by_need`]'s choice among them.
fn take_oldest(inner: &Inner, queue: u8, n: usize) -> Vec<u32> {
    if inner.arbiter.enabled() {
        take_oldest_by_need(inner, queue, n)
    } else {
        inner.segments.take_oldest_of(queue, n)
    }
}

/// With queues and several tenants: `n` of the `QUEUE_WINDOW` oldest segments of `queue`,
/// those with the most bytes of tenants at or over their target; segments holding only
/// tenants below theirs get another lap. The queue's order bends so that a pass does not take
/// memory from tenants below their target (reservations, won credits) while others have some
/// to give.
fn take_oldest_by_need(inner: &Inner, queue: u8, n: usize) -> Vec<u32> {
    let over: Vec<bool> =
        inner.tenants.iter().map(|t| t.bytes.load(Ordering::Relaxed) >= t.target()).collect();
    inner.segments.take_oldest_scored(queue, n, QUEUE_WINDOW, &mut |_, h| {
        over_target_bytes(&over, h, inner.config.segment_size)
    })
}

/// A sealed segment's estimated bytes of tenants over their target (`over`), from the
/// tenants its header names (Memshare §3.1's candidate score, less the dead bytes).
fn over_target_bytes(over: &[bool], h: &SegmentHeader, segment_size: usize) -> u64 {
    let noted = h.tenants.iter().map(|t| t.load(Ordering::Relaxed));
    let share: u64 =
        noted.filter(|&t| over[(t >> 16) as usize]).map(|t| u64::from(t & 0xFFFF)).sum();
    (share * h.used_bytes(segment_size) as u64) >> 16
}

/// Seals a head segment its caller owns, once every item it wrote there is published or
/// abandoned: notes the tenants that wrote it in its header ([`note_tenants`]), then puts it
/// on its sealed list. Every seal of a head goes through here.
pub(crate) fn seal(inner: &Inner, segment: u32) {
    note_tenants(inner, segment);
    inner.segments.seal(segment);
}

/// Notes in `segment`'s header, as its owner is about to seal it, the tenants with the most
/// bytes among its first records and their shares of those bytes: what a pass choosing
/// candidates by need scores ([`over_target_bytes`]: each share of the bytes written) without
/// reading any record. Zero where tenants share no memory (no pass scores by need). The
/// caller MUST own the segment (its open head: nobody else writes, frees or reuses it) and
/// have published or abandoned every item it wrote there.
fn note_tenants(inner: &Inner, segment: u32) {
    let h = inner.segments.header(segment);
    let mut noted = [0u32; NOTED_TENANTS];
    if inner.arbiter.enabled() {
        // Bytes per tenant among the first records: at most `SCORE_RECORDS` tenants.
        let mut seen = [(0u16, 0u64); SCORE_RECORDS];
        let (mut distinct, mut total) = (0, 0u64);
        for_first_records(inner, segment, SCORE_RECORDS, |rec| {
            let (tenant, size) = (rec.tenant(), rec.size() as u64);
            total += size;
            match seen[..distinct].iter_mut().find(|(t, _)| *t == tenant) {
                Some((_, bytes)) => *bytes += size,
                None => {
                    seen[distinct] = (tenant, size);
                    distinct += 1;
                }
            }
        });
        seen[..distinct].sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (note, &(tenant, bytes)) in noted.iter_mut().zip(&seen[..distinct]) {
            let share = (bytes << 16).checked_div(total).unwrap_or(0).min(0xFFFF) as u32;
            *note = u32::from(tenant) << 16 | share;
        }
    }
    for (field, note) in h.tenants.iter().zip(noted) {
        field.store(note, Ordering::Relaxed);
    }
}

/// Calls `f` with up to `max` records from the start of a segment that is sealed (the caller
/// holding the segment-list lock) or that the caller owns.
fn for_first_records(inner: &Inner, segment: u32, max: usize, mut f: impl FnMut(Record)) {
    let top = inner.segments.header(segment).key_top.load(Ordering::Acquire) as usize;
    let base = inner.arena.segment_ptr(segment);
    let mut offset = 0;
    for _ in 0..max {
        if offset >= top {
            break;
        }
        // SAFETY: the segment is sealed and the caller holds the segment-list lock, or the
        // caller owns it as its open head: either way no one can free or reuse it while we
        // read, and records in [0, key_top) are complete and never written again.
        let rec = unsafe { Record::at(base, offset) };
        f(rec);
        offset += rec.record_len();
        if rec.value_offset() == offset {
            offset += rec.value_len();
        }
    }
}

fn need_of(t: &TenantState) -> Need {
    Need { target: t.target(), actual: t.bytes.load(Ordering::Relaxed) }
}

/// Memshare's Algorithm 1: the order in which to keep survivors (already sorted by rank).
/// Repeatedly serve the tenant with the highest need — counting each tenant's actual memory
/// without its items in this pass, plus what is kept so far — with its best remaining item.
/// Items that would take a tenant over its hard cap are marked for eviction.
fn by_need(inner: &Inner, survivors: &[Survivor], order: &mut Vec<Served>) {
    // Only the tenants with survivors in this pass take part: per-pass work is
    // O(survivors × log tenants present), not O(every tenant id).
    let mut local = [u16::MAX; item::MAX_TENANTS];
    let mut present: Vec<usize> = Vec::new();
    for s in survivors {
        let t = usize::from(s.tenant);
        if local[t] == u16::MAX {
            local[t] = present.len() as u16;
            present.push(t);
        }
    }
    let tenant = |t: usize| &inner.tenants[present[t]];
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); present.len()];
    let mut actual: Vec<u64> =
        (0..present.len()).map(|t| tenant(t).bytes.load(Ordering::Relaxed)).collect();
    for (i, s) in survivors.iter().enumerate() {
        let t = usize::from(local[usize::from(s.tenant)]);
        queues[t].push_back(i);
        actual[t] = actual[t].saturating_sub(u64::from(s.size));
    }
    let target: Vec<u64> = (0..present.len()).map(|t| tenant(t).target()).collect();
    let cap: Vec<u64> =
        (0..present.len()).map(|t| tenant(t).policy().hard_cap.unwrap_or(u64::MAX)).collect();
    let sizes = |i: usize| u64::from(survivors[i].size);
    order.reserve(survivors.len());
    serve_by_need(
        Tenants { ids: &present, target: &target, cap: &cap },
        actual,
        queues,
        sizes,
        order,
    );
}

/// The tenants of one pass, by their index in it: their ids, targets and hard caps.
struct Tenants<'a> {
    ids: &'a [usize],
    target: &'a [u64],
    cap: &'a [u64],
}

/// A tenant waiting to be served, by its need when it went into the heap: the highest need
/// first, ties to the lower tenant id (deterministic).
struct Waiting {
    need: Need,
    id: usize,
    t: usize,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Waiting {}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.need.cmp(&other.need).then(other.id.cmp(&self.id))
    }
}

/// Algorithm 1's loop: serves, item by item, the tenant of highest need its best remaining
/// item (`queues[t]`, best first; `size(i)` its bytes), counting what it keeps in `actual`,
/// and appends each to `order` — marked over its hard cap where keeping it would pass it (its
/// bytes then do not count). A heap of the tenants keyed by need: only the tenant served
/// changes its need, so each item costs O(log tenants), not a scan of every tenant.
fn serve_by_need(
    tenants: Tenants<'_>,
    mut actual: Vec<u64>,
    mut queues: Vec<VecDeque<usize>>,
    size: impl Fn(usize) -> u64,
    order: &mut Vec<Served>,
) {
    let need = |t: usize, actual: &[u64]| Need { target: tenants.target[t], actual: actual[t] };
    let mut heap: std::collections::BinaryHeap<Waiting> = (0..queues.len())
        .filter(|&t| !queues[t].is_empty())
        .map(|t| Waiting { need: need(t, &actual), id: tenants.ids[t], t })
        .collect();
    while let Some(Waiting { t, id, .. }) = heap.pop() {
        let i = queues[t].pop_front().expect("a tenant waits only while it has items");
        let size = size(i);
        let needy = actual[t] < tenants.target[t];
        let within_cap = actual[t] + size <= tenants.cap[t];
        if within_cap {
            actual[t] += size;
        }
        order.push(Served { index: i, within_cap, needy });
        if !queues[t].is_empty() {
            heap.push(Waiting { need: need(t, &actual), id, t });
        }
    }
}

/// With several tenants, folds the survivors' idleness into the estimates of tenants with an
/// idle tax (Algorithm 3's idle fraction, by sampling what the cleaner reads anyway).
fn sample_idle(inner: &Inner, survivors: &[Survivor], now: u64) {
    if !inner.arbiter.enabled() {
        return;
    }
    let taxes: Vec<Option<IdleTax>> = inner.tenants.iter().map(|t| t.policy().idle_tax).collect();
    // Per tenant: (idle bytes, sampled bytes).
    let mut sums = vec![(0u64, 0u64); inner.tenants.len()];
    for s in survivors {
        let Some(tax) = taxes[usize::from(s.tenant)] else { continue };
        let last_read = inner.tick_time_ms(inner.recency().wrapping_sub(s.age));
        let e = &mut sums[usize::from(s.tenant)];
        e.1 += u64::from(s.size);
        if now.saturating_sub(last_read) > tax.idle_ms {
            e.0 += u64::from(s.size);
        }
    }
    for (t, &(idle, sampled)) in inner.tenants.iter().zip(&sums) {
        t.sample_idle(idle, sampled);
    }
}

/// What became of a survivor the pass meant to keep.
enum Moved {
    /// Copied and relocated: its new location and size.
    To(Loc, usize),
    /// Its key changed or went while it was copied.
    Gone,
    /// Not kept: no room in the pass's output budget (or the pass chose not to keep it).
    NoRoom,
}

/// Copies a survivor into the cleaner's output head (opening a new output segment if there is
/// budget left) and points its slot at the copy.
///
/// A collection may be edited in place by a writer holding its root lock (`crate::edit`), so
/// it is copied under that lock, found still at its old place first; a string, whose bytes
/// never change, is copied unlocked and relocated if the slot still points at it.
fn move_out(
    inner: &Inner,
    guard: &Guard<'_>,
    state: &mut CleanerState,
    s: &Survivor,
    now: u64,
    recency: u8,
    outputs_left: &mut usize,
) -> Moved {
    if inner.record(guard, s.loc).kind() == Kind::STRING {
        return match copy_out(inner, guard, state, s, now, recency, outputs_left) {
            Some((new, size)) if relocate(inner, guard, s.hash, s.loc, new) => Moved::To(new, size),
            Some((new, size)) => {
                inner.segments.header(new.segment).add_dead(size);
                Moved::Gone
            }
            None => Moved::NoRoom,
        };
    }
    let locked = inner.lock_key(guard, s.hash);
    let Some((slot, _)) = locked.find(|l| l == s.loc) else { return Moved::Gone };
    match copy_out(inner, guard, state, s, now, recency, outputs_left) {
        Some((new, size)) => {
            repoint(inner, guard, &locked, slot, s.loc, new);
            Moved::To(new, size)
        }
        None => Moved::NoRoom,
    }
}

/// Copies a survivor into the cleaner's output head, opening a new output segment if there is
/// budget left. Returns the copy's location and size, or `None` if it does not fit. May run
/// under the survivor's root lock (`move_out`): a new output segment comes from `take_free`,
/// which pops a list under its leaf mutex and waits for nothing.
fn copy_out(
    inner: &Inner,
    guard: &Guard<'_>,
    state: &mut CleanerState,
    s: &Survivor,
    now: u64,
    recency: u8,
    outputs_left: &mut usize,
) -> Option<(Loc, usize)> {
    let rec = inner.record(guard, s.loc);
    let head = &mut state.heads[usize::from(s.large)];
    // Keep the access stamp, but never let it look older than half the stamp range, so it
    // cannot wrap around to look young.
    let access = if recency.wrapping_sub(rec.access()) > 128 {
        recency.wrapping_sub(128)
    } else {
        rec.access()
    };
    let new_item = NewItem {
        tenant: rec.tenant(),
        db: rec.db(),
        key: rec.key(),
        flags: rec.flags(),
        expires_at_ms: inner.expires_at(&rec, s.loc),
        cas: rec.cas(),
        access,
        state: rec.state(),
        touched: rec.touched(),
        // Queues: an item promoted from the small queue starts over; one kept in the main
        // queue spends a read (S3-FIFO).
        freq: match (s.min_freq, s.queue) {
            (0, _) => rec.freq(),
            (_, SMALL) => 0,
            _ => rec.freq().saturating_sub(1),
        },
        kind: rec.kind(),
    };
    loop {
        if let Some(seg) = *head {
            if let Some(written) = inner.append_to(seg, &new_item, &[rec.value()]) {
                return Some(written);
            }
            seal(inner, seg);
            *head = None;
        }
        if *outputs_left == 0 {
            return None;
        }
        *outputs_left -= 1;
        let seg = inner.segments.take_free(now, 0)?;
        inner.segments.header(seg).queue.store(MAIN, Ordering::Relaxed);
        *head = Some(seg);
    }
}

/// Points the slot for `hash` from `old` to `new` if it still points to `old`.
fn relocate(inner: &Inner, guard: &Guard<'_>, hash: u64, old: Loc, new: Loc) -> bool {
    let locked = inner.lock_key(guard, hash);
    match locked.find(|l| l == old) {
        Some((slot, _)) => {
            repoint(inner, guard, &locked, slot, old, new);
            true
        }
        None => false,
    }
}

/// Points `slot` (under `locked`, found at `old`) at the copy at `new`. The item's bytes moved
/// but are unchanged: the old copy is dead bytes in its segment (which may survive the pass,
/// see `pass`), and the CAS does not change.
fn repoint(
    inner: &Inner,
    guard: &Guard<'_>,
    locked: &Locked<'_>,
    slot: &AtomicU64,
    old: Loc,
    new: Loc,
) {
    locked.replace(slot, new);
    let size = inner.record(guard, old).size();
    inner.segments.header(old.segment).add_dead(size);
}

/// Evicts the oldest sealed segment whole. Returns false if there is none.
pub(crate) fn evict_oldest(inner: &Inner, participant: &Slot) -> bool {
    let Some(segment) = inner.segments.take_oldest_sealed() else { return false };
    let guard = inner.epochs.pin(participant);
    let now = inner.now_ms();
    let (mut evicted, mut expired) = (Vec::new(), 0);
    for_each_record(inner, segment, |loc, rec| {
        let hash = key_hash_in(TenantId(rec.tenant()), rec.db(), rec.key());
        let was_expired = is_expired(inner.expires_at(&rec, loc), || now);
        if unlink_at(inner, &guard, hash, loc) {
            let kind = if was_expired {
                expired += 1;
                KeyEventKind::Expired
            } else {
                inner.observe_eviction(&guard, loc);
                evicted.push((rec.tenant(), hash, rec.size() as u32));
                KeyEventKind::Evicted
            };
            inner.key_events.note(rec.tenant(), rec.db(), kind, rec.key());
        }
    });
    drop(guard);
    inner.segments.retire(&[segment], &inner.epochs);
    for &(tenant, ..) in &evicted {
        Counters::add(&inner.tenants[usize::from(tenant)].evictions, 1);
    }
    inner.arbiter.on_evictions(&evicted);
    let c = &inner.counters;
    Counters::add(&c.evictions, evicted.len() as u64);
    Counters::add(&c.expired, expired);
    Counters::add(&c.fifo_evictions, 1);
    true
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use super::{Tenants, serve_by_need};
    use crate::arbiter::Need;
    use crate::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};

    #[test]
    fn the_heap_serves_survivors_in_algorithm_1s_order() {
        // Random passes (1–300 tenants, targets, caps, empty tenants, ties of need and of
        // size): the heap's order of service is the one a scan of every tenant per item
        // gives (the highest need, ties to the lower id), with the same cap marks.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        for _ in 0..300 {
            let n = 1 + next(300) as usize;
            let ids: Vec<usize> = (0..n).map(|t| (t * 7919) % 1000).collect();
            let target: Vec<u64> = (0..n).map(|_| next(4) * 1000).collect();
            let cap: Vec<u64> =
                (0..n).map(|_| if next(3) == 0 { next(5000) } else { u64::MAX }).collect();
            let actual: Vec<u64> = (0..n).map(|_| next(3) * 1000).collect();
            let sizes: Vec<u64> = (0..1 + next(2000)).map(|_| 100 * (1 + next(10))).collect();
            let mut queues = vec![VecDeque::new(); n];
            for i in 0..sizes.len() {
                queues[next(n as u64) as usize].push_back(i);
            }
            let mut got = Vec::new();
            let tenants = Tenants { ids: &ids, target: &target, cap: &cap };
            serve_by_need(tenants, actual.clone(), queues.clone(), |i| sizes[i], &mut got);
            // The scan.
            let (mut actual, mut want) = (actual, Vec::new());
            let need = |t: usize, a: &[u64]| Need { target: target[t], actual: a[t] };
            let mut active: Vec<usize> = (0..n).filter(|&t| !queues[t].is_empty()).collect();
            while !active.is_empty() {
                let (pos, &t) = active
                    .iter()
                    .enumerate()
                    .max_by(|a, b| {
                        need(*a.1, &actual)
                            .cmp(&need(*b.1, &actual))
                            .then(ids[*b.1].cmp(&ids[*a.1]))
                    })
                    .unwrap();
                let i = queues[t].pop_front().unwrap();
                let within_cap = actual[t] + sizes[i] <= cap[t];
                if within_cap {
                    actual[t] += sizes[i];
                }
                want.push((i, within_cap));
                if queues[t].is_empty() {
                    active.swap_remove(pos);
                }
            }
            let got: Vec<(usize, bool)> = got.iter().map(|s| (s.index, s.within_cap)).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn sealed_segments_name_the_tenants_that_wrote_them() {
        // Tenants 1 and 2 write items of one size in the pattern 1, 1, 2, twice what the
        // memory holds: workers' heads and the cleaner's outputs seal. Each sealed segment's
        // header names the tenants of its first records with their shares of those bytes, which
        // is all a pass choosing candidates by need reads; with no tenant configured, nothing.
        for tenants in [true, false] {
            let config = EngineConfig {
                max_memory: 4 << 20,
                segment_size: 64 << 10,
                max_item_size: 64 << 10,
                cleaner: CleanerMode::Inline,
                eviction: crate::Eviction::Memshare,
                ..EngineConfig::default()
            };
            let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
            if tenants {
                for t in 1..=2 {
                    let policy = crate::TenantPolicy { reserved: 1 << 20, ..Default::default() };
                    engine.set_tenant_policy(TenantId(t), policy);
                }
            }
            let mut w = engine.worker().unwrap();
            for i in 0..60_000u64 {
                let t = [1, 1, 2][(i % 3) as usize];
                w.store(Store::new(TenantId(t), &i.to_le_bytes(), &[7; 100])).unwrap();
            }
            let inner = engine.inner();
            assert!(engine.stats().relocated_items > 0, "no pass kept anything");
            let (mut sealed, mut two_thirds) = (0, 0);
            let mut over = vec![false; crate::item::MAX_TENANTS];
            over[1] = true;
            for id in 0..engine.stats().segments as u32 {
                let h = inner.segments.header(id);
                if !h.sealed.load(Ordering::Acquire) {
                    continue;
                }
                sealed += 1;
                let notes: Vec<(usize, u64)> = h
                    .tenants
                    .iter()
                    .map(|n| n.load(Ordering::Relaxed))
                    .filter(|&n| n != 0)
                    .map(|n| ((n >> 16) as usize, u64::from(n & 0xFFFF)))
                    .collect();
                if !tenants {
                    assert!(notes.is_empty(), "segment {id}: {notes:?}");
                    continue;
                }
                let total: u64 = notes.iter().map(|n| n.1).sum();
                assert!((65_530..=65_536).contains(&total), "segment {id}: {notes:?}");
                assert!(notes.iter().all(|n| n.0 == 1 || n.0 == 2), "segment {id}: {notes:?}");
                let one = notes.iter().find(|n| n.0 == 1).map_or(0, |n| n.1);
                let bytes = (one * h.used_bytes(64 << 10) as u64) >> 16;
                assert_eq!(super::over_target_bytes(&over, h, 64 << 10), bytes);
                if (41_000..46_500).contains(&one) {
                    two_thirds += 1;
                }
            }
            assert!(sealed > 32, "{sealed} sealed segments");
            // A worker's segment holds tenant 1's two items of every three (the cleaner's
            // outputs hold the survivors in order of need, a tenant's run at a time).
            assert!(!tenants || two_thirds > 0, "{two_thirds} of {sealed}");
        }
    }

    #[test]
    fn fifo_eviction_drops_the_oldest_segment_whole() {
        let config = EngineConfig {
            max_memory: 1 << 20,
            segment_size: 16 << 10,
            max_item_size: 16 << 10,
            cleaner: CleanerMode::Inline,
            ..EngineConfig::default()
        };
        let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
        let mut w = engine.worker().unwrap();
        let value = [5u8; 1000];
        // 64 items of ~1 KB fill about four 16 KiB segments; the first ones seal.
        for i in 0..64u32 {
            w.store(Store::new(TenantId(0), &i.to_le_bytes(), &value)).unwrap();
        }
        let before = engine.stats();
        assert!(super::evict_oldest(engine.inner(), w.slot()));
        let after = engine.stats();
        assert_eq!(after.fifo_evictions, 1);
        let evicted = after.evictions - before.evictions;
        assert!(evicted > 0 && evicted < 64, "one segment's items, not all: {evicted}");
        assert_eq!(after.items, before.items - evicted);
        // The oldest segment held the first keys written.
        assert!(!w.contains(TenantId(0), &0u32.to_le_bytes()));
        assert!(w.contains(TenantId(0), &63u32.to_le_bytes()));
        engine.validate();
    }
}
