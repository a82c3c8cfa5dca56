//! SSE2: 16 bytes at a time. Part of every x86-64 CPU, so nothing here
//! needs detecting and all of it is safe to call.

use super::super::{generic, portable, Block, Copied, Masks, Run, Scan, Special, Stops};
use std::arch::x86_64::{
    __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
    _mm_set1_epi8, _mm_set_epi64x,
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

impl Scan<16> for Sse2 {
    const BITS: u32 = 1;

    #[inline(always)]
    unsafe fn stop_bits(bytes: &[u8; 16], stops: Stops) -> u64 {
        // SAFETY: SSE2 is part of every x86-64 CPU; the load reads the 16
        // bytes of `bytes`, unaligned.
        stop_bits_of(
            unsafe { _mm_loadu_si128(bytes.as_ptr().cast::<__m128i>()) },
            stops,
        )
    }

    /// The last lane of a text of 16 bytes or more overlaps the one before
    /// it, with the bytes already read shifted off; a shorter text is read
    /// into one lane from two overlapping words, or one word padded with
    /// spaces, at which no scan stops.
    #[inline(always)]
    unsafe fn find_in_rest(text: &[u8], at: usize, stops: Stops) -> usize {
        let length = text.len();
        if at >= length {
            return length;
        }
        // Bit `i` of `found` is set when byte `start + i` is a stop.
        let (start, found) = match text.last_chunk::<16>() {
            // SAFETY: SSE2 is part of every x86-64 CPU.
            Some(lane) => (length - 16, unsafe { Sse2::stop_bits(lane, stops) }),
            None => {
                let (low, high) = match (text.first_chunk::<8>(), text.last_chunk::<8>()) {
                    (Some(low), Some(high)) => {
                        (u64::from_le_bytes(*low), u64::from_le_bytes(*high))
                    }
                    _ => (portable::short_word(text), u64::from_le_bytes([b' '; 8])),
                };
                let found = stop_bits_of_words(low, high, stops);
                // The high word holds the last eight bytes, when there are eight.
                (0, (found & 0xFF) | (found >> 8) << length.saturating_sub(8))
            }
        };
        // `start <= at`: fewer than 16 bytes are left from `at`, and the
        // bytes before it were read already.
        match found >> (at - start) {
            0 => length,
            rest => (at + rest.trailing_zeros() as usize).min(length),
        }
    }
}

/// [`Scan::stop_bits`] of the lane whose bytes are those of `low`, then
/// `high`, each little-endian: two words in registers, not in memory,
/// which a lane load right after their stores would stall on.
#[inline(always)]
fn stop_bits_of_words(low: u64, high: u64, stops: Stops) -> u64 {
    // SAFETY: SSE2 is part of every x86-64 CPU.
    stop_bits_of(unsafe { _mm_set_epi64x(high as i64, low as i64) }, stops)
}

/// Bit `i` is set when `stops` holds for byte `i` of `bytes`.
#[inline(always)]
fn stop_bits_of(bytes: __m128i, stops: Stops) -> u64 {
    // SAFETY: SSE2 is part of every x86-64 CPU.
    unsafe {
        let is = |byte: u8| _mm_cmpeq_epi8(bytes, _mm_set1_epi8(byte as i8));
        // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
        let limit = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, limit), limit);
        let marks = _mm_or_si128(_mm_or_si128(is(b'"'), is(b'\\')), control);
        let extra = _mm_or_si128(
            _mm_or_si128(is(stops.extra[0]), is(stops.extra[1])),
            is(stops.extra[2]),
        );
        let found = _mm_movemask_epi8(_mm_or_si128(marks, extra)) as u16;
        let high = if stops.high {
            _mm_movemask_epi8(bytes) as u16
        } else {
            0
        };
        u64::from(found | high)
    }
}

#[inline(always)]
pub fn find_stop(text: &[u8], from: usize, stops: Stops) -> usize {
    // SAFETY: SSE2 is part of every x86-64 CPU.
    unsafe { generic::find_stop::<16, Sse2>(text, from, stops) }
}

#[inline(always)]
pub fn copy_to_stop(text: &[u8], from: usize, stops: Stops, out: &mut Vec<u8>) -> usize {
    // SAFETY: as above.
    unsafe { generic::copy_to_stop::<16, Sse2>(text, from, stops, out) }
}

/// Bit `i` is set when `bytes[at + i]` is `\n`, for the up to 64 bytes
/// from `at`.
#[inline]
pub fn newline_mask(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    if let Some(block) = rest.first_chunk::<64>() {
        return lane_newlines(block);
    }
    // The last, short block: the slice's last 64 bytes, which overlap the
    // block before, shifted down to `at` (past the end, nothing is left).
    // `at` is past their start, or `rest` would hold a whole block.
    if let Some(last) = bytes.last_chunk::<64>() {
        let before = at - (bytes.len() - 64);
        let shift = u32::try_from(before).unwrap_or(u32::MAX);
        return lane_newlines(last).checked_shr(shift).unwrap_or(0);
    }
    // A slice shorter than a block: whole lanes, then byte by byte.
    let lanes = rest.len() & !15;
    let tail = rest[lanes..].iter().enumerate();
    tail.fold(lane_newlines(&rest[..lanes]), |mask, (i, &b)| {
        mask | (u64::from(b == b'\n') << (lanes + i))
    })
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
