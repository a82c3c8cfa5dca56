//! Sixteen bytes of string text classified at once: which bytes end the fast
//! scan (`"`, `\` or a control byte below 0x20) and which are not ASCII.
//!
//! The vector code lives here alone. [`classify`] uses SSE2, which every
//! x86-64 CPU has; [`skip_plain`], for long runs, uses AVX2 when the CPU has
//! it, checked at run time. [`portable`] holds their twins for every other
//! target, built everywhere so that tests and the fuzz target can hold each
//! pair to the same answers; its eight-byte test also serves the string
//! scan's last few bytes, where no lane fits.

/// Bit `i` of `special` is set when `lane[i]` is `"`, `\` or below 0x20;
/// bit `i` of `high` when it is 0x80 or above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Masks {
    pub special: u32,
    pub high: u32,
}

#[cfg(target_arch = "x86_64")]
pub use sse2::classify;

#[cfg(not(target_arch = "x86_64"))]
pub use portable::classify;

/// Where `skip_plain` stopped: `at` is a multiple of 64 bytes past `from`,
/// and no byte before it is special; `high` tells whether one was 0x80 or
/// above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub at: usize,
    pub high: bool,
}

/// Skips the whole 64-byte blocks from `from` on that hold no special
/// byte: a base64 blob or a long run of plain text, read a block per step.
/// Stops at the first block holding one, or with less than a block left.
#[inline]
pub fn skip_plain(input: &[u8], from: usize) -> Skipped {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, just checked.
        return unsafe { avx2::skip_plain(input, from) };
    }
    portable::skip_plain(input, from)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Skipped;
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_testz_si256,
    };

    #[target_feature(enable = "avx2")]
    pub unsafe fn skip_plain(input: &[u8], from: usize) -> Skipped {
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let limit = _mm256_set1_epi8(0x1F);
        let special = |bytes: __m256i| {
            let control = _mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit);
            let marks = _mm256_or_si256(
                _mm256_cmpeq_epi8(bytes, quote),
                _mm256_cmpeq_epi8(bytes, backslash),
            );
            _mm256_or_si256(marks, control)
        };
        let mut at = from;
        let mut high = _mm256_set1_epi8(0);
        while let Some(block) = input.get(at..).and_then(|rest| rest.first_chunk::<64>()) {
            // SAFETY: both loads read inside `block`'s 64 bytes, unaligned.
            let (first, second) = unsafe {
                let pointer = block.as_ptr().cast::<__m256i>();
                (
                    _mm256_loadu_si256(pointer),
                    _mm256_loadu_si256(pointer.add(1)),
                )
            };
            let found = _mm256_or_si256(special(first), special(second));
            if _mm256_testz_si256(found, found) == 0 {
                break;
            }
            high = _mm256_or_si256(high, _mm256_or_si256(first, second));
            at += 64;
        }
        Skipped {
            at,
            high: _mm256_movemask_epi8(high) != 0,
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::Masks;
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    #[inline(always)]
    pub fn classify(lane: &[u8; 16]) -> Masks {
        // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16
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
                special: _mm_movemask_epi8(special) as u32,
                high: _mm_movemask_epi8(bytes) as u32,
            }
        }
    }
}

/// The same answers from 64-bit words (SWAR), for any target.
pub mod portable {
    use super::{Masks, Skipped};

    pub fn skip_plain(input: &[u8], from: usize) -> Skipped {
        let mut at = from;
        let mut high = 0;
        while let Some(block) = input.get(at..).and_then(|rest| rest.first_chunk::<64>()) {
            let (mut special, mut block_high) = (0, 0);
            for word in block.chunks_exact(8) {
                let word = self::word(word);
                special |= special_bytes(word);
                block_high |= word;
            }
            if special != 0 {
                break;
            }
            high |= block_high;
            at += 64;
        }
        Skipped {
            at,
            high: high & HIGHS != 0,
        }
    }

    const ONES: u64 = u64::from_le_bytes([1; 8]);
    /// The high bit of every byte of a word.
    pub(in crate::json) const HIGHS: u64 = ONES << 7;

