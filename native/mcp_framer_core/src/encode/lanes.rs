//! Where the next byte an escape mode must look at lies in a string: sixteen
//! bytes at a time with SSE2, which every x86-64 CPU has, thirty-two with
//! AVX2 when the CPU has it (checked at run time), eight at a time in
//! [`portable`] on every other target.
//!
//! The vector code lives here alone. [`portable`] is built everywhere, so
//! that the tests and the escape fuzz target hold each vector twin to its
//! answers on every offset of their inputs and at their ends.

/// The bytes a scan stops at: always `"`, `\` and every byte below 0x20;
/// then each of `extra` (a mode repeats a byte when it needs fewer than
/// three), and every byte of 0x80 or above when `high` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stops {
    pub extra: [u8; 3],
    pub high: bool,
}

impl Stops {
    /// Whether a scan stops at `byte`.
    #[inline]
    pub fn stops_at(self, byte: u8) -> bool {
        byte == b'"'
            || byte == b'\\'
            || byte < 0x20
            || self.extra.contains(&byte)
            || (self.high && byte >= 0x80)
    }
}

/// The first index from `from` on whose byte `stops` holds, or
/// `text.len()` if there is none.
#[inline(always)]
pub fn find(text: &[u8], from: usize, stops: Stops) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // The feature check is a load of a cached word; a short string is
        // not worth even that.
        if text.len().saturating_sub(from) >= 64 && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, just checked.
            return unsafe { avx2::find(text, from, stops) };
        }
        sse2::find(text, from, stops)
    }
    #[cfg(not(target_arch = "x86_64"))]
    portable::find(text, from, stops)
}

/// Appends `text[from..stop]` to `out` and returns `stop`, the index
/// [`find`] gives. Each lane is stored whole and the bytes past the stop
/// cut off again: a run between two escapes is copied without a call to
/// `memcpy`, which costs more than such a run.
///
/// `out` must have room for `text.len() - from + 16` more bytes, or it
/// grows.
#[inline(always)]
pub fn copy_to_stop(text: &[u8], from: usize, stops: Stops, out: &mut Vec<u8>) -> usize {
    #[cfg(target_arch = "x86_64")]
    return sse2::copy_to_stop(text, from, stops, out);
    #[cfg(not(target_arch = "x86_64"))]
    return portable::copy_to_stop(text, from, stops, out);
}

#[cfg(target_arch = "x86_64")]
pub mod sse2 {
    use super::{portable, Stops};
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_set_epi64x,
    };

    /// Bit `i` is set when `stops` holds for `lane[i]`.
    #[inline(always)]
    pub fn mask(lane: &[u8; 16], stops: Stops) -> u32 {
        // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16
        // bytes of `lane`, unaligned.
        unsafe { mask_of(_mm_loadu_si128(lane.as_ptr().cast::<__m128i>()), stops) }
    }

    /// [`mask`] of the lane whose bytes are those of `low`, then `high`,
    /// each little-endian: two words in registers, not in memory, which a
    /// lane load right after their stores would stall on.
    #[inline(always)]
    fn mask_words(low: u64, high: u64, stops: Stops) -> u32 {
        // SAFETY: SSE2 is part of every x86_64 CPU.
        unsafe { mask_of(_mm_set_epi64x(high as i64, low as i64), stops) }
    }

    /// # Safety
    /// None beyond SSE2, which every x86_64 CPU has.
    #[inline(always)]
    unsafe fn mask_of(bytes: __m128i, stops: Stops) -> u32 {
        let is = |byte: u8| _mm_cmpeq_epi8(bytes, _mm_set1_epi8(byte as i8));
        // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
        let limit = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, limit), limit);
        let marks = _mm_or_si128(_mm_or_si128(is(b'"'), is(b'\\')), control);
        let extra = _mm_or_si128(
            _mm_or_si128(is(stops.extra[0]), is(stops.extra[1])),
            is(stops.extra[2]),
        );
        let found = _mm_movemask_epi8(_mm_or_si128(marks, extra)) as u32;
        if stops.high {
            found | _mm_movemask_epi8(bytes) as u32
        } else {
            found
        }
    }

    /// [`super::find`] sixteen bytes at a time. The last lane of a string
    /// of sixteen bytes or more overlaps the one before it, with the bytes
    /// already read masked off; a shorter string is read into one lane
    /// from two overlapping words, or one word padded with spaces, at
    /// which no scan stops.
    #[inline(always)]
    pub fn find(text: &[u8], from: usize, stops: Stops) -> usize {
        let mut at = from;
        while let Some(lane) = text.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
            let found = mask(lane, stops);
            if found != 0 {
                return at + found.trailing_zeros() as usize;
            }
            at += 16;
        }
        if at >= text.len() {
            return text.len();
        }
        let length = text.len();
        // Bit `i` of `found` is set when byte `start + i` is a stop.
        let (start, found) = match text.last_chunk::<16>() {
            Some(lane) => (length - 16, mask(lane, stops)),
            None => {
                let (low, high) = match (text.first_chunk::<8>(), text.last_chunk::<8>()) {
                    (Some(low), Some(high)) => {
                        (u64::from_le_bytes(*low), u64::from_le_bytes(*high))
                    }
                    _ => (portable::short_word(text), u64::from_le_bytes([b' '; 8])),
                };
                let found = mask_words(low, high, stops);
                // The high word holds the last eight bytes, when there are eight.
                (0, (found & 0xFF) | (found >> 8) << length.saturating_sub(8))
            }
        };
        // `start <= at`: the bytes before `at` were read already.
        match found >> (at - start) {
            0 => length,
            rest => (at + rest.trailing_zeros() as usize).min(length),
        }
    }

    /// [`super::copy_to_stop`] sixteen bytes at a time.
    #[inline(always)]
    pub fn copy_to_stop(text: &[u8], from: usize, stops: Stops, out: &mut Vec<u8>) -> usize {
        let mut at = from;
        while let Some(lane) = text.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
            let found = mask(lane, stops);
            out.extend_from_slice(lane);
            if found != 0 {
                let kept = found.trailing_zeros() as usize;
                out.truncate(out.len() - 16 + kept);
                return at + kept;
            }
            at += 16;
        }
        let stop = find(text, at, stops);
        out.extend_from_slice(&text[at..stop]);
        stop
    }
}

