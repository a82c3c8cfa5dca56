//! AVX-512: strings with escapes 64 bytes at a time, compared straight
//! into mask registers, on a CPU that has AVX-512F and BW (and BMI1 and
//! BMI2), and with VBMI and VBMI2 too, a block's one-byte and `\u`
//! escapes decoded all at once; plain text with AVX2's blocks; and the
//! UTF-8 check, 64 bytes a step.

use super::super::generic::{self, Room, Took, Writer};
use super::super::{Block, Copied, Masks, Run, Special, ESCAPE_BLOCK, HEX_DIGITS, JSON_LETTERS};
use super::avx2::Avx2;
use std::arch::x86_64::{
    __m512i, _bzhi_u64, _mm512_add_epi8, _mm512_alignr_epi64, _mm512_alignr_epi8, _mm512_and_si512,
    _mm512_broadcast_i32x4, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512,
    _mm512_mask_blend_epi8, _mm512_mask_permutexvar_epi8, _mm512_maskz_compress_epi8,
    _mm512_maskz_loadu_epi8, _mm512_movepi8_mask, _mm512_or_si512, _mm512_permutex2var_epi8,
    _mm512_permutexvar_epi8, _mm512_set1_epi8, _mm512_setzero_si512, _mm512_shuffle_epi8,
    _mm512_slli_epi16, _mm512_srli_epi16, _mm512_storeu_si512, _mm512_subs_epu8,
    _mm512_test_epi8_mask, _mm512_xor_si512, _mm_loadu_si128,
};
use std::arch::x86_64::{
    _mm256_loadu_si256, _mm512_mask_expand_epi8, _mm512_zextsi256_si512, _pdep_u64, _pext_u64,
};

/// AVX-512F and BW, and all that [`super::avx2`] needs, whose blocks the
/// scans use.
pub(in super::super) fn detected() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && super::avx2::detected()
}

