//! Redis databases (<https://redis.io/commands/select/>, `SWAPDB`, Redis 7.0 `db.c`): each
//! tenant has `databases` of them (16 by default), numbered from 0, and a client works in one
//! at a time (`SELECT`, 0 after connecting, `RESET` or `HELLO`'s reconnect).
//!
//! A database is part of an item's identity in the engine (the four high bits of its record's
//! state byte, mixed into the key's hash; see `fridge_engine::Worker::select`), so the
//! engine holds 16 physical databases per tenant. Clients name logical ones: `SWAPDB` swaps
//! two databases for every client at once, as Redis swaps the contents of its two `redisDb`s
//! under the clients that selected them, without moving an item. Each tenant's logical →
//! physical map is one `AtomicU64`, four bits per logical database:
//!
//! ```text
//!  map: │ 63 .. 60 │ … │ 7 .. 4 │ 3 .. 0 │
//!       │ phys(15) │ … │ phys(1)│ phys(0)│      identity: 0xFEDC_BA98_7654_3210
//! ```
//!
//! A command reads it once, before it runs ([`Databases::physical`]: one relaxed load), and
//! selects that physical database in the worker's engine handle; a `SWAPDB` is one
//! compare-and-swap, O(1) whatever the databases hold. A command that ran on while another
//! client swapped finishes in the database it started in (Redis runs commands one at a time,
//! so there it cannot happen).

use std::sync::atomic::{AtomicU64, Ordering};

use fridge_engine::TenantId;
use fridge_engine::item::{MAX_DBS, MAX_TENANTS};

/// Bits of one map entry.
const ENTRY_BITS: u32 = 4;
const ENTRY_MASK: u64 = (1 << ENTRY_BITS) - 1;
/// Every logical database its own physical one.
const IDENTITY: u64 = 0xFEDC_BA98_7654_3210;

const _: () = assert!(MAX_DBS == 1 << ENTRY_BITS && MAX_DBS * ENTRY_BITS as usize == 64);

/// The physical database of logical `db` in `map`.
const fn entry(map: u64, db: u8) -> u8 {
    ((map >> (db as u32 * ENTRY_BITS)) & ENTRY_MASK) as u8
}

/// The databases every tenant has and their logical → physical maps.
#[derive(Debug)]
pub(crate) struct Databases {
    count: u8,
    maps: Box<[AtomicU64]>,
}

impl Databases {
    /// `count` databases per tenant (1 to [`MAX_DBS`]).
    pub fn new(count: u8) -> Databases {
        debug_assert!((1..=MAX_DBS).contains(&usize::from(count)));
        Databases { count, maps: (0..MAX_TENANTS).map(|_| AtomicU64::new(IDENTITY)).collect() }
    }

    /// How many databases a tenant has (Redis's `databases`).
    #[inline]
    pub fn count(&self) -> u8 {
        self.count
    }

    /// The database number `n` names, if a tenant has it.
    pub fn index(&self, n: i64) -> Option<u8> {
        u8::try_from(n).ok().filter(|&db| db < self.count)
    }

    /// Where `tenant`'s logical database `db` is stored: what the engine is given.
    #[inline]
    pub fn physical(&self, tenant: TenantId, db: u8) -> u8 {
        entry(self.maps[usize::from(tenant.0)].load(Ordering::Acquire), db)
    }

    /// The logical database clients know `tenant`'s physical database `physical` as.
    pub fn logical(&self, tenant: TenantId, physical: u8) -> u8 {
        let map = self.maps[usize::from(tenant.0)].load(Ordering::Acquire);
        (0..MAX_DBS as u8).find(|&db| entry(map, db) == physical).unwrap_or(physical)
    }

    /// `tenant`'s physical database of each logical one, in logical order.
    pub fn map(&self, tenant: TenantId) -> [u8; MAX_DBS] {
        let map = self.maps[usize::from(tenant.0)].load(Ordering::Acquire);
        std::array::from_fn(|db| entry(map, db as u8))
    }

    /// Swaps `tenant`'s logical databases `a` and `b` (Redis `SWAPDB`), for every client.
    pub fn swap(&self, tenant: TenantId, a: u8, b: u8) {
        let cell = &self.maps[usize::from(tenant.0)];
        let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Acquire, |map| {
            let (pa, pb) = (u64::from(entry(map, a)), u64::from(entry(map, b)));
            let (sa, sb) = (u32::from(a) * ENTRY_BITS, u32::from(b) * ENTRY_BITS);
            let cleared = map & !(ENTRY_MASK << sa) & !(ENTRY_MASK << sb);
            Some(cleared | pb << sa | pa << sb)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Databases;
    use fridge_engine::TenantId;

    #[test]
    fn swaps_are_per_tenant_and_undo_themselves() {
        let d = Databases::new(16);
        let (t, other) = (TenantId(3), TenantId(4));
        assert_eq!(d.physical(t, 7), 7, "identity at first");
        d.swap(t, 0, 9);
        assert_eq!((d.physical(t, 0), d.physical(t, 9), d.physical(t, 1)), (9, 0, 1));
        assert_eq!((d.logical(t, 9), d.logical(t, 0)), (0, 9));
        assert_eq!(d.physical(other, 0), 0, "another tenant's map is its own");
        d.swap(t, 9, 2);
        assert_eq!((d.physical(t, 0), d.physical(t, 9), d.physical(t, 2)), (9, 2, 0));
        d.swap(t, 5, 5);
        assert_eq!(d.physical(t, 5), 5, "a database swapped with itself stays");
        let mut seen = d.map(t);
        seen.sort_unstable();
        assert_eq!(seen, std::array::from_fn(|i| i as u8), "still a permutation");
    }

    #[test]
    fn numbers_past_the_count_are_no_database() {
        let d = Databases::new(4);
        assert_eq!(
            (d.index(0), d.index(3), d.index(4), d.index(-1)),
            (Some(0), Some(3), None, None)
        );
    }
}
