//! AVX-512: strings with escapes 64 bytes at a time, compared straight
//! into mask registers, on a CPU that has AVX-512F and BW (and BMI1 and
//! BMI2); plain text with AVX2's blocks.

use super::super::{generic, Block, Copied, Masks, Run, Special};
use super::avx2::Avx2;
use std::arch::x86_64::{
    _bzhi_u64, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512,
    _mm512_maskz_loadu_epi8, _mm512_movepi8_mask, _mm512_set1_epi8, _mm512_storeu_si512,
};

/// AVX-512F and BW, and all that [`super::avx2`] needs, whose blocks the
/// scans use.
pub(in super::super) fn detected() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && super::avx2::detected()
}

struct Avx512;

impl Block<64> for Avx512 {
    #[inline(always)]
    unsafe fn classify(bytes: &[u8; 64]) -> Masks {
        // SAFETY: the CPU has AVX-512F and BW (the trait's contract); the
        // load reads the 64 bytes of `bytes`, unaligned.
        unsafe {
            let bytes = _mm512_loadu_si512(bytes.as_ptr().cast());
            let quote = _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'"' as i8));
            let backslash = _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'\\' as i8));
            let control = _mm512_cmplt_epu8_mask(bytes, _mm512_set1_epi8(0x20));
            Masks {
                special: quote | backslash | control,
                high: _mm512_movepi8_mask(bytes),
            }
        }
    }

    /// One masked load: the bytes past `rest` are neither read nor kept.
    #[inline(always)]
    unsafe fn padded(rest: &[u8]) -> [u8; 64] {
        let mut block = [0; 64];
        // SAFETY: the CPU has AVX-512F and BW, and BMI2 (the trait's
        // contract). The load's mask selects the first `rest.len()` (< 64)
        // bytes, which lie in `rest`, and the others are neither read nor
        // faulted on; the store writes the 64 bytes of `block`.
        unsafe {
            let mask = _bzhi_u64(u64::MAX, rest.len().min(63) as u32);
            let bytes = _mm512_maskz_loadu_epi8(mask, rest.as_ptr().cast());
            _mm512_storeu_si512(block.as_mut_ptr().cast(), bytes);
        }
        block
    }
}

/// In AVX2's blocks of 32: on long plain runs (base64 blobs) 64-byte loads
/// scan slower here than 32-byte ones, where no escape stops the scan to
/// make the wider block pay.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512BW, BMI1 and BMI2 ([`detected`]), and so
/// AVX2.
#[target_feature(enable = "avx512f,avx512bw,bmi1,bmi2")]
pub(in super::super) unsafe fn find_special(input: &[u8], from: usize) -> Run {
    // SAFETY: the caller's contract; every CPU with AVX-512F has AVX2.
    unsafe { generic::find_special::<32, Avx2>(input, from) }
}

/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx512f,avx512bw,bmi1,bmi2")]
pub(in super::super) unsafe fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: the caller's contract.
    unsafe { generic::copy_runs::<64, Avx512, S>(input, from, out, special) }
}
