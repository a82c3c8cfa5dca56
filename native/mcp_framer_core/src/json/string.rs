//! Strings: the fast path borrows text without escapes from the input; text
//! with escapes is decoded into the cursor's scratch buffer.

use super::{Cursor, Error, Syntax, Text};

impl<'de> Cursor<'de, '_> {
    /// The string whose opening quote is just behind the cursor.
    pub(super) fn string(&mut self) -> Result<Text<'de, '_>, Syntax> {
        let input = self.input;
        let start = self.position;
        let Run { stop, ascii } = find_special(input, start);
        if input.get(stop) == Some(&b'"') {
            let text = utf8(input, start, stop, ascii)?;
            self.position = stop + 1;
            return Ok(Text::Input(text));
        }
        self.scratch.clear();
        let mut run = start;
        let mut stop = stop;
        let mut all_ascii = ascii;
        // Each turn: the unescaped run `run..stop`, then the byte at `stop`.
        // The runs are checked for UTF-8 once, all together, at the end:
        // they end at ASCII bytes and escapes decode to whole characters, so
        // the text is valid exactly when every run is.
        loop {
            let unescaped = input.get(run..stop).unwrap_or_default();
            self.scratch.extend_from_slice(unescaped);
            let failed = match input.get(stop) {
                Some(b'"') => break,
                Some(b'\\') => match self.escape(stop) {
                    Ok(next) => {
                        run = next;
                        None
                    }
                    Err(error) => Some(error),
                },
                // A control byte.
                Some(_) => Some(Error::at(stop, input)),
                None => Some(Error::at(stop, input)),
            };
            if let Some(error) = failed {
                // An earlier byte that is not UTF-8 is reported first.
                return Err(bad_utf8(input, start, stop).unwrap_or(error));
            }
            // Where a ration is asked for more: the parse has got this far.
            self.position = run;
            self.burn(2 * (run - stop))?;
            let next = find_special(input, run);
            stop = next.stop;
            all_ascii &= next.ascii;
            self.burn((stop - run) / 8)?;
        }
        self.position = stop + 1;
        if all_ascii {
            // SAFETY: every run was ASCII, and escapes decode to UTF-8.
            return Ok(Text::Unescaped(unsafe {
                std::str::from_utf8_unchecked(&self.scratch)
            }));
        }
        match simdutf8::basic::from_utf8(&self.scratch) {
            Ok(text) => Ok(Text::Unescaped(text)),
            Err(_) => Err(bad_utf8(input, start, stop).unwrap_or(Error::at(stop, input))),
        }
    }

    /// Decodes the escape whose `\` is at `at` onto the scratch buffer;
    /// returns the position after it.
    fn escape(&mut self, at: usize) -> Result<usize, Syntax> {
        let decoded = match self.input.get(at + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(at),
            Some(_) => return Err(Error::at(at + 1, self.input)),
            // Jason reports a string cut off after `\` at the `\`.
            None => return Err(Error::at(at, self.input)),
        };
        self.scratch.push(decoded as u8);
        Ok(at + 2)
    }

    /// `\uXXXX` at `at`, or a surrogate pair `\uD8XX\uDCXX`.
    fn unicode_escape(&mut self, at: usize) -> Result<usize, Syntax> {
        let input = self.input;
        // Jason needs four bytes after `\u` before it looks at any of them.
        let Some(code) = input.get(at + 2..at + 6) else {
            return Err(Error::at(at, input));
        };
        let code = hex4(code).ok_or(Error::token(at, 6))?;
        let scalar = match code {
            0xD800..=0xDBFF => {
                let low_at = at + 6;
                let low = match input.get(low_at..low_at + 6) {
                    Some([b'\\', b'u', digits @ ..]) => digits,
                    _ => return Err(Error::at(low_at, input)),
                };
                // Jason checks the last two digits first, blaming the low
                // escape alone, then the first two, blaming the pair.
                if low.get(2..).and_then(hex2).is_none() {
                    return Err(Error::token(low_at, 6));
                }
                let low = match hex4(low) {
                    Some(low @ 0xDC00..=0xDFFF) => low,
                    _ => return Err(Error::token(at, 12)),
                };
                let scalar = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                self.push_scalar(scalar, at, 12)?;
                return Ok(at + 12);
            }
            // A low surrogate with no high one before it.
            0xDC00..=0xDFFF => return Err(Error::token(at, 6)),
            code => code,
        };
        self.push_scalar(scalar, at, 6)?;
        Ok(at + 6)
    }

    fn push_scalar(&mut self, scalar: u32, at: usize, length: usize) -> Result<(), Syntax> {
        let decoded = char::from_u32(scalar).ok_or(Error::token(at, length))?;
        let mut utf8 = [0; 4];
        self.scratch
            .extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
        Ok(())
    }
}

