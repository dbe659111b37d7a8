//! The arena: one anonymous mapping of `max_memory` bytes, cut into segments.
//!
//! This module and [`crate::item`] are where raw memory is touched. The arena hands out
//! `*mut u8` for a segment's bytes; who may write which bytes is decided elsewhere:
//!
//! - a segment's bytes are written only by the one owner of that segment (a worker's head
//!   segment, or the cleaner's output segment), and only in the region not yet published;
//! - published bytes are never written again until the segment is freed, and a freed segment is
//!   reused only after every reader that could hold a reference to it has left its epoch
//!   ([`crate::epoch`]). The one exception is an item's access byte, which is read and written
//!   atomically.
//!
//! Pages are touched lazily, so resident memory grows with use; the mapping is advised for
//! transparent huge pages.

use std::ptr::NonNull;

/// An anonymous memory mapping holding every segment.
#[derive(Debug)]
pub struct Arena {
    base: NonNull<u8>,
    len: usize,
    segment_size: usize,
}

// SAFETY: the arena is a plain block of memory; the access discipline described in the module
// doc (single writer per unpublished region, epoch-protected reuse) is what makes concurrent use
// sound, and it is upheld by the engine, not by the type.
unsafe impl Send for Arena {}
// SAFETY: as above.
unsafe impl Sync for Arena {}

impl Arena {
    /// Maps `segments × segment_size` bytes. Fails if the kernel refuses the mapping.
    pub fn new(segments: usize, segment_size: usize) -> std::io::Result<Self> {
        let len = segments
            .checked_mul(segment_size)
            .ok_or_else(|| std::io::Error::other("arena size overflows usize"))?;
        // SAFETY: an anonymous private mapping with no address hint has no preconditions; the
        // result is checked against MAP_FAILED below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `ptr` is the start of the `len`-byte mapping created above. The advice is a
        // hint; its failure is harmless and ignored.
        unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| std::io::Error::other("null"))?;
        Ok(Arena { base, len, segment_size })
    }

    /// The first byte of segment `id`.
    #[inline]
    pub fn segment_ptr(&self, id: u32) -> *mut u8 {
        let offset = id as usize * self.segment_size;
        assert!(offset < self.len, "segment id out of range");
        // SAFETY: `offset` is within the mapping (checked above), so the result stays inside
        // the same allocated object.
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// Bytes per segment.
    #[inline]
    pub fn segment_size(&self) -> usize {
        self.segment_size
    }

    /// Gives a freed segment's pages back to the kernel (resident memory shrinks).
    pub fn discard(&self, id: u32) {
        let ptr = self.segment_ptr(id);
        // SAFETY: the range is one whole segment inside the mapping; MADV_DONTNEED on private
        // anonymous memory only zeroes it, and the caller guarantees no one references it.
        unsafe { libc::madvise(ptr.cast(), self.segment_size, libc::MADV_DONTNEED) };
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe exactly the mapping made in `new`, and no reference into
        // it outlives the arena (segments borrow the engine that owns the arena).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
