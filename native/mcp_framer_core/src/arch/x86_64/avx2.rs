//! AVX2: 32 bytes at a time, on a CPU that has it (and BMI1, BMI2 and
//! POPCNT, which every AVX2 CPU has, for the bit counts and masks), and a
//! block's one-byte escapes decoded all at once.

use super::super::generic::{self, Room, Took, Writer};
use super::super::{Block, Copied, Masks, Run, Scan, Special, Stops, ESCAPE_BLOCK, JSON_LETTERS};
use super::sse2;
use std::arch::x86_64::{
    __m256i, _mm256_and_si256, _mm256_blendv_epi8, _mm256_broadcastsi128_si256,
    _mm256_castsi256_si128, _mm256_cmpeq_epi8, _mm256_extracti128_si256, _mm256_loadu_si256,
    _mm256_max_epu8, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi32, _mm256_set1_epi64x,
    _mm256_set1_epi8, _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8,
    _mm256_srli_epi16, _mm256_storeu_si256, _mm_add_epi8, _mm_loadl_epi64, _mm_loadu_si128,
    _mm_set1_epi8, _mm_shuffle_epi8, _mm_storeu_si128, _mm_unpackhi_epi64, _mm_unpacklo_epi64,
};

pub(in super::super) fn detected() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("bmi2")
        && is_x86_feature_detected!("popcnt")
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
/// The CPU has AVX2, BMI1, BMI2 and POPCNT ([`detected`]).
#[target_feature(enable = "avx2,bmi1,bmi2")]
pub(in super::super) unsafe fn find_special(input: &[u8], from: usize) -> Run {
    // SAFETY: the caller's contract.
    unsafe { generic::find_special::<32, Avx2>(input, from) }
}

/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx2,bmi1,bmi2")]
unsafe fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: the caller's contract.
    unsafe { generic::copy_runs::<32, Avx2, S>(input, from, out, special) }
}

/// [`copy_runs`], with a block's escapes of one byte decoded all at once,
/// as `avx512::copy_runs_compressed` decodes them, in blocks of 32: the
/// letters after their `\` looked up in [`Special::SIMPLE`] by a shuffle
/// for each 16 of its entries that are not all 0, and the `\` squeezed out
/// of each 8 bytes by a shuffle from [`LEFT_PACK`]. A block ends early
/// where `avx512::copy_runs_compressed`'s does, and at a `\u` escape too,
/// which the `Special` decodes with any that follow it right away; the
/// last block, of under 32 bytes, goes to [`copy_runs`].
///
/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(in super::super) unsafe fn copy_runs_compressed<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: the caller's contract. Each load reads 32 bytes of a block
    // of `input`, 16 of the table or 8 of `LEFT_PACK`; each store writes
    // into the room the writer just made, at most 40 bytes past its
    // length, and counts only the bytes it kept.
    unsafe {
        let tables: [__m256i; 8] = std::array::from_fn(|part| {
            _mm256_broadcastsi128_si256(_mm_loadu_si128(S::SIMPLE[16 * part..].as_ptr().cast()))
        });
        let block = |block: &[u8; 32], at, state: &mut S, writer: &mut Writer| {
            let bytes = _mm256_loadu_si256(block.as_ptr().cast());
            let mask = |v: __m256i| u64::from(_mm256_movemask_epi8(v) as u32);
            let backslash = mask(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'\\' as i8)));
            let quote = mask(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'"' as i8)));
            let limit = _mm256_set1_epi8(0x1F);
            let control = mask(_mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit));
            let above = mask(bytes);
            let room = writer.room(40);
            if backslash | quote | control == 0 {
                _mm256_storeu_si256(room.at(0, 32).cast(), bytes);
                writer.count(32);
                return Took {
                    length: 32,
                    high: above,
                };
            }
            let escapers = generic::escapers(backslash);
            let escaped = escapers << 1;
            let letters = letters::<S>(bytes, &tables);
            let known = !mask(_mm256_cmpeq_epi8(letters, _mm256_setzero_si256())) & !above;
            let stops = (quote | control) & !escaped
                | (escaped & !known) >> 1
                | generic::last_run_start::<32>(backslash)
                | 1 << 32;
            let length = generic::run_length(state, at, escapers, 0, 0, stops);
            let keep = (1 << length) - 1;
            let kept = keep & !escapers;
            let decoded = _mm256_blendv_epi8(bytes, letters, bytes_of(escaped as u32));
            let halves = [
                _mm256_castsi256_si128(decoded),
                _mm256_extracti128_si256::<1>(decoded),
            ];
            let mut written = 0;
            for (eighth, half) in [0, 0, 1, 1].into_iter().enumerate() {
                let bits = (kept >> (8 * eighth)) as u8;
                let mut order = _mm_loadl_epi64(LEFT_PACK[usize::from(bits)].as_ptr().cast());
                if eighth % 2 == 1 {
                    order = _mm_add_epi8(order, _mm_set1_epi8(8));
                }
                let packed = _mm_shuffle_epi8(halves[half], order);
                _mm_storeu_si128(room.at(written, 16).cast(), packed);
                written += bits.count_ones() as usize;
            }
            writer.count(written);
            Took {
                length: length as usize,
                high: above & keep,
            }
        };
        let rest =
            |input: &[u8], at, out: &mut Vec<u8>, state: &mut S| copy_runs(input, at, out, state);
        generic::copy_blocks(input, from, out, special, true, block, rest)
    }
}

