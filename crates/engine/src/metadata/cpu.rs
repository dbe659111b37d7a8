//! [`CpuHitmap`]: the hitmap in host memory as a [`Structure`], applied pool by pool
//! ([`Hitmap::record_pool`]) and compacted in place.

use std::sync::atomic::{AtomicBool, Ordering};

use super::Temperature;
use super::pooled::Structure;
use crate::hitmap::Hitmap;

impl Structure for Hitmap {
    fn append(&mut self, digests: &[u32], compacting: &AtomicBool) {
        self.record_pool(digests);
        if self.saturated() {
            compacting.store(true, Ordering::Release);
            self.compact();
            compacting.store(false, Ordering::Release);
        }
    }

    fn zones(&mut self, digests: &[u32], out: &mut Vec<Temperature>) {
        out.clear();
        out.extend(digests.iter().map(|&d| Temperature { zone: self.zone(d) }));
    }

    fn shape(&mut self) -> (usize, usize, u64) {
        let (levels, compactions) = Hitmap::shape(self);
        (self.bytes(), levels, compactions)
    }

    fn device(&self) -> String {
        "cpu".into()
    }
}
