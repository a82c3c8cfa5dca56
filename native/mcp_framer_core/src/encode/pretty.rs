//! JSON text laid out on lines, as `Jason.Formatter.pretty_print/2` (1.4.5)
//! lays it out: each item of a non-empty array or object on a line of its
//! own, indented once a level, the closing bracket back at its opener's
//! level; `{}` and `[]` stay as they are; a colon followed by `colon`.
//! Strings are copied as they are, and whitespace outside them dropped.
//!
//! The input is expected to be JSON; any other bytes are laid out by the
//! same rules without fail, so the output is always what [`len`] says, and
//! is Jason's wherever Jason's formatter does not raise.

use crate::arch;

/// The separators, as the options of `pretty:` give them.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    /// Once per level at the start of a line (`:indent`).
    pub indent: &'a [u8],
    /// Between lines (`:line_separator`).
    pub line: &'a [u8],
    /// Before a top-level array or object that follows another
    /// (`:record_separator`).
    pub record: &'a [u8],
    /// After each colon (`:after_colon`).
    pub colon: &'a [u8],
}

/// How many bytes `text` laid out takes; `None` past `usize`. It costs a
/// pass over `text`, however deep the nesting and wide the indent.
pub fn len(text: &[u8], layout: &Layout) -> Option<usize> {
    let mut total: Option<usize> = Some(0);
    lay_out(text, layout, |piece| {
        let bytes = match piece {
            Piece::Text(bytes) => Some(bytes.len()),
            Piece::NewLine(levels) => margin_width(layout, levels),
        };
        total = total
            .zip(bytes)
            .and_then(|(total, bytes)| total.checked_add(bytes));
    });
    total
}

/// `text` laid out, written to the front of `out`, which must be at least
/// [`len`] bytes long; returns how many bytes were written, or `None` if
/// there was no memory for the indents of the deepest line.
pub fn write(text: &[u8], layout: &Layout, out: &mut [u8]) -> Option<usize> {
    let mut at = 0;
    let room = write_to(text, layout, |bytes| {
        let Some(to) = out.get_mut(at..at + bytes.len()) else {
            return false;
        };
        to.copy_from_slice(bytes);
        at += bytes.len();
        true
    });
    room.then_some(at)
}

/// Why [`write_vec`] stopped short of the whole text laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Short {
    /// The text laid out takes more than the cap.
    Cap,
    /// There was no memory for it.
    NoMemory,
}

/// `text` laid out, appended to `out` in one pass, where the text laid out
/// takes at most `cap` bytes: no [`len`] pass before it, as a short text
/// needs none. A line's margin longer than what is left of the cap is not
/// built, so a wide `:indent` or `:line_separator` stops it as soon as a
/// line needs one. `out` may hold part of the text when it stops short.
pub fn write_vec(text: &[u8], layout: &Layout, out: &mut Vec<u8>, cap: usize) -> Result<(), Short> {
    let end = out.len().saturating_add(cap);
    let mut short = None;
    let room = write_pieces(text, layout, |piece| {
        let length = match piece {
            Out::Bytes(bytes) => bytes.len(),
            Out::Margin(width) => width,
        };
        if length > end - out.len() {
            short = Some(Short::Cap);
        } else if let Out::Bytes(bytes) = piece {
            if out.try_reserve(bytes.len()).is_ok() {
                arch::append(out, bytes);
            } else {
                short = Some(Short::NoMemory);
            }
        }
        short.is_none()
    });
    match short {
        Some(short) => Err(short),
        None if !room => Err(Short::NoMemory),
        None => Ok(()),
    }
}

/// `text` laid out, handed to `put` a piece at a time, in order, until it
/// returns false; false if there was no memory for the indents of the
/// deepest line, whose pieces are then left out.
pub fn write_to(text: &[u8], layout: &Layout, mut put: impl FnMut(&[u8]) -> bool) -> bool {
    write_pieces(text, layout, |piece| match piece {
        Out::Bytes(bytes) => put(bytes),
        Out::Margin(_) => true,
    })
}

/// What [`write_pieces`] hands over.
#[derive(Clone, Copy)]
enum Out<'a> {
    /// The next bytes of the text laid out.
    Bytes(&'a [u8]),
    /// A line's margin of this many bytes comes next, if this is taken:
    /// asked before the margin is built.
    Margin(usize),
}