/// And AVX-512 VBMI and VBMI2, for [`copy_runs_compressed`].
pub(in super::super) fn vbmi2_detected() -> bool {
    is_x86_feature_detected!("avx512vbmi") && is_x86_feature_detected!("avx512vbmi2") && detected()
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

/// [`copy_runs`], with a block's escapes of one byte decoded all at once:
/// the letters after their `\` looked up in [`Special::SIMPLE`] by one
/// permute, and the `\` squeezed out by one compress, where [`copy_runs`]
/// decodes one escape at a time, each waiting on the one before; and,
/// where [`Special::UNICODE`], its `\u` escapes too ([`unicode_escapes`]).
/// A block ends early at a quote or a control byte that no `\` escapes,
/// at an escape the block does not decode (a lone surrogate, a `\u`
/// escape or pair that goes on into the next block, or an error), which
/// `special` is
/// asked about as in [`copy_runs`], and before a run of `\` that goes on
/// into the next block, or at the first escape that [`Special::simple`]
/// leaves to `special`. The last block, of under 64 bytes, goes to
/// [`copy_runs`].
///
/// # Safety
/// The CPU has AVX-512F, BW, VBMI and VBMI2, BMI1 and BMI2
/// ([`vbmi2_detected`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi1,bmi2,popcnt")]
pub(in super::super) unsafe fn copy_runs_compressed<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: the caller's contract. Each load reads the 64 bytes of a
    // block of `input` or of the table; each store writes 64 bytes into
    // the room the writer just made, and counts only the bytes it kept.
    unsafe {
        let letters_low = _mm512_loadu_si512(S::SIMPLE.as_ptr().cast());
        let letters_high = _mm512_loadu_si512(S::SIMPLE[64..].as_ptr().cast());
        let block = |block: &[u8; 64], at, state: &mut S, writer: &mut Writer| {
            let bytes = _mm512_loadu_si512(block.as_ptr().cast());
            let backslash = _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'\\' as i8));
            let quote = _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'"' as i8));
            let control = _mm512_cmplt_epu8_mask(bytes, _mm512_set1_epi8(0x20));
            let above = _mm512_movepi8_mask(bytes);
            let room = writer.room(64);
            if backslash | quote | control == 0 {
                _mm512_storeu_si512(room.at(0, 64).cast(), bytes);
                writer.count(64);
                return Took {
                    length: 64,
                    high: above,
                };
            }
            let escapers = generic::escapers(backslash);
            let escaped = escapers << 1;
            // The table has 128 entries: the permute reads a byte's low
            // seven bits, so a byte of 0x80 or above is no letter of it.
            let letters = _mm512_permutex2var_epi8(letters_low, bytes, letters_high);
            let known = _mm512_test_epi8_mask(letters, letters) & !above;
            let decoded = _mm512_mask_blend_epi8(escaped, bytes, letters);
            let unknown = escaped & !known;
            let u = if S::UNICODE && unknown != 0 {
                _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'u' as i8))
            } else {
                0
            };
            let unicode = match (unknown & u) >> 1 {
                0 => Unicode {
                    escapes: 0,
                    pairs: 0,
                    dropped: 0,
                    decoded,
                },
                escapes => unicode_escapes(bytes, escapes, decoded),
            };
            // A pair's second `\` is no escape of its own.
            let seconds = unicode.pairs << 6;
            let stops = (quote | control) & !escaped
                | unknown >> 1 & !(unicode.escapes | seconds)
                | generic::last_run_start::<64>(backslash);
            let length = generic::run_length(
                state,
                at,
                escapers & !seconds,
                unicode.escapes,
                unicode.pairs,
                stops,
            );
            let keep = _bzhi_u64(u64::MAX, length);
            let kept = keep & !escapers & !unicode.dropped;
            let decoded = _mm512_maskz_compress_epi8(kept, unicode.decoded);
            _mm512_storeu_si512(room.at(0, 64).cast(), decoded);
            writer.count(kept.count_ones() as usize);
            Took {
                length: length as usize,
                high: above & keep,
            }
        };
        let rest =
            |input: &[u8], at, out: &mut Vec<u8>, state: &mut S| copy_runs(input, at, out, state);
        generic::copy_blocks(input, from, out, special, false, block, rest)
    }
}

/// Where a permute takes each byte of a block from: `OFFSET[k][i]` is
/// `i + k - 4`, modulo 64, for k in 0 to 10 (four bytes back to six on).
static OFFSET: [[u8; 64]; 11] = {
    let mut offsets = [[0; 64]; 11];
    let mut k = 0;
    while k < 11 {
        let mut i = 0;
        while i < 64 {
            offsets[k][i] = ((i + 64 + k - 4) % 64) as u8;
            i += 1;
        }
        k += 1;
    }
    offsets
};

/// The `\u` escapes [`unicode_escapes`] decoded in a block, a bit for the
/// `\` of each, where a surrogate pair counts as one escape, its first;
/// those first `\` of the pairs; and the bits of their bytes left out of
/// `decoded`, whose others hold what they decode to.
struct Unicode {
    escapes: u64,
    pairs: u64,
    dropped: u64,
    decoded: __m512i,
}

