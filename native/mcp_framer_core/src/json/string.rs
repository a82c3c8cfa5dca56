//! Strings: the fast path borrows text without escapes from the input; text
//! with escapes is decoded into the cursor's scratch buffer.

use super::lanes::{self, portable, portable::HIGHS};
use super::{Cursor, Error, Syntax, Text};

impl<'de> Cursor<'de, '_> {
    /// The string whose opening quote is just behind the cursor. Most
    /// have no escape: that path is inlined into the parser's loop, and
    /// the rest is a call.
    #[inline(always)]
    pub(super) fn string(&mut self) -> Result<Text<'de, '_>, Syntax> {
        let input = self.input;
        let start = self.position;
        let Run { stop, ascii } = find_special(input, start);
        if input.get(stop) == Some(&b'"') {
            let text = utf8(input, start, stop, ascii)?;
            self.position = stop + 1;
            return Ok(Text::Input(text));
        }
        self.unescape(start, stop, ascii)
    }

    /// The string from `start` whose first escape, or other byte that ends
    /// the fast scan, is at `stop`; `ascii` tells whether the text before
    /// it was all ASCII.
    #[inline(never)]
    fn unescape(
        &mut self,
        start: usize,
        stop: usize,
        ascii: bool,
    ) -> Result<Text<'de, '_>, Syntax> {
        let input = self.input;
        self.scratch.clear();
        self.scratch
            .extend_from_slice(input.get(start..stop).unwrap_or_default());
        let mut at = stop;
        let mut all_ascii = ascii;
        // Each turn: the special byte at `at`, then the text up to the next
        // one. The text is checked for UTF-8 once, at the end: the runs end
        // at ASCII bytes and escapes decode to whole characters, so the text
        // is valid exactly when every run is.
        loop {
            let escaped = match input.get(at) {
                Some(b'"') => break,
                Some(b'\\') => self.escape(at),
                // A control byte, or the end of the input.
                _ => Err(Error::at(at, input)),
            };
            let run = match escaped {
                Ok(next) => next,
                // An earlier byte that is not UTF-8 is reported first.
                Err(error) => return Err(bad_utf8(input, start, at).unwrap_or(error)),
            };
            let (next, ascii) = self.copy_run(run);
            all_ascii &= ascii;
            // Where a ration is asked for more: the parse has got this far.
            self.position = run;
            self.burn(2 * (run - at) + (next - run) / 8)?;
            at = next;
        }
        self.position = at + 1;
        if all_ascii {
            // SAFETY: every run was ASCII, and escapes decode to UTF-8.
            return Ok(Text::Unescaped(unsafe {
                std::str::from_utf8_unchecked(&self.scratch)
            }));
        }
        match simdutf8::basic::from_utf8(&self.scratch) {
            Ok(text) => Ok(Text::Unescaped(text)),
            Err(_) => Err(bad_utf8(input, start, at).unwrap_or(Error::at(at, input))),
        }
    }

    /// Copies the text from `from` up to the next special byte onto the
    /// scratch buffer; returns where that byte is, and whether the text was
    /// all ASCII. Each lane is copied whole, even the one holding the
    /// special byte, and the copy cut back after: one fixed-size move per
    /// lane instead of a call to copy a run of any length.
    #[inline(always)]
    fn copy_run(&mut self, from: usize) -> (usize, bool) {
        let input = self.input;
        let mut at = from;
        let mut high = 0;
        while let Some(lane) = input.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
            self.scratch.extend_from_slice(lane);
            let masks = lanes::classify(lane);
            if masks.special != 0 {
                let length = masks.special.trailing_zeros();
                high |= masks.high & ((1 << length) - 1);
                self.scratch
                    .truncate(self.scratch.len() - 16 + length as usize);
                return (at + length as usize, high == 0);
            }
            high |= masks.high;
            at += 16;
        }
        let Run { stop, ascii } = find_special(input, at);
        self.scratch
            .extend_from_slice(input.get(at..stop).unwrap_or_default());
        (stop, ascii && high == 0)
    }

    /// Decodes the escape whose `\` is at `at` onto the scratch buffer;
    /// returns the position after it.
    #[inline(always)]
    fn escape(&mut self, at: usize) -> Result<usize, Syntax> {
        match self.input.get(at + 1) {
            Some(b'u') => self.unicode_escape(at),
            Some(&letter) => match ESCAPES[usize::from(letter)] {
                // Jason's table of escape letters ends at `u`: a byte past
                // it is blamed on the backslash, one up to it on itself.
                0 if letter <= b'u' => Err(Error::at(at + 1, self.input)),
                0 => Err(Error::at(at, self.input)),
                decoded => {
                    self.scratch.push(decoded);
                    Ok(at + 2)
                }
            },
            // Jason reports a string cut off after `\` at the `\`.
            None => Err(Error::at(at, self.input)),
        }
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
    // Sixteen bytes per step; past the first lane, a long run is skipped
    // a block at a time.
    while let Some(lane) = input.get(at..).and_then(|rest| rest.first_chunk::<16>()) {
        let masks = lanes::classify(lane);
        if masks.special != 0 {
            let before = masks.special & masks.special.wrapping_neg();
            return Run {
                stop: at + masks.special.trailing_zeros() as usize,
                ascii: !high && masks.high & (before - 1) == 0,
            };
        }
        high |= masks.high != 0;
        at += 16;
        if at == from + 16 {
            let skipped = lanes::skip_plain(input, at);
            high |= skipped.high;
            at = skipped.at;
        }
    }
    // Eight bytes per step, tested all at once (SWAR).
    while let Some(word) = input.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
        let word = u64::from_le_bytes(*word);
        let mask = portable::special_bytes(word);
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

/// What the letter after `\` decodes to, for the one-letter escapes; 0 for
/// the rest (`u` is decoded on its own).
static ESCAPES: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0C;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};