/// [`write_to`], which also asks `put` about each margin before building it.
fn write_pieces(text: &[u8], layout: &Layout, mut put: impl FnMut(Out) -> bool) -> bool {
    let (mut going, mut room) = (true, true);
    // A line break and as many indents as the deepest line so far, built
    // as lines need it: the start of a line at any level is a prefix of it.
    let mut margin = Vec::new();
    lay_out(text, layout, |piece| {
        if !going {
            return;
        }
        going = match piece {
            Piece::Text(bytes) => put(Out::Bytes(bytes)),
            Piece::NewLine(levels) => {
                let width = margin_width(layout, levels).unwrap_or(usize::MAX);
                let taken = put(Out::Margin(width));
                if taken && margin.len() < width {
                    room &= margin.try_reserve(width - margin.len()).is_ok();
                    if room && margin.is_empty() {
                        margin.extend_from_slice(layout.line);
                    }
                    while room && margin.len() < width {
                        margin.extend_from_slice(layout.indent);
                    }
                }
                taken && put(Out::Bytes(margin.get(..width).unwrap_or_default()))
            }
        };
    });
    room
}

/// The start of a line `levels` deep: its separator and indents.
fn margin_width(layout: &Layout, levels: usize) -> Option<usize> {
    levels
        .checked_mul(layout.indent.len())?
        .checked_add(layout.line.len())
}

/// What the layout is made of.
enum Piece<'t> {
    /// Bytes of the text, or of a separator.
    Text(&'t [u8]),
    /// A line break, then the indent this many times.
    NewLine(usize),
}

/// Where the layout is: no container opened yet, or this many levels in,
/// 0 once the first top-level container has closed. A closing bracket with
/// no opener takes it below 0, as Jason's formatter counts it; a line
/// there has no indent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Depth {
    First,
    In(isize),
}

/// Calls `emit` with the pieces of `text` laid out, in order.
fn lay_out<'t>(text: &'t [u8], layout: &Layout<'t>, mut emit: impl FnMut(Piece<'t>)) {
    let mut depth = Depth::First;
    // The last bracket opened a container that has nothing in it yet.
    let mut empty = false;
    let mut at = 0;
    while let Some(&byte) = text.get(at) {
        let here = match depth {
            Depth::First => 0,
            Depth::In(here) => here,
        };
        let levels = indents(here);
        match byte {
            b' ' | b'\n' | b'\r' | b'\t' => {}
            b'{' | b'[' => {
                match depth {
                    Depth::First => {}
                    Depth::In(0) => emit(Piece::Text(layout.record)),
                    Depth::In(_) if empty => emit(Piece::NewLine(levels)),
                    Depth::In(_) => {}
                }
                emit(Piece::Text(&text[at..=at]));
                depth = Depth::In(here + 1);
                empty = true;
            }
            b'}' | b']' => {
                if !empty {
                    emit(Piece::NewLine(indents(here - 1)));
                }
                emit(Piece::Text(&text[at..=at]));
                depth = Depth::In(here - 1);
                empty = false;
            }
            b',' => {
                emit(Piece::Text(b","));
                emit(Piece::NewLine(levels));
                empty = false;
            }
            b':' => {
                emit(Piece::Text(b":"));
                emit(Piece::Text(layout.colon));
            }
            _ => {
                if empty {
                    emit(Piece::NewLine(levels));
                }
                empty = false;
                // A string through its closing quote, or a number or
                // literal up to the next byte of structure, as it is.
                let end = if byte == b'"' {
                    string_end(text, at + 1)
                } else {
                    scalar_end(text, at + 1)
                };
                emit(Piece::Text(&text[at..end]));
                at = end;
                continue;
            }
        }
        at += 1;
    }
}

/// How many indents start a line at `depth`: none below 0.
fn indents(depth: isize) -> usize {
    usize::try_from(depth).unwrap_or(0)
}

/// Where a number or literal that goes on at `from` ends: at the next byte
/// of structure, whitespace or quote, or at the end of `text`.
fn scalar_end(text: &[u8], from: usize) -> usize {
    let rest = text.get(from..).unwrap_or_default();
    let run = rest
        .iter()
        .position(|byte| b"{}[],:\" \n\r\t".contains(byte))
        .unwrap_or(rest.len());
    from + run
}