/// The `\u` escapes of a block whose `\` are `escapes`, decoded all at
/// once where they are well formed and lie in the block: each one's four
/// digits, looked up by one permute, are brought under its `\` as the two
/// bytes of its code unit, from which the bytes of its UTF-8 are worked
/// out for all of them at once and written over its `u` and the bytes
/// after it, into `decoded`. A block with a surrogate among them goes to
/// [`surrogate_pairs`].
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI, and BMI2.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi2")]
#[inline]
unsafe fn unicode_escapes(bytes: __m512i, escapes: u64, decoded: __m512i) -> Unicode {
    let byte = |value: u8| _mm512_set1_epi8(value as i8);
    // SAFETY: each load reads 64 bytes of the table's first half.
    let [digits_low, digits_high] =
        [0, 64].map(|half| unsafe { _mm512_loadu_si512(HEX_DIGITS[half..].as_ptr().cast()) });
    let digits = _mm512_permutex2var_epi8(digits_low, bytes, digits_high);
    let not_digits = _mm512_movepi8_mask(_mm512_or_si512(digits, bytes));
    let digits = _mm512_and_si512(digits, byte(0x0F));
    // Each byte with the digit after it: the code unit's two bytes are
    // two and four on from its `\`.
    let two_digits = _mm512_or_si512(_mm512_slli_epi16(digits, 4), moved(1, digits));
    let units = CodeUnits {
        high: moved(2, two_digits),
        low: moved(4, two_digits),
    };
    let ill_formed = not_digits >> 2 | not_digits >> 3 | not_digits >> 4 | not_digits >> 5;
    let past_block = !_bzhi_u64(u64::MAX, 59);
    let escapes = escapes & !(ill_formed | past_block);
    let top = _mm512_and_si512(units.high, byte(0xF8));
    let surrogates = escapes & _mm512_cmpeq_epi8_mask(top, byte(0xD8));
    if surrogates != 0 {
        // SAFETY: the CPU has what this function needs.
        return unsafe { surrogate_pairs(decoded, escapes, surrogates, units) };
    }
    let (decoded, written) = utf8(decoded, escapes, units);
    Unicode {
        escapes,
        pairs: 0,
        dropped: spans(escapes) & !written,
        decoded,
    }
}

/// The two bytes of the code unit of each `\u` escape of a block, under
/// its `\`.
#[derive(Clone, Copy)]
struct CodeUnits {
    high: __m512i,
    low: __m512i,
}

/// [`unicode_escapes`], out of the loop's way, for a block with surrogates
/// among its `escapes`: a high surrogate with a low one right after it
/// decodes with it, as a pair, to the four bytes of the UTF-8 of their
/// code point, written over its first `u` and the three bytes after it;
/// other surrogates are left out.
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline(never)]
#[cold]
unsafe fn surrogate_pairs(
    decoded: __m512i,
    escapes: u64,
    surrogates: u64,
    units: CodeUnits,
) -> Unicode {
    let byte = |value: u8| _mm512_set1_epi8(value as i8);
    let bits = |value, mask| _mm512_and_si512(value, byte(mask));
    let or3 = |a, b, c| _mm512_or_si512(_mm512_or_si512(a, b), c);
    let CodeUnits { high, low } = units;
    let top = _mm512_and_si512(high, byte(0xFC));
    let firsts = surrogates & _mm512_cmpeq_epi8_mask(top, byte(0xD8));
    let pairs = firsts & (surrogates & !firsts) >> 6;
    let others = escapes & !surrogates;
    let (decoded, written) = utf8(decoded, others, units);
    // The second code unit's bytes, six on. The code point is 0x10000 plus
    // ten bits of each unit: its top five bits, the plane, are one more
    // than the first unit's top four of those ten.
    let (second_high, second_low) = (moved(6, high), moved(6, low));
    let plane = _mm512_add_epi8(
        _mm512_or_si512(
            _mm512_slli_epi16(bits(high, 0x03), 2),
            bits(_mm512_srli_epi16(low, 6), 0x03),
        ),
        byte(1),
    );
    let first = _mm512_or_si512(bits(_mm512_srli_epi16(plane, 2), 0x07), byte(0xF0));
    let second = or3(
        _mm512_slli_epi16(bits(plane, 0x03), 4),
        bits(_mm512_srli_epi16(low, 2), 0x0F),
        byte(0x80),
    );
    let third = or3(
        _mm512_slli_epi16(bits(low, 0x03), 4),
        _mm512_slli_epi16(bits(second_high, 0x03), 2),
        _mm512_or_si512(bits(_mm512_srli_epi16(second_low, 6), 0x03), byte(0x80)),
    );
    let last = _mm512_or_si512(bits(second_low, 0x3F), byte(0x80));
    let decoded = place(decoded, 1, pairs, first);
    let decoded = place(decoded, 2, pairs, second);
    let decoded = place(decoded, 3, pairs, third);
    let decoded = place(decoded, 4, pairs, last);
    // The four bytes each pair wrote, one to four after its first `\`.
    let written = written | pairs.wrapping_mul(0x1E);
    Unicode {
        escapes: others | pairs,
        pairs,
        dropped: spans(others | pairs | pairs << 6) & !written,
        decoded,
    }
}