#[cfg(target_arch = "x86_64")]
pub mod avx2 {
    use super::{sse2, Stops};
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };

    /// Bit `i` is set when `stops` holds for `lane[i]`.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn mask(lane: &[u8; 32], stops: Stops) -> u32 {
        // SAFETY: the load reads the 32 bytes of `lane`, unaligned.
        let bytes = unsafe { _mm256_loadu_si256(lane.as_ptr().cast::<__m256i>()) };
        let is = |byte: u8| _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(byte as i8));
        let limit = _mm256_set1_epi8(0x1F);
        let control = _mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit);
        let marks = _mm256_or_si256(_mm256_or_si256(is(b'"'), is(b'\\')), control);
        let extra = _mm256_or_si256(
            _mm256_or_si256(is(stops.extra[0]), is(stops.extra[1])),
            is(stops.extra[2]),
        );
        let found = _mm256_movemask_epi8(_mm256_or_si256(marks, extra)) as u32;
        if stops.high {
            found | _mm256_movemask_epi8(bytes) as u32
        } else {
            found
        }
    }

    /// [`super::find`] thirty-two bytes at a time; the rest, under 32
    /// bytes, goes to [`sse2::find`].
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn find(text: &[u8], from: usize, stops: Stops) -> usize {
        let mut at = from;
        while let Some(lane) = text.get(at..).and_then(|rest| rest.first_chunk::<32>()) {
            // SAFETY: the caller checked that the CPU has AVX2.
            let found = unsafe { mask(lane, stops) };
            if found != 0 {
                return at + found.trailing_zeros() as usize;
            }
            at += 32;
        }
        sse2::find(text, at, stops)
    }
}

/// The same answers from 64-bit words (SWAR), for any target.
pub mod portable {
    use super::Stops;

    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const LOWS: u64 = ONES * 0x7F;
    const HIGHS: u64 = ONES * 0x80;

    /// The high bit of every byte of `word` that is zero, exactly: the low
    /// seven bits are added to 0x7F on their own, so no carry crosses into
    /// the next byte.
    #[inline(always)]
    fn zero_bytes(word: u64) -> u64 {
        !(((word & LOWS) + LOWS) | word) & HIGHS
    }

    /// The high bit of every byte of `word` at which a scan stops.
    #[inline(always)]
    pub fn mask(word: u64, stops: Stops) -> u64 {
        let is = |byte: u8| zero_bytes(word ^ (ONES * u64::from(byte)));
        // A byte is below 0x20 when it is below 0x80 and its low seven bits
        // plus 0x60 stay below 0x80.
        let control = !(((word & LOWS) + ONES * 0x60) | word) & HIGHS;
        let extra = is(stops.extra[0]) | is(stops.extra[1]) | is(stops.extra[2]);
        let high = if stops.high { word & HIGHS } else { 0 };
        is(b'"') | is(b'\\') | control | extra | high
    }

    /// The bytes of `text`, shorter than eight, as a word padded with
    /// spaces, at which no scan stops. Read with overlapping loads rather
    /// than copied: a copy into a word on the stack, read back at once,
    /// stalls.
    #[inline(always)]
    pub(in crate::encode) fn short_word(text: &[u8]) -> u64 {
        let length = text.len();
        let word =
            if let (Some(low), Some(high)) = (text.first_chunk::<4>(), text.last_chunk::<4>()) {
                u64::from(u32::from_le_bytes(*low))
                    | u64::from(u32::from_le_bytes(*high)) << (8 * (length - 4))
            } else if let (Some(&first), Some(&last)) = (text.first(), text.last()) {
                let middle = text[length / 2];
                u64::from(first)
                    | u64::from(middle) << (8 * (length / 2))
                    | u64::from(last) << (8 * (length - 1))
            } else {
                0
            };
        word | (ONES * u64::from(b' '))
            .checked_shl(8 * length as u32)
            .unwrap_or(0)
    }

