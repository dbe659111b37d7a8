//! [`NoMetadata`]: the backend that keeps no access history.

use super::{MetadataBackend, MetadataStats, Temperature, UNKNOWN};

/// No metadata: every key looks alike, none a zombie (ranks fall back to recency).
#[derive(Debug, Default)]
pub struct NoMetadata;

impl MetadataBackend for NoMetadata {
    fn submit(&self, _digests: &[u32], _names: &[u8]) {}
    fn temperatures(&self, digests: &[u32], out: &mut Vec<Temperature>) {
        out.clear();
        out.resize(digests.len(), UNKNOWN);
    }
    fn stats(&self) -> MetadataStats {
        MetadataStats::default()
    }
    fn bytes(&self) -> usize {
        0
    }
}
