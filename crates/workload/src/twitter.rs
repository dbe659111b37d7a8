//! Tenants shaped by Twitter's production cache clusters (Yang et al., OSDI'20).
//!
//! The numbers are copied from `shared/workloads/twitter-2020-clusters.md` (twitter/cache-trace
//! `stat/2020Mar.md`, CC BY 4.0), one [`Cluster`] per table row named in its `id`. Nothing is
//! parsed at run time. The twelve clusters are the ones the trace's README recommends for
//! miss-ratio studies (52, 17, 18, 24, 44, 45, 29), write-heavy workloads (12, 37) and TTL
//! studies (22, 7), plus cluster 14 for its deletes.
//!
//! How a row becomes a [`Workload`]:
//! - key and value sizes are **fixed at the row's mean sizes** (the table gives no spread);
//! - popularity is Zipf with the row's alpha, scrambled;
//! - the operation mix is the row's, normalised (rows list fractions rounded to 0.01 that do
//!   not always sum to 1);
//! - the TTL mix is the row's "common TTL" list, normalised, in seconds (`1.8h` = 6,480 s);
//! - the key count is the row's working set size (the TTL-aware WSS column, MB read as 10^6
//!   bytes) divided by the mean object size, times the caller's `key_scale`, at least 1;
//! - the tenant's weight in the mix is the row's request rate, and the mix arrives as a
//!   Poisson process at the sum of the chosen rows' rates.
//!
//! Not modelled: one-hit-wonder ratios, diurnal patterns, size changes over time.

use crate::arrivals::Arrivals;
use crate::error::Error;
use crate::mix::{Tenant, TenantMix};
use crate::ops::{OpMix, TtlDist};
use crate::popularity::Popularity;
use crate::request::Op;
use crate::rng::mix64;
use crate::size::SizeDist;
use crate::workload::Workload;

/// One row of the Twitter cluster table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cluster {
    /// Cluster number in the table.
    pub id: u32,
    /// Mean key size, bytes.
    pub key_size: u32,
    /// Mean value size, bytes.
    pub value_size: u32,
    /// Request rate, thousands of requests per second.
    pub kqps: f64,
    /// Working set size in MB (TTL-aware column).
    pub wss_mb: f64,
    /// Common TTLs: `(seconds, fraction)`.
    pub ttls: &'static [(u32, f64)],
    /// Operation fractions.
    pub ops: &'static [(Op, f64)],
    /// Zipf alpha of key popularity.
    pub zipf_alpha: f64,
}

const MINUTE: u32 = 60;
const HOUR: u32 = 3_600;
const DAY: u32 = 86_400;