    /// [`super::find`] eight bytes at a time. The last word of a string
    /// of eight bytes or more overlaps the one before it, with the bytes
    /// already read masked off; a shorter string is read into a word
    /// padded with spaces, at which no scan stops.
    pub fn find(text: &[u8], from: usize, stops: Stops) -> usize {
        let mut at = from;
        while let Some(word) = text.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
            let found = mask(u64::from_le_bytes(*word), stops);
            if found != 0 {
                return at + found.trailing_zeros() as usize / 8;
            }
            at += 8;
        }
        if at >= text.len() {
            return text.len();
        }
        let (start, word) = match text.last_chunk::<8>() {
            Some(word) => (text.len() - 8, u64::from_le_bytes(*word)),
            None => (0, short_word(text)),
        };
        // `start <= at < start + 8`: the bytes before `at` were read already.
        let found = mask(word, stops) >> (8 * (at - start));
        match found {
            0 => text.len(),
            found => (at + found.trailing_zeros() as usize / 8).min(text.len()),
        }
    }

    /// [`super::copy_to_stop`] eight bytes at a time.
    pub fn copy_to_stop(text: &[u8], from: usize, stops: Stops, out: &mut Vec<u8>) -> usize {
        let mut at = from;
        while let Some(word) = text.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
            let found = mask(u64::from_le_bytes(*word), stops);
            out.extend_from_slice(word);
            if found != 0 {
                let kept = found.trailing_zeros() as usize / 8;
                out.truncate(out.len() - 8 + kept);
                return at + kept;
            }
            at += 8;
        }
        let stop = find(text, at, stops);
        out.extend_from_slice(&text[at..stop]);
        stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [Stops; 4] = [
        Stops {
            extra: [b'"'; 3],
            high: false,
        },
        Stops {
            extra: [0xE2, b'"', b'"'],
            high: false,
        },
        Stops {
            extra: [0xE2, b'<', b'/'],
            high: false,
        },
        Stops {
            extra: [b'"'; 3],
            high: true,
        },
    ];

    fn reference(text: &[u8], from: usize, stops: Stops) -> usize {
        (from..text.len())
            .find(|&i| stops.stops_at(text[i]))
            .unwrap_or(text.len())
    }

    fn all_finds(text: &[u8], from: usize, stops: Stops) -> Vec<usize> {
        let mut found = vec![find(text, from, stops), portable::find(text, from, stops)];
        #[cfg(target_arch = "x86_64")]
        {
            found.push(sse2::find(text, from, stops));
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, just checked.
                found.push(unsafe { avx2::find(text, from, stops) });
            }
        }
        found
    }

    #[test]
    fn every_byte_value_at_every_offset_and_length_is_found_alike_by_all() {
        for stops in MODES {
            for length in 1..=70 {
                for position in 0..length {
                    for byte in 0..=255u8 {
                        let mut text = vec![b'a'; length];
                        text[position] = byte;
                        for from in [0, position.saturating_sub(1), position] {
                            let expected = reference(&text, from, stops);
                            for found in all_finds(&text, from, stops) {
                                assert_eq!(found, expected, "{byte:#x} at {position} of {length}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn copies_to_the_stop_append_what_lies_before_it_alike_from_every_offset() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for case in 0..2_000 {
            let length = case % 200;
            let text: Vec<u8> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    [b'"', 0x1F, 0xE2, 0xC3, b'<', b'a', b'b', b'c'][state as usize % 8]
                })
                .collect();
            for stops in MODES {
                for from in 0..=length {
                    let stop = reference(&text, from, stops);
                    let copied = |copy: fn(&[u8], usize, Stops, &mut Vec<u8>) -> usize| {
                        let mut out = b"head".to_vec();
                        let at = copy(&text, from, stops, &mut out);
                        (at, out)
                    };
                    let expected = (stop, [b"head", &text[from..stop]].concat());
                    assert_eq!(copied(portable::copy_to_stop), expected);
                    assert_eq!(copied(copy_to_stop), expected);
                    #[cfg(target_arch = "x86_64")]
                    assert_eq!(copied(sse2::copy_to_stop), expected);
                }
            }
        }
    }

    #[test]
    fn texts_dense_with_stops_are_found_alike_by_all_from_every_offset() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for case in 0..2_000 {
            let length = case % 300;
            let text: Vec<u8> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    [
                        b'"', b'\\', 0x1F, 0x20, 0x7F, 0x80, 0xE2, 0xFF, b'<', b'/', b'a',
                    ][state as usize % 11]
                })
                .collect();
            for stops in MODES {
                for from in 0..=length {
                    let expected = reference(&text, from, stops);
                    for found in all_finds(&text, from, stops) {
                        assert_eq!(found, expected);
                    }
                }
            }
        }
    }
}
