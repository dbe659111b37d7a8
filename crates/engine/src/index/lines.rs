//! The memory a lookup reads, reported instead of used: the addresses of the 64-byte buckets
//! on a key's path and the locations whose tags match, in the order [`Index::find`] visits
//! them (for the simulator's memory-hierarchy model; Cavast §4.3 counts these as one
//! cache-line fetch per bucket).

use super::{Bucket, Index, Loc, MIGRATED_BIT, Table, walk_path};
use crate::epoch::Guard;
use crate::hash::tag_of;

impl Index {
    /// Walks `hash`'s path as [`Index::find`] does, appending to `buckets` the address of each
    /// bucket it reads (root first, then any sub-bucket) and to `candidates` each location
    /// whose tag matches, up to and including the one `is_key` accepts, which is returned.
    /// During a growth the old table's path comes first when its root has not moved, as in
    /// a lookup. With `through_slb` (a reader that consults the SLB, [`Index::find_hot`]) the
    /// SLB's bucket comes first, and a key the SLB holds ends the walk there. Reads slots
    /// only: no lock, no write, nothing counted (an SLB hit warms nothing). A lookup that
    /// races a change may retry ([`Index::find`]); this walks once.
    pub fn path(
        &self,
        guard: &Guard<'_>,
        hash: u64,
        mut is_key: impl FnMut(Loc) -> bool,
        through_slb: bool,
        buckets: &mut Vec<usize>,
        candidates: &mut Vec<Loc>,
    ) -> Option<Loc> {
        if let Some(slb) = self.slb.as_ref().filter(|_| through_slb && self.slb_consulted()) {
            buckets.push(slb.bucket_addr(hash));
            let found = slb.peek(hash, &mut |loc| {
                candidates.push(loc);
                is_key(loc)
            });
            if found.is_some() {
                return found;
            }
        }
        let (current, old) = self.tables(guard);
        if let Some(old) = old {
            let root = old.root(hash);
            if root.header() & MIGRATED_BIT == 0 {
                let found = path_in(old, root, hash, &mut is_key, buckets, candidates);
                if found.is_some() || root.header() & MIGRATED_BIT == 0 {
                    return found;
                }
            }
        }
        path_in(current, current.root(hash), hash, &mut is_key, buckets, candidates)
    }
}

/// One table's part of [`Index::path`].
fn path_in(
    table: &Table,
    root: &Bucket,
    hash: u64,
    is_key: &mut impl FnMut(Loc) -> bool,
    buckets: &mut Vec<usize>,
    candidates: &mut Vec<Loc>,
) -> Option<Loc> {
    let visit = |bucket: &Bucket| buckets.push(std::ptr::from_ref(bucket) as usize);
    walk_path(table, root, tag_of(hash), visit, &mut |loc| {
        candidates.push(loc);
        is_key(loc)
    })
}