/// The chosen rows of `twitter-2020-clusters.md`, in the order tenants are built from them.
pub const CLUSTERS: [Cluster; 12] = [
    // | cluster52 | 0.0189 | 1 | 20 | 273 | 24.25 | … | 1d:0.65, 14d:0.27, 12h:0.07 | 14057 | 12583 | get:0.91 add:0.04 gets:0.02 cas:0.02 | 1.2117 |
    Cluster {
        id: 52,
        key_size: 20,
        value_size: 273,
        kqps: 24.25,
        wss_mb: 12_583.0,
        ttls: &[(DAY, 0.65), (14 * DAY, 0.27), (12 * HOUR, 0.07)],
        ops: &[(Op::Get, 0.91), (Op::Add, 0.04), (Op::Gets, 0.02), (Op::Cas, 0.02)],
        zipf_alpha: 1.2117,
    },
    // | cluster17 | 0.0002 | 1 | 19 | 212 | 0.35 | … | 5d:1.00 | 1162 | 1162 | get:0.99 | 2.1106 |
    Cluster {
        id: 17,
        key_size: 19,
        value_size: 212,
        kqps: 0.35,
        wss_mb: 1_162.0,
        ttls: &[(5 * DAY, 1.0)],
        ops: &[(Op::Get, 0.99)],
        zipf_alpha: 2.1106,
    },
    // | cluster18 | 0.002 | 1 | 18 | 37 | 26.40 | … | 12h:1.00 | 311 | 41 | get:0.96 add:0.01 gets:0.01 cas:0.01 | 2.0994 |
    Cluster {
        id: 18,
        key_size: 18,
        value_size: 37,
        kqps: 26.40,
        wss_mb: 41.0,
        ttls: &[(12 * HOUR, 1.0)],
        ops: &[(Op::Get, 0.96), (Op::Add, 0.01), (Op::Gets, 0.01), (Op::Cas, 0.01)],
        zipf_alpha: 2.0994,
    },
    // | cluster24 | 0.0087 | 1 | 32 | 699 | 5.29 | … | 14d:0.71, 60s:0.19, 30d:0.03, 1d:0.02, 1h:0.02 | 5228 | 5071 | get:0.99 | 1.3726 |
    Cluster {
        id: 24,
        key_size: 32,
        value_size: 699,
        kqps: 5.29,
        wss_mb: 5_071.0,
        ttls: &[(14 * DAY, 0.71), (MINUTE, 0.19), (30 * DAY, 0.03), (DAY, 0.02), (HOUR, 0.02)],
        ops: &[(Op::Get, 0.99)],
        zipf_alpha: 1.3726,
    },
    // | cluster44 | 0.0083 | 3 | 25 | 22 | 9.41 | … | 30d:1.00 | 536 | 536 | get:0.98 add:0.01 | 1.4084 |
    Cluster {
        id: 44,
        key_size: 25,
        value_size: 22,
        kqps: 9.41,
        wss_mb: 536.0,
        ttls: &[(30 * DAY, 1.0)],
        ops: &[(Op::Get, 0.98), (Op::Add, 0.01)],
        zipf_alpha: 1.4084,
    },
    // | cluster45 | 0.3685 | 1 | 10 | 120 | 0.33 | … | 15d:1.00 | 1046 | 1046 | add:0.15 get:0.85 | 0.6372 |
    Cluster {
        id: 45,
        key_size: 10,
        value_size: 120,
        kqps: 0.33,
        wss_mb: 1_046.0,
        ttls: &[(15 * DAY, 1.0)],
        ops: &[(Op::Add, 0.15), (Op::Get, 0.85)],
        zipf_alpha: 0.6372,
    },
    // | cluster29 | 0.2242 | 1 | 36 | 799 | 10.73 | … | 1h:0.67, 2h:0.33 | 40520 | 891 | get:0.86 set:0.13 | 1.2323 |
    Cluster {
        id: 29,
        key_size: 36,
        value_size: 799,
        kqps: 10.73,
        wss_mb: 891.0,
        ttls: &[(HOUR, 0.67), (2 * HOUR, 0.33)],
        ops: &[(Op::Get, 0.86), (Op::Set, 0.13)],
        zipf_alpha: 1.2323,
    },
    // | cluster12 | 0.0058 | 2 | 44 | 1030 | 4.36 | … | 300s:0.98, 299s:0.02 | 612397 | 986 | set:0.80 get:0.20 | 0.3048 |
    Cluster {
        id: 12,
        key_size: 44,
        value_size: 1_030,
        kqps: 4.36,
        wss_mb: 986.0,
        ttls: &[(300, 0.98), (299, 0.02)],
        ops: &[(Op::Set, 0.80), (Op::Get, 0.20)],
        zipf_alpha: 0.3048,
    },
    // | cluster22 | 0.875 | 3 | 54 | 4 | 3.24 | … | 1d:0.85, 1h:0.11, 1800s:0.03 | 3627 | 1682 | get:0.72 incr:0.18 set:0.10 | 0.7624 |
    Cluster {
        id: 22,
        key_size: 54,
        value_size: 4,
        kqps: 3.24,
        wss_mb: 1_682.0,
        ttls: &[(DAY, 0.85), (HOUR, 0.11), (1_800, 0.03)],
        ops: &[(Op::Get, 0.72), (Op::Incr, 0.18), (Op::Set, 0.10)],
        zipf_alpha: 0.7624,
    },
    // | cluster14 | 0.1218 | 1 | 96 | 414 | 5.81 | … | 1d:1.00 | 18333 | 8732 | get:0.65 delete:0.22 set:0.13 | 1.2959 |
    Cluster {
        id: 14,
        key_size: 96,
        value_size: 414,
        kqps: 5.81,
        wss_mb: 8_732.0,
        ttls: &[(DAY, 1.0)],
        ops: &[(Op::Get, 0.65), (Op::Delete, 0.22), (Op::Set, 0.13)],
        zipf_alpha: 1.2959,
    },
    // | cluster37 | 0.5938 | 2 | 72 | 20134 | 4.15 | … | 20s:0.91, 300s:0.06, 2h:0.02, 600s:0.01 | 3121435 | 551 | set:0.37 get:0.63 | 0.4251 |
    Cluster {
        id: 37,
        key_size: 72,
        value_size: 20_134,
        kqps: 4.15,
        wss_mb: 551.0,
        ttls: &[(20, 0.91), (300, 0.06), (2 * HOUR, 0.02), (600, 0.01)],
        ops: &[(Op::Set, 0.37), (Op::Get, 0.63)],
        zipf_alpha: 0.4251,
    },
    // | cluster7 | 0.2004 | 2 | 17 | 1936 | 1.62 | … | 1.8h:0.28, 1.7h:0.24, 1.9h:0.23, 1.6h:0.13, 2h:0.12 | 7574 | 85 | get:0.82 set:0.18 | 1.0666 |
    Cluster {
        id: 7,
        key_size: 17,
        value_size: 1_936,
        kqps: 1.62,
        wss_mb: 85.0,
        ttls: &[(6_480, 0.28), (6_120, 0.24), (6_840, 0.23), (5_760, 0.13), (7_200, 0.12)],
        ops: &[(Op::Get, 0.82), (Op::Set, 0.18)],
        zipf_alpha: 1.0666,
    },
];

