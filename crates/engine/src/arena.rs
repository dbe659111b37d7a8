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

use std::io::ErrorKind::OutOfMemory;
use std::ptr::NonNull;

/// An anonymous, zero-filled memory mapping advised for transparent huge pages. Pages are
/// touched lazily, so resident memory grows with use.
#[derive(Debug)]
pub struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a mapping is a plain block of memory owned by this value; how threads share its
// contents is up to the types built on it (the arena's discipline above, the index's atomics).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// Size of a transparent huge page on x86-64 (and the alignment the kernel gives large
/// anonymous mappings).
pub const HUGE_PAGE: usize = 2 << 20;
/// Size of a base page on x86-64: `madvise` works in whole pages.
pub const PAGE: usize = 4096;

impl Mapping {
    /// Maps `len` zeroed bytes (at least one page), advised for transparent huge pages.
    pub fn new(len: usize) -> std::io::Result<Self> {
        Self::with_huge_pages(len, true)
    }

    /// Maps `len` zeroed bytes (at least one page), advised for transparent huge pages or not.
    pub fn with_huge_pages(len: usize, huge: bool) -> std::io::Result<Self> {
        let len = len.max(PAGE);
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
        let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
        // SAFETY: `ptr` is the start of the `len`-byte mapping created above. The advice is a
        // hint; its failure is harmless and ignored.
        unsafe { libc::madvise(ptr, len, advice) };
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| std::io::Error::other("null"))?;
        Ok(Mapping { base, len })
    }

    /// The first byte (page-aligned).
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe exactly the mapping made in `new`, and no reference
        // into it outlives this value (owners hand out borrows tied to themselves).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// Zeroed `u64` words in a [`Mapping`] advised for transparent huge pages: the tables of
/// eviction metadata (the frequency sketch, the hitmap's levels), megabytes read and written
/// at random, where 4 KiB pages make nearly every access miss the TLB as well as the caches.
/// Seen as a slice of words; owned by one value, which hands out borrows tied to itself.
#[derive(Debug)]
pub(crate) struct Words {
    mapping: Mapping,
    len: usize,
}

impl Words {
    /// `len` zeroed words; an error (out of memory or address space) if they cannot be mapped.
    pub(crate) fn zeroed(len: usize) -> std::io::Result<Words> {
        let bytes = len.checked_mul(8).ok_or_else(|| std::io::Error::from(OutOfMemory))?;
        Ok(Words { mapping: Mapping::new(bytes)?, len })
    }

    /// A copy in a mapping of its own; an error if it cannot be mapped.
    pub(crate) fn try_clone(&self) -> std::io::Result<Words> {
        let mut copy = Words::zeroed(self.len)?;
        copy.copy_from_slice(self);
        Ok(copy)
    }
}

impl std::ops::Deref for Words {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        // SAFETY: the mapping is page-aligned (so 8-byte aligned), zero-filled and at least
        // `len` words long; every bit pattern is a valid u64. The slice borrows `self`, which
        // owns the mapping.
        unsafe { std::slice::from_raw_parts(self.mapping.as_ptr().cast::<u64>(), self.len) }
    }
}

impl std::ops::DerefMut for Words {
    fn deref_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `deref`; the mutable borrow of `self`, the mapping's only owner, makes
        // this the only reference into it while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.mapping.as_ptr().cast::<u64>(), self.len) }
    }
}

/// Zeroed atomic `u64` words in a [`Mapping`] advised for transparent huge pages, for tables
/// one thread writes while others read them (the queues' ghosts). Pages are touched lazily,
/// so a table that uses only a prefix of its words takes resident memory for that prefix
/// alone.
#[derive(Debug)]
pub(crate) struct AtomicWords {
    /// Reached only through the atomic view below, never as plain words.
    words: Words,
}

impl AtomicWords {
    /// `len` zeroed words; an error (out of memory or address space) if they cannot be mapped.
    pub(crate) fn zeroed(len: usize) -> std::io::Result<AtomicWords> {
        Ok(AtomicWords { words: Words::zeroed(len)? })
    }
}

impl std::ops::Deref for AtomicWords {
    type Target = [std::sync::atomic::AtomicU64];
    fn deref(&self) -> &[std::sync::atomic::AtomicU64] {
        // SAFETY: the mapping is page-aligned (so 8-byte aligned), zero-filled and at least
        // `len` words long; `AtomicU64` has the size and alignment of `u64`, and every bit
        // pattern is a valid one. The words are only ever reached through this shared slice of
        // atomics (`words` is private and its plain view never used), so no plain access races
        // an atomic one. The slice borrows `self`, which owns the mapping.
        unsafe {
            std::slice::from_raw_parts(
                self.words.mapping.as_ptr().cast::<std::sync::atomic::AtomicU64>(),
                self.words.len,
            )
        }
    }
}