/// `decoded` with the UTF-8 of each of `escapes`, none a surrogate,
/// written over its `u` and up to two bytes after it, and the bits of the
/// bytes written.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn utf8(decoded: __m512i, escapes: u64, units: CodeUnits) -> (__m512i, u64) {
    let byte = |value: u8| _mm512_set1_epi8(value as i8);
    let CodeUnits { high, low } = units;
    let one = escapes & _mm512_cmpeq_epi8_mask(high, byte(0)) & !_mm512_movepi8_mask(low);
    let two = escapes & _mm512_cmplt_epu8_mask(high, byte(0x08)) & !one;
    let three = escapes & !one & !two;
    // The bits of the code unit, in UTF-8's pieces; a 16-bit shift moves
    // bits across bytes, which the masks clear.
    let low_top = _mm512_and_si512(_mm512_srli_epi16(low, 6), byte(0x03));
    let last = _mm512_or_si512(_mm512_and_si512(low, byte(0x3F)), byte(0x80));
    let two_first = _mm512_or_si512(
        _mm512_or_si512(
            _mm512_and_si512(_mm512_slli_epi16(high, 2), byte(0xFC)),
            low_top,
        ),
        byte(0xC0),
    );
    let three_first = _mm512_or_si512(
        _mm512_and_si512(_mm512_srli_epi16(high, 4), byte(0x0F)),
        byte(0xE0),
    );
    let three_second = _mm512_or_si512(
        _mm512_or_si512(
            _mm512_slli_epi16(_mm512_and_si512(high, byte(0x0F)), 2),
            low_top,
        ),
        byte(0x80),
    );
    let first = _mm512_mask_blend_epi8(
        two,
        _mm512_mask_blend_epi8(three, low, three_first),
        two_first,
    );
    let second = _mm512_mask_blend_epi8(two, three_second, last);
    // Brought to one, two and three bytes after the `\`.
    let decoded = place(decoded, 1, escapes, first);
    let decoded = place(decoded, 2, two | three, second);
    let decoded = place(decoded, 3, three, last);
    (decoded, escapes << 1 | (two | three) << 2 | three << 3)
}

/// The bits of the six bytes of each escape of `escapes`, which lie six
/// bytes apart or more: the product carries nowhere.
#[inline]
fn spans(escapes: u64) -> u64 {
    escapes.wrapping_mul(0x3F)
}

/// The indices of a permute that takes each byte from the one `by` places
/// on (`-by` back), for `by` from -4 to 6: a row of [`OFFSET`].
#[target_feature(enable = "avx512f")]
#[inline]
fn offsets(by: isize) -> __m512i {
    // SAFETY: the load reads one row of the table.
    unsafe { _mm512_loadu_si512(OFFSET[(by + 4) as usize].as_ptr().cast()) }
}

/// `from` with each byte taken from the one `by` places on.
#[target_feature(enable = "avx512f,avx512vbmi")]
#[inline]
fn moved(by: isize, from: __m512i) -> __m512i {
    _mm512_permutexvar_epi8(offsets(by), from)
}

/// `decoded`, with `value`'s byte under each `\` of `escapes` written
/// `after` bytes after it.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn place(decoded: __m512i, after: u32, escapes: u64, value: __m512i) -> __m512i {
    let from = offsets(-(after as isize));
    _mm512_mask_permutexvar_epi8(decoded, escapes << after, from, value)
}