impl Cluster {
    /// Objects in the working set: WSS bytes over the mean object size.
    #[must_use]
    pub fn wss_objects(&self) -> f64 {
        self.wss_mb * 1e6 / f64::from(self.key_size + self.value_size)
    }

    /// This cluster as a workload over `keys` keys.
    ///
    /// # Errors
    /// Never for the built-in rows; [`Error::Config`] for an invalid custom row.
    pub fn workload(&self, keys: u64, seed: u64) -> Result<Workload, Error> {
        Ok(Workload {
            key_size: SizeDist::Fixed(self.key_size),
            value_size: SizeDist::Fixed(self.value_size),
            ops: OpMix::new(self.ops.iter().copied())?,
            ttl: TtlDist::mix(self.ttls.iter().map(|&(s, p)| (Some(s), p)))?,
            arrivals: Arrivals::Constant { per_s: self.kqps * 1000.0 },
            ..Workload::new(
                keys,
                Popularity::Zipf { theta: self.zipf_alpha, scrambled: true },
                seed,
            )
        })
    }
}

/// A mix of `tenants` tenants built from [`CLUSTERS`] in order (cycling, with new seeds, past
/// twelve). Each tenant's key count is its cluster's working-set object count times
/// `key_scale` (at least 1): `key_scale = 0.01` gives 1% of production working sets.
///
/// # Errors
/// [`Error::Config`] for zero tenants, more than 65,536, or a `key_scale` that is not > 0.
pub fn twitter_mix(tenants: usize, key_scale: f64, seed: u64) -> Result<TenantMix, Error> {
    if !key_scale.is_finite() || key_scale <= 0.0 {
        return Err(Error::config(format!("key_scale {key_scale} must be > 0")));
    }
    let tenants: Vec<Tenant> = (0..tenants)
        .map(|i| {
            let c = &CLUSTERS[i % CLUSTERS.len()];
            let round = i / CLUSTERS.len();
            let keys = (c.wss_objects() * key_scale).round().max(1.0) as u64;
            Ok(Tenant {
                name: if round == 0 {
                    format!("cluster{}", c.id)
                } else {
                    format!("cluster{}#{}", c.id, round + 1)
                },
                workload: c.workload(keys, mix64(seed ^ i as u64))?,
                weight: c.kqps,
            })
        })
        .collect::<Result<_, Error>>()?;
    let per_s = tenants.iter().map(|t| t.weight * 1000.0).sum();
    let mix = TenantMix { tenants, arrivals: Arrivals::Poisson { per_s }, seed };
    // Validate now, so a bad mix fails here and not in the caller's loop.
    mix.requests()?;
    Ok(mix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Request;

    #[test]
    fn every_cluster_builds() {
        for c in &CLUSTERS {
            let w = c.workload(1_000, 1).unwrap();
            let reqs: Vec<Request> = w.requests().unwrap().take(2_000).collect();
            assert!(reqs.iter().all(|r| r.value_size == c.value_size && r.key < 1_000));
            for r in &reqs {
                if r.op.sets_ttl() {
                    assert!(c.ttls.iter().any(|&(s, _)| Some(s) == r.ttl_s), "{r:?}");
                }
            }
        }
    }

    #[test]
    fn mix_follows_request_rates() {
        let mix = twitter_mix(12, 1e-3, 9).unwrap();
        assert_eq!(mix.tenants[0].name, "cluster52");
        // cluster52 has 12,583 MB / 293 B ≈ 42.9M objects → 42,945 keys at 1e-3.
        assert_eq!(mix.tenants[0].workload.keys, 42_945);
        let total: f64 = CLUSTERS.iter().map(|c| c.kqps).sum();
        let n = 100_000;
        let mut counts = [0u32; 12];
        for r in mix.requests().unwrap().take(n) {
            counts[usize::from(r.tenant)] += 1;
        }
        for (c, count) in CLUSTERS.iter().zip(counts) {
            let expected = c.kqps / total * n as f64;
            assert!((f64::from(count) - expected).abs() <= 2.0, "cluster{}: {count}", c.id);
        }
        let wrapped = twitter_mix(14, 1e-3, 9).unwrap();
        assert_eq!(wrapped.tenants[13].name, "cluster17#2");
        assert!(twitter_mix(0, 1.0, 0).is_err());
        assert!(twitter_mix(3, 0.0, 0).is_err());
    }
}
