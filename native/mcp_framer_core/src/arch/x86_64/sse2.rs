//! SSE2: 16 bytes at a time. Part of every x86-64 CPU, so nothing here
//! needs detecting and all of it is safe to call.

use super::super::{generic, Block, Copied, Masks, Run, Special};
use std::arch::x86_64::{
    __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
    _mm_set1_epi8,
};

struct Sse2;

impl Block<16> for Sse2 {
    #[inline(always)]
    unsafe fn classify(bytes: &[u8; 16]) -> Masks {
        classify_lane(bytes)
    }
}

#[inline(always)]
pub fn classify_lane(lane: &[u8; 16]) -> Masks {
    // SAFETY: SSE2 is part of every x86-64 CPU; the load reads the 16
    // bytes of `lane`, unaligned.
    unsafe {
        let bytes = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
        let limit = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, limit), limit);
        let special = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        Masks {
            special: u64::from(_mm_movemask_epi8(special) as u16),
            high: u64::from(_mm_movemask_epi8(bytes) as u16),
        }
    }
}

pub fn find_special(input: &[u8], from: usize) -> Run {
    // SAFETY: SSE2 is part of every x86-64 CPU.
    unsafe { generic::find_special::<16, Sse2>(input, from) }
}

pub fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: as above.
    unsafe { generic::copy_runs::<16, Sse2, S>(input, from, out, special) }
}

/// Bit `i` is set when `bytes[at + i]` is `\n`, for the up to 64 bytes
/// from `at`.
#[inline]
pub fn newline_mask(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.first_chunk::<64>() {
        Some(block) => lane_newlines(block),
        None => {
            // The last, short block: whole lanes, then byte by byte.
            let lanes = rest.len() & !15;
            let tail = rest[lanes..].iter().enumerate();
            tail.fold(lane_newlines(&rest[..lanes]), |mask, (i, &b)| {
                mask | (u64::from(b == b'\n') << (lanes + i))
            })
        }
    }
}

/// `newline_mask` for the whole 16-byte lanes of `block` (at most 64 bytes).
#[inline(always)]
fn lane_newlines(block: &[u8]) -> u64 {
    let mut mask = 0;
    // SAFETY: SSE2 is part of every x86-64 CPU, and each load reads the 16
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