/// [`super::super::escape_blocks`]: a block's escapes found by three
/// compares, their letters looked up in [`JSON_LETTERS`] by a permute,
/// and the block's bytes, each escaped one replaced by its letter, placed
/// around a `\` before each of those by an expand. Where they go comes
/// from two slots a byte, the `\` it may need and then itself: `pext`
/// squeezes out the slots of the `\` that are not needed, and what is
/// left of the odd ones marks the output's bytes that are the block's.
///
/// # Safety
/// As for [`copy_runs_compressed`].
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi1,bmi2,popcnt")]
pub(in super::super) unsafe fn escape_blocks(text: &[u8], from: usize, out: &mut Vec<u8>) -> usize {
    const BYTE_SLOTS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    const BACKSLASH_SLOTS: u64 = 0x5555_5555_5555_5555;
    const BLOCK: u64 = (1 << ESCAPE_BLOCK) - 1;
    // SAFETY: the caller's contract. Each load reads the 32 bytes of a
    // block of `text` or the 64 of a half of the table; each store writes
    // 64 bytes, the room `generic::escape_blocks` gives it, and counts only
    // the block's bytes and their `\`.
    unsafe {
        let letters_low = _mm512_loadu_si512(JSON_LETTERS.as_ptr().cast());
        let letters_high = _mm512_loadu_si512(JSON_LETTERS[64..].as_ptr().cast());
        let block = |block: &[u8; ESCAPE_BLOCK], room: Room| {
            let bytes = _mm512_zextsi256_si512(_mm256_loadu_si256(block.as_ptr().cast()));
            // The table has 128 entries: the permute reads a byte's low
            // seven bits, so only the bytes found escaped take a letter.
            let letters = _mm512_permutex2var_epi8(letters_low, bytes, letters_high);
            let control = _mm512_cmplt_epu8_mask(bytes, _mm512_set1_epi8(0x20)) & BLOCK;
            if control & !_mm512_test_epi8_mask(letters, letters) != 0 {
                return None;
            }
            let escaped = control
                | _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'"' as i8))
                | _mm512_cmpeq_epi8_mask(bytes, _mm512_set1_epi8(b'\\' as i8));
            let slots = BYTE_SLOTS | _pdep_u64(escaped, BACKSLASH_SLOTS);
            let placed = _pext_u64(BYTE_SLOTS, slots);
            let kept = _mm512_mask_blend_epi8(escaped, bytes, letters);
            let written = _mm512_mask_expand_epi8(_mm512_set1_epi8(b'\\' as i8), placed, kept);
            _mm512_storeu_si512(room.at(0, 64).cast(), written);
            Some(ESCAPE_BLOCK + escaped.count_ones() as usize)
        };
        generic::escape_blocks(text, from, out, block)
    }
}

