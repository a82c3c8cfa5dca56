//! Strings: the fast path borrows text without escapes from the input; text
//! with escapes is decoded into the cursor's scratch buffer.
//!
//! The vector work is `crate::arch`'s: a string's first 16 bytes are
//! classified inline, the rest of a plain one is scanned by
//! [`arch::find_special`], and text with escapes is copied run by run by
//! [`arch::copy_runs`], which hands each escape to [`Escapes`] here. That
//! decodes every well-formed escape; anything else it leaves to
//! [`Cursor::escape`], which finds Jason's error.

use super::{Cursor, Error, Syntax, Text};
use crate::arch::{self, Decoded, Run, HEX_DIGITS};

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
        // Each turn: the runs and escapes the vector loop gets through, then
        // what stopped it. The text is checked for UTF-8 once, at the end:
        // the runs end at ASCII bytes and escapes decode to whole
        // characters, so the text is valid exactly when every run is.
        let end = loop {
            let mut escapes = Escapes {
                // No escape costs more than two units a byte.
                limit: at.saturating_add(self.fuel / 2),
                escaped: 0,
            };
            let copied = arch::copy_runs(input, at, &mut self.scratch, &mut escapes);
            all_ascii &= copied.ascii;
            let stop = copied.at;
            let text = stop - at - escapes.escaped;
            let work = 2 * escapes.escaped + text / 8;
            let escaped = match input.get(stop) {
                Some(b'"') => {
                    self.position = stop;
                    self.burn(work)?;
                    break stop;
                }
                // An escape the loop left: a bad one, whose error this
                // finds, or one past its limit.
                Some(b'\\') => self.escape(stop),
                // A control byte, or the end of the input.
                _ => Err(Error::at(stop, input)),
            };
            at = match escaped {
                Ok(next) => next,
                // An earlier byte that is not UTF-8 is reported first.
                Err(error) => return Err(bad_utf8(input, start, stop).unwrap_or(error)),
            };
            // Where a ration is asked for more: the parse has got this far.
            self.position = at;
            self.burn(work + 2 * (at - stop))?;
        };
        self.position = end + 1;
        if all_ascii {
            debug_assert!(std::str::from_utf8(&self.scratch).is_ok());
            // SAFETY: every run was ASCII, and escapes decode to UTF-8.
            return Ok(Text::Unescaped(unsafe {
                std::str::from_utf8_unchecked(&self.scratch)
            }));
        }
        if arch::is_utf8(&self.scratch) {
            // SAFETY: checked just above.
            return Ok(Text::Unescaped(unsafe {
                std::str::from_utf8_unchecked(&self.scratch)
            }));
        }
        Err(bad_utf8(input, start, end).unwrap_or(Error::at(end, input)))
    }

    /// Decodes the escape whose `\` is at `at` onto the scratch buffer;
    /// returns the position after it, or Jason's error for it.
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

/// What the vector loop does at each special byte of a string with
/// escapes: decodes a well-formed escape that ends within `limit`, or
/// stops. Its decoding is [`Cursor::escape`]'s for every escape that has
/// no error; it leaves the rest to that.
#[derive(Clone, Copy)]
struct Escapes {
    /// Where the fuel the cursor has would run out, were every byte from
    /// where the loop started an escape.
    limit: usize,
    /// The bytes of the escapes decoded, for the fuel.
    escaped: usize,
}

impl arch::Special for Escapes {
    #[inline(always)]
    fn at(&mut self, input: &[u8], at: usize) -> Option<Decoded> {
        let Some(&[b'\\', letter]) = input.get(at..at + 2) else {
            return None;
        };
        let decoded = decode_escape(input, at, letter)?;
        if decoded.next > self.limit {
            return None;
        }
        self.escaped += decoded.next - at;
        Some(decoded)
    }

    const SIMPLE: [u8; 128] = {
        let mut table = [0; 128];
        let mut letter = 0;
        while letter < 128 {
            table[letter] = ESCAPES[letter];
            letter += 1;
        }
        table
    };

    const UNICODE: bool = true;

    /// Those that end within the limit: one at bit `i` ends at `at + i + 2`,
    /// `at + i + 6` for a `\u` escape, or `at + i + 12` for a surrogate
    /// pair. As the limit is a position, those are the first of them.
    #[inline(always)]
    fn simple(&mut self, escapes: u64, unicode: u64, pairs: u64, at: usize) -> u64 {
        let room = self.limit.saturating_sub(at + 1);
        // Most often the limit is past the block: no escape it decodes ends
        // beyond its 64th byte.
        let taken = if room >= 64 {
            escapes
        } else {
            let below = |room: usize| match u32::try_from(room) {
                Ok(room @ ..64) => (1 << room) - 1,
                _ => u64::MAX,
            };
            escapes & !unicode & below(room)
                | unicode & !pairs & below(room.saturating_sub(4))
                | pairs & below(room.saturating_sub(10))
        };
        let (unicode, pairs) = (taken & unicode, taken & pairs);
        self.escaped += 2 * taken.count_ones() as usize
            + 4 * unicode.count_ones() as usize
            + 6 * pairs.count_ones() as usize;
        taken
    }
}

