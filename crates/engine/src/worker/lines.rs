//! The memory a GET of one key reads, as addresses, for a model of the memory hierarchy (the
//! simulator's `memory` module). Like [`Worker::inspect`], it counts no access and touches no
//! recency: it walks the index and decodes the records a lookup would compare, then reports
//! where they are instead of reading values.
//!
//! What a GET hit reads, in order (`crate::worker` `read`):
//!
//! ```text
//!  root bucket ─► sub-buckets on the key's path ─► each record whose tag matches (key compare)
//!      64 B             64 B each                     header + key: record_len bytes
//!                                  ─► segment header (base time, for the expiry) ─► value
//!                                          64 B                       value_len bytes
//! ```
//!
//! A value of at most `inline_value_max` bytes follows its key record directly
//! ([`LookupLines::inline`]); a larger one lies at the segment's high end (Cavast §4.2's
//! head-to-head layout). Not reported: the worker's own lines (epoch slot, counters,
//! reference pool), which a busy worker keeps in its private caches, the eviction metadata,
//! applied in batches of 1,024 accesses away from the request. With a search lookaside
//! buffer (off by default), its bucket is the first line reported, and a key it holds is
//! reported from there without the index's buckets (a reader that bypasses it, as a lookup
//! would, reports the index path alone).

use super::Worker;
use crate::cache::is_expired;
use crate::hash::key_hash_in;
use crate::index::Loc;
use crate::tenant::TenantId;

/// A byte range in memory: `len` bytes from address `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// The first byte's address.
    pub addr: usize,
    /// Bytes in the range.
    pub len: usize,
}

/// What [`Worker::lookup_lines`] reports: where a lookup of one key reads. Reused between
/// calls (the vectors keep their capacity).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupLines {
    /// Addresses of the 64-byte buckets read: the SLB's first when the lookup goes through
    /// one, then the index's, root first (none when the SLB holds the key).
    pub buckets: Vec<usize>,
    /// Key records compared, in order: every record whose tag matched, the key's own last
    /// when it was found.
    pub records: Vec<Span>,
    /// The segment header read for the expiry check (a hit or an expired item), if any.
    pub segment_header: Option<usize>,
    /// The value, when the key has a live item.
    pub value: Option<Span>,
    /// Whether the value follows its key record directly (inline) rather than lying at the
    /// segment's high end.
    pub inline: bool,
    /// The locations behind `records`, kept between calls as the other vectors are.
    candidates: Vec<Loc>,
}

impl LookupLines {
    fn clear(&mut self) {
        self.buckets.clear();
        self.records.clear();
        self.segment_header = None;
        self.value = None;
        self.inline = false;
        self.candidates.clear();
    }
}

impl Worker {
    /// Fills `out` with what a GET of `key` reads (see the module docs) and returns whether
    /// the key has a live item. Counts no access, touches no recency, removes nothing (an
    /// expired item reads as absent, as a GET would answer, but stays).
    pub fn lookup_lines(&mut self, tenant: TenantId, key: &[u8], out: &mut LookupLines) -> bool {
        out.clear();
        let db = self.db;
        let hash = key_hash_in(tenant, db, key);
        let inner = &*self.inner;
        inner.check_flush(&self.slot, tenant);
        let guard = inner.epochs.pin(&self.slot);
        let mut candidates = std::mem::take(&mut out.candidates);
        let found = inner.index.path(
            &guard,
            hash,
            |l| inner.key_matches(&guard, l, tenant, db, key),
            !self.slb.bypassing(),
            &mut out.buckets,
            &mut candidates,
        );
        let base = |loc: Loc| inner.arena.segment_ptr(loc.segment) as usize;
        for &loc in &candidates {
            let rec = inner.record(&guard, loc);
            out.records.push(Span { addr: base(loc) + loc.offset as usize, len: rec.record_len() });
        }
        out.candidates = candidates;
        let Some(loc) = found else {
            return false;
        };
        out.segment_header = Some(std::ptr::from_ref(inner.segments.header(loc.segment)) as usize);
        let rec = inner.record(&guard, loc);
        if is_expired(inner.expires_at(&rec, loc), || inner.now_ms()) {
            return false;
        }
        out.value = Some(Span { addr: base(loc) + rec.value_offset(), len: rec.value_len() });
        out.inline = rec.value_offset() == loc.offset as usize + rec.record_len();
        true
    }
}
