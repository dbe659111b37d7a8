//! The `notify-keyspace-events` setting (Redis's `src/notify.c`,
//! `keyspaceEventsStringToFlags` and `keyspaceEventsFlagsToString`): which classes of
//! keyspace events are published, and on which kinds of channel. Publishing is
//! `crate::notify`.

use std::sync::atomic::{AtomicU32, Ordering};

/// `K`: publish to `__keyspace@<db>__:<key>`.
pub(crate) const KEYSPACE: u32 = 1 << 0;
/// `E`: publish to `__keyevent@<db>__:<event>`.
pub(crate) const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME…).
pub(crate) const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub(crate) const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub(crate) const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub(crate) const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub(crate) const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub(crate) const ZSET: u32 = 1 << 7;
/// `x`: a key reaped because its time was up.
pub(crate) const EXPIRED: u32 = 1 << 8;
/// `e`: a key evicted to make room.
pub(crate) const EVICTED: u32 = 1 << 9;
const STREAM: u32 = 1 << 10;
/// `m`: a read missed (not part of `A`).
pub(crate) const KEY_MISS: u32 = 1 << 11;
const MODULE: u32 = 1 << 13;
/// `n`: a key was created (not part of `A`).
pub(crate) const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`.
const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The classes a `notify-keyspace-events` character stands for, in the order Redis writes
/// them back (`keyspaceEventsFlagsToString`).
const CLASSES: [(u8, u32); 11] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
    (b'n', NEW),
];

/// The error `CONFIG SET notify-keyspace-events` answers for a character it does not know.
pub(crate) const INVALID: &[u8] = b"ERR CONFIG SET failed (possibly related to argument \
    'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// The `notify-keyspace-events` setting.
#[derive(Debug, Default)]
pub(crate) struct KeyspaceEvents {
    pub(crate) flags: AtomicU32,
}

impl KeyspaceEvents {
    /// Parses and applies a `notify-keyspace-events` value; `Err` (nothing changed) on a
    /// character Redis does not know.
    pub fn set(&self, value: &[u8]) -> Result<(), ()> {
        let flags = parse(value).ok_or(())?;
        self.flags.store(flags, Ordering::Relaxed);
        Ok(())
    }

    /// The value as `CONFIG GET` writes it.
    pub fn get(&self) -> String {
        format(self.flags.load(Ordering::Relaxed))
    }

    /// Whether an event of `class` is published anywhere.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let f = self.flags.load(Ordering::Relaxed);
        f & class != 0 && f & (KEYSPACE | KEYEVENT) != 0
    }

    /// Whether the engine should queue its expiries and evictions.
    pub fn wants_engine_events(&self) -> bool {
        self.wants(EXPIRED | EVICTED)
    }
}

fn parse(value: &[u8]) -> Option<u32> {
    let mut flags = 0;
    for &c in value {
        flags |= match c {
            b'A' => ALL,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b'm' => KEY_MISS,
            _ => CLASSES.iter().find(|(ch, _)| *ch == c)?.1,
        };
    }
    Some(flags)
}

fn format(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        s.extend(CLASSES.iter().filter(|(_, f)| flags & f != 0).map(|(c, _)| char::from(*c)));
    }
    for (c, f) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
        if flags & f != 0 {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{ALL, KEYEVENT, KEYSPACE, NEW, format, parse};

    #[test]
    fn flags_read_and_write_back_as_redis() {
        assert_eq!(parse(b"KEA").map(format).as_deref(), Some("AKE"));
        assert_eq!(parse(b"g$lshzxetdnKEm").map(format).as_deref(), Some("AKEm"));
        assert_eq!(parse(b"nE").map(format).as_deref(), Some("nE"));
        assert_eq!(parse(b"xK").map(format).as_deref(), Some("xK"));
        assert_eq!(parse(b""), Some(0), "empty turns notifications off");
        assert_eq!(parse(b"Q"), None);
        assert_eq!(parse(b"A"), Some(ALL));
        assert_eq!(ALL & NEW, 0);
        assert_eq!(parse(b"KE"), Some(KEYSPACE | KEYEVENT));
    }
}