/// The escape whose `\` is at `at`, and `letter` after it, decoded, if
/// it is well formed; `None` leaves it, and its error, to
/// [`Cursor::escape`].
///
/// A one-letter escape and a `\u` escape outside the surrogates are both
/// decoded, and one of them chosen without a branch: in text which kind
/// comes next is anyone's guess, and a branch on it would be mispredicted
/// as often. Surrogate pairs, rarer, take a branch.
#[inline(always)]
fn decode_escape(input: &[u8], at: usize, letter: u8) -> Option<Decoded> {
    let simple = ESCAPES[usize::from(letter)];
    // The four bytes after `\u` as a code unit; 0x10000 or more where one
    // is not a hex digit, or the input ends first.
    let code = match input.get(at + 2..at + 6) {
        Some(&[a, b, c, d]) => {
            let [a, b, c, d] = [a, b, c, d].map(|digit| u32::from(HEX_DIGITS[usize::from(digit)]));
            (a << 12 | b << 8 | c << 4 | d) | ((a | b | c | d) & 0xF0) << 12
        }
        _ => 0x10000,
    };
    let unicode = letter == b'u';
    // `&` and `|`, not `&&` and `||`, which would branch on what follows
    // every escape.
    let scalar = (code < 0xD800) | (0xE000..0x10000).contains(&code);
    if !(unicode & scalar | !unicode & (simple != 0)) {
        return if unicode {
            surrogate_pair(input, at, code)
        } else {
            None
        };
    }
    // The code unit as UTF-8, its bytes in a little-endian word.
    let two = (0xC0 | code >> 6) | (0x80 | code & 0x3F) << 8;
    let three = (0xE0 | code >> 12) | (0x80 | code >> 6 & 0x3F) << 8 | (0x80 | code & 0x3F) << 16;
    let (narrow, wide) = (code >= 0x80, code >= 0x800);
    let utf8 = choose(wide, three, choose(narrow, two, code));
    let length = 1 + usize::from(narrow) + usize::from(wide);
    let unicode_bit = usize::from(unicode);
    Some(Decoded {
        next: at + 2 + 4 * unicode_bit,
        bytes: choose(unicode, utf8, u32::from(simple)).to_le_bytes(),
        length: 1 + unicode_bit * (length - 1),
    })
}

/// `a` if `which`, else `b`, by masks rather than a branch.
#[inline(always)]
fn choose(which: bool, a: u32, b: u32) -> u32 {
    let mask = 0u32.wrapping_sub(u32::from(which));
    a & mask | b & !mask
}

/// A high surrogate `code` whose `\` is at `at` and the low one after it,
/// decoded; `None` for a lone surrogate or a bad code unit.
#[cold]
fn surrogate_pair(input: &[u8], at: usize, code: u32) -> Option<Decoded> {
    if !(0xD800..=0xDBFF).contains(&code) {
        return None;
    }
    let low = match input.get(at + 6..at + 12)? {
        [b'\\', b'u', digits @ ..] => hex4(digits)?,
        _ => return None,
    };
    if !(0xDC00..=0xDFFF).contains(&low) {
        return None;
    }
    let scalar = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    let bytes = [
        0xF0 | (scalar >> 18) as u8,
        0x80 | low6(scalar >> 12),
        0x80 | low6(scalar >> 6),
        0x80 | low6(scalar),
    ];
    Some(Decoded {
        next: at + 12,
        bytes,
        length: 4,
    })
}

/// The low six bits of `bits`, the payload of a UTF-8 continuation byte.
#[inline(always)]
fn low6(bits: u32) -> u8 {
    (bits & 0x3F) as u8
}