/// `S::SIMPLE[byte]` for each byte of `bytes`, 0 for a byte of 0x80 or
/// above, where `tables` holds each 16 entries of the table in both lanes:
/// each 16 by a shuffle on the low nibble, kept where the high nibble
/// picks them. 16 entries that are all 0 are skipped, as the compiler
/// knows them: JSON's letters lie in 4 of the 8.
#[inline(always)]
unsafe fn letters<S: Special>(bytes: __m256i, tables: &[__m256i; 8]) -> __m256i {
    let used = const { used_sixteens(&S::SIMPLE) };
    // SAFETY: the caller's contract: the CPU has AVX2.
    unsafe {
        let high = _mm256_and_si256(_mm256_srli_epi16::<4>(bytes), _mm256_set1_epi8(0x0F));
        let mut letters = _mm256_setzero_si256();
        // Unrolled by hand, so that each test of `used` is a constant.
        let mut add = |part: usize| {
            if used & 1 << part != 0 {
                // A byte with its top bit set shuffles to 0.
                let found = _mm256_shuffle_epi8(tables[part], bytes);
                let here = _mm256_cmpeq_epi8(high, _mm256_set1_epi8(part as i8));
                letters = _mm256_or_si256(letters, _mm256_and_si256(found, here));
            }
        };
        add(0);
        add(1);
        add(2);
        add(3);
        add(4);
        add(5);
        add(6);
        add(7);
        letters
    }
}

/// A bit for each 16 entries of `table` that are not all 0.
const fn used_sixteens(table: &[u8; 128]) -> u8 {
    let (mut used, mut entry) = (0, 0);
    while entry < 128 {
        if table[entry] != 0 {
            used |= 1 << (entry / 16);
        }
        entry += 1;
    }
    used
}

/// The bits of `mask` as bytes: 0xFF where bit `i` is set, for byte `i`.
#[inline(always)]
unsafe fn bytes_of(mask: u32) -> __m256i {
    // SAFETY: the caller's contract: the CPU has AVX2.
    unsafe {
        // Byte `i` of each lane gets the byte of `mask` that holds its bit,
        // then keeps that bit alone.
        let spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(mask as i32),
            _mm256_setr_epi8(
                0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3,
                3, 3, 3, 3,
            ),
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit)
    }
}

/// For each 8 bits, the positions of its set bits, lowest first, then
/// 0x80, which a shuffle turns into 0: the order that packs the bytes an
/// 8-bit mask keeps.
static LEFT_PACK: [[u8; 8]; 256] = {
    let mut table = [[0x80; 8]; 256];
    let mut bits = 0;
    while bits < 256 {
        let (mut bit, mut kept) = (0, 0);
        while bit < 8 {
            if bits & (1 << bit) != 0 {
                table[bits][kept] = bit as u8;
                kept += 1;
            }
            bit += 1;
        }
        bits += 1;
    }
    table
};