/// The first byte that is not UTF-8 in the unescaped runs of the string
/// text `input[start..end]`, whose escapes are known to be well formed.
#[cold]
fn bad_utf8(input: &[u8], start: usize, end: usize) -> Option<Syntax> {
    let mut run = start;
    while run < end {
        let stop = find_special(input, run).stop.min(end);
        if let Err(error) = utf8(input, run, stop, false) {
            return Some(error);
        }
        // Skip the escape: `\uXXXX`, or `\` and one letter.
        let escape = if input.get(stop + 1) == Some(&b'u') {
            6
        } else {
            2
        };
        run = stop + escape;
    }
    None
}

/// `input[start..end]` as text; invalid UTF-8 is reported at its first bad
/// byte, as Jason does. Bytes the scan found to be ASCII are not checked again.
#[inline]
fn utf8(input: &[u8], start: usize, end: usize, ascii: bool) -> Result<&str, Syntax> {
    let bytes = input.get(start..end).unwrap_or_default();
    if ascii {
        debug_assert!(bytes.is_ascii());
        // SAFETY: `find_special` saw no byte of 0x80 or above in the run,
        // and ASCII is UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Ok(text),
        // The slower check says where the first bad byte is.
        Err(_) => std::str::from_utf8(bytes).map_err(|e| Error::at(start + e.valid_up_to(), input)),
    }
}

fn hex_digit(byte: u8) -> Option<u32> {
    char::from(byte).to_digit(16)
}

fn hex2(digits: &[u8]) -> Option<u32> {
    match digits {
        [a, b, ..] => Some((hex_digit(*a)? << 4) | hex_digit(*b)?),
        _ => None,
    }
}

fn hex4(digits: &[u8]) -> Option<u32> {
    Some((hex2(digits)? << 8) | hex2(digits.get(2..)?)?)
}

const ONES: u64 = u64::from_le_bytes([1; 8]);
const HIGHS: u64 = ONES << 7;

/// Where the fast scan of a string stopped, and whether every byte before
/// that was ASCII.
struct Run {
    stop: usize,
    ascii: bool,
}

/// The first position from `from` holding `"`, `\` or a byte below 0x20:
/// where the fast scan of a string must stop. `input.len()` if none.
#[inline(always)]
fn find_special(input: &[u8], from: usize) -> Run {
    let mut at = from;
    let mut high = false;
    // Sixteen bytes per step where SSE2 is sure to be there.
    #[cfg(target_arch = "x86_64")]
    while let Some(lane) = input.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
        let (special, non_ascii) = lane_special(lane);
        if special != 0 {
            let before = special & special.wrapping_neg();
            return Run {
                stop: at + special.trailing_zeros() as usize,
                ascii: !high && non_ascii & (before - 1) == 0,
            };
        }
        high |= non_ascii != 0;
        at += 16;
    }
    // Eight bytes per step, tested all at once (SWAR).
    while let Some(word) = input.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
        let word = u64::from_le_bytes(*word);
        let mask = special_bytes(word);
        if mask != 0 {
            let before = (mask & mask.wrapping_neg()) - 1;
            return Run {
                stop: at + (mask.trailing_zeros() / 8) as usize,
                ascii: !high && word & HIGHS & before == 0,
            };
        }
        high |= word & HIGHS != 0;
        at += 8;
    }
    while let Some(&byte) = input.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        high |= byte >= 0x80;
        at += 1;
    }
    Run {
        stop: at,
        ascii: !high,
    }
}

/// Bit `i` of the first mask is set if `lane[i]` is special, of the second
/// if it is 0x80 or above.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lane_special(lane: &[u8; 16]) -> (u32, u32) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 CPU; the load reads the 16 bytes
    // of `lane`, unaligned.
    unsafe {
        let bytes = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        // Unsigned: a byte is below 0x20 when its maximum with 0x1F is 0x1F.
        let limit = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(bytes, limit), limit);
        let special = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        (
            _mm_movemask_epi8(special) as u32,
            _mm_movemask_epi8(bytes) as u32,
        )
    }
}

/// A mask whose lowest set bit is the high bit of the first special byte in
/// `word` (little-endian). Bits above that one may be false alarms, caused by
/// the borrow out of a real match, so only the lowest is used.
#[inline(always)]
fn special_bytes(word: u64) -> u64 {
    let quote = zero_bytes(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_bytes(word ^ (ONES * u64::from(b'\\')));
    // A byte below 0x20 borrows when 0x20 is taken from it; bytes of 0x80
    // and up are excluded by `!word`.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control
}

#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}
