//! The portable twin: the same answers from 64-bit words (SWAR), built on
//! every target. It is what targets other than x86-64 run, and what the
//! tests and fuzz targets hold every instruction set to.

use super::{generic, Block, Copied, Masks, Run, Special};

const ONES: u64 = u64::from_le_bytes([1; 8]);
/// The high bit of every byte of a word.
const HIGHS: u64 = ONES << 7;

/// Sixteen bytes as two words.
struct Swar;

impl Block<16> for Swar {
    #[inline(always)]
    unsafe fn classify(bytes: &[u8; 16]) -> Masks {
        classify_lane(bytes)
    }
}

#[inline(always)]
pub fn classify_lane(lane: &[u8; 16]) -> Masks {
    let (low, high) = lane.split_at(8);
    let low = word(low);
    let high = word(high);
    Masks {
        special: bits(special_bytes(low)) | bits(special_bytes(high)) << 8,
        high: bits(low & HIGHS) | bits(high & HIGHS) << 8,
    }
}

pub fn find_special(input: &[u8], from: usize) -> Run {
    // SAFETY: `Swar` uses no instructions beyond the target's own.
    unsafe { generic::find_special::<16, Swar>(input, from) }
}

pub fn copy_runs<S: Special>(
    input: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    special: &mut S,
) -> Copied {
    // SAFETY: as above.
    unsafe { generic::copy_runs::<16, Swar, S>(input, from, out, special) }
}

/// Bit `i` is set when `bytes[at + i]` is `\n`, for the up to 64 bytes
/// from `at`; the twin of the framer's newline search, one byte at a time.
pub fn newline_mask(bytes: &[u8], at: usize) -> u64 {
    let block = bytes.get(at..).unwrap_or_default().iter().take(64);
    block
        .enumerate()
        .fold(0, |mask, (i, &byte)| mask | u64::from(byte == b'\n') << i)
}

fn word(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// The high bit of every special byte of `word`, exactly: each byte is
/// tested on its own seven low bits, so no borrow crosses into the next.
#[inline(always)]
fn special_bytes(word: u64) -> u64 {
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
fn bits(highs: u64) -> u64 {
    // Each byte's bit 7 moves to bit 56 + i by the multiply; no two
    // partial products land on the same bit.
    ((highs >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}