/// Whether `bytes` is UTF-8, as `std::str::from_utf8` says, 64 bytes a
/// step, every block looked at the same way: a branch on whether a block
/// is ASCII, which text of mixed scripts makes unpredictable, cost more
/// than the check it saves. This is the lookup method of Keiser and
/// Lemire ("Validating UTF-8 in less than one instruction per byte",
/// 2021): each byte's high nibble, and the high and low nibbles of the byte
/// before it, index three tables of the errors each can take part in, and
/// a byte is wrong where all three agree on one, or where it is or is not
/// a continuation byte that the lead byte two or three back calls for.
///
/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx512f,avx512bw,bmi1,bmi2")]
pub(in super::super) unsafe fn is_utf8(bytes: &[u8]) -> bool {
    // SAFETY: the caller's contract; every load reads bytes of `bytes`:
    // a whole block of 64, or the rest of under 64 by a masked load, which
    // neither reads nor faults on the bytes it leaves out.
    unsafe {
        let [first_high, first_low, second_high] =
            UTF8_TABLES.map(|table| _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast())));
        let nibble = _mm512_set1_epi8(0x0F);
        let mut previous = _mm512_setzero_si512();
        let mut errors = _mm512_setzero_si512();
        let mut at = 0;
        loop {
            let block = match bytes.get(at..).and_then(|rest| rest.first_chunk::<64>()) {
                Some(block) => _mm512_loadu_si512(block.as_ptr().cast()),
                None => {
                    let rest = bytes.get(at..).unwrap_or_default();
                    let mask = _bzhi_u64(u64::MAX, rest.len().min(63) as u32);
                    _mm512_maskz_loadu_epi8(mask, rest.as_ptr().cast())
                }
            };
            // The bytes one, two and three places back, across the blocks:
            // the previous block's last 16 bytes, then all but this
            // block's last 16, shifted in by lanes of 16.
            let behind = _mm512_alignr_epi64::<6>(block, previous);
            let back1 = _mm512_alignr_epi8::<15>(block, behind);
            let back2 = _mm512_alignr_epi8::<14>(block, behind);
            let back3 = _mm512_alignr_epi8::<13>(block, behind);
            let high = |v: __m512i| _mm512_and_si512(_mm512_srli_epi16::<4>(v), nibble);
            let found = _mm512_and_si512(
                _mm512_and_si512(
                    _mm512_shuffle_epi8(first_high, high(back1)),
                    _mm512_shuffle_epi8(first_low, _mm512_and_si512(back1, nibble)),
                ),
                _mm512_shuffle_epi8(second_high, high(block)),
            );
            // 0x80 where the byte three back starts four bytes, or the one
            // two back three: this byte must continue it.
            let third = _mm512_subs_epu8(back2, _mm512_set1_epi8(0xE0u8.wrapping_sub(0x80) as i8));
            let fourth = _mm512_subs_epu8(back3, _mm512_set1_epi8(0xF0u8.wrapping_sub(0x80) as i8));
            let must_continue = _mm512_and_si512(
                _mm512_or_si512(third, fourth),
                _mm512_set1_epi8(0x80u8 as i8),
            );
            errors = _mm512_or_si512(errors, _mm512_xor_si512(must_continue, found));
            previous = block;
            // The last block is one of under 64 bytes, padded with zeros,
            // or of none: a character cut off at the end is an error at the
            // zero after it.
            if at + 64 > bytes.len() {
                break;
            }
            at += 64;
        }
        _mm512_test_epi8_mask(errors, errors) == 0
    }
}

/// The errors of Keiser and Lemire's tables, one bit each; two share bit
/// 6, told apart by the byte's own nibble.
const TOO_SHORT: u8 = 1 << 0;
const TOO_LONG: u8 = 1 << 1;
const OVERLONG_3: u8 = 1 << 2;
const TOO_LARGE: u8 = 1 << 3;
const SURROGATE: u8 = 1 << 4;
const OVERLONG_2: u8 = 1 << 5;
const TOO_LARGE_1000: u8 = 1 << 6;
const OVERLONG_4: u8 = 1 << 6;
const TWO_CONTINUATIONS: u8 = 1 << 7;
/// The errors the byte before's low nibble leaves to the others.
const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTINUATIONS;
const LARGE: u8 = CARRY | TOO_LARGE | TOO_LARGE_1000;

/// By the byte before's high nibble, its low nibble, and the byte's own
/// high nibble: the errors each allows.
const UTF8_TABLES: [[u8; 16]; 3] = [
    [
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTINUATIONS,
        TWO_CONTINUATIONS,
        TWO_CONTINUATIONS,
        TWO_CONTINUATIONS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
    ],
    [
        CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
        CARRY | OVERLONG_2,
        CARRY,
        CARRY,
        CARRY | TOO_LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE,
        LARGE | SURROGATE,
        LARGE,
        LARGE,
    ],
    [
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTINUATIONS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTINUATIONS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTINUATIONS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTINUATIONS | SURROGATE | TOO_LARGE,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
    ],
];
