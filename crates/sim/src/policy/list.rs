//! Intrusive doubly linked lists in a `Vec` arena, linked by `u32` indices.
//!
//! Most reference policies are one or more queues of objects: LRU and FIFO are one queue,
//! S3-FIFO two, the memcached model one per slab class. They all share this structure:
//!
//! ```text
//!   Arena (Vec<Node>)              List { newest, oldest, len, bytes }
//!   ┌────┬────┬────┬────┐
//!   │ n0 │ n1 │ n2 │ n3 │    newest ─► n2 ⇄ n0 ⇄ n3 ◄─ oldest
//!   └────┴────┴────┴────┘             (n1 is on the free list)
//! ```
//!
//! A node is 24 bytes: the key, the size, two links and two small fields the policies use as
//! they like (`meta`: a frequency counter or a visited bit; `tag`: which queue or slab class
//! holds the node). Several lists may share one arena; a node belongs to at most one list.
//! Every operation is O(1). There is no `unsafe` and no `Rc`: a dangling index is a logic bug
//! that panics on a bounds check or corrupts a list, which the tests' `validate` would catch.

/// "No node": the end of a list, or an empty list.
pub(crate) const NIL: u32 = u32::MAX;

/// One cached object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub key: u64,
    /// Object size in bytes.
    pub size: u32,
    /// Towards the newest end of the list (`NIL` at the newest node).
    pub newer: u32,
    /// Towards the oldest end of the list (`NIL` at the oldest node).
    pub older: u32,
    /// Policy-defined: a frequency counter, a visited bit, ….
    pub meta: u16,
    /// Policy-defined: which list holds the node.
    pub tag: u16,
}

const _: () = assert!(std::mem::size_of::<Node>() == 24);

/// Storage for nodes; freed slots are reused (linked through `older`).
#[derive(Debug, Default)]
pub(crate) struct Arena {
    nodes: Vec<Node>,
    free: u32,
    free_len: usize,
}

impl Arena {
    pub(crate) fn new() -> Self {
        Self { nodes: Vec::new(), free: NIL, free_len: 0 }
    }

    /// A fresh unlinked node. Panics past 2^32 - 1 live nodes (far beyond any simulated cache).
    pub(crate) fn alloc(&mut self, key: u64, size: u32) -> u32 {
        let node = Node { key, size, newer: NIL, older: NIL, meta: 0, tag: 0 };
        if self.free != NIL {
            let idx = self.free;
            self.free = self.nodes[idx as usize].older;
            self.free_len -= 1;
            self.nodes[idx as usize] = node;
            idx
        } else {
            let idx = u32::try_from(self.nodes.len()).expect("more than 2^32 nodes");
            assert!(idx != NIL, "more than 2^32 - 1 nodes");
            self.nodes.push(node);
            idx
        }
    }

    /// Returns an unlinked node's slot to the free list.
    pub(crate) fn free(&mut self, idx: u32) {
        self.nodes[idx as usize].older = self.free;
        self.free = idx;
        self.free_len += 1;
    }

    /// Live (allocated) nodes.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.nodes.len() - self.free_len
    }
}

impl std::ops::Index<u32> for Arena {
    type Output = Node;
    fn index(&self, idx: u32) -> &Node {
        &self.nodes[idx as usize]
    }
}

impl std::ops::IndexMut<u32> for Arena {
    fn index_mut(&mut self, idx: u32) -> &mut Node {
        &mut self.nodes[idx as usize]
    }
}

/// One queue: newest at one end, oldest at the other; tracks its length and object bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct List {
    pub newest: u32,
    pub oldest: u32,
    pub len: usize,
    pub bytes: u64,
}

impl Default for List {
    fn default() -> Self {
        Self { newest: NIL, oldest: NIL, len: 0, bytes: 0 }
    }
}

impl List {
    /// Links an unlinked node in as the newest.
    pub(crate) fn push_newest(&mut self, arena: &mut Arena, idx: u32) {
        let old_newest = self.newest;
        {
            let n = &mut arena[idx];
            n.newer = NIL;
            n.older = old_newest;
            self.bytes += u64::from(n.size);
        }
        if old_newest == NIL {
            self.oldest = idx;
        } else {
            arena[old_newest].newer = idx;
        }
        self.newest = idx;
        self.len += 1;
    }

    /// Unlinks a node of this list (the node stays allocated).
    pub(crate) fn unlink(&mut self, arena: &mut Arena, idx: u32) {
        let Node { newer, older, size, .. } = arena[idx];
        if newer == NIL {
            self.newest = older;
        } else {
            arena[newer].older = older;
        }
        if older == NIL {
            self.oldest = newer;
        } else {
            arena[older].newer = newer;
        }
        self.len -= 1;
        self.bytes -= u64::from(size);
    }

    /// Moves a node of this list to the newest end.
    pub(crate) fn move_to_newest(&mut self, arena: &mut Arena, idx: u32) {
        if self.newest != idx {
            self.unlink(arena, idx);
            self.push_newest(arena, idx);
        }
    }

    /// Changes the size of a node of this list, keeping `bytes` right.
    pub(crate) fn set_size(&mut self, arena: &mut Arena, idx: u32, size: u32) {
        let n = &mut arena[idx];
        self.bytes = self.bytes - u64::from(n.size) + u64::from(size);
        n.size = size;
    }

    /// Keys from newest to oldest (for tests and debugging).
    #[cfg(test)]
    pub(crate) fn keys(&self, arena: &Arena) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len);
        let mut idx = self.newest;
        while idx != NIL {
            out.push(arena[idx].key);
            idx = arena[idx].older;
        }
        out
    }

    /// Checks the links, `len` and `bytes` against a walk of the list.
    #[cfg(test)]
    pub(crate) fn validate(&self, arena: &Arena) {
        let (mut len, mut bytes, mut prev, mut idx) = (0, 0, NIL, self.newest);
        while idx != NIL {
            assert_eq!(arena[idx].newer, prev, "broken newer link");
            len += 1;
            bytes += u64::from(arena[idx].size);
            prev = idx;
            idx = arena[idx].older;
        }
        assert_eq!(prev, self.oldest, "oldest is not the end of the walk");
        assert_eq!(len, self.len, "len");
        assert_eq!(bytes, self.bytes, "bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::{Arena, List};

    #[test]
    fn push_unlink_move_and_reuse() {
        let mut arena = Arena::new();
        let mut list = List::default();
        let a = arena.alloc(1, 10);
        let b = arena.alloc(2, 20);
        let c = arena.alloc(3, 30);
        for idx in [a, b, c] {
            list.push_newest(&mut arena, idx);
        }
        assert_eq!(list.keys(&arena), [3, 2, 1]);
        list.move_to_newest(&mut arena, a);
        assert_eq!(list.keys(&arena), [1, 3, 2]);
        list.unlink(&mut arena, c);
        arena.free(c);
        assert_eq!(list.keys(&arena), [1, 2]);
        assert_eq!(list.bytes, 30);
        list.validate(&arena);
        // The freed slot is reused.
        assert_eq!(arena.alloc(4, 1), c);
        assert_eq!(arena.live(), 3);
    }
}
