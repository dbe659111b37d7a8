//! Values read past their epoch guard: a reply written from the segment itself.
//!
//! A reader's references into segments are valid while it holds an epoch guard
//! (`crate::epoch`); a large value's reply takes longer than that — the socket drains it over
//! several turns — and copying 1 MB into an output buffer only to hand it to the kernel costs
//! as much as the write itself. A [`ValuePin`] keeps the value's bytes readable instead: it is
//! taken while the read's guard is held, and it holds the value's segment back from the free
//! list (`Segments::reclaim` moves a retired segment that is pinned to a `held` list, freed
//! when its last pin goes). Nothing else changes for the segment: its item can still be
//! overwritten, deleted, relocated or evicted, and the segment retired; only its memory is not
//! reused. Item bytes are never written after the item is published, so the pinned bytes stay
//! what the read saw.
//!
//! Pins are bounded (`Segments::max_pins`, an eighth of the segments): past it, a read gets
//! no pin and the caller copies the value as before, so pins never hold more than an eighth of
//! memory back, and writers never wait for them (held segments do not count as retired).

use std::sync::Arc;

use crate::cache::Inner;

/// A value's bytes, readable until the pin is dropped (see the module doc). Taken with
/// [`Worker::get_pinned`](crate::Worker::get_pinned).
pub struct ValuePin {
    inner: Arc<Inner>,
    segment: u32,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pin only reads bytes that no one writes while it lives (published item bytes
// are immutable and the segment is not reused while pinned, see `ValuePin::bytes`); reading
// them is as safe from any thread as from the one that took the pin. `Inner` is shared across
// threads already.
unsafe impl Send for ValuePin {}
// SAFETY: as for `Send`: `&ValuePin` only gives shared reads of immutable bytes.
unsafe impl Sync for ValuePin {}

impl std::fmt::Debug for ValuePin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValuePin").field("segment", &self.segment).field("len", &self.len).finish()
    }
}

impl ValuePin {
    /// Pins `value`, which the caller read under an epoch guard it still holds. `None` if the
    /// value is not in the arena or the pin budget is spent.
    pub(crate) fn new(inner: &Arc<Inner>, value: &[u8]) -> Option<ValuePin> {
        let segment = inner.arena.segment_of(value)?;
        inner.segments.try_pin(segment).then(|| ValuePin {
            inner: Arc::clone(inner),
            segment,
            ptr: value.as_ptr(),
            len: value.len(),
        })
    }

    /// The value's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` lies inside segment `segment` of the arena (checked by
        // `Arena::segment_of` when the pin was taken, while the reader's epoch guard kept the
        // segment from being freed). From then on the pin keeps the segment off the free list
        // (`Segments::reclaim` frees a pinned segment only once its pins are gone), so the
        // bytes are neither reused nor released (`Arena::release` takes free segments only),
        // and the arena's mapping lives as long as `inner`, which the pin holds.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for ValuePin {
    fn drop(&mut self) {
        self.inner.segments.unpin(self.segment);
    }
}