/// The first byte that is not UTF-8 in the unescaped runs of the string
/// text `input[start..end]`, whose escapes are known to be well formed.
/// Those escapes are ASCII, which ends any character and starts none, so
/// the first bad byte of the runs is the first of the whole text: one pass
/// finds it, where a pass per run cost 13 ns an escape (3 ms for 250,000),
/// after a parse whose pace had not counted on it.
#[cold]
fn bad_utf8(input: &[u8], start: usize, end: usize) -> Option<Syntax> {
    utf8(input, start, end, false).err()
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
    if arch::is_utf8(bytes) {
        // SAFETY: checked just above.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    // The slower check says where the first bad byte is.
    std::str::from_utf8(bytes).map_err(|e| Error::at(start + e.valid_up_to(), input))
}

#[inline(always)]
fn hex2(digits: &[u8]) -> Option<u32> {
    let [a, b] = digits
        .first_chunk::<2>()?
        .map(|digit| HEX_DIGITS[usize::from(digit)]);
    ((a | b) < 0x10).then_some(u32::from(a) << 4 | u32::from(b))
}

#[inline(always)]
fn hex4(digits: &[u8]) -> Option<u32> {
    let [a, b, c, d] = digits
        .first_chunk::<4>()?
        .map(|digit| HEX_DIGITS[usize::from(digit)]);
    ((a | b | c | d) < 0x10)
        .then_some(u32::from(a) << 12 | u32::from(b) << 8 | u32::from(c) << 4 | u32::from(d))
}

/// The first position from `from` holding `"`, `\` or a byte below 0x20:
/// where the fast scan of a string must stop. `input.len()` if none. The
/// first 16 bytes are looked at here, inlined: most strings end there.
#[inline(always)]
fn find_special(input: &[u8], from: usize) -> Run {
    let Some(lane) = input.get(from..).and_then(|rest| rest.first_chunk::<16>()) else {
        return arch::find_special(input, from);
    };
    let masks = arch::classify_lane(lane);
    if masks.special != 0 {
        let length = masks.special.trailing_zeros();
        return Run {
            stop: from + length as usize,
            ascii: masks.high & ((1 << length) - 1) == 0,
        };
    }
    let rest = arch::find_special(input, from + 16);
    Run {
        stop: rest.stop,
        ascii: rest.ascii && masks.high == 0,
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

#[cfg(test)]
mod tests {
    use super::Escapes;
    use crate::arch::{portable, Decoded, Isa, Special};

    // Wherever the fuel's limit falls among escapes of every kind, one
    // `\u` escape or two in a row among them, every instruction set stops
    // where the portable twin does, with the same text and the same count
    // of escaped bytes.
    #[test]
    fn every_instruction_set_stops_at_the_fuels_limit_where_the_twin_does() {
        let pieces: [&[u8]; 10] = [
            br"\u0041",
            br"\u00E9",
            br"\u20ac",
            br"\uFFFF",
            br"\uD83D\uDE00",
            br"\n",
            br"\\",
            "é".as_bytes(),
            b"text ",
            br"\u12g4",
        ];
        let mut random = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..300 {
            let mut input = Vec::new();
            while input.len() < 150 {
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                // The ill-formed one, last, ends the loop: it comes rarely.
                let piece = match random % 64 {
                    0 => pieces.len() - 1,
                    _ => (random >> 8) as usize % (pieces.len() - 1),
                };
                input.extend_from_slice(pieces[piece]);
            }
            input.push(b'"');
            for limit in (0..=input.len()).chain([usize::MAX]) {
                let mut twin_out = Vec::new();
                let mut twin = Escapes { limit, escaped: 0 };
                let expected = portable::copy_runs(&input, 0, &mut twin_out, &mut twin);
                for isa in Isa::all() {
                    let mut out = Vec::new();
                    let mut escapes = Escapes { limit, escaped: 0 };
                    let copied = isa.copy_runs(&input, 0, &mut out, &mut escapes);
                    assert_eq!(
                        (copied, &out, escapes.escaped),
                        (expected, &twin_out, twin.escaped),
                        "{} with the limit at {limit} of {:?}",
                        isa.name(),
                        String::from_utf8_lossy(&input)
                    );
                }
            }
        }
    }

    /// [`Escapes`], counting the times a loop asks `at`.
    #[derive(Clone, Copy)]
    struct Asked {
        escapes: Escapes,
        asked: usize,
    }

    impl Special for Asked {
        fn at(&mut self, input: &[u8], at: usize) -> Option<Decoded> {
            self.asked += 1;
            self.escapes.at(input, at)
        }

        const SIMPLE: [u8; 128] = Escapes::SIMPLE;

        const UNICODE: bool = Escapes::UNICODE;

        fn simple(&mut self, escapes: u64, unicode: u64, pairs: u64, at: usize) -> u64 {
            self.escapes.simple(escapes, unicode, pairs, at)
        }
    }

    // With fuel for all of them, the VBMI2 loop decodes every escape that
    // lies inside a block itself, surrogate pairs too, and asks about the
    // closing quote alone.
    #[test]
    fn the_vbmi2_loop_leaves_the_parser_no_escape_inside_a_block() {
        let Some(vbmi2) = Isa::all()
            .into_iter()
            .find(|isa| isa.name() == "avx512vbmi2")
        else {
            eprintln!("skipped: this CPU has no AVX-512 VBMI2");
            return;
        };
        let block = format!("{:x<64}", r"\n\u00e9\u20AC\\\uD83D\uDE80\/\ud83e\udd16");
        let input = format!("{block}{block}{:x<64}", r#"\t\uDBFF\uDFFF""#);
        let mut twin_out = Vec::new();
        let mut twin = Escapes {
            limit: usize::MAX,
            escaped: 0,
        };
        let expected = portable::copy_runs(input.as_bytes(), 0, &mut twin_out, &mut twin);
        let mut out = Vec::new();
        let mut asked = Asked {
            escapes: Escapes {
                limit: usize::MAX,
                escaped: 0,
            },
            asked: 0,
        };
        let copied = vbmi2.copy_runs(input.as_bytes(), 0, &mut out, &mut asked);
        assert_eq!(
            (copied, out, asked.escapes.escaped),
            (expected, twin_out, twin.escaped)
        );
        assert_eq!(asked.asked, 1);
    }
}