/// [`super::super::escape_blocks`]: a block's escapes found by compares,
/// the letters of its control bytes looked up by a shuffle of their low
/// nibble (a control byte of 0x10 and above has none), and each 8 of its
/// bytes, each escaped one replaced by its letter, spread over 16 by a
/// shuffle from [`EXPAND`] that puts a `\` before each escaped one.
///
/// # Safety
/// As for [`find_special`].
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(in super::super) unsafe fn escape_blocks(text: &[u8], from: usize, out: &mut Vec<u8>) -> usize {
    // SAFETY: the caller's contract. Each load reads the 32 bytes of a
    // block of `text` or 16 of a table; each store writes 16 bytes into
    // the 64 of room `generic::escape_blocks` gives it, the last starting
    // at most 48 bytes on, and counts only the block's bytes and their `\`.
    unsafe {
        // The letters of the bytes below 0x10: the first 16 of the table.
        let letters = _mm256_broadcastsi128_si256(_mm_loadu_si128(JSON_LETTERS.as_ptr().cast()));
        let block = |block: &[u8; ESCAPE_BLOCK], room: Room| {
            let bytes = _mm256_loadu_si256(block.as_ptr().cast());
            // Unsigned: a byte is below N when its maximum with N - 1 is N - 1.
            let below = |n: i8| {
                let limit = _mm256_set1_epi8(n - 1);
                _mm256_cmpeq_epi8(_mm256_max_epu8(bytes, limit), limit)
            };
            let control = below(0x20);
            let lettered = _mm256_and_si256(below(0x10), _mm256_shuffle_epi8(letters, bytes));
            let named = _mm256_cmpeq_epi8(lettered, _mm256_setzero_si256());
            let mask = |v: __m256i| _mm256_movemask_epi8(v) as u32;
            if mask(control) & mask(named) != 0 {
                return None;
            }
            let quote = _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'"' as i8));
            let backslash = _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(b'\\' as i8));
            let escaped = mask(_mm256_or_si256(_mm256_or_si256(quote, backslash), control));
            let kept = _mm256_blendv_epi8(bytes, lettered, control);
            let (low, high) = (
                _mm256_castsi256_si128(kept),
                _mm256_extracti128_si256::<1>(kept),
            );
            let backslashes = _mm_set1_epi8(b'\\' as i8);
            let eighths = [
                _mm_unpacklo_epi64(low, backslashes),
                _mm_unpackhi_epi64(low, backslashes),
                _mm_unpacklo_epi64(high, backslashes),
                _mm_unpackhi_epi64(high, backslashes),
            ];
            let mut written = 0;
            for (eighth, bytes) in eighths.into_iter().enumerate() {
                let bits = (escaped >> (8 * eighth)) as u8;
                let order = _mm_loadu_si128(EXPAND[usize::from(bits)].as_ptr().cast());
                let spread = _mm_shuffle_epi8(bytes, order);
                _mm_storeu_si128(room.at(written, 16).cast(), spread);
                written += 8 + bits.count_ones() as usize;
            }
            Some(written)
        };
        generic::escape_blocks(text, from, out, block)
    }
}

/// For each set of escaped bytes among 8, the shuffle order that spreads
/// the 8 over 16, a `\` (index 8, where [`escape_blocks`] keeps them)
/// before each escaped one; the bytes past those are `\` too.
static EXPAND: [[u8; 16]; 256] = {
    let mut table = [[8; 16]; 256];
    let mut bits = 0;
    while bits < 256 {
        let (mut bit, mut at) = (0, 0);
        while bit < 8 {
            if bits & (1 << bit) != 0 {
                at += 1;
            }
            table[bits][at] = bit as u8;
            at += 1;
            bit += 1;
        }
        bits += 1;
    }
    table
};

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
