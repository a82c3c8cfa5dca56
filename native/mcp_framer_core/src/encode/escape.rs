//! JSON strings as Jason 1.4.5 writes them, in each of its escape modes.
//!
//! Every mode escapes `"` and `\` with a backslash, `\b \t \n \f \r` by
//! their letters and the other bytes below 0x20 as `\u00XX`, hex digits in
//! upper case; DEL (0x7F) stays as it is. On top of that:
//! * [`Escape::JavascriptSafe`] escapes U+2028 and U+2029 as `\u2028` and
//!   `\u2029`;
//! * [`Escape::HtmlSafe`] does too, and writes `/` as `\/` and `<` as
//!   `\u003C`;
//! * [`Escape::UnicodeSafe`] escapes every character past ASCII as `\uXXXX`,
//!   past U+FFFF as a surrogate pair.
//!
//! The text must be valid UTF-8 first ([`check_utf8`]): Jason refuses the
//! whole string at the first byte that does not start a valid character.

use crate::arch::{self, Stops};
use std::collections::TryReserveError;

/// `f(args, mode)` for `escape`, the mode a constant in each arm: each
/// mode gets its own copy of `f`, with its bytes to stop at constants in
/// the scans.
macro_rules! by_mode {
    ($escape:expr, $f:ident($($arg:expr),*)) => {
        match $escape {
            Escape::Json => $f($($arg,)* Escape::Json),
            Escape::UnicodeSafe => $f($($arg,)* Escape::UnicodeSafe),
            Escape::JavascriptSafe => $f($($arg,)* Escape::JavascriptSafe),
            Escape::HtmlSafe => $f($($arg,)* Escape::HtmlSafe),
        }
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Escape {
    Json,
    UnicodeSafe,
    JavascriptSafe,
    HtmlSafe,
}

impl Escape {
    /// Every mode, for tests and tables.
    pub const ALL: [Escape; 4] = [
        Escape::Json,
        Escape::UnicodeSafe,
        Escape::JavascriptSafe,
        Escape::HtmlSafe,
    ];

    /// The bytes a scan must stop at: those that are escaped, and the
    /// first byte of U+2028 and U+2029 (0xE2), which may be.
    #[inline(always)]
    pub fn stops(self) -> Stops {
        match self {
            Escape::Json => Stops {
                extra: [b'"'; 3],
                high: false,
            },
            Escape::UnicodeSafe => Stops {
                extra: [b'"'; 3],
                high: true,
            },
            Escape::JavascriptSafe => Stops {
                extra: [0xE2, b'"', b'"'],
                high: false,
            },
            Escape::HtmlSafe => Stops {
                extra: [0xE2, b'<', b'/'],
                high: false,
            },
        }
    }

    /// What a byte below 0x80 becomes, if it is escaped: up to six
    /// bytes, then the count of them in the last.
    #[inline]
    fn ascii(self, byte: u8) -> Option<[u8; 8]> {
        match (self, byte) {
            (Escape::HtmlSafe, b'/') => Some(sequence(br"\/")),
            (Escape::HtmlSafe, b'<') => Some(sequence(br"\u003C")),
            _ => JSON_ESCAPES.get(usize::from(byte)).copied().flatten(),
        }
    }
}

/// An escape sequence of up to six bytes in eight, its length in the
/// last: written as one word, then cut to its length.
const fn sequence(bytes: &[u8]) -> [u8; 8] {
    let mut word = [0; 8];
    let mut i = 0;
    while i < bytes.len() {
        word[i] = bytes[i];
        i += 1;
    }
    word[7] = bytes.len() as u8;
    word
}

/// What each ASCII byte becomes in every mode: `None` for those written
/// as they are.
const JSON_ESCAPES: [Option<[u8; 8]>; 0x80] = {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut table: [Option<[u8; 8]>; 0x80] = [None; 0x80];
    let mut byte = 0;
    while byte < 0x20 {
        let hex = [b'\\', b'u', b'0', b'0', HEX[byte >> 4], HEX[byte & 0xF]];
        table[byte] = Some(sequence(&hex));
        byte += 1;
    }
    table[0x08] = Some(sequence(br"\b"));
    table[0x09] = Some(sequence(br"\t"));
    table[0x0A] = Some(sequence(br"\n"));
    table[0x0C] = Some(sequence(br"\f"));
    table[0x0D] = Some(sequence(br"\r"));
    table[b'"' as usize] = Some(sequence(br#"\""#));
    table[b'\\' as usize] = Some(sequence(br"\\"));
    table
};

/// The most bytes one character's escape takes: a surrogate pair.
const ESCAPE_MAX: usize = 12;

/// A string Jason refuses: its first invalid UTF-8 sequence starts at
/// `position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidUtf8 {
    pub position: usize,
}

/// Why a string was not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    InvalidUtf8(InvalidUtf8),
    /// The output buffer could not grow.
    NoMemory,
}

impl From<InvalidUtf8> for WriteError {
    fn from(invalid: InvalidUtf8) -> WriteError {
        WriteError::InvalidUtf8(invalid)
    }
}

impl From<TryReserveError> for WriteError {
    fn from(_: TryReserveError) -> WriteError {
        WriteError::NoMemory
    }
}

/// Checks that `text` is valid UTF-8, and returns how much of it `escape`
/// writes unchanged: the index of the first character it escapes, or
/// `text.len()`.
///
/// Most strings are ASCII without escapes: one scan, for bytes that are
/// escaped or past ASCII, finds that out, and only the rest is checked.
#[inline]
pub fn check(text: &[u8], escape: Escape) -> Result<usize, InvalidUtf8> {
    by_mode!(escape, check_in(text))
}

#[inline(always)]
fn check_in(text: &[u8], escape: Escape) -> Result<usize, InvalidUtf8> {
    let ascii = check_ascii_in(text, escape)?;
    if ascii == text.len() {
        return Ok(ascii);
    }
    Ok(first_escape(text, ascii, escape))
}

/// Like [`check`], but stops at the first character past ASCII too: the
/// length of a prefix that needs no escape, the whole of an ASCII string
/// without escapes. For a writer that goes on with [`write_escaped`],
/// which finds the rest of the plain text as it copies it, in the same
/// pass.
#[inline]
pub fn check_ascii(text: &[u8], escape: Escape) -> Result<usize, InvalidUtf8> {
    by_mode!(escape, check_ascii_in(text))
}

#[inline(always)]
fn check_ascii_in(text: &[u8], escape: Escape) -> Result<usize, InvalidUtf8> {
    let ascii = plain_ascii_in(text, escape);
    if ascii < text.len() {
        check_utf8_from(text, ascii)?;
    }
    Ok(ascii)
}

/// How much of `text` `escape` writes unchanged before its first byte
/// past ASCII: the whole of an ASCII string without escapes. Nothing is
/// checked.
#[inline]
pub fn plain_ascii(text: &[u8], escape: Escape) -> usize {
    by_mode!(escape, plain_ascii_in(text))
}

#[inline(always)]
fn plain_ascii_in(text: &[u8], escape: Escape) -> usize {
    let stops = Stops {
        high: true,
        ..escape.stops()
    };
    arch::find_stop(text, 0, stops)
}

/// [`check_utf8`] of `text[from..]`, the first bad byte's position given
/// in `text`.
#[inline]
pub fn check_utf8_from(text: &[u8], from: usize) -> Result<(), InvalidUtf8> {
    check_utf8(&text[from..]).map_err(|invalid| InvalidUtf8 {
        position: from + invalid.position,
    })
}

/// Whether `text` is valid UTF-8, and if not, where it stops being so.
#[inline]
pub fn check_utf8(text: &[u8]) -> Result<(), InvalidUtf8> {
    // The fast check says only yes or no; the slow one, run only on the
    // way to an error, says where.
    if arch::is_utf8(text) {
        return Ok(());
    }
    match std::str::from_utf8(text) {
        Ok(_) => Ok(()),
        Err(error) => Err(InvalidUtf8 {
            position: error.valid_up_to(),
        }),
    }
}

/// The index of the first character of `text` (valid UTF-8) from `from` on
/// that `escape` escapes, or `text.len()` if it writes the rest unchanged.
#[inline(always)]
pub fn first_escape(text: &[u8], from: usize, escape: Escape) -> usize {
    let stops = escape.stops();
    let mut at = from;
    loop {
        at = arch::find_stop(text, at, stops);
        match text.get(at) {
            // 0xE2 starts U+2000 to U+2FFF; only two of them are escaped.
            Some(0xE2) if escape != Escape::UnicodeSafe && !line_separator(text, at) => at += 1,
            _ => return at,
        }
    }
}

/// Whether U+2028 or U+2029 starts at `at`.
#[inline]
fn line_separator(text: &[u8], at: usize) -> bool {
    matches!(text.get(at..at + 3), Some([0xE2, 0x80, 0xA8 | 0xA9]))
}

/// Appends `text`, which needs no escape, to `out`. A string of up to 16
/// bytes, most keys and many values, is stored as two words that may
/// overlap, without a call to `memcpy`, which costs more than such a copy;
/// `out` must have room for 8 bytes more than `text`, or it grows.
#[inline(always)]
pub fn write_plain(out: &mut Vec<u8>, text: &[u8]) {
    let end = out.len() + text.len();
    if text.len() > 16 {
        out.extend_from_slice(text);
    } else if let (Some(low), Some(high)) = (text.first_chunk::<8>(), text.last_chunk::<8>()) {
        out.extend_from_slice(low);
        out.truncate(end - 8);
        out.extend_from_slice(high);
    } else {
        out.extend_from_slice(&arch::portable::short_word(text).to_le_bytes());
        out.truncate(end);
    }
}

/// Appends `text` (valid UTF-8) as `escape` writes it, without quotes,
/// given that nothing before `plain` needs an escape (from [`check`],
/// [`check_ascii`] or [`first_escape`]; 0 if not known).
pub fn write_escaped(
    out: &mut Vec<u8>,
    text: &[u8],
    plain: usize,
    escape: Escape,
) -> Result<(), TryReserveError> {
    by_mode!(escape, write_escaped_in(out, text, plain))
}

#[inline(always)]
fn write_escaped_in(
    out: &mut Vec<u8>,
    text: &[u8],
    plain: usize,
    escape: Escape,
) -> Result<(), TryReserveError> {
    let plain = plain.min(text.len());
    out.try_reserve(text.len() + LANE)?;
    out.extend_from_slice(&text[..plain]);
    escape_rest(out, text, plain, escape)
}

/// Checks that `text` is UTF-8 and appends it as `escape` writes it,
/// without quotes: [`check_ascii`] and [`write_escaped`] in one, for a
/// string that is not first looked at whole. Its ASCII prefix without
/// escapes, all of most strings, is copied by the same pass that finds
/// where it ends; only the rest is checked and escaped. On an error,
/// `out` holds part of the text.
pub fn write_checked(out: &mut Vec<u8>, text: &[u8], escape: Escape) -> Result<(), WriteError> {
    by_mode!(escape, write_checked_in(out, text))
}

#[inline(always)]
fn write_checked_in(out: &mut Vec<u8>, text: &[u8], escape: Escape) -> Result<(), WriteError> {
    let stops = Stops {
        high: true,
        ..escape.stops()
    };
    out.try_reserve(text.len() + LANE)?;
    let ascii = arch::copy_to_stop(text, 0, stops, out);
    if ascii == text.len() {
        return Ok(());
    }
    checked_rest(out, text, ascii, escape)
}

/// Checks and appends `text[from..]` as `escape` writes it, `from` being
/// where a character starts: [`write_checked`] past the ASCII prefix it
/// copied, for a writer that has copied that prefix itself.
pub fn write_checked_from(
    out: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    escape: Escape,
) -> Result<(), WriteError> {
    by_mode!(escape, checked_rest(out, text, from))
}

/// The rest of a string checked and escaped, a long one a segment at a
/// time, each segment ending where a character starts. Checked whole
/// before it was escaped, a long string that was not in the cache (a
/// large result's text) kept the fast check waiting for memory: on the
/// text rows of `make bench` two thirds of its samples sat on its load,
/// and it took 17% of the encoding's time. Now each segment's lines are
/// fetched while the one before it is escaped, and only the short first
/// segment's check waits (7%; the row 1.04x-1.11x as fast in alternating
/// runs of `make bench BENCH_ONLY="encode text"`).
#[inline(always)]
fn checked_rest(
    out: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    escape: Escape,
) -> Result<(), WriteError> {
    if text.len() - from <= FIRST_SEGMENT {
        check_utf8_from(text, from)?;
        return Ok(escape_rest(out, text, from, escape)?);
    }
    checked_segments(out, text, from, escape)
}

/// [`checked_rest`] of a rest longer than [`FIRST_SEGMENT`]; a call, so
/// that the short strings' path stays small.
#[inline(never)]
fn checked_segments(
    out: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    escape: Escape,
) -> Result<(), WriteError> {
    by_mode!(escape, checked_segments_in(out, text, from))
}

#[inline(always)]
fn checked_segments_in(
    out: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    escape: Escape,
) -> Result<(), WriteError> {
    let mut at = from;
    let mut size = FIRST_SEGMENT;
    while at < text.len() {
        let end = segment_end(text, at, size);
        size = SEGMENT;
        let segment = &text[..end];
        if !arch::is_utf8(&segment[at..]) {
            // Everything before `at` is valid and ends with a whole
            // character, so the first bad byte is the rest's. (In valid
            // text every segment is valid; were the rest so, it is
            // written whole.)
            check_utf8_from(text, at)?;
            return Ok(escape_rest(out, text, at, escape)?);
        }
        // The next segment's check would wait for memory: its lines are
        // fetched while this one is escaped.
        arch::prefetch(&text[end..segment_end(text, end, SEGMENT)]);
        escape_rest(out, segment, at, escape)?;
        at = end;
    }
    Ok(())
}

/// How much of a string is checked and escaped at once: a short first
/// segment, whose check waits for memory, and longer ones fetched ahead.
const FIRST_SEGMENT: usize = 512;
const SEGMENT: usize = 4096;

/// Where the segment from `at` ends: `size` bytes on, moved back to
/// the first byte of a character (one of up to three bytes before it, in
/// valid UTF-8), or the end of the text.
#[inline(always)]
fn segment_end(text: &[u8], at: usize, size: usize) -> usize {
    let mut end = at + size;
    if end >= text.len() {
        return text.len();
    }
    for _ in 0..3 {
        if text[end] & 0xC0 != 0x80 {
            break;
        }
        end -= 1;
    }
    end
}

/// Appends `text[from..]` as `escape` writes it; `out` has room for
/// `text.len() - from + LANE` more bytes.
#[inline(always)]
fn escape_rest(
    out: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    escape: Escape,
) -> Result<(), TryReserveError> {
    let stops = escape.stops();
    let mut at = from;
    while at < text.len() {
        // Room for the rest, a lane stored whole and an escape's growth,
        // so that nothing below allocates but here, where it may fail.
        out.try_reserve(text.len() - at + LANE + ESCAPE_MAX)?;
        let room = out.capacity();
        // A shorter rest, most strings' after an escape, is not worth the
        // call. The blocks' escapes take up room the rest was to have, so
        // the room is made again before anything more is written.
        if escape == Escape::Json && text.len() - at >= arch::ESCAPE_BLOCK {
            let blocks_end = arch::escape_blocks(text, at, out);
            if blocks_end > at {
                at = blocks_end;
                continue;
            }
        }
        let Some(&byte) = text.get(at) else {
            break;
        };
        at += if byte < 0x80 {
            match escape.ascii(byte) {
                Some(sequence) => {
                    let length = out.len() + usize::from(sequence[7]);
                    out.extend_from_slice(&sequence);
                    out.truncate(length);
                }
                // Not escaped: where the block loop stopped, or where
                // `plain` said the escapes start.
                None => out.push(byte),
            }
            1
        } else if escape == Escape::UnicodeSafe
            || (escape != Escape::Json && line_separator(text, at))
        {
            write_char_escape(out, &text[at..])
        } else {
            // A byte of a character the mode writes as it is (the scan
            // stops at the first of U+2000 to U+2FFF, the block loop
            // anywhere, or `plain` was where a check stopped at the first
            // past ASCII).
            out.push(byte);
            1
        };
        at = arch::copy_to_stop(text, at, stops, out);
        debug_assert_eq!(out.capacity(), room, "escaping allocated past its reserve");
    }
    Ok(())
}

/// The most bytes [`arch::copy_to_stop`] stores past what it keeps.
const LANE: usize = 16;

/// Writes the `\u` escape of the character `rest` starts with, which is
/// past ASCII; returns its length in bytes.
fn write_char_escape(out: &mut Vec<u8>, rest: &[u8]) -> usize {
    let (code, length) = decode_char(rest);
    if code > 0xFFFF {
        let offset = code - 0x10000;
        write_u_escape(out, 0xD800 | (offset >> 10));
        write_u_escape(out, 0xDC00 | (offset & 0x3FF));
    } else {
        write_u_escape(out, code);
    }
    length
}

fn write_u_escape(out: &mut Vec<u8>, unit: u32) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let digit = |shift: u32| HEX[((unit >> shift) & 0xF) as usize];
    out.extend_from_slice(&[b'\\', b'u', digit(12), digit(8), digit(4), digit(0)]);
}

/// The code point and length of the character `rest` starts with, from
/// valid UTF-8 (a lead byte past ASCII); bytes past the end read as
/// continuation bytes of nothing, so a bad caller gets a wrong escape, not
/// a panic.
fn decode_char(rest: &[u8]) -> (u32, usize) {
    let byte = |i: usize| u32::from(rest.get(i).copied().unwrap_or(0x80) & 0x3F);
    let lead = u32::from(rest.first().copied().unwrap_or(0));
    match lead {
        0xF0.. => (
            (lead & 0x07) << 18 | byte(1) << 12 | byte(2) << 6 | byte(3),
            4,
        ),
        0xE0.. => ((lead & 0x0F) << 12 | byte(1) << 6 | byte(2), 3),
        _ => ((lead & 0x1F) << 6 | byte(1), 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_control_byte_quote_and_backslash_and_nothing_else() {
        for byte in 0..0x80u8 {
            let escaped = Escape::Json.ascii(byte).is_some();
            assert_eq!(
                escaped,
                byte < 0x20 || byte == b'"' || byte == b'\\',
                "{byte:#x}"
            );
        }
    }

    #[test]
    fn a_plain_string_of_any_length_is_appended_as_it_is() {
        let text: Vec<u8> = (0..40).map(|i| b'a' + i).collect();
        for length in 0..=text.len() {
            let mut out = b"head".to_vec();
            write_plain(&mut out, &text[..length]);
            assert_eq!(out, [b"head", &text[..length]].concat());
        }
    }

    #[test]
    fn a_character_of_each_length_decodes_to_its_code_point() {
        for c in ['é', '߿', 'ࠀ', '\u{2028}', '\u{FFFF}', '😀', '\u{10FFFF}'] {
            let mut bytes = [0; 4];
            let text = c.encode_utf8(&mut bytes);
            assert_eq!(decode_char(text.as_bytes()), (c as u32, c.len_utf8()));
        }
    }
}