/// Where the string whose opening quote is just before `from` ends: past
/// its closing quote, or at the end of `text`.
fn string_end(text: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(found) = memchr::memchr2(b'"', b'\\', &text[at..]) {
        let stop = at + found;
        if text[stop] == b'"' {
            return stop + 1;
        }
        // A backslash and the byte it escapes.
        at = (stop + 2).min(text.len());
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::{len, write, write_vec, Layout, Short};
    use proptest::prelude::*;

    const DEFAULT: Layout = Layout {
        indent: b"  ",
        line: b"\n",
        record: b"\n",
        colon: b" ",
    };

    fn pretty(text: &[u8], layout: &Layout) -> Vec<u8> {
        let mut out = vec![0; len(text, layout).unwrap()];
        assert_eq!(write(text, layout, &mut out), Some(out.len()));
        out
    }

    #[test]
    fn items_go_on_lines_of_their_own_indented_once_a_level() {
        assert_eq!(
            pretty(br#"{"a":{"b":[1,2]}}"#, &DEFAULT),
            b"{\n  \"a\": {\n    \"b\": [\n      1,\n      2\n    ]\n  }\n}"
        );
    }

    #[test]
    fn empty_containers_stay_as_they_are() {
        assert_eq!(pretty(b"[]", &DEFAULT), b"[]");
        assert_eq!(pretty(b"[[],{}]", &DEFAULT), b"[\n  [],\n  {}\n]");
        assert_eq!(
            pretty(br#"{"a":{},"b":[[]]}"#, &DEFAULT),
            b"{\n  \"a\": {},\n  \"b\": [\n    []\n  ]\n}"
        );
    }

    #[test]
    fn strings_are_copied_as_they_are() {
        assert_eq!(
            pretty(br#"["{,:}","a\"[\\",""]"#, &DEFAULT),
            b"[\n  \"{,:}\",\n  \"a\\\"[\\\\\",\n  \"\"\n]"
        );
        assert_eq!(pretty(br#""x\""#, &DEFAULT), br#""x\""#);
    }

    #[test]
    fn a_closing_bracket_with_no_opener_takes_the_depth_below_0() {
        // As Jason's formatter gives them: below 0 an opener starts no new
        // record, and lines have no indent.
        let flat = Layout {
            indent: b"",
            ..DEFAULT
        };
        assert_eq!(pretty(b"[1]][2]", &flat), b"[\n1\n]\n][\n2\n]");
        let minimal = Layout {
            indent: b"",
            line: b"",
            record: b"\n",
            colon: b"",
        };
        assert_eq!(pretty(b"[1]][2] [3]", &minimal), b"[1]][2][3]");
        assert_eq!(
            pretty(b"[1]][2]]] [3]", &DEFAULT),
            b"[\n  1\n]\n][\n2\n]\n]\n][\n3\n]"
        );
    }

    #[test]
    fn a_top_level_scalar_is_unchanged() {
        for text in [&b"1"[..], b"\"s\"", b"null", b"-1.5e3"] {
            assert_eq!(pretty(text, &DEFAULT), text);
        }
    }

    #[test]
    fn the_separators_are_the_layouts() {
        let layout = Layout {
            indent: b"\t",
            line: b"\r\n",
            record: b"|",
            colon: b"",
        };
        assert_eq!(
            pretty(br#"{"a":[1]} [2]"#, &layout),
            b"{\r\n\t\"a\":[\r\n\t\t1\r\n\t]\r\n}|[\r\n\t2\r\n]"
        );
    }

    /// The input without the whitespace outside its strings: what it lays
    /// out to with every separator empty.
    fn squeezed(text: &[u8]) -> Vec<u8> {
        let (mut out, mut in_string, mut escaped) = (Vec::new(), false, false);
        for &byte in text {
            if in_string {
                in_string = escaped || byte != b'"';
                escaped = !escaped && byte == b'\\';
            } else if matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                continue;
            } else {
                in_string = byte == b'"';
            }
            out.push(byte);
        }
        out
    }

    /// Up to 256 bytes, half of them JSON's structure, quotes, escapes and
    /// whitespace.
    fn bytes_like_json() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![prop::sample::select(&b"{}[],:\"\\ \n"[..]), any::<u8>()];
        prop::collection::vec(byte, 0..256)
    }

    proptest! {
        /// Whatever the bytes, JSON or not, the output is exactly as long
        /// as `len` says (checked in `pretty`), and with empty separators
        /// it is the input without the whitespace outside strings.
        #[test]
        fn any_bytes_lay_out_to_the_length_len_gives(
            text in bytes_like_json(),
            indent in prop::collection::vec(any::<u8>(), 0..4),
        ) {
            let none = Layout { indent: b"", line: b"", record: b"", colon: b"" };
            prop_assert_eq!(pretty(&text, &none), squeezed(&text));
            pretty(&text, &DEFAULT);
            pretty(&text, &Layout { indent: &indent, line: b"\r\n", record: b"|", colon: &indent });
        }

        /// In one pass, `write_vec` appends what `len` and `write` give,
        /// if that fits in its cap, and stops short if not.
        #[test]
        fn write_vec_appends_the_text_laid_out_if_it_fits_in_its_cap(
            text in bytes_like_json(),
            before in prop::collection::vec(any::<u8>(), 0..4),
        ) {
            let whole = pretty(&text, &DEFAULT);
            let mut out = before.clone();
            prop_assert_eq!(write_vec(&text, &DEFAULT, &mut out, whole.len()), Ok(()));
            prop_assert_eq!(&out[..before.len()], &before[..]);
            prop_assert_eq!(&out[before.len()..], &whole[..]);
            if let Some(less) = whole.len().checked_sub(1) {
                let mut out = before.clone();
                prop_assert_eq!(write_vec(&text, &DEFAULT, &mut out, less), Err(Short::Cap));
                prop_assert!(out.len() <= before.len() + less);
            }
        }
    }
}
