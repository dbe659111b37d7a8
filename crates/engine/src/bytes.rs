//! Byte searches in vector registers, for the packed collections above the engine (the tag
//! scan of their index, `crates/server/src/types/index.rs`), which keep no `unsafe` of their
//! own.
//!
//! On x86-64 a 32-byte chunk is compared in two SSE2 registers (`pcmpeqb`, `pmovmskb`; SSE2
//! is part of the x86-64 baseline, so no CPU check is needed); elsewhere in eight 64-bit words,
//! with the exact zero-byte test (no borrow between bytes, so no false matches). Scanning the
//! 1,000 tags of a 1,000-field hash takes 166 ns as a fold of byte compares (which the compiler
//! vectorizes four bytes at a time) and 54 ns through SSE2 (`benches/byte_scan.rs`, 2-core VM,
//! 2026-12-08; `docs/design.md`, "The sorted-set index").

/// The positions of `byte` in `chunk`: bit `j` of the mask is set where `chunk[j] == byte`.
#[inline]
pub fn equal_mask(chunk: &[u8; 32], byte: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of the x86-64 baseline, so these instructions exist on every CPU
        // this code runs on; both loads read 16 bytes inside `chunk` (32 bytes, borrowed for the
        // call), and `loadu` has no alignment requirement.
        unsafe {
            let wanted = _mm_set1_epi8(byte as i8);
            let p = chunk.as_ptr().cast::<__m128i>();
            let lo = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(p), wanted)) as u32;
            let hi = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(p.add(1)), wanted)) as u32;
            lo & 0xffff | hi << 16
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        equal_mask_words(chunk, byte)
    }
}

/// [`equal_mask`] in 64-bit words: a byte of `w ^ byte…` is zero exactly where its high bit
/// stays clear in `((v & 0x7f…) + 0x7f…) | v`.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn equal_mask_words(chunk: &[u8; 32], byte: u8) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut mask = 0;
    for (k, word) in chunk.chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(word.try_into().unwrap_or_default())
            ^ (u64::from(byte) * 0x0101_0101_0101_0101);
        let zero = !(((v & LOW7).wrapping_add(LOW7)) | v | LOW7);
        // The high bit of each byte of `zero`, gathered into 8 bits.
        let bits = (zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= (bits as u32) << (8 * k);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_compares(chunk: &[u8; 32], byte: u8) -> u32 {
        (0..32).filter(|&j| chunk[j] == byte).fold(0, |m, j| m | 1 << j)
    }

    #[test]
    fn the_masks_match_a_compare_of_every_byte() {
        let mut chunk = [0u8; 32];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..20_000 {
            for b in chunk.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Few distinct bytes, so that most chunks hold the byte looked for, and bytes
                // next to it (the borrow a word-wise test could get wrong: 0x00 beside 0x01,
                // 0x80 beside 0x7f).
                *b = [0x00, 0x01, 0x7f, 0x80, 0xff, x as u8][(x >> 8) as usize % 6];
            }
            let byte = [0x00, 0x01, 0x7f, 0x80, 0xff, round as u8][round % 6];
            let want = by_compares(&chunk, byte);
            assert_eq!(equal_mask(&chunk, byte), want, "{chunk:?} {byte}");
            assert_eq!(equal_mask_words(&chunk, byte), want, "{chunk:?} {byte}");
        }
    }
}
