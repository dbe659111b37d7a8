//! Multi-tenant mixes: several workloads interleaved into one stream.
//!
//! Tenant `i` (its index in [`TenantMix::tenants`]) receives the share
//! `weight_i / Σ weight` of the requests. The interleaving is *smooth weighted round-robin*
//! (nginx's upstream balancer): every step adds each tenant's weight to its credit, the
//! tenant with the most credit (lowest index on ties) issues the next request, and its credit
//! drops by the total weight. It uses no randomness, so the order is the same on every run,
//! and no tenant waits more than about `Σ weight / weight_i` steps for its turn; over any
//! window each tenant's count is within one or two of its exact share.
//!
//! Arrival times come from the mix's own [`Arrivals`]; the tenants' `arrivals` are ignored.
//! Each tenant keeps its own key space, sizes, operation mix, TTLs and random stream, so adding
//! a tenant does not change what the others request, only when.

use crate::arrivals::{Arrivals, Clock};
use crate::error::Error;
use crate::request::Request;
use crate::rng::mix64;
use crate::workload::{Requests, Workload};

/// One tenant of a mix.
#[derive(Clone, Debug, PartialEq)]
pub struct Tenant {
    /// Human-readable name (for reports).
    pub name: String,
    /// What the tenant requests.
    pub workload: Workload,
    /// Relative request rate, > 0.
    pub weight: f64,
}

/// Several tenants sharing one arrival process.
#[derive(Clone, Debug, PartialEq)]
pub struct TenantMix {
    /// The tenants; a tenant's id is its index.
    pub tenants: Vec<Tenant>,
    /// Arrival process of the whole mix.
    pub arrivals: Arrivals,
    /// Seed of the mix's clock (tenants have their own seeds).
    pub seed: u64,
}

const MIX_CLOCK_SALT: u64 = 0x4D49_5843_0000_0001;

impl TenantMix {
    /// The endless interleaved stream.
    ///
    /// # Errors
    /// [`Error::Config`] with no tenants, more than 65,536, a non-positive weight, or an
    /// invalid tenant workload.
    pub fn requests(&self) -> Result<MixRequests, Error> {
        if self.tenants.is_empty() || self.tenants.len() > usize::from(u16::MAX) + 1 {
            return Err(Error::config("a mix needs 1 to 65,536 tenants"));
        }
        let mut streams = Vec::with_capacity(self.tenants.len());
        let mut weights = Vec::with_capacity(self.tenants.len());
        for t in &self.tenants {
            if !t.weight.is_finite() || t.weight <= 0.0 {
                return Err(Error::config(format!("tenant {:?}: weight must be > 0", t.name)));
            }
            streams.push(t.workload.requests()?);
            weights.push(t.weight);
        }
        let total = weights.iter().sum();
        Ok(MixRequests {
            credit: vec![0.0; streams.len()],
            streams,
            weights,
            total,
            clock: Clock::new(self.arrivals, mix64(self.seed ^ MIX_CLOCK_SALT))?,
        })
    }
}

/// The endless stream of a [`TenantMix`]. Every item is `Some`.
#[derive(Clone, Debug)]
pub struct MixRequests {
    streams: Vec<Requests>,
    weights: Vec<f64>,
    credit: Vec<f64>,
    total: f64,
    clock: Clock,
}

impl MixRequests {
    /// Smooth weighted round-robin: the index of the tenant whose turn it is.
    fn pick(&mut self) -> usize {
        let mut best = 0;
        for i in 0..self.credit.len() {
            self.credit[i] += self.weights[i];
            if self.credit[i] > self.credit[best] {
                best = i;
            }
        }
        self.credit[best] -= self.total;
        best
    }
}

impl Iterator for MixRequests {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        let tenant = self.pick();
        let time_ms = self.clock.tick_ms();
        let request = self.streams[tenant].next_untimed();
        // `tenant < 65,536` is checked when the mix is built.
        Some(Request { time_ms, tenant: tenant as u16, ..request })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::popularity::Popularity;

    fn mix(weights: &[f64]) -> TenantMix {
        TenantMix {
            tenants: weights
                .iter()
                .enumerate()
                .map(|(i, &weight)| Tenant {
                    name: format!("t{i}"),
                    workload: Workload::new(100, Popularity::Uniform, i as u64),
                    weight,
                })
                .collect(),
            arrivals: Arrivals::Constant { per_s: 1000.0 },
            seed: 1,
        }
    }

    #[test]
    fn shares_follow_weights_in_every_window() {
        let m = mix(&[5.0, 3.0, 2.0]);
        let reqs: Vec<Request> = m.requests().unwrap().take(10_000).collect();
        for window in reqs.chunks(100) {
            let mut counts = [0i32; 3];
            for r in window {
                counts[usize::from(r.tenant)] += 1;
            }
            assert!((counts[0] - 50).abs() <= 2 && (counts[2] - 20).abs() <= 2, "{counts:?}");
        }
        assert_eq!(reqs[9_999].time_ms, 9_999);
    }

    #[test]
    fn deterministic_and_tenant_streams_independent() {
        let a: Vec<Request> = mix(&[1.0, 1.0]).requests().unwrap().take(1_000).collect();
        let b: Vec<Request> = mix(&[1.0, 1.0]).requests().unwrap().take(1_000).collect();
        assert_eq!(a, b);
        // Tenant 0's keys are the same whatever tenant 1's weight.
        let c: Vec<Request> = mix(&[1.0, 3.0]).requests().unwrap().take(2_000).collect();
        let keys = |v: &[Request]| -> Vec<u64> {
            v.iter().filter(|r| r.tenant == 0).map(|r| r.key).take(400).collect()
        };
        assert_eq!(keys(&a), keys(&c));
    }

    #[test]
    fn bad_mixes_are_errors() {
        assert!(mix(&[]).requests().is_err());
        assert!(mix(&[1.0, 0.0]).requests().is_err());
        assert!(mix(&[1.0, f64::NAN]).requests().is_err());
    }
}
