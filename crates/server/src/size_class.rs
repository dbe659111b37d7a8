//! memcached's slab classes, as size classes of what fridge stores.
//!
//! fridge has no slab allocator: items of any size share log-structured segments. Tools
//! that read `stats items`, `stats slabs` and `lru_crawler metadump` (memcached_exporter,
//! munin, telegraf, phpMemcachedAdmin, `memcdump`) expect slab classes, so fridge reports
//! items by the class memcached 1.6's default table would give their size: the smallest
//! chunk of 96 bytes (`-n 48` plus the 48-byte item header), each class 1.25 times the one
//! before (`-f 1.25`) rounded up to 8 bytes, up to `slab_chunk_max` (512 KiB) — 39 classes,
//! as `memcached -vv` prints them. The size is fridge's own: the bytes the item occupies in
//! its segment (key record plus value), not memcached's item size. Items above the last
//! class (memcached chunks them) count in the last class.

/// memcached's `MAX_NUMBER_OF_SLAB_CLASSES`: class ids `stats cachedump` accepts are below
/// it (0 is never used).
pub(crate) const MAX_CLASS_ID: usize = 64;
/// memcached's default `slab_chunk_max` (half the 1 MiB page).
const CHUNK_MAX: usize = 512 * 1024;
/// memcached's default page size (`slab_page_size`).
pub(crate) const PAGE_SIZE: usize = 1024 * 1024;
/// The number of classes of the default table.
pub(crate) const CLASSES: usize = 39;

/// Chunk size of each class, index 0 for class 1 (see the module doc).
pub(crate) const CHUNK_SIZES: [usize; CLASSES] = chunk_sizes();

const fn chunk_sizes() -> [usize; CLASSES] {
    let mut sizes = [0; CLASSES];
    let mut size = 96usize;
    let mut i = 0;
    // memcached: while size <= slab_chunk_max / factor, align to 8 and grow by the factor.
    while i < CLASSES - 1 && size * 5 <= CHUNK_MAX * 4 {
        size = size.next_multiple_of(8);
        sizes[i] = size;
        size = size * 5 / 4;
        i += 1;
    }
    sizes[i] = CHUNK_MAX;
    sizes
}

const _: () = assert!(CHUNK_SIZES[0] == 96 && CHUNK_SIZES[6] == 384);
const _: () = assert!(CHUNK_SIZES[CLASSES - 2] == 394_840 && CHUNK_SIZES[CLASSES - 1] == CHUNK_MAX);

/// The class (1-based, as memcached numbers them) an item of `size` bytes falls in: a
/// binary search of the 39 sizes, no allocation.
pub(crate) fn class_of(size: usize) -> usize {
    CHUNK_SIZES.partition_point(|&c| c < size).min(CLASSES - 1) + 1
}

/// Chunk size of class `id` (1-based).
pub(crate) fn chunk_size(id: usize) -> usize {
    CHUNK_SIZES[id - 1]
}

/// Items and bytes per class, as a walk over the keys counts them.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    /// Items per class, index 0 for class 1.
    pub items: [u64; CLASSES],
    /// Bytes those items occupy.
    pub bytes: [u64; CLASSES],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { items: [0; CLASSES], bytes: [0; CLASSES] }
    }
}

impl Histogram {
    /// Counts one item of `size` bytes.
    pub fn add(&mut self, size: usize) {
        let i = class_of(size) - 1;
        self.items[i] += 1;
        self.bytes[i] += size as u64;
    }

    /// The classes that hold items: `(id, items, bytes)`.
    pub fn used(&self) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        (0..CLASSES).filter(|&i| self.items[i] > 0).map(|i| (i + 1, self.items[i], self.bytes[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_memcached_defaults() {
        // `memcached -vv` (1.6.18, defaults) prints these chunk sizes.
        let expected = [
            96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480, 1856, 2320, 2904,
            3632, 4544, 5680, 7104, 8880, 11104, 13880, 17352, 21696, 27120, 33904, 42384, 52984,
            66232, 82792, 103496, 129376, 161720, 202152, 252696, 315872, 394840, 524288,
        ];
        assert_eq!(CHUNK_SIZES, expected);
    }

    #[test]
    fn class_of_is_the_smallest_that_fits() {
        assert_eq!(class_of(1), 1);
        assert_eq!(class_of(96), 1);
        assert_eq!(class_of(97), 2);
        assert_eq!(class_of(384), 7);
        assert_eq!(class_of(385), 8);
        assert_eq!(class_of(CHUNK_MAX), CLASSES);
        assert_eq!(class_of(10 << 20), CLASSES, "larger items count in the last class");
    }
}
