//! The request record shared by generators, trace readers, the simulator and the load
//! generator, and the rendering of key ids into key bytes.

/// A cache operation, named after memcached's commands (Redis's map onto them: `GET` → `Get`,
/// `SET` → `Set`, `SETNX` → `Add`, `DEL` → `Delete`, `INCRBY` → `Incr`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Read a value.
    Get,
    /// Read a value with its CAS token.
    Gets,
    /// Store unconditionally.
    Set,
    /// Store only if absent.
    Add,
    /// Store only if present.
    Replace,
    /// Store if unchanged since a `gets`.
    Cas,
    /// Append bytes to a value.
    Append,
    /// Prepend bytes to a value.
    Prepend,
    /// Remove a key.
    Delete,
    /// Increment a numeric value.
    Incr,
    /// Decrement a numeric value.
    Decr,
}

impl Op {
    /// Every operation, in declaration order.
    pub const ALL: [Op; 11] = [
        Op::Get,
        Op::Gets,
        Op::Set,
        Op::Add,
        Op::Replace,
        Op::Cas,
        Op::Append,
        Op::Prepend,
        Op::Delete,
        Op::Incr,
        Op::Decr,
    ];

    /// The lower-case memcached command name (`"get"`, `"set"`, …).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Gets => "gets",
            Op::Set => "set",
            Op::Add => "add",
            Op::Replace => "replace",
            Op::Cas => "cas",
            Op::Append => "append",
            Op::Prepend => "prepend",
            Op::Delete => "delete",
            Op::Incr => "incr",
            Op::Decr => "decr",
        }
    }

    /// Parses a command name, ignoring ASCII case. `None` for anything else.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name().eq_ignore_ascii_case(name))
    }

    /// Reads the value without changing it.
    #[must_use]
    pub const fn is_read(self) -> bool {
        matches!(self, Op::Get | Op::Gets)
    }

    /// Stores a whole value and sets its expiry (memcached's storage commands that take an
    /// exptime; `append`/`prepend`/`incr`/`decr` keep the item's expiry).
    #[must_use]
    pub const fn sets_ttl(self) -> bool {
        matches!(self, Op::Set | Op::Add | Op::Replace | Op::Cas)
    }
}

/// One request. Plain data, `Copy`, 56 bytes.
///
/// Field contracts:
/// - `key` is an id unique within its `tenant`; [`render_key`] turns it into key bytes.
/// - `key_size` is the key's length in bytes; 0 means "unknown" (traces that carry only an
///   object size, such as oracleGeneral, put all of it in `value_size`).
/// - `value_size` is the size of the object's value: what a `set` stores and what a `get`
///   would return on a hit.
/// - `ttl_s` is set only for operations whose [`Op::sets_ttl`] is true, and `None` means no
///   expiry.
/// - `next_access` is the 0-based position, in the same stream, of the next request for the
///   same `(tenant, key)`, or `None` if there is none or it is unknown. Generators leave it
///   `None`; [`crate::trace::annotate_next_access`] fills it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Arrival time in milliseconds since the start of the stream.
    pub time_ms: u64,
    /// Tenant id (0 for single-tenant streams).
    pub tenant: u16,
    /// Key id.
    pub key: u64,
    /// Key length in bytes (0 if unknown).
    pub key_size: u32,
    /// Value length in bytes.
    pub value_size: u32,
    /// The operation.
    pub op: Op,
    /// Time to live in seconds for storage operations; `None` for no expiry.
    pub ttl_s: Option<u32>,
    /// Position of the next request for the same key, if known.
    pub next_access: Option<u64>,
}

impl Request {
    /// A `get` of `key` at time 0 for tenant 0 with unknown key size.
    #[must_use]
    pub const fn get(key: u64, value_size: u32) -> Self {
        Self {
            time_ms: 0,
            tenant: 0,
            key,
            key_size: 0,
            value_size,
            op: Op::Get,
            ttl_s: None,
            next_access: None,
        }
    }

    /// Key plus value bytes: the object's size as byte-capacity cache simulators count it.
    #[must_use]
    pub const fn object_size(&self) -> u64 {
        self.key_size as u64 + self.value_size as u64
    }
}

const _: () = assert!(std::mem::size_of::<Request>() == 56);

/// Characters used in rendered keys: safe in memcached and Redis keys (no spaces, no control
/// characters).
const KEY_ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Base-62 digits needed for any `u64` (62^11 > 2^64).
pub const KEY_ID_DIGITS: usize = 11;

/// Writes the key bytes of `id` into all of `buf`, deterministically and without allocating.
///
/// Layout: the last `min(buf.len(), 11)` bytes are `id` in base 62, zero-padded (`'0'`);
/// any bytes before them are alphanumeric filler derived from `id`, so long keys do not share
/// a common prefix. Distinct ids give distinct keys whenever `buf.len() ≥ 11`, and for
/// shorter buffers whenever both ids are below `62^buf.len()`.
pub fn render_key(id: u64, buf: &mut [u8]) {
    let digits = buf.len().min(KEY_ID_DIGITS);
    let (filler, tail) = buf.split_at_mut(buf.len() - digits);
    let mut x = id;
    for b in tail.iter_mut().rev() {
        *b = KEY_ALPHABET[(x % 62) as usize];
        x /= 62;
    }
    let mut state = id;
    for chunk in filler.chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut bits = crate::rng::mix64(state);
        for b in chunk {
            *b = KEY_ALPHABET[(bits % 62) as usize];
            bits >>= 8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
            assert_eq!(Op::from_name(&op.name().to_uppercase()), Some(op));
        }
        assert_eq!(Op::from_name("frobnicate"), None);
        assert!(Op::Set.sets_ttl() && !Op::Get.sets_ttl() && !Op::Incr.sets_ttl());
    }

    #[test]
    fn keys_render_deterministically_and_distinctly() {
        let mut a = [0u8; 24];
        let mut b = [0u8; 24];
        render_key(12_345, &mut a);
        render_key(12_345, &mut b);
        assert_eq!(a, b);
        assert!(a.iter().all(u8::is_ascii_alphanumeric));
        assert_eq!(&a[24 - 11..], b"000000003D7");
        let mut seen = std::collections::HashSet::new();
        for id in (0..10_000u64).chain([u64::MAX, u64::MAX - 1]) {
            let mut k = [0u8; 16];
            render_key(id, &mut k);
            assert!(seen.insert(k), "duplicate key for id {id}");
        }
        let mut short = [0u8; 3];
        render_key(61, &mut short);
        assert_eq!(&short, b"00z");
        render_key(7, &mut []);
    }
}
