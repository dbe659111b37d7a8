//! Static per-tenant partitioning: one inner policy per tenant, each with its own fixed byte
//! capacity, and no sharing between them.
//!
//! A request goes to the policy of its `tenant` (tenant `t` owns partition `t`); everything
//! else is the inner policy's business. This is the baseline that memory arbitration between
//! tenants (Memshare's pooled memory, fridge's arbiter) has to beat: it isolates tenants
//! perfectly and wastes whatever a partition does not need.
//!
//! A request for a tenant without a partition is a miss and is not stored; such requests are
//! counted in [`Partitioned::unrouted`], so a driver can tell a misconfigured run from a cold
//! cache. `contains` asks every partition, since keys are per tenant.

use super::{Access, Policy};

/// One inner policy per tenant.
#[derive(Debug)]
pub struct Partitioned<P> {
    parts: Vec<P>,
    unrouted: u64,
}

impl<P: Policy> Partitioned<P> {
    /// Tenant `t` uses `parts[t]`.
    pub fn new(parts: Vec<P>) -> Self {
        Self { parts, unrouted: 0 }
    }

    /// One partition per entry of `capacities` (tenant `t` gets `capacities[t]` bytes), each
    /// built by `make(capacity)`.
    pub fn with_capacities(capacities: &[u64], make: impl FnMut(u64) -> P) -> Self {
        Self::new(capacities.iter().copied().map(make).collect())
    }

    /// The partitions, by tenant (e.g. to read per-tenant occupancy).
    pub fn parts(&self) -> &[P] {
        &self.parts
    }

    /// Requests whose tenant had no partition.
    pub fn unrouted(&self) -> u64 {
        self.unrouted
    }
}

impl<P: Policy> Policy for Partitioned<P> {
    fn name(&self) -> String {
        match self.parts.first() {
            Some(p) => format!("Partitioned-{}x{}", self.parts.len(), p.name()),
            None => "Partitioned-0".to_owned(),
        }
    }

    fn access(&mut self, a: &Access) -> bool {
        match self.parts.get_mut(usize::from(a.tenant)) {
            Some(p) => p.access(a),
            None => {
                self.unrouted += 1;
                false
            }
        }
    }

    fn remove(&mut self, a: &Access) -> bool {
        self.parts.get_mut(usize::from(a.tenant)).is_some_and(|p| p.remove(a))
    }

    fn capacity(&self) -> u64 {
        self.parts.iter().map(Policy::capacity).sum()
    }

    fn used(&self) -> u64 {
        self.parts.iter().map(Policy::used).sum()
    }

    fn len(&self) -> usize {
        self.parts.iter().map(Policy::len).sum()
    }

    fn contains(&self, key: u64) -> bool {
        self.parts.iter().any(|p| p.contains(key))
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.parts.iter().find_map(|p| p.resident_size(key))
    }

    #[cfg(test)]
    fn validate(&self) {
        for p in &self.parts {
            p.validate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Partitioned;
    use crate::policy::{Access, Lru, Policy};

    fn req(tenant: u16, key: u64) -> Access {
        Access { tenant, ..Access::new(key, 1) }
    }

    #[test]
    fn tenants_are_isolated() {
        // Tenant 0 has 2 slots, tenant 1 has 1.
        let mut c = Partitioned::with_capacities(&[2, 1], Lru::new);
        let steps = [
            // Tenant 0 fills its 2 slots with 1, 2; tenant 1 stores 10.
            (req(0, 1), false),
            (req(0, 2), false),
            (req(1, 10), false),
            // Tenant 1 stores 11, evicting its own 10, not tenant 0's objects.
            (req(1, 11), false),
            (req(0, 1), true),
            (req(0, 2), true),
            (req(1, 10), false),
            // The same key under another tenant is another object.
            (req(1, 1), false),
            (req(0, 1), true),
            // Tenant 2 has no partition: miss, not stored, counted.
            (req(2, 5), false),
        ];
        for (i, (a, hit)) in steps.iter().enumerate() {
            assert_eq!(c.access(a), *hit, "step {i}");
            c.validate();
        }
        assert_eq!(c.parts()[0].len(), 2);
        assert_eq!(c.parts()[1].len(), 1);
        assert!(c.parts()[1].contains(1) && !c.contains(5));
        assert_eq!((c.capacity(), c.used(), c.len(), c.unrouted()), (3, 3, 3, 1));
        assert_eq!(c.name(), "Partitioned-2xLRU");
    }
}
