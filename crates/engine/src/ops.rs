//! The vocabulary of operations: what a store asks for ([`Store`], [`Expiry`],
//! [`Condition`]), what it did ([`StoreOutcome`]), what a read sees ([`Item`]), what an update
//! closure sees and decides ([`Current`], [`Update`]). Nothing here is a protocol's: what a
//! value means (a counter, a list) is the caller's business.

use crate::item::{Kind, StateCell};
use crate::tenant::TenantId;

/// An item as a read sees it. Borrowed from the engine's memory for the duration of the
/// callback that receives it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry (ms since the Unix epoch), `None` for never.
    pub expires_at_ms: Option<u64>,
    /// The item's CAS value.
    pub cas: u64,
    /// The item's state bits as the read found them (`item::STATE_*`, meta protocol).
    pub state: u8,
    /// Whole seconds since the item's previous access (memcached meta `l`).
    pub idle_s: u32,
    /// The item's state byte, to set bits on (`None` where the item is not the published
    /// one, as in an update).
    pub state_cell: Option<StateCell<'a>>,
    /// What the value encodes ([`Kind::STRING`] for every read but
    /// [`Worker::get_any`](crate::Worker::get_any)'s and
    /// [`Worker::get_kind`](crate::Worker::get_kind)'s).
    pub kind: Kind,
}

/// When a stored item expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Never.
    Never,
    /// At this absolute time, ms since the Unix epoch.
    At(u64),
    /// Keep the existing item's expiry (none if there is no item).
    Keep,
}

/// The condition a store is subject to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Always store.
    Always,
    /// Only if the key has no live item (memcached `add`, Redis `NX`).
    IfAbsent,
    /// Only if the key has a live item (memcached `replace`, Redis `XX`).
    IfPresent,
    /// Only if the item's CAS value is this one (memcached `cas`).
    IfCas(u64),
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    /// The item was stored.
    Stored,
    /// The condition (absent / present) did not hold.
    NotStored,
    /// `IfCas`: the item exists with another CAS value.
    Exists,
    /// `IfCas`: there is no item.
    NotFound,
}

/// A store request.
#[derive(Debug, Clone, Copy)]
pub struct Store<'a> {
    /// Owning tenant.
    pub tenant: TenantId,
    /// Key.
    pub key: &'a [u8],
    /// Value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Expiry.
    pub expiry: Expiry,
    /// Condition.
    pub condition: Condition,
    /// The CAS value to give the item: `None` for a new one (memcached meta `E` sets it). At
    /// most [`crate::item::MAX_CAS`] (56 bits): higher bits are dropped.
    pub cas: Option<u64>,
    /// The item's initial state bits (`item::STATE_*`; memcached meta `b` sets
    /// `STATE_KEY_BINARY`).
    pub state: u8,
    /// What the value encodes. A store replaces the key's item whatever its kind (as Redis's
    /// `SET` replaces a hash); its conditions see an item of any kind.
    pub kind: Kind,
}

impl<'a> Store<'a> {
    /// An unconditional store with no flags and no expiry.
    pub fn new(tenant: TenantId, key: &'a [u8], value: &'a [u8]) -> Self {
        Store {
            tenant,
            key,
            value,
            flags: 0,
            expiry: Expiry::Never,
            condition: Condition::Always,
            cas: None,
            state: 0,
            kind: Kind::STRING,
        }
    }
}

/// The current item, as seen by a [`Worker::update`](crate::Worker::update) closure.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    /// Value bytes.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry.
    pub expires_at_ms: Option<u64>,
    /// CAS value. The update is published only if the item is still this one, so a closure
    /// that compares this CAS acts atomically (memcached `md`/`ma` with `C`).
    pub cas: u64,
    /// State bits (`item::STATE_*`).
    pub state: u8,
    /// What the value encodes: the kind the update asked for, or any for
    /// [`Worker::update_any`](crate::Worker::update_any).
    pub kind: Kind,
}

/// What a [`Worker::update`](crate::Worker::update) closure decided.
#[derive(Debug)]
pub enum Update<R> {
    /// Write the value the closure put in the buffer, with these flags and expiry.
    Write {
        /// Client flags.
        flags: u32,
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// What the update returns once published.
        result: R,
    },
    /// Write the value the closure put in the buffer as [`Update::Write`] does, with the CAS
    /// value and state bits given (`cas: None`: a new CAS value).
    WriteWith {
        /// Client flags.
        flags: u32,
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// CAS value, or `None` for a new one.
        cas: Option<u64>,
        /// State bits (`item::STATE_*`).
        state: u8,
        /// What the update returns once published.
        result: R,
    },
    /// Keep the item's value, flags, CAS and state, and give it this expiry (memcached
    /// `touch`: a TTL change is not a change of the item). The closure leaves the buffer
    /// empty.
    Retime {
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// What the update returns once published.
        result: R,
    },
    /// Keep the item's value and flags, and give it this expiry, CAS value (`None`: a new one)
    /// and state bits (memcached meta `md I`: marked stale, with a new CAS). The closure
    /// leaves the buffer empty.
    Rewrite {
        /// Absolute expiry.
        expires_at_ms: Option<u64>,
        /// CAS value, or `None` for a new one.
        cas: Option<u64>,
        /// State bits (`item::STATE_*`).
        state: u8,
        /// What the update returns once published.
        result: R,
    },
    /// Delete the item, then return the result.
    Delete(R),
    /// Change nothing and return this.
    Done(R),
}

