//! AVX2: 32 bytes at a time, on a CPU that has it (and BMI1 and BMI2,
//! which every AVX2 CPU has, for the bit counts and masks).

use super::super::{generic, Block, Copied, Masks, Run, Scan, Special, Stops};
use super::sse2;
use std::arch::x86_64::{
    __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_movemask_epi8,
    _mm256_or_si256, _mm256_set1_epi8,
};

pub(in super::super) fn detected() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("bmi2")
}

pub(super) struct Avx2;

impl Block<32> for Avx2 {
    #[inline(always)]
    unsafe fn classify(bytes: &[u8; 32]) -> Masks {
        // SAFETY: the CPU has AVX2 (the trait's contract); the load reads
        // the 32 bytes of `bytes`, unaligned.
        unsafe {
            let bytes = _mm256_loadu_si256(bytes.as_ptr().cast::<__m256i>());
            let quote = _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'"' as i8));
            let backslash = _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'\\' as i8));
            // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
            let limit = _mm256_set1_epi8(0x1F);
            let control = _mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit);
            let special = _mm256_or_si256(_mm256_or_si256(quote, backslash), control);
            Masks {
                special: u64::from(_mm256_movemask_epi8(special) as u32),
                high: u64::from(_mm256_movemask_epi8(bytes) as u32),
            }
        }
    }
}

/// # Safety
/// The CPU has AVX2, BMI1 and BMI2 ([`detected`]).
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(in super::super) unsafe fn find_special(input: &[u8], from: usize) -> Run {
    // SAFETY: the caller's contract.
    unsafe { generic::find_special::<32, Avx2>(input, from) }
}

/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(in super::super) unsafe fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: the caller's contract.
    unsafe { generic::copy_runs::<32, Avx2, S>(input, from, out, special) }
}

impl Scan<32> for Avx2 {
    const BITS: u32 = 1;

    #[inline(always)]
    unsafe fn stop_bits(bytes: &[u8; 32], stops: Stops) -> u64 {
        // SAFETY: the CPU has AVX2 (the trait's contract); the load reads
        // the 32 bytes of `bytes`, unaligned.
        unsafe {
            let bytes = _mm256_loadu_si256(bytes.as_ptr().cast::<__m256i>());
            let is = |byte: u8| _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(byte as i8));
            // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
            let limit = _mm256_set1_epi8(0x1F);
            let control = _mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit);
            let marks = _mm256_or_si256(_mm256_or_si256(is(b'"'), is(b'\\')), control);
            let extra = _mm256_or_si256(
                _mm256_or_si256(is(stops.extra[0]), is(stops.extra[1])),
                is(stops.extra[2]),
            );
            let found = _mm256_movemask_epi8(_mm256_or_si256(marks, extra)) as u32;
            let high = if stops.high {
                _mm256_movemask_epi8(bytes) as u32
            } else {
                0
            };
            u64::from(found | high)
        }
    }

    /// In SSE2's lanes of 16.
    #[inline(always)]
    unsafe fn find_in_rest(text: &[u8], at: usize, stops: Stops) -> usize {
        sse2::find_stop(text, at, stops)
    }
}

/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(in super::super) unsafe fn find_stop(text: &[u8], from: usize, stops: Stops) -> usize {
    // SAFETY: the caller's contract.
    unsafe { generic::find_stop::<32, Avx2>(text, from, stops) }
}
