//! Every `\n` in a slice, in order.
//!
//! `memchr_iter` sets up a vector search for each match, through a function
//! pointer, and that setup costs more than the search when lines are a few
//! hundred bytes or less. On x86_64 this compares 64 bytes at a time into a
//! bit mask with SSE2 (which every x86_64 CPU has) and reads the matches off
//! the mask; past a few blocks without one, `memchr` takes over, being
//! faster across long lines. Elsewhere it is `memchr_iter`.

/// With `long_first`, the first newline is expected far away (the chunk
/// continues a long held line, or one being discarded) and is found with
/// `memchr` from the start.
#[cfg(target_arch = "x86_64")]
pub fn newlines(bytes: &[u8], long_first: bool) -> impl Iterator<Item = usize> + '_ {
    if !long_first {
        return Masks {
            bytes,
            block: 0,
            mask: block_mask(bytes, 0),
        };
    }
    match memchr::memchr(b'\n', bytes) {
        Some(newline) => Masks {
            bytes,
            block: newline & !63,
            mask: block_mask(bytes, newline & !63),
        },
        None => Masks {
            bytes,
            block: bytes.len(),
            mask: 0,
        },
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn newlines(bytes: &[u8], _long_first: bool) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', bytes)
}

/// Blocks searched by mask before a line counts as long.
#[cfg(target_arch = "x86_64")]
const SHORT_BLOCKS: usize = 4;

#[cfg(target_arch = "x86_64")]
struct Masks<'a> {
    bytes: &'a [u8],
    /// Start of the 64-byte block that `mask` describes.
    block: usize,
    /// Bit `i` is set if `bytes[block + i]` is a newline not yet returned.
    mask: u64,
}

#[cfg(target_arch = "x86_64")]
impl Iterator for Masks<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        let mut empty = 0;
        while self.mask == 0 {
            self.block += 64;
            if self.block >= self.bytes.len() {
                return None;
            }
            empty += 1;
            if empty == SHORT_BLOCKS {
                // A long line: memchr crosses it faster.
                let newline = self.block + memchr::memchr(b'\n', &self.bytes[self.block..])?;
                self.block = newline & !63;
                self.mask = block_mask(self.bytes, self.block);
                break;
            }
            self.mask = block_mask(self.bytes, self.block);
        }
        let bit = self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(self.block + bit)
    }
}

/// Bit `i` is set if `bytes[at + i]` is a newline, for the up to 64 bytes
/// from `at`.
#[cfg(target_arch = "x86_64")]
#[inline]
fn block_mask(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.first_chunk::<64>() {
        Some(block) => lane_masks(block),
        None => {
            // The last, short block: whole lanes, then byte by byte.
            let lanes = rest.len() & !15;
            let tail = rest[lanes..].iter().enumerate();
            tail.fold(lane_masks(&rest[..lanes]), |mask, (i, &b)| {
                mask | (u64::from(b == b'\n') << (lanes + i))
            })
        }
    }
}

/// `block_mask` for the whole 16-byte lanes of `block` (at most 64 bytes).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lane_masks(block: &[u8]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };

    let mut mask = 0;
    // SAFETY: SSE2 is part of every x86_64 CPU, and each load reads the 16
    // bytes of one `lane` of `block`, unaligned.
    unsafe {
        let newline = _mm_set1_epi8(b'\n' as i8);
        for (i, lane) in block.chunks_exact(16).take(4).enumerate() {
            let lane = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(lane, newline)) as u16;
            mask |= u64::from(hits) << (16 * i);
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::newlines;
    use proptest::prelude::*;

    /// Lines from empty to several blocks long, so that both the masks and
    /// the hand-over to memchr are crossed at every offset.
    fn lines() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec((0usize..700, any::<u8>()), 0..12).prop_map(|lines| {
            let mut bytes = Vec::new();
            for (len, filler) in lines {
                let filler = if filler == b'\n' { b'x' } else { filler };
                bytes.extend(std::iter::repeat_n(filler, len));
                bytes.push(b'\n');
            }
            bytes
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn finds_exactly_the_newlines_memchr_finds(bytes in lines(), skip in 0usize..64) {
            let bytes = &bytes[skip.min(bytes.len())..];
            let expected: Vec<usize> = memchr::memchr_iter(b'\n', bytes).collect();
            prop_assert_eq!(newlines(bytes, false).collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(newlines(bytes, true).collect::<Vec<_>>(), expected);
        }

        #[test]
        fn finds_exactly_the_newlines_in_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..1000)) {
            let expected: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).collect();
            prop_assert_eq!(newlines(&bytes, false).collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(newlines(&bytes, true).collect::<Vec<_>>(), expected);
        }
    }
}