/// A new value given as pieces, in order: runs of the current value and of the update's
/// buffer ([`Worker::update_kind_spliced`](crate::Worker::update_kind_spliced)). The runs of
/// the current value are copied once, from the current item straight into the new one, where
/// a value built in the buffer would be copied twice (into the buffer, then into the log):
/// a one-member change of a large collection copies it once.
#[derive(Debug, Default)]
pub struct Splice {
    pieces: Vec<Piece>,
}

/// One run of a [`Splice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes of the current value.
    Current(std::ops::Range<usize>),
    /// Bytes of the update's buffer.
    Buf(std::ops::Range<usize>),
}

impl Splice {
    /// Appends `range` of the current value (nothing if it is empty; a run that continues the
    /// last one joins it).
    pub fn current(&mut self, range: std::ops::Range<usize>) {
        self.push(Piece::Current(range));
    }

    /// Appends `range` of the update's buffer (as [`Splice::current`] does).
    pub fn buf(&mut self, range: std::ops::Range<usize>) {
        self.push(Piece::Buf(range));
    }

    fn push(&mut self, piece: Piece) {
        let (Piece::Current(range) | Piece::Buf(range)) = &piece;
        if range.is_empty() {
            return;
        }
        match (self.pieces.last_mut(), &piece) {
            (Some(Piece::Current(last)), Piece::Current(r))
            | (Some(Piece::Buf(last)), Piece::Buf(r))
                if last.end == r.start =>
            {
                last.end = r.end;
            }
            _ => self.pieces.push(piece),
        }
    }

    /// Whether no piece was given (then the buffer is the new value).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Forgets the pieces.
    pub fn clear(&mut self) {
        self.pieces.clear();
    }

    /// Writes into `out` (cleared) the value the pieces make of `current` and `buf`.
    ///
    /// # Panics
    ///
    /// If a piece lies beyond its bytes (a caller's bug).
    pub fn join(&self, current: &[u8], buf: &[u8], out: &mut Vec<u8>) {
        out.clear();
        for piece in &self.pieces {
            out.extend_from_slice(piece.of(current, buf).expect("a splice piece within its bytes"));
        }
    }

    /// The pieces.
    pub(crate) fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// Bytes of the value the pieces make.
    pub(crate) fn len(&self) -> usize {
        self.pieces.iter().map(Piece::len).sum()
    }

    /// Copies into `stash` (cleared), in order, the runs of `current` that an edit in place
    /// moves: those that do not land where they lie ([`Splice::moved`] gives their places),
    /// for runs not [`Splice::moves_apart`].
    pub(crate) fn stash_moved(&self, current: &[u8], stash: &mut Vec<u8>) {
        stash.clear();
        for (_, r) in self.moved_runs() {
            stash.extend_from_slice(&current[r]);
        }
    }

    /// Whether each run of the current value that an edit in place moves can be moved where
    /// the value lies (an overlapping copy, as `memmove`), one after another: no moved run
    /// lands on bytes another comes from. A sorted-set member moving to its new rank moves
    /// the entries between its two places and the index's tags between them, apart; a list
    /// rotation moves one run. Otherwise the moved runs go through a stash
    /// ([`Splice::stash_moved`]).
    pub(crate) fn moves_apart(&self) -> bool {
        self.moved_runs().enumerate().all(|(i, (place, r))| {
            let to = place..place + r.len();
            self.moved_runs()
                .enumerate()
                .all(|(j, (_, from))| i == j || to.end <= from.start || from.end <= to.start)
        })
    }

    /// The runs of the current value that an edit in place moves, in order: (their place in
    /// the new value, where they lie now).
    fn moved_runs(&self) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
        self.moved(false).filter_map(|(place, source)| match source {
            Source::Current(r) => Some((place, r)),
            _ => None,
        })
    }

    /// What an edit in place writes: each piece that does not already lie where it lands, as
    /// (its place in the new value, where its bytes come from). A moved run of the current
    /// value comes from the stash at the offset given where `stashed`
    /// ([`Splice::stash_moved`]), or else from where it lies ([`Splice::moves_apart`]: such
    /// runs are to be moved before any other piece is written, as they come from bytes the
    /// others may land on).
    pub(crate) fn moved(&self, stashed: bool) -> impl Iterator<Item = (usize, Source)> + '_ {
        let (mut at, mut stash) = (0, 0);
        self.pieces.iter().filter_map(move |piece| {
            let (place, len) = (at, piece.len());
            at += len;
            match piece {
                Piece::Current(r) if r.start == place => None,
                Piece::Current(r) if !stashed => Some((place, Source::Current(r.clone()))),
                Piece::Current(_) => {
                    stash += len;
                    Some((place, Source::Stash(stash - len..stash)))
                }
                Piece::Buf(r) => Some((place, Source::Buf(r.clone()))),
            }
        })
    }
}

/// Where a piece an edit in place writes comes from ([`Splice::moved`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Bytes of the current value, moved where the value lies.
    Current(std::ops::Range<usize>),
    /// Bytes of the stash of moved runs.
    Stash(std::ops::Range<usize>),
    /// Bytes of the update's buffer.
    Buf(std::ops::Range<usize>),
}

impl Piece {
    fn len(&self) -> usize {
        let (Piece::Current(r) | Piece::Buf(r)) = self;
        r.len()
    }

    /// The bytes this piece stands for, of the current value `current` or of `buf`; `None`
    /// for a range beyond them.
    pub(crate) fn of<'a>(&self, current: &'a [u8], buf: &'a [u8]) -> Option<&'a [u8]> {
        match self {
            Piece::Current(r) => current.get(r.clone()),
            Piece::Buf(r) => buf.get(r.clone()),
        }
    }
}