/// The segments' memory.
#[derive(Debug)]
pub struct Arena {
    mapping: Mapping,
    segment_size: usize,
}

impl Arena {
    /// Maps `segments × segment_size` bytes, advised for transparent huge pages where `huge`.
    /// Fails if the kernel refuses the mapping.
    pub fn new(segments: usize, segment_size: usize, huge: bool) -> std::io::Result<Self> {
        let len = segments
            .checked_mul(segment_size)
            .ok_or_else(|| std::io::Error::other("arena size overflows usize"))?;
        Ok(Arena { mapping: Mapping::with_huge_pages(len, huge)?, segment_size })
    }

    /// The first byte of segment `id`.
    #[inline]
    pub fn segment_ptr(&self, id: u32) -> *mut u8 {
        let offset = id as usize * self.segment_size;
        assert!(offset < self.mapping.len(), "segment id out of range");
        // SAFETY: `offset` is within the mapping (checked above), so the result stays inside
        // the same allocated object.
        unsafe { self.mapping.as_ptr().add(offset) }
    }

    /// The segment that holds all of `bytes`, if they lie inside one segment of the arena.
    pub fn segment_of(&self, bytes: &[u8]) -> Option<u32> {
        let at = (bytes.as_ptr() as usize).checked_sub(self.mapping.as_ptr() as usize)?;
        let id = at / self.segment_size;
        let inside = at < self.mapping.len() && at + bytes.len() <= (id + 1) * self.segment_size;
        inside.then_some(id as u32)
    }

    /// Gives segment `id`'s pages back to the kernel: it takes no memory until written again.
    /// The caller must own the segment (taken from the free list and on no other), so that no
    /// reader can still hold a reference into it and no writer is filling it. Segments that
    /// are not whole pages ([`PAGE`]) keep their pages: a page holds part of another segment
    /// too, which the kernel would zero with it.
    pub fn release(&self, id: u32) {
        if self.segment_size % PAGE != 0 {
            return;
        }
        let base = self.segment_ptr(id);
        // SAFETY: `base .. base + segment_size` lies inside the mapping (`segment_ptr` checks
        // the start; segments tile the mapping) and, segments being whole pages of the
        // page-aligned mapping (checked above), covers no other segment. MADV_DONTNEED on a
        // private anonymous mapping keeps the range mapped and zero-fills it on the next touch,
        // so later accesses stay valid; the caller owns the segment, so no one reads or writes
        // it meanwhile. Failure only leaves the pages resident, which is harmless.
        unsafe { libc::madvise(base.cast(), self.segment_size, libc::MADV_DONTNEED) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `byte` over segment `id` of `arena`.
    fn fill(arena: &Arena, id: u32, byte: u8) {
        // SAFETY: segment `id` lies inside the mapping (`segment_ptr` checks it) and no
        // reference into the arena exists while the test writes it.
        unsafe { std::ptr::write_bytes(arena.segment_ptr(id), byte, arena.segment_size) };
    }

    /// Reads segment `id` of `arena`.
    fn read(arena: &Arena, id: u32) -> Vec<u8> {
        // SAFETY: as in `fill`; the copy ends before the arena is written again.
        unsafe { std::slice::from_raw_parts(arena.segment_ptr(id), arena.segment_size).to_vec() }
    }

    #[test]
    fn releasing_a_segment_leaves_the_others_of_its_page_alone() {
        // Powers of two, and sizes that are not: under a page, one and a half pages (whose
        // release would zero half of a neighbour's page), three pages.
        for segment_size in [1 << 10, 2 << 10, 4 << 10, 8 << 10, 1920, 6 << 10, 12 << 10] {
            let arena = Arena::new(16, segment_size, false).unwrap();
            for id in 0..16 {
                fill(&arena, id, id as u8 + 1);
            }
            arena.release(0);
            arena.release(5);
            for id in 1..16 {
                if id == 5 {
                    continue;
                }
                assert!(read(&arena, id).iter().all(|&b| b == id as u8 + 1), "{segment_size}");
            }
            // A segment of whole pages reads as zeros once released; another keeps its bytes.
            let released = read(&arena, 0);
            let want = if segment_size % PAGE == 0 { 0 } else { 1 };
            assert!(released.iter().all(|&b| b == want), "{segment_size}");
        }
    }
}