    #[inline(always)]
    pub fn classify(lane: &[u8; 16]) -> Masks {
        let (low, high) = lane.split_at(8);
        let low = word(low);
        let high = word(high);
        Masks {
            special: bits(special_bytes(low)) | bits(special_bytes(high)) << 8,
            high: bits(low & HIGHS) | bits(high & HIGHS) << 8,
        }
    }

    fn word(bytes: &[u8]) -> u64 {
        let mut word = [0; 8];
        word.copy_from_slice(bytes);
        u64::from_le_bytes(word)
    }

    /// The high bit of every special byte of `word`, exactly: each byte is
    /// tested on its own seven low bits, so no borrow crosses into the next.
    #[inline(always)]
    pub(in crate::json) fn special_bytes(word: u64) -> u64 {
        let low7 = word & !HIGHS;
        let ascii = !word & HIGHS;
        // Adding 0x7F to a byte below 0x80 sets its high bit unless it is 0.
        let is = |c: u8| !((low7 ^ (ONES * u64::from(c))) + ONES * 0x7F) & ascii & HIGHS;
        // Adding 0x60 sets the high bit of every byte of 0x20 and above.
        let control = !(low7 + ONES * 0x60) & ascii & HIGHS;
        is(b'"') | is(b'\\') | control
    }

    /// Gathers the high bit of each byte into bit `i` for byte `i`.
    #[inline(always)]
    fn bits(highs: u64) -> u32 {
        // Each byte's bit 7 moves to bit 56 + i by the multiply; no two
        // partial products land on the same bit.
        (((highs >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(lane: &[u8; 16]) -> Masks {
        let mut masks = Masks {
            special: 0,
            high: 0,
        };
        for (i, &byte) in lane.iter().enumerate() {
            if byte == b'"' || byte == b'\\' || byte < 0x20 {
                masks.special |= 1 << i;
            }
            if byte >= 0x80 {
                masks.high |= 1 << i;
            }
        }
        masks
    }

    #[test]
    fn every_byte_value_in_every_position_is_classified_alike_by_both() {
        for position in 0..16 {
            for byte in 0..=255u8 {
                let mut lane = [b'a'; 16];
                lane[position] = byte;
                assert_eq!(classify(&lane), reference(&lane), "{byte:#x} at {position}");
                assert_eq!(portable::classify(&lane), reference(&lane));
            }
        }
    }

    /// Inputs of plain bytes, some of them high, with a special byte now
    /// and then, at every offset.
    #[test]
    fn long_runs_are_skipped_alike_by_both() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for case in 0..3_000 {
            let length = case % 700;
            let input: Vec<u8> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    match state % 512 {
                        0 => b'"',
                        1 => b'\\',
                        2 => 0x1F,
                        3..=9 => 0xC3,
                        _ => b'a' + (state % 26) as u8,
                    }
                })
                .collect();
            for from in [0, 1, 7, 63, 64, 65]
                .into_iter()
                .filter(|&from| from <= length)
            {
                let skipped = skip_plain(&input, from);
                assert_eq!(skipped, portable::skip_plain(&input, from));
                let plain = &input[from..skipped.at];
                assert!(plain.iter().all(|&b| b != b'"' && b != b'\\' && b >= 0x20));
                assert_eq!(skipped.high, plain.iter().any(|&b| b >= 0x80));
                let next = input.get(skipped.at..skipped.at + 64);
                assert!(next.is_none_or(|block| block
                    .iter()
                    .any(|&b| b == b'"' || b == b'\\' || b < 0x20)));
            }
        }
    }

    #[test]
    fn lanes_full_of_special_and_high_bytes_are_classified_alike_by_both() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let mut lane = [0; 16];
            for byte in &mut lane {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *byte = [b'"', b'\\', 0x1F, 0x20, 0x7F, 0x80, 0xFF, b'a'][state as usize % 8];
            }
            assert_eq!(classify(&lane), reference(&lane));
            assert_eq!(portable::classify(&lane), reference(&lane));
        }
    }
}
