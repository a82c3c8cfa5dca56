//! The portable twin: the same answers from 64-bit words (SWAR), built on
//! every target. It is what targets other than x86-64 run, and what the
//! tests and fuzz targets hold every instruction set to.

use super::{generic, Block, Copied, Masks, Run, Scan, Special, Stops};

const ONES: u64 = u64::from_le_bytes([1; 8]);
/// The high bit of every byte of a word.
const HIGHS: u64 = ONES << 7;
/// The low seven bits of every byte of a word.
const LOWS: u64 = !HIGHS;

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

/// Eight bytes as one word.
struct Word;

impl Scan<8> for Word {
    const BITS: u32 = 8;

    #[inline(always)]
    unsafe fn stop_bits(bytes: &[u8; 8], stops: Stops) -> u64 {
        stop_bytes(u64::from_le_bytes(*bytes), stops)
    }

    /// The last word of a text of eight bytes or more overlaps the one
    /// before it, with the bytes already read shifted off; a shorter text
    /// is read into a word padded with spaces, at which no scan stops.
    #[inline(always)]
    unsafe fn find_in_rest(text: &[u8], at: usize, stops: Stops) -> usize {
        let length = text.len();
        if at >= length {
            return length;
        }
        let (start, word) = match text.last_chunk::<8>() {
            Some(word) => (length - 8, u64::from_le_bytes(*word)),
            None => (0, short_word(text)),
        };
        // `start <= at`: fewer than 8 bytes are left from `at`, and the
        // bytes before it were read already.
        match stop_bytes(word, stops) >> (8 * (at - start)) {
            0 => length,
            found => (at + found.trailing_zeros() as usize / 8).min(length),
        }
    }
}

pub fn find_stop(text: &[u8], from: usize, stops: Stops) -> usize {
    // SAFETY: `Word` uses no instructions beyond the target's own.
    unsafe { generic::find_stop::<8, Word>(text, from, stops) }
}

pub fn copy_to_stop(text: &[u8], from: usize, stops: Stops, out: &mut Vec<u8>) -> usize {
    // SAFETY: as above.
    unsafe { generic::copy_to_stop::<8, Word>(text, from, stops, out) }
}

/// The bytes of `text`, shorter than eight, as a word padded with spaces,
/// at which no scan stops. Read with overlapping loads rather than
/// copied: a copy into a word on the stack, read back at once, stalls.
#[inline(always)]
pub(crate) fn short_word(text: &[u8]) -> u64 {
    let length = text.len();
    let word = if let (Some(low), Some(high)) = (text.first_chunk::<4>(), text.last_chunk::<4>()) {
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

/// The high bit of every byte of `word` at which a scan for `stops`
/// stops, exactly: each byte is tested on its own seven low bits, so no
/// carry crosses into the next.
#[inline(always)]
fn stop_bytes(word: u64, stops: Stops) -> u64 {
    // Adding 0x7F to the low seven bits of a byte sets its high bit unless
    // they are 0; a byte is 0 when neither that nor its own high bit is set.
    let zero = |word: u64| !(((word & LOWS) + LOWS) | word) & HIGHS;
    let is = |byte: u8| zero(word ^ (ONES * u64::from(byte)));
    // A byte is below 0x20 when it is below 0x80 and its low seven bits
    // plus 0x60 stay below 0x80.
    let control = !(((word & LOWS) + ONES * 0x60) | word) & HIGHS;
    let extra = is(stops.extra[0]) | is(stops.extra[1]) | is(stops.extra[2]);
    let high = if stops.high { word & HIGHS } else { 0 };
    is(b'"') | is(b'\\') | control | extra | high
}

/// Gathers the high bit of each byte into bit `i` for byte `i`.
#[inline(always)]
fn bits(highs: u64) -> u64 {
    // Each byte's bit 7 moves to bit 56 + i by the multiply; no two
    // partial products land on the same bit.
    ((highs >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// [`super::escape_blocks`] a byte at a time: the definition the vector
/// loop is held to.
pub fn escape_blocks(text: &[u8], from: usize, out: &mut Vec<u8>) -> usize {
    let mut at = from;
    while let Some(block) = text.get(at..at + super::ESCAPE_BLOCK) {
        let letter = |byte: u8| super::JSON_LETTERS.get(usize::from(byte)).copied();
        let long = |byte: u8| byte < 0x20 && letter(byte) == Some(0);
        if out.capacity() - out.len() < super::ESCAPE_ROOM || block.iter().any(|&b| long(b)) {
            break;
        }
        for &byte in block {
            match letter(byte) {
                Some(letter) if letter != 0 => out.extend_from_slice(&[b'\\', letter]),
                _ => out.push(byte),
            }
        }
        at += super::ESCAPE_BLOCK;
    }
    at
}
